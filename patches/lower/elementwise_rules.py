"""The CuTe DSL code of every elementwise primitive and reduction combine: the one table the GEMM epilogue
(``emit_common``), the SIMT row kernels (``emit_simt``) and the kernel lowering (``kernel/rules_math``,
``kernel/shuffle``) emit from.

Operands are code strings already in the compute dtype (f32 for the GEMM epilogue and the SIMT kernels; bf16/f16
computed in f32 and integers as integers in the kernel lowering). A rule has a scalar form (DSL numerics) and a
tensor form (register TensorSSA values). NaN propagates as in numpy: maximum, minimum, relu and the max/min
reductions keep a NaN of either operand. Literals go through ``lit`` (NaN and infinities never a bare name).
Floor division and remainder are numpy's bit for bit (npy_divmod on an exact fmod; integer x // 0 is 0): calls of
module-level helpers that every emitter defines with ``helper_lines``.
"""

from __future__ import annotations

import ast
import math
import re
from typing import Any

from .errors import LoweringError

DSL_DTYPES = {"bf16": "cutlass.BFloat16", "f16": "cutlass.Float16", "f32": "cutlass.Float32",
              "f64": "cutlass.Float64", "bool": "cutlass.Boolean", "i8": "cutlass.Int8", "u8": "cutlass.Uint8",
              "i16": "cutlass.Int16", "u16": "cutlass.Uint16", "i32": "cutlass.Int32", "u32": "cutlass.Uint32",
              "i64": "cutlass.Int64", "u64": "cutlass.Uint64"}
FLOATS = ("bf16", "f16", "f32", "f64")
INT_RANGES = {"i8": (-2**7, 2**7 - 1), "u8": (0, 2**8 - 1), "i16": (-2**15, 2**15 - 1), "u16": (0, 2**16 - 1),
              "i32": (-2**31, 2**31 - 1), "u32": (0, 2**32 - 1), "i64": (-2**63, 2**63 - 1),
              "u64": (0, 2**64 - 1)}

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
    "floor": "cute.math.floor({0})",
    "ceil": "cute.math.ceil({0})",
    "round": "cute.math.roundeven({0})",          # numpy's round: half to even
    "trunc": "cute.math.trunc({0})",
    "log1p": "cute.math.log1p({0})",
    "expm1": "cute.math.expm1({0})",
    "exp2": "cute.math.exp2({0})",
    "log2": "cute.math.log2({0})",
    "log10": "cute.math.log10({0})",
    "tan": "cute.math.tan({0})",
    "arctan": "cute.math.atan({0})",
    "sinh": "cute.math.sinh({0})",
    "cosh": "cute.math.cosh({0})",
    "arcsin": "cute.math.asin({0})",
    "arccos": "cute.math.acos({0})",
    "arcsinh": "cute.math.asinh({0})",
    "arctanh": "cute.math.atanh({0})",
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
UNARY_OPS = (*UNARY, "relu", "sign")          # every unary elementwise primitive with a rule here
# Integer bitwise primitives (the kernel lowering's integer registers only); shifts by a count outside [0, bits)
# select numpy's 0 (or -1 for a negative value shifted right) where the hardware's result is undefined.
BITWISE = {"bitwise_and": "{0} & {1}", "bitwise_or": "{0} | {1}", "bitwise_xor": "{0} ^ {1}",
           "bitwise_not": "~{0}", "left_shift": "{0} << {1}", "right_shift": "{0} >> {1}"}
SCALAR_ONLY = ("bitwise_not", "left_shift", "right_shift")    # no TensorSSA operator: written register by register
ELEMENTWISE = (*UNARY_OPS, *BINARY, *EXTREMA, "floordiv", "mod", *COMPARE, "where", "copy", *BITWISE)

_ATOM = re.compile(r"[A-Za-z_][\w.]*(\([^()]*\)|\[[^\[\]]*\])?")     # a name, called or indexed once


def dsl(dtype: str, where: str = "elementwise") -> str:
    """The cutlass numeric type of ``dtype`` as code."""
    if dtype not in DSL_DTYPES:
        raise LoweringError(f"{where}: dtype {dtype} has no CuTe DSL lowering")
    return DSL_DTYPES[dtype]


def is_float(dtype: str) -> bool:
    return dtype in FLOATS


def clamp_int(x: str, dtype: str) -> str:
    """Int32 scalar ``x`` clamped to ``dtype``'s range: a float converted to an 8- or 16-bit integer saturates, as
    the interpreter's (and cvt.rzi's) conversion does, through Int32 (saturating, NaN to 0) then this clamp."""
    lo, hi = INT_RANGES[dtype]
    return f"cute.math.min(cute.math.max({x}, cutlass.Int32({lo})), cutlass.Int32({hi}))"


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
    """``a`` where ``pred`` holds, else ``b`` (``pred`` a boolean expression or, for tensors, a boolean tensor); a
    ``pred`` of constants only (``0 == 0 + 0``, an extent-1 mode's coordinate) is decided here, since the DSL's
    ``select_`` needs a dynamic condition."""
    if tensor:
        return f"cute.where({pred}, {a}, {b})"
    known = constant_value(pred)
    if known is not None:
        return f"{dsl(dtype)}({a if known else b})"
    return f"{dsl(dtype)}(cutlass.select_({pred}, {a}, {b}))"


_FOLDABLE = (ast.Expression, ast.Compare, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Constant, ast.Add, ast.Sub,
             ast.Mult, ast.FloorDiv, ast.Mod, ast.USub, ast.Not, ast.And, ast.Or, ast.Eq, ast.NotEq, ast.Lt, ast.LtE,
             ast.Gt, ast.GtE)


def constant_value(expr: str) -> Any:
    """The value of an emitted integer expression that holds only constants (``0 == 0 + 0``), else None (one that
    names a variable, a call, anything else); the emitter's own text, computed over ints, never evaluated."""
    if not _CONSTANT_TEXT.fullmatch(expr):
        return None
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError:
        return None
    if not all(isinstance(n, _FOLDABLE) and (not isinstance(n, ast.Constant) or type(n.value) in (int, bool))
               for n in ast.walk(tree)):
        return None
    return _fold(tree.body)


_CONSTANT_TEXT = re.compile(r"[0-9\s()+\-*/%=!<>]+|[0-9\s()+\-*/%=!<>]*(?:\b(?:and|or|not)\b[0-9\s()+\-*/%=!<>]*)+")
_BIN = {ast.Add: lambda x, y: x + y, ast.Sub: lambda x, y: x - y, ast.Mult: lambda x, y: x * y,
        ast.FloorDiv: lambda x, y: x // y if y else None, ast.Mod: lambda x, y: x % y if y else None}
_CMP = {ast.Eq: lambda x, y: x == y, ast.NotEq: lambda x, y: x != y, ast.Lt: lambda x, y: x < y,
        ast.LtE: lambda x, y: x <= y, ast.Gt: lambda x, y: x > y, ast.GtE: lambda x, y: x >= y}


def _fold(n: Any) -> Any:
    if isinstance(n, ast.Constant):
        return n.value
    if isinstance(n, ast.UnaryOp):
        v = _fold(n.operand)
        return None if v is None else (-v if isinstance(n.op, ast.USub) else not v)
    if isinstance(n, ast.BinOp):
        x, y = _fold(n.left), _fold(n.right)
        return None if x is None or y is None else _BIN[type(n.op)](x, y)
    if isinstance(n, ast.BoolOp):
        vs = [_fold(v) for v in n.values]
        return None if None in vs else (all(vs) if isinstance(n.op, ast.And) else any(vs))
    if isinstance(n, ast.Compare):
        vals = [_fold(n.left), *(_fold(c) for c in n.comparators)]
        if None in vals:
            return None
        return all(_CMP[type(op)](x, y) for op, x, y in zip(n.ops, vals, vals[1:]))
    return None


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


def sign(x: str, dtype: str = "f32", tensor: bool = False) -> str:
    """numpy's sign: 1 above zero, -1 below, else ``x - x`` (+0 for a zero of either sign, NaN for NaN); of an
    unsigned value 1 or 0 (no -1 is written in its type)."""
    if dtype.startswith("u"):
        return select(f"{x} > {lit(0, dtype)}", f"cute.full_like({x}, 1)" if tensor else lit(1, dtype), x, dtype, tensor)
    one, minus = (f"cute.full_like({x}, {v})" for v in (1, -1)) if tensor else (lit(1, dtype), lit(-1, dtype))
    inner = select(f"{x} < {lit(0, dtype)}", minus, f"({x}) - ({x})" if is_float(dtype) else x, dtype, tensor)
    return select(f"{x} > {lit(0, dtype)}", one, inner, dtype, tensor)


def bitwise(op: str, args: list, dtype: str, tensor: bool = False) -> str:
    """An integer bitwise primitive; a shift guarded to numpy's value for counts outside [0, bits)."""
    if is_float(dtype) or dtype == "bool":
        raise LoweringError(f"elementwise {op} of {dtype} values is not lowered (integers only)")
    if tensor and op in SCALAR_ONLY:
        raise LoweringError(f"elementwise {op} has no register-tensor form (it is written element by element)")
    code = BITWISE[op].format(*args)
    if op not in ("left_shift", "right_shift"):
        return code
    a, s = args
    bits = int(re.sub(r"\D", "", dtype))
    ok = f"({s} >= {lit(0, dtype)}) & ({s} < {lit(bits, dtype)})"
    zero = f"cute.full_like({a}, 0)" if tensor else lit(0, dtype)
    past = zero
    if op == "right_shift" and not dtype.startswith("u"):
        past = select(f"{a} < {lit(0, dtype)}", f"cute.full_like({a}, -1)" if tensor else lit(-1, dtype), zero,
                      dtype, tensor)
    safe = select(ok, s, lit(0, dtype) if not tensor else f"cute.full_like({s}, 0)", dtype, tensor)
    return select(ok, BITWISE[op].format(a, f"({safe})"), past, dtype, tensor)


def floordiv(op: str, a: str, b: str, dtype: str = "f32", tensor: bool = False) -> str:
    """numpy's floor division (``floordiv``) or remainder (``mod``, the sign of the divisor): a call of the module's
    helper (``helper_lines`` defines it); integers divided by a literal other than 0 and -1 directly (floordivsi)."""
    k = None if is_float(dtype) else _int_literal(b)
    if k is not None and k != 0 and (k != -1 or dtype.startswith("u")):
        q = f"({a} // {b})"
        return q if op == "floordiv" else f"{a} - {q} * {b}"
    return f"{helper_name(op, dtype, tensor)}({a}, {b})"


def helper_name(op: str, dtype: str, tensor: bool = False) -> str:
    """The module-level helper computing ``op`` ("floordiv" or "mod") on ``dtype`` values (or register tensors)."""
    return f"np_{op}_{dtype}{'_tensor' if tensor else ''}"


_HELPER = re.compile(r"\bnp_(floordiv|mod)_([a-z]+\d+)(_tensor)?\(")


def helper_lines(body: str) -> list[str]:
    """The definitions of the helpers (``helper_name``) that the code ``body`` calls, for the module's top level."""
    out = []
    for op, dtype, tensor in sorted(set(_HELPER.findall(body))):
        out += division_helper(op, dtype, bool(tensor)) + ["", ""]
    return out


def division_helper(op: str, dtype: str, tensor: bool = False) -> list[str]:
    """The lines of helper ``helper_name(op, dtype, tensor)``: numpy's floor_divide or remainder. Floats as
    npy_divmod: m = fmod(a, b) (the DSL's rem is C's fmod: exact, NaN at inf % x and x % 0); the remainder m, or
    m + b where m is nonzero with the sign opposite to b's, a zero one with b's sign; the quotient (a - m) / b, one
    less where m moved, snapped to the nearest integer (a half down), a zero one with the sign of a / b, and a / b
    where b is 0. Integers by the DSL's ``//`` (floordivsi) on a divisor never 0 (undefined on the GPU) or -1
    (INT_MIN // -1 overflows): x // 0 = x % 0 = 0 as numpy's, x // -1 = -x wrapping, x % -1 = 0."""
    def sel(p: str, x: str, y: str) -> str:
        return select(p, x, y, dtype, tensor)

    what = "floor_divide" if op == "floordiv" else "remainder (the divisor's sign)"
    out = [f"def {helper_name(op, dtype, tensor)}(a, b):",
           f'    """numpy\'s {what} of {dtype} {"tensors" if tensor else "values"} (patches.lower.elementwise_rules)."""']
    if tensor:          # either operand may be a scalar: both as tensors (x - 0 is x, signed zeros included)
        out += ["    z = cute.full_like(a + b, 0)", "    a, b = a - z, b - z"]
    if not is_float(dtype):
        zero, one, m1 = lit(0, dtype), lit(1, dtype), lit(-1, dtype)
        signed = not dtype.startswith("u")
        bad = f"(b == {zero}) | (b == {m1})" if signed else f"b == {zero}"
        out.append(f"    s = {sel(bad, one, 'b')}   # never 0 (undefined) nor -1 (INT_MIN // -1 overflows)")
        if op == "mod":
            return out + ["    return a - (a // s) * s   # x % 0 and x % -1 are 0"]
        q = sel(f"b == {m1}", "-a", "a // s") if signed else "a // s"
        return out + [f"    q = {q}   # x // -1 is -x, wrapping", f"    return {sel(f'b == {zero}', zero, 'q')}   # x // 0 is 0"]
    one, half, zero = lit(1.0, dtype), lit(0.5, dtype), lit(0.0, dtype)
    out += ["    m = cute.math.rem(a, b)   # C's fmod, exact: NaN at inf % x and x % 0",
            "    c = cute.math.copysign(m, b)   # != m where m is nonzero (or NaN) with the sign opposite to b's"]
    if op == "mod":
        return out + [f"    return {sel('c != m', 'm + b', 'c')}   # a zero remainder takes b's sign"]
    return out + ["    d = (a - m) / b",
                  f"    d = {sel('c != m', f'd - {one}', 'd')}   # the remainder moved by b: one less",
                  "    f = cute.math.floor(d)",
                  f"    f = {sel(f'd - f > {half}', f'f + {one}', 'f')}   # snapped to the nearest integer, a half down",
                  "    t = a / b",
                  f"    f = {sel(f'd == {zero}', 'cute.math.copysign(d, t)', 'f')}   # a zero takes the sign of a / b",
                  f"    return {sel(f'b == {zero}', 't', 'f')}   # x // 0 is x / 0"]


def _int_literal(code: str) -> int | None:
    """The value of an integer literal's code (``7``, ``cutlass.Int32(-7)``), else None."""
    m = re.fullmatch(r"(?:cutlass\.\w+\()?(-?\d+)\)?", code.strip())
    return int(m.group(1)) if m else None


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
    if op == "sign":
        return sign(args[0], dtype, tensor)
    if op in BITWISE:
        return bitwise(op, args, dtype, tensor)
    if op in ("floordiv", "mod"):
        return floordiv(op, args[0], args[1], dtype, tensor)
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
    """The identity of reduction ``op`` ("sum", "max", "min") as a literal of ``dtype``: for an integer max or min
    the dtype's least or greatest value."""
    ident = REDUCTIONS[op][0]
    if not is_float(dtype) and math.isinf(ident):
        if dtype not in INT_RANGES:
            raise LoweringError(f"a {op} reduction of {dtype} values has no identity literal")
        ident = INT_RANGES[dtype][ident > 0]
    return lit(ident, dtype)


def reduce_combine(op: str, a: str, b: str, dtype: str = "f32", tensor: bool = False) -> str:
    """Two partials of reduction ``op`` combined: the elementwise rule of its primitive (NaN propagates)."""
    return expr(REDUCTIONS[op][1], [a, b], dtype, tensor)


def int_division_lines(j: int, op: str, a: str, b: str, indent: str, dtype: str = "i32") -> list[str]:
    """Floor division (or modulo) of Int32 (or ``dtype``) values as numpy's (``floordiv``), assigning ``v{j}``."""
    return [f"{indent}v{j} = {floordiv(op, a, b, dtype)}   # {op}"]
