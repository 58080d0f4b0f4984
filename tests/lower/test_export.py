"""Ahead-of-time export on the CPU: header, object, loader and manifest of a compiled kernel; the loader links with
nvcc where it is installed (the GPU benchmark's path, benchmarks/export_gpu_bench.py -> gpu_gemm.py)."""

import json
import shutil
import subprocess

import pytest

import patches as pt
from patches.lower.export import tensor_structs, wrapper_arguments
from patches.lower.module import tool
from patches.lower.story import gemm_program

pytestmark = pytest.mark.skipif(tool("cuobjdump") is None, reason="needs the CuTe DSL toolchain wheels")


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    pytest.importorskip("cutlass")
    exe = pt.lower(gemm_program(256, 512, 128, "bf16", ["bias", "relu"])).compile()
    return exe, exe.export(tmp_path_factory.mktemp("export"))


def test_export_writes_header_object_loader_and_manifest(exported):
    exe, d = exported
    name = exe.module.spec.name
    for f in (f"{name}.h", f"{name}.o", f"{name}_shim.cu", f"{name}_binding.py", f"{name}.json", "build.sh"):
        assert (d / f).stat().st_size > 0, f
    header = (d / f"{name}.h").read_text()
    assert [a for a, _ in tensor_structs(header)] == wrapper_arguments(header, name) == ["mA", "mB", "mC", "mE0"]
    assert f"int32_t cute_dsl_{name}_wrapper(" in header and f"{name}_Kernel_Module_Load" in header
    shim = (d / f"{name}_shim.cu").read_text()
    assert f"cute_dsl_{name}_wrapper(&module, " in shim and 'extern "C" int patches_run(' in shim
    meta = json.loads((d / f"{name}.json").read_text())
    assert meta["wrapper"] == f"cute_dsl_{name}_wrapper" and meta["symbols"]["run"] == "patches_run"
    a, b, c, bias = meta["args"]
    assert (a["param"], a["shape"], a["stride"], a["dtype"]) == (0, [256, 128, 1], [128, 1, 0], "bf16")
    assert (b["param"], b["perm"], b["shape"], b["stride"]) == (1, [1, 0], [512, 128, 1], [1, 512, 0])
    assert c["output"] and c["shape"] == [256, 512, 1] and bias["param"] == 2 and bias["perm"] is None
    assert all(f == [["void*", "data", 1]] for f in (x["fields"] for x in meta["args"]))
    assert sum(p.stat().st_size for p in d.iterdir()) < 1 << 20


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_loader_links_with_nvcc(exported):
    exe, d = exported
    subprocess.run(["sh", str(d / "build.sh")], check=True, capture_output=True)
    lib = d / f"lib{exe.module.spec.name}.so"
    syms = subprocess.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True, text=True).stdout
    assert all(s in syms for s in ("patches_run", "patches_load", "patches_unload"))
    undefined = subprocess.run(["nm", "-D", "--undefined-only", str(lib)], capture_output=True, text=True).stdout
    assert "_mlir_" not in undefined            # the kernel's host code is in the object, not left to the loader


def test_gpu_bench_export_manifest(tmp_path):
    pytest.importorskip("cutlass")
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "export_gpu_bench.py"
    spec = importlib.util.spec_from_file_location("export_gpu_bench", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    manifest = mod.export_all(tmp_path / "bench", quick=True)
    roles = [k["role"] for k in manifest["kernels"]]
    assert roles == ["matmul", "matmul_bias_relu"]
    for k in manifest["kernels"]:
        d = tmp_path / "bench" / k["dir"]
        header = (d / f"{k['kernel']}.h").read_text()
        assert f"{k['wrapper']}(" in header and (d / f"{k['kernel']}.o").exists()
        assert [a["name"] for a in k["args"]] == wrapper_arguments(header, k["kernel"])
        assert k["problem"] == {"m": 4096, "n": 4096, "k": 4096, "dtype": "bf16", "out_dtype": "bf16"}
    assert json.loads((tmp_path / "bench" / "manifest.json").read_text()) == manifest


class _Stub:
    """A stand-in for a torch tensor (shape, stride(), data_ptr()), for the binding's struct filling."""

    def __init__(self, shape, stride, ptr=0x1000):
        self.shape, self._stride, self._ptr = tuple(shape), tuple(stride), ptr

    def stride(self):
        return self._stride

    def data_ptr(self):
        return self._ptr


def _binding_namespace(d, name):
    import sys
    import types

    src = (d / f"{name}_binding.py").read_text()
    src = src.replace(f"_lib = ctypes.CDLL(os.path.join(os.path.dirname(__file__), 'lib{name}.so'))", "_lib = None")
    saved = sys.modules.get("torch")
    sys.modules["torch"] = types.ModuleType("torch")
    try:
        ns: dict = {"__name__": name}
        exec(compile(src, f"{name}_binding.py", "exec"), ns)
    finally:
        if saved is None:
            del sys.modules["torch"]
        else:
            sys.modules["torch"] = saved
    return ns


@pytest.mark.parametrize("case", ["static M, symbolic K", "symbolic M N K, batched, transposed B"])
def test_binding_fills_each_dynamic_extent_and_stride(case, tmp_path):
    pytest.importorskip("cutlass")
    from patches.layouts import Sym, make_layout
    from patches.lower import TileConfig

    if case == "static M, symbolic K":
        K = Sym("K", divisible_by=64)
        ts = (pt.tensor("f16", make_layout((256, K), (K, 1))), pt.tensor("f16", make_layout((K, 512), (512, 1))))
        m, n, k, batch = 256, 512, 192, None
    else:
        M, N, K = Sym("M", divisible_by=64), Sym("N", divisible_by=64), Sym("K", divisible_by=64)
        ts = (pt.tensor("f16", make_layout((3, M, K), (M * K, K, 1))),
              pt.tensor("f16", make_layout((3, K, N), (N * K, 1, K))))       # B stored N-major: a transposed view
        m, n, k, batch = 320, 448, 128, 3
    exe = pt.lower(pt.stage(lambda x, w: x @ w, *ts), config=TileConfig(64, 64)).compile()
    name = exe.module.spec.name
    d = exe.export(tmp_path)
    ns = _binding_namespace(d, name)
    L = batch or 1
    # Kernel-mode views: A (M,K,L), B (N,K,L), C (M,N,L), with the strides a compact row-major layout gives.
    a = _Stub((m, k, L), (k, 1, m * k))
    b = _Stub((n, k, L), (1, n, n * k) if batch else (1, n, n * k))
    c = _Stub((m, n, L), (1, m, m * n))
    want = {"mA": a, "mB": b, "mC": c}
    for arg, view in want.items():
        s = ns["_fill"](ns[arg], view)
        shapes, strides = ns["DYNAMIC"][arg]
        assert s.data == view.data_ptr()
        if shapes:
            assert list(s.dynamic_shapes) == [view.shape[i] for i in shapes]
        if strides:
            assert list(s.dynamic_strides) == [view.stride()[i] for i in strides]
    if case == "static M, symbolic K":
        assert ns["DYNAMIC"]["mA"] == ([1], [0, 2]) and list(ns["_fill"](ns["mA"], a).dynamic_shapes) == [192]
        assert ns["DYNAMIC"]["mB"] == ([1], [2])      # B's N stride is static 1, its K stride 512 static too
    else:
        assert ns["DYNAMIC"]["mA"][0] == [0, 1] and ns["DYNAMIC"]["mB"][0] == [0, 1]


def test_shim_checks_the_cuda_runtime_and_reports_a_failed_load(exported):
    exe, d = exported
    name = exe.module.spec.name
    shim = (d / f"{name}_shim.cu").read_text()
    assert "if (v < 12050) return -v;" in shim and "if (err != cudaSuccess) return (int)err;" in shim
    assert "if (status != 0) return status;" in shim
    binding = (d / f"{name}_binding.py").read_text()
    assert "older than" in binding and "loading the kernel module failed" in binding


def test_a_two_output_simt_kernel_exports_its_arguments(tmp_path):
    """A SIMT kernel's tensors are its outputs, then its reads: each output is marked with its program output index
    and each read with its parameter (the export raised IndexError for two outputs, reading past the reads)."""
    pytest.importorskip("cutlass")
    prog = pt.stage(lambda x, y: (pt.exp(x) + y, x * 2.0), pt.tensor("f32", (64, 32)), pt.tensor("f32", (64, 32)))
    (k,) = pt.lower(prog).kernels
    exe = pt.lower(k.program).compile()
    d = exe.export(tmp_path / "two")
    meta = json.loads((d / f"{exe.module.spec.name}.json").read_text())
    got = [(a["output"], a["output_index"], a["param"]) for a in meta["args"]]
    assert got == [(True, 0, None), (True, 1, None), (False, None, 0), (False, None, 1)]
