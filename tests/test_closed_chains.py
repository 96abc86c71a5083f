"""Closed chains (loop constraints, tree-augmented dynamics, constraint kinematics) against oracles nobody
here wrote in symgen's C:

* a four-bar against ``sympy.physics.mechanics`` (KanesMethod with holonomic constraints,
  tests/fourbar_reference.py) over 10 s: crank angle, energy, constraint drift with and without Baumgarte;
* every cut-joint type the TA method handles (PIN, UJOINT, CUSTOM, BALL, LOCKED) against a dense KKT solve
  ``[M G^T; G 0][Udot; -lam] = [T - C; -gamma]`` whose G and gamma are finite differences of the loops'
  constrained pose and velocity errors (not the generated Jacobian);
* identities: the constrained acceleration error after TA, the velocity error after ``project``, closed
  inverse dynamics fed back, the constraint forces as external forces on the cut tree, the power of a
  cut-joint torque.

Pinocchio's ``constraintDynamics`` is the oracle of tests/test_closed_chains_pinocchio.py.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

import symgen
from closed_factory import random_closed_chain
from fourbar_reference import assemble, consistent_speeds, energy, load_fourbar, simulate_reference
from symgen.runtime.loops import LoopError

ROOT = Path(__file__).resolve().parents[1]
FOURBAR = ROOT / "examples" / "models" / "fourbar.yaml"


@pytest.fixture(scope="session")
def fourbar():
    return symgen.build(FOURBAR)


@pytest.fixture(scope="session")
def fourbar_ball(tmp_path_factory):
    """The four-bar closed by a BALL cut: planar, so one of its three constrained directions (z) is always
    satisfied, a redundant constraint."""
    doc = yaml.safe_load(FOURBAR.read_text())
    doc["name"] = "fourbar_ball"
    doc["loops"][0]["hinge"] = "BALL"
    p = tmp_path_factory.mktemp("fb") / "fourbar_ball.yaml"
    p.write_text(yaml.safe_dump(doc))
    return symgen.build(p)


def order(mb):
    """symgen's Q (= U) index of the reference's (crank, coupler, rocker)."""
    return [mb.q_slice(h).start for h in ("crank", "coupler", "rocker")]


def closed_state(mb, q1, q1dot):
    """A closed four-bar state from the reference's geometry (not from project), in symgen's order."""
    P = load_fourbar(FOURBAR)
    qr = np.array(assemble(P, q1))
    ur = np.array(consistent_speeds(P, qr, q1dot))
    q, u = np.zeros(3), np.zeros(3)
    q[order(mb)], u[order(mb)] = qr, ur
    return q, u


def test_fourbar_matches_sympy_mechanics(fourbar):
    """10 s released from rest at 60 degrees, RK4 at dt = 1e-3 with Baumgarte: the crank angle agrees with
    the KanesMethod reference to 1e-6, the constrained pose error stays below 1e-6, energy to 1e-5
    relative; without Baumgarte the error drifts visibly (and much more)."""
    P = load_fourbar(FOURBAR)
    q0, u0 = closed_state(fourbar, np.pi / 3, 0.0)
    ix = order(fourbar)
    t = np.arange(0.0, 10.0 + 1e-9, 1e-3)
    Qr, Ur = simulate_reference(P, q0[ix], u0[ix], t)
    traj = fourbar.simulate(q0, u0, (0.0, 10.0), 1e-3, baumgarte=(20.0, 1.0))
    ts, Q, U = traj
    assert np.max(np.abs(Q[:, ix[0]] - Qr[:, 0])) < 1e-6
    assert np.max(traj.drift) < 1e-6
    E = np.array([energy(P, q[ix], u[ix]) for q, u in zip(Q[::100], U[::100])])
    scale = max(abs(E[0]), np.max(np.abs([energy(P, q, u) - energy(P, q, 0 * u) for q, u in zip(Qr, Ur)])))
    assert np.max(np.abs(E - E[0])) / scale < 1e-5
    free = fourbar.simulate(q0, u0, (0.0, 10.0), 1e-3)
    assert np.max(free.drift) > 100 * np.max(traj.drift)   # measured: 3.0e-7 vs 3.1e-10
    assert np.max(free.drift) > 1e-7            # visible drift without stabilization
    projected = fourbar.simulate(q0, u0, (0.0, 2.0), 1e-3, project=True)
    assert np.max(projected.drift) < 1e-12


def test_redundant_ball_cut_reports_rank_and_agrees_with_pin_cut(fourbar, fourbar_ball):
    """A planar four-bar closed by a BALL cut has one always-satisfied direction: rank 2 of 3, and the same
    motion as the PIN cut (rank 2 of 5)."""
    rng = np.random.default_rng(1)
    for q1 in (0.3, 1.2, 2.5):
        q, u = closed_state(fourbar, q1, rng.normal())
        T = rng.normal(size=3)
        a = fourbar.ta_forward_dynamics(q, u, T)
        b = fourbar_ball.ta_forward_dynamics(q, u, T)
        assert a["rank"] == 2 and b["rank"] == 2
        assert np.max(np.abs(a["udot"] - b["udot"])) < 1e-10 * max(1.0, np.max(np.abs(a["udot"])))


def fd_constraint_terms(mb, q, u, h=1e-6):
    """G and gamma by central differences of the loops' constrained pose and velocity errors (independent
    of the generated loop_jacobian): G[:, j] = d(OC^T pose_error)/d(U_j), gamma = d/dt (OC^T vel_error)
    along Q(t) = Q + t N(Q) U with U held."""
    def e(q):
        return np.concatenate([c.residuals(q)["pose"] for c in mb.loops])

    def ed(q, u):
        return np.concatenate([c.residuals(q, u)["vel"] for c in mb.loops])
    G = np.zeros((e(q).size, mb.nu))
    for j in range(mb.nu):
        d = np.eye(mb.nu)[j]
        G[:, j] = (e(mb.sanitize(q + h * mb.qdot(q, d))) - e(mb.sanitize(q - h * mb.qdot(q, d)))) / (2 * h)
    qd = mb.qdot(q, u)
    gamma = (ed(q + h * qd, u) - ed(q - h * qd, u)) / (2 * h)
    return G, gamma


CUSTOM = {"type": "CUSTOM", "subhinges": ["PIN", "LINEAR"], "axes": [[0, 0, 1], [1, 0, 0]]}
CASES = [("PIN+UJOINT", ["PIN", "UJOINT"], False), ("CUSTOM+BALL", [CUSTOM, "BALL"], True),
         ("LOCKED+PIN", ["LOCKED", "PIN"], True), ("SLIDER+UJOINT", ["SLIDER", "UJOINT"], False)]


@pytest.fixture(scope="module", params=CASES, ids=[c[0] for c in CASES])
def closed_model(request, tmp_path_factory):
    _, cuts, floating = request.param
    doc, q_ref, path = random_closed_chain(tmp_path_factory.mktemp("closed"), 5 + len(request.param[0]), cuts,
                                           floating=floating, n_bodies=5)
    mb = symgen.build(path)
    for c in mb.loops:      # closed at q_ref by the factory's numpy kinematics: so in the model's own
        assert np.max(np.abs(c.residuals(q_ref)["pose"])) < 1e-12, (c.name, c.residuals(q_ref)["pose"])
    return mb, q_ref


def consistent_velocity(G, rng):
    _, s, Vt = np.linalg.svd(G)
    r = int(np.sum(s > 1e-9 * max(1.0, s[0] if s.size else 1.0)))
    N = Vt[r:].T
    return N @ rng.normal(size=N.shape[1])


def test_ta_matches_dense_reference(closed_model):
    """TA forward dynamics = the dense KKT solve with finite-difference G and gamma (1e-6: finite
    differences), and = the dense solve with the generated G_c, gamma (1e-9: a regression check of the
    O(n) compliance, solve and correction)."""
    mb, q = closed_model
    rng = np.random.default_rng(7)
    for _ in range(3):
        Gfd, _ = fd_constraint_terms(mb, q, np.zeros(mb.nu))
        u = consistent_velocity(Gfd, rng)
        assert max(np.max(np.abs(c.vel_error(q, u))) for c in mb.loops) < 1e-9
        Gfd, gfd = fd_constraint_terms(mb, q, u)
        T = rng.normal(size=mb.nu)
        res = mb.ta_forward_dynamics(q, u, T)
        M, C = mb.mass_matrix(q), mb.inverse_dynamics(q, u, np.zeros(mb.nu))
        for G, g, tol in ((Gfd, gfd, 1e-6), mb.constraint_jacobian(q, u) + (1e-9,)):
            n = G.shape[0]
            K = np.block([[M, G.T], [G, np.zeros((n, n))]])
            ref = np.linalg.lstsq(K, np.concatenate([T - C, -g]), rcond=1e-10)[0][:mb.nu]
            assert np.max(np.abs(res["udot"] - ref)) < tol * max(1.0, np.max(np.abs(ref)))
        assert res["rank"] == np.linalg.matrix_rank(Gfd, tol=1e-6)
        # the constrained acceleration error vanishes; lambda closes the equations of motion
        for c in mb.loops:
            assert np.max(np.abs(c.residuals(q, u, res["udot"])["accel"])) < 1e-10 * max(1.0, np.max(np.abs(res["udot"])))
        G, _ = mb.constraint_jacobian(q, u)
        assert np.allclose(M @ res["udot"] + C - T, G.T @ res["lambda"], atol=1e-9 * max(1.0, np.max(np.abs(T - C))))
        # ... and so do the node forces applied to the cut tree as external forces (Karana's sign: f_T acts
        # on the target node, -f_T on the source)
        f_ext = {}
        for c, fT in zip(mb.loops, res["f_target"]):
            XS, XT = mb.frame_pose(q, c.source), mb.frame_pose(q, c.target)
            R = (np.linalg.solve(XS, XT))[:3, :3]
            l = (np.linalg.solve(XS, XT))[:3, 3]
            F = R @ fT[3:]
            fS = -np.concatenate([R @ fT[:3] + np.cross(l, F), F])
            for fr, f in ((c.target, fT), (c.source, fS)):
                f_ext[fr] = f_ext.get(fr, 0) + f
        tree = mb.forward_dynamics(q, u, T, f_ext=f_ext, tree=True)
        assert np.max(np.abs(tree - res["udot"])) < 1e-9 * max(1.0, np.max(np.abs(tree)))


def test_ta_batches_on_lanes_equal_one_state_calls(closed_model):
    """A batch of TA dynamics runs full blocks of the lane width on lanes, the cut joints' Q fits (UJOINT, CUSTOM:
    sg_cut_fit_q) and the loop solve one lane at a time: each state equals its one-state call bit for bit, with
    Baumgarte gains, N not a multiple of the width."""
    from symgen.codegen.lanes import lane_width

    from symgen.model import load_model
    from symgen.pipeline.sources import cached_model_sources

    mb, q_ref = closed_model
    files, _ = cached_model_sources(load_model(mb.manifest["source"]))
    assert f"sg_{mb.name}_ta_lanes(" in files[f"{mb.name}.c"]            # the lane form is there
    rng = np.random.default_rng(8)
    n = 2 * lane_width() + 3
    Q = mb.sanitize(q_ref + 0.05 * rng.normal(size=(n, mb.nq)))
    U, T = rng.normal(size=(n, mb.nu)), rng.normal(size=(n, mb.nu))
    got = mb.ta_forward_dynamics(Q, U, T, baumgarte=(5.0, 1.0))
    for i in range(n):
        one = mb.ta_forward_dynamics(Q[i], U[i], T[i], baumgarte=(5.0, 1.0))
        for k in ("udot", "lambda", "rank"):
            np.testing.assert_array_equal(got[k][i], one[k], err_msg=f"{mb.name} TA {k}, state {i}")


def test_project_closes_loops_and_velocities(closed_model):
    mb, q_ref = closed_model
    rng = np.random.default_rng(3)
    q0 = mb.sanitize(q_ref + 0.05 * rng.normal(size=mb.nq))
    q, u = mb.project(q0, rng.normal(size=mb.nu))
    for c in mb.loops:
        assert np.max(np.abs(c.residuals(q)["pose"])) < 1e-12
        assert np.max(np.abs(c.vel_error(q, u))) < 1e-12 * max(1.0, np.max(np.abs(u)))


def test_closed_inverse_dynamics_round_trip(fourbar):
    """T, lambda of a consistent motion with only the crank actuated, fed back to forward dynamics,
    reproduce Udot."""
    rng = np.random.default_rng(5)
    for q1 in (0.4, 2.0):
        q, u = closed_state(fourbar, q1, rng.normal())
        Tc = np.zeros(3)
        Tc[fourbar.u_slice("crank")] = rng.normal()
        udot_ref = fourbar.forward_dynamics(q, u, Tc)
        T, lam = fourbar.inverse_dynamics(q, u, udot_ref, actuated=["crank"])
        assert np.count_nonzero(T) == 1 and T[fourbar.u_slice("crank")][0] != 0.0 and set(lam) == {"closure"}
        udot = fourbar.forward_dynamics(q, u, T)
        assert np.max(np.abs(udot - udot_ref)) < 1e-9 * max(1.0, np.max(np.abs(udot_ref)))


def test_cut_joint_actuation_matches_crank(fourbar):
    """The four-bar driven by its cut joint (``actuated=["closure"]``) instead of the crank: the cut joint's
    generalized force, as node forces (``sp_external_force_from_t``), reproduces Udot through TA forward
    dynamics, and it delivers the crank's power, T_cut U_h = T_crank u_crank (the constraint forces do no
    work on a consistent velocity)."""
    rng = np.random.default_rng(8)
    c = fourbar.loop("closure")
    for q1 in (0.4, 2.0):
        q, u = closed_state(fourbar, q1, rng.normal())
        udot = fourbar.forward_dynamics(q, u, rng.normal(size=3))
        T_crank, _ = fourbar.inverse_dynamics(q, u, udot, actuated=["crank"])
        res = fourbar.inverse_dynamics(q, u, udot, actuated=["closure"])
        T, lam = res
        assert not np.any(T) and set(res.cut) == {"closure"} and set(lam) == {"closure"}
        back = fourbar.forward_dynamics(q, u, T, f_ext=c.sp_external_force_from_t(res.cut["closure"], q=q,
                                                                                    as_f_ext=True))
        assert np.max(np.abs(back - udot)) < 1e-9 * max(1.0, np.max(np.abs(udot)))
        p_crank = float(T_crank @ u)
        p_cut = float(res.cut["closure"] @ c.residuals(q, u)["u"])
        assert abs(p_cut - p_crank) < 1e-10 * max(1.0, abs(p_crank))
    with pytest.raises(KeyError, match="neither a hinge nor a loop"):
        fourbar.inverse_dynamics(q, u, udot, actuated=["nowhere"])


def test_project_with_fixed_crank(fourbar):
    """Drive the crank, solve the rest: the crank keeps its Q and U; the result matches the reference's
    closed-form assembly (same branch from a nearby guess)."""
    q_ref, u_ref = closed_state(fourbar, 0.9, 1.3)
    c = fourbar.q_slice("crank").start
    u0 = np.zeros(3)
    u0[c] = 1.3
    q, u = fourbar.project(q_ref + 0.05 * (np.arange(3) != c) * np.array([1.0, -0.8, 0.6]), u0, fixed=["crank"])
    assert q[c] == q_ref[c] and u[c] == 1.3
    assert np.max(np.abs(q - q_ref)) < 1e-10 and np.max(np.abs(u - u_ref)) < 1e-10


def test_unreachable_loop_raises(tmp_path):
    doc = yaml.safe_load(FOURBAR.read_text())
    doc["name"] = "fourbar_far"
    doc["bodies"][2]["frames"][0]["xyz"] = [5.0, 0.0, 0.0]     # a rocker 5 m long cannot meet the coupler
    p = tmp_path / "far.yaml"
    p.write_text(yaml.safe_dump(doc))
    mb = symgen.build(p)
    with pytest.raises(LoopError, match=r"loop 'closure'.*does not close.*crank held"):
        mb.project(np.full(3, 0.5), fixed=["crank"])


def test_cut_joint_torque_power(fourbar):
    """sp_external_force_from_t: the node forces of a cut-joint torque tau deliver power tau * U_h (the cut
    joint's rate) for any consistent velocity (M and the Jacobians of the tree do the bookkeeping)."""
    rng = np.random.default_rng(2)
    c = fourbar.loop("closure")
    for q1 in (0.3, 1.7):
        q, u = closed_state(fourbar, q1, rng.normal())
        tau = np.array([rng.normal()])
        F = c.sp_external_force_from_t(tau, q=q, as_f_ext=True)
        gen = fourbar.inverse_dynamics(q, u, np.zeros(3)) - fourbar.inverse_dynamics(q, u, np.zeros(3), f_ext=F)
        assert abs(u @ gen - tau[0] * c.residuals(q, u)["u"][0]) < 1e-12 * max(1.0, abs(u @ gen))


def test_loop_errors_are_batched_and_shaped(fourbar):
    q, u = closed_state(fourbar, 0.7, 0.5)
    c = fourbar.loop("closure")
    Q, U = np.stack([q, q + 0.1]), np.stack([u, u])
    assert c.pose_error(Q).shape == (2, 6) and c.vel_error(Q, U).shape == (2, 6)
    assert np.allclose(c.pose_error(Q)[1], c.pose_error(q + 0.1), atol=1e-15)
    assert fourbar.forward_dynamics(Q, U, np.zeros((2, 3))).shape == (2, 3)
    # the one-state fast path (p assembled in C) gives the batch's numbers, with and without Baumgarte
    T = np.array([0.3, -0.1, 0.2])
    for bg in (None, (10.0, 0.7)):
        one = fourbar.forward_dynamics(q + 0.01, u, T, baumgarte=bg)
        assert np.array_equal(one, fourbar.forward_dynamics(np.stack([q + 0.01]), np.stack([u]), np.stack([T]), baumgarte=bg)[0])
    assert not np.array_equal(fourbar.forward_dynamics(q + 0.01, u, T), fourbar.forward_dynamics(q + 0.01, u, T, baumgarte=(10.0, 0.7)))
    assert set(fourbar.constraint_forces(q, u, np.zeros(3))) == {"closure"}


def test_loop_model_errors(tmp_path):
    doc = yaml.safe_load(FOURBAR.read_text())
    doc["loops"][0]["target"] = "coupler"
    p = tmp_path / "same.yaml"
    p.write_text(yaml.safe_dump(doc))
    with pytest.raises(symgen.model.ModelError, match="same body"):
        symgen.build(p)


PLATFORM = """
name: platform_loop
gravity: [0, 0, -9.81]
bodies:
  - {name: b0, parent: newtonian, mass: 1.0, com: [0.2, 0, 0], inertia: [0.01, 0.02, 0.02, 0, 0, 0],
     hinge: {type: PIN, name: h0, axis: [0, 0, 1]}}
  - {name: b1, parent: b0, mass: 0.8, com: [0.15, 0.02, 0], inertia: [0.01, 0.015, 0.02, 0, 0, 0],
     hinge: {type: PIN, name: h1, axis: [0, 1, 0]}, onode: {xyz: [0.4, 0, 0]},
     frames: [{name: tip, xyz: [0.3, 0.05, 0], rpy: [0.2, 0, 0.1]}]}
  - {name: plat, parent: newtonian, mass: 2.0, com: [0.05, 0, 0.1], inertia: [0.05, 0.04, 0.03, 0, 0, 0],
     hinge: {type: FULL6DOF, name: free}, frames: [{name: socket, xyz: [0.1, 0.0, -0.05]}]}
loops:
  - {name: ball, source: tip, target: socket, hinge: BALL}
"""


def test_to_physical_hinge_keeps_the_motion(tmp_path):
    """A floating platform hung on an arm by a BALL cut moves as the tree where the cut is a real BALL hinge
    (Karana's toPhysicalHinge): same accelerations of the arm's hinges at corresponding states."""
    from symgen.model import ModelError, load_model, to_physical_hinge

    p = tmp_path / "platform_loop.yaml"
    p.write_text(PLATFORM)
    model = load_model(p)
    with pytest.raises(ModelError, match="base body"):
        to_physical_hinge(model, "ball", reverse=True)          # the arm's tip body is not a base body
    closed = symgen.build(model)
    tree_model = to_physical_hinge(model, "ball")
    assert not tree_model.loops and tree_model.body("plat").parent == "b1"
    tree = symgen.build(tree_model)
    rng = np.random.default_rng(4)
    for _ in range(3):
        qt = tree.sanitize(rng.uniform(-1, 1, tree.nq))
        ut = rng.normal(size=tree.nu)
        # the closed model's state: the arm's hinges as in the tree, the platform where the tree puts it
        q, u = np.zeros(closed.nq), np.zeros(closed.nu)
        for h in ("h0", "h1"):
            q[closed.q_slice(h)], u[closed.u_slice(h)] = qt[tree.q_slice(h)], ut[tree.u_slice(h)]
        X = tree.frame_pose(qt, "plat")
        from symgen.numeric import np_matrix_to_quat

        q[closed.q_slice("free")] = np.concatenate([X[:3, 3], np_matrix_to_quat(X[:3, :3])])
        q, u = closed.project(q, u, fixed=["h0", "h1"])
        c = closed.loop("ball")
        assert np.max(np.abs(c.pose_error(q))) < 1e-12
        T = rng.normal(size=closed.nu)
        Tt = np.zeros(tree.nu)
        for h in ("h0", "h1"):
            Tt[tree.u_slice(h)] = T[closed.u_slice(h)]
        T[closed.u_slice("free")] = 0.0
        udot = closed.forward_dynamics(q, u, T)
        qt[tree.q_slice("ball")], ut = c.cut_q(q), np.zeros(tree.nu)
        for h in ("h0", "h1"):
            ut[tree.u_slice(h)] = u[closed.u_slice(h)]
        ut[tree.u_slice("ball")] = c.residuals(q, u)["u"]
        udot_t = tree.forward_dynamics(qt, ut, Tt)
        for h in ("h0", "h1"):
            assert np.allclose(udot[closed.u_slice(h)], udot_t[tree.u_slice(h)], rtol=0, atol=1e-9 * max(1.0, np.max(np.abs(udot_t))))
