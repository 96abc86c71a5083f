"""Derivatives of forward and inverse dynamics and of one integration step (issue 23).

Oracles: Pinocchio's ``computeABADerivatives`` / ``computeRNEADerivatives`` on fixed-base robots (arm7,
``example-robot-data``'s UR5 and Panda) to 1e-9 relative; central differences along the tangent
(1e-6 relative; step 1e-6) on floating bases, on random trees that hold every hinge type (with armature, with
f_ext);
central differences of one ``rollout`` step (RK4, semi-implicit Euler); the parameter derivatives by central
differences in theta and the identity ``Y theta = T`` (1e-10); MuJoCo's ``mjd_transitionFD`` on a URDF both load.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import symgen
from helpers import assert_close, erd_file
from model_factory import hinge_group_tree
from pin_maps import to_pin_q, u_map
from symgen.codegen.lanes import lane_width

W = lane_width()   # the lane width of the models this run builds (8 on AVX-512, 4 on AVX2, 2 elsewhere)
from symgen.pipeline.package import build_model

ROOT = Path(__file__).resolve().parents[1]
pin = pytest.importorskip("pinocchio")

#: the relative error of a central difference with step 1e-6 on these models is about 1e-9; 1e-6 is the bar
FD_TOL = 1e-6


FIXED = ["arm7", "ur5", "panda"]
ERD = {"ur5": "ur_description/urdf/ur5_robot.urdf", "panda": "panda_description/urdf/panda.urdf"}


@pytest.fixture(scope="module", params=FIXED)
def fixed_robot(request, urdf_robots):
    name = request.param
    path = erd_file(ERD[name]) if name in ERD else urdf_robots / f"{name}.urdf"
    if path is None:
        pytest.skip("example-robot-data is not installed")
    return symgen.build(str(path), derivatives=True), pin.buildModelFromUrdf(str(path))   # one module, not two


def _rel(a, b):
    return float(np.max(np.abs(a - b)) / max(1.0, float(np.max(np.abs(b)))))


@pytest.mark.parametrize("batch", [False, True], ids=["one-state", "batch"])
def test_derivatives_match_pinocchio_on_fixed_bases(fixed_robot, batch):
    """One state at a time (the one-state function) and as one batch of W + 1 states (a block of W on the
    lane-batch form, one state on the tail)."""
    _against_pinocchio(*fixed_robot, batch)


def _against_pinocchio(mb, pm, batch):
    """mb's FD and ID derivatives against computeABADerivatives / computeRNEADerivatives at random states, 1e-9."""
    pd = pm.createData()
    rng = np.random.default_rng(3)
    n = W + 1 if batch else 5
    Q = np.array([mb.sanitize(rng.uniform(-2.5, 2.5, mb.nq)) for _ in range(n)])
    V, A, TAU = (rng.normal(size=(n, pm.nv)) for _ in range(3))
    Ps = [u_map(mb, pm, q, False) for q in Q]              # a permutation on a fixed base: u = P v
    U, UD, T = (np.array([P @ x for P, x in zip(Ps, X)]) for X in (V, A, TAU))
    if batch:
        fd, id_ = mb.forward_dynamics_derivatives(Q, U, T), mb.inverse_dynamics_derivatives(Q, U, UD)
    for i in range(n):
        qp, P, v = to_pin_q(mb, pm, Q[i]), Ps[i], V[i]
        dq, du, Minv = fd[:, i] if batch else mb.forward_dynamics_derivatives(Q[i], U[i], T[i])
        pin.computeABADerivatives(pm, pd, qp, v, TAU[i])
        Minv_pin = np.triu(pd.Minv) + np.triu(pd.Minv, 1).T
        for ours, theirs, what in ((dq, pd.ddq_dq, "ddq_dq"), (du, pd.ddq_dv, "ddq_dv"), (Minv, Minv_pin, "Minv")):
            assert _rel(P.T @ ours @ P, theirs) < 1e-9, f"{what}, state {i}"
        dq, du, M = id_[:, i] if batch else mb.inverse_dynamics_derivatives(Q[i], U[i], UD[i])
        pin.computeRNEADerivatives(pm, pd, qp, v, A[i])
        M_pin = np.triu(pd.M) + np.triu(pd.M, 1).T
        for ours, theirs, what in ((dq, pd.dtau_dq, "dtau_dq"), (du, pd.dtau_dv, "dtau_dv"), (M, M_pin, "M")):
            assert _rel(P.T @ ours @ P, theirs) < 1e-9, f"{what}, state {i}"


# ---- central differences along the tangent ----------------------------------------------------------------

def _tangent_move(mb, q, j, h):
    """Q moved by h along the motion that U = e_j produces (to first order; central differences cancel the
    second): q + h N(q) e_j, renormalized."""
    e = np.zeros(mb.nu)
    e[j] = 1.0
    return mb.sanitize(q + h * mb.qdot(q, e))


def _central(mb, f, q, u, x, h=1e-6):
    """(d/dQ tangent, d/dU, d/dx) of f(q, u, x) by central differences."""
    dq = np.column_stack([(f(_tangent_move(mb, q, j, h), u, x) - f(_tangent_move(mb, q, j, -h), u, x)) / (2 * h)
                          for j in range(mb.nu)])
    E = h * np.eye(mb.nu)
    du = np.column_stack([(f(q, u + e, x) - f(q, u - e, x)) / (2 * h) for e in E])
    dx = np.column_stack([(f(q, u, x + e) - f(q, u, x - e)) / (2 * h) for e in E])
    return dq, du, dx


TREES = ["quadruped-floating"] + [f"hinges{i}" for i in range(4)]


@pytest.fixture(scope="module", params=TREES)
def tree(request, urdf_robots):
    name = request.param
    if name == "quadruped-floating":
        return symgen.build(str(ROOT / "examples" / "models" / "quadruped.urdf"), floating_base=True)
    return build_model(hinge_group_tree(int(name[-1])), derivatives=True)   # as every file builds them


def _f_ext(mb, rng):
    return rng.normal(size=(mb.nb, 6))


@pytest.mark.parametrize("with_f_ext", [False, True], ids=["no-f_ext", "f_ext"])
def test_derivatives_match_central_differences(tree, with_f_ext):
    mb = tree
    rng = np.random.default_rng(11)
    f_ext = _f_ext(mb, rng) if with_f_ext else None
    for _ in range(2):
        q, u, x = mb.sanitize(rng.normal(size=mb.nq)), rng.normal(size=mb.nu), rng.normal(size=mb.nu)
        fd = lambda q, u, T: mb.forward_dynamics(q, u, T, f_ext=f_ext)  # noqa: E731
        for ours, ref, what in zip(mb.forward_dynamics_derivatives(q, u, x, f_ext=f_ext), _central(mb, fd, q, u, x),
                                   ("dUdot/dQ", "dUdot/dU", "Minv")):
            assert _rel(ours, ref) < FD_TOL, what
        id_ = lambda q, u, a: mb.inverse_dynamics(q, u, a, f_ext=f_ext)  # noqa: E731
        for ours, ref, what in zip(mb.inverse_dynamics_derivatives(q, u, x, f_ext=f_ext), _central(mb, id_, q, u, x),
                                   ("dT/dQ", "dT/dU", "M")):
            assert _rel(ours, ref) < FD_TOL, what


@pytest.mark.parametrize("looped", [False, True], ids=["unrolled", "looped"])
def test_the_fused_trees_derivatives(tmp_path, monkeypatch, looped):
    """The looped analytic recursions of ID's derivatives (and FD's from them: the LTL solve) run over the fused
    tree (soa.fuse_static: static leaves, a chain of two and a force-torque link between two moving links fused),
    with an external wrench on every body, the static ones included: central differences of FD and ID (1e-6
    relative), the per-kind form over every body (1e-10), and each lane of a batch of 2W + 3 equals the one-state
    call bit for bit.  ``looped``: the values' schedule looped too (the cost model's limits lowered)."""
    from model_factory import STATIC_URDF
    from symgen.codegen import schedule
    from symgen.model import load_model
    from symgen.pipeline.sources import cached_model_sources

    path = tmp_path / "fused.urdf"
    path.write_text(STATIC_URDF)
    ref = symgen.build(str(path), floating_base=True, form="per_kind", derivatives=True)
    if looped:
        monkeypatch.setattr(schedule, "STRAIGHT_LINE_LIMIT", 10)
        monkeypatch.setattr(schedule, "CRBA_UNROLL_LIMIT", 0)
    mb = symgen.build(str(path), floating_base=True, derivatives=True)
    assert set(mb.forms.values()) == {"per_kind" if looped else "straight"}
    text = cached_model_sources(load_model(str(path), floating_base=True), derivatives=True)[0]["fused.c"]
    assert "static const int sg_fused_dyn_d_parent[3] = { -1, 0, 1 };" in text
    rng = np.random.default_rng(31)
    f = rng.normal(size=(mb.nb, 6))
    for _ in range(2):
        q, u, x = mb.sanitize(rng.normal(size=mb.nq)), rng.normal(size=mb.nu), rng.normal(size=mb.nu)
        for verb, dverb in (("forward_dynamics", "forward_dynamics_derivatives"),
                            ("inverse_dynamics", "inverse_dynamics_derivatives")):
            g = lambda q, u, x, verb=verb: getattr(mb, verb)(q, u, x, f_ext=f)  # noqa: E731
            ours = getattr(mb, dverb)(q, u, x, f_ext=f)
            for a, b, c in zip(ours, _central(mb, g, q, u, x), getattr(ref, dverb)(q, u, x, f_ext=f)):
                assert _rel(a, b) < FD_TOL, dverb
                assert _rel(a, c) < 1e-10, dverb
    n = 2 * W + 3
    Q, U, X = mb.sanitize(rng.normal(size=(n, mb.nq))), rng.normal(size=(n, mb.nu)), rng.normal(size=(n, mb.nu))
    F = rng.normal(size=(n, mb.nb, 6))
    for dverb in ("forward_dynamics_derivatives", "inverse_dynamics_derivatives"):
        batch = getattr(mb, dverb)(Q, U, X, f_ext=F)
        for i in range(n):
            one = getattr(mb, dverb)(Q[i], U[i], X[i], f_ext=F[i])
            assert all(np.array_equal(batch[j][i], one[j]) for j in range(3)), (dverb, i)


def test_identities_and_batches(tree):
    """M^-1 M = 1, M equals mass_matrix (1e-10); a batch of W + 3 states with f_ext (a block of W on the
    lane-batch form, the tail one by one) equals its states one by one, bit for bit: the lane form runs the one-state
    function's statements in the same order.  So does the full-coordinate form (Q directions d/dQ_i, what the
    C step derivatives read) of the C batch against the one-state C function."""
    mb = tree
    rng = np.random.default_rng(5)
    n = W + 3
    Q, U, X = mb.sanitize(rng.normal(size=(n, mb.nq))), rng.normal(size=(n, mb.nu)), rng.normal(size=(n, mb.nu))
    F = rng.normal(size=(n, mb.nb, 6))
    fdb, idb = mb.forward_dynamics_derivatives(Q, U, X, f_ext=F), mb.inverse_dynamics_derivatives(Q, U, X, f_ext=F)
    for i in range(n):
        M = mb.mass_matrix(Q[i])
        assert_close(fdb[2][i] @ M, np.eye(mb.nu), 1e-10, "Minv M")
        assert_close(idb[2][i], M, 1e-10, "M")
        for batch, one in zip(list(fdb) + list(idb), list(mb.forward_dynamics_derivatives(Q[i], U[i], X[i], f_ext=F[i]))
                              + list(mb.inverse_dynamics_derivatives(Q[i], U[i], X[i], f_ext=F[i]))):
            assert np.array_equal(batch[i], one), f"state {i}"
    b = mb.derivative_binding()
    P = np.ascontiguousarray(b.p(n, X, F, None))
    size = mb.nu * (mb.nq + 2 * mb.nu)
    for kind in ("fd", "id"):
        out, one = np.full((n, size), np.nan), np.full(size, np.nan)
        assert getattr(b.lib, f"sg_{mb.name}_{kind}_derivatives_batch")(n, b.buf(Q), b.buf(U), b.buf(P), 0,
                                                                         b.buf(out)) == 0
        for i in range(n):
            assert getattr(b.lib, f"sg_{mb.name}_{kind}_derivatives")(b.buf(Q[i]), b.buf(U[i]), b.buf(P[i]), 0,
                                                                      b.buf(one)) == 0
            assert np.array_equal(out[i], one), f"{kind}, full coordinates, state {i}"


# ---- the per-kind form (models past soa's straight-line limits; here forced with form="per_kind") -----------

PER_KIND = ["arm7", "all_hinges"]


@pytest.fixture(scope="module", params=PER_KIND)
def per_kind(request):
    """Models test_per_kind_form builds in the per-kind form too: arm7 (Pinocchio's oracle) and all_hinges (every
    hinge type, FULL6DOF and BALL_QUAT's tangent seeds among them)."""
    models = ROOT / "examples" / "models"
    if request.param == "arm7":      # with derivatives, as test_per_kind_form builds it (model_factory.WITH_DERIVATIVES)
        return symgen.build(str(models / "arm7.urdf"), form="per_kind", derivatives=True)
    return symgen.build(str(models / "all_hinges.yaml"), form="per_kind", derivatives=True)


def test_per_kind_derivatives(per_kind):
    """The per-kind derivatives (symgen.codegen.perkind.PerKindDerivatives): against central differences along
    the tangent with f_ext (1e-6; every hinge type in all_hinges), against Pinocchio on arm7
    (1e-9, one state and a batch); M^-1 M = 1 (1e-10); a batch equals its states one by one."""
    mb = per_kind
    assert mb.forms["forward_dynamics"] == "per_kind"
    rng = np.random.default_rng(21)
    q, u, x = mb.sanitize(rng.uniform(-2, 2, mb.nq)), rng.normal(size=mb.nu), rng.normal(size=mb.nu)
    F = rng.normal(size=(mb.nb, 6))
    fd = mb.forward_dynamics_derivatives(q, u, x, f_ext=F)
    for ours, ref, what in zip(fd, _central(mb, lambda q, u, T: mb.forward_dynamics(q, u, T, f_ext=F), q, u, x),
                               ("dUdot/dQ", "dUdot/dU", "Minv")):
        assert _rel(ours, ref) < FD_TOL, what
    for ours, ref, what in zip(mb.inverse_dynamics_derivatives(q, u, x, f_ext=F),
                               _central(mb, lambda q, u, a: mb.inverse_dynamics(q, u, a, f_ext=F), q, u, x),
                               ("dT/dQ", "dT/dU", "M")):
        assert _rel(ours, ref) < FD_TOL, what
    assert_close(fd[2] @ mb.mass_matrix(q), np.eye(mb.nu), 1e-10, "Minv M")
    Q, U, X = mb.sanitize(rng.normal(size=(3, mb.nq))), rng.normal(size=(3, mb.nu)), rng.normal(size=(3, mb.nu))
    for f in (mb.forward_dynamics_derivatives, mb.inverse_dynamics_derivatives):
        batch = f(Q, U, X)
        for i in range(3):
            assert np.array_equal(batch[:, i], f(Q[i], U[i], X[i])), f"{f.__name__}, state {i}"
    if mb.name == "arm7":
        pm = pin.buildModelFromUrdf(str(ROOT / "examples" / "models" / "arm7.urdf"))
        _against_pinocchio(mb, pm, batch=False)
        _against_pinocchio(mb, pm, batch=True)


def test_per_kind_analytic_inverse_dynamics_derivatives(per_kind, urdf_robots):
    """Along the tangent the per-kind form runs the analytic recursions too, their steps traced per body kind and
    looped (PerKindDerivatives.emit_rnea_derivatives; the oracles of test_per_kind_derivatives check it, FD's
    derivatives through it), and so does its lane form, bit for bit.  A regression check between two algorithms: where full coordinates are the
    tangent (arm7's PIN hinges) the forward mode's full-coordinate directions give the same derivatives to
    1e-12 relative, with f_ext and gravity given; the straight-line build of the same model runs the same looped
    recursions (an identity, not an oracle: the oracles are test_per_kind_derivatives' and the Pinocchio tests)."""
    from symgen.model import load_model
    from symgen.pipeline.sources import cached_model_sources

    mb = per_kind
    model = load_model(ROOT / "examples" / "models" / ("arm7.urdf" if mb.name == "arm7" else "all_hinges.yaml"))
    c = cached_model_sources(model, "per_kind", derivatives=True)[0][f"{model.name}.c"]
    assert f"static int sg_{mb.name}_id_derivatives_tangent(" in c and f"sg_{mb.name}_idd_directions" in c
    rng = np.random.default_rng(29)
    q, u, ud = mb.sanitize(rng.uniform(-2, 2, mb.nq)), rng.normal(size=mb.nu), rng.normal(size=mb.nu)
    f_ext = {mb.body_names[-1]: rng.normal(size=6)}
    b = mb.derivative_binding()
    analytic = b.derivatives("id", q, u, ud, f_ext, [0.0, 0.0, -9.81])
    if mb.nq == mb.nu:
        forward = b.derivatives("id", q, u, ud, f_ext, [0.0, 0.0, -9.81], tangent=False)
        for k in range(3):
            assert _rel(analytic[k], forward[k]) < 1e-12, (mb.name, k)
    # the looped lanes (PerKindDerivatives.emit_rnea_derivative_lanes): every state of a batch of W + 3 (a full
    # block of W, then the tail one state at a time) bit for bit its one-state call
    n = W + 3
    Q, U, X = mb.sanitize(rng.uniform(-2, 2, (n, mb.nq))), rng.normal(size=(n, mb.nu)), rng.normal(size=(n, mb.nu))
    batch = mb.inverse_dynamics_derivatives(Q, U, X)
    for i in range(n):
        for k, one in enumerate(mb.inverse_dynamics_derivatives(Q[i], U[i], X[i])):
            np.testing.assert_array_equal(batch[k][i], one, err_msg=f"{mb.name}: state {i}, block {k}")
    assert f"int sg_{mb.name}_id_derivatives_lanes(" in c
    if mb.name == "arm7":          # the straight-line build test_derivatives' fixed robots share: the same steps
        other = symgen.build(str(urdf_robots / "arm7.urdf"), derivatives=True)
        assert other.forms["inverse_dynamics"] == "straight"
        other = other.derivative_binding().derivatives("id", q, u, ud, f_ext, [0.0, 0.0, -9.81])
        for k in range(3):
            assert _rel(analytic[k], other[k]) < 1e-12, (mb.name, k)


def test_per_kind_derivative_directions_on_lanes(per_kind):
    """The per-kind inverse-dynamics derivatives run blocks of 8 (AVX-512) or 2 directions at once, a lane each,
    over the union of their subtrees (PerKindDerivatives.emit_lane_derivatives); each width gives the one-direction
    driver's numbers (np.array_equal: a lane may add the zero tangents of another direction's subtree, so the sign
    of a zero may differ), in the tangent and the full-coordinate directions, with f_ext."""
    mb = per_kind
    b = mb.derivative_binding()
    width = getattr(b.lib, f"sg_{mb.name}_id_derivatives_width")
    rng = np.random.default_rng(23)
    q, u, x = mb.sanitize(rng.uniform(-2, 2, mb.nq)), rng.normal(size=mb.nu), rng.normal(size=mb.nu)
    P = np.ascontiguousarray(b.p(1, x[None], rng.normal(size=(1, mb.nb, 6)), None))[0]
    for tangent in (1, 0):
        ndq = mb.nu if tangent else mb.nq
        outs = {}
        for w in (1, 2, 8):
            out = np.full(mb.nu * (ndq + 2 * mb.nu), np.nan)
            status = width(b.buf(q), b.buf(u), b.buf(P), tangent, b.buf(out), w)
            if w == 8 and status == -2:       # this CPU has no AVX-512
                continue
            assert status == 0, (w, status)
            outs[w] = out
        assert np.all(np.isfinite(outs[1]))
        for w, out in outs.items():
            np.testing.assert_array_equal(out, outs[1], err_msg=f"{mb.name}: {w} directions at once, tangent={tangent}")


def test_per_kind_derivative_batches_equal_one_state_calls(per_kind):
    """A batch of the per-kind derivatives runs full blocks of the lane width through the lane form (FD's: FD
    state by state, the ID derivatives' lanes at FD's Udot, then each state's LTL solve) and the rest one state
    at a time; every state equals its one-state call (np.array_equal), 2 W + 3 states, with f_ext, along the
    tangent and along Q itself."""
    mb = per_kind
    b = mb.derivative_binding()
    w = getattr(b.lib, f"sg_{mb.name}_lane_width")()
    n = 2 * w + 3
    rng = np.random.default_rng(29)
    Q, U, X = mb.sanitize(rng.uniform(-2, 2, (n, mb.nq))), rng.normal(size=(n, mb.nu)), rng.normal(size=(n, mb.nu))
    F = rng.normal(size=(n, mb.nb, 6))
    for kind in ("fd", "id"):
        for tangent in (True, False):
            batch = b.derivatives(kind, Q, U, X, F, mb.gravity, tangent=tangent)
            for i in range(n):
                one = b.derivatives(kind, Q[i], U[i], X[i], F[i], mb.gravity, tangent=tangent)
                for k, (x, y) in enumerate(zip(batch, one)):
                    assert np.array_equal(x[i], y), f"{mb.name} {kind} derivatives[{k}], state {i}, tangent={tangent}"


def test_per_kind_fd_derivatives_over_two_trees():
    """The per-kind FD derivatives' solve runs over each row's nonzero places, the U in depth-first order
    (PerKindDerivatives.u_preorder): two trees on the newtonian frame (a floating body with a PIN and a SLIDER, a
    PIN chain with a BALL: quaternions in both) keep their places apart.  Against central differences along the
    tangent (1e-6), M^-1 M = 1 (1e-10), and a batch of 2W + 3 states (its lane blocks) equal to one-state calls."""
    mb = symgen.build(ROOT / "tests" / "data" / "two_roots.yaml", form="per_kind", derivatives=True)
    assert mb.forms["forward_dynamics"] == "per_kind"
    rng = np.random.default_rng(5)
    q, u, x = mb.sanitize(rng.uniform(-1, 1, mb.nq)), rng.normal(size=mb.nu), rng.normal(size=mb.nu)
    fd = mb.forward_dynamics_derivatives(q, u, x)
    for ours, ref, what in zip(fd, _central(mb, mb.forward_dynamics, q, u, x), ("dUdot/dQ", "dUdot/dU", "Minv")):
        assert _rel(ours, ref) < FD_TOL, what
    assert_close(fd[2] @ mb.mass_matrix(q), np.eye(mb.nu), 1e-10, "Minv M")
    w = getattr(mb.derivative_binding().lib, f"sg_{mb.name}_lane_width")()
    n = 2 * w + 3
    Q, U, X = mb.sanitize(rng.uniform(-1, 1, (n, mb.nq))), rng.normal(size=(n, mb.nu)), rng.normal(size=(n, mb.nu))
    batch = mb.forward_dynamics_derivatives(Q, U, X)
    for i in range(n):
        assert np.array_equal(batch[:, i], mb.forward_dynamics_derivatives(Q[i], U[i], X[i])), f"state {i}"


def test_a_long_forward_mode_takes_the_fd_derivatives_from_id_s(monkeypatch):
    """A straight-line model whose forward-mode FD derivatives are long (schedule.FD_DERIVATIVES_LTL_FROM; arm7 here,
    with the limit lowered) takes them from the ID derivatives and the LTL solve: the same derivatives as the
    forward mode's (1e-10 relative), along the tangent and along Q, one state and a batch of 2W + 3 (its lane blocks,
    whose solve runs on lanes, equal the one-state calls), and against central differences (1e-6)."""
    from symgen.codegen import schedule

    path = ROOT / "examples" / "models" / "arm7.urdf"
    fwd = symgen.build(path, derivatives=True)
    monkeypatch.setattr(schedule, "FD_DERIVATIVES_LTL_FROM", 100)
    ltl = symgen.build(path, derivatives=True)
    assert ltl.manifest["module"] != fwd.manifest["module"] and ltl.forms["forward_dynamics"] == "straight"
    from symgen.model import load_model
    from symgen.pipeline.sources import cached_model_sources

    text = cached_model_sources(load_model(path), derivatives=True)[0]["arm7.c"]
    assert "sg_arm7_fd_derivatives_solve(" in text and "sg_arm7_fd_derivatives_w8(" not in text
    assert "sg_arm7_fd_derivatives_solve_lanes(out) == 0" in text    # the lane blocks solve on lanes
    rng = np.random.default_rng(12)
    q, u, x = ltl.sanitize(rng.uniform(-1, 1, ltl.nq)), rng.normal(size=ltl.nu), rng.normal(size=ltl.nu)
    for tangent in (True, False):           # out = [d/dQ (nU x nQdir), d/dU, M^-1], flat
        a = ltl.derivative_binding().derivatives("fd", q, u, x, None, ltl.gravity, tangent=tangent)
        b = fwd.derivative_binding().derivatives("fd", q, u, x, None, fwd.gravity, tangent=tangent)
        for got, ref in zip(a, b):
            assert _rel(got, ref) < 1e-10, tangent
    for ours, ref, what in zip(ltl.forward_dynamics_derivatives(q, u, x), _central(ltl, ltl.forward_dynamics, q, u, x),
                               ("dUdot/dQ", "dUdot/dU", "Minv")):
        assert _rel(ours, ref) < FD_TOL, what
    n = 2 * W + 3
    Q, U, X = ltl.sanitize(rng.uniform(-1, 1, (n, ltl.nq))), rng.normal(size=(n, ltl.nu)), rng.normal(size=(n, ltl.nu))
    batch = ltl.forward_dynamics_derivatives(Q, U, X)
    for i in range(n):
        assert np.array_equal(batch[:, i], ltl.forward_dynamics_derivatives(Q[i], U[i], X[i])), f"state {i}"


# ---- one integration step ---------------------------------------------------------------------------------

def _step(mb, q, u, T, dt, method):
    r = mb.rollout(q, u, dt, 1, T=T, method=method)
    return r["q"][0, 1], r["u"][0, 1]


def _step_central(mb, q, u, T, dt, method, h=1e-6):
    """(A, B) of one rollout step by central differences, Q perturbed along the tangent and the result's Q
    difference read in the tangent at the result (N(q')^+ dq')."""
    def diff(plus, minus, q1):
        (qp, up), (qm, um) = plus, minus
        N = np.column_stack([mb.qdot(q1, e) for e in np.eye(mb.nu)])
        return np.concatenate([np.linalg.pinv(N) @ (qp - qm), up - um]) / (2 * h)
    q1, _ = _step(mb, q, u, T, dt, method)
    A = np.zeros((2 * mb.nu, 2 * mb.nu))
    for j in range(mb.nu):
        A[:, j] = diff(_step(mb, _tangent_move(mb, q, j, h), u, T, dt, method),
                       _step(mb, _tangent_move(mb, q, j, -h), u, T, dt, method), q1)
    E = h * np.eye(mb.nu)
    for j in range(mb.nu):
        A[:, mb.nu + j] = diff(_step(mb, q, u + E[j], T, dt, method), _step(mb, q, u - E[j], T, dt, method), q1)
    B = np.column_stack([diff(_step(mb, q, u, T + E[j], dt, method), _step(mb, q, u, T - E[j], dt, method), q1)
                         for j in range(mb.nu)])
    return A, B


@pytest.mark.parametrize("method", ["rk4", "euler"])
def test_step_derivatives_match_central_differences(tree, method):
    mb = tree
    rng = np.random.default_rng(2)
    q, u, T = mb.sanitize(rng.normal(size=mb.nq)), rng.normal(size=mb.nu), rng.normal(size=mb.nu)
    A, B = mb.step_derivatives(q, u, T, 0.01, method=method)
    A_ref, B_ref = _step_central(mb, q, u, T, 0.01, method)
    assert _rel(A, A_ref) < FD_TOL and _rel(B, B_ref) < FD_TOL


def test_step_derivatives_match_mujoco(urdf_robots):
    """arm7 loaded by MuJoCo from the same URDF (state maps: MuJoCo's qpos, qvel are our Q, U on hinge joints;
    mjd_transitionFD's A is d(qpos tangent, qvel)/d(qpos tangent, qvel)): semi-implicit Euler, MuJoCo's
    default integrator, at dt = 1e-3.  MuJoCo's step and ours are both the semi-implicit Euler step of the same
    equations, so the derivatives agree to what mjd_transitionFD's own differences give (1e-5 relative)."""
    mujoco = pytest.importorskip("mujoco")
    path = str(urdf_robots / "arm7.urdf")
    m = mujoco.MjModel.from_xml_path(path)
    m.opt.timestep = 1e-3
    m.opt.gravity[:] = (0, 0, -9.81)
    m.dof_damping[:] = 0.0
    m.dof_frictionloss[:] = 0.0
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT | mujoco.mjtDisableBit.mjDSBL_LIMIT
    mb = symgen.build(path)
    names = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, j) for j in range(m.njnt)]
    perm = [mb.q_slice(n).start for n in names]            # MuJoCo's joint order in our Q (hinges: nq = nv = 1)
    d = mujoco.MjData(m)
    rng = np.random.default_rng(4)
    q, u, T = rng.uniform(-1, 1, mb.nq), rng.uniform(-1, 1, mb.nu), rng.uniform(-1, 1, mb.nu)
    d.qpos[:], d.qvel[:], d.ctrl[:] = q[perm], u[perm], 0.0
    d.qfrc_applied[:] = T[perm]
    A_mj = np.zeros((2 * m.nv, 2 * m.nv))
    mujoco.mjd_transitionFD(m, d, 1e-7, 1, A_mj, None, None, None)
    A, _ = mb.step_derivatives(q, u, T, 1e-3, method="euler")
    idx = np.concatenate([perm, np.asarray(perm) + mb.nu])
    assert _rel(A[np.ix_(idx, idx)], A_mj) < 1e-5


# ---- parameters -------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def parametric(urdf_robots):
    """arm7 with every inertia and two armatures as parameters."""
    path = str(urdf_robots / "arm7.urdf")
    mb0 = symgen.build(path)
    names = [f"{b}.{k}" for b in mb0.body_names for k in ("mass", "com", "inertia")]
    return symgen.build(path, parameters=names, derivatives=True)   # one module (the tests below take both)


def test_regressor_times_theta_is_inverse_dynamics(parametric):
    mb = parametric
    rng = np.random.default_rng(8)
    for _ in range(3):
        q, u, a = rng.normal(size=mb.nq), rng.normal(size=mb.nu), rng.normal(size=mb.nu)
        Y = mb.inverse_dynamics_derivatives(q, u, a, wrt="params")
        assert Y.shape == (mb.nu, len(mb.theta_names()))
        assert_close(Y @ mb.theta(), mb.inverse_dynamics(q, u, a), 1e-10, "Y theta = T")


def test_parameter_derivatives_match_central_differences(parametric):
    """dUdot/dtheta and dT/dtheta against central differences in theta (through the build's own p layout)."""
    mb = parametric
    b = mb.binding
    span = b.layout.params.span("theta")
    rng = np.random.default_rng(9)
    q, u, x = rng.normal(size=mb.nq), rng.normal(size=mb.nu), rng.normal(size=mb.nu)
    th = mb.theta()

    def call(kind, theta, middle):
        P = b.p(1, middle, None, None)
        P[0, span] = theta
        return b.call_batch(kind, q[None], u[None], P, mb.nu)[0][0]

    h = 1e-6
    for kind, wrt in (("forward_dynamics", mb.forward_dynamics_derivatives),
                      ("inverse_dynamics", mb.inverse_dynamics_derivatives)):
        ref = np.column_stack([(call(kind, th + h * e, x) - call(kind, th - h * e, x)) / (2 * h)
                               for e in np.eye(len(th))])
        assert _rel(wrt(q, u, x, wrt="params"), ref) < FD_TOL, kind


def test_parametric_builds_straight_line_analytic_id_derivatives(parametric):
    """A parametric build's inverse dynamics' derivatives along the tangent take the analytic recursions printed
    straight-line (its inertias come from p; every other model's are looped): against central differences of its
    inverse dynamics with the same edited parameters (1e-6), one state and a batch of W + 3 bit for bit."""
    mb = parametric
    assert mb.manifest["part_opt"], "the straight-line recursions' parts (compiled at -O2)"
    rng = np.random.default_rng(31)
    q, u, x = rng.normal(size=mb.nq), rng.normal(size=mb.nu), rng.normal(size=mb.nu)
    params = {"link7.mass": 2.5, "link3.com": np.array([0.01, -0.02, 0.1])}
    ours = mb.inverse_dynamics_derivatives(q, u, x, params=params)
    for k, (a, ref) in enumerate(zip(ours, _central(mb, lambda q, u, a: mb.inverse_dynamics(q, u, a, params=params),
                                                    q, u, x))):
        assert _rel(a, ref) < FD_TOL, k
    n = W + 3
    Q, U, X = rng.normal(size=(n, mb.nq)), rng.normal(size=(n, mb.nu)), rng.normal(size=(n, mb.nu))
    P = {k: np.repeat(np.asarray(v, dtype=float)[None], n, axis=0) for k, v in params.items()}
    batch = mb.inverse_dynamics_derivatives(Q, U, X, params=P)
    for i in range(n):
        for k, one in enumerate(mb.inverse_dynamics_derivatives(Q[i], U[i], X[i], params=params)):
            np.testing.assert_array_equal(batch[k][i], one, err_msg=f"state {i}, block {k}")


def test_lane_batch_derivatives_are_there():
    """The models the batch tests above run have the lane-batch form of both derivative functions (else their
    batches would go one state at a time and those tests would not reach it), and inverse dynamics' derivatives
    along the tangent by the analytic recursions."""
    from symgen.model import load_model
    from symgen.pipeline.sources import cached_model_sources

    models = [load_model(ROOT / "examples" / "models" / "quadruped.urdf", floating_base=True),
              load_model(ROOT / "examples" / "models" / "arm7.urdf")] + [hinge_group_tree(i) for i in range(4)]
    for model in models:
        c = cached_model_sources(model, derivatives=True)[0][f"{model.name}.c"]
        for kind in ("fd", "id"):
            assert f"int sg_{model.name}_{kind}_derivatives_lanes(" in c, (model.name, kind)
        # inverse dynamics along the tangent takes the analytic recursions (symgen.algorithms.rnea_derivatives),
        # which the Pinocchio and central-difference tests above therefore check, one state and batched
        assert f"static int sg_{model.name}_id_derivatives_tangent(" in c, model.name


def test_analytic_and_forward_mode_inverse_dynamics_derivatives_agree(fixed_robot):
    """A regression check between two algorithms: on a model of PIN hinges (full coordinates are the tangent), the
    forward mode (the full-coordinate directions) and the analytic recursions (the tangent) give the same
    derivatives to 1e-12 relative, one state and a batch of W + 3 (f_ext and gravity given: they take the batch)."""
    mb, _ = fixed_robot
    if mb.nq != mb.nu:
        pytest.skip("a hinge whose coordinates are not its tangent")
    rng = np.random.default_rng(11)
    n = W + 3
    q, u, ud = rng.uniform(-1, 1, (n, mb.nq)), rng.normal(size=(n, mb.nu)), rng.normal(size=(n, mb.nu))
    f_ext = {mb.body_names[-1]: rng.normal(size=(n, 6))}
    b = mb.derivative_binding()
    for one in (False, True):
        args = (q[0], u[0], ud[0]) if one else (q, u, ud)
        fe = {k: v[0] for k, v in f_ext.items()} if one else f_ext
        analytic = b.derivatives("id", *args, fe, [0.0, 0.0, -9.81])
        forward = b.derivatives("id", *args, fe, [0.0, 0.0, -9.81], tangent=False)
        for k in range(3):
            assert _rel(analytic[k], forward[k]) < 1e-12, (mb.name, one, k)


@pytest.mark.parametrize("bad", [0, W + 2])
def test_a_lane_with_singular_d_reports_its_state(parametric, bad):
    """link7 and what is welded to it without mass and inertia in one state of a batch of 2W + 3: its D is 0 in
    that lane of the lane-batch form only.  The forward dynamics derivatives raise for that state and body, as
    the one-state loop does; without that state, the batch equals the one-state calls."""
    mb = parametric
    n = 2 * W + 3
    rng = np.random.default_rng(6)
    Q, U, T = rng.normal(size=(n, mb.nq)), rng.normal(size=(n, mb.nu)), rng.normal(size=(n, mb.nu))
    outboard = ("link7", "flange", "tool")
    params = {f"{b}.{x}": np.repeat(v[None], n, axis=0) for b in outboard
              for x, v in (("mass", np.array(0.5)), ("inertia", np.diag([0.01, 0.012, 0.008])))}
    for v in params.values():
        v[bad] = 0.0
    with pytest.raises(np.linalg.LinAlgError, match=rf"body 'link7' \(hinge 'joint7'\) is not positive definite "
                                                     rf"\(state {bad}\)"):
        mb.forward_dynamics_derivatives(Q, U, T, params=params)
    good = [i for i in range(n) if i != bad]
    batch = mb.forward_dynamics_derivatives(Q[good], U[good], T[good], params={k: v[good] for k, v in params.items()})
    for j, i in enumerate(good):
        assert np.array_equal(batch[:, j], mb.forward_dynamics_derivatives(
            Q[i], U[i], T[i], params={k: v[i] for k, v in params.items()})), f"state {i}"


def test_bad_wrt_and_loops_are_clear_errors(fixed_robot):
    mb, _ = fixed_robot
    q = mb.neutral_q()
    with pytest.raises(ValueError, match="wrt must be"):
        mb.forward_dynamics_derivatives(q, np.zeros(mb.nu), np.zeros(mb.nu), wrt="theta")
    with pytest.raises(ValueError, match="parametric build"):
        mb.inverse_dynamics_derivatives(q, np.zeros(mb.nu), np.zeros(mb.nu), wrt="params")


def test_loops_are_a_clear_error():
    mb = symgen.build(ROOT / "examples" / "models" / "fourbar.yaml")
    q, z = mb.neutral_q(), np.zeros(mb.nu)
    for f in (mb.forward_dynamics_derivatives, mb.inverse_dynamics_derivatives):
        with pytest.raises(NotImplementedError, match="loop constraints.*closure"):
            f(q, z, z)
    with pytest.raises(NotImplementedError, match="loop constraints"):
        mb.step_derivatives(q, z, z, 0.01)


def test_lazy_and_compiled_derivatives(tmp_path, urdf_robots):
    """symgen.build compiles the derivative functions on the first derivative call (a second module, the same
    numbers); a package built with --derivatives has them in its module; one built without says how to get them."""
    from symgen.runtime import load_built

    path = str(urdf_robots / "arm7.urdf")
    lazy = symgen.build(path, out=tmp_path / "lazy")
    assert lazy.manifest["derivatives"] is False
    rng = np.random.default_rng(1)
    q, u, T = rng.normal(size=lazy.nq), rng.normal(size=lazy.nu), rng.normal(size=lazy.nu)
    a = lazy.forward_dynamics_derivatives(q, u, T)
    assert lazy.derivative_binding() is not lazy.binding
    built = symgen.build(path, out=tmp_path / "full", derivatives=True)
    assert built.manifest["derivatives"] is True and built.derivative_binding() is built.binding
    assert np.array_equal(a, built.forward_dynamics_derivatives(q, u, T))
    assert np.array_equal(a, load_built(tmp_path / "full" / "arm7").forward_dynamics_derivatives(q, u, T))
    with pytest.raises(NotImplementedError, match="derivatives=True"):
        load_built(tmp_path / "lazy" / "arm7").forward_dynamics_derivatives(q, u, T)
    lazy.gravity = [0.0, 0.0, -1.62]                 # the derivative module follows the model's gravity
    assert np.array_equal(lazy.forward_dynamics_derivatives(q, u, T),
                          built.forward_dynamics_derivatives(q, u, T, gravity=[0.0, 0.0, -1.62]))


def test_one_state_fast_path_equals_the_general_path(tree):
    """The compiled one-state calls (positional, plain vectors) and the general path (keywords, lists, a batch of
    one) give the same bits; the output arrays are new each call."""
    mb = tree
    rng = np.random.default_rng(12)
    q, u, x = mb.sanitize(rng.normal(size=mb.nq)), rng.normal(size=mb.nu), rng.normal(size=mb.nu)
    for f in (mb.forward_dynamics_derivatives, mb.inverse_dynamics_derivatives):
        fast, general = f(q, u, x), f(list(q), list(u), list(x), gravity=mb.gravity)
        batch = f(q[None], u[None], x[None])
        assert fast.shape == (3, mb.nu, mb.nu) and np.array_equal(fast, general) and np.array_equal(fast, batch[:, 0])
        assert f(q, u, x) is not fast
    for method in ("rk4", "euler"):
        A, B = mb.step_derivatives(q, u, x, 0.01, method)
        A2, B2 = mb.step_derivatives(list(q), u, x, dt=0.01, method=method)
        assert np.array_equal(A, A2) and np.array_equal(B, B2)
    with pytest.raises(ValueError, match="method"):
        mb.step_derivatives(q, u, x, 0.01, "midpoint")
    with pytest.raises(ValueError, match="dt > 0"):
        mb.step_derivatives(q, u, x, -0.01)
    with pytest.raises(ValueError, match="needs T"):
        mb.step_derivatives(q, u, x[:-1], 0.01)


def test_a_model_without_u_has_empty_derivatives():
    """A model whose only body is welded (nU = 0, as example-robot-data's iris_simple and quadrotor_base with a
    fixed base) compiles its derivative functions under the strict flags and returns empty matrices of the
    documented shapes."""
    from symgen.model import model_from_dict

    mb = build_model(model_from_dict({"name": "welded", "bodies": [
        {"name": "frame", "parent": "newtonian", "mass": 1.0, "inertia": [0.1, 0.2, 0.3, 0, 0, 0],
         "hinge": {"type": "LOCKED", "name": "weld"}}]}, "<welded>"), derivatives=True)
    assert (mb.nq, mb.nu) == (0, 0)
    z = np.zeros(0)
    assert np.shape(mb.forward_dynamics_derivatives(z, z, z)) == (3, 0, 0)
    assert np.shape(mb.inverse_dynamics_derivatives(z, z, z)) == (3, 0, 0)
    A, B = mb.step_derivatives(z, z, z, 1e-3)
    assert A.shape == (0, 0) and B.shape == (0, 0)
