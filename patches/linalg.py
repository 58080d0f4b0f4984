"""``patches.linalg``: ``jnp.linalg``'s spellings (``pt.linalg.norm``, ``pt.linalg.solve``, ...): the norms, and
dense solvers for small matrices unrolled over their size (``staging/primitives/linalg.py``)."""

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

__all__ = ["cholesky", "cross", "det", "diagonal", "inv", "matmul", "matrix_norm", "matrix_power", "matrix_transpose",
           "norm", "outer", "qr", "slogdet", "solve", "solve_triangular", "tensordot", "trace", "vecdot", "vector_norm"]
