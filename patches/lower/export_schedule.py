"""Ahead-of-time export of a whole schedule: every kernel's export (header, object, loader shim, ctypes binding) in
a subdirectory, ``schedule.json`` (run order, buffers, and for each kernel which value and permutation every
argument takes), and ``runner.py``, which runs the schedule with torch tensors and no CuTe DSL."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from ..layouts import flatten
from ..staging import Var
from ..staging.types import modes_of
from .errors import LoweringError
from .run_schedule import stored_bytes

RUNNER = '''"""Run an exported patches schedule with torch CUDA tensors (no CuTe DSL): build each kernel's loader first
(sh <kernel>/build.sh), then run(*tensors) returns the program's outputs. Static shapes only."""

import importlib.util
import json
import math
import os

import numpy
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
PLAN = json.load(open(os.path.join(HERE, "schedule.json")))
DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32, "f64": torch.float64, "bool": torch.bool,
          "i32": torch.int32, "i8": torch.int8, "u8": torch.uint8, "i16": torch.int16, "i64": torch.int64}


def _module(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _binding(name):
    return _module(os.path.join(HERE, name, name + "_binding.py"), name + "_binding")


def _view(t, perm, batched, flat=None, groups=None):
    if flat is not None:                 # a pt.kernel argument: the flat buffer it spans
        return torch.as_strided(t, (flat,), (1,), t.storage_offset())
    if perm is None:
        return t
    if groups:                           # merge consecutive modes (a column-major reshape, a view)
        shape, q = [], 0
        for n in groups:
            shape.append(math.prod(t.shape[q:q + n]))
            q += n
        t = t.permute(*reversed(range(t.dim()))).view(*reversed(shape))
        t = t.permute(*reversed(range(t.dim())))
    v = t.permute(*perm)
    return v if batched else torch.as_strided(v, (*v.shape, 1), (*v.stride(), max(1, v.numel())))


def run(*tensors):
    vals = {f"in{i}": t for i, t in enumerate(tensors)}
    device = tensors[0].device if tensors else torch.device("cuda")
    for v in PLAN["values"]:
        if v["name"] not in vals:
            shape, stride = [int(x) for x in v["shape"]], [int(x) for x in v["stride"]]
            if "file" in v:              # a constant the program captured: its stored bytes
                raw = torch.from_numpy(numpy.load(os.path.join(HERE, v["file"]))).to(device)
                vals[v["name"]] = torch.as_strided(raw.view(DTYPES[v["dtype"]]), shape, stride)
            else:
                vals[v["name"]] = torch.empty_strided(shape, stride, dtype=DTYPES[v["dtype"]], device=device)
    for k in PLAN["kernels"]:
        if k["kind"] == "loop":          # a host loop: its body's runner (a subdirectory) once per iteration
            body = _module(os.path.join(HERE, k["name"], "runner.py"), k["name"] + "_runner")
            ins = [vals[name] for name in k["inputs"]]
            consts, carry = ins[:k["n_consts"]], ins[k["n_consts"]:]
            for i in range(k["lower"], k["upper"]):
                carry = body.run(torch.tensor(i, dtype=torch.int32, device=device), *consts, *carry)
            for name, c in zip(k["outputs"], carry):
                vals[name].copy_(c)
            continue
        if k["kind"] == "while":         # a while-loop: its predicate's runner, read by the host, then its body's
            where = os.path.join(HERE, k["name"])
            cond = _module(os.path.join(where, "cond", "runner.py"), k["name"] + "_cond_runner")
            body = _module(os.path.join(where, "body", "runner.py"), k["name"] + "_body_runner")
            ins = [vals[name] for name in k["inputs"]]
            nc, nb = k["n_cond"], k["n_body"]
            cc, bc, carry = ins[:nc], ins[nc:nc + nb], ins[nc + nb:]
            while bool(cond.run(*cc, *carry)[0].item()):
                carry = body.run(*bc, *carry)
            for name, c in zip(k["outputs"], carry):
                vals[name].copy_(c)
            continue
        views = [_view(vals[a["value"]], a["perm"], a["batched"], a.get("flat"), a.get("groups"))
                 for a in k["args"]]
        _binding(k["name"]).run(*views)
    return [vals[name] for name in PLAN["outputs"]]
'''


def _args(k: Any, names: dict) -> list[dict]:
    """Per kernel argument, in order: the value it is, its permutation into kernel modes (None: as is; ``flat``:
    viewed as that many elements in a row)."""
    ins = [names[id(p)] for p in k.program.params]
    outs = [names[id(o)] for o in k.program.outputs]
    if k.kind == "kernel":                           # operands then outputs, each as the flat buffer it spans
        pos = {id(p): i for i, p in enumerate(k.program.params)}
        vals = [ins[pos[id(x)]] for x in k.program.eqns[0].inputs] + outs
        return [{"value": v, "perm": None, "batched": True, "flat": int(a.layout.shape)}
                for v, a in zip(vals, k.spec.args)]
    if k.kind == "simt":
        return ([{"value": o, "perm": None, "batched": True} for o in outs]
                + [{"value": ins[r.param], "perm": None, "batched": True} for r in k.spec.reads])
    s = k.spec
    out = [{"value": v, "perm": list(op.perm), "batched": s.batched, "groups": [len(g) for g in op.groups] or None}
           for v, op in ((ins[s.a.param], s.a), (ins[s.b.param], s.b), (outs[s.out_index], s.c))]
    out += [{"value": ins[si.param], "perm": None, "batched": True} for si in s.inputs]
    out += [{"value": o, "perm": None, "batched": True} for j, o in enumerate(outs) if j != s.out_index]
    return out


def _loop(k: Any, kexe: Any, names: dict, directory: Path) -> dict:
    """A host loop's entry: its static bounds, the values it reads (constants, then carries) and writes; its body's
    schedule exported into ``directory``."""
    e = k.program.eqns[-1]
    if e.prim.name == "while_loop":                # its predicate and its body, each a schedule of its own
        export_schedule(kexe.cond, directory / "cond")
        export_schedule(kexe.body, directory / "body")
        return {"name": k.name, "kind": "while", "fuses": list(k.fuses), "n_cond": e.params["n_cond"],
                "n_body": e.params["n_body"], "inputs": [names[id(x)] for x in e.inputs],
                "outputs": [names[id(o)] for o in k.program.outputs]}
    lo, hi = e.params["lower"], e.params["upper"]
    if type(lo) is not int or type(hi) is not int:
        raise LoweringError(f"host loop {k.name}: its bounds {lo}..{hi} are symbolic; the exported runner takes "
                            "static shapes only")
    export_schedule(kexe.body, directory)
    return {"name": k.name, "kind": "loop", "fuses": list(k.fuses), "lower": lo, "upper": hi,
            "n_consts": e.params["n_consts"], "inputs": [names[id(x)] for x in e.inputs],
            "outputs": [names[id(o)] for o in k.program.outputs]}


def export_schedule(exe: Any, directory: Path) -> Path:
    """Write every kernel's export, schedule.json and runner.py into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    s = exe.schedule
    names = s.value_names()
    values = []
    for v in [b.var for b in s.buffers] + [o for o in s.program.outputs if isinstance(o, Var)]:
        lay = flatten(v.type.layout)                   # hierarchical modes: one dimension per leaf
        values.append({"name": names[id(v)], "dtype": v.type.dtype, "shape": [str(x) for x in modes_of(lay.shape)],
                       "stride": [str(x) for x in modes_of(lay.stride)]})
    for i, (p, x) in enumerate(zip(s.program.params, s.constants)):   # captured constants: their stored bytes
        lay = flatten(p.type.layout)
        np.save(directory / f"const{i}.npy", stored_bytes(p, x))
        values.append({"name": f"const{i}", "dtype": p.type.dtype, "shape": [str(x) for x in modes_of(lay.shape)],
                       "stride": [str(x) for x in modes_of(lay.stride)], "file": f"const{i}.npy"})
    kernels = []
    for k, kexe in zip(s.kernels, exe.executables):
        if k.kind == "loop":                 # a host loop: its body exported as a schedule of its own
            kernels.append(_loop(k, kexe, names, directory / k.name))
            continue
        kexe.export(directory / k.name)
        kernels.append({"name": k.name, "kind": k.kind, "fuses": list(k.fuses), "args": _args(k, names)})
    plan = {"kernels": kernels, "values": values, "outputs": [names[id(o)] for o in s.program.outputs],
            "buffers": [{"name": b.name, "bytes": str(b.nbytes), "slot": b.slot} for b in s.buffers]}
    (directory / "schedule.json").write_text(json.dumps(plan, indent=1) + "\n")
    (directory / "runner.py").write_text(RUNNER)
    return directory
