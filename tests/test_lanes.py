"""The lane form (templates/helpers/lanes.c.jinja, symgen.ir.tape.Tape.lane_lines): the batched forward dynamics,
inverse dynamics, mass matrix and frame poses run full blocks of W states through one vectorized function and the tail one
state at a time.  Each lane must give what the one-state function gives for that state (the same statements in
the same order: the same bits), for every example model and the random trees of every hinge type, N not a
multiple of W included; and a lane whose D is not positive definite must be reported as the one-state loop
reports it (the first such state, the first such body).  mb.rollout steps blocks of W cases on the lane form of
forward dynamics: each case must equal the same case rolled out alone (N = 1 < W: the one-case path), a failing
case included."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import symgen
from model_factory import build_coverage_tree
from symgen.codegen.lanes import lane_width

W = lane_width()   # the lane width of the models this run builds (8 on AVX-512, 4 on AVX2, 2 elsewhere)
from symgen.pipeline.package import build_model

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted(p for p in (ROOT / "examples" / "models").iterdir() if p.suffix in (".urdf", ".yaml", ".json"))
SIZES = (1, W - 1, W, W + 3, 3 * W + 1)


@pytest.fixture(scope="module", params=[p.name for p in EXAMPLES] + ["quadruped.urdf:floating", "hinges1", "hinges3"])
def model(request):
    """Every example (all_hinges: every hinge type in one tree) and model_factory's small random trees with armature
    on every moving hinge (hinges1, hinges3)."""
    if request.param.startswith("hinges"):
        return build_coverage_tree(request.param)
    path, _, floating = request.param.partition(":")   # the floating quadruped: the same build as test_dynamics'
    return symgen.build(ROOT / "examples" / "models" / path, floating_base=bool(floating))


def _states(mb, n, seed):
    rng = np.random.default_rng(seed)
    return (mb.sanitize(rng.uniform(-2.0, 2.0, (n, mb.nq))), rng.normal(size=(n, mb.nu)),
            rng.normal(size=(n, mb.nu)))


def _same(batch, one, what):
    """batch == the one-state results, bit for bit (which implies 1e-14 relative)."""
    rel = np.max(np.abs(batch - one) / np.maximum(np.abs(one), 1e-300)) if one.size else 0.0
    assert rel <= 1e-14, f"{what}: relative deviation {rel:.2e}"
    np.testing.assert_array_equal(batch, one, err_msg=what)


@pytest.mark.parametrize("n", SIZES)
def test_batches_equal_one_state_calls(model, n):
    tree = bool(model.loops)   # closed chains: the tree's dynamics (their TA batches: test_closed_chain_batches_...)
    Q, U, T = _states(model, n, n)
    fd = model.forward_dynamics(Q, U, T, tree=tree) if tree else model.forward_dynamics(Q, U, T)
    one = np.array([model.forward_dynamics(Q[i], U[i], T[i], tree=tree) for i in range(n)])
    _same(fd, one, f"{model.name} FD, N = {n}")
    _same(model.inverse_dynamics(Q, U, T), np.array([model.inverse_dynamics(Q[i], U[i], T[i]) for i in range(n)]),
          f"{model.name} ID, N = {n}")
    _same(model.mass_matrix(Q), np.array([model.mass_matrix(Q[i]) for i in range(n)]), f"{model.name} M, N = {n}")
    _same(model.frame_poses(Q), np.array([model.frame_poses(Q[i]) for i in range(n)]),
          f"{model.name} frame poses, N = {n}")
    for f in {model.frame_names[-1], model.frame_names[len(model.frame_names) // 2]}:   # the walk's lane form
        _same(model.frame_pose(Q, f), np.array([model.frame_pose(Q[i], f) for i in range(n)]),
              f"{model.name} pose of {f!r}, N = {n}")
        _same(model.jacobian(Q, f), np.array([model.jacobian(Q[i], f) for i in range(n)]),
              f"{model.name} Jacobian of {f!r}, N = {n}")
        _same(model.frame_velocity(Q, U, f), np.array([model.frame_velocity(Q[i], U[i], f) for i in range(n)]),
              f"{model.name} velocity of {f!r}, N = {n}")


#: the examples with loops (each built by the model fixture too: cache hits here)
CLOSED = ("delta_robot.yaml", "fourbar.yaml", "slider_crank.yaml")


@pytest.mark.parametrize("name", CLOSED)
@pytest.mark.parametrize("n", (W - 1, W, 2 * W + 3))
def test_closed_chain_batches_equal_one_state_calls(name, n):
    """A closed chain's TA dynamics runs full blocks of W states on lanes (sg_<m>_ta_lanes: the ATBI passes and the
    compliance on vectors, the loop solve and the Baumgarte term one lane at a time): Udot, lambda, the node forces
    and the rank of each lane equal the one-state call's, bit for bit, without and with Baumgarte gains and f_ext."""
    model = symgen.build(ROOT / "examples" / "models" / name)
    assert model.loops
    Q, U, T = _states(model, n, 40 + n)
    F = np.random.default_rng(n).normal(size=(n, model.nb, 6))
    for kw in ({}, {"baumgarte": (8.0, 0.7)}, {"f_ext": F}):
        batch = model.ta_forward_dynamics(Q, U, T, **kw)
        for i in range(n):
            one = model.ta_forward_dynamics(Q[i], U[i], T[i], **({"f_ext": F[i]} if "f_ext" in kw else kw))
            for k in ("udot", "lambda", "f_target", "rank"):
                _same(np.asarray(batch[k][i]), np.asarray(one[k]), f"{model.name} TA {k}, N = {n}, {list(kw)}, state {i}")


def test_batches_sharing_p_equal_batches_with_a_p_per_state(model):
    """Without f_ext, a batch's states share p but for its middle (T or Udot): sg_<m>_<verb>_batch_mid takes one p
    row and the middles (plan.CBatch.mid), which is what mb.forward_dynamics / inverse_dynamics call.  It equals
    sg_<m>_<verb>_batch with one p row per state bit for bit, for N around the lane width, with the model's
    gravity edited in place (the row it keeps follows) and with gravity= given."""
    b = model.binding
    n = 2 * W + 3
    Q, U, T = _states(model, n, 11)
    g0 = b.gravity.copy()
    try:
        for gravity, edit in ((None, None), (None, [0.3, -1.2, -9.0]), ([1.0, 2.0, -3.0], None)):
            if edit is not None:
                b.gravity[:] = edit
            for kernel in ("forward_dynamics", "inverse_dynamics"):
                mid = getattr(b.lib, f"sg_{model.name}_{kernel}_batch_mid")
                for m in (1, W - 1, W, n):
                    out = np.full((m, model.nu), np.nan)
                    P = b.p(m, T[:m], None, gravity)
                    ref, status = b.call_batch(kernel, Q[:m], U[:m], P, model.nu)
                    s = mid(m, b.buf(Q[:m]), b.buf(U[:m]), b.shared_p(gravity), b.buf(T[:m]), b.buf(out))
                    assert s == status, (kernel, m, s, status)
                    np.testing.assert_array_equal(out, ref, err_msg=f"{model.name} {kernel} N = {m}, g {gravity}, {edit}")
                tree = {"tree": True} if model.loops and kernel == "forward_dynamics" else {}   # closed chains: TA
                _same(getattr(model, kernel)(Q, U, T, gravity=gravity, **tree), b.call_batch(
                    kernel, Q, U, b.p(n, T, None, gravity), model.nu)[0], f"{model.name} {kernel} through the façade")
    finally:
        b.gravity[:] = g0


def test_lane_functions_are_there():
    """arm7 (a chain) gets all three; the floating quadruped (a branched tree) FD and ID, M stays per state."""
    from symgen.model import load_model
    from symgen.pipeline.sources import cached_model_sources

    files, _ = cached_model_sources(load_model(ROOT / "examples" / "models" / "arm7.urdf"))
    for kind in ("fd", "id", "mm", "fp", "fpose", "fj", "fv"):   # the frame poses, one frame's pose, Jacobian, velocity
        assert f"sg_arm7_{kind}_lanes(" in files["arm7.c"]
    assert "sg_arm7_rollout_block(" in files["arm7.c"]   # rollout blocks run the lane form of FD
    files, _ = cached_model_sources(load_model(ROOT / "examples" / "models" / "quadruped.urdf", floating_base=True))
    c = files["quadruped.c"]
    assert "sg_quadruped_fd_lanes(" in c and "sg_quadruped_id_lanes(" in c and "sg_quadruped_mm_lanes(" not in c
    assert "sg_quadruped_rollout_block(" in c
    # the looped M's lanes write the states' rows of out directly (perkind.MM_ROWS_MAX_BYTES), no vector array of M
    c = cached_model_sources(load_model(ROOT / "examples" / "models" / "quadruped.urdf", floating_base=True),
                             form="per_kind")[0]["quadruped.c"]
    mm = c[c.index("int sg_quadruped_mm_lanes("):]
    assert "sg_quadruped_crba_tip_rows_l[" in mm and "out_l" not in mm[:mm.index("\n}\n")]
    files, _ = cached_model_sources(load_model(ROOT / "examples" / "models" / "fourbar.yaml"))
    assert "sg_fourbar_ta_lanes(" in files["fourbar.c"]            # closed chains: the TA dynamics on lanes,
    assert "sg_fourbar_rollout_block(" in files["fourbar.c"]       # which the rollout's blocks step on


@pytest.fixture(scope="module")
def arm7_parametric():
    return symgen.build(ROOT / "examples" / "models" / "arm7.urdf",
                        parameters=[f"{b}.{x}" for b in OUTBOARD for x in ("mass", "inertia")])


OUTBOARD = ("link7", "flange", "tool")   # the bodies outboard of joint7 (flange and tool are welded to link7)


@pytest.mark.parametrize("bad", [0, W - 1, W + 2, 2 * W])
def test_a_lane_with_singular_d_reports_its_state(arm7_parametric, bad):
    """Link 7 (and what is welded to it) without mass or inertia in one state: its D is 0 in that lane only.
    The batch must raise for that state and body, as the one-state loop does; without that state, the batch
    equals the one-state calls (M too: a parametric build's M reads one p per state)."""
    mb = arm7_parametric
    n = 2 * W + 3
    Q, U, T = _states(mb, n, 5)
    mass = np.full(n, 0.5)
    J = np.tile(np.diag([0.01, 0.012, 0.008]), (n, 1, 1))
    mass[bad], J[bad] = 0.0, 0.0

    def params(rows):
        return {f"{b}.{x}": v[rows] for b in OUTBOARD for x, v in (("mass", mass), ("inertia", J))}
    with pytest.raises(np.linalg.LinAlgError, match=rf"body 'link7' \(hinge 'joint7'\) is not positive definite "
                                                     rf"\(state {bad}\)"):
        mb.forward_dynamics(Q, U, T, params=params(slice(None)))
    good = [i for i in range(n) if i != bad]
    one = np.array([mb.forward_dynamics(Q[i], U[i], T[i], params=params(i)) for i in good])
    _same(mb.forward_dynamics(Q[good], U[good], T[good], params=params(good)), one, "parametric FD")
    _same(mb.mass_matrix(Q, params=params(slice(None))),
          np.array([mb.mass_matrix(Q[i], params=params(i)) for i in range(n)]), "parametric M")


def test_nan_state_reports_as_one_state_loop():
    """A NaN in one state's Q: the batch reports the same state and body as the one-state loop."""
    mb = symgen.build(ROOT / "examples" / "models" / "arm7.urdf")
    n = 3 * W
    Q, U, T = _states(mb, n, 9)
    Q[W + 1, 2] = np.nan
    with pytest.raises(np.linalg.LinAlgError) as lanes:
        mb.forward_dynamics(Q, U, T)
    with pytest.raises(np.linalg.LinAlgError) as one:
        for i in range(n):
            mb.forward_dynamics(Q[i:i + 1], U[i:i + 1], T[i:i + 1])
    assert f"(state {W + 1})" in str(lanes.value)
    assert str(lanes.value).split(" is not")[0] == str(one.value).split(" is not")[0]


def _rollout_alone(mb, Q, U, T, params=None, **kw):
    """mb.rollout of each case in a call of its own: N = 1 < W, so the one-case path (no lane block)."""
    return [mb.rollout(Q[c], U[c], T=T[c:c + 1], params=params and params(c), **kw) for c in range(len(Q))]


def _same_rollout(out, alone, what):
    """Every case of one call equals that case alone, bit for bit: rows (NaN rows of a failed case too), status."""
    for c, one in enumerate(alone):
        for key in ("q", "u"):
            np.testing.assert_array_equal(out[key][c], one[key][0], err_msg=f"{what}, case {c}, {key}")
        assert out["status"][c] == one["status"][0], f"{what}, case {c}: status {out['status'][c]} alone {one['status'][0]}"


@pytest.mark.parametrize("method", ["rk4", "euler"])
def test_rollout_blocks_equal_one_case_calls(model, method):
    """mb.rollout (blocks of W cases on sg_<m>_fd_lanes where the model has them; a closed chain's on its TA
    dynamics' lanes, sg_<m>_ta_lanes, with Baumgarte gains) against each case alone, with T per step and every=4,
    N not a multiple of W included."""
    kw = {"dt": 1e-3, "n_steps": 13, "every": 4, "method": method}
    if model.loops:
        kw["baumgarte"] = (20.0, 1.0)
    for n in SIZES:
        Q, U, _ = _states(model, n, 100 + n)
        T = np.random.default_rng(n).normal(size=(n, kw["n_steps"], model.nu))
        out = model.rollout(Q, U, T=T, **kw)
        _same_rollout(out, _rollout_alone(model, Q, U, T, **kw), f"{model.name} {method} rollout, N = {n}")


@pytest.mark.parametrize("floating", [False, True], ids=["arm7", "quadruped_floating"])
@pytest.mark.parametrize("method", ["rk4", "euler"])
def test_rollout_case_failing_mid_way(floating, method):
    """An infinite T at step 12 of case W + 1 and a NaN one at step 20 of case 3 (of 3 W + 1 cases): these cases'
    forward dynamics fail a few stages later (D not positive definite in their lane only); they stop with their
    status and NaN rows, every other case of their blocks goes on, and all equal the cases rolled out alone."""
    mb = symgen.build(ROOT / "examples" / "models" / ("quadruped.urdf" if floating else "arm7.urdf"),
                      floating_base=floating)   # cache hits: built by the model fixture
    n, kw = 3 * W + 1, {"dt": 1e-3, "n_steps": 30, "every": 4, "method": method}
    Q, U, _ = _states(mb, n, 11)
    T = np.random.default_rng(12).normal(size=(n, kw["n_steps"], mb.nu))
    T[W + 1, 12], T[3, 20, 0] = np.inf, np.nan
    out = mb.rollout(Q, U, T=T, **kw)
    assert list(np.flatnonzero(~out["ok"])) == [3, W + 1]
    assert np.isnan(out["q"][W + 1, 12 // 4 + 1:]).all() and np.isnan(out["q"][3, 20 // 4 + 1:]).all()
    assert np.isfinite(out["q"][W + 1, :12 // 4 + 1]).all() and np.isfinite(out["q"][np.flatnonzero(out["ok"])]).all()
    _same_rollout(out, _rollout_alone(mb, Q, U, T, **kw), f"{mb.name} {method} rollout with failing cases")


@pytest.mark.parametrize("bad", [(0,), (W - 1, W + 2), tuple(range(W, 2 * W))])
def test_rollout_lane_with_singular_d(arm7_parametric, bad):
    """Link 7 massless in some cases (parameters per case): their D is 0 from the first stage; they fail at step 0
    with joint7's status (a whole block of them in the last case), the others equal the cases alone."""
    mb = arm7_parametric
    n = 2 * W + 3
    Q, U, _ = _states(mb, n, 6)
    T = np.random.default_rng(7).normal(size=(n, 9, mb.nu))
    mass, J = np.full(n, 0.5), np.tile(np.diag([0.01, 0.012, 0.008]), (n, 1, 1))
    mass[list(bad)], J[list(bad)] = 0.0, 0.0

    def params(rows):
        return {f"{b}.{x}": v[rows] for b in OUTBOARD for x, v in (("mass", mass), ("inertia", J))}
    kw = {"dt": 1e-3, "n_steps": 9, "every": 2}
    out = mb.rollout(Q, U, T=T, params=params(slice(None)), **kw)
    assert list(np.flatnonzero(~out["ok"])) == list(bad)
    assert np.isnan(out["q"][list(bad), 1:]).all()
    _same_rollout(out, _rollout_alone(mb, Q, U, T, params=params, **kw), "parametric arm7 rollout")


def test_a_segmented_one_state_function_equals_the_whole(monkeypatch):
    """A long straight-line FD or ID is printed as segments that pass the values crossing between them through an
    array (symgen.codegen.emit.segmented_function, and _lane_segments for the lane functions): arm7 built with
    segments of 250 and 300 lines (its FD is about 1,070) has them, and its one-state FD, ID and their batches equal
    the unsegmented build's bit for bit (the same operations in the same order)."""
    from symgen.algorithms import soa

    path = ROOT / "examples" / "models" / "arm7.urdf"
    whole = symgen.build(path)
    monkeypatch.setattr(soa, "SEGMENT_LINES", 250)
    monkeypatch.setattr(soa, "LANE_SEGMENT_LINES", 300)
    seg = symgen.build(path)
    assert seg.manifest["module"] != whole.manifest["module"]
    from symgen.model import load_model
    from symgen.pipeline.sources import cached_model_sources

    text = cached_model_sources(load_model(path))[0]["arm7.c"]
    assert "sg_arm7_forward_dynamics_seg3(" in text and "sg_arm7_inverse_dynamics_seg1(" in text
    assert "sg_arm7_fd_lanes_seg2(" in text and "sg_arm7_id_lanes_seg1(" in text      # the lane functions too
    for n in (1, W + 3):
        Q, U, T = _states(whole, n, 40 + n)
        _same(np.array([seg.forward_dynamics(Q[i], U[i], T[i]) for i in range(n)]),
              np.array([whole.forward_dynamics(Q[i], U[i], T[i]) for i in range(n)]), f"segmented FD, N = {n}")
        _same(seg.forward_dynamics(Q, U, T), whole.forward_dynamics(Q, U, T), f"segmented FD batch, N = {n}")
        _same(np.array([seg.inverse_dynamics(Q[i], U[i], T[i]) for i in range(n)]),
              np.array([whole.inverse_dynamics(Q[i], U[i], T[i]) for i in range(n)]), f"segmented ID, N = {n}")
        _same(seg.inverse_dynamics(Q, U, T), whole.inverse_dynamics(Q, U, T), f"segmented ID batch, N = {n}")
