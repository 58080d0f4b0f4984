"""The printed backward programs: transposes are views where layouts allow, and nothing is copied."""

from __future__ import annotations

import patches as pt
from patches.layouts import make_layout

A, B = pt.tensor("f32", (3, 4)), pt.tensor("f32", (4, 5))
COPYING = {"copy", "embed"}


def prims(prog):
    return [e.prim.name for e in prog.eqns]


def test_gradient_of_sum_of_matmul_is_two_matmuls_on_transposed_views():
    prog = pt.stage(pt.grad(lambda a, b: pt.reduce_sum(a @ b), argnums=(0, 1)), A, B).dce()
    assert str(prog) == (
        "{ lambda %0:f32[(3,4):(1,3)] %1:f32[(4,5):(1,4)] .\n"
        "  %2:f32[(3,5):(0,0)] = broadcast[shape=(3,5), dims=()] 1.0\n"
        "  %3:f32[(4,3):(3,1)] = transpose[perm=(1,0)] %0\n"
        "  %4:f32[(4,5):(1,4)] = matmul %3 %2\n"
        "  %5:f32[(5,4):(4,1)] = transpose[perm=(1,0)] %1\n"
        "  %6:f32[(3,4):(1,3)] = matmul %2 %5\n"
        "  return %6 %4 }")
    assert not COPYING & set(prims(prog))


def test_backward_program_of_the_seed_example():
    prog = pt.stage(pt.grad(lambda a, b: pt.reduce_sum(pt.tanh(a @ b)), argnums=(0, 1)), A, B).dce()
    names = prims(prog)
    assert names.count("matmul") == 3 and names.count("transpose") == 2 and not COPYING & set(names)
    by_var = {id(v): e for e in prog.eqns for v in e.outputs}
    backward = [e for e in prog.eqns if e.prim.name == "matmul"][1:]
    for e in backward:  # each cotangent matmul reads one operand through a transpose view
        assert sum(by_var.get(id(a)) is not None and by_var[id(a)].prim.name == "transpose" for a in e.inputs) == 1


def test_transpose_of_broadcast_is_a_sum_and_of_a_sum_a_broadcast():
    prog = pt.stage(pt.grad(lambda x, b: pt.reduce_sum(pt.tanh(x + b))), A, pt.tensor("f32", 4)).dce()
    assert "reduce_sum[axes=(0)]" not in str(prog)  # grad wrt x only
    prog_b = pt.stage(pt.grad(lambda x, b: pt.reduce_sum(pt.tanh(x + b)), argnums=1), A, pt.tensor("f32", 4)).dce()
    assert prims(prog_b)[-1] == "reduce_sum" and str(prog_b.eqns[-1]).startswith("Eqn(reduce_sum")
    assert "reduce_sum[axes=(0)]" in str(prog_b)                  # the stride-0 mode of b's broadcast, summed
    assert "broadcast[shape=(3,4), dims=()] 1.0" in str(prog_b)   # the sum's cotangent: one element, stride 0


def test_transpose_of_a_permutation_and_of_a_tile_are_views():
    x = pt.tensor("f32", (4, 6))
    prog = pt.stage(pt.grad(lambda x: pt.reduce_sum(pt.sin(pt.tile(x.T, (2, 2))))), x).dce()
    names = prims(prog)
    assert not COPYING & set(names)
    assert names[-2:] == ["view", "transpose"]   # the inverse tile reads through right_inverse; the inverse perm


def test_transpose_of_a_slice_embeds():
    x = pt.tensor("f32", (4, 6))
    prog = pt.stage(pt.grad(lambda x: pt.reduce_sum(pt.sin(x[1:3, ::2]))), x).dce()
    assert prims(prog)[-1] == "embed"
    assert "embed[shape=(4,6), map=(2,3):(1,8), offset=1]" in str(prog)


def test_linearized_program_is_linear_in_the_tangents():
    _, lin = pt.linearize(lambda a, b: pt.reduce_sum(pt.tanh(a @ b)), *[pt.zeros(t.shape, "f32") for t in (A, B)])
    text = str(lin.program)
    assert text.splitlines()[0].count(";") == 1          # residuals ; tangents
    assert prims(lin.program) == ["matmul", "matmul", "add", "mul", "reduce_sum"]
    lin.program.check()
    assert make_layout((3, 4)) == lin.program.params[0].type.layout
