"""``patches.scipy``: ``jax.scipy``'s spellings, ``pt.scipy.special.xlogy`` and ``pt.scipy.linalg.solve_triangular``
(namespaces of functions defined in ``patches.staging.primitives``)."""

from types import SimpleNamespace

from .staging.primitives import erf
from .staging.primitives import special_functions as _sf
from .staging.primitives.lax_forms import erfc
from .staging.primitives.linalg import cholesky, det, inv, solve, solve_triangular
from .staging.primitives.nn_extra import logsumexp, softmax

special = SimpleNamespace(**{n: getattr(_sf, n) for n in _sf.SPECIAL}, erf=erf, erfc=erfc, logsumexp=logsumexp,
                          softmax=softmax)
linalg = SimpleNamespace(cholesky=cholesky, det=det, inv=inv, solve=solve, solve_triangular=solve_triangular)

__all__ = ["linalg", "special"]
