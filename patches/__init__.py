"""patches: a layout algebra (CuTe's), staged layout-typed programs, their derivatives, and Hopper kernels from them."""

from . import debug, flatten_util, lax, linalg, nn, numpy, ops, random, scipy, tree_util
from . import tree_util as tree
from .autodiff import (
    checkpoint,
    checkpoint_policies,
    custom_gradient,
    custom_jvp,
    custom_vjp,
    grad,
    hessian,
    jacfwd,
    jacobian,
    jacrev,
    jvp,
    linearize,
    remat,
    scan,
    switch,
    value_and_grad,
    vjp,
    vmap,
    while_loop,
)
from .autodiff.vectorize import vectorize
from .layouts import *  # noqa: F403
from .layouts import __all__ as _layout_names
from .lower import LoweringError, TileConfig, lower, split_matmuls
from .overloads import rank, select, size  # noqa: F401 (CuTe's, and numpy's for tensors)
from .staging import OPS as _ops
from .staging import Array, Program, StagingError, TensorType, bind, evaluate, jit, stage, tensor
from .staging.dtypes import numpy_dtype_promotion
from .staging.kernel import (
    GMEM,
    RMEM,
    SMEM,
    BlockSpec,
    KernelError,
    MemorySpace,
    Ref,
    RefType,
    Scratch,
    cond,
    ds,
    fori_loop,
    kernel,
    num_programs,
    program_id,
    when,
)
from .staging.primitives import *  # noqa: F403
from .staging.primitives.numpy_index_tricks import *  # noqa: F403 (numpy's index arithmetic and stacking)
from .staging.primitives.numpy_index_tricks import __all__ as _tricks
from .staging.shapes import ShapeDtypeStruct, eval_shape
from .tree_util import tree_map

__version__ = "0.1.0"
__all__ = list(_layout_names) + ["Array", "Program", "StagingError", "TensorType", "bind", "evaluate", "jit", "stage", "tensor",
                                 *_ops,
                                 "checkpoint", "checkpoint_policies", "remat", "debug", "flatten_util", "linalg", "nn",
                                 "numpy", "ops", "random", "scipy",
                                 "tree", "tree_util", "tree_map", "vectorize", "numpy_dtype_promotion", *_tricks,
                                 "ShapeDtypeStruct", "eval_shape",
                                 "custom_gradient", "custom_jvp", "custom_vjp", "grad", "hessian", "jacfwd", "jacobian", "jacrev",
                                 "jvp", "lax", "scan", "switch", "while_loop", "linearize", "value_and_grad", "vjp", "vmap",
                                 "lower", "LoweringError", "TileConfig", "split_matmuls",
                                 "BlockSpec", "GMEM", "KernelError", "MemorySpace", "RMEM", "Ref", "RefType", "SMEM",
                                 "Scratch", "cond", "ds", "fori_loop", "kernel", "num_programs", "program_id", "when"]
