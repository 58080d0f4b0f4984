"""Run layout-algebra cases through CuTe DSL (on the CPU, inside one @cute.jit trace) and print JSON answers.

Used by the differential tests as a subprocess: stdin is a JSON list of cases
``[op, args]`` (layouts encoded as ``{"L": [shape, stride]}``, tuples as lists; a stride leaf
``{"E": [value, modes]}`` is value*E(modes); ``{"SW": [b, m, s]}`` a swizzle; ``{"C": [inner, offset, outer]}``
a composed layout; ``{"T": [start, layout]}`` a counting tensor; ``{"ID": shape}`` an identity tensor);
stdout is one JSON line per case: ``["ok", text]`` (a list of texts or ints for ops that answer several
things) or ``["err", exception type]``.
"""

from __future__ import annotations

import json
import sys

import cutlass
import cutlass.cute as cute


def _tup(x):
    if isinstance(x, list):
        return tuple(_tup(y) for y in x)
    return x


def _stride(x):
    if isinstance(x, dict) and "E" in x:
        value, modes = x["E"]
        return value * cute.E(modes)
    if isinstance(x, list):
        return tuple(_stride(y) for y in x)
    return x


def decode(x):
    if isinstance(x, dict) and "L" in x:
        shape, stride = x["L"]
        return cute.make_layout(_tup(shape), stride=_stride(stride))
    if isinstance(x, dict) and "SW" in x:
        return cute.make_swizzle(*x["SW"])
    if isinstance(x, dict) and "C" in x:
        inner, offset, outer = x["C"]
        return cute.make_composed_layout(decode(inner), offset, decode(outer))
    if isinstance(x, dict) and "T" in x:
        start, layout = x["T"]
        return cute.make_tensor(start, decode(layout))
    if isinstance(x, dict) and "ID" in x:
        return cute.make_identity_tensor(_tup(x["ID"]))
    if isinstance(x, list):
        return tuple(decode(y) for y in x)
    return x


def _modes(x):
    return list(x) if isinstance(x, (tuple, list)) else [x]


DTYPES = {"bf16": "BFloat16", "f16": "Float16", "tf32": "TFloat32", "f8e4m3": "Float8E4M3FN", "f8e5m2": "Float8E5M2"}


def _smem(operand, major, tile_mnk, dtype, stages):
    from cutlass.tensor_utils import LayoutEnum
    from cutlass.utils import hopper_helpers

    enum = LayoutEnum.ROW_MAJOR if major == "k" else LayoutEnum.COL_MAJOR
    make = hopper_helpers.make_smem_layout_a if operand == "a" else hopper_helpers.make_smem_layout_b
    return make(enum, tile_mnk, getattr(cutlass, DTYPES[dtype]), stages)


def _values(layout):
    return [int(layout(i)) for i in range(cute.size(layout))]


def _values_beyond(layout):
    return [int(layout(i)) for i in range(3 * cute.size(layout) + 2)]


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
    # CuTe's int-tuple algebra
    "shape_div": cute.shape_div,
    "ceil_div": cute.ceil_div,
    "product_each": cute.product_each,
    "unflatten": lambda f, p: cute.unflatten(list(f), p),
    "congruent": cute.is_congruent,
    "weakly_congruent": cute.is_weakly_congruent,
    # Hopper-grade layouts: swizzles, composed and coordinate layouts, TV layouts, partitions, smem atoms
    "values": _values,
    "values_beyond": _values_beyond,
    "make_identity_layout": cute.make_identity_layout,
    "make_composed_layout": cute.make_composed_layout,
    "compose_by_basis": cute.composition,
    "make_layout_tv": lambda t, v: [str(x) for x in cute.make_layout_tv(t, v)],
    "slice_and_offset": lambda c, a: [str(x) for x in cute.slice_and_offset(c, a)],
    "local_tile": lambda t, tiler, c, proj=None: cute.local_tile(t, tiler, c, proj=proj),
    "local_partition": lambda t, tile, i, proj=1: cute.local_partition(t, tile, cutlass.Int32(i), proj),
    "tensor_slice": lambda t, c: t[c],
    "smem_layout": _smem,
}


def run_all(cases, out):
    for op, args in cases:
        try:
            r = OPS[op](*[decode(a) for a in args])
            answer = ["ok", r if isinstance(r, list) else str(r)]
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
