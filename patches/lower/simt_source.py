"""Running a SIMT row kernel's emitted source on the CPU: the module text itself, executed by the DSL model of
patches.lower.kernel.simulate (one Python thread per CUDA thread, real barriers and butterfly shuffles, shared
memory per CTA), on the operands the GPU runner passes (outputs then reads, each indexed by its own layout).

What ``simulate_simt`` computes is a model of what the emitter means; this runs what it wrote (the tiling, the
vector loads, the tails, the passes, the shuffles, the stores, the integer helpers), so a wrong index or a missing
guard in the text shows as a wrong or unwritten (NaN or all-ones) output element, or as a race between CTAs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..layouts import cosize, flatten
from ..staging import dtypes
from ..staging.array import Array
from ..staging.errors import StagingError
from ..staging.interpreter import bind_argument
from ..staging.symbols import bind_extents, substitute
from ..staging.types import modes_of
from .errors import LoweringError
from .kernel.simulate import ONLY, exec_host, tensor, tracked
from .kernel.simulate_core import _DTYPES


def _symbols(spec: Any, arrays: tuple, sizes: dict | None) -> dict:
    """Values of the kernel's symbols: off the parameters' extents, then ``sizes`` (symbol or name -> int)."""
    env = {k: v for k, v in (sizes or {}).items() if not isinstance(k, str)}
    named = {k: v for k, v in (sizes or {}).items() if isinstance(k, str)}
    params = spec.program.params
    pairs = [(i, w, h) for i, (p, x) in enumerate(zip(params, arrays))
             for w, h in zip(modes_of(p.type.shape), np.shape(x))]
    env = bind_extents(pairs, env)
    for s in {*_free(spec)} - set(env):
        if str(s) in named:
            env[s] = int(named[str(s)])
    return env


def _free(spec: Any) -> set:
    out: set = set()
    for o in spec.outputs:
        out |= set(getattr(o.layout, "free_symbols", ()) or ())
    for r in spec.reads:
        out |= set(getattr(r.layout, "free_symbols", ()) or ())
    return out


def _concrete(layout: Any, env: dict, what: str) -> Any:
    lay = substitute(layout, env) if env else layout
    if not all(isinstance(x, int) for x in (*modes_of(flatten(lay).shape), *modes_of(flatten(lay).stride))):
        raise LoweringError(f"run the emitted source: {what}'s layout {lay} has extents no argument binds (pass sizes=)")
    return lay


def work(spec: Any, sizes: dict | None = None) -> int | None:
    """What executing the kernel's source costs, in element visits (tens of microseconds each on the CPU): rows x
    columns x passes, plus 160 lane steps per butterfly; None where its extents are not known."""
    try:
        n = substitute((spec.rows, spec.cols), sizes) if sizes else (spec.rows, spec.cols)
        passes = len(spec.reductions)
        return int(n[0]) * (int(n[1]) * (passes + 1) + 160 * passes)
    except (TypeError, ValueError):
        return None
    except Exception:  # noqa: BLE001 (a symbol the bindings do not give)
        return None


def run_simt_source(module: Any, *arrays: Any, sizes: dict | None = None, ctas: tuple | None = None) -> list:
    """Execute a SIMT module's emitted source on numpy arrays (the program's parameters, in order); returns its
    outputs as numpy arrays in their logical shapes. Outputs start poisoned (NaN, or all ones for integers), and an
    output element the whole launch never writes raises (a poisoned integer may pass for a value); CTAs writing or
    reading each other's output elements raise. With ``ctas`` (linear CTA indices, negative from the end) only
    those CTAs run: the others' elements stay poisoned (``written_by_source`` says which were written)."""
    got, written = written_by_source(module, *arrays, sizes=sizes, ctas=ctas)
    for k, w in enumerate(written):
        if ctas is None and not w.all():
            at = tuple(int(i) for i in np.argwhere(~w)[0])
            raise LoweringError(f"{module.spec.name}: the emitted source never writes element {at} of output {k} "
                                f"({int((~w).sum())} of {w.size} elements unwritten)")
    return got


def written_by_source(module: Any, *arrays: Any, sizes: dict | None = None, ctas: tuple | None = None) -> tuple:
    """(outputs, written): ``run_simt_source``'s outputs and, per output, a bool array of its logical shape saying
    which elements the code wrote."""
    spec = module.spec
    params = spec.program.params
    if len(arrays) != len(params):
        raise LoweringError(f"run the emitted source of {spec.name}: the kernel's program takes {len(params)} "
                            f"arrays, got {len(arrays)}")
    try:                                    # the interpreter's checks of shapes and dtypes, then the symbols
        env = _symbols(spec, arrays, sizes)
        arrays = tuple(bind_argument(substitute(p.type, env) if env else p.type, x, i, spec.name).logical()
                       for i, (p, x) in enumerate(zip(params, arrays)))
    except StagingError:                    # named by the interpreter's checks, as for simulate_kernels
        raise
    except (TypeError, ValueError) as e:
        raise LoweringError(f"run the emitted source of {spec.name}: bad arguments ({e})") from None
    tensors, outs = [], []
    for o in spec.outputs:
        lay = _concrete(o.layout, env, o.name)
        poison = np.nan if dtypes.is_float(o.dtype) else np.array(-1).astype(_DTYPES[o.dtype].np)
        store = tracked(np.full(max(1, int(cosize(lay))), poison, dtype=_DTYPES[o.dtype].np))
        outs.append((o, lay, store))
        tensors.append(tensor(store, o.dtype, flatten(lay)))
    for r in spec.reads:
        lay = _concrete(r.layout, env, r.name)
        x = np.asarray(arrays[r.param])
        store = np.array(Array.from_logical(x, lay, r.dtype).storage) if x.size else np.zeros(1, _DTYPES[r.dtype].np)
        tensors.append(tensor(store, r.dtype, flatten(lay)))
    ONLY.ctas = ctas
    try:
        exec_host(module.source, spec.name, tensors)
    except IndexError as e:                 # the model's tensors are bounds-checked: the code indexed past a buffer
        raise LoweringError(f"{spec.name}: the emitted source accesses memory outside an operand: {e}") from None
    finally:
        ONLY.ctas = None
    got, written = [], []
    for (o, lay, store), var in zip(outs, spec.program.outputs):
        shape = tuple(int(np.prod([1, *flatten(m)])) if isinstance(m, tuple) else int(m)
                      for m in modes_of(_concrete(var.type.layout, env, o.name).shape))
        if store.log.races:
            at, kind, p, q, does = store.log.races[0]
            raise LoweringError(f"{spec.name}: output {o.name}: CTA {q} {does} element {at}, which CTA {p} of the "
                                f"same launch {kind} (a race)")
        wrote = store.log.written
        store.log = None
        got.append(Array(np.asarray(store), 0, flatten(lay), o.dtype).numpy().reshape(shape, order="F")
                   .astype(dtypes.to_numpy(var.type.dtype), copy=False))
        written.append(Array(wrote, 0, flatten(lay), "bool").numpy().reshape(shape, order="F"))
    return got, written
