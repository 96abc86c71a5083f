"""Closed kinematic chains (loops: cut joints BALL / LOCKED) against ``pin.constraintDynamics``.

Random trees (PIN, SLIDER, BALL_QUAT; FULL6DOF root when floating) with 2-3 loops closed at a random q_ref
(tests/pin_closed.py), a random velocity that keeps the loops closed (null space of Pinocchio's constraint
Jacobian) and random generalized forces.  ``mb.forward_dynamics`` must give Pinocchio's constrained
accelerations (mapped to symgen's U convention) to 1e-9 relative.

``test_pinocchio_oracle_self_consistent`` checks the oracle itself with Pinocchio (and symgen's tree
kinematics / inverse dynamics / mass matrix, which do not depend on the loops): the Q/U maps, the tree, that
the loops are closed, the consistent velocity, and that constraintDynamics satisfies the loops' acceleration
constraints and agrees with a dense KKT / null-space solve.  ``test_pinocchio_oracle_pin_cuts_and_redundant_loops``
does the same, Pinocchio only, for PIN cuts and dependent loop rows.

Runtime: six symgen builds (one per model, shared by the tests; 1.1-1.8 MB of C each) dominate.
"""
from __future__ import annotations

import numpy as np
import pytest

pin = pytest.importorskip("pinocchio")

import symgen  # noqa: E402
from pin_closed import (CUT_RANK, consistent_velocity, constraint_models, dense_constrained_fd,  # noqa: E402
                        from_pin_accel, from_pin_state, from_pin_tau, loop_kinematics, null_space,
                        pin_constrained_fd, pin_constraint_jacobian, pinocchio_model, random_closed_chain_dict,
                        random_q, to_pin_accel, to_pin_q, to_pin_state, to_pin_tau, u_matrix, world_poses,
                        rel, write_yaml)

#: four random models (each compiles 1-2 MB of C): 2 and 3 loops, fixed and floating bases
CASES = [(0, False), (0, True), (1, True), (2, False)]
IDS = [f"seed{s}-{'floating' if f else 'fixed'}" for s, f in CASES]
N_STATES = 3


class Case:
    def __init__(self, seed, floating, directory):
        self.seed, self.floating = seed, floating
        self.doc, self.q_ref = random_closed_chain_dict(seed, floating, n_loops=2 + seed % 2)
        self.path = write_yaml(self.doc, directory)
        self.pm, self.maps = pinocchio_model(self.doc)
        self.cms = constraint_models(self.pm, self.doc)
        self.qp = to_pin_q(self.maps, self.q_ref)
        self._mb = None

    @property
    def mb(self):
        if self._mb is None:            # one build per model and session, shared by every test
            self._mb = symgen.build(str(self.path))
        return self._mb

    def states(self):
        """N_STATES (v_pin, tau_pin) at q_ref with the loops closed at velocity level."""
        rng = np.random.default_rng(100 + self.seed)
        out = []
        for _ in range(N_STATES):
            v = consistent_velocity(self.pm, self.cms, self.qp, rng)
            out.append((v, rng.normal(size=self.pm.nv)))
        return out


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    d = tmp_path_factory.mktemp("closed_chains")
    built = {}

    def get(seed, floating):
        if (seed, floating) not in built:
            built[seed, floating] = Case(seed, floating, d)
        return built[seed, floating]
    return get


@pytest.mark.parametrize("seed,floating", CASES, ids=IDS)
def test_constrained_forward_dynamics_matches_pinocchio(cases, seed, floating):
    c = cases(seed, floating)
    mb, maps, q = c.mb, c.maps, c.q_ref
    worst = 0.0
    for v, tau in c.states():
        a_pin = pin_constrained_fd(c.pm, c.cms, c.qp, v, tau, doc=c.doc)
        u = u_matrix(maps, q) @ v
        T = from_pin_tau(maps, q, tau)
        udot_pin = from_pin_accel(maps, q, v, a_pin)
        udot = mb.forward_dynamics(np.array(q), np.array(u), np.array(T))
        worst = max(worst, rel(udot, udot_pin))
    assert worst < 1e-9, f"{c.doc['name']}: constrained forward dynamics differ from Pinocchio's by {worst:.3g}"


@pytest.mark.parametrize("seed,floating", CASES, ids=IDS)
def test_pinocchio_oracle_self_consistent(cases, seed, floating):
    c = cases(seed, floating)
    doc, pm, maps, cms, mb, q_ref = c.doc, c.pm, c.maps, c.cms, c.mb, c.q_ref
    rng = np.random.default_rng(seed)
    pd = pm.createData()

    # 1. symgen's Q/U layout is the map's (breadth-first waves), the Pinocchio tree is depth first
    assert (mb.nq, mb.nu) == (maps.nq, maps.nu) == (pm.nq, pm.nv)
    for h in maps.hinges:
        assert (mb.q_slice(h.name), mb.u_slice(h.name)) == (h.q, h.u), h.name
        assert pm.names[h.jid] == h.name
    assert all(pm.parents[j] < j for j in range(1, pm.njoints))

    # 2. the tree: frame poses (numpy FK, Pinocchio, symgen), inverse dynamics and mass matrix (symgen's tree
    #    quantities) at q_ref and random states, through the maps; the state maps invert each other
    frames = [f.name for f in pm.frames if f.type in (pin.FrameType.BODY, pin.FrameType.OP_FRAME)]
    for k in range(4):
        q = q_ref if k == 0 else random_q(doc, rng)
        qp = to_pin_q(maps, q)
        pin.framesForwardKinematics(pm, pd, qp)
        W = world_poses(doc, q)
        for name in frames:
            oM = pd.oMf[pm.getFrameId(name)].homogeneous
            assert rel(W[name], oM) < 1e-12, name
            assert rel(mb.frame_pose(q, name), oM) < 1e-10, name
        v, a = rng.normal(size=pm.nv), rng.normal(size=pm.nv)
        qs, u = from_pin_state(maps, qp, v)
        udot = from_pin_accel(maps, q, v, a)
        assert np.array_equal(qs, q)
        assert rel(np.concatenate(to_pin_state(maps, q, u)), np.r_[qp, v]) < 1e-14
        assert rel(to_pin_accel(maps, q, u, udot), a) < 1e-13
        Tsym = rng.normal(size=pm.nv)
        assert abs(Tsym @ u - to_pin_tau(maps, q, Tsym) @ v) < 1e-12 * max(1.0, abs(Tsym @ u))
        assert rel(to_pin_tau(maps, q, mb.inverse_dynamics(q, u, udot)), pin.rnea(pm, pd, qp, v, a)) < 1e-10
        Mp = pin.crba(pm, pd, qp)
        Mp = np.triu(Mp) + np.triu(Mp, 1).T
        Tm = u_matrix(maps, q)
        assert rel(Tm.T @ mb.mass_matrix(q) @ Tm, Mp) < 1e-10
        # the acceleration map (with its dT/dt term) against symgen's tree kinematics
        pin.forwardKinematics(pm, pd, qp, v, a)
        pin.updateFramePlacements(pm, pd)
        for name in frames[-4:]:
            A = pin.getFrameClassicalAcceleration(pm, pd, pm.getFrameId(name), pin.LOCAL).vector
            assert rel(mb.frame_acceleration(q, u, udot, name), np.r_[A[3:], A[:3]]) < 1e-10, name

    # 3. the loops are closed at q_ref (Pinocchio's placements), in symgen's tree kinematics too
    qp = c.qp
    k0 = loop_kinematics(pm, doc, qp)
    assert max(k0["pos"].values()) < 1e-12, k0["pos"]
    for lc in doc["loops"]:
        Ms, Mt = mb.frame_pose(q_ref, lc["source"]), mb.frame_pose(q_ref, lc["target"])
        gap = Mt[:3, 3] - Ms[:3, 3] if lc["hinge"] == "BALL" else (Mt - Ms)[:3].ravel()
        assert np.max(np.abs(gap)) < 1e-10, lc

    # 4. the constraint models: Pinocchio's Jacobian is the loops' (LOCAL axes of frame 1), independent rows
    J, Jp = k0["J"], pin_constraint_jacobian(pm, cms, qp)
    rows = sum(3 if lc["hinge"] == "BALL" else 6 for lc in doc["loops"])
    assert J.shape[0] == sum(cm.residualSize() for cm in cms) == rows
    assert null_space(J)[1] == null_space(Jp)[1] == sum(CUT_RANK[lc["hinge"]] for lc in doc["loops"]) < pm.nv
    for cm in cms:
        assert (cm.m_baumgarte_parameters.Kp, cm.m_baumgarte_parameters.Kd) == (0.0, 0.0)
        assert cm.reference_frame == pin.LOCAL
    # the loops' frame kinematics (joint Jacobians and accelerations) = Pinocchio's frame functions
    v, a = rng.normal(size=pm.nv), rng.normal(size=pm.nv)
    k1 = loop_kinematics(pm, doc, qp, v, a)
    pin.forwardKinematics(pm, pd, qp, v, a)
    pin.computeJointJacobians(pm, pd, qp)
    pin.updateFramePlacements(pm, pd)
    Jf, Af = [], []
    for lc in doc["loops"]:
        rows = slice(0, 3) if lc["hinge"] == "BALL" else slice(0, 6)
        ids = [pm.getFrameId(lc["source"]), pm.getFrameId(lc["target"])]
        Js = [pin.getFrameJacobian(pm, pd, i, pin.LOCAL_WORLD_ALIGNED) for i in ids]
        As = [pin.getFrameClassicalAcceleration(pm, pd, i, pin.LOCAL_WORLD_ALIGNED).vector for i in ids]
        Jf.append((Js[0] - Js[1])[rows])
        Af.append((As[0] - As[1])[rows])
    assert rel(k1["J"], np.vstack(Jf)) < 1e-12 and rel(k1["acc"], np.concatenate(Af)) < 1e-12

    # 5. consistent velocities: the loops' relative velocities vanish
    for v, tau in c.states():
        assert np.max(np.abs(J @ v)) < 1e-12 * max(1.0, np.max(np.abs(v)))
        pin.forwardKinematics(pm, pd, qp, v)
        pin.updateFramePlacements(pm, pd)
        for lc in doc["loops"]:
            Vs, Vt = (pin.getFrameVelocity(pm, pd, pm.getFrameId(lc[k]), pin.LOCAL_WORLD_ALIGNED).vector
                      for k in ("source", "target"))
            dv = (Vs - Vt)[:3] if lc["hinge"] == "BALL" else Vs - Vt
            assert np.max(np.abs(dv)) < 1e-12 * max(1.0, np.max(np.abs(v)))
        # 6. constraintDynamics: acceleration constraints (world and Pinocchio's LOCAL rows) and the dense solves
        rep = {}
        a_pin = pin_constrained_fd(pm, cms, qp, v, tau, doc=doc, report=rep)
        assert rep["residual"] < 1e-9 and rep["residual_local"] < 1e-9, rep
        assert rep["err_kkt"] is not None and rep["err_kkt"] < 1e-9 and rep["err_null"] < 1e-9, rep
        # the constrained accelerations keep the loops closed in symgen's tree kinematics too
        u = u_matrix(maps, q_ref) @ v
        udot = from_pin_accel(maps, q_ref, v, a_pin)
        for lc in doc["loops"]:
            Rs, Rt = mb.frame_pose(q_ref, lc["source"])[:3, :3], mb.frame_pose(q_ref, lc["target"])[:3, :3]
            As, At = (mb.frame_acceleration(q_ref, u, udot, lc[k]) for k in ("source", "target"))
            dA = np.r_[Rs @ As[:3] - Rt @ At[:3], Rs @ As[3:] - Rt @ At[3:]]
            dA = dA[3:] if lc["hinge"] == "BALL" else dA
            assert np.max(np.abs(dA)) < 1e-9 * max(1.0, np.max(np.abs(udot))), (lc, dA)


@pytest.mark.parametrize("seed", [3, 4])
def test_pinocchio_oracle_pin_cuts_and_redundant_loops(seed):
    """PIN cuts (two CONTACT_3D points on the axis: 6 rows of rank 5) and loops drawn without the independence
    retry (dependent rows): constraintDynamics still satisfies the loops and agrees with the null-space solve
    (the KKT matrix is singular there).  Pinocchio only (the loader accepts the document)."""
    from symgen.model.load import model_from_dict

    for kw in ({"cut_types": ("PIN", "BALL")}, {"cut_types": ("PIN", "LOCKED"), "n_bodies": 9, "independent": False}):
        doc, q_ref = random_closed_chain_dict(seed, seed % 2 == 1, **kw)
        model_from_dict(doc)
        pm, maps = pinocchio_model(doc)
        cms = constraint_models(pm, doc)
        qp = to_pin_q(maps, q_ref)
        k0 = loop_kinematics(pm, doc, qp)
        assert max(k0["pos"].values()) < 1e-12, k0["pos"]
        pins = [lc for lc in doc["loops"] if lc["hinge"] == "PIN"]
        assert pins
        for lc in pins:             # each PIN cut alone: 6 rows, rank 5
            one = {**doc, "loops": [lc]}
            Jl = loop_kinematics(pm, one, qp)["J"]
            assert Jl.shape[0] == 6 and null_space(Jl)[1] == 5
            assert null_space(pin_constraint_jacobian(pm, constraint_models(pm, one), qp))[1] == 5
        J = k0["J"]
        assert null_space(J)[1] < J.shape[0]            # dependent rows
        rng = np.random.default_rng(seed)
        for _ in range(2):
            v = consistent_velocity(pm, cms, qp, rng)
            assert np.max(np.abs(J @ v)) < 1e-12 * max(1.0, np.max(np.abs(v)))
            tau = rng.normal(size=pm.nv)
            rep = {}
            a = pin_constrained_fd(pm, cms, qp, v, tau, doc=doc, report=rep)
            assert rep["err_kkt"] is None and rep["err_null"] < 1e-9 and rep["residual"] < 1e-9, rep
            _, a_null = dense_constrained_fd(pm, qp, v, tau, J, loop_kinematics(pm, doc, qp, v)["acc"])
            assert rel(a, a_null) < 1e-9


@pytest.mark.parametrize("seed,floating", CASES[:2], ids=IDS[:2])
def test_closed_chain_inverse_dynamics_matches_pinocchio(cases, seed, floating):
    """Closed-chain inverse dynamics (issue 25, item 6) against Pinocchio: actuate a set A of hinges for which
    ``[S_A, G_c^T]`` has full column rank (the solution is unique), drive Pinocchio's constraintDynamics with
    random T on A only, and ask ``mb.inverse_dynamics(..., actuated=A)`` for the T of that motion: it must be
    the T that produced it (1e-9)."""
    c = cases(seed, floating)
    mb, maps, q = c.mb, c.maps, c.q_ref
    G, _ = mb.constraint_jacobian(np.array(q))
    rng = np.random.default_rng(300 + seed)
    cols, chosen = [G.T], []
    for h in maps.hinges:
        s = mb.u_slice(h.name)
        if s.stop == s.start:
            continue
        S = np.eye(mb.nu)[:, s]
        trial = np.hstack(cols + [S])
        if np.linalg.matrix_rank(trial, tol=1e-9) == np.linalg.matrix_rank(np.hstack(cols), tol=1e-9) + S.shape[1]:
            cols.append(S)
            chosen.append(h.name)
    assert chosen and np.linalg.matrix_rank(np.hstack(cols), tol=1e-9) == np.hstack(cols).shape[1]
    for v, _ in c.states():
        T = np.zeros(mb.nu)
        for h in chosen:
            T[mb.u_slice(h)] = rng.normal(size=mb.u_slice(h).stop - mb.u_slice(h).start)
        a_pin = pin_constrained_fd(c.pm, c.cms, c.qp, v, to_pin_tau(maps, q, T), doc=c.doc)
        u = u_matrix(maps, q) @ v
        udot = from_pin_accel(maps, q, v, a_pin)
        T_id, lam = mb.inverse_dynamics(np.array(q), u, udot, actuated=chosen)
        assert rel(T_id, T) < 1e-9, f"{c.doc['name']}: closed-chain inverse dynamics {rel(T_id, T):.3g} off"
