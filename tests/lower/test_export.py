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
