"""The tape's typed statements for locals and routine calls (symgen/ir/tape.py): what the one-state printer writes,
what the arguments may be, and that the lane printer refuses them (LaneError)."""
from __future__ import annotations

import pytest

from symgen.ir.tape import LaneError, Ptr, Tape


def _tape():
    T = Tape()
    T.local_arrays([("Lam", 4), ("rhs", 2)], ints=[("piv", 2), ("rank", None)])
    T.local_arrays([("Ret0", 9)], "a rotation")
    T.store("rhs[0]", T.input("q[0]") * 2.0)
    T.invoke("sg_rotation_log", ["Ret0", Ptr("out", 0)])
    T.invoke("sg_cut_fit_q", [1, "sg_m_loop0_q0", "sg_pin_transform", None, 1e-10])
    T.invoke("sg_psd_solve", [2, "Lam", "rhs", "piv"], result="rank")
    T.invoke_if_nonzero([T.input("p[3]"), T.input("p[4]")], "sg_m_loop_stab", ["q", "u", Ptr("p", 3), "stab"],
                        zeros=("stab", 2))
    T.store_int("out[5]", "rank")
    return T


def test_one_state_printing():
    assert _tape().lines() == [
        "double Lam[4], rhs[2];  int piv[2], rank;",
        "double Ret0[9];  /* a rotation */",
        "const double t0 = 2.0 * q[0];",
        "rhs[0] = t0;",
        "sg_rotation_log(Ret0, out + 0);",
        "sg_cut_fit_q(1, sg_m_loop0_q0, sg_pin_transform, 0, 1e-10);",
        "rank = sg_psd_solve(2, Lam, rhs, piv);",
        "if (p[3] != 0.0 || p[4] != 0.0) sg_m_loop_stab(q, u, p + 3, stab);",
        "else { int i_; for (i_ = 0; i_ < 2; ++i_) stab[i_] = 0.0; }",
        "out[5] = (double)rank;",
    ]


def test_an_optional_output_block_prints_once_per_form():
    """Tape.begin_if_array / end_if: the statements between run only where the array is not null, the values first
    defined there are defined inside the block (indented), one state and on lanes (the array renamed as the lane
    form renames it); the numbers are the frame walk's, checked against Pinocchio (test_model_pinocchio)."""
    T = Tape()
    x = T.input("p[0]")
    T.store("y[0]", x * 2.0)
    T.begin_if_array("out", "the columns")
    T.store("out[1]", x * 3.0)
    T.end_if()
    assert T.lines() == ["const double t0 = 2.0 * p[0];", "y[0] = t0;", "if (out) {  /* the columns */",
                         "    const double t1 = 3.0 * p[0];", "    out[1] = t1;", "}"]
    assert T.lane_lines("sg_vd", "SG_W", {"p": "p_l", "out": "out_l"}) == [
        "const sg_vd t0 = 2.0 * p_l[0];", "y[0] = t0;", "if (out_l) {  /* the columns */",
        "    const sg_vd t1 = 3.0 * p_l[0];", "    out_l[1] = t1;", "}"]
    with pytest.raises(ValueError):
        T.begin_if_array("out[0]")


def test_the_tested_inputs_are_live():
    assert set(_tape().live_inputs()) == {"q[0]", "p[3]", "p[4]"}


@pytest.mark.parametrize("bad", [("Ret0; x",), ("out + 1",), (True,), ([1],), ("1a",)])
def test_arguments_are_typed(bad):
    with pytest.raises((TypeError, ValueError)):
        Tape().invoke("sg_f", list(bad))


def test_names_are_identifiers():
    T = Tape()
    with pytest.raises(ValueError):
        T.invoke("f(x)", [])
    with pytest.raises(ValueError):
        T.local_arrays([("a[3]", 3)])
    with pytest.raises(ValueError):
        T.local_arrays([])
    with pytest.raises(ValueError):
        T.invoke_if_nonzero([1.0], "f", [], zeros=("a", 1))


@pytest.mark.parametrize("stmt", [
    lambda T: T.local_arrays([("a", 3)]),
    lambda T: T.invoke("sg_f", ["a"]),
    lambda T: T.invoke_if_nonzero([T.input("p[0]")], "sg_f", ["a"], zeros=("a", 3)),
    lambda T: T.store_int("out[0]", "rank"),
], ids=["local_arrays", "invoke", "invoke_if_nonzero", "store_int"])
def test_lane_printing_refuses_routine_calls_and_locals(stmt):
    T = Tape()
    T.store("out[1]", T.input("u[0]") * 3.0)
    stmt(T)
    T.lines()                                        # the one-state form prints them
    with pytest.raises(LaneError):
        T.lane_lines(arrays={"u": "u_l", "out": "out_l", "p": "p_l"})


def _chain_tape():
    """A small straight-line function: a chain of products and sums of q and a kernel array X, a pivot check,
    stores into out, return 0."""
    T = Tape()
    q, X = [T.input(f"q[{i}]") for i in range(4)], [T.input(f"X1[{i}]") for i in range(4)]
    a = [T.mul(q[i], X[i]) for i in range(4)]
    b = [T.add(a[i], a[(i + 1) % 4]) for i in range(4)]
    for i in range(4):
        T.store(f"out[{i}]", b[i])
    c = T.mul(b[0], b[1])
    T.check_positive(T.add(T.mul(c, c), 1.0), 7, "a pivot")
    d = [T.add(T.mul(c, b[i]), a[3 - i]) for i in range(4)]
    for i in range(4):
        T.store(f"out[{4 + i}]", d[i])
    T.ret(0)
    return T


def test_segments_cut_the_statements_and_carry_what_crosses():
    """Tape.segments: the segments' lines, in order, are lines() itself; a value a segment reads from an earlier one
    is carried (one slot each), defined there and carried out of it, and nothing else is carried; the arrays its
    inputs read are listed; a tape with a routine call cannot be cut, nor k < 2."""
    import re

    T = _chain_tape()
    whole = T.lines()
    cut = T.segments(3)
    segs = cut["segments"]
    assert len(segs) == 3 and [ln for s in segs for ln in s["lines"]] == whole
    defined = [{m.group(1) for ln in s["lines"] for m in [re.match(r"const double (\w+) = ", ln)] if m} for s in segs]
    for j, s in enumerate(segs):
        text = " ".join(s["lines"])
        earlier = set().union(*defined[:j]) if j else set()
        reads = {t for t in re.findall(r"\b\w+\b", text) if t in earlier}
        assert set(s["carry_in"]) == reads, (j, s["carry_in"], reads)
        for v in s["carry_out"]:
            assert v in defined[j] and any(v in later["carry_in"] for later in segs[j + 1:])
    assert sorted(cut["slots"].values()) == list(range(len(cut["slots"])))
    assert {"q", "X1"} <= set().union(*(s["arrays"] for s in segs))
    assert T.segments(1) is None and _tape().segments(2) is None


def test_routine_calls_run_one_lane_at_a_time_given_the_batch_rows():
    """lane_lines refuses a tape's local arrays and routine calls (LaneError) unless given ``batch``, the function's
    own rows: then a local array of doubles is a vector array, a call copies lane l of those it takes (written before)
    into doubles, reads the function's rows of q and p there, copies them back, and an integer result is one per
    lane (what the closed chains' TA dynamics does with its loop solve)."""
    T = Tape()
    x = T.input("q[0]") * T.input("u[1]")
    T.local_arrays([("A", 4), ("y", 2)], ints=[("rank", None)])
    T.store("A[0]", x)
    T.invoke("solve", [2, "A", Ptr("p", 3), "y", "q"], result="rank")
    T.store("out[0]", T.input("y[1]") + x)
    T.store_int("out[1]", "rank")
    with pytest.raises(LaneError):
        T.lane_lines("sg_vd", "SG_W", {"q": "q_l", "u": "u_l", "p": "p_l", "out": "out_l"})
    lines = T.lane_lines("sg_vd", "SG_W", {"q": "q_l", "u": "u_l", "p": "p_l", "out": "out_l"},
                         batch={"q": 3, "u": 2, "p": 9})
    text = "\n".join(lines)
    assert "sg_vd A[4], y[2];  int rank[SG_W];" in text
    assert "for (i_ = 0; i_ < 4; ++i_) A_1[i_] = A[i_][l];" in text          # written before the call: copied in
    assert "y_1[i_] = y[i_][l]" not in text                                   # not written before: not read
    assert "rank[l] = solve(2, A_1, p + (long)l * 9 + 3, y_1, q + (long)l * 3);" in text
    assert "for (i_ = 0; i_ < 2; ++i_) y[i_][l] = y_1[i_];" in text           # what it wrote, into lane l
    assert "out_l[1][l] = (double)rank[l];" in text
    # an integer array is one call's scratch, shared by the lanes: a second call that takes it has no lane form
    T2 = Tape()
    T2.local_arrays([("A", 1)], ints=[("piv", 3)])
    T2.invoke("factor", [3, "A", "piv"])
    T2.invoke("solve", [3, "A", "piv"])
    with pytest.raises(LaneError, match="second call"):
        T2.lane_lines("sg_vd", "SG_W", batch={"q": 3})

