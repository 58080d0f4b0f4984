"""Reading CuTe DSL tensors built inside a trace as numpy arrays: the static layout (and, for coordinate and
counting tensors, the static iterator) evaluated at every flat index, colexicographically as CuTe does."""

from __future__ import annotations

from typing import Any

import numpy as np

from .report import VerificationError


def _flat(x: Any) -> list:
    if isinstance(x, tuple):
        return [y for e in x for y in _flat(e)]
    return [x]


def _mode(basis: Any) -> tuple:
    m = basis.mode
    return tuple(m) if isinstance(m, (list, tuple)) else (m,)


def _coords(shape: list) -> list:
    n = int(np.prod(shape, dtype=np.int64)) if shape else 1
    idx = np.arange(n, dtype=np.int64)
    out = []
    for s in shape:
        out.append(idx % s)
        idx = idx // s
    return out


def _static(x: Any, what: str) -> int:
    if isinstance(x, (int, np.integer)):
        return int(x)
    raise VerificationError(f"{what} is not static ({x!r}); the verifier evaluates static layouts only")


def offsets(layout: Any) -> np.ndarray:
    """A layout with integer strides at every flat index: int64 array."""
    shape = [_static(s, "a shape") for s in _flat(layout.shape)]
    stride = [_static(d, "a stride") for d in _flat(layout.stride)]
    out = np.zeros(int(np.prod(shape, dtype=np.int64)) if shape else 1, np.int64)
    for c, d in zip(_coords(shape), stride):
        out += c * d
    return out


def values(t: Any) -> np.ndarray:
    """Every element of a counting tensor (iterator an int: 1-D offsets) or a coordinate tensor (iterator a tuple,
    strides scaled bases: an (n, modes) array of coordinates)."""
    it = t.iterator
    layout = t.layout
    shape = [_static(s, "a shape") for s in _flat(layout.shape)]
    stride = _flat(layout.stride)
    cs = _coords(shape)
    if isinstance(it, (int, np.integer)):
        return int(it) + offsets(layout)
    if not isinstance(it, tuple):
        raise VerificationError(f"tensor {t} is neither a counting nor a coordinate tensor")
    base = _flat(it)
    out = np.zeros((len(cs[0]) if cs else 1, len(base)), np.int64)
    out += np.asarray([_static(b, "an iterator") for b in base], np.int64)
    for c, d in zip(cs, stride):
        if isinstance(d, (int, np.integer)):
            if int(d) != 0:
                raise VerificationError(f"coordinate tensor {t} has an integer stride {d}")
            continue
        m = _mode(d)
        if len(m) != 1 or m[0] >= len(base):
            raise VerificationError(f"coordinate tensor {t}: basis mode {m} is not a flat coordinate")
        out[:, m[0]] += c * _static(d.value, "a basis scale")
    return out


def basis_modes(t: Any) -> list:
    """For a TMA coordinate tensor over (M|N, K|N, L): which coordinate of its basis each tensor mode is (the TMA's
    own dimension order may differ from the tensor's), None for a stride-0 mode. Modes TMA merged into one dimension
    (a block spanning the whole contiguous mode) share a basis coordinate at scales ``1, s0, s0*s1, ...``: each is
    ``(basis, scale, extent, outermost)``, read back as ``coordinate // scale % extent``."""
    shapes = [_static(n, "a tensor extent") for n in _flat(t.layout.shape)]
    out: list = []
    for d, n in zip(_flat(t.layout.stride), shapes):
        if isinstance(d, (int, np.integer)):
            out.append(None)
            continue
        m = _mode(d)
        if len(m) != 1:
            raise VerificationError(f"coordinate tensor {t}: stride {d} is not a basis of one coordinate")
        out.append([m[0], _static(d.value, "a basis scale"), n, True])
    for i, a in enumerate(out):
        if a is None:
            continue
        shared = sorted((b[1], b[2], j) for j, b in enumerate(out) if b is not None and b[0] == a[0])
        if shared[0][0] != 1 or any(s1 != s0 * n0 for (s0, n0, _), (s1, _, _) in zip(shared, shared[1:])):
            raise VerificationError(f"coordinate tensor {t}: the modes on basis coordinate {a[0]} have scales "
                                    f"{[s for s, _, _ in shared]}, not a compact merge")
        a[3] = shared[-1][2] == i
    return [None if a is None else tuple(a) for a in out]


def in_modes(coords: np.ndarray, modes: list, fill: tuple) -> np.ndarray:
    """Coordinates in basis order -> in tensor mode order (``fill`` for modes without a basis)."""
    out = np.zeros((len(coords), len(modes)), np.int64)
    for i, m in enumerate(modes):
        if m is None:
            out[:, i] = fill[i]
            continue
        basis, scale, extent, outermost = m
        c = coords[:, basis] // scale
        out[:, i] = c if outermost else c % extent
    return out
