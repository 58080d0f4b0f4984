"""Hypothesis profiles: the suite is derandomized by default so that CI is reproducible;
HYPOTHESIS_PROFILE=explore draws fresh examples on every run, ten times as many (the fuzz tests' long runs)."""

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
settings.register_profile("explore", derandomize=False, print_blob=True, max_examples=1000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
