"""A lowered module (generated CuTe DSL source) and its compiled executable (PTX, SASS, resources, call, export).

Compiling needs no GPU: the host function is traced with fake tensors (symbolic extents as ``cute.sym_int``)
for sm_90a, and CuTe DSL keeps the PTX, cubin and SASS in a dump directory we read back.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ..layouts import Layout
from .dynamic import _stride_order, dynamic_modes  # noqa: F401 (dynamic_modes: for callers)
from .errors import LoweringError
from .spec import GemmSpec

_counter = itertools.count()
CUTLASS_DTYPE = {"bf16": "BFloat16", "f16": "Float16", "f32": "Float32", "f64": "Float64", "tf32": "TFloat32", "bool": "Boolean",
                 "i8": "Int8", "u8": "Uint8", "i16": "Int16", "u16": "Uint16", "i32": "Int32", "u32": "Uint32",
                 "i64": "Int64"}
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")  # terminal colour and cursor codes in compiler messages


def tool(name: str) -> str | None:
    """A CUDA binary (cuobjdump, nvdisasm, nvcc) from PATH or from the nvidia-cuda-* wheels next to this Python."""
    found = shutil.which(name)
    if found:
        return found
    for base in sys.path:
        for sub in ("nvidia/cu13/bin", "nvidia/cuda_nvcc/bin", "nvidia/cuda_cuobjdump/bin", "nvidia/cuda_nvdisasm/bin"):
            p = Path(base) / sub / name
            if p.is_file():
                return str(p)
    return None


def _ensure_tools_on_path() -> None:
    for name in ("cuobjdump", "nvdisasm"):
        t = tool(name)
        if t and not shutil.which(name):
            os.environ["PATH"] = os.path.dirname(t) + os.pathsep + os.environ.get("PATH", "")


class Module:
    """Generated CuTe DSL source for one kernel: ``.source`` is the Python text, ``.compile()`` builds it."""

    def __init__(self, spec: Any, source: str, emit_seconds: float, kind: str = "gemm") -> None:
        self.spec, self.source, self.emit_seconds, self.kind = spec, source, emit_seconds, kind

    def __repr__(self) -> str:
        cfg = getattr(self.spec, "config", None)
        return f"<patches.lower.Module {self.spec.name} ({self.kind}{', ' + cfg.describe() if cfg else ''})>"

    def write(self, path: str | os.PathLike) -> Path:
        """Write the source to ``path`` (a file, or a directory that gets ``<name>.py``)."""
        p = Path(path)
        if p.is_dir():
            p = p / f"{self.spec.name}.py"
        p.write_text(self.source)
        return p

    def load(self, directory: str | os.PathLike | None = None) -> Any:
        """Import the generated source as a Python module (CuTe DSL traces functions from files only)."""
        d = Path(directory or tempfile.mkdtemp(prefix="patches_lower_"))
        d.mkdir(parents=True, exist_ok=True)
        path = self.write(d / f"patches_kernel_{next(_counter)}.py")
        spec = importlib.util.spec_from_file_location(path.stem, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[path.stem] = mod
        spec.loader.exec_module(mod)
        return mod

    def verify(self) -> Any:
        """Check the kernel's data movement on the CPU from its own builders (patches.lower.verify); raises a
        VerificationError listing the mismatches, returns the Report when every thread and value is right."""
        from .verify import verify

        return verify(self).raise_if_failed()

    def simulate(self, *arrays: Any) -> Any:
        """The kernel's CPU model on numpy arrays (the program's parameters, in order): the GEMM's tiles or the SIMT
        kernel's rows; one output, or a tuple of them."""
        from .simulate import simulate
        from .simulate_simt import simulate_simt

        outs = list(simulate(self.spec, *arrays, every=True)) if self.kind == "gemm" else \
            simulate_simt(self.spec, *arrays)
        outs = outs if isinstance(outs, list) else [outs]
        return outs[0] if len(outs) == 1 else tuple(outs)

    def simulate_kernels(self, *arrays: Any, source: bool = False) -> Any:
        """The kernel's CPU model (``simulate``; with ``source``, ``run_source``), under the name a schedule's is
        called by: one lowered kernel and a schedule of several answer the same call."""
        return self.run_source(*arrays) if source else self.simulate(*arrays)

    def run_source(self, *arrays: Any, sizes: dict | None = None) -> Any:
        """Execute the emitted source on the CPU (patches.lower.simt_source: a thread per CUDA thread) on numpy
        arrays (the program's parameters); one output, or a tuple of them. SIMT kernels only: the GEMM template's
        source is checked by ``verify()`` (its data movement from its own builders) and its tile model."""
        from .simt_source import run_simt_source

        if self.kind != "simt":
            raise LoweringError(f"{self.spec.name}: the CPU model executes SIMT and pt.kernel sources, not a "
                                f"{self.kind} kernel's (use simulate(), its tile model, and verify())")
        outs = run_simt_source(self, *arrays, sizes=sizes)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def fake_args(self) -> list:
        """Fake tensors matching the kernel's arguments (symbolic extents become dynamic, with their divisibility)."""
        from cutlass.cute.runtime import make_fake_stream

        syms: dict = {}
        args = [_fake(op.layout, op.dtype, syms) for op in self.spec.kernel_operands()]
        if self.takes_sm_count:
            import cutlass

            from .config import NUM_SMS

            args.append(cutlass.Int32(NUM_SMS))        # a dynamic argument: the launcher passes the device's count
        return args + [make_fake_stream()]

    @property
    def takes_sm_count(self) -> bool:
        """Persistent kernels take the device's SM count at launch (the grid is one cluster per group of SMs)."""
        cfg = getattr(self.spec, "config", None)
        return bool(cfg is not None and cfg.persistent)

    def compile(self, arch: str = "sm_90a", keep: bool = True) -> Executable:
        """cute.compile the host function for ``arch`` with fake tensors; no GPU needed."""
        import cutlass.cute as cute

        if not isinstance(arch, str) or re.fullmatch(r"sm_\d+a?", arch) is None:
            raise LoweringError(f"arch must name a GPU architecture such as sm_90a, got {arch!r}")
        if self.kind == "gemm" and arch != "sm_90a":
            raise LoweringError(f"{self.spec.name} is a Hopper GEMM (TMA, mbarriers and wgmma need sm_90a); it cannot "
                                f"be compiled for {arch}")
        hopper = sorted(set(re.findall(r"\b(warpgroup|cpasync)\.\w+", self.source)))
        if self.kind == "kernel" and arch != "sm_90a" and hopper:
            raise LoweringError(f"{self.spec.name} uses Hopper instructions ({', '.join(hopper)}: wgmma, TMA); it "
                                f"cannot be compiled for {arch}")

        _ensure_tools_on_path()
        work = Path(tempfile.mkdtemp(prefix="patches_build_"))
        dump = work / "dump"
        dump.mkdir()
        options = f"--gpu-arch {arch}" + (f" --keep-ptx --keep-cubin --keep-sass --dump-dir {dump}" if keep else "")
        mod = self.load(work)
        args = self.fake_args()
        t0 = time.perf_counter()
        try:
            compiled = cute.compile(mod.host, *args, options=options)
        except Exception as e:  # the DSL raises its own types; keep the first line of its message
            first = (_ANSI.sub("", str(e)).strip().splitlines() or [type(e).__name__])[0]  # no terminal colour codes
            raise LoweringError(f"cute.compile failed for {self.spec.name}: {first}") from e
        seconds = time.perf_counter() - t0
        return Executable(self, compiled, seconds, dump)


def _fake(layout: Layout, dtype: str, syms: dict) -> Any:
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_fake_compact_tensor, make_fake_tensor

    from ..layouts import inttuple as it

    shape, stride = it.flatten(layout.shape), it.flatten(layout.stride)   # one dimension per leaf, as at run time
    dt = getattr(cutlass, CUTLASS_DTYPE[dtype])
    if all(isinstance(s, int) for s in shape + stride):
        full = tuple(d if d else _span(shape, stride) for d in stride)     # a size-1 batch mode: stride past the end
        return make_fake_tensor(dt, shape, full, assumed_align=16)
    from .analyze import _divisor

    dyn = []
    for s in shape:
        if isinstance(s, int):
            dyn.append(s)
        else:
            if s not in syms:
                syms[s] = cute.sym_int(divisibility=_divisor(s), symbol=str(s))
            dyn.append(syms[s])
    return make_fake_compact_tensor(dt, tuple(dyn), stride_order=_stride_order(shape, stride), assumed_align=16)


def _span(shape: tuple, stride: tuple) -> int:
    return max(1, sum((s - 1) * d for s, d in zip(shape, stride)) + 1)


class Executable:
    """A compiled kernel: ``.ptx``, ``.sass``, ``.resources``, ``.counts``; call it on torch tensors on a GPU."""

    def __init__(self, module: Module, compiled: Any, compile_seconds: float, dump: Path) -> None:
        self.module, self.compiled, self.compile_seconds, self.dump = module, compiled, compile_seconds, dump
        self._ptx = self._sass = None

    def _artifact(self, ext: str) -> Path | None:
        files = sorted(self.dump.rglob(f"*.{ext}"))
        return files[-1] if files else None

    @property
    def ptx(self) -> str:
        if self._ptx is None:
            p = self._artifact("ptx")
            self._ptx = p.read_text() if p else ""
        return self._ptx

    @property
    def cubin(self) -> Path | None:
        return self._artifact("cubin")

    @property
    def sass(self) -> str:
        """The SASS disassembly (CuTe DSL's kept .sass, else cuobjdump on the cubin)."""
        if self._sass is None:
            p = self._artifact("sass")
            if p is not None:
                self._sass = p.read_text()
            elif self.cubin is not None and tool("cuobjdump"):
                self._sass = subprocess.run([tool("cuobjdump"), "-sass", str(self.cubin)], capture_output=True,
                                            text=True, check=False).stdout
            else:
                self._sass = ""
        return self._sass

    @property
    def resources(self) -> dict:
        """{'registers', 'spills', 'smem_bytes'} of the kernel, from cuobjdump's resource usage of the cubin."""
        out = {"registers": None, "spills": None, "smem_bytes": None}
        if self.cubin is None or not tool("cuobjdump"):
            return out
        text = subprocess.run([tool("cuobjdump"), "-res-usage", str(self.cubin)], capture_output=True, text=True,
                              check=False).stdout
        for line in text.splitlines():
            if "REG:" in line:
                regs = re.search(r"REG:(\d+)", line)
                local = re.search(r"LOCAL:(\d+)", line)
                shared = re.search(r"SHARED:(\d+)", line)
                out["registers"] = int(regs.group(1)) if regs else None
                out["spills"] = int(local.group(1)) if local else None
                out["smem_bytes"] = int(shared.group(1)) if shared else None
        spec = self.module.spec
        if isinstance(spec, GemmSpec):     # the cubin reports static smem only; the kernel's is dynamic
            from .config import smem_bytes

            out["smem_bytes"] = smem_bytes(spec.config, spec.ab_dtype, spec.c_dtype, spec.config.stages)
        return out

    def counts(self, *opcodes: str) -> dict:
        """How many SASS instructions start with each opcode (HGMMA, UTMALDG, UTMASTG, ...)."""
        text = self.sass
        return {op: len(re.findall(rf"\b{op}\b", text)) for op in opcodes}

    def __call__(self, *tensors: Any) -> Any:
        """Run on a GPU: torch tensors for the program's parameters in, the output (allocated here) out."""
        from .runtime import run

        try:
            return run(self, tensors)
        except ModuleNotFoundError as e:
            raise LoweringError(f"calling a compiled kernel needs {e.name} (PyTorch with CUDA, on a machine with an "
                                "NVIDIA Hopper GPU); without one, .export() the kernel and run it where there is") from None

    def export(self, directory: str | os.PathLike) -> Path:
        """Ahead-of-time: CuTe DSL's C header and object, a C loader shim and a ctypes binding, in ``directory``."""
        from .export import export

        return export(self, Path(directory))
