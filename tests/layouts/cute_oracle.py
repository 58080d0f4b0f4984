"""Run layout-algebra cases through CuTe DSL (on the CPU, inside one @cute.jit trace) and print JSON answers.

Used by the differential tests as a subprocess: stdin is a JSON list of cases
``[op, args]`` (layouts encoded as ``{"L": [shape, stride]}``, tuples as lists);
stdout is one JSON line per case: ``["ok", text]`` or ``["err", exception type]``.
"""

from __future__ import annotations

import json
import sys

import cutlass.cute as cute


def _tup(x):
    if isinstance(x, list):
        return tuple(_tup(y) for y in x)
    return x


def decode(x):
    if isinstance(x, dict) and "L" in x:
        shape, stride = x["L"]
        return cute.make_layout(_tup(shape), stride=_tup(stride))
    if isinstance(x, list):
        return tuple(decode(y) for y in x)
    return x


def _modes(x):
    return list(x) if isinstance(x, (tuple, list)) else [x]


OPS = {
    "coalesce": lambda a, p=None: cute.coalesce(a) if p is None else cute.coalesce(a, target_profile=p),
    "composition": cute.composition,
    "complement": cute.complement,
    "right_inverse": cute.right_inverse,
    "left_inverse": cute.left_inverse,
    "logical_divide": cute.logical_divide,
    "zipped_divide": cute.zipped_divide,
    "tiled_divide": cute.tiled_divide,
    "flat_divide": cute.flat_divide,
    "logical_product": cute.logical_product,
    "zipped_product": cute.zipped_product,
    "tiled_product": cute.tiled_product,
    "flat_product": cute.flat_product,
    "blocked_product": cute.blocked_product,
    "raked_product": cute.raked_product,
    "max_common_layout": cute.max_common_layout,
    "max_common_vector": cute.max_common_vector,
    "filter": cute.filter,
    "filter_zeros": cute.filter_zeros,
    "flatten": cute.flatten,
    "nullspace": cute.nullspace,
    "size": cute.size,
    "cosize": cute.cosize,
    "crd2idx": lambda c, a: cute.crd2idx(c, a),
    "idx2crd": lambda i, s: cute.idx2crd(i, s),
    "slice_": cute.slice_,
    "dice": cute.dice,
    "select": lambda a, m: cute.select(a, _modes(m)),
    "group_modes": cute.group_modes,
    "append": cute.append,
    "prepend": cute.prepend,
    "make_ordered_layout": lambda s, o: cute.make_ordered_layout(s, order=o),
    "tile_to_shape": cute.tile_to_shape,
    "recast_layout": cute.recast_layout,
}


def run_all(cases, out):
    for op, args in cases:
        try:
            r = OPS[op](*[decode(a) for a in args])
            answer = ["ok", str(r)]
        except Exception as e:  # CuTe refuses inadmissible input with assorted exception types
            answer = ["err", type(e).__name__]
        # One line per answer, flushed, so that a case that kills the process is known by position.
        out.write(json.dumps(answer) + "\n")
        out.flush()


@cute.jit
def _trace():
    run_all(_CASES, _OUT)


_CASES: list = []
_OUT = sys.stdout

if __name__ == "__main__":
    _CASES.extend(json.load(sys.stdin))
    _trace()
