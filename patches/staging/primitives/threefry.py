"""JAX's counter-based random bits: the Threefry-2x32 hash (20 rounds, Random123's) written in u32 operations,
and the keys built on it (``PRNGKey``, ``split``, ``fold_in``, ``bits``), as ``jax.random`` computes them with
``jax_threefry_partitionable`` (JAX's default since 0.5): element i of a draw of shape s hashes the counter
(hi, lo) of its row-major index i under the key, so a draw is the same wherever it is computed. A key is a u32
tensor of shape (2,); keys made by ``split`` stack along a leading mode. Everything is a composition of the
integer primitives, so it stages, batches (``vmap`` over keys) and evaluates like any other program."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import dtypes
from ..core import get_aval
from ..errors import fail
from ..types import modes_of
from .bitwise import bitwise_or, bitwise_xor, left_shift, right_shift
from .elementwise import add, astype
from .integer import iota
from .numpy_ops import reshape
from .numpy_shape import stack
from .reductions import tensor_arg
from .views import getitem, zeros

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = 0x1BD11BDA                # Threefry's key schedule constant


def _u32(v: int) -> np.uint32:
    return np.uint32(v & 0xFFFFFFFF)


def _rotl(x: Any, d: int) -> Any:
    return bitwise_or(left_shift(x, _u32(d)), right_shift(x, _u32(32 - d)))


def threefry_2x32(k0: Any, k1: Any, x0: Any, x1: Any) -> tuple:
    """Threefry-2x32 with 20 rounds of the u32 counters ``(x0, x1)`` (broadcast together) under key ``(k0, k1)``:
    the two u32 words of the hash (Random123's ``threefry2x32_20``, which JAX's ``threefry2x32_p`` computes)."""
    ks = (k0, k1, bitwise_xor(bitwise_xor(k0, k1), _u32(_PARITY)))
    x0, x1 = add(x0, ks[0]), add(x1, ks[1])
    for r in range(5):
        for d in _ROTATIONS[r % 2]:
            x0 = add(x0, x1)
            x1 = bitwise_xor(_rotl(x1, d), x0)
        x0 = add(x0, ks[(r + 1) % 3])
        x1 = add(add(x1, ks[(r + 2) % 3]), _u32(r + 1))
    return x0, x1


def _key(name: str, key: Any) -> tuple:
    """The two words of one key (a u32 tensor of shape (2,))."""
    key = tensor_arg(name, key)
    t = get_aval(key)
    if t.dtype != "u32" or t.rank != 1 or modes_of(t.shape)[0] != 2:
        raise fail(name, "expects one PRNG key, a u32 tensor of shape (2,) (from pt.random.PRNGKey or split; "
                         "vmap over a stack of keys)", t)
    return getitem(key, 0), getitem(key, 1)


def _shape(name: str, shape: Any) -> tuple:
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (shape,)
    if not isinstance(shape, (tuple, list)) or not all(
            isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d >= 0 for d in shape):
        raise fail(name, f"shape must be a tuple of non-negative ints, got {shape!r:.80}")
    return tuple(int(d) for d in shape)


def _counters(name: str, shape: tuple) -> tuple:
    """The (hi, lo) u32 words of each element's row-major index in ``shape`` (JAX's ``iota_2x32_shape``)."""
    n = math.prod(shape)
    if n >= 1 << 32:
        raise fail(name, f"a draw of {n} elements needs 64-bit counters; draw at most 2**32 - 1 elements at a time")
    if n == 0:
        raise fail(name, f"a draw of shape {shape} has no elements (empty tensors have no layout here)")
    return np.uint32(0), reshape(iota("u32", n), shape)


def PRNGKey(seed: Any) -> Any:  # noqa: N802 (JAX's name)
    """``jax.random.PRNGKey``: the key ``[hi, lo]`` of an integer seed, as JAX computes it: a 32-bit seed (a
    Python int from -2**31 to 2**32 - 1, a traced i32) is ``[0, seed mod 2**32]``, a wider one its 64 bits split."""
    if isinstance(seed, (bool, float)) or isinstance(seed, (np.floating, np.bool_)):
        raise fail("PRNGKey", f"the seed must be an integer, got {seed!r:.80}")
    if isinstance(seed, (int, np.integer)):
        s = int(seed)
        if not -(1 << 63) <= s < 1 << 64:
            raise fail("PRNGKey", f"the seed {s} does not fit in 64 bits")
        s &= 0xFFFFFFFFFFFFFFFF if not -(1 << 31) <= s < 1 << 32 else 0xFFFFFFFF
        return tensor_arg("PRNGKey", np.array([s >> 32, s & 0xFFFFFFFF], np.uint32))
    x = tensor_arg("PRNGKey", seed)
    t = get_aval(x)
    if not dtypes.is_int(t.dtype) or t.rank != 0:
        raise fail("PRNGKey", "the seed must be an integer scalar", t)
    hi = astype(right_shift(astype(x, "u64"), np.uint64(32)), "u32") if t.dtype in ("i64", "u64") else \
        zeros((), "u32")
    return stack([hi, astype(x, "u32")])


def key(seed: Any) -> Any:
    """``jax.random.key``: here the same u32 key as ``PRNGKey`` (keys carry no key type of their own)."""
    return PRNGKey(seed)


def key_data(keys: Any) -> Any:
    """``jax.random.key_data``: the u32 words of keys (they are already)."""
    return tensor_arg("key_data", keys)


def wrap_key_data(data: Any, *, impl: Any = None) -> Any:
    """``jax.random.wrap_key_data``: u32 words of shape (..., 2) as keys (only the threefry implementation)."""
    if impl not in (None, "threefry2x32"):
        raise fail("wrap_key_data", f"only the threefry2x32 implementation is provided, got impl={impl!r:.80}")
    x = tensor_arg("wrap_key_data", data)
    t = get_aval(x)
    if t.dtype != "u32" or t.rank == 0 or modes_of(t.shape)[-1] != 2:
        raise fail("wrap_key_data", "expects u32 words of shape (..., 2)", t)
    return x


def split(key: Any, num: Any = 2) -> Any:
    """``jax.random.split``: ``num`` new keys (shape ``(num, 2)``; ``num`` may be a shape), key i the hash of
    counter i."""
    k0, k1 = _key("split", key)
    shape = _shape("split", num)
    hi, lo = _counters("split", shape)
    b0, b1 = threefry_2x32(k0, k1, hi, lo)
    return stack([b0, b1], axis=len(shape))


def fold_in(key: Any, data: Any) -> Any:
    """``jax.random.fold_in``: a new key from a key and an integer (its low 32 bits; traced values too)."""
    k0, k1 = _key("fold_in", key)
    if isinstance(data, (int, np.integer)) and not isinstance(data, bool):
        d = _u32(int(data))
    else:
        x = tensor_arg("fold_in", data)
        t = get_aval(x)
        if not dtypes.is_int(t.dtype) or t.rank != 0:
            raise fail("fold_in", "data must be an integer scalar", t)
        d = astype(x, "u32")
    b0, b1 = threefry_2x32(k0, k1, np.uint32(0), d)
    return stack([b0, b1])


def random_bits(name: str, key: Any, bit_width: int, shape: tuple) -> Any:
    """JAX's partitionable ``random_bits``: u32 draws are the xor of the hash's two words; u64 draws join them
    (hi, lo); 8- and 16-bit draws are the low bits of the xor."""
    k0, k1 = _key(name, key)
    hi, lo = _counters(name, shape)
    b0, b1 = threefry_2x32(k0, k1, hi, lo)
    if bit_width == 64:
        return bitwise_or(left_shift(astype(b0, "u64"), np.uint64(32)), astype(b1, "u64"))
    bits = bitwise_xor(b0, b1)
    return bits if bit_width == 32 else astype(bits, f"u{bit_width}")


def bits(key: Any, shape: Any = (), dtype: Any = "u32") -> Any:
    """``jax.random.bits``: uniformly random unsigned integers of ``dtype`` (u8, u16, u32, u64)."""
    d = dtypes.canonical(dtype, "bits")
    if d not in ("u8", "u16", "u32", "u64"):
        raise fail("bits", f"dtype must be an unsigned integer dtype (u8, u16, u32, u64), got {d}")
    return random_bits("bits", key, int(d[1:]), _shape("bits", shape))
