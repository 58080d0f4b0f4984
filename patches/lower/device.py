"""``pt.kernel(..., interpret=False)``: lower the call for its operands' types, compile it for sm_90a (cached per
kernel and types) and run it on the GPU with torch; installed into the kernel layer's table of device runners."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..layouts import flatten, make_layout
from ..staging import stage
from ..staging.array import Array
from ..staging.kernel.state import DEVICE_RUNNERS
from ..staging.types import modes_of, tensor
from .api import lower
from .errors import LoweringError
from .run_schedule import TORCH_DTYPES, flat_buffer

_CACHE: dict = {}
_DTYPES = {v: k for k, v in TORCH_DTYPES.items()}


def _torch() -> Any:
    try:
        import torch
    except ModuleNotFoundError:
        raise LoweringError("interpret=False runs the kernel on an NVIDIA Hopper GPU through PyTorch, which is not "
                            "importable here; use interpret=True (the numpy interpreter)") from None
    if not torch.cuda.is_available():
        raise LoweringError("interpret=False runs the kernel on an NVIDIA Hopper GPU; none is visible to torch here; "
                            "use interpret=True (the numpy interpreter)")
    return torch


def _type(x: Any) -> Any:
    """The tensor type of a numpy array or a torch tensor (its dtype, shape and strides)."""
    if type(x).__module__.startswith("torch"):
        name = str(x.dtype).removeprefix("torch.")
        if name not in _DTYPES:
            raise LoweringError(f"interpret=False: torch dtype {x.dtype} has no patches dtype")
        shape, stride = tuple(x.shape), tuple(x.stride())
        return tensor(_DTYPES[name], make_layout(shape, stride) if shape else make_layout(1))
    return Array.from_numpy(np.asarray(x)).type


def _empty(torch: Any, layout: Any, dtype: str) -> Any:
    """An empty CUDA tensor laid out as ``layout`` (the kernel's output type)."""
    lay = flatten(layout)
    shape, stride = tuple(int(s) for s in modes_of(lay.shape)), tuple(int(d) for d in modes_of(lay.stride))
    return torch.empty_strided(shape, stride, dtype=getattr(torch, TORCH_DTYPES[dtype]), device="cuda")


def _is_torch(x: Any) -> bool:
    return type(x).__module__.startswith("torch")


def _lowered(call: Any, types: tuple, name: str) -> list:
    """[program, module, executable or None] for ``call`` at ``types``, lowered once (cached)."""
    key = (call, types)
    if key not in _CACHE:
        prog = stage(call, *types)
        mod = lower(prog)
        if getattr(mod, "kind", None) != "kernel":
            raise LoweringError(f"{name}: interpret=False runs one kernel call; staged, it is {type(mod).__name__}")
        _CACHE[key] = [prog, mod, None]
    return _CACHE[key]


def run_on_device(call: Any, operands: tuple, name: str) -> Any:
    """Lower ``call`` for the operands' types (a LoweringError names what does not lower, GPU or not), then move
    numpy operands to the GPU, compile for sm_90a and launch; outputs come back as the operands came in."""
    _lowered(call, tuple(_type(x) for x in operands), name)
    torch = _torch()
    import cuda.bindings.driver as cuda
    from cutlass.cute.runtime import from_dlpack

    to_numpy = not any(_is_torch(x) for x in operands)
    ins = [(x if _is_torch(x) else torch.from_numpy(np.asarray(x))).cuda() for x in operands]
    entry = _lowered(call, tuple(_type(x) for x in ins), name)    # the layouts the GPU copies have
    prog, mod, exe = entry
    if exe is None:
        exe = entry[2] = mod.compile()
    outs = [_empty(torch, o.type.layout, o.type.dtype) for o in prog.outputs]
    args = [flat_buffer(t, a.layout.shape) for t, a in zip(ins + outs, mod.spec.args)]
    exe.compiled(*[from_dlpack(a, assumed_align=16) for a in args], cuda.CUstream(torch.cuda.current_stream().cuda_stream))
    res = [o.cpu().numpy() if to_numpy and o.dtype != torch.bfloat16 else o for o in outs]
    return res[0] if len(res) == 1 else tuple(res)


DEVICE_RUNNERS.append(run_on_device)
