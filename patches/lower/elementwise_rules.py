"""The CuTe DSL code of every elementwise primitive and reduction combine: the one table the GEMM epilogue
(``emit_common``), the SIMT row kernels (``emit_simt``) and the kernel lowering (``kernel/rules_math``,
``kernel/shuffle``) emit from.

Operands are code strings already in the compute dtype (f32 for the GEMM epilogue and the SIMT kernels; bf16/f16
computed in f32 and integers as integers in the kernel lowering). A rule has a scalar form (DSL numerics) and a
tensor form (register TensorSSA values). NaN propagates as in numpy: maximum, minimum, relu and the max/min
reductions keep a NaN of either operand. Literals go through ``lit`` (NaN and infinities never a bare name).
"""

from __future__ import annotations

import math
import re

from .errors import LoweringError

DSL_DTYPES = {"bf16": "cutlass.BFloat16", "f16": "cutlass.Float16", "f32": "cutlass.Float32",
              "f64": "cutlass.Float64", "bool": "cutlass.Boolean", "i8": "cutlass.Int8", "u8": "cutlass.Uint8",
              "i16": "cutlass.Int16", "u16": "cutlass.Uint16", "i32": "cutlass.Int32", "u32": "cutlass.Uint32",
              "i64": "cutlass.Int64"}
FLOATS = ("bf16", "f16", "f32", "f64")

# Templates over operand code {0}, {1}; {one} is the literal 1 of the compute dtype.
UNARY = {
    "neg": "-{0}",
    "abs": "cute.math.abs({0})",
    "exp": "cute.math.exp({0})",
    "log": "cute.math.log({0})",
    "sin": "cute.math.sin({0})",
    "cos": "cute.math.cos({0})",
    "tanh": "cute.math.tanh({0})",
    "sqrt": "cute.math.sqrt({0})",
    "erf": "cute.math.erf({0})",
    "logistic": "{one} / ({one} + cute.math.exp(-{0}))",
}
BINARY = {"add": "{0} + {1}", "sub": "{0} - {1}", "mul": "{0} * {1}", "div": "{0} / {1}",
          "pow": "cute.math.pow({0}, {1})"}
COMPARE = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
# maximum/minimum (and relu) keep a NaN of either operand (IEEE maximum/minimum, numpy's); PTX's plain max.f32,
# and the DSL's cute.math.max without propagate_nan, would drop it.
EXTREMA = {"maximum": (">", "fmax", "max"), "minimum": ("<", "fmin", "min")}
SMALL_POWERS = (2.0, 3.0)          # x ** 2 and x ** 3 as products: exact as numpy's, no pow call
# The reductions: identity and the elementwise primitive that combines two partials.
REDUCTIONS = {"sum": (0.0, "add"), "max": (-math.inf, "maximum"), "min": (math.inf, "minimum")}
ELEMENTWISE = (*UNARY, *BINARY, *EXTREMA, "relu", "floordiv", "mod", *COMPARE, "where", "copy")

_ATOM = re.compile(r"[A-Za-z_][\w.]*(\([^()]*\)|\[[^\[\]]*\])?")     # a name, called or indexed once


def dsl(dtype: str, where: str = "elementwise") -> str:
    """The cutlass numeric type of ``dtype`` as code."""
    if dtype not in DSL_DTYPES:
        raise LoweringError(f"{where}: dtype {dtype} has no CuTe DSL lowering")
    return DSL_DTYPES[dtype]


def is_float(dtype: str) -> bool:
    return dtype in FLOATS


def lit(x: float, dtype: str = "f32") -> str:
    """A literal of ``dtype`` as code: finite floats by repr, NaN and infinities through float('...'), integers as
    ints, booleans as True/False."""
    if dtype == "bool":
        return f"cutlass.Boolean({bool(x)})"
    if not is_float(dtype):
        return f"{dsl(dtype, 'literal')}({int(x)})"
    x = float(x)
    if math.isnan(x):
        return f"{dsl(dtype, 'literal')}(float('nan'))"
    if math.isinf(x):
        return f"{dsl(dtype, 'literal')}(float('{'-' if x < 0 else ''}inf'))"
    return f"{dsl(dtype, 'literal')}({x!r})"


def convert(x: str, dtype: str) -> str:
    """``x`` converted to ``dtype`` (rounded to nearest even for narrower floats)."""
    return f"{x if _ATOM.fullmatch(x) else f'({x})'}.to({dsl(dtype, 'convert')})"


def select(pred: str, a: str, b: str, dtype: str, tensor: bool = False) -> str:
    """``a`` where ``pred`` holds, else ``b`` (``pred`` a boolean expression or, for tensors, a boolean tensor)."""
    if tensor:
        return f"cute.where({pred}, {a}, {b})"
    return f"{dsl(dtype)}(cutlass.select_({pred}, {a}, {b}))"


def truth(x: str, dtype: str = "f32") -> str:
    """Whether a 0/1 value (a boolean held as a number, as the GEMM epilogue and SIMT kernels hold them) is true."""
    return f"{x} != {lit(0, dtype)}"


def as_number(cond: str, dtype: str = "f32") -> str:
    """A boolean expression as the 0/1 value of ``dtype`` (how the GEMM epilogue and SIMT kernels hold booleans)."""
    return select(cond, lit(1, dtype), lit(0, dtype), dtype)


def extremum(op: str, a: str, b: str, dtype: str = "f32", tensor: bool = False) -> str:
    """maximum/minimum, a NaN of either operand propagating: on tensors a select (``a`` where it wins or is NaN);
    on f32 scalars FMNMX.NaN; on other floats the DSL's IEEE maximum; integers have no NaN."""
    cmp, arch, name = EXTREMA[op]
    if tensor:
        return f"cute.where(({a} {cmp} {b}) | ({a} != {a}), {a}, {b})"
    if dtype == "f32":
        return f"cute.arch.{arch}({a}, {b}, nan=True)"
    if is_float(dtype):
        return f"cute.math.{name}({a}, {b}, propagate_nan=True)"
    return f"cute.math.{name}({a}, {b})"


def relu(x: str, dtype: str = "f32", tensor: bool = False) -> str:
    """max(x, 0) with NaN kept: on tensors a select of the negative elements (NaN is not negative)."""
    if tensor:
        return f"cute.where({x} < {lit(0, dtype)}, cute.full_like({x}, 0), {x})"
    return extremum("maximum", x, lit(0, dtype), dtype)


def absolute(x: str, dtype: str = "f32", tensor: bool = False) -> str:
    """|x|: the DSL's abs on floats, a select on integers."""
    if is_float(dtype):
        return UNARY["abs"].format(x)
    return select(f"{x} < {lit(0, dtype)}", f"-{x}", x, dtype, tensor)


def floordiv(op: str, a: str, b: str, dtype: str = "f32") -> str:
    """numpy's floor division (``floordiv``) or modulo (``mod``, the sign of the divisor): the quotient rounded
    down; integers by the DSL's floor division (floordivsi)."""
    q = f"cute.math.floor({a} / {b})" if is_float(dtype) else f"({a} // {b})"
    return q if op == "floordiv" else f"{a} - {q} * {b}"


def power(a: str, b: str, exponent: float | None = None) -> str:
    """a ** b; a literal exponent of 2 or 3 as a product (as exact as numpy's)."""
    if exponent is not None and float(exponent) in SMALL_POWERS:
        return " * ".join([a] * int(exponent))
    return BINARY["pow"].format(a, b)


def expr(op: str, args: list, dtype: str = "f32", tensor: bool = False, exponent: float | None = None) -> str:
    """The code of elementwise ``op`` on operand code ``args``, all of compute dtype ``dtype`` (register tensors
    when ``tensor``). Comparisons give a boolean; ``where`` takes a boolean predicate first. ``exponent``: pow's
    literal exponent, when it has one."""
    if op in EXTREMA:
        return extremum(op, args[0], args[1], dtype, tensor)
    if op == "relu":
        return relu(args[0], dtype, tensor)
    if op == "abs":
        return absolute(args[0], dtype, tensor)
    if op in ("floordiv", "mod"):
        return floordiv(op, args[0], args[1], dtype)
    if op == "pow":
        return power(args[0], args[1], exponent)
    if op in COMPARE:
        return f"{args[0]} {COMPARE[op]} {args[1]}"
    if op == "where":
        return select(args[0], args[1], args[2], dtype, tensor)
    if op == "copy":
        return args[0]
    if op in UNARY:
        return UNARY[op].format(*args, one=lit(1, dtype))
    if op in BINARY:
        return BINARY[op].format(*args)
    raise LoweringError(f"elementwise {op} has no CuTe DSL code rule")


def reduce_init(op: str, dtype: str = "f32") -> str:
    """The identity of reduction ``op`` ("sum", "max", "min") as a literal of ``dtype``."""
    ident = REDUCTIONS[op][0]
    if not is_float(dtype) and math.isinf(ident):
        raise LoweringError(f"a {op} reduction of {dtype} values has no identity literal")
    return lit(ident, dtype)


def reduce_combine(op: str, a: str, b: str, dtype: str = "f32", tensor: bool = False) -> str:
    """Two partials of reduction ``op`` combined: the elementwise rule of its primitive (NaN propagates)."""
    return expr(REDUCTIONS[op][1], [a, b], dtype, tensor)


def int_division_lines(j: int, op: str, a: str, b: str, indent: str) -> list[str]:
    """Floor division (or modulo) of Int32 values as numpy's, from the quotient of magnitudes (no reliance on how
    ``//`` rounds negative operands): negated, and one less when the signs differ and it is inexact. Assigns
    ``v{j}``; names ``a{j}``, ``b{j}``, ``am{j}``, ``bm{j}``, ``q{j}``, ``r{j}`` are its own."""
    def sel(p: str, x: str, y: str) -> str:
        return select(p, x, y, "i32")

    zero, one = lit(0, "i32"), lit(1, "i32")
    return [f"{indent}a{j}, b{j} = {a}, {b}",
            f"{indent}am{j}, bm{j} = {sel(f'a{j} < 0', f'-a{j}', f'a{j}')}, {sel(f'b{j} < 0', f'-b{j}', f'b{j}')}",
            f"{indent}q{j} = am{j} // bm{j}",
            f"{indent}r{j} = {sel(f'q{j} * bm{j} == am{j}', zero, one)}",
            f"{indent}q{j} = {sel(f'(a{j} ^ b{j}) < 0', f'-q{j} - r{j}', f'q{j}')}",
            f"{indent}v{j} = {f'q{j}' if op == 'floordiv' else f'a{j} - q{j} * b{j}'}   # {op}"]
