"""Flexible bodies (``flex:``: lumped-mass nodes and assumed modes), against oracles nobody here wrote:
``sympy.physics.mechanics`` (Kane's method with the nodes as particles at r_B + R_B (s_i + Phi_i eta)), the
mass matrix rebuilt from the nodes' Jacobians by central differences, the kinetic energy of the nodes and
bodies, conservation laws, the modal frequency, and the rigid model the flexible one reduces to."""
import copy
import math

import numpy as np
import pytest

import symgen
from symgen.model import ModelError, model_from_dict
from symgen.pipeline.package import build_model

from helpers import assert_close

# a hub turning about z on the ground and a flexible panel on a PIN about y; the modes are not mass-orthogonal
# (the dynamics use the full modal mass matrix; the loader warns)
KANE_FLEX = {
    "name": "flexkane", "gravity": [0, 0, -9.81],
    "bodies": [
        {"name": "hub", "parent": "newtonian", "mass": 2.0, "com": [0.1, 0.05, 0.0],
         "inertia": [[0.30, 0.02, 0.01], [0.02, 0.25, 0.03], [0.01, 0.03, 0.20]],
         "hinge": {"type": "PIN", "name": "hub_pin", "axis": [0, 0, 1]}},
        {"name": "panel", "parent": "hub", "mass": 1.0, "com": [0.5, 0.0, 0.02],
         "inertia": [[0.05, 0.0, 0.01], [0.0, 0.10, 0.0], [0.01, 0.0, 0.09]],
         "hinge": {"type": "PIN", "name": "panel_pin", "axis": [0, 1, 0]}, "onode": {"xyz": [0.3, 0, 0.1]},
         "flex": {"nodes": [{"name": "mid", "pos": [0.5, 0.0, 0.0], "mass": 0.3},
                            {"name": "tip", "pos": [1.0, 0.1, 0.0], "mass": 0.2},
                            {"name": "corner", "pos": [1.0, -0.2, 0.05], "mass": 0.15}],
                  "modes": [{"frequency": 1.5, "damping": 0.01,
                             "shape": {"mid": [0, 0, 0.4], "tip": [0, 0.1, 1.0], "corner": [0.05, 0, 0.9]}},
                            {"frequency": 4.0, "damping": 0.02,
                             "shape": {"mid": [0.1, 0, -0.5], "tip": [0, 0, 0.6], "corner": [0, 0.2, 0.3]}}]}},
    ],
}

# a free-floating flexible bus with a rigid PIN appendage on it, no gravity, no damping
FREE_FLEX = {
    "name": "flexfree", "gravity": [0, 0, 0],
    "bodies": [
        {"name": "bus", "parent": "newtonian", "mass": 20.0, "com": [0.02, -0.01, 0.03],
         "inertia": [[3.0, 0.1, 0.0], [0.1, 2.5, 0.05], [0.0, 0.05, 2.0]],
         "hinge": {"type": "FULL6DOF", "name": "bus_free"},
         "flex": {"nodes": [{"name": "wing_a", "pos": [1.2, 0.0, 0.0], "mass": 0.8},
                            {"name": "wing_b", "pos": [-1.2, 0.1, 0.0], "mass": 0.8},
                            {"name": "mast", "pos": [0.0, 0.0, 1.0], "mass": 0.4}],
                  "modes": [{"frequency": 0.8, "shape": {"wing_a": [0, 0, 1.0], "wing_b": [0, 0, 1.0]}},
                            {"frequency": 2.1, "shape": {"wing_a": [0, 0, 1.0], "wing_b": [0, 0, -1.0],
                                                         "mast": [0.3, 0, 0]}}]}},
        {"name": "arm", "parent": "bus", "mass": 1.5, "com": [0.3, 0, 0],
         "inertia": [0.01, 0.05, 0.05, 0, 0, 0],
         "hinge": {"type": "PIN", "name": "arm_pin", "axis": [0, 0, 1]}, "onode": {"xyz": [0.2, 0.5, 0.0]}},
    ],
}

# a chain of two flexible links (the second hangs from the first's frame): modal columns walk up a flexible ancestor
CHAIN_FLEX = {
    "name": "flexchain", "gravity": [0, 0, -9.81],
    "bodies": [
        {"name": "link1", "parent": "newtonian", "mass": 1.0, "com": [0.4, 0, 0], "inertia": [0.01, 0.05, 0.05, 0, 0, 0],
         "hinge": {"type": "PIN", "name": "j1", "axis": [0, 0, 1]},
         "flex": {"nodes": [{"name": "l1_mid", "pos": [0.4, 0, 0], "mass": 0.3},
                            {"name": "l1_end", "pos": [0.8, 0, 0.05], "mass": 0.2}],
                  "modes": [{"frequency": 3.0, "damping": 0.02, "shape": {"l1_mid": [0, 0.3, 0.1], "l1_end": [0, 1.0, 0]}}]}},
        {"name": "link2", "parent": "link1", "mass": 0.6, "com": [0.3, 0, 0], "inertia": [0.005, 0.02, 0.02, 0, 0, 0],
         "hinge": {"type": "PIN", "name": "j2", "axis": [0, 1, 0]}, "onode": {"xyz": [0.8, 0, 0]},
         "flex": {"nodes": [{"name": "l2_end", "pos": [0.6, 0, 0], "mass": 0.25},
                            {"name": "l2_side", "pos": [0.5, 0.1, 0], "mass": 0.1}],
                  "modes": [{"frequency": 5.0, "shape": {"l2_end": [0, 0, 1.0], "l2_side": [0, 0, 0.7]}},
                            {"frequency": 9.0, "shape": {"l2_end": [0, 0.4, 0], "l2_side": [0.2, 0, -0.5]}}]}},
    ],
}

# a flexible beam clamped to the ground: one mode of 2 Hz
CLAMPED = {
    "name": "clamped", "gravity": [0, 0, 0],
    "bodies": [{"name": "beam", "parent": "newtonian", "mass": 1.0, "inertia": [0.1, 0.1, 0.1, 0, 0, 0],
                "hinge": {"type": "LOCKED"},
                "flex": {"nodes": [{"name": "tip", "pos": [1.0, 0, 0], "mass": 0.5},
                                   {"name": "mid", "pos": [0.5, 0, 0], "mass": 0.5}],
                         "modes": [{"frequency": 2.0, "shape": {"tip": [0, 0, 1.0], "mid": [0, 0, 0.35]}}]}}],
}


@pytest.fixture(scope="module")
def kane_flex():
    return build_model(model_from_dict(KANE_FLEX, "<flexkane>"))


@pytest.fixture(scope="module")
def free_flex():
    return build_model(model_from_dict(FREE_FLEX, "<flexfree>"))


def _modal_constants(spec):
    """(k, c) per mode from the issue's formulas, computed here: m_k = sum m_i |Phi_ik|^2."""
    nodes = {n["name"]: n for n in spec["flex"]["nodes"]}
    k, c = [], []
    for md in spec["flex"]["modes"]:
        mk = sum(nodes[n]["mass"] * float(np.dot(v, v)) for n, v in md["shape"].items())
        w = 2 * math.pi * md["frequency"]
        k.append(w * w * mk)
        c.append(2 * md.get("damping", 0.0) * w * mk)
    return np.array(k), np.array(c)


def _nodes(spec):
    """(name, mass, s, Phi (3 x n)) of a flexible body spec's nodes."""
    out = []
    for nd in spec["flex"]["nodes"]:
        Phi = np.array([md["shape"].get(nd["name"], [0, 0, 0]) for md in spec["flex"]["modes"]], float).T
        out.append((nd["name"], nd["mass"], np.array(nd["pos"], float), Phi))
    return out


def test_forward_dynamics_match_kanes_method_with_nodes_as_particles(kane_flex):
    """Kane's method (sympy.physics.mechanics) on the hub and panel as rigid bodies and the nodes as particles at
    r_B + R_B (s_i + Phi_i eta), with the modal forces -k eta - c etadot added to the modes' generalized forces:
    M, the forcing and FD agree to 1e-9; ID(FD(T)) = T to 1e-10."""
    import sympy as sp
    from sympy.physics.mechanics import (KanesMethod, Particle, Point, ReferenceFrame, RigidBody, dynamicsymbols,
                                         inertia)

    q = dynamicsymbols("q1:5")
    u = dynamicsymbols("u1:5")
    N = ReferenceFrame("N")
    A = N.orientnew("A", "Axis", (q[0], N.z))
    B = A.orientnew("B", "Axis", (q[1], A.y))
    A.set_ang_vel(N, u[0] * N.z)
    B.set_ang_vel(A, u[1] * A.y)
    O = Point("O")
    O.set_vel(N, 0)
    Bo = O.locatenew("Bo", sp.Rational(3, 10) * A.x + sp.Rational(1, 10) * A.z)
    hub, panel = KANE_FLEX["bodies"]
    vec = lambda F, x: sum((sp.nsimplify(c) * e for c, e in zip(x, (F.x, F.y, F.z))), 0 * F.x)  # noqa: E731
    parts, loads = [], []
    for spec, F, origin in ((hub, A, O), (panel, B, Bo)):
        cm = origin.locatenew(spec["name"] + "_cm", vec(F, spec["com"]))
        J = spec["inertia"]
        parts.append(RigidBody(spec["name"], cm, F, spec["mass"],
                               (inertia(F, J[0][0], J[1][1], J[2][2], J[0][1], J[1][2], J[0][2]), cm)))
        loads.append((cm, -spec["mass"] * 9.81 * N.z))
    eta = sp.Matrix(q[2:])
    for name, m, s, Phi in _nodes(panel):
        d = sp.Matrix([sp.nsimplify(x) for x in s]) + sp.Matrix(Phi.tolist()).applyfunc(sp.nsimplify) * eta
        P = Bo.locatenew(name, d[0] * B.x + d[1] * B.y + d[2] * B.z)
        parts.append(Particle(name, P, m))
        loads.append((P, -m * 9.81 * N.z))
    sub = {qi.diff(): ui for qi, ui in zip(q, u)}
    for p in parts:
        pt = p.masscenter if hasattr(p, "masscenter") else p.point
        pt.set_vel(N, pt.pos_from(O).dt(N).subs(sub))
    km = KanesMethod(N, q_ind=list(q), u_ind=list(u), kd_eqs=[qi.diff() - ui for qi, ui in zip(q, u)])
    km.kanes_equations(parts, loads)
    MM = sp.lambdify([*q, *u], km.mass_matrix)
    FF = sp.lambdify([*q, *u], km.forcing)
    k, c = _modal_constants(panel)

    mb = kane_flex
    assert mb.nq == mb.nu == 4 and mb.q_slice("panel.modes") == slice(2, 4) and mb.u_slice("panel.mode1") == slice(3, 4)
    rng = np.random.default_rng(7)
    for _ in range(8):
        qv, uv, T = rng.uniform(-1.5, 1.5, 4), rng.normal(size=4), rng.normal(size=4)
        M = np.array(MM(*qv, *uv), float)
        F = np.array(FF(*qv, *uv), float).ravel()
        F[2:] += -k * qv[2:] - c * uv[2:]                 # the modes' stiffness and damping
        assert_close(mb.mass_matrix(qv), M, 1e-10, "Kane mass matrix")
        assert_close(-mb.inverse_dynamics(qv, uv, np.zeros(4)), F, 1e-10, "Kane forcing")
        ud = mb.forward_dynamics(qv, uv, T)
        assert_close(ud, np.linalg.solve(M, F + T), 1e-9, "FD against Kane")
        assert_close(mb.inverse_dynamics(qv, uv, ud), T, 1e-10, "ID(FD(T))")


def _node_positions(mb, spec_bodies, q):
    """World positions of every node from the bodies' poses and the modal coordinates, computed here."""
    out = []
    for spec in spec_bodies:
        if "flex" not in spec:
            continue
        X, eta = mb.frame_pose(q, spec["name"]), q[mb.q_slice(spec["name"] + ".modes")]
        for name, m, s, Phi in _nodes(spec):
            out.append((name, m, X[:3, :3] @ (s + Phi @ eta) + X[:3, 3]))
    return out


def _rigid_inertia(spec):
    J = np.array(spec["inertia"], float)
    if J.shape == (6,):
        J = np.array([[J[0], J[3], J[4]], [J[3], J[1], J[5]], [J[4], J[5], J[2]]])
    return spec["mass"], np.array(spec.get("com", [0, 0, 0]), float), J


@pytest.mark.parametrize("which", ["kane", "free", "chain"])
def test_mass_matrix_is_the_nodes_jacobians_plus_the_rigid_part(which, kane_flex, free_flex):
    """M = sum_b J_b^T M_b J_b (rigid parts) + sum_i m_i J_i^T J_i with each node's translational Jacobian J_i
    from central differences of its position along each U (1e-6 relative); 1/2 U^T M U equals the kinetic energy
    of the rigid parts and the nodes with each node's velocity R_B (v_B + w_B x d_i + Phi_i etadot) (1e-10); the
    node frames' pose, Jacobian and velocity agree with the same positions."""
    mb, spec = {"kane": (kane_flex, KANE_FLEX), "free": (free_flex, FREE_FLEX),
                "chain": (None, CHAIN_FLEX)}[which]
    if mb is None:
        mb = build_model(model_from_dict(CHAIN_FLEX, "<flexchain>"))
        rng = np.random.default_rng(5)
        q, u, T = rng.normal(size=(3, mb.nu))
        assert_close(mb.inverse_dynamics(q, u, mb.forward_dynamics(q, u, T)), T, 1e-10, "ID(FD(T)), chain")
    rng = np.random.default_rng(3)
    h = 1e-6
    for _ in range(3):
        q = mb.sanitize(rng.uniform(-1, 1, mb.nq))
        u = rng.normal(size=mb.nu)
        M_ref, ke = np.zeros((mb.nu, mb.nu)), 0.0
        for b in spec["bodies"]:
            m, com, J = _rigid_inertia(b)
            cx = np.array([[0, -com[2], com[1]], [com[2], 0, -com[0]], [-com[1], com[0], 0]])
            I6 = np.block([[J - m * cx @ cx, m * cx], [-m * cx, m * np.eye(3)]])
            Jb = mb.jacobian(q, b["name"])
            M_ref += Jb.T @ I6 @ Jb
            V = mb.frame_velocity(q, u, b["name"])
            ke += 0.5 * V @ I6 @ V
        nodes = _node_positions(mb, spec["bodies"], q)
        for i, (name, m, p) in enumerate(nodes):
            cols = []
            for e in np.eye(mb.nu):          # along U = e: Q moves by Qdot = N(Q) e
                dq = mb.qdot(q, e)
                cols.append((_node_positions(mb, spec["bodies"], q + h * dq)[i][2]
                             - _node_positions(mb, spec["bodies"], q - h * dq)[i][2]) / (2 * h))
            Ji = np.array(cols).T
            M_ref += m * Ji.T @ Ji
            X = mb.frame_pose(q, name)
            assert_close(X[:3, 3], p, 1e-12, f"node '{name}' position")
            assert_close(X[:3, :3] @ mb.jacobian(q, name)[3:], Ji, 1e-6, f"node '{name}' Jacobian")
            body = next(b for b in spec["bodies"] if any(n["name"] == name for n in b.get("flex", {}).get("nodes", [])))
            _, _, s, Phi = next(x for x in _nodes(body) if x[0] == name)
            eta, etad = q[mb.q_slice(body["name"] + ".modes")], u[mb.u_slice(body["name"] + ".modes")]
            Vb = mb.frame_velocity(q, u, body["name"])
            v_node = Vb[3:] + np.cross(Vb[:3], s + Phi @ eta) + Phi @ etad      # body axes
            assert_close(mb.frame_velocity(q, u, name)[3:], v_node, 1e-12, f"node '{name}' velocity")
            ke += 0.5 * m * v_node @ v_node
        M = mb.mass_matrix(q)
        assert_close(M, M_ref, 1e-6, "M against the nodes' Jacobians")
        assert abs(0.5 * u @ M @ u - ke) <= 1e-10 * ke, "kinetic energy"


def _momentum(mb, spec, q, u, udot=None):
    """Linear and angular momentum (about the world origin) of the rigid parts and the nodes, in world axes,
    and with ``udot`` their time derivatives, from the frames' kinematics."""
    P, H, dP, dH = np.zeros(3), np.zeros(3), np.zeros(3), np.zeros(3)
    for b in spec["bodies"]:
        m, c, J = _rigid_inertia(b)
        X, V = mb.frame_pose(q, b["name"]), mb.frame_velocity(q, u, b["name"])
        R, w = X[:3, :3], V[:3]
        pc, vc = X[:3, 3] + R @ c, R @ (V[3:] + np.cross(w, c))
        P += m * vc
        H += np.cross(pc, m * vc) + R @ (J @ w)
        if udot is not None:
            A = mb.frame_acceleration(q, u, udot, b["name"])        # classical, frame axes
            ac = R @ (A[3:] + np.cross(A[:3], c) + np.cross(w, np.cross(w, c)))
            dP += m * ac
            dH += np.cross(pc, m * ac) + R @ (J @ A[:3] + np.cross(w, J @ w))
    for spec_b in spec["bodies"]:
        if "flex" not in spec_b:
            continue
        for name, m, _, _ in _nodes(spec_b):
            X = mb.frame_pose(q, name)
            p, v = X[:3, 3], X[:3, :3] @ mb.frame_velocity(q, u, name)[3:]
            P += m * v
            H += np.cross(p, m * v)
            if udot is not None:
                a = X[:3, :3] @ mb.frame_acceleration(q, u, udot, name)[3:]
                dP += m * a
                dH += np.cross(p, m * a)
    return P, H, dP, dH


def _energy(mb, spec, q, u):
    """Kinetic energy (rigid parts and nodes) plus the modes' strain energy 1/2 k eta^2, computed here."""
    ke = 0.0
    for b in spec["bodies"]:
        m, c, J = _rigid_inertia(b)
        V = mb.frame_velocity(q, u, b["name"])
        vc = V[3:] + np.cross(V[:3], c)
        ke += 0.5 * m * vc @ vc + 0.5 * V[:3] @ J @ V[:3]
        if "flex" in b:
            k, _ = _modal_constants(b)
            eta = q[mb.q_slice(b["name"] + ".modes")]
            ke += 0.5 * float(k @ (eta * eta))
            for name, m_i, _, _ in _nodes(b):
                v = mb.frame_velocity(q, u, name)[3:]
                ke += 0.5 * m_i * v @ v
    return ke


def test_free_floating_flexible_body_conserves_momentum_and_energy(free_flex):
    """No gravity, no damping, no forces: the momentum's rate from the FD accelerations is zero (1e-10 of the
    terms' scale) at random states; over 10 s of RK4 (dt = 1e-3) momentum and energy drift < 1e-6."""
    mb, rng = free_flex, np.random.default_rng(11)
    for _ in range(4):
        q = mb.sanitize(rng.uniform(-1, 1, mb.nq))
        u = rng.normal(size=mb.nu)
        ud = mb.forward_dynamics(q, u, np.zeros(mb.nu))
        P, H, dP, dH = _momentum(mb, FREE_FLEX, q, u, ud)
        scale = sum(b["mass"] for b in FREE_FLEX["bodies"]) * (1 + np.abs(ud).max() + np.abs(u).max() ** 2)
        assert np.abs(dP).max() <= 1e-10 * scale and np.abs(dH).max() <= 1e-10 * scale * 3, (dP, dH)
    q0 = mb.neutral_q()
    q0[mb.q_slice("bus.modes")] = [0.05, -0.02]
    u0 = np.zeros(mb.nu)
    u0[:6] = [0.1, -0.2, 0.15, 0.05, 0.0, -0.03]
    u0[mb.u_slice("arm_pin")] = 0.4
    r = mb.rollout(q0, u0, 1e-3, 10000, every=1000)
    assert r["ok"].all()
    P0, H0, _, _ = _momentum(mb, FREE_FLEX, q0, u0)
    E0 = _energy(mb, FREE_FLEX, q0, u0)
    for qk, uk in zip(r["q"][0][1:], r["u"][0][1:]):
        P, H, _, _ = _momentum(mb, FREE_FLEX, qk, uk)
        assert np.abs(P - P0).max() <= 1e-6 * np.abs(P0).max()
        assert np.abs(H - H0).max() <= 1e-6 * np.abs(H0).max()
        assert abs(_energy(mb, FREE_FLEX, qk, uk) - E0) <= 1e-6 * E0
    assert np.abs(r["q"][0][:, mb.q_slice("bus.modes")]).max() > 0.01       # the modes did move


def test_clamped_flexible_body_vibrates_at_its_modal_frequency():
    """A beam welded to the ground with one mode of 2 Hz: the rollout's zero crossings of eta give the
    frequency to 1e-4 relative; with modal damping zeta the free decay per period is exp(-2 pi zeta / sqrt(1 - zeta^2))."""
    mb = build_model(model_from_dict(CLAMPED, "<clamped>"))
    assert mb.nq == mb.nu == 1
    r = mb.rollout(np.array([0.01]), np.zeros(1), 1e-3, 5000)
    eta, t = r["q"][0][:, 0], r["t"]
    i = np.nonzero(np.sign(eta[1:]) != np.sign(eta[:-1]))[0]
    tz = t[i] - eta[i] * (t[i + 1] - t[i]) / (eta[i + 1] - eta[i])      # linear interpolation of the crossings
    f = (len(tz) - 1) / 2 / (tz[-1] - tz[0])
    assert abs(f - 2.0) <= 1e-4 * 2.0, f


def test_modes_removed_is_the_rigid_model_bit_for_bit():
    """A flexible body without modes is the rigid body with its nodes as point masses: the model equals the one
    written with the lumped mass properties (exact binary numbers, computed by hand below) and the nodes as body
    frames, and its dynamics are bit for bit those of that rigid model."""
    flex = copy.deepcopy(KANE_FLEX)
    panel = flex["bodies"][1]
    panel.update(mass=1.0, com=[0.5, 0.0, 0.0], inertia=[[0.25, 0, 0], [0, 0.5, 0], [0, 0, 0.5]])
    panel["flex"] = {"nodes": [{"name": "mid", "pos": [0.5, 0.0, 0.0], "mass": 1.0},
                               {"name": "tip", "pos": [1.0, 0.0, 0.5], "mass": 2.0}], "modes": []}
    rigid = copy.deepcopy(flex)
    del rigid["bodies"][1]["flex"]
    # by hand: m = 4, com = (0.5 + 0.5 + 2) / 4 x, (1) / 4 z = (0.75, 0, 0.25); about it, with r = p - com:
    # panel (1, r = (-0.25, 0, -0.25)), mid (1, r = (-0.25, 0, -0.25)), tip (2, r = (0.25, 0, 0.25)):
    # sum m r r^T = 4 * 0.0625 [[1, 0, 1], [0, 0, 0], [1, 0, 1]], sum m |r|^2 = 4 * 0.125
    rigid["bodies"][1].update(mass=4.0, com=[0.75, 0.0, 0.25],
                              inertia=[[0.25 + 0.5 - 0.25, 0, -0.25], [0, 0.5 + 0.5, 0], [-0.25, 0, 0.5 + 0.5 - 0.25]],
                              frames=[{"name": "mid", "xyz": [0.5, 0, 0]}, {"name": "tip", "xyz": [1.0, 0, 0.5]}])
    rigid["name"] = flex["name"] = "flexrigid"
    mf, mr = model_from_dict(flex, "<flex>"), model_from_dict(rigid, "<rigid>")
    assert mf.bodies == mr.bodies and mf.frames == mr.frames
    a, b = build_model(mf), build_model(mr)
    rng = np.random.default_rng(2)
    q, u, T = rng.normal(size=(4, 2)), rng.normal(size=(4, 2)), rng.normal(size=(4, 2))
    assert np.array_equal(a.forward_dynamics(q, u, T), b.forward_dynamics(q, u, T))
    assert np.array_equal(a.inverse_dynamics(q, u, T), b.inverse_dynamics(q, u, T))
    assert np.array_equal(a.mass_matrix(q), b.mass_matrix(q))
    assert np.array_equal(a.frame_pose(q, "tip"), b.frame_pose(q, "tip"))


def test_batches_lanes_and_rollout_agree_with_one_state(kane_flex, free_flex):
    """Batched FD, ID and M (the lane form, 8 states per call) equal the one-state calls to 1e-14 relative,
    N not a multiple of 8; the model's dynamics take the straight-line form."""
    for mb in (kane_flex, free_flex):
        assert set(mb.forms.values()) == {"straight"}
        rng = np.random.default_rng(4)
        Q = mb.sanitize(rng.uniform(-1, 1, (13, mb.nq)))
        U, T = rng.normal(size=(13, mb.nu)), rng.normal(size=(13, mb.nu))
        for name, batch, one in (("FD", mb.forward_dynamics(Q, U, T), lambda i: mb.forward_dynamics(Q[i], U[i], T[i])),
                                 ("ID", mb.inverse_dynamics(Q, U, T), lambda i: mb.inverse_dynamics(Q[i], U[i], T[i])),
                                 ("M", mb.mass_matrix(Q), lambda i: mb.mass_matrix(Q[i]))):
            for i in range(13):
                assert_close(batch[i], one(i), 1e-14, f"{mb.name} {name} lane {i}")


def test_flexible_model_errors_name_the_field(tmp_path):
    def bad(mutate, match):
        d = copy.deepcopy(KANE_FLEX)
        mutate(d["bodies"][1]["flex"])
        with pytest.raises(ModelError, match=match):
            model_from_dict(d, "panel.yaml")

    bad(lambda f: f["modes"][0]["shape"].update(nowhere=[0, 0, 1]), r"panel.yaml: body 'panel': field 'flex': "
                                                                    r"modes\[0\]: field 'shape': unknown node 'nowhere'")
    bad(lambda f: f["modes"][0]["shape"].update(tip=[0, 0, 1, 0, 0, 0]), "rotational mode shapes are not supported")
    bad(lambda f: f["nodes"][0].update(mass=-1), r"nodes\[0\]: field 'mass' must not be negative")
    bad(lambda f: f["nodes"][0].update(name="hub"), "duplicate frame name 'hub'")
    bad(lambda f: f["modes"][1].update(frequency=0), "frequency must be positive")
    bad(lambda f: f["modes"][1].update(shape={"mid": [0, 0, 0]}), "moves no node mass")
    d = copy.deepcopy(KANE_FLEX)
    d["loops"] = [{"name": "cut", "source": "hub", "target": "panel", "hinge": "BALL"}]
    with pytest.raises(ModelError, match="loops.*flexible bodies.*not supported"):
        model_from_dict(d, "panel.yaml")
    m = model_from_dict(KANE_FLEX, "panel.yaml")
    assert any("not mass-orthogonal" in w for w in m.warnings)
    with pytest.raises(ModelError, match="flexible bodies \\(panel\\) have the straight-line dynamics only"):
        build_model(m, form="per_kind")
    flex = build_model(m, derivatives=True)       # the module of the on-demand functions: the centroidal ones only
    with pytest.raises(NotImplementedError, match="derivatives of models with flexible bodies \\(panel\\)"):
        flex.forward_dynamics_derivatives(np.zeros(flex.nq), np.zeros(flex.nu), np.zeros(flex.nu))
    assert np.all(np.isfinite(flex.centroidal_momentum_matrix(np.zeros(flex.nq))))


def test_introspection_without_modes_is_refused(kane_flex):
    q = np.zeros(4)
    for call in (lambda: kane_flex.atbi_matrices(q, "panel"), lambda: kane_flex.upsilon(q, "tip"),
                 lambda: kane_flex.atbi_filter_vectors(q, q, q, "panel")):
        with pytest.raises(NotImplementedError, match="flexible bodies \\(panel\\)"):
            call()


def test_node_frames_in_the_generated_c(kane_flex, free_flex):
    """Node frames are frames of the generated C (after the body-fixed ones): frame_poses' rows equal frame_pose,
    a batch equals its states, and the time derivative of the Jacobian (jacobian_dot) equals central differences
    of the C Jacobian along Qdot = N(Q) U (1e-6)."""
    for mb, spec in ((kane_flex, KANE_FLEX), (free_flex, FREE_FLEX)):
        names = [nd["name"] for b in spec["bodies"] if "flex" in b for nd in b["flex"]["nodes"]]
        assert list(mb.frame_names[-len(names):]) == names
        rng = np.random.default_rng(8)
        Q = mb.sanitize(rng.uniform(-1, 1, (5, mb.nq)))
        U = rng.normal(size=(5, mb.nu))
        h = 1e-6
        for name in names:
            f = mb.frame_names.index(name)
            P, J, V = mb.frame_pose(Q, name), mb.jacobian(Q, name), mb.frame_velocity(Q, U, name)
            for i in range(5):
                assert np.array_equal(P[i], mb.frame_pose(Q[i], name))
                assert_close(mb.frame_poses(Q[i])[f], P[i], 1e-15, f"frame_poses '{name}'")
                assert_close(V[i], J[i] @ U[i], 1e-14, f"velocity '{name}'")
                dq = mb.qdot(Q[i], U[i])
                Jd = (mb.jacobian(Q[i] + h * dq, name) - mb.jacobian(Q[i] - h * dq, name)) / (2 * h)
                assert_close(mb.jacobian_dot(Q[i], U[i], name), Jd, 1e-6, f"jacobian_dot '{name}'")


def test_massless_rigid_part_with_nodes_is_not_singular():
    """A flexible body whose mass is all on its nodes: the build's singular-hinge check counts the nodes (at their
    undeformed places), so the panel's PIN is not reported, and forward dynamics solves (ID(FD(T)) = T, 1e-10)."""
    d = copy.deepcopy(KANE_FLEX)
    d["name"] = "flexnodesonly"
    d["bodies"][1].update(mass=0.0, com=[0, 0, 0], inertia=[0, 0, 0, 0, 0, 0])
    mb = build_model(model_from_dict(d, "<flexnodesonly>"))
    assert mb.singular_hinges == ()
    rng = np.random.default_rng(12)
    q, u, T = rng.normal(size=4), rng.normal(size=4), rng.normal(size=4)
    assert_close(mb.inverse_dynamics(q, u, mb.forward_dynamics(q, u, T)), T, 1e-10, "ID(FD(T))")
