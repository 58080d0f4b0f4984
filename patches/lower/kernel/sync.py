"""CTA barriers between accesses to a Ref by different threads: a write followed by a read or a write of the same
buffer through another thread mapping (a block stored by its owners then one element stored by thread 0, a zero
fill then an accumulation by the value's layout, a block read by one layout and rewritten by another) is ordered by
a ``cute.arch.barrier()``, as the interpreter's sequential semantics require; accesses through one mapping (each
thread touching only its own elements) need none.

The writer keeps, per Ref pointer, the mappings used since the last barrier and whether any wrote. A loop body (a
nested program) ends with a barrier when its accesses, with those pending at its entry, mix mappings of a buffer it
writes: the next iteration's first access would otherwise race with this one's last.
"""

from __future__ import annotations

from typing import Any

BARRIER = "cute.arch.barrier()"


def access(ctx: Any, ptr: str, off: Any, sel: Any, mapping: Any, store: bool) -> None:
    """Record an access to ``sel`` at ``ptr + off`` by the thread mapping ``mapping``, with a barrier first when a
    pending access of the buffer through another mapping conflicts with it (at least one of them writes)."""
    if ptr.startswith("xch_"):          # the exchange buffer: its users place their own barriers
        return
    w = ctx.w
    key = (str(off), str(sel), str(mapping))
    keys, wrote = w.pending.get(ptr, (frozenset(), False))
    if (wrote or store) and keys - {key}:
        w.emit(f"{BARRIER}   # other threads' accesses to this buffer come first")
        keys, wrote = frozenset(), False
    w.pending[ptr] = (keys | {key}, wrote or store)
    for seen in w.bodies:
        k, s = seen.get(ptr, (frozenset(), False))
        seen[ptr] = (k | {key}, s or store)


def enter(ctx: Any) -> tuple:
    """Start recording a nested program's accesses; returns what ``leave`` needs."""
    ctx.w.bodies.append({})
    return dict(ctx.w.pending)


def leave(ctx: Any, entry: dict) -> None:
    """End a nested program: a barrier when running it again could race with itself (see the module doc)."""
    w = ctx.w
    seen = w.bodies.pop()
    for ptr, (keys, wrote) in seen.items():
        before, wrote_before = entry.get(ptr, (frozenset(), False))
        if (wrote or wrote_before) and len(keys | before) > 1:
            w.emit(f"{BARRIER}   # this body's accesses are done before it runs again")
            break
    # The body may not run (a branch not taken, a loop of no trips): what was pending before it still is.
    for ptr, (keys, wrote) in entry.items():
        k, s = w.pending.get(ptr, (frozenset(), False))
        w.pending[ptr] = (k | keys, s or wrote)
