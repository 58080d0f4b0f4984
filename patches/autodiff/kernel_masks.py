"""Masks past a padded edge: a ``where`` whose predicate is computed from positions alone (``iota``,
``program_id``, literals) and that selects a constant at every padded position of its data operand.

Such a ``where`` (``where(col < N, x, -inf)`` before a row max, Pallas's idiom for a padded block) holds the same
values in the forward pass (NaN read past the edge) and the backward kernels (zeros) along each padded label it
masks: its padded positions there hold the other operand. The predicate is evaluated on concrete grid points,
every one of a static grid, and checked at the padded positions of each padded label the data operand carries.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from ..staging.array import Array, to_array
from ..staging.core import impl_rules
from ..staging.interpreter import run
from ..staging.ir import Literal

_POSITIONAL = frozenset({"iota", "program_id", "num_programs", "extent", "broadcast", "astype", "add", "sub", "mul",
                         "neg", "floordiv", "mod", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge",
                         "bitwise_and", "bitwise_or", "bitwise_not", "bitwise_xor", "where"})
MAX_POINTS = 4096          # grid points evaluated at most (a larger grid keeps the refusal)


def _slice(v: Any, producers: dict) -> list | None:
    """The equations computing ``v`` from positions alone, in program order (None when it reads anything else)."""
    out, seen, stack = [], set(), [v]
    while stack:
        x = stack.pop()
        if type(x) is Literal or id(x) in seen:
            continue
        seen.add(id(x))
        e = producers.get(id(x))
        if e is None or e.prim.name not in _POSITIONAL:
            return None
        out.append(e)
        stack.extend(e.inputs)
    order = {id(e): k for k, e in enumerate(producers.values())}
    return sorted({id(e): e for e in out}.values(), key=lambda e: order[id(e)])


def _evaluate(eqns: list, v: Any, point: tuple, grid: tuple) -> np.ndarray:
    """``v`` at grid point ``point``, by the numpy implementations (never staged: this may run inside a trace)."""
    env: dict = {}
    for e in eqns:
        vals = [a.bound() if type(a) is Literal else env[id(a)] for a in e.inputs]
        if e.prim.name in ("program_id", "num_programs"):
            outs = [to_array(np.int32((point if e.prim.name == "program_id" else grid)[e.params["axis"]]))]
        else:
            outs = impl_rules[e.prim](*[x if isinstance(x, Array) else to_array(x) for x in vals], **e.params)
        for o, r in zip(e.outputs, outs):
            env[id(o)] = r
    return np.asarray(env[id(v)].logical())


def masks_padding(e: Any, confs: dict, producers: dict, sources: dict, grid: tuple | None) -> frozenset:
    """The padded labels of the operand derived from a padded read (``confs``: its {label: mode}, None when mixed,
    absent when not derived) at whose every padded position ``where`` equation ``e`` selects the other operand,
    which is not derived from one: along those labels its result holds the same values in the forward pass and the
    backward kernels (a column mask of a block padded along rows and columns masks the columns only)."""
    none: frozenset = frozenset()
    if grid is None or not all(type(n) is int for n in grid) or int(np.prod(grid, dtype=np.int64)) > MAX_POINTS:
        return none
    pred, hot = e.inputs[0], [k for k in (1, 2) if k in confs]
    if len(hot) != 1 or not confs[hot[0]] or 0 in confs:
        return none
    eqns = _slice(pred, producers)
    if eqns is None:
        return none
    picked_when = hot[0] == 1          # the data operand is picked where the predicate holds
    shape = e.outputs[0].type.layout.shape
    shape = shape if type(shape) is tuple else (shape,)
    masked = {label for label in confs[hot[0]] if sources.get(label) is not None}
    for point in itertools.product(*(range(n) for n in grid)):
        p = np.broadcast_to(_evaluate(eqns, pred, point, grid), shape)
        for label, mode in confs[hot[0]].items():
            if label not in masked:
                continue
            index_map, k, tile, extent = sources[label]
            block = int(np.asarray(run(index_map, [to_array(np.int32(i)) for i in point])[k].logical()))
            first = extent - block * tile             # the block's first padded coordinate along ``mode``
            if first >= shape[mode]:
                continue
            past = p[(slice(None),) * mode + (slice(max(first, 0), None),)]
            if (past == picked_when).any():
                masked.discard(label)
        if not masked:
            return none
    return frozenset(masked)
