"""The primitives of staging, by family; each family module holds the layout rules, numpy implementations and ops."""

from typing import Any

from .. import operators as _operators
from .. import scalars as _scalars
from ..core import get_aval
from ..errors import fail
from ..types import mode_size, modes_of
from . import bitwise as _bitwise
from . import (
    dtype_queries,
    index_update,
    jax_extra,
    numpy_extra,
    numpy_math,
    numpy_more,
    numpy_names,
    numpy_pad,
    numpy_shape,
    numpy_sized,
    numpy_stats,
)
from . import elementwise as _elementwise
from .bitwise import (
    BITWISE,
    bitwise_and,
    bitwise_not,
    bitwise_or,
    bitwise_prims,
    bitwise_xor,
    invert,
    left_shift,
    right_shift,
)
from .dtype_queries import *  # noqa: F403 (listed in its __all__)
from .einsum import einsum
from .elementwise import (
    BINARY,
    COMPARE,
    UNARY,
    abs,
    add,
    arccos,
    arcsin,
    arcsinh,
    arctan,
    arctanh,
    astype,
    astype_p,
    ceil,
    copy,
    copy_p,
    cos,
    cosh,
    div,
    eq,
    exp,
    exp2,
    expm1,
    floor,
    ge,
    gt,
    le,
    log,
    log1p,
    log2,
    log10,
    logistic,
    lt,
    maximum,
    minimum,
    mul,
    ne,
    neg,
    pow,
    prims,
    relu,
    round,
    sign,
    sin,
    sinh,
    sqrt,
    sub,
    tan,
    tanh,
    trunc,
    where,
    where_p,
)
from .gather import gather_p, getitem, take, take_along_axis
from .gather import scatter_add_along as scatter_add_along  # (for the rules, not the user's namespace)
from .integer import arange, floordiv, floordiv_p, iota, iota_p, mod, mod_p
from .jax_extra import *  # noqa: F403 (their names are listed in their modules' ONE_TENSOR and MORE_ARGS)
from .logical import logical_and, logical_not, logical_or, logical_xor
from .matmul import matmul, matmul_p
from .numpy_extra import (
    allclose,
    arccosh,
    arctan2,
    cbrt,
    copysign,
    cross,
    deg2rad,
    fmax,
    fmin,
    heaviside,
    hypot,
    isclose,
    logaddexp2,
    matrix_transpose,
    nan_to_num,
    prod,
    rad2deg,
    repeat,
    signbit,
    sinc,
    vdot,
)
from .numpy_math import (
    all,
    any,
    fabs,
    floor_divide,
    isfinite,
    isinf,
    isnan,
    logaddexp,
    negative,
    power,
    reciprocal,
    remainder,
    silu,
    softplus,
    square,
    std,
)
from .numpy_more import *  # noqa: F403
from .numpy_names import *  # noqa: F403
from .numpy_ops import (
    argmax,
    argmin,
    clip,
    dot,
    gelu,
    log_softmax,
    logsumexp,
    max,
    mean,
    min,
    reshape,
    rsqrt,
    sigmoid,
    softmax,
    sum,
    var,
)
from .numpy_pad import pad
from .numpy_shape import (
    array_split,
    atleast_1d,
    atleast_2d,
    atleast_3d,
    broadcast_arrays,
    diag,
    diagonal,
    diff,
    expand_dims,
    eye,
    full_like,
    hstack,
    inner,
    linspace,
    moveaxis,
    ones_like,
    outer,
    ravel,
    roll,
    split,
    squeeze,
    stack,
    swapaxes,
    tensordot,
    trace,
    tril,
    triu,
    vstack,
    zeros_like,
)
from .numpy_sized import *  # noqa: F403
from .numpy_sized import where  # noqa: F811 (elementwise where, and its one-argument form)
from .numpy_sort import MORE_ARGS as SORT_MORE_ARGS
from .numpy_sort import ONE_TENSOR as SORT_ONE_TENSOR
from .numpy_sort import argpartition, argsort, median, partition, percentile, quantile, searchsorted, sort
from .numpy_stats import *  # noqa: F403
from .reductions import (
    argmax_p,
    argmin_p,
    reduce_max,
    reduce_max_p,
    reduce_min,
    reduce_min_p,
    reduce_sum,
    reduce_sum_p,
)
from .scan import associative_scan, cummax, cummin, cumprod, cumsum
from .special import concatenate, concatenate_p, erf, erf_p, flip, fliplr, flipud, rev, rev_p, stop_gradient, stop_gradient_p
from .views import (
    Span,
    broadcast,
    broadcast_p,
    broadcast_to,
    embed,
    embed_p,
    full,
    ones,
    slice_p,
    tile,
    tile_p,
    transpose,
    transpose_p,
    view,
    view_p,
    zeros,
)
from .views import coordinate_map as coordinate_map  # (for the lowering, not the user's namespace)
from .views import squeeze_modes as squeeze_modes
from .views import view_rules as view_rules

add_p, sub_p, mul_p, div_p, pow_p = prims["add"], prims["sub"], prims["mul"], prims["div"], prims["pow"]
neg_p, exp_p, log_p, sin_p = prims["neg"], prims["exp"], prims["log"], prims["sin"]
cos_p, tanh_p, sqrt_p, abs_p = prims["cos"], prims["tanh"], prims["sqrt"], prims["abs"]
relu_p, logistic_p, maximum_p, minimum_p = prims["relu"], prims["logistic"], prims["maximum"], prims["minimum"]
eq_p, ne_p, lt_p, le_p, gt_p, ge_p = prims["eq"], prims["ne"], prims["lt"], prims["le"], prims["gt"], prims["ge"]

UNARY_NAMES = sorted(UNARY)
MATH_UNARY = ["arccos", "arcsin", "arcsinh", "arctan", "arctanh", "ceil", "cosh", "exp2", "expm1", "floor", "log1p",
              "log2", "log10", "round", "sign", "sinh", "tan", "trunc"]
BINARY_NAMES = sorted(BINARY)
COMPARE_NAMES = sorted(COMPARE)

# The numpy/JAX-style functions (listed in docs/staging.md).
NUMPY_OPS = [
    "arange", "argmax", "argmin", "associative_scan", "clip", "concatenate", "cummax", "cummin", "cumprod", "cumsum",
    "dot", "einsum", "erf", "flip", "fliplr", "flipud", "floordiv", "gelu", "iota", "log_softmax",
    "logical_and", "logical_not", "logical_or", "logical_xor", "logsumexp", "max", "mean", "min", "mod",
    "reduce_min", "reshape", "rsqrt", "sigmoid", "softmax", "stop_gradient", "sum", "var",
    *MATH_UNARY, *numpy_math.__all__, "bitwise_and", "bitwise_not", "bitwise_or", "bitwise_xor", "left_shift",
    "right_shift", *numpy_shape.ONE_TENSOR,
    *numpy_extra.ONE_TENSOR,
    *SORT_ONE_TENSOR,
    *numpy_more.ONE_TENSOR,
    *jax_extra.ONE_TENSOR,
    *numpy_sized.ONE_TENSOR,
    *numpy_stats.ONE_TENSOR,
    *numpy_names.ONE_TENSOR,
]
# numpy/JAX-style functions (also in docs/staging.md) that are not called as f(x): they take a sequence of tensors,
# a second required argument, or no tensor (stack, split, pad, outer, tensordot, eye, linspace, ...).
NUMPY_MULTI_ARG_OPS = list(numpy_shape.MORE_ARGS) + ["take", "take_along_axis"]
NUMPY_MULTI_ARG_OPS += numpy_extra.MORE_ARGS
NUMPY_MULTI_ARG_OPS += SORT_MORE_ARGS
NUMPY_MULTI_ARG_OPS += numpy_more.MORE_ARGS + jax_extra.MORE_ARGS + numpy_stats.MORE_ARGS + numpy_names.MORE_ARGS
NUMPY_MULTI_ARG_OPS += numpy_pad.MORE_ARGS
# The ops users call (re-exported from patches).
OPS = [
    "abs", "add", "astype", "broadcast", "broadcast_to", "copy", "cos", "div", "eq", "exp", "full", "ge", "getitem",
    "gt", "le", "log", "logistic", "lt", "matmul", "maximum", "minimum", "mul", "ne", "neg", "ones", "pow",
    "reduce_max", "reduce_sum", "relu", "rev", "sin", "sqrt", "sub", "tanh", "tile", "transpose", "view", "where",
    "zeros",
    # the numpy/JAX spellings
    *NUMPY_OPS, *NUMPY_MULTI_ARG_OPS,
]
__all__ = [
    "abs", "add", "astype", "broadcast", "broadcast_to", "copy", "cos", "div", "eq", "exp", "full", "ge", "getitem",
    "gt", "le", "log", "logistic", "lt", "matmul", "maximum", "minimum", "mul", "ne", "neg", "ones", "pow",
    "reduce_max", "reduce_sum", "relu", "sin", "sqrt", "sub", "tanh", "tile", "transpose", "view", "where", "zeros",
    "arange", "argmax", "argmin", "associative_scan", "clip", "concatenate", "cummax", "cummin", "cumprod", "cumsum",
    "dot", "einsum", "erf", "flip", "fliplr", "flipud", "floordiv", "gelu", "iota", "log_softmax", "rev",
    "logical_and", "logical_not", "logical_or", "logical_xor", "logsumexp", "max", "mean", "min", "mod",
    "reduce_min", "reshape", "rsqrt", "sigmoid", "softmax", "stop_gradient", "sum", "var",
    "arccos", "arcsin", "arcsinh", "arctan", "arctanh", "ceil", "cosh", "exp2", "expm1", "floor", "log1p", "log2",
    "log10", "round", "sign", "sinh", "tan", "trunc",
    "all", "any", "fabs", "floor_divide", "isfinite", "isinf", "isnan", "logaddexp", "negative", "power", "reciprocal",
    "remainder", "silu", "softplus", "square", "std", "bitwise_and", "bitwise_not", "bitwise_or", "bitwise_xor",
    "invert", "left_shift", "right_shift", "BITWISE", "bitwise_prims", "BINARY", "BINARY_NAMES",
    "COMPARE", "COMPARE_NAMES", "NUMPY_OPS", "OPS", "Span",
    "MATH_UNARY", "UNARY", "UNARY_NAMES", "argmax_p", "argmin_p", "concatenate_p", "erf_p", "rev_p", "floordiv_p", "iota_p",
    "mod_p",
    "reduce_min_p", "stop_gradient_p", "abs_p", "add_p", "astype_p", "broadcast_p", "copy_p",
    "cos_p", "div_p", "embed", "embed_p", "eq_p", "exp_p", "ge_p", "gt_p", "le_p", "log_p", "logistic_p", "lt_p",
    "matmul_p", "maximum_p", "minimum_p", "mul_p", "ne_p", "neg_p", "pow_p", "prims", "reduce_max_p",
    "reduce_sum_p", "relu_p", "sin_p", "slice_p", "sqrt_p", "sub_p", "tanh_p", "tile_p", "transpose_p", "view_p",
    "where_p",
    "array_split", "atleast_1d", "atleast_2d", "atleast_3d", "broadcast_arrays", "diag", "diagonal", "diff",
    "expand_dims", "eye", "full_like", "hstack", "inner", "linspace", "moveaxis", "ones_like", "outer", "pad", "ravel",
    "roll", "split", "squeeze", "stack", "swapaxes", "tensordot", "trace", "tril", "triu", "vstack", "zeros_like",
    "allclose", "arccosh", "arctan2", "cbrt", "copysign", "cross", "deg2rad", "fmax", "fmin", "heaviside", "hypot", "isclose",
    "logaddexp2", "matrix_transpose", "nan_to_num", "prod", "rad2deg", "repeat", "signbit", "sinc", "vdot",
    "NUMPY_MULTI_ARG_OPS", "gather_p", "take", "take_along_axis",
    "argpartition", "argsort", "median", "partition", "percentile", "quantile", "searchsorted", "sort",
    *numpy_more.__all__, *jax_extra.__all__, *numpy_sized.__all__, *numpy_stats.__all__,
    *numpy_names.__all__, *dtype_queries.__all__,
]

def _length(x: Any) -> int:
    """``len(x)``: the size of mode 0 when it is a static int."""
    t = x.type
    if t.rank == 0:
        raise fail(None, f"len() of a rank-0 value ({t})")
    n = mode_size(modes_of(t.layout.shape)[0])
    if type(n) is not int:
        raise fail(None, f"len() of a value whose mode 0 is symbolic ({t})")
    return n


def _count(x: Any) -> Any:
    t = get_aval(x)
    n: Any = 1
    for m in (modes_of(t.shape) if t.rank else ()):
        n = n * mode_size(m)
    return n


# numpy's ufunc names whose op here is spelled differently (the rest are the same name)
UFUNC_NAMES = {"subtract": "sub", "multiply": "mul", "divide": "div", "true_divide": "div", "absolute": "abs",
               "invert": "bitwise_not", "less": "lt", "less_equal": "le", "greater": "gt", "greater_equal": "ge", "equal": "eq",
               "not_equal": "ne", "rint": "round", "power": "pow", "positive": "copy"}


def _ufunc(ufunc: Any, method: str, inputs: tuple, kwargs: dict) -> Any:
    """A numpy ufunc called on staged values: the op of the same meaning; its other methods (``reduce``, ...),
    ``out=``/``where=``/``dtype=`` and ufuncs with no op here are a StagingError naming them."""
    name = getattr(ufunc, "__name__", str(ufunc))
    if method != "__call__":
        raise fail(None, f"numpy's {name}.{method} on a staged value is not supported; use the patches op "
                         "(pt.sum, pt.max, pt.cumsum, ...)")
    extra = sorted(k for k, v in kwargs.items() if v is not None and not (k == "casting" and v == "same_kind"))
    if extra:
        raise fail(None, f"numpy's {name} on a staged value: keyword(s) {', '.join(extra)} are not supported")
    op = globals().get(UFUNC_NAMES.get(name, name))
    if op is None or name not in UFUNC_NAMES and name not in OPS:
        raise fail(None, f"numpy's {name} has no staged counterpart in patches; write it with patches ops")
    return op(*inputs)


def _numpy_kwargs(name: str, kw: dict, taken: tuple = ()) -> dict:
    """numpy's reductions (``np.sum(x)``) call the method with ``out=``, ``dtype=``, ...: None values are what
    numpy passes by default, those in ``taken`` are passed on (returned); anything else is a StagingError naming
    it."""
    bad = sorted(k for k, v in kw.items() if v is not None and not (k == "where" and v is True) and k not in taken)
    if bad:
        raise fail(name, f"numpy's keyword(s) {', '.join(bad)} are not supported on staged values "
                         "(convert with astype first, reduce with the patches op)")
    return {k: v for k, v in kw.items() if k in taken and v is not None}


_scalars._CAST[0] = astype               # weak tracers meeting tensors convert through it (scalars.coerce)
_elementwise.INT_POW[0] = _bitwise.int_pow       # integer ** integer tensors (elementwise.pow)
_operators.install(ufunc=_ufunc, numpy_kwargs=_numpy_kwargs, neg=neg, abs=abs, add=add, sub=sub, mul=mul, div=div,
                   pow=pow, matmul=matmul, lt=lt, le=le, gt=gt, ge=ge, eq=eq, ne=ne, getitem=getitem,
                   transpose=transpose, astype=astype, reduce_sum=reduce_sum,
                   reduce_max=reduce_max, floordiv=floordiv, mod=mod, sum=sum, max=max, min=min, mean=mean, var=var,
                   argmax=argmax, argmin=argmin, reshape=reshape, length=_length, logical_and=bitwise_and,
                   logical_or=bitwise_or, logical_xor=bitwise_xor, logical_not=bitwise_not,
                   left_shift=left_shift, right_shift=right_shift, std=numpy_math.std, cumsum=cumsum,
                   any=numpy_math.any, all=numpy_math.all, clip=clip, round=round, dot=dot, count=_count)
_operators.install(squeeze=squeeze, swapaxes=swapaxes, at=index_update.at, matrix_transpose=matrix_transpose)
