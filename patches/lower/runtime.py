"""Calling a compiled kernel on a GPU with torch tensors: view each argument in kernel mode order (a permutation,
no copy), allocate the output in the program's output layout, launch on the current stream."""

from __future__ import annotations

from typing import Any

import numpy as np

from .errors import LoweringError
from .spec import regroup


def regrouped(t: Any, groups: tuple) -> Any:
    """``t`` with consecutive modes merged as ``groups`` says (``Operand.groups``): a column-major reshape that is a
    view of its storage (torch refuses where it is not, rather than copying)."""
    if not groups:
        return t
    rev = tuple(reversed(range(t.dim())))
    shape = regroup(tuple(t.shape), groups)
    v = t.permute(*rev).view(*reversed(shape))
    return v.permute(*reversed(range(v.dim())))


def ungrouped(t: Any, groups: tuple) -> Any:
    """The inverse of ``regrouped``: each merged mode split back into the extents ``groups`` lists (a view)."""
    if not groups:
        return t
    shape = tuple(int(x) for g in groups for x in g)
    v = t.permute(*reversed(range(t.dim()))).view(*reversed(shape))
    return v.permute(*reversed(range(v.dim())))


def split_like(t: Any, shape: tuple) -> Any:
    """``t`` viewed with ``shape``, each of its dimensions split into the next ones of ``shape`` whose product it is
    (colexicographically, as a hierarchical mode's leaves): a buffer's leaves from its logical dimensions."""
    if tuple(t.shape) == tuple(shape):
        return t
    groups, i = [], 0
    for n in t.shape:
        g, p = [], 1
        while i < len(shape) and (p < n or (not g and shape[i] == 1 and n == 1)):
            g.append(shape[i])
            p *= shape[i]
            i += 1
        groups.append(tuple(g) or (1,))
    groups[-1] += tuple(shape[i:])
    return ungrouped(t, tuple(groups))


def kernel_view(t: Any, perm: tuple, batched: bool, groups: tuple = ()) -> Any:
    """The torch tensor ``t`` read in kernel mode order (M,K,L)/(N,K,L)/(M,N,L): a permutation view plus L=1
    (after merging the modes ``groups`` merges)."""
    v = regrouped(t, groups).permute(*perm)
    if batched:
        return v
    import torch

    return torch.as_strided(v, (*v.shape, 1), (*v.stride(), max(1, v.numel())))


def run(exe: Any, tensors: tuple) -> Any:
    import cuda.bindings.driver as cuda
    import torch
    from cutlass.cute.runtime import from_dlpack

    spec = exe.module.spec
    if exe.module.kind == "simt":
        return run_simt(exe, tensors)
    if len(tensors) != spec.n_params:
        raise LoweringError(f"{spec.name} takes {spec.n_params} tensors (the program's parameters), got {len(tensors)}")
    if not all(isinstance(t, torch.Tensor) and t.is_cuda for t in tensors):
        raise LoweringError("call a compiled kernel with CUDA torch tensors")
    a = kernel_view(tensors[spec.a.param], spec.a.perm, spec.batched, spec.a.groups)
    b = kernel_view(tensors[spec.b.param], spec.b.perm, spec.batched, spec.b.groups)
    m, n, batch = a.shape[0], b.shape[0], a.shape[2]
    dtype = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}[spec.c_dtype]
    inv = tuple(int(i) for i in np.argsort(spec.c.perm))
    kshape = (m, n, batch) if spec.batched else (m, n)
    user_shape = tuple(kshape[p] for p in inv)
    order = _stride_order(spec.c.layout, len(user_shape), inv)
    out = _empty_in_order(user_shape, order, dtype, tensors[0].device)
    c = kernel_view(out, spec.c.perm, spec.batched)
    out = ungrouped(out, spec.c.groups)             # the output's own modes, split back out of the merged ones
    dynamic = any(not isinstance(x, int) for x in (spec.m, spec.n, spec.k, spec.batch))
    args = []
    for t in [a, b, c] + [tensors[si.param] for si in spec.inputs]:
        x = from_dlpack(t, assumed_align=16)
        args.append(x.mark_layout_dynamic() if dynamic else x)
    if exe.module.takes_sm_count:              # the persistent grid: one cluster per group of this device's SMs
        args.append(torch.cuda.get_device_properties(tensors[0].device).multi_processor_count)
    stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream)
    exe.compiled(*args, stream)
    return out


def _check(spec: Any, tensors: tuple) -> None:
    import torch

    if len(tensors) != spec.n_params:
        raise LoweringError(f"{spec.name} takes {spec.n_params} tensors (the program's parameters), got {len(tensors)}")
    if not all(isinstance(t, torch.Tensor) and t.is_cuda for t in tensors):
        raise LoweringError("call a compiled kernel with CUDA torch tensors")


def run_simt(exe: Any, tensors: tuple) -> Any:
    """A SIMT row kernel: the parameters as they are (the kernel indexes their modes), the output allocated in the
    program's output layout, extents read off the arguments."""
    import cuda.bindings.driver as cuda
    import torch
    from cutlass.cute.runtime import from_dlpack

    spec = exe.module.spec
    _check(spec, tensors)
    ext = {c: s for c, s in spec.sizes if isinstance(s, int)}
    for r in spec.reads:
        for mode, c in enumerate(r.coords):
            if c is not None:
                ext.setdefault(c, int(tensors[r.param].shape[mode]))
    missing = [c for c in spec.out_coords if c is not None and c not in ext]
    if missing:
        raise LoweringError(f"{spec.name}: no argument gives the extents of output modes {missing}")
    shape = tuple(1 if c is None else ext[c] for c in spec.out_coords) or (1,)
    dtype = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}[spec.out_dtype]
    order = _stride_order(spec.out_layout, len(shape), tuple(range(len(shape))))
    out = _empty_in_order(shape, order, dtype, tensors[0].device)
    dynamic = any(not isinstance(x, int) for _, x in spec.sizes)
    args = []
    for t in [out] + [tensors[r.param] for r in spec.reads]:
        x = from_dlpack(t, assumed_align=16)
        args.append(x.mark_layout_dynamic() if dynamic else x)
    exe.compiled(*args, cuda.CUstream(torch.cuda.current_stream().cuda_stream))
    return out.reshape(()) if not spec.out_coords else out


def _stride_order(layout: Any, rank: int, inv: tuple) -> list:
    """Modes of the user's output from fastest to slowest, following the program's output layout."""
    import sympy

    stride = layout.stride[:rank]
    keys = [int(sympy.sympify(stride[p]).subs({s: 1 << 20 for s in sympy.sympify(stride[p]).free_symbols}))
            for p in inv]
    return sorted(range(rank), key=lambda i: keys[i])


def _empty_in_order(shape: tuple, order: list, dtype: Any, device: Any) -> Any:
    import torch

    stride = [0] * len(shape)
    acc = 1
    for i in order:
        stride[i] = acc
        acc *= shape[i]
    return torch.empty_strided(shape, stride, dtype=dtype, device=device)
