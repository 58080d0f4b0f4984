"""Swizzle<B,M,S>: the XOR function on offsets that shared-memory layouts use to spread rows over banks.

Bit-exact with CuTe's ``Swizzle``: the B bits starting at bit M+max(S,0) (the "Y" bits) are XORed into
the B bits starting at bit M-min(S,0) (the "Z" bits). It is an involution, so it is its own inverse.
"""

from __future__ import annotations

from typing import Any

from .errors import LayoutError


class Swizzle:
    """``S<bits,base,shift>``: offset -> offset ^ ((offset & yyy_mask) >> shift); immutable and hashable."""

    __slots__ = ("bits", "base", "shift")

    def __init__(self, bits: int, base: int, shift: int) -> None:
        for name, v in (("bits", bits), ("base", base), ("shift", shift)):
            if type(v) is not int:
                raise LayoutError(f"Swizzle: {name} must be an int, got {v!r}")
        if bits < 0 or base < 0:
            raise LayoutError(f"Swizzle<{bits},{base},{shift}>: bits and base must be >= 0")
        if abs(shift) < bits:
            raise LayoutError(f"Swizzle<{bits},{base},{shift}>: |shift| must be at least bits, or the Y and Z "
                              "bit ranges overlap and the function is not a bijection")
        if base + abs(shift) + bits > 62:
            raise LayoutError(f"Swizzle<{bits},{base},{shift}>: its bits do not fit a 64-bit offset")
        self.bits, self.base, self.shift = bits, base, shift

    @property
    def yyy_mask(self) -> int:
        """The bits that are read (and left unchanged)."""
        return ((1 << self.bits) - 1) << (self.base + max(0, self.shift))

    @property
    def zzz_mask(self) -> int:
        """The bits that are XORed with the Y bits."""
        return ((1 << self.bits) - 1) << (self.base - min(0, self.shift))

    def __call__(self, offset: Any) -> Any:
        """The swizzled offset (an int, or a numpy integer array elementwise)."""
        if type(offset) is not int and not (getattr(offset, "dtype", None) is not None and offset.dtype.kind in "iuO"):
            raise LayoutError(f"{self}: a swizzle acts on integer offsets, got {offset!r}")
        if type(offset) is not int and getattr(offset, "ndim", 1) == 0:
            offset = int(offset)                  # a numpy integer scalar
        elif type(offset) is not int and offset.dtype.kind in "iu" and offset.dtype.itemsize < 8:
            offset = offset.astype("int64")       # (the masks need more bits than an int8 holds)
        y = offset & self.yyy_mask
        return offset ^ (y >> self.shift if self.shift >= 0 else y << -self.shift)

    @property
    def is_identity(self) -> bool:
        return self.bits == 0

    @property
    def span(self) -> int:
        """The period of the swizzle pattern: 2**(base+bits+|shift|) offsets."""
        return 1 << (self.base + self.bits + abs(self.shift))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Swizzle):
            return NotImplemented
        return (self.bits, self.base, self.shift) == (other.bits, other.base, other.shift)

    def __hash__(self) -> int:
        return hash(("Swizzle", self.bits, self.base, self.shift))

    def __str__(self) -> str:
        return f"S<{self.bits},{self.base},{self.shift}>"

    def __repr__(self) -> str:
        return f"Swizzle({self.bits}, {self.base}, {self.shift})"

    def __reduce__(self) -> tuple:
        return (Swizzle, (self.bits, self.base, self.shift))


def make_swizzle(bits: int, base: int, shift: int) -> Swizzle:
    """CuTe DSL's ``make_swizzle(b, m, s)``; the identity swizzle (b = 0) is canonicalized to S<0,4,3> as CuTe does."""
    if type(bits) is int and bits == 0 and type(base) is int and type(shift) is int:
        return Swizzle(0, 4, 3)
    return Swizzle(bits, base, shift)


def recast_swizzle(sw: Swizzle, up: int, down: int) -> Swizzle:
    """The swizzle seen in elements ``up`` times wider, then ``down`` times narrower (powers of two).

    Upcasting needs the base to cover the vector (2**base >= up): otherwise the swizzle permutes
    elements inside one wide element, and no swizzle of wide elements is the same function
    (CuTe then silently drops bits).
    """
    for n in (up, down):
        if n & (n - 1):
            raise LayoutError(f"recast_layout: the swizzle {sw} can only be recast by powers of two, got a ratio of {n}")
    log_up, log_down = up.bit_length() - 1, down.bit_length() - 1
    if sw.is_identity:                           # no bits move: any base is the same function; CuTe's rule
        return Swizzle(0, max(sw.base - log_up, 0) + log_down, sw.shift)
    if sw.base < log_up:
        raise LayoutError(f"recast_layout: {sw} permutes elements inside a {up}-element vector (2**base < {up}), so "
                          "the swizzled layout has no swizzle in the wider type")
    return Swizzle(sw.bits, sw.base - log_up + log_down, sw.shift)
