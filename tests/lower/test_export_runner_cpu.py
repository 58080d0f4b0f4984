"""The exported schedule's ``runner.py`` (``exe.export(dir)``: schedule.json plus a runner that needs torch and each
kernel's ctypes binding, no CuTe DSL) run on the CPU: torch is the numpy stand-in of ``fake_torch`` and each kernel's
binding is its CPU model taking exactly the views the runner builds from schedule.json. So a wrong permutation,
grouping or flat span in schedule.json, a buffer allocated with the wrong strides, a host loop's carries or a
captured constant mishandled by the runner's text fails here, as it would on a GPU."""

import importlib.util
from types import SimpleNamespace

import numpy as np
import pytest

import patches as pt
from patches.lower.export_schedule import export_schedule
from patches.lower.plan import random_args
from patches.lower.programs import ACCEPTANCE, causal

from . import fake_torch


class _Exportable:
    """A kernel's stand-in executable as export_schedule sees it: nothing to write (its binding is the CPU model)."""

    def __init__(self, kexe):
        self.kexe = kexe

    def export(self, directory):
        directory.mkdir(parents=True, exist_ok=True)

    def __getattr__(self, name):
        return getattr(self.kexe, name)


def _exportable(exe):
    """``fake_torch.executable(schedule)`` with every kernel executable exportable, host-loop bodies too."""
    for i, k in enumerate(exe.executables):
        if hasattr(k, "body"):
            _exportable(k.body)
        else:
            exe.executables[i] = _Exportable(k)
    return exe


def _load_runner(directory, schedule, name="runner_under_test"):
    """The exported runner.py as a module, its bindings the kernels' CPU models (host-loop bodies' runners too)."""
    spec = importlib.util.spec_from_file_location(name, directory / "runner.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    by_name = {k.name: k for k in schedule.kernels}

    def binding(kname):
        k = by_name[kname]
        launch = fake_torch.launcher(k)
        tf32 = k.kind == "gemm" and k.spec.ab_dtype == "tf32"
        return SimpleNamespace(run=lambda *views: launch(*[fake_torch.Arg(v, force_tf32=tf32 and i < 2)
                                                          for i, v in enumerate(views)]))
    mod._binding = binding
    loaders = {k.name: k.module.body for k in schedule.kernels if k.kind == "loop"}
    inner = mod._module

    def module(path, mname):
        body = next((s for n, s in loaders.items() if mname == n + "_runner"), None)
        return _load_runner(directory / mname[:-len("_runner")], body, mname) if body is not None else inner(path, mname)
    mod._module = module
    return mod


def _run_exported(monkeypatch, tmp_path, prog, args):
    s = pt.lower(prog)
    fake_torch.install(monkeypatch)
    export_schedule(_exportable(fake_torch.executable(s)), tmp_path)
    runner = _load_runner(tmp_path, s)
    tensors = []
    for a, p in zip(args, prog.params):        # the exported runner takes tensors in the parameters' layouts
        tensors.append(_in_layout(np.asarray(a), p.type))
    outs = runner.run(*tensors)
    model = s.simulate_kernels(*args)
    model = list(model) if isinstance(model, (tuple, list)) else [model]
    want = pt.evaluate(prog, *args)
    want = list(want) if isinstance(want, (tuple, list)) else [want]
    assert len(outs) == len(model) == len(want)
    for o, v, m, w in zip(outs, s.program.outputs, model, want):
        g = _logical(o, v.type).astype(np.float64)
        np.testing.assert_allclose(g, np.asarray(m, np.float64), rtol=1e-6, atol=1e-6)
        w = np.asarray(w, np.float64)
        assert np.linalg.norm(g - w) <= 1e-2 * max(np.linalg.norm(w), 1e-30)
    return s


def _in_layout(x, t):
    """A stand-in CUDA tensor holding ``x`` in type ``t``'s layout (one dimension per leaf of a hierarchical mode)."""
    from patches.layouts import flatten
    from patches.staging.types import modes_of

    lay = flatten(t.layout)
    shape = tuple(int(n) for n in modes_of(lay.shape)) if t.rank else ()
    stride = tuple(int(d) for d in modes_of(lay.stride)) if t.rank else ()
    dt = next(d for d in fake_torch.DTYPES.values() if d.patches == t.dtype)
    span = 1 + sum((n - 1) * d for n, d in zip(shape, stride))
    buf = fake_torch.empty_strided((span,), (1,), dt)
    v = fake_torch.as_strided(buf, shape, stride, 0)
    v.write(np.asarray(x).reshape(shape, order="F"))
    return v


def _logical(t, typ):
    """The values of an output tensor (a view with one dimension per leaf) in the value's logical shape."""
    from patches.staging.types import mode_size, modes_of

    logical = tuple(int(mode_size(m)) for m in modes_of(typ.shape)) if typ.rank else ()
    return t.values().reshape(logical, order="F")


@pytest.mark.parametrize("name", list(ACCEPTANCE))
def test_exported_acceptance_schedules_run_through_runner_py(monkeypatch, tmp_path, name):
    prog = ACCEPTANCE[name]()
    args = random_args(prog, 0)
    if name.startswith("attention"):
        args[3] = causal(args[0].shape[0])
    _run_exported(monkeypatch, tmp_path, prog, args)


def test_exported_user_kernels_host_loops_and_constants(monkeypatch, tmp_path):
    """A ``pt.kernel`` (flat buffers), a host loop (its body exported as a runner of its own, run once per
    iteration) and a captured constant (its stored bytes in const0.npy)."""
    from tests.kernel.lower_cases import layernorm

    ln, ln_types = layernorm(R=16, C=128, BR=8)
    prog = pt.stage(lambda x, w, b: ln(x * 2.0, w, b), *ln_types)
    _run_exported(monkeypatch, tmp_path / "ln", prog, random_args(prog, 1))
    rows = pt.tensor("f32", pt.make_layout((8, 32), stride=(32, 1)))
    prog = pt.stage(lambda x: pt.fori_loop(5, 5 + 100, lambda i, c: c + 1.0 + i.astype("f32") * 0.0, x), rows)
    s = _run_exported(monkeypatch, tmp_path / "loop", prog, [np.zeros((8, 32), np.float32)])
    assert s.kernels[-1].kind == "loop" and (tmp_path / "loop" / s.kernels[-1].name / "runner.py").exists()
    rng = np.random.default_rng(4)
    w = rng.standard_normal((64, 32)).astype(np.float32)
    prog = pt.stage(lambda x: pt.relu(x @ w) * 2.0, pt.tensor("f32", pt.make_layout((128, 64), stride=(64, 1))))
    _run_exported(monkeypatch, tmp_path / "const", prog, [rng.standard_normal((128, 64)).astype(np.float32)])
    assert (tmp_path / "const" / "const0.npy").exists()

