"""``patches.linalg``: ``jnp.linalg``'s spellings (``pt.linalg.norm``, ``pt.linalg.solve``, ...): the norms, and
dense solvers for small matrices unrolled over their size (``staging/primitives/linalg.py``), and the spectral
decompositions (``eigh``, ``svd``: LAPACK through numpy) with what is built on them (``staging/primitives/spectral.py``)."""

from .staging.primitives import cross, diagonal, matmul, matrix_transpose, norm, outer, tensordot, trace
from .staging.primitives.linalg import (
    cholesky,
    det,
    inv,
    matrix_norm,
    qr,
    slogdet,
    solve,
    solve_triangular,
    vecdot,
    vector_norm,
)
from .staging.primitives.numpy_index_tricks import matrix_power
from .staging.primitives.spectral import (
    EighResult,
    SVDResult,
    cond,
    eigh,
    eigvalsh,
    lstsq,
    matrix_rank,
    pinv,
    svd,
    svdvals,
)

__all__ = ["EighResult", "SVDResult", "cholesky", "cond", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "lstsq",
           "matmul", "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose", "norm", "outer", "pinv", "qr",
           "slogdet", "solve", "solve_triangular", "svd", "svdvals", "tensordot", "trace", "vecdot", "vector_norm"]
