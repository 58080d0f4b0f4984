"""The f32 expression code of elementwise steps, shared by the GEMM epilogue and the SIMT kernels.

Every value is an f32 register; booleans are 0.0/1.0 and selects go through ``cutlass.select_``; a value is
converted only when stored (``store_code``) or by an explicit ``astype`` (rounded and continued in f32).
"""

from __future__ import annotations

CUTLASS_DTYPES = {"bf16": "cutlass.BFloat16", "f16": "cutlass.Float16", "f32": "cutlass.Float32"}
MMA_DTYPES = {**CUTLASS_DTYPES, "tf32": "cutlass.TFloat32"}
DTYPES = {**CUTLASS_DTYPES, "bool": "cutlass.Boolean", "i8": "cutlass.Int8", "u8": "cutlass.Uint8",
          "i16": "cutlass.Int16", "u16": "cutlass.Uint16", "i32": "cutlass.Int32", "u32": "cutlass.Uint32"}
UNARY_CODE = {
    "neg": "-{0}",
    "abs": "cute.math.abs({0})",
    "relu": "cute.math.max({0}, cutlass.Float32(0.0))",
    "exp": "cute.math.exp({0})",
    "log": "cute.math.log({0})",
    "sin": "cute.math.sin({0})",
    "cos": "cute.math.cos({0})",
    "tanh": "cute.math.tanh({0})",
    "sqrt": "cute.math.sqrt({0})",
    "logistic": "cutlass.Float32(1.0) / (cutlass.Float32(1.0) + cute.math.exp(-{0}))",
}
BINARY_CODE = {
    "add": "{0} + {1}", "sub": "{0} - {1}", "mul": "{0} * {1}", "div": "{0} / {1}",
    "maximum": "cute.math.max({0}, {1})", "minimum": "cute.math.min({0}, {1})", "pow": "cute.math.pow({0}, {1})",
}
COMPARE_CODE = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
F0, F1 = "cutlass.Float32(0.0)", "cutlass.Float32(1.0)"


def lit(x: float) -> str:
    """An f32 literal; infinities and NaN (the -inf of a causal mask) spelled through float()."""
    x = float(x)
    if x != x or abs(x) == float("inf"):
        return f"cutlass.Float32(float('{x!r}'))"
    return f"cutlass.Float32({x!r})"


def step_code(op: str, args: list, dtype: str = "") -> str:
    """The f32 expression of one elementwise step on the f32 expressions ``args``."""
    if op == "astype":
        if dtype == "bool":
            return f"cutlass.Float32(cutlass.select_({args[0]} != {F0}, {F1}, {F0}))"
        return f"{args[0]}.to({DTYPES[dtype]}).to(cutlass.Float32)"
    if op == "copy":
        return args[0]
    if op in COMPARE_CODE:
        return f"cutlass.Float32(cutlass.select_({args[0]} {COMPARE_CODE[op]} {args[1]}, {F1}, {F0}))"
    if op == "where":
        return f"cutlass.Float32(cutlass.select_({args[0]} != {F0}, {args[1]}, {args[2]}))"
    if op in UNARY_CODE:
        return UNARY_CODE[op].format(*args)
    return BINARY_CODE[op].format(*args)


def store_code(x: str, dtype: str) -> str:
    """The f32 value ``x`` converted for a store into a ``dtype`` tensor."""
    if dtype == "bool":
        return f"cutlass.Boolean({x} != {F0})"
    return f"({x}).to({DTYPES[dtype]})"
