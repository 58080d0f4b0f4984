"""The printed form of programs, pytrees, constants, literals, nested calls, and structural equality."""

from __future__ import annotations

import numpy as np

import patches as pt
from patches.layouts import make_layout


def f(x):
    return x + x + x * x


def test_issue_example_prints_exactly():
    prog = pt.stage(f, pt.tensor("f32", make_layout((3, 4))))
    assert str(prog) == (
        "{ lambda %0:f32[(3,4):(1,3)] .\n"
        "  %1:f32[(3,4):(1,3)] = add %0 %0\n"
        "  %2:f32[(3,4):(1,3)] = mul %0 %0\n"
        "  %3:f32[(3,4):(1,3)] = add %1 %2\n"
        "  return %3 }"
    )


def test_issue_example_evaluates_and_jits():
    prog = pt.stage(f, pt.tensor("f32", make_layout((3, 4))))
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    np.testing.assert_allclose(pt.evaluate(prog, x), x + x + x * x, rtol=1e-6)
    np.testing.assert_allclose(pt.jit(f)(x), x + x + x * x, rtol=1e-6)


def test_pytrees_of_inputs_and_outputs():
    def g(d, pair):
        a, b = pair
        return {"sum": d["x"] + a, "both": (b, a * 2.0)}

    t = pt.tensor("f32", (2, 2))
    prog = pt.stage(g, {"x": t}, (t, t))
    assert len(prog.params) == 3 and len(prog.outputs) == 3
    x, a, b = (np.full((2, 2), v, np.float32) for v in (1, 2, 3))
    out = pt.evaluate(prog, {"x": x}, (a, b))
    assert set(out) == {"sum", "both"}
    np.testing.assert_array_equal(out["sum"], x + a)
    np.testing.assert_array_equal(out["both"][0], b)
    np.testing.assert_array_equal(out["both"][1], 2 * a)
    assert str(prog).endswith("  return %2 %4 %3 }")  # leaves in pytree order: dict keys sorted


def test_multiple_outputs_literals_and_constants():
    c = np.arange(4.0, dtype=np.float32)

    def g(x):
        return x * 2.0 + c, pt.exp(x)

    prog = pt.stage(g, pt.tensor("f32", 4))
    text = str(prog)
    assert text.splitlines()[0] == "{ lambda %0:f32[4:1] ; %1:f32[4:1] ."
    assert "mul %1 2.0" in text
    assert text.splitlines()[-1] == "  return %3 %4 }"
    x = np.ones(4, np.float32)
    y0, y1 = pt.evaluate(prog, x)
    np.testing.assert_allclose(y0, 2 * x + c)
    np.testing.assert_allclose(y1, np.exp(x), rtol=1e-6)


def test_nested_call_prints_the_body_indented():
    h = pt.jit(f)
    prog = pt.stage(lambda x: h(x) * 3.0, pt.tensor("f32", (2, 3)))
    lines = str(prog).splitlines()
    assert lines[1] == "  %1:f32[(2,3):(1,2)] = call[name=f] %0"
    assert lines[2] == "    { lambda %0:f32[(2,3):(1,2)] ."
    assert lines[3] == "      %1:f32[(2,3):(1,2)] = add %0 %0"
    assert lines[6] == "      return %3 }"
    assert lines[7] == "  %2:f32[(2,3):(1,2)] = mul %1 3.0"


def test_structural_equality_is_up_to_renaming():
    t = pt.tensor("f32", (3, 4))
    assert pt.stage(f, t) == pt.stage(f, t)
    assert pt.stage(f, t) == pt.stage(lambda y: y + y + y * y, t)
    assert pt.stage(f, t) != pt.stage(lambda y: y + y + y * y * 1.0, t)
    assert pt.stage(f, t) != pt.stage(lambda y: y * y + (y + y), t)
    assert pt.stage(f, t) != pt.stage(f, pt.tensor("f32", make_layout((3, 4), (4, 1))))
    assert pt.stage(f, t) != pt.stage(f, pt.tensor("f64", (3, 4)))


def test_params_print_like_layouts():
    t = pt.tensor("f32", (4, 6))
    prog = pt.stage(lambda x: (pt.reduce_sum(x, 0), x[1:3, ::2], x[0], pt.tile(x, (2, 3)), x.T), t)
    text = str(prog)
    assert "reduce_sum[axes=(0)] %0" in text
    assert "slice[index=(1:3,:5:2)] %0" in text
    assert "%3:f32[6:4] = slice[index=(0,:)] %0" in text
    assert "%4:f32[((2,3),(2,2)):((1,4),(2,12))] = tile[tiler=(2,3), mode=zipped] %0" in text
    assert "%5:f32[(6,4):(4,1)] = transpose[perm=(1,0)] %0" in text


def test_scalar_type_prints_as_rank_zero_layout():
    prog = pt.stage(lambda x: pt.reduce_sum(x), pt.tensor("f64", (2, 2)))
    assert "%1:f64[():()] = reduce_sum[axes=(0,1)] %0" in str(prog)
