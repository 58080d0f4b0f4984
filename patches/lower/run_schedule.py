"""Running a compiled schedule on a GPU with torch tensors: bind symbolic extents from the arguments, allocate
the buffer slots once and the outputs in the program's layouts, then launch every kernel in order on the current
stream (each kernel's arguments viewed in its kernel mode order, no copies)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..layouts import flatten
from ..staging.array import Array
from ..staging.pytree import tree_unflatten
from ..staging.types import modes_of
from .errors import LoweringError
from .runtime import kernel_view, regrouped, ungrouped

TORCH_DTYPES = {"bf16": "bfloat16", "f16": "float16", "f32": "float32", "f64": "float64", "bool": "bool", "i8": "int8",
                "u8": "uint8", "i16": "int16", "i32": "int32", "u16": "uint16", "u32": "uint32", "i64": "int64"}


def _ints(x: Any, env: dict) -> int:
    import sympy

    if isinstance(x, int):
        return x
    v = sympy.sympify(x).subs(env)
    if not v.is_Integer:
        raise LoweringError(f"extent {x} is not bound by the arguments")
    return int(v)


def _bind(prog: Any, tensors: tuple) -> dict:
    """Values of the program's symbols, read off the argument shapes."""
    import sympy

    env: dict = {}
    for p, t in zip(prog.params, tensors):
        for s, n in zip(modes_of(p.type.shape), t.shape):
            if not isinstance(s, int) and isinstance(sympy.sympify(s), sympy.Symbol):
                env[sympy.sympify(s)] = int(n)
    return env


def _empty(var: Any, env: dict, device: Any, storage: Any = None) -> Any:
    import torch

    lay = flatten(var.type.layout)                  # hierarchical modes: one torch dimension per leaf
    shape = tuple(_ints(s, env) for s in modes_of(lay.shape))
    stride = tuple(_ints(d, env) for d in modes_of(lay.stride))
    dtype = getattr(torch, TORCH_DTYPES[var.type.dtype])
    if storage is None:
        return torch.empty_strided(shape, stride, dtype=dtype, device=device)
    return torch.as_strided(storage.view(dtype), shape, stride)


def _mode_leaves(var: Any, env: dict) -> tuple:
    """The extents of each top-level mode's leaves of ``var``'s layout (bound by ``env``): how a logical dimension
    splits into a buffer's dimensions."""
    return tuple(tuple(_ints(x, env) for x in flatten(m)) if isinstance(m, tuple) else (_ints(m, env),)
                 for m in modes_of(var.type.layout.shape))


def _argument(i: int, var: Any, t: Any, env: dict, device: Any) -> Any:
    """The ``i``-th argument as the kernels read it: the tensor itself where its strides are the parameter's layout,
    else a copy stored in that layout (kernels index their operands by the program's layouts; a ``pt.kernel``
    module takes the raw buffer). A wrong shape or dtype is an error naming the parameter."""
    import torch

    groups = _mode_leaves(var, env)
    want = tuple(int(np.prod(g)) for g in groups)
    if tuple(t.shape) != want:
        raise LoweringError(f"argument {i}: shape {tuple(t.shape)} where the program's parameter is {want}")
    want_dtype = getattr(torch, TORCH_DTYPES.get(var.type.dtype, ""), None)
    if want_dtype is None or t.dtype != want_dtype:
        raise LoweringError(f"argument {i}: {t.dtype} where the program's parameter is {var.type.dtype}")
    lay = flatten(var.type.layout)
    leaves = tuple(_ints(s, env) for s in modes_of(lay.shape))
    strides = tuple(_ints(d, env) for d in modes_of(lay.stride))
    groups = groups if len(leaves) != len(want) else ()
    split = ungrouped(t, groups)
    if all(n == 1 or a == b for n, a, b in zip(leaves, split.stride(), strides)):
        return t
    out = _empty(var, env, device)
    keep = tuple(1 if d == 0 else n for n, d in zip(leaves, strides))     # a stride-0 mode holds one value: its first
    torch.as_strided(out, keep, out.stride()).copy_(torch.as_strided(split, keep, split.stride()))
    return out


def _logical(var: Any, t: Any, env: dict) -> Any:
    """An output in its logical shape (one dimension per top-level mode): a view of the buffer where its leaves
    merge, else a copy (a hierarchical layout such as ((4,8),16):((1,64),4) has no strided view of that shape)."""
    import torch

    groups = _mode_leaves(var, env)
    if t.dim() == len(groups):
        return t
    try:
        return regrouped(t, groups)
    except RuntimeError:
        out = torch.empty(tuple(int(np.prod(g)) for g in groups), dtype=t.dtype, device=t.device)
        ungrouped(out, groups).copy_(t)
        return out


def stored_bytes(var: Any, value: Any) -> np.ndarray:
    """A captured constant's bytes as its parameter's layout stores them."""
    return np.ascontiguousarray(Array.from_logical(value, var.type.layout, var.type.dtype).storage).view(np.uint8)


def constant_tensor(var: Any, value: Any, device: Any) -> Any:
    """A captured constant on the device, stored with its parameter's layout (bytes copied from the host)."""
    import torch

    return _empty(var, {}, device, torch.from_numpy(stored_bytes(var, value).copy()).to(device))


def _gemm_args(spec: Any, ins: list, outs: list) -> list:
    a = kernel_view(ins[spec.a.param], spec.a.perm, spec.batched, spec.a.groups)
    b = kernel_view(ins[spec.b.param], spec.b.perm, spec.batched, spec.b.groups)
    c = kernel_view(outs[spec.out_index], spec.c.perm, spec.batched, spec.c.groups)
    extra = [o for j, o in enumerate(outs) if j != spec.out_index]
    return [a, b, c] + [ins[si.param] for si in spec.inputs] + extra


def _kernel_args(k: Any, ins: list, outs: list) -> list:
    """A ``pt.kernel`` module's arguments: each operand (inputs then outputs) as the flat buffer it spans; an operand
    of symbolic extents as it is (the kernel reads the symbols off its shape)."""
    from ..staging.symbols import is_symbolic

    pos = {id(p): i for i, p in enumerate(k.program.params)}
    tensors = [ins[pos[id(x)]] for x in k.program.eqns[0].inputs] + outs
    return [t if is_symbolic(a.layout) else flat_buffer(t, a.layout.shape) for t, a in zip(tensors, k.spec.args)]


def flat_buffer(t: Any, n: Any) -> Any:
    """The ``n`` elements from a tensor's first one, as a 1-D tensor (a kernel indexes them by its own layouts)."""
    import torch

    return torch.as_strided(t, (int(n),), (1,), t.storage_offset())


def run_schedule(exe: Any, tensors: tuple, sizes: dict | None = None) -> Any:
    """Run every kernel of ``exe`` (a ScheduleExecutable) on CUDA torch tensors; returns the program's outputs. A
    tensor whose strides are not its parameter's layout is copied into that layout first.
    ``sizes`` binds symbols the tensors do not give (a host loop body's inner bounds: the enclosing program's)."""
    import cuda.bindings.driver as cuda
    import torch
    from cutlass.cute.runtime import from_dlpack

    s = exe.schedule
    prog = s.program
    n_const = len(s.constants)
    if len(tensors) != len(prog.params) - n_const:
        raise LoweringError(f"the schedule takes {len(prog.params) - n_const} tensors (the program's parameters), "
                            f"got {len(tensors)}")
    if not all(isinstance(t, torch.Tensor) and t.is_cuda for t in tensors):
        raise LoweringError("call a compiled schedule with CUDA torch tensors")
    device = tensors[0].device if tensors else torch.device("cuda", torch.cuda.current_device())
    tensors = (*(constant_tensor(v, x, device) for v, x in zip(prog.params, s.constants)), *tensors)
    bound = _bind(prog, tensors)
    env = {**(sizes or {}), **bound}
    tensors = tuple(_argument(i - n_const, p, t, env, device) if i >= n_const else t
                    for i, (p, t) in enumerate(zip(prog.params, tensors)))
    vals: dict[int, Any] = {id(p): t for p, t in zip(prog.params, tensors)}
    slots: dict[int, Any] = {}
    for b in s.buffers:
        n = _ints(b.nbytes, env)
        if b.slot not in slots or slots[b.slot].numel() < n:
            slots[b.slot] = torch.empty(max(n, 16), dtype=torch.uint8, device=device)
    for b in s.buffers:
        vals[id(b.var)] = _empty(b.var, env, device, slots[b.slot])
    for o in prog.outputs:
        if id(o) not in vals:
            vals[id(o)] = _empty(o, env, device)
    stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream)
    dynamic = bool(bound)          # (compiled for run-time extents where the tensors' symbols are)
    for k, kexe in zip(s.kernels, exe.executables):
        ins = [vals[id(p)] for p in k.program.params]
        outs = [vals[id(o)] for o in k.program.outputs]
        if k.kind == "loop":                     # a host loop: its body's kernels once per iteration
            pos = {id(p): i for i, p in enumerate(k.program.params)}
            kexe.run([_logical(x, ins[pos[id(x)]], env) for x in k.program.eqns[-1].inputs], outs, env)
            continue
        if k.kind == "gemm":
            args = _gemm_args(k.spec, ins, outs)
            tf32 = [k.spec.ab_dtype == "tf32"] * 2
        elif k.kind == "kernel":
            args = _kernel_args(k, ins, outs)
            tf32 = []
        else:
            args = [o if o.dim() else o.reshape(1) for o in outs] + [ins[r.param] for r in k.spec.reads]
            tf32 = []
        cute_args = []
        for i, t in enumerate(args):
            x = from_dlpack(t, assumed_align=16, force_tf32=i < len(tf32) and tf32[i])
            cute_args.append(x.mark_layout_dynamic() if dynamic else x)
        if kexe.module.takes_sm_count:           # persistent kernels: one cluster per group of the device's SMs
            import cutlass

            cute_args.append(cutlass.Int32(torch.cuda.get_device_properties(device).multi_processor_count))
        kexe.compiled(*cute_args, stream)
    return tree_unflatten(prog.out_tree, [_logical(o, vals[id(o)], env) for o in prog.outputs])
