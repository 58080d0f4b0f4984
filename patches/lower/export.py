"""Ahead-of-time export: CuTe DSL's C header and object, a C loader shim, and a Python ctypes binding.

The shim (built with nvcc on a machine with CUDA) loads the kernel module once and forwards tensor structs to
the generated wrapper; the binding fills those structs from torch tensors. Neither needs nvidia-cutlass-dsl.
"""

from __future__ import annotations

import ctypes
import glob
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

from .dynamic import dynamic_modes
from .errors import LoweringError

MIN_CUDART = 12050      # the DSL's static runtime calls cudaGetDriverEntryPointByVersion (CUDA 12.5)

_STRUCT = re.compile(r"typedef struct \{([^{}]*)\} (\w+)_Tensor_(\w+)_t;")
_FIELD = re.compile(r"(\w+)\s*(\*?)\s*(\w+)(?:\[(\d+)\])?;")


def _preload_runtime() -> None:
    """export_to_c needs CuTe DSL's runtime library loaded (it is normally preloaded on GPU machines)."""
    import cutlass

    root = Path(cutlass.__file__).resolve().parents[2]
    for lib in sorted(glob.glob(str(root / "**" / "cu12" / "lib" / "libcute_dsl_runtime.so"), recursive=True)):
        ctypes.CDLL(lib, mode=ctypes.RTLD_GLOBAL)
        return


def tensor_structs(header: str) -> list[tuple[str, list]]:
    """(argument name, [(ctype, is_pointer, field, count)]) for each tensor struct the header declares, in order."""
    out = []
    for body, _prefix, name in _STRUCT.findall(header):
        fields = [(t, bool(p), f, int(n) if n else 1) for t, p, f, n in _FIELD.findall(body)]
        out.append((name, fields))
    return out


def wrapper_arguments(header: str, name: str) -> list[str]:
    """The tensor argument names of ``cute_dsl_<name>_wrapper`` in the order it takes them."""
    m = re.search(rf"cute_dsl_{re.escape(name)}_wrapper\(([^)]*)\)", header)
    if m is None:
        raise LoweringError(f"the exported header declares no cute_dsl_{name}_wrapper")
    return re.findall(rf"{re.escape(name)}_Tensor_(\w+)_t \*", m.group(1))


def _dims(xs: Any) -> list:
    xs = xs if isinstance(xs, tuple) else (xs,)
    return [x if isinstance(x, int) else str(x) for x in xs]


def arguments(exe: Any, structs: list) -> list[dict]:
    """Per wrapper argument: the program parameter it reads (None for the output), the permutation from the
    parameter's modes to kernel modes, dtype, kernel-mode shape and strides, and the struct fields."""
    spec = exe.module.spec
    if exe.module.kind == "kernel":
        return _kernel_arguments(spec, structs)
    ops = spec.kernel_operands()
    if len(ops) != len(structs):
        raise LoweringError(f"{spec.name}: the header declares {len(structs)} tensors, the kernel takes {len(ops)}")
    out = []
    if exe.module.kind == "gemm":       # A, B, C, side inputs, further outputs: C is program output out_index
        outs = [2, *range(3 + len(spec.inputs), len(ops))]
        order = [spec.out_index, *(j for j in range(len(outs)) if j != spec.out_index)]
    else:                               # the outputs, then the reads
        outs = list(range(len(spec.outputs)))
        order = outs
    for i, (op, (arg, fields)) in enumerate(zip(ops, structs)):
        is_out = i in outs
        param = getattr(op, "param", None)
        if exe.module.kind == "simt" and not is_out:
            param = spec.reads[i - len(outs)].param
        dyn_shape, dyn_stride = dynamic_modes(op.layout)
        declared = {f: n for _t, _p, f, n in fields}
        if (declared.get("dynamic_shapes", 0), declared.get("dynamic_strides", 0)) != (len(dyn_shape), len(dyn_stride)):
            raise LoweringError(f"{spec.name}: argument {arg} declares {declared} run-time fields, its layout "
                                f"{op.layout} has dynamic extents in modes {dyn_shape} and strides in {dyn_stride}")
        out.append({"name": arg, "param": None if is_out else param, "output": is_out,
                    "output_index": order[outs.index(i)] if is_out else None,
                    "perm": list(getattr(op, "perm", ())) or None,
                    "groups": [len(g) for g in getattr(op, "groups", ())] or None, "dtype": op.dtype,
                    "shape": _dims(op.layout.shape), "stride": _dims(op.layout.stride),
                    "dynamic_shapes": dyn_shape, "dynamic_strides": dyn_stride,
                    "fields": [[t + ("*" if ptr else ""), f, n] for t, ptr, f, n in fields]})
    return out


def _kernel_arguments(spec: Any, structs: list) -> list[dict]:
    """A ``pt.kernel`` module takes every operand as a flat buffer (inputs, then outputs); ``value_shape`` and
    ``value_stride`` say where the program's tensor lies in it."""
    if len(spec.args) != len(structs):
        raise LoweringError(f"{spec.name}: the header declares {len(structs)} tensors, the kernel takes {len(spec.args)}")
    out, n_in = [], sum(a.role == "in" for a in spec.args)
    for i, (a, (arg, fields)) in enumerate(zip(spec.args, structs)):
        if [f for _t, _p, f, _n in fields] != ["data"]:
            raise LoweringError(f"{spec.name}: argument {arg} has run-time extents; kernel buffers are static")
        out.append({"name": arg, "param": i if a.role == "in" else None, "output": a.role == "out",
                    "output_index": i - n_in if a.role == "out" else None, "perm": None, "dtype": a.dtype,
                    "shape": _dims(a.layout.shape), "stride": _dims(a.layout.stride),
                    "value_shape": _dims(a.value_layout.shape), "value_stride": _dims(a.value_layout.stride),
                    "dynamic_shapes": [], "dynamic_strides": [],
                    "fields": [[t + ("*" if ptr else ""), f, n] for t, ptr, f, n in fields]})
    return out


def export(exe: Any, directory: Path) -> Path:
    spec = exe.module.spec
    name = spec.name
    directory.mkdir(parents=True, exist_ok=True)
    _preload_runtime()
    try:
        exe.compiled.export_to_c(str(directory), name, name)
    except Exception as e:
        raise LoweringError(f"export_to_c failed for {name}: {str(e).strip().splitlines()[0]}") from e
    header = (directory / f"{name}.h").read_text()
    structs = tensor_structs(header)
    if [a for a, _ in structs] != wrapper_arguments(header, name):
        raise LoweringError(f"{name}: the header's tensor structs and the wrapper's arguments disagree")
    meta = {"kernel": name, "kind": exe.module.kind, "wrapper": f"cute_dsl_{name}_wrapper",
            "library": f"lib{name}.so", "symbols": {"run": "patches_run", "load": "patches_load",
                                                    "unload": "patches_unload"},
            "config": _config(spec), "args": arguments(exe, structs),
            "n_params": getattr(spec, "n_params", None) or sum(a.role == "in" for a in getattr(spec, "args", ()))}
    (directory / f"{name}.json").write_text(json.dumps(meta, indent=1) + "\n")
    import cutlass

    root = Path(cutlass.__file__).resolve().parents[2]
    for lib in glob.glob(str(root / "**" / "cu12" / "lib" / "libcuda_dialect_runtime_static.a"), recursive=True):
        shutil.copy(lib, directory / "libcuda_dialect_runtime_static.a")
        break
    sm_count = exe.module.takes_sm_count
    meta["sm_count_argument"] = sm_count
    (directory / f"{name}.json").write_text(json.dumps(meta, indent=1) + "\n")
    (directory / f"{name}_shim.cu").write_text(_shim(name, structs, sm_count))
    (directory / f"{name}_binding.py").write_text(_binding(name, structs, meta["args"]))
    (directory / "build.sh").write_text(
        "#!/bin/sh\n# Build the loader (needs nvcc and the CUDA runtime).\nset -e\ncd \"$(dirname \"$0\")\"\n"
        f"nvcc -shared -Xcompiler -fPIC -o lib{name}.so {name}_shim.cu {name}.o "
        "-L. -lcuda_dialect_runtime_static -lcudart\n")
    os.chmod(directory / "build.sh", 0o755)
    return directory


def _config(spec: Any) -> dict | None:
    cfg = getattr(spec, "config", None)
    if cfg is None:
        return None
    return {"tile": list(cfg.tile), "cluster": list(cfg.cluster), "stages": cfg.stages,
            "persistent": cfg.persistent, "describe": cfg.describe()}


def _shim(name: str, structs: list, sm_count: bool) -> str:
    params = ", ".join(f"void *{arg}" for arg, _ in structs)
    casts = ", ".join(f"({name}_Tensor_{arg}_t *){arg}" for arg, _ in structs)
    sms = ", sms" if sm_count else ""
    return f"""// Loader shim for {name}: load the kernel module once, then forward tensor structs to the wrapper.
// patches_load returns 0, or -(CUDA runtime version) when that runtime is older than {MIN_CUDART} (the kernel's host
// code needs cudaGetDriverEntryPointByVersion), or the CUDA error of the failed load.
#include "{name}.h"

static {name}_Kernel_Module_t module;
static int loaded = 0;

extern "C" int patches_cuda_runtime_version(void) {{
    int v = 0;
    cudaRuntimeGetVersion(&v);
    return v;
}}

extern "C" int patches_load(void) {{
    if (loaded) return 0;
    int v = patches_cuda_runtime_version();
    if (v < {MIN_CUDART}) return -v;
    module.module = 0;
    cudaGetLastError();
    {name}_Kernel_Module_Load(&module);
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) return (int)err;
    if (module.module == 0) return (int)cudaErrorInvalidKernelImage;
    loaded = 1;
    return 0;
}}

extern "C" int patches_unload(void) {{
    if (loaded) {{ {name}_Kernel_Module_Unload(&module); loaded = 0; }}
    return 0;
}}

extern "C" int patches_run({params}, void *stream) {{
    int status = patches_load();
    if (status != 0) return status;
    int device = 0, sms = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);   // the persistent grid's SM count
    (void)sms;
    return cute_dsl_{name}_wrapper(&module, {casts}{sms}, (cudaStream_t)stream);
}}
"""


def _binding(name: str, structs: list, args: list) -> str:
    dyn = {a["name"]: (a["dynamic_shapes"], a["dynamic_strides"]) for a in args}
    lines = [f'"""ctypes binding of {name} (built by build.sh): run(tensors...) with torch CUDA tensors, no CuTe DSL.',
             "",
             "Each tensor struct holds the data pointer, then the run-time extents and strides of the modes the kernel",
             "compiled as dynamic (DYNAMIC: argument -> (modes with a dynamic extent, modes with a dynamic stride)).",
             f"Needs CUDA runtime >= {MIN_CUDART // 1000}.{MIN_CUDART % 1000 // 10} (torch's bundled libcudart may be older).",
             '"""', "", "import ctypes", "import os", "", "import torch", "",
             f"_lib = ctypes.CDLL(os.path.join(os.path.dirname(__file__), 'lib{name}.so'))",
             "CTYPES = {'int32_t': ctypes.c_int32, 'int64_t': ctypes.c_int64, 'void': ctypes.c_void_p}",
             f"DYNAMIC = {dyn!r}", f"MIN_CUDART = {MIN_CUDART}", ""]
    for arg, fields in structs:
        fl = []
        for t, ptr, f, n in fields:
            ct = "ctypes.c_void_p" if ptr else f"CTYPES[{t!r}] * {n}"     # arrays even of one element, as declared
            fl.append(f"({f!r}, {ct})")
        lines += [f"class {arg}(ctypes.Structure):", f"    _fields_ = [{', '.join(fl)}]", ""]
    lines += ["", "def _fill(struct, t):",
              '    """The struct for kernel-mode view t: data pointer, then each dynamic mode\'s extent and stride."""',
              "    shapes, strides = DYNAMIC[struct.__name__]",
              "    s = struct()",
              "    s.data = t.data_ptr()",
              "    for field, modes, values in (('dynamic_shapes', shapes, t.shape), ('dynamic_strides', strides, t.stride())):",
              "        if modes:",
              "            arr = getattr(s, field)",
              "            for i, mode in enumerate(modes):",
              "                arr[i] = values[mode]",
              "    return s", "",
              "", "def load():",
              '    """Load the kernel module; a clear error when the CUDA runtime is too old or the load fails."""',
              "    status = _lib.patches_load()",
              "    if status < 0:",
              "        raise RuntimeError(f'{__name__}: CUDA runtime {-status} is older than {MIN_CUDART} (12.5), which the '",
              "                           'exported kernel needs (cudaGetDriverEntryPointByVersion); load a newer libcudart')",
              "    if status > 0:",
              "        raise RuntimeError(f'{__name__}: loading the kernel module failed with CUDA error {status}')",
              "", "",
              "def run(*views, stream=None):",
              '    """Launch with tensors already in kernel mode order (A (M,K,L), B (N,K,L), C (M,N,L), side inputs)."""',
              "    load()",
              f"    structs = [{', '.join(a for a, _ in structs)}]",
              "    args = [ctypes.byref(_fill(s, v)) for s, v in zip(structs, views)]",
              "    stream = stream if stream is not None else torch.cuda.current_stream().cuda_stream",
              "    return _lib.patches_run(*args, ctypes.c_void_p(stream))", ""]
    return "\n".join(lines)
