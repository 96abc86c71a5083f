"""The lane form at every width (symgen.codegen.lanes): 8 doubles (AVX-512), 4 (AVX2) and 2 (SSE2 / NEON).

The width is chosen for the CPU that generates a model; ``SYMGEN_LANE_WIDTH`` forces one, which is how this file
builds the same models at widths 4 and 2 on one machine.  At each width the batches (FD, ID, M, the rollout's
blocks, the derivatives' lane-batch form) must equal the one-state functions bit for bit (N not a multiple of
the width included), and equal the batches of the host's width: the same statements on other vectors."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import symgen
from model_factory import environment
from symgen.codegen.lanes import host_lane_width, lane_width

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "examples" / "models"
HOST = host_lane_width()
#: the widths this machine runs below its own (the host width is the rest of the suite's)
WIDTHS = [w for w in (4, 2) if w < HOST] or [2]


def _lane_width(w):
    return environment("SYMGEN_LANE_WIDTH", str(w))


def _build(name, derivatives=False):
    name, _, form = name.partition("|")
    path, _, floating = name.partition(":")
    return symgen.build(MODELS / path, floating_base=bool(floating), derivatives=derivatives, form=form or "auto")


#: (model, width): arm7 (a chain: FD, ID and M on lanes), the floating quadruped (a branched tree), the spacecraft
#: (FULL6DOF, GIMBAL, BALL_QUAT, SLIDER, HELICAL and BUSHING kernels on lane vectors), a flexible body; at width 2
#: arm7 and the spacecraft.  Small models: the lane code is the same text at every width (only SG_W, the vector
#: type and the ISA differ), and the 60-DOF random trees of every hinge type cost 70-100 s of compiling per width
#: (test_lanes runs them at the host's width)
#: "|per_kind": the per-kind form, whose batches run the looped lane form (its steps on vectors)
CASES = [(m, WIDTHS[0]) for m in ("arm7.urdf", "quadruped.urdf:floating", "spacecraft.yaml",
                                  "flexible_spacecraft.yaml", "quadruped.urdf:floating|per_kind")] + \
        [(m, w) for w in WIDTHS[1:] for m in ("arm7.urdf", "spacecraft.yaml")]


@pytest.fixture(scope="module", params=CASES, ids=[f"{m}-W{w}" for m, w in CASES])
def pair(request):
    """(the model at the forced width, the same model at the host's width)."""
    name, w = request.param
    with _lane_width(w):
        mb = _build(name)
    return mb, _build(name), w


def _states(mb, n, seed):
    rng = np.random.default_rng(seed)
    return (mb.sanitize(rng.uniform(-2.0, 2.0, (n, mb.nq))), rng.normal(size=(n, mb.nu)),
            rng.normal(size=(n, mb.nu)))


def _same(a, b, what):
    np.testing.assert_array_equal(a, b, err_msg=what)


def test_the_width_is_the_one_asked_for(pair):
    mb, host, w = pair
    assert mb.manifest["lane_width"] == w and host.manifest["lane_width"] == HOST
    if mb.name == "arm7" or mb.forms["forward_dynamics"] == "per_kind":
        assert host.lane_width == HOST, "arm7's batched FD has a lane form, which this CPU runs"
    # FD without a lane form (e.g. past emit.LANE_MAX_LINES) goes one state at a time at every width
    assert mb.lane_width == (w if host.lane_width > 1 else 1)


@pytest.mark.parametrize("n", [1, 3, 4, 7, 8, 9, 17])
def test_batches_equal_one_state_calls_and_the_host_width(pair, n):
    mb, host, w = pair
    Q, U, T = _states(mb, n, n)
    for what, batch, one in (
            ("FD", lambda m: m.forward_dynamics(Q, U, T), lambda m, i: m.forward_dynamics(Q[i], U[i], T[i])),
            ("ID", lambda m: m.inverse_dynamics(Q, U, T), lambda m, i: m.inverse_dynamics(Q[i], U[i], T[i])),
            ("M", lambda m: m.mass_matrix(Q), lambda m, i: m.mass_matrix(Q[i])),
            ("frame poses", lambda m: m.frame_poses(Q), lambda m, i: m.frame_poses(Q[i])),
            ("frame pose", lambda m: m.frame_pose(Q, m.frame_names[-1]), lambda m, i: m.frame_pose(Q[i], m.frame_names[-1])),
            ("Jacobian", lambda m: m.jacobian(Q, m.frame_names[-1]), lambda m, i: m.jacobian(Q[i], m.frame_names[-1])),
            ("frame velocity", lambda m: m.frame_velocity(Q, U, m.frame_names[-1]),
             lambda m, i: m.frame_velocity(Q[i], U[i], m.frame_names[-1]))):
        got = batch(mb)
        _same(got, np.array([one(mb, i) for i in range(n)]), f"{mb.name} W{w} {what} batch vs one state, N = {n}")
        _same(got, batch(host), f"{mb.name} {what}: W{w} batch vs W{HOST} batch, N = {n}")


@pytest.mark.parametrize("n", [WIDTHS[0] - 1, 2 * WIDTHS[0] + 1])
def test_closed_chain_ta_batches_at_the_smaller_width(n):
    """The four-bar's TA dynamics on lanes (its loop solve one lane at a time) at the smaller width: each state's
    Udot, lambda and rank equal the one-state call's and the host width's batch, with Baumgarte gains."""
    w = WIDTHS[0]
    with _lane_width(w):
        mb = _build("fourbar.yaml")
    host = _build("fourbar.yaml")
    assert mb.manifest["lane_width"] == w
    Q, U, T = _states(mb, n, 5)
    got = mb.ta_forward_dynamics(Q, U, T, baumgarte=(6.0, 0.9))
    ref = host.ta_forward_dynamics(Q, U, T, baumgarte=(6.0, 0.9))
    for k in ("udot", "lambda", "rank"):
        _same(got[k], np.array([mb.ta_forward_dynamics(Q[i], U[i], T[i], baumgarte=(6.0, 0.9))[k] for i in range(n)]),
              f"fourbar W{w} TA {k} batch vs one state, N = {n}")
        _same(got[k], ref[k], f"fourbar TA {k}: W{w} batch vs W{HOST} batch, N = {n}")


@pytest.mark.parametrize("method", ["rk4", "euler"])
def test_rollout_blocks_equal_one_case_calls(pair, method):
    mb, host, w = pair
    n = 2 * w + 1
    Q, U, T = _states(mb, n, 3)
    T = np.repeat(T[:, None, :], 9, axis=1)
    kw = {"dt": 1e-3, "n_steps": 9, "every": 3, "method": method}
    out = mb.rollout(Q, U, T=T, **kw)
    for c in range(n):
        alone = mb.rollout(Q[c], U[c], T=T[c:c + 1], **kw)
        for key in ("q", "u"):
            _same(out[key][c], alone[key][0], f"{mb.name} W{w} rollout case {c} {key}")
    ref = host.rollout(Q, U, T=T, **kw)
    for key in ("q", "u", "status"):
        _same(out[key], ref[key], f"{mb.name} rollout {key}: W{w} vs W{HOST}")


@pytest.mark.parametrize("name,ltl", [("arm7.urdf", False), ("arm7.urdf", True)], ids=["forward-mode", "ltl"])
def test_derivative_lane_batches_at_the_smaller_width(name, ltl, monkeypatch):
    """The derivatives' lane-batch form at the smaller width: each state equals the one-state function, bit for
    bit, and the host width's batch; 2W + 3 states (full blocks and a tail).  arm7 only: a tree's derivative
    module costs about 30 s of compiling per width, and the lane code is the same text at every width.  ``ltl``:
    FD's derivatives from ID's and the LTL solve (schedule.FD_DERIVATIVES_LTL_FROM lowered), whose lane blocks
    solve on lanes (PerKindDerivatives.fd_solve_lanes_program)."""
    if ltl:
        from symgen.codegen import schedule

        monkeypatch.setattr(schedule, "FD_DERIVATIVES_LTL_FROM", 100)
    w = WIDTHS[0]
    with _lane_width(w):
        mb = _build(name, derivatives=True)
    host = _build(name, derivatives=True)
    n = 2 * w + 3
    Q, U, T = _states(mb, n, 21)
    for verb in ("forward_dynamics_derivatives", "inverse_dynamics_derivatives"):
        got = getattr(mb, verb)(Q, U, T)
        ref = getattr(host, verb)(Q, U, T)
        for k, (g, r) in enumerate(zip(got, ref)):
            _same(g, r, f"{name} {verb}[{k}]: W{w} vs W{HOST}")
            _same(g, np.array([getattr(mb, verb)(Q[i], U[i], T[i])[k] for i in range(n)]),
                  f"{name} {verb}[{k}] W{w}: batch vs one state")


def test_a_bad_width_is_refused_with_its_name():
    with _lane_width(3), pytest.raises(ValueError, match=r"SYMGEN_LANE_WIDTH='3'.*2, 4 or 8"):
        lane_width()
