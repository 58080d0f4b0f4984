"""Boolean masks as indices (numpy's ``x[mask]``, JAX's ``x.at[mask].set(v)``).

A concrete mask (a numpy or Python bool array, a concrete ``Array``) stands for the integer arrays of its True
positions, one per mode it covers, as numpy and JAX read it; the result's shape is known when the mask is. A
traced mask has no such shape, so reading ``x[mask]`` with one is refused; an update whose values do not depend on
how many elements it names (a scalar, or values broadcasting along the other modes) is ``where(mask, new, x)``,
for concrete and traced masks alike: O(size of x), one fused kernel.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..array import Array
from ..core import Tracer, get_aval
from ..errors import fail
from ..types import mode_size, modes_of
from .views import broadcast
from .views import getitem as basic_getitem

TRACED_MASK = ("boolean mask indices give a result whose shape depends on the data; use where(mask, x, 0), a sum "
               "over the mask, or x.at[mask].set(v) with v a scalar")


def is_mask(ix: Any) -> bool:
    """Whether an index entry is a boolean mask (numpy's boolean indexing), a 0-d one (``x[True]``) included."""
    if isinstance(ix, (bool, np.bool_)):
        return True
    if isinstance(ix, Tracer):
        return get_aval(ix).dtype == "bool"
    if isinstance(ix, Array):
        return ix.dtype == "bool"
    if isinstance(ix, np.ndarray):
        return ix.dtype == bool
    if isinstance(ix, list) and ix and all(isinstance(v, (bool, np.bool_, list)) for v in ix):
        try:
            arr = np.asarray(ix)
        except (ValueError, TypeError):
            return False
        return arr.dtype == bool and arr.ndim > 0
    return False


def _mask_rank(ix: Any) -> int:
    return get_aval(ix).rank if isinstance(ix, (Tracer, Array)) else np.ndim(ix)


def _covered(name: str, entries: tuple, t: Any) -> list:
    """The first mode each entry covers (None and Ellipsis cover none themselves; a mask covers its rank)."""
    widths = [_mask_rank(ix) if is_mask(ix) else 0 if ix is None or ix is Ellipsis else 1 for ix in entries]
    if sum(ix is Ellipsis for ix in entries) > 1:
        raise fail(name, "an index can hold one Ellipsis (...) at most", t)
    used = sum(widths)
    if used > t.rank:
        raise fail(name, f"the index covers {used} modes of a tensor with {t.rank}", t)
    first, k = [], 0
    for ix, w in zip(entries, widths):
        first.append(k)
        k += t.rank - used if ix is Ellipsis else w
    return first


def _checked_mask(name: str, ix: Any, k: int, t: Any) -> None:
    """A mask's extents must equal those of the modes it covers (numpy refuses a mismatch too)."""
    have = tuple(mode_size(m) for m in modes_of(get_aval(ix).shape)) if isinstance(ix, (Tracer, Array)) \
        else np.shape(ix)
    ms = modes_of(t.shape)
    want = tuple(mode_size(ms[k + j]) for j in range(len(have)))
    if any(type(w) is not int for w in want) and not isinstance(ix, Tracer):
        raise fail(name, f"a boolean mask over modes of symbolic extent {want} is not supported", t)
    if have != want:
        raise fail(name, f"a boolean mask of shape {have} does not match the extents {want} of modes "
                         f"{k}..{k + len(have) - 1}", t)


def expand_masks(name: str, index: Any, t: Any) -> Any:
    """``index`` with each concrete boolean mask replaced by the integer arrays of its True positions; a traced
    mask refused (the result's shape would depend on the data)."""
    entries = index if isinstance(index, tuple) else (index,)
    if not any(is_mask(ix) for ix in entries):
        return index
    first = _covered(name, entries, t)
    out: list = []
    for ix, k in zip(entries, first):
        if not is_mask(ix):
            out.append(ix)
            continue
        if isinstance(ix, Tracer):
            raise fail(name, TRACED_MASK, get_aval(ix))
        if _mask_rank(ix) == 0:                  # x[True] is x[None] (numpy's); x[False] names nothing
            if not bool(ix.logical() if isinstance(ix, Array) else ix):
                raise fail(name, "the boolean index False selects no element (tensors have at least one element)", t)
            out.append(None)
            continue
        _checked_mask(name, ix, k, t)
        where = np.nonzero(ix.logical() if isinstance(ix, Array) else np.asarray(ix))
        if where[0].size == 0:
            raise fail(name, "the boolean mask selects no element (tensors have at least one element)", t)
        out.extend(where)
    return tuple(out)


def masked_selection(name: str, x: Any, index: Any, v: Any) -> tuple | None:
    """For an update of ``x`` at ``index`` holding one boolean mask beside full slices, with values ``v`` (a tensor
    of ``x``'s dtype, or None for ``apply``) that do not depend on how many elements the mask names: the mask and
    the values broadcast to ``x``'s shape. None where the update is not of that form."""
    entries = index if isinstance(index, tuple) else (index,)
    masks = [i for i, ix in enumerate(entries) if is_mask(ix)]
    others_full = all(ix is Ellipsis or isinstance(ix, slice) and ix == slice(None)
                      for i, ix in enumerate(entries) if i not in masks)
    if len(masks) != 1 or not others_full:
        return None
    t = get_aval(x, name)
    mask = entries[masks[0]]
    p = _covered(name, entries, t)[masks[0]]
    _checked_mask(name, mask, p, t)
    k = _mask_rank(mask)
    if not isinstance(mask, (Tracer, Array)):
        mask = Array.from_numpy(np.asarray(mask))
    full = mask if k == t.rank else broadcast(mask, t.shape, tuple(range(p, p + k)))
    if v is None:
        return full, None
    vt = get_aval(v, name)
    after = t.rank - p - k                       # x[mask]'s modes: p before, one for the count, `after` after it
    if vt.rank > after:
        count_extent = mode_size(modes_of(vt.shape)[vt.rank - after - 1])
        if count_extent != 1 or vt.rank - after - 1 > p:
            return None                          # values for each named element: the count must be known
        v = basic_getitem(v, (slice(None),) * (vt.rank - after - 1) + (0,))
    r = get_aval(v).rank
    before = r - after if r > after else 0
    dims = tuple(range(p - before, p)) + tuple(range(t.rank - min(r, after), t.rank))
    try:
        return full, broadcast(v, t.shape, dims)
    except Exception as err:
        if type(err).__name__ != "StagingError":
            raise
        raise fail(name, f"values of shape {tuple(mode_size(m) for m in modes_of(vt.shape)) if vt.rank else ()} do "
                         f"not broadcast to the elements the mask names", t) from None
