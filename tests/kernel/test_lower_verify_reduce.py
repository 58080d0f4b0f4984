"""The kernel verifier's reduction checks (patches.lower.kernel.verify_reduce): each reduction's shuffle plan, read
off the emitted module (its slot, partial and result builders as CuTe evaluates them, its butterfly offsets, writer
mask and warp replicas), gives every output the elements of its row exactly once, and every broadcast read from the
reducing lanes' registers finds its output; a wrong builder, offset or mask in the source, or a wrong plan in the
lowering, is caught."""

import re
from dataclasses import replace

import pytest

import patches as pt
from patches.lower.kernel import KernelModule, shuffle
from patches.lower.kernel.verify import verify_kernel
from patches.lower.verify import VerificationError

from . import lower_cases as C
from .test_lower_shuffle import _reduce_kernel

pytest.importorskip("cutlass")


def _matmul_row_max():
    """A wgmma accumulator's rows reduced over the quad of lanes holding them and broadcast back."""
    def body(a_ref, b_ref, o_ref):
        acc = pt.matmul(a_ref[...], b_ref[...], preferred_element_type="f32")
        o_ref[...] = acc - pt.reduce_max(acc, 1)[:, None]
    sa, sb = pt.BlockSpec((64, 64), lambda i: (i, 0)), pt.BlockSpec((64, 64), lambda i: (0, 0))
    k = pt.kernel(body, pt.tensor("f32", (128, 64)), grid=(2,), in_specs=[sa, sb], out_specs=sa)
    return pt.stage(k, pt.tensor("bf16", (128, 64)), pt.tensor("bf16", (64, 64)))


def _reductions(report):
    return [c for c in report.checks if "exactly once" in c.name], [c for c in report.checks if "broadcast" in c.name]


CASES = {"softmax": lambda: pt.stage(*(lambda k, t: (k, *t))(*C.softmax(16, 64, 8))),
         "layernorm": lambda: pt.stage(*(lambda k, t: (k, *t))(*C.layernorm(16, 64, 8))),
         "columns": lambda: _reduce_kernel(0, 8, 128), "rows": lambda: _reduce_kernel(1), "whole": lambda: _reduce_kernel(None),
         "wgmma_rows": _matmul_row_max,
         "flash": lambda: pt.stage(*(lambda k, t: (k, *t))(*C.flash_attention(64, 64, 64, 32)))}


@pytest.mark.parametrize("name, plans, broadcasts, form", [
    ("softmax", 2, 2, "partial_own_"),       # 4 warps' partials combined through shared memory, kept in registers
    ("layernorm", 2, 2, "held"),             # broadcasts of values computed in the reducing lanes' registers
    ("columns", 1, 0, "direct"),             # every thread holds whole columns: no exchange
    ("rows", 1, 0, "partial_at_"),
    ("whole", 1, 0, "el"),                   # the whole block to one number
    ("wgmma_rows", 1, 1, "offset=2,"),       # the quad of lanes holding an accumulator row
    ("flash", 2, 3, "own"),                  # row statistics kept in the reducing lanes, broadcast from copies
])
def test_every_reduction_and_broadcast_verifies(name, plans, broadcasts, form):
    mod = pt.lower(CASES[name]())
    report = verify_kernel(mod, kinds=("reduction",))
    got_plans, got_bcasts = _reductions(report)
    assert report.ok, str(report)
    assert len(got_plans) == plans and len(got_bcasts) == broadcasts, str(report)
    assert all(c.elements > 0 for c in got_plans + got_bcasts)
    if form == "direct":
        assert "partial_at_" not in mod.source
    elif form == "el":
        assert re.search(r"el\d+ = 0\n", mod.source)
    elif form == "own":
        assert re.search(r"own\d+\.store\(v\d+\)", mod.source) and "partial_at_" not in mod.source
    else:
        assert form in mod.source


def test_the_whole_verification_includes_the_reduction_checks():
    report = pt.lower(CASES["softmax"]()).verify()
    assert report.ok and len(_reductions(report)[0]) == 2 and len(_reductions(report)[1]) == 2


def _softmax():
    mod = pt.lower(CASES["softmax"]())
    assert verify_kernel(mod, kinds=("reduction",)).ok
    return mod


def _with_builder(src, name, body):
    """The source with builder ``name`` returning ``body`` instead."""
    new, n = re.subn(rf"(def {name}\(\):\n    \"\"\".*\"\"\"\n    return ).*\n", lambda m: m.group(1) + body + "\n", src)
    assert n == 1, name
    return new


def _caught(mod, src, match):
    bad = KernelModule(mod.spec, src, 0.0, kind="kernel")
    report = verify_kernel(bad, kinds=("reduction",))
    with pytest.raises(VerificationError, match=match):
        report.raise_if_failed()
    return report


def test_a_wrong_slot_layout_is_caught():
    mod = _softmax()
    slots = re.search(r"acc\d+\[(slots_\d+)\(\)\(v\)\]", mod.source).group(1)
    V = int(re.search(r"xr\d+ = cute\.make_rmem_tensor\(\((\d+),\)", mod.source).group(1))
    _caught(mod, _with_builder(mod.source, slots, f"cute.make_layout({V}, stride=0)"), "combines")


def test_a_wrong_partial_layout_is_caught():
    mod = _softmax()
    at = re.search(r"(partial_at_\d+)\(", mod.source).group(1)
    S = int(re.search(r"acc\d+ = cute\.make_rmem_tensor\(\((\d+),\)", mod.source).group(1))
    report = _caught(mod, _with_builder(mod.source, at, f"cute.make_layout((128, {S}), stride=(0, 1))"),
                     "which another lane wrote")
    assert any("which no lane wrote" in m for c in report.checks for m in c.mismatches)


def test_a_wrong_own_layout_and_a_wrong_broadcast_read_are_caught():
    mod = _softmax()
    own = re.search(r"(partial_own_\d+)\(", mod.source).group(1)
    S = int(re.search(r"acc\d+ = cute\.make_rmem_tensor\(\((\d+),\)", mod.source).group(1))
    _caught(mod, _with_builder(mod.source, own, f"cute.make_layout((128, {S}), stride=(0, 0))"), "reads slot")
    bcast = re.search(r"(bcast_\d+)\(", mod.source).group(1)
    V = int(re.search(r"bc\d+ = cute\.make_rmem_tensor\(\((\d+),\)", mod.source).group(1))
    _caught(mod, _with_builder(mod.source, bcast, f"cute.make_layout({V}, stride=0)"), "reads slot .* not")


def test_a_wrong_butterfly_offset_and_writer_mask_are_caught():
    mod = _softmax()
    assert "offset=16, mask" in mod.source and "offset=8, mask" in mod.source
    _caught(mod, mod.source.replace("offset=16, mask", "offset=8, mask"), "combines")
    mask = re.search(r"if \(tidx & (\d+)\) == 0:", mod.source).group(1)
    low = int(mask) & (int(mask) - 1)                 # one lane bit fewer: two lanes of a group write
    _caught(mod, mod.source.replace(f"(tidx & {mask}) == 0", f"(tidx & {low}) == 0"), "another lane wrote")


def test_a_wrong_plan_in_the_lowering_is_caught_where_the_builders_agree_with_it(monkeypatch):
    """The plan with its last butterfly dropped: every builder is still the layout it was emitted from (those checks
    pass), but half the lanes' partials never reach the outputs."""
    right = shuffle.plan

    def wrong(*a, **k):
        p = right(*a, **k)
        return p if p is None or not p.offsets else replace(p, offsets=p.offsets[:-1])
    monkeypatch.setattr(shuffle, "plan", wrong)
    report = verify_kernel(pt.lower(CASES["softmax"]()))
    failed = [c for c in report.checks if not c.ok]
    assert failed and all("exactly once" in c.name or "broadcast" in c.name for c in failed), str(report)
    assert any("patches layout" in c.name and c.ok for c in report.checks)
