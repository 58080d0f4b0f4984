"""Ahead-of-time export: CuTe DSL's C header and object, a C loader shim, and a Python ctypes binding.

The shim (built with nvcc on a machine with CUDA) loads the kernel module once and forwards tensor structs to
the generated wrapper; the binding fills those structs from torch tensors. Neither needs nvidia-cutlass-dsl.
"""

from __future__ import annotations

import ctypes
import glob
import os
import re
import shutil
from pathlib import Path
from typing import Any

from .errors import LoweringError

_STRUCT = re.compile(r"typedef struct \{(.*?)\} (\w+)_Tensor_(\w+)_t;", re.S)
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
    import cutlass

    root = Path(cutlass.__file__).resolve().parents[2]
    for lib in glob.glob(str(root / "**" / "cu12" / "lib" / "libcuda_dialect_runtime_static.a"), recursive=True):
        shutil.copy(lib, directory / "libcuda_dialect_runtime_static.a")
        break
    (directory / f"{name}_shim.c").write_text(_shim(name, structs))
    (directory / f"{name}_binding.py").write_text(_binding(name, structs, spec))
    (directory / "build.sh").write_text(
        "#!/bin/sh\n# Build the loader (needs nvcc and the CUDA runtime).\nset -e\ncd \"$(dirname \"$0\")\"\n"
        f"nvcc -shared -Xcompiler -fPIC -x cu -o lib{name}.so {name}_shim.c {name}.o "
        "-L. -lcuda_dialect_runtime_static -lcudart -lcuda\n")
    os.chmod(directory / "build.sh", 0o755)
    return directory


def _shim(name: str, structs: list) -> str:
    params = ", ".join(f"void *{arg}" for arg, _ in structs)
    casts = ", ".join(f"({name}_Tensor_{arg}_t *){arg}" for arg, _ in structs)
    return f"""// Loader shim for {name}: load the kernel module once, then forward tensor structs to the wrapper.
#include "{name}.h"

static {name}_Kernel_Module_t module;
static int loaded = 0;

extern "C" int patches_load(void) {{
    if (!loaded) {{ {name}_Kernel_Module_Load(&module); loaded = 1; }}
    return 0;
}}

extern "C" int patches_unload(void) {{
    if (loaded) {{ {name}_Kernel_Module_Unload(&module); loaded = 0; }}
    return 0;
}}

extern "C" int patches_run({params}, void *stream) {{
    patches_load();
    return cute_dsl_{name}_wrapper(&module, {casts}, (cudaStream_t)stream);
}}
"""


def _binding(name: str, structs: list, spec: Any) -> str:
    lines = [f'"""ctypes binding of {name} (built by build.sh): run(tensors...) with torch CUDA tensors, no CuTe DSL."""',
             "", "import ctypes", "import os", "", "import torch", "",
             f"_lib = ctypes.CDLL(os.path.join(os.path.dirname(__file__), 'lib{name}.so'))",
             "CTYPES = {'int32_t': ctypes.c_int32, 'int64_t': ctypes.c_int64, 'void': ctypes.c_void_p}", ""]
    for arg, fields in structs:
        fl = []
        for t, ptr, f, n in fields:
            ct = "ctypes.c_void_p" if ptr else f"CTYPES[{t!r}]"
            fl.append(f"({f!r}, {ct} * {n})" if n > 1 else f"({f!r}, {ct})")
        lines += [f"class {arg}(ctypes.Structure):", f"    _fields_ = [{', '.join(fl)}]", ""]
    lines += ["", "def _fill(struct, t):",
              '    """Data pointer, then dynamic extents and strides in the order the header declares them."""',
              "    s = struct()",
              "    dims = list(t.shape)",
              "    strides = [x for x in t.stride() if x != 1]",
              "    for f, ct in struct._fields_:",
              "        if f == 'data':",
              "            s.data = t.data_ptr()",
              "        elif 'stride' in f:",
              "            arr = getattr(s, f)",
              "            for i in range(len(arr)):",
              "                arr[i] = strides[i]",
              "        else:",
              "            arr = getattr(s, f)",
              "            for i in range(len(arr)):",
              "                arr[i] = dims[i]",
              "    return s", "",
              "def run(*views, stream=None):",
              '    """Launch with tensors already in kernel mode order (A (M,K,L), B (N,K,L), C (M,N,L), side inputs)."""',
              f"    structs = [{', '.join(a for a, _ in structs)}]",
              "    args = [ctypes.byref(_fill(s, v)) for s, v in zip(structs, views)]",
              "    stream = stream if stream is not None else torch.cuda.current_stream().cuda_stream",
              "    return _lib.patches_run(*args, ctypes.c_void_p(stream))", ""]
    return "\n".join(lines)
