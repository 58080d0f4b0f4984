"""A numpy stand-in for the part of torch the GPU runners use, so their code runs on the CPU: tensors are strided
views of byte buffers (bf16 stored as its 16 bits, as on the device), ``empty`` poisons memory with all-ones bytes
(NaN for floats), every view is bounds-checked against its buffer, and "launching" a compiled kernel runs that
kernel's CPU model on the arguments the runner assembled (its own views, buffers and slots)."""

from __future__ import annotations

import math
import sys
import types
from types import SimpleNamespace
from typing import Any

import numpy as np


class DType:
    def __init__(self, name: str, storage: Any, patches: str) -> None:
        self.name, self.np, self.patches = name, np.dtype(storage), patches
        self.itemsize = self.np.itemsize

    def __repr__(self) -> str:
        return f"torch.{self.name}"


DTYPES = {d.name: d for d in (DType("bfloat16", np.uint16, "bf16"), DType("float16", np.float16, "f16"),
                              DType("float32", np.float32, "f32"), DType("float64", np.float64, "f64"),
                              DType("bool", np.bool_, "bool"), DType("int8", np.int8, "i8"),
                              DType("uint8", np.uint8, "u8"), DType("int16", np.int16, "i16"),
                              DType("int32", np.int32, "i32"), DType("int64", np.int64, "i64"))}


class device:  # noqa: N801 (torch's spelling)
    def __init__(self, type: str = "cuda", index: int | None = 0) -> None:
        self.type, self.index = type, index


def _contiguous(shape: tuple) -> tuple:
    stride, acc = [], 1
    for n in reversed(shape):
        stride.append(acc)
        acc *= n
    return tuple(reversed(stride))


def _view_stride(shape: tuple, stride: tuple, new: tuple) -> tuple | None:
    """torch's rule for ``view``: the new shape's strides where it splits or merges only contiguous runs of modes."""
    if math.prod(shape) == 0 or not shape:
        return _contiguous(new)
    out = [0] * len(new)
    vd, base, t_numel, v_numel = len(new) - 1, stride[-1], 1, 1
    for td in range(len(shape) - 1, -1, -1):
        t_numel *= shape[td]
        if td == 0 or (shape[td - 1] != 1 and stride[td - 1] != t_numel * base):
            while vd >= 0 and (v_numel < t_numel or new[vd] == 1):
                out[vd] = v_numel * base
                v_numel *= new[vd]
                vd -= 1
            if v_numel != t_numel:
                return None
            if td > 0:
                base, t_numel, v_numel = stride[td - 1], 1, 1
    return tuple(out) if vd == -1 else None


class Tensor:
    """A strided view of a byte buffer (``buf``), ``offset`` in elements of its dtype."""

    is_cuda = True
    __module__ = "torch"                   # (how the runners tell a torch tensor from a numpy array)

    def __init__(self, buf: np.ndarray, offset: int, shape: tuple, stride: tuple, dtype: DType) -> None:
        self.buf, self.offset, self.dtype = buf, int(offset), dtype
        self._shape, self._stride = tuple(int(n) for n in shape), tuple(int(d) for d in stride)
        self.device = device()
        if len(self._shape) != len(self._stride) or any(n < 0 for n in self._shape):
            raise ValueError(f"bad view {self._shape}:{self._stride}")
        if math.prod(self._shape) and (self.offset < 0 or min(self._stride, default=0) < 0 or
                                       (self.offset + sum((n - 1) * d for n, d in zip(self._shape, self._stride)) + 1)
                                       * dtype.itemsize > buf.size):
            raise IndexError(f"view {self._shape}:{self._stride} at {self.offset} reaches past its buffer of "
                             f"{buf.size} bytes ({dtype})")

    shape = property(lambda self: self._shape)

    def stride(self, dim: int | None = None) -> Any:
        return self._stride if dim is None else self._stride[dim]

    def storage_offset(self) -> int:
        return self.offset

    def dim(self) -> int:
        return len(self._shape)

    def numel(self) -> int:
        return math.prod(self._shape)

    def to(self, *_: Any, **__: Any) -> Tensor:
        return self

    cuda = cpu = to

    def numpy(self) -> np.ndarray:
        if self.dtype.name == "bfloat16":
            raise TypeError("Got unsupported ScalarType BFloat16")
        return self.values()

    def _like(self, shape: tuple, stride: tuple, offset: int | None = None) -> Tensor:
        return Tensor(self.buf, self.offset if offset is None else offset, shape, stride, self.dtype)

    def permute(self, *dims: int) -> Tensor:
        return self._like(tuple(self._shape[d] for d in dims), tuple(self._stride[d] for d in dims))

    def view(self, *shape: Any) -> Tensor:
        if len(shape) == 1 and isinstance(shape[0], DType):         # reinterpret the bytes (a 1-D run)
            dt = shape[0]
            if self.dim() != 1 or self._stride != (1,) or (self.numel() * self.dtype.itemsize) % dt.itemsize:
                raise RuntimeError("view(dtype): a contiguous 1-D tensor of a whole number of elements")
            if (self.offset * self.dtype.itemsize) % dt.itemsize:
                raise RuntimeError("view(dtype): misaligned offset")
            n = self.numel() * self.dtype.itemsize // dt.itemsize
            return Tensor(self.buf, self.offset * self.dtype.itemsize // dt.itemsize, (n,), (1,), dt)
        stride = _view_stride(self._shape, self._stride, tuple(shape))
        if stride is None or math.prod(shape) != self.numel():
            raise RuntimeError(f"view {self._shape}:{self._stride} as {shape} is not a view")
        return self._like(tuple(shape), stride)

    def reshape(self, *shape: Any) -> Tensor:
        return self.view(*shape)

    def numpy_storage(self) -> np.ndarray:
        """A writable numpy view of the elements (bf16 as uint16 bits)."""
        typed = self.buf.view(self.dtype.np)
        if not self.numel():
            return np.zeros(self._shape, self.dtype.np)
        return np.lib.stride_tricks.as_strided(typed[self.offset:], self._shape,
                                               tuple(d * self.dtype.itemsize for d in self._stride))

    def item(self) -> Any:
        """The one value of a one-element tensor (a host while-loop reads its predicate so)."""
        return self.values().reshape(-1)[0].item()

    def values(self) -> np.ndarray:
        """The logical values as patches holds them (bf16 as float32)."""
        x = np.array(self.numpy_storage())
        return (x.astype(np.uint32) << 16).view(np.float32) if self.dtype.name == "bfloat16" else x

    def write(self, values: Any) -> None:
        """Store logical values (rounded to the dtype; bf16 round to nearest even)."""
        x = np.broadcast_to(np.asarray(values), self._shape)
        if self.dtype.name == "bfloat16":
            b = np.ascontiguousarray(x, np.float32).view(np.uint32).astype(np.uint64)
            x = (((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF).astype(np.uint16)
        self.numpy_storage()[...] = x

    def copy_(self, src: Tensor) -> Tensor:
        if any(n > 1 and d == 0 for n, d in zip(self._shape, self._stride)):
            raise RuntimeError("unsupported operation: more than one element of the written-to tensor refers to a "
                               "single memory location")            # (torch's refusal)
        self.write(src.values())
        return self


def _alloc(nelems: int, dtype: DType) -> np.ndarray:
    buf = np.empty(max(1, nelems) * dtype.itemsize + 8, np.uint8)
    buf[:] = 0xFF                          # poison: NaN in every float width, -1 in every integer
    return buf[:nelems * dtype.itemsize] if nelems else buf[:0]


def empty(shape: Any, dtype: DType, device: Any = None) -> Tensor:
    shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(shape)
    return empty_strided(shape, _contiguous(shape), dtype)


def empty_strided(shape: tuple, stride: tuple, dtype: DType, device: Any = None) -> Tensor:
    span = (sum((n - 1) * d for n, d in zip(shape, stride)) + 1) if math.prod(shape) else 0
    return Tensor(_alloc(span, dtype), 0, shape, stride, dtype)


def as_strided(t: Tensor, shape: tuple, stride: tuple, storage_offset: int | None = None) -> Tensor:
    return t._like(tuple(shape), tuple(stride), storage_offset)


def from_numpy(x: np.ndarray) -> Tensor:
    if not x.flags.c_contiguous:
        raise NotImplementedError("the stand-in takes row-major arrays only")
    dt = next(d for d in DTYPES.values() if d.np == x.dtype and d.name != "bfloat16")
    return Tensor(x.reshape(-1).view(np.uint8).copy(), 0, x.shape, _contiguous(x.shape), dt)


def tensor(value: Any, dtype: DType, device: Any = None) -> Tensor:
    t = empty_strided((), (), dtype)
    t.write(value)
    return t


def module() -> types.ModuleType:
    """The stand-in, to be placed in ``sys.modules["torch"]``."""
    m = types.ModuleType("torch")
    m.__dict__.update(DTYPES)
    m.Tensor, m.device, m.empty, m.empty_strided = Tensor, device, empty, empty_strided
    m.as_strided, m.from_numpy, m.tensor = as_strided, from_numpy, tensor
    m.cuda = SimpleNamespace(is_available=lambda: True, current_device=lambda: 0,
                             current_stream=lambda: SimpleNamespace(cuda_stream=0),
                             get_device_properties=lambda d: SimpleNamespace(multi_processor_count=132))
    return m


class Arg:
    """What ``from_dlpack`` gives the runner: the tensor, marked as the compiled kernel would see it."""

    def __init__(self, t: Tensor, assumed_align: int = 16, force_tf32: bool = False) -> None:
        if (t.offset * t.dtype.itemsize) % assumed_align and t.numel():
            raise AssertionError(f"argument at byte {t.offset * t.dtype.itemsize} is not {assumed_align}-aligned")
        self.t, self.tf32, self.dynamic = t, force_tf32, False

    def mark_layout_dynamic(self) -> Arg:
        self.dynamic = True
        return self


def launcher(kernel: Any) -> Any:
    """A stand-in for the compiled kernel ``kernel`` (a patches.lower Kernel): its CPU model run on the argument
    list the runner passes, in the order and views the compiled kernel takes."""
    from patches.lower.kernel.simulate import run_host, simulate_module
    from patches.lower.simt_source import work
    from patches.lower.simulate import simulate_views
    from patches.lower.simulate_simt import simulate_simt
    from patches.staging.symbols import is_symbolic

    spec = kernel.spec
    launches: list = []

    def gemm(*args: Any) -> None:
        ts = [x.t for x in args if isinstance(x, Arg)]
        if any(x.tf32 for x in args[:2]) != (spec.ab_dtype == "tf32"):
            raise AssertionError("tf32 operands not marked as such")
        a, b, c, rest = ts[0], ts[1], ts[2], ts[3:]
        side = {si.param: t.values() for si, t in zip(spec.inputs, rest)}
        out, extras = simulate_views(spec, a.values(), b.values(), side)
        c.write(out)
        for x, t in zip(extras, rest[len(spec.inputs):]):
            t.write(x.reshape(t.shape) if x.size == t.numel() else x)

    def simt(*args: Any) -> None:
        """A SIMT kernel indexes each operand by its own layout from the operand's first element: small launches
        run the emitted source itself on the tensors as launched, larger ones the kernel's numpy model."""
        ts = [x.t for x in args]
        launches.append(1)
        if len(launches) <= SOURCE_LAUNCHES and (work(spec) or SOURCE_WORK + 1) <= SOURCE_WORK:
            return _run_source(kernel.module, ts)
        n_out = len(ts) - len(spec.reads)
        params: list = [None] * len(kernel.program.params)
        for r, t in zip(spec.reads, ts[n_out:]):
            params[r.param] = _read(t, kernel.program.params[r.param].type.layout)
        got = simulate_simt(spec, *params)
        for t, o, x in zip(ts[:n_out], kernel.program.outputs, got if isinstance(got, list) else [got]):
            _write(t, o.type.layout, np.asarray(x))

    def pt_kernel(*args: Any) -> None:
        ts = [x.t for x in args]
        ops = spec.args
        if any(is_symbolic(a.layout) for a in ops):        # run at the extents the tensors give
            ins = [t.values() for t, a in zip(ts, ops) if a.role == "in"]
            got = simulate_module(kernel.module, *ins)
            for t, x in zip([t for t, a in zip(ts, ops) if a.role != "in"], got):
                t.write(np.asarray(x).reshape(t.shape))
            return
        stores = []
        for t, a in zip(ts, ops):
            v = t.values()
            stores.append(v.astype(np.float32) if a.dtype == "bf16" else v)
        run_host(kernel.module, stores)
        for t, s, a in zip(ts, stores, ops):
            if a.role != "in":
                t.write(s)

    return {"gemm": gemm, "simt": simt, "kernel": pt_kernel}[kernel.kind]


SOURCE_WORK = 20000     # SIMT launches visiting this few elements execute the emitted source (a thread per CUDA
SOURCE_LAUNCHES = 2     # thread), the first two launches of each kernel (a host loop's later iterations: its model)


def _run_source(module: Any, ts: list) -> None:
    """A SIMT module's emitted host function run on the launched tensors: each operand as the compiled kernel sees
    it (the tensor's own shape and strides from its first element, over the buffer it spans); outputs written back."""
    from patches.layouts import make_layout
    from patches.lower.kernel.simulate import exec_host, tensor

    spans, args = [], []
    for t, a in zip(ts, module.spec.kernel_operands()):
        span = sum((n - 1) * d for n, d in zip(t.shape, t.stride())) + 1 if t.numel() else 1
        flat = t._like((span,), (1,))
        store = np.array(flat.values())
        lay = make_layout(t.shape, t.stride()) if t.dim() else make_layout((1,), (1,))
        spans.append((flat, store))
        args.append(tensor(store, a.dtype, lay))
    exec_host(module.source, module.spec.name, args)
    for (flat, store), _ in zip(spans, module.spec.outputs):
        flat.write(store)


def _leaves(t: Tensor, layout: Any) -> tuple:
    """``t``'s buffer from its first element, viewed with ``layout``'s leaves (one dimension each), and the layout's
    logical shape; None where the layout is symbolic (the tensor's own view is then the kernel's)."""
    from patches.layouts import flatten
    from patches.staging.symbols import is_symbolic
    from patches.staging.types import modes_of

    if is_symbolic(layout):
        return None, t.shape
    lay = flatten(layout)
    logical = tuple(int(np.prod(m)) if isinstance(m, tuple) else int(m) for m in modes_of(layout.shape))
    if layout.shape == ():
        return t._like((), (), t.offset), ()
    return t._like(tuple(int(x) for x in modes_of(lay.shape)), tuple(int(d) for d in modes_of(lay.stride)), t.offset), logical


def _read(t: Tensor, layout: Any) -> np.ndarray:
    v, logical = _leaves(t, layout)
    return t.values() if v is None else v.values().reshape(logical, order="F")


def _write(t: Tensor, layout: Any, x: np.ndarray) -> None:
    v, _ = _leaves(t, layout)
    if v is None:
        t.write(x.reshape(t.shape))
    else:
        v.write(x.reshape(v.shape, order="F"))


def executable(schedule: Any) -> Any:
    """A ScheduleExecutable whose kernels are ``launcher`` stand-ins (host loops keep their own run loop)."""
    from patches.lower.host_loop import LoopExecutable
    from patches.lower.host_while import WhileExecutable, WhileModule
    from patches.lower.plan import ScheduleExecutable

    exes = []
    for k in schedule.kernels:
        if k.kind == "loop" and isinstance(k.module, WhileModule):
            exes.append(WhileExecutable(k.module, executable(k.module.cond), executable(k.module.body)))
        elif k.kind == "loop":
            exes.append(LoopExecutable(k.module, executable(k.module.body)))
        else:
            exes.append(SimpleNamespace(module=SimpleNamespace(takes_sm_count=bool(k.module.takes_sm_count)),
                                        compiled=_dropping_stream(launcher(k))))
    return ScheduleExecutable(schedule, exes)


def compiled_module(module: Any) -> Any:
    """A stand-in for ``KernelModule.compile()``: the module's host function run on the launched buffers."""
    return SimpleNamespace(compiled=_dropping_stream(launcher(SimpleNamespace(kind="kernel", spec=module.spec,
                                                                              module=module))))


def _dropping_stream(f: Any) -> Any:
    def call(*args: Any) -> None:
        *args, _stream = args
        f(*[a for a in args if isinstance(a, Arg)])
    return call


def install(monkeypatch: Any) -> types.ModuleType:
    """Put the stand-in in place of torch and of CuTe DSL's ``from_dlpack`` for one test."""
    import cutlass.cute.runtime as rt

    m = module()
    monkeypatch.setitem(sys.modules, "torch", m)
    monkeypatch.setattr(rt, "from_dlpack", Arg)
    return m


def to_device(x: np.ndarray, dtype: str) -> Tensor:
    """A numpy array as a row-major fake CUDA tensor of the patches dtype ``dtype``."""
    dt = next(d for d in DTYPES.values() if d.patches == dtype)
    t = empty_strided(np.shape(x), _contiguous(np.shape(x)), dt)
    t.write(x)
    return t
