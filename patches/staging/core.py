"""The interpreter stack: primitives with rule tables, traces at levels, tracers, and ``bind``.

As in JAX's core, every transformation (staging, jvp, partial evaluation, batching) is a Trace type;
a MainTrace puts one on the stack at a level. ``bind`` sends a primitive to the highest-level trace
among its operands (or the dynamic trace, so staging also captures operations on constants), after
raising the lower-level operands into it. Level 0 is evaluation on concrete Arrays.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from ..layouts import Layout, LayoutError
from . import dtypes
from .array import Array, check_allocation, to_array
from .errors import StagingError, fail
from .operators import Operators
from .types import SCALAR_LAYOUT, TensorType


class Primitive:
    """An operation of the IR; its meaning lives in the rule tables keyed by it."""

    __slots__ = ("name", "multiple_results", "is_call")

    def __init__(self, name: str, multiple_results: bool = False, is_call: bool = False) -> None:
        self.name = name
        self.multiple_results = multiple_results
        self.is_call = is_call

    def bind(self, *args: Any, **params: Any) -> Any:
        return bind(self, *args, **params)

    def __repr__(self) -> str:
        return self.name


# Rule tables of staging; autodiff adds its own (jvp, transpose, batching) keyed the same way.
# abstract_eval: (*in_types, **params) -> list of out types.   impl: (*in_arrays, **params) -> list of Arrays.
abstract_eval_rules: dict[Primitive, Callable[..., list]] = {}
impl_rules: dict[Primitive, Callable[..., list]] = {}


def abstract_eval(prim: Primitive, types: list, params: dict) -> list:
    """The output types of ``prim`` on ``types``; a LayoutError from the algebra becomes a StagingError naming prim."""
    rule = abstract_eval_rules.get(prim)
    if rule is None:
        raise fail(prim.name, "no abstract evaluation rule (is it a primitive of staging?)")
    return apply_rule(prim, rule, types, params)


# Exceptions a rule raises when it cannot read its operands or parameters (exactly these types: the library's errors
# subclass ValueError and pass through).
_STRAY = (TypeError, IndexError, KeyError, ValueError, AttributeError)


def apply_rule(prim: Primitive, rule: Callable[..., list], args: list, params: dict) -> list:
    """rule(*args, **params), with a LayoutError from the algebra turned into a StagingError naming prim and the
    argument types (an argument is a type, or a value whose ``.type`` is one)."""
    try:
        return rule(*args, **params)
    except LayoutError as e:
        raise fail(prim.name, str(e), *(getattr(a, "type", a) for a in args)) from None
    except _STRAY as e:
        if type(e) not in _STRAY:     # the library's own errors (subclasses) pass through
            raise
        # operands or parameters the rule cannot read (pt.bind of a primitive by hand): named, not a stray error
        raise fail(prim.name, f"invalid operands or parameters for this primitive: {len(args)} operand(s), "
                              f"parameters {sorted(params)} ({type(e).__name__}: {e})",
                   *(getattr(a, "type", a) for a in args if hasattr(a, "dtype") or hasattr(a, "type"))) from None


# -- traces -----------------------------------------------------------------------------------


class MainTrace:
    """A transformation on the stack: its level, its Trace type and the data it shares across its traces."""

    __slots__ = ("level", "trace_type", "global_data")

    def __init__(self, level: int, trace_type: type, global_data: Any) -> None:
        self.level, self.trace_type, self.global_data = level, trace_type, global_data

    def __repr__(self) -> str:
        return f"MainTrace({self.level}, {self.trace_type.__name__})"


class Trace:
    """How one transformation interprets primitives; ``pure``/``lift`` box values from below as its tracers."""

    __slots__ = ("main",)

    def __init__(self, main: MainTrace) -> None:
        self.main = main

    def pure(self, val: Any) -> Any:
        raise NotImplementedError

    def lift(self, val: Any) -> Any:
        raise NotImplementedError

    def process_primitive(self, prim: Primitive, tracers: list, params: dict) -> list:
        raise NotImplementedError


class Tracer(Operators):
    """A value seen by a transformation; its abstract value is ``aval`` (a TensorType). A *weak* one stands for a
    Python scalar argument (of ``jit``, ``grad``, ...): like the scalar, it takes the dtype of a tensor it meets."""

    __slots__ = ("_trace", "_weak")
    __array_priority__ = 100

    @property
    def weak(self) -> bool:
        return bool(getattr(self, "_weak", False))

    @property
    def aval(self) -> TensorType:
        raise NotImplementedError

    @property
    def type(self) -> TensorType:
        return self.aval

    @property
    def dtype(self) -> str:
        d = self.aval.dtype
        return dtypes.NAMES.get(d, d)

    @property
    def layout(self) -> Any:
        return self.aval.layout

    @property
    def shape(self) -> Any:
        s = self.aval.layout.shape     # numpy's: one entry per top-level mode, (n,) at rank 1
        return s if type(s) is tuple else (s,)

    def full_lower(self) -> Any:
        return self

    def __bool__(self) -> bool:
        raise fail(None, f"a traced value ({self.aval}) has no concrete truth value; Python control flow "
                         "cannot depend on it (use where)")

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        raise fail(None, f"a traced value ({self.aval}) cannot become a numpy array inside a transformation (a numpy "
                         "function such as np.where, np.clip or np.dot asks for one: call the patches op of the same "
                         "name, pt.where, pt.clip, pt.dot)")

    def __index__(self) -> int:
        raise fail(None, f"a traced value ({self.aval}) cannot be used as a Python integer")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.aval})"


class EvalTrace(Trace):
    """Level 0: run each primitive's numpy implementation on concrete Arrays."""

    __slots__ = ()

    def pure(self, val: Any) -> Any:
        return to_array(val)

    lift = pure

    def process_primitive(self, prim: Primitive, tracers: list, params: dict) -> list:
        rule = impl_rules.get(prim)
        if rule is None:
            raise fail(prim.name, "no numpy implementation")
        for t in abstract_eval(prim, [t.type for t in tracers], params):  # eager ops are checked as staged ones are
            if isinstance(t, TensorType) and isinstance(t.layout, Layout):
                check_allocation(t.layout, prim.name)
        return apply_rule(prim, rule, tracers, params)


trace_stack: list[MainTrace] = [MainTrace(0, EvalTrace, None)]
_dynamic: list[MainTrace] = [trace_stack[0]]


@contextmanager
def new_main(trace_type: type, global_data: Any = None, dynamic: bool = False) -> Iterator[MainTrace]:
    """Push a transformation; with ``dynamic`` it also receives binds whose operands are all constants (staging)."""
    main = MainTrace(len(trace_stack), trace_type, global_data)
    trace_stack.append(main)
    if dynamic:
        _dynamic.append(main)
    try:
        yield main
    finally:
        if dynamic:
            _dynamic.pop()
        trace_stack.pop()


def find_top_trace(args: Any) -> Trace:
    top = _dynamic[-1]
    for x in args:
        if isinstance(x, Tracer):
            m = x._trace.main
            if m.level >= len(trace_stack) or trace_stack[m.level] is not m:
                raise fail(None, f"a value traced by {m.trace_type.__name__} ({x.aval}) was used after its "
                                 "transformation finished (a leaked tracer: return it instead of storing it)")
            if m.level > top.level:
                top = m
    return top.trace_type(top)


def full_raise(trace: Trace, val: Any) -> Any:
    """``val`` as a tracer of ``trace``: constants are boxed, lower-level tracers lifted."""
    if not isinstance(val, Tracer):
        return trace.pure(val)
    level = trace.main.level
    vmain = val._trace.main
    if vmain is trace.main:
        return val
    if vmain.level < level:
        return trace.lift(val)
    if vmain.level > level:
        raise fail(None, f"a value traced by {vmain.trace_type.__name__} escaped its transformation "
                         f"and met {trace.main.trace_type.__name__} (a leaked tracer)")
    raise fail(None, f"a value from a finished transformation ({vmain.trace_type.__name__}) was used again "
                     "(a leaked tracer)")


def full_lower(val: Any) -> Any:
    return val.full_lower() if isinstance(val, Tracer) else val


def bind(prim: Primitive, *args: Any, **params: Any) -> Any:
    """Apply ``prim`` to ``args`` in the highest transformation that sees them."""
    try:
        trace = find_top_trace(args)
        tracers = [full_raise(trace, a) for a in args]
    except StagingError as e:           # an operand that is no tensor: named by the primitive it was passed to
        bad = next((a for a in args if not is_tensor_like(a)), None)
        if e.primitive is not None or bad is None:
            raise
        raise fail(prim.name, f"expected a tensor (a traced value, an Array, a numpy array or a Python number), "
                              f"got {type(bad).__name__} {bad!r:.80}") from None
    try:
        outs = trace.process_primitive(prim, tracers, params)
    except _STRAY as e:
        # a transformation's rule met operands or parameters the primitive refuses: its own error names them
        if type(e) in _STRAY and prim in abstract_eval_rules:
            abstract_eval(prim, [get_aval(t) for t in tracers], params)
        raise
    if prim.multiple_results:
        return [full_lower(o) for o in outs]
    return full_lower(outs[0])


def bind_multi(prim: Primitive, *args: Any, **params: Any) -> list:
    """``bind`` that always returns the list of outputs."""
    out = bind(prim, *args, **params)
    return out if prim.multiple_results else [out]


# -- abstract values of anything -----------------------------------------------------------------


def is_weak(x: Any) -> bool:
    """Whether ``x`` is weakly typed: a Python int or float (not a bool, not a numpy scalar), or a weak Tracer."""
    if isinstance(x, Tracer):
        return x.weak
    return isinstance(x, (int, float)) and not isinstance(x, (bool, np.generic))


def weak_arrays(leaves: list) -> list:
    """Arguments with their Python numbers as 0-d Arrays (weak values): f32 and i32, or f64 and i64 where a tensor
    among the arguments is (so a Python float meeting an f64 tensor is not rounded through f32 first)."""
    from .array import to_array

    wide = {get_aval(x).dtype for x in leaves if not is_weak(x) and is_tensor_like(x)
            and not isinstance(x, bool)} & {"f64", "i64"}
    out = []
    for x in leaves:
        if is_weak(x) and not isinstance(x, Tracer):
            d = ("f64" if "f64" in wide else "f32") if isinstance(x, float) else ("i64" if "i64" in wide else "i32")
            x = to_array(x, d)
        out.append(x)
    return out


CAPPED = "weak, computed in 32 bits"      # a weak loop or cond result of a Python number: it never widens to 64 bits


class WeakArgument:
    """What a weak Tracer standing for a Python int argument was narrowed to (an i8 tensor meeting it converts it
    to i8): its value must fit each such dtype, checked now when the value is known, else by ``jit`` at each call."""

    __slots__ = ("value", "narrowed")

    def __init__(self, value: Any = None) -> None:
        self.value, self.narrowed = value, set()

    def require(self, dtype: str, who: str) -> None:
        """Record that the argument converts to the int ``dtype``; a known value that does not fit is refused."""
        self.narrowed.add(dtype)
        if self.value is not None:
            self.check(self.value, who)

    def check(self, value: Any, who: str) -> None:
        from . import dtypes
        from .errors import fail

        if isinstance(value, Tracer):           # a jitted function called while tracing: its argument's own record
            if self.narrowed and value.weak and not isinstance(value._weak, WeakArgument):
                raise fail(who, f"a weak int computed while tracing meets a {min(self.narrowed)} tensor: convert it "
                                "with astype (narrowing it could wrap)")
            for d in self.narrowed if isinstance(value._weak, WeakArgument) else ():
                value._weak.require(d, who)
            return
        for d in sorted(self.narrowed):
            info = np.iinfo(dtypes.to_numpy(d))
            if isinstance(value, int) and not info.min <= value <= info.max:
                raise fail(who, f"the Python int {value} meets a tensor of dtype {d} and does not fit in it "
                                f"([{info.min}, {info.max}]); convert the tensor with astype")


def mark_weak(x: Any, arg: Any = True) -> Any:
    """``x`` marked weak (a Tracer standing for a Python scalar; ``arg`` a WeakArgument where it stands for an
    argument whose narrowings are checked); other values as they are."""
    if isinstance(x, (Tracer, Array)):
        x._weak = arg
    return x


def get_aval(x: Any, who: str | None = None) -> TensorType:
    """The type of a tracer, an Array, a numpy array or a Python scalar (else a StagingError naming ``who``)."""
    if isinstance(x, Tracer):
        return x.aval
    if isinstance(x, Array):
        return x.type
    if isinstance(x, (np.ndarray, np.generic)):
        return to_array(x).type
    if isinstance(x, (bool, int, float)):
        return TensorType(dtypes.of_python_scalar(x), SCALAR_LAYOUT)
    raise fail(who, f"expected a tensor (a traced value, an Array, a numpy array or a Python number), "
                    f"got {type(x).__name__} {x!r:.80}")


def is_tensor_like(x: Any) -> bool:
    return isinstance(x, (Tracer, Array, bool, int, float, np.ndarray, np.generic))


def scalar_type(dtype: str) -> TensorType:
    return TensorType(dtype, SCALAR_LAYOUT)


def to_user(x: Any) -> Any:
    """What a transformation hands back: numpy arrays for concrete values, tracers unchanged."""
    if isinstance(x, Array):
        return x.numpy()
    return x


__all__ = [
    "Array", "EvalTrace", "MainTrace", "Primitive", "StagingError", "Trace", "Tracer", "abstract_eval",
    "abstract_eval_rules", "bind", "bind_multi", "find_top_trace", "full_lower", "full_raise", "get_aval",
    "impl_rules", "new_main", "to_user", "trace_stack",
]
