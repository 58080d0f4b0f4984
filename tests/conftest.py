"""Hypothesis profiles: the suite is derandomized by default so that CI is reproducible;
HYPOTHESIS_PROFILE=explore draws fresh examples on every run."""

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
settings.register_profile("explore", derandomize=False, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
