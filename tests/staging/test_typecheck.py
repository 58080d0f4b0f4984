"""Program.check: well-staged programs pass; programs corrupted by hand are refused with a clear message."""

from __future__ import annotations

import pytest

import patches as pt
from patches.staging import Eqn, Program, Var
from patches.staging.primitives import add_p, matmul_p


def staged():
    return pt.stage(lambda a, b: pt.tanh(a @ b) + 1.0, pt.tensor("f32", (3, 4)), pt.tensor("f32", (4, 5)))


def test_staged_programs_check():
    assert staged().check() is not None


def test_wrong_output_type_is_refused():
    p = staged()
    e = p.eqns[0]
    bad = Eqn(e.prim, e.inputs, e.params, [Var(pt.tensor("f32", (3, 5)).with_layout(pt.make_layout((3, 5), (5, 1))))])
    q = Program(p.consts, p.const_values, p.params, [bad] + p.eqns[1:], p.outputs)
    with pytest.raises(pt.StagingError, match=r"check: equation 0 \(matmul\).*rule gives f32\[\(3,5\):\(1,3\)\]"):
        q.check()


def test_use_before_definition_and_double_definition():
    p = staged()
    with pytest.raises(pt.StagingError, match="not defined before"):
        Program(p.consts, p.const_values, p.params, list(reversed(p.eqns)), p.outputs).check()
    with pytest.raises(pt.StagingError, match="defined twice"):
        Program(p.consts, p.const_values, p.params, p.eqns + [p.eqns[-1]], p.outputs).check()


def test_ill_typed_inputs_are_refused():
    a, b = Var(pt.tensor("f32", (3, 4))), Var(pt.tensor("f32", (3, 4)))
    out = Var(pt.tensor("f32", (3, 4)))
    with pytest.raises(pt.StagingError, match=r"equation 0 \(matmul\).*do not type.*contracted modes differ"):
        Program([], [], [a, b], [Eqn(matmul_p, [a, b], {}, [out])], [out]).check()
    ok = Program([], [], [a, b], [Eqn(add_p, [a, b], {}, [out])], [out])
    assert ok.check() is ok
