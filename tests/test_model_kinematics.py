"""Model kinematics on random trees that mix every hinge type (layer 4), against finite differences.

Tolerances: central differences (step 1e-6) to 1e-6 of the data scale; exact identities to 1e-10.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import symgen
from helpers import assert_close
from model_factory import build_coverage_tree
from symgen.numeric import np_rotation_log

ROOT = Path(__file__).resolve().parents[1]
H = 1e-6


@pytest.fixture(scope="module", params=["all_hinges", "hinges1"])
def mb(request):
    """Every hinge type in one tree (the all_hinges example) and a small tree with armature and CUSTOM
    (LINEAR, PIN, LINEAR) (model_factory; test_dynamics and test_derivatives build both too: one compile)."""
    return build_coverage_tree(request.param)


def _state(mb, rng):
    return mb.sanitize(rng.normal(size=mb.nq)), rng.normal(size=mb.nu), rng.normal(size=mb.nu)


def _vee(W):
    return np.array([W[2, 1], W[0, 2], W[1, 0]])


def test_every_hinge_type_is_used():
    """all_hinges holds every hinge type, and so do the four small trees together (model_factory)."""
    from model_factory import coverage_tree

    assert {b.hinge_type for b in coverage_tree("all_hinges").bodies} == set(symgen.HINGE_TYPES)
    assert {b.hinge_type for i in range(4) for b in coverage_tree(f"hinges{i}").bodies} == set(symgen.HINGE_TYPES)


def test_jacobian_is_pose_derivative(mb):
    rng = np.random.default_rng(0)
    for _ in range(3):
        q, u, _ = _state(mb, rng)
        d = mb.qdot(q, u)
        for f in mb.frame_names:
            T = mb.frame_pose(q, f)
            Td = (mb.frame_pose(q + H * d, f) - mb.frame_pose(q - H * d, f)) / (2 * H)
            V = np.r_[_vee(T[:3, :3].T @ Td[:3, :3]), T[:3, :3].T @ Td[:3, 3]]
            assert_close(mb.jacobian(q, f) @ u, V, 1e-6, f"J u of {f}")
            assert_close(mb.frame_velocity(q, u, f), mb.jacobian(q, f) @ u, 1e-12, "frame_velocity")


def test_jacobian_dot(mb):
    rng = np.random.default_rng(1)
    q, u, _ = _state(mb, rng)
    d = mb.qdot(q, u)
    for f in mb.frame_names:
        fd = (mb.jacobian(q + H * d, f) @ u - mb.jacobian(q - H * d, f) @ u) / (2 * H)
        assert_close(mb.jacobian_dot(q, u, f) @ u, fd, 1e-6, f"Jdot u of {f}")


def test_frame_acceleration_is_classical(mb):
    """[R^T d/dt(R w); R^T d/dt(R v)] with Q moving along N U and U along Udot (world-frame differences)."""
    rng = np.random.default_rng(2)
    q, u, ud = _state(mb, rng)
    d = mb.qdot(q, u)
    for f in mb.frame_names:
        def world(s):
            qs, us = q + s * d, u + s * ud
            R = mb.frame_pose(qs, f)[:3, :3]
            V = mb.frame_velocity(qs, us, f)
            return np.r_[R @ V[:3], R @ V[3:]]
        R = mb.frame_pose(q, f)[:3, :3]
        dw = (world(H) - world(-H)) / (2 * H)
        assert_close(mb.frame_acceleration(q, u, ud, f), np.r_[R.T @ dw[:3], R.T @ dw[3:]], 1e-6, f"accel {f}")


def _pairs(mb, rng, n=8):
    names = list(mb.frame_names)
    pairs = [("newtonian", names[-1]), (names[-1], "newtonian"), (names[2], names[-2])]
    while len(pairs) < n:
        a, b = rng.choice(names, 2, replace=False)
        pairs.append((str(a), str(b)))
    return pairs


def test_f2f_queries_match_their_num_diff_twins(mb):
    rng = np.random.default_rng(3)
    for o, p in _pairs(mb, rng):
        f = mb.f2f(o, p)
        q, u, ud = _state(mb, rng)
        T = f.rel_transform(q)
        Tn = np.linalg.inv(mb.frame_pose(q, o)) @ mb.frame_pose(q, p)
        assert_close(T, Tn, 1e-12, "rel_transform")
        assert_close(f.rel_sp_vel(q, u), f.rel_sp_vel_num_diff(q, u), 1e-6, f"rel_sp_vel {o}->{p}")
        assert_close(f.jacobian(q) @ u, f.rel_sp_vel(q, u), 1e-12, "f2f jacobian")
        assert_close(f.jacobian_num_diff(q), f.jacobian(q), 1e-6, f"jacobian_num_diff {o}->{p}")
        assert_close(f.jacobian(q, oriented=False), -f.jacobian(q), 0.0, "oriented=False")
        d = mb.qdot(q, u)
        acc_fd = (f.rel_sp_vel(q + H * d, u + H * ud) - f.rel_sp_vel(q - H * d, u - H * ud)) / (2 * H)
        assert_close(f.rel_sp_accel(q, u, ud), acc_fd, 1e-6, f"rel_sp_accel {o}->{p}")
        if np.linalg.norm(np_rotation_log(T[:3, :3])) < np.pi - 0.2:
            assert_close(f.pose_gradient(q), f.pose_gradient_num_diff(q), 1e-6, f"pose_gradient {o}->{p}")


def test_batched_equals_single(mb):
    rng = np.random.default_rng(4)
    Q = np.array([_state(mb, rng)[0] for _ in range(4)])
    U = rng.normal(size=(4, mb.nu))
    f = mb.frame_names[-1]
    P, J, V = mb.frame_pose(Q, f), mb.jacobian(Q, f), mb.frame_velocity(Q, U, f)
    R = mb.f2f(mb.frame_names[1], f).rel_sp_vel(Q, U)
    for i in range(4):
        np.testing.assert_array_equal(P[i], mb.frame_pose(Q[i], f))
        np.testing.assert_array_equal(J[i], mb.jacobian(Q[i], f))
        np.testing.assert_array_equal(V[i], mb.frame_velocity(Q[i], U[i], f))
        np.testing.assert_array_equal(R[i], mb.f2f(mb.frame_names[1], f).rel_sp_vel(Q[i], U[i]))


def test_fit_q_and_fit_u(mb):
    """fit_q recovers a hinge pose (compared as transforms: coordinates are redundant modulo 2 pi and
    quaternion sign); fit_u recovers U where the coord map has full rank."""
    rng = np.random.default_rng(5)
    q, u, _ = _state(mb, rng)
    for name in mb.hinge_names:
        k = mb.hinge_kernels(name)
        qh = q[mb.q_slice(name)]
        X = k.transform(qh)
        fit = mb.fit_q(name, X)
        assert_close(k.transform(fit), X, 1e-9, f"fit_q {name}")
        if k.nu:
            uh = u[mb.u_slice(name)]
            V = k.coord_map(qh) @ uh
            assert_close(mb.fit_u(name, V, qh), uh, 1e-9, f"fit_u {name}")


def test_names_and_slices(mb):
    assert mb.frame_names[0] == "newtonian"
    assert sum(mb.u_slice(h).stop - mb.u_slice(h).start for h in mb.hinge_names) == mb.nu
    q0 = mb.neutral_q()
    for h in mb.hinge_names:
        k = mb.hinge_kernels(h)
        assert_close(k.transform(q0[mb.q_slice(h)]), np.eye(4), 1e-15, f"neutral {h}")
    with pytest.raises(KeyError, match="no frame named 'nope'"):
        mb.frame_pose(q0, "nope")
    with pytest.raises(KeyError, match="no hinge named"):
        mb.q_slice("nope")
    with pytest.raises(ValueError, match="q must have shape"):
        mb.frame_pose(np.zeros(mb.nq + 1), "newtonian")


# ---- the rest of Karana's FrameToFrame (issue 25, item 1): the seed's identities at 1e-10, central differences
# of the already verified rel_transform / rel_sp_vel / rel_sp_accel at 1e-6, composition along the path

def _motion(mb, q, u, ud):
    """Q and U moved by s along (N U, Udot)."""
    d = mb.qdot(q, u)
    return lambda s: (q + s * d, u + s * ud)


def _cd(fn, move):
    """Central difference of fn(q, u) along the motion."""
    return (fn(*move(H)) - fn(*move(-H))) / (2 * H)


def _triples(mb, rng, n=4):
    names = list(mb.frame_names)
    out = [("newtonian", names[-1], names[2]), (names[-1], names[1], "newtonian")]
    while len(out) < n:
        out.append(tuple(str(x) for x in rng.choice(names, 3, replace=False)))
    return out


def test_f2f_pframe_observed_and_reversed_velocities(mb):
    rng = np.random.default_rng(7)
    for o, p in _pairs(mb, rng, 6):
        f, r = mb.f2f(o, p), mb.f2f(p, o)
        q, u, ud = _state(mb, rng)
        move = _motion(mb, q, u, ud)
        R = f.rel_transform(q)[:3, :3]
        # the seed's identities: V(p, o) and A(p, o) from V(o, p) and A(o, p)
        assert_close(f.to_pframe_relative_sp_vel(q, f.rel_sp_vel(q, u)), r.rel_sp_vel(q, u), 1e-10, "to_pframe vel")
        assert_close(f.to_pframe_relative_sp_accel(q, u, f.rel_sp_accel(q, u, ud)), r.rel_sp_accel(q, u, ud),
                     1e-10, "to_pframe accel")
        # p-observed velocity: [vee(R^T dR/dt); d/dt (R^T l)] by central differences of rel_transform
        Td = _cd(lambda qs, us: f.rel_transform(qs), move)
        T = f.rel_transform(q)
        pl = _cd(lambda qs, us: f.rel_transform(qs)[:3, :3].T @ f.rel_transform(qs)[:3, 3], move)
        assert_close(f.pframe_observed_rel_sp_vel(q, u), np.r_[_vee(T[:3, :3].T @ Td[:3, :3]), pl], 1e-6,
                     f"pframe_observed_rel_sp_vel {o}->{p}")
        # p-observed acceleration: d/dt (R^T rel_sp_vel)
        acc = _cd(lambda qs, us: np.kron(np.eye(2), f.rel_transform(qs)[:3, :3].T) @ f.rel_sp_vel(qs, us), move)
        assert_close(f.pframe_observed_rel_sp_accel(q, u, ud), acc, 1e-6, f"pframe_observed_rel_sp_accel {o}->{p}")
        # to_oframe_observed: x given in p (the position of a third frame), its p-observed derivative
        t = mb.frame_names[-2]
        x_p = lambda qs, us: mb.f2f(p, t).rel_transform(qs)[:3, 3]  # noqa: E731
        xdot = _cd(x_p, move)
        want = _cd(lambda qs, us: f.rel_transform(qs)[:3, :3] @ x_p(qs, us), move)
        assert_close(f.to_oframe_observed(q, u, x_p(q, u), xdot), want, 1e-6, "to_oframe_observed")
        assert_close(R @ xdot + np.cross(f.rel_sp_vel(q, u)[:3], R @ x_p(q, u)),
                     f.to_oframe_observed(q, u, x_p(q, u), xdot), 1e-12, "to_oframe_observed formula")


def test_f2f_phi_dot_and_rates(mb):
    rng = np.random.default_rng(8)
    for o, p in _pairs(mb, rng, 6):
        f = mb.f2f(o, p)
        q, u, ud = _state(mb, rng)
        move = _motion(mb, q, u, ud)
        assert_close(f.phi_dot(q, u), _cd(lambda qs, us: f.phi(qs), move), 1e-6, f"phi_dot {o}->{p}")
        # phi_dot = phi crf(V_p), V_p = [R^T w; R^T v], crf(V) = [[w~, v~], [0, w~]] (an identity, 1e-10)
        R = f.rel_transform(q)[:3, :3]
        V = f.rel_sp_vel(q, u)
        S = lambda x: np.array([[0, -x[2], x[1]], [x[2], 0, -x[0]], [-x[1], x[0], 0]])  # noqa: E731
        crf = np.block([[S(R.T @ V[:3]), S(R.T @ V[3:])], [np.zeros((3, 3)), S(R.T @ V[:3])]])
        assert_close(f.phi_dot(q, u), f.phi(q) @ crf, 1e-10, "phi_dot = phi crf(V_p)")
        if np.linalg.norm(np_rotation_log(f.rel_transform(q)[:3, :3])) < np.pi - 0.2:
            def pose(qs, us):
                T = f.rel_transform(qs)
                return np.r_[np_rotation_log(T[:3, :3]), T[:3, 3]]
            assert_close(f.oframe_deriv_rel_rates(q, u), _cd(pose, move), 1e-6, f"oframe_deriv_rel_rates {o}->{p}")


def test_f2f_coriolis_terms_compose_accelerations(mb):
    """A(o,t) = [dw(o,p) + R dw(p,t); a(o,p) + dw(o,p) x R l(p,t) + R a(p,t)] + coriolis_accel_oop (in o), and
    the p-observed A(o,t) = phi(p,t)^T (p-observed A(o,p)) + R_tp A(p,t) + coriolis_accel_tpp (in t)."""
    rng = np.random.default_rng(9)
    for o, p, t in _triples(mb, rng):
        op, pt, ot = mb.f2f(o, p), mb.f2f(p, t), mb.f2f(o, t)
        q, u, ud = _state(mb, rng)
        R, Tpt = op.rel_transform(q)[:3, :3], pt.rel_transform(q)
        A_op, A_pt = op.rel_sp_accel(q, u, ud), pt.rel_sp_accel(q, u, ud)
        cor = op.coriolis_accel_oop(q, u, t)
        want = np.r_[A_op[:3] + R @ A_pt[:3], A_op[3:] + np.cross(A_op[:3], R @ Tpt[:3, 3]) + R @ A_pt[3:]] + cor
        assert_close(ot.rel_sp_accel(q, u, ud), want, 1e-10, f"oop {o}->{p}->{t}")
        Rpt, lpt = Tpt[:3, :3], Tpt[:3, 3]
        B = op.pframe_observed_rel_sp_accel(q, u, ud)
        phiT = np.r_[Rpt.T @ B[:3], Rpt.T @ (B[3:] + np.cross(B[:3], lpt))]
        want = phiT + np.kron(np.eye(2), Rpt.T) @ A_pt + op.coriolis_accel_tpp(q, u, t)
        assert_close(ot.pframe_observed_rel_sp_accel(q, u, ud), want, 1e-10, f"tpp {o}->{p}->{t}")


def test_f2f_solves_and_subchains(mb):
    rng = np.random.default_rng(10)
    for o, b, p in _triples(mb, rng):
        f, ob, bp = mb.f2f(o, p), mb.f2f(o, b), mb.f2f(b, p)
        q, u, ud = _state(mb, rng)
        # the true values give back the sub-path's own (both ends of the path)
        for sub, other in ((ob, bp), (bp, ob)):
            assert_close(f.solve_transform(q, sub, f.rel_transform(q)), sub.rel_transform(q), 1e-10, "solve_transform")
            assert_close(f.solve_sp_vel(q, u, sub, other, f.rel_sp_vel(q, u)), sub.rel_sp_vel(q, u), 1e-10,
                         "solve_sp_vel")
            assert_close(f.solve_sp_accel(q, u, ud, sub, other, f.rel_sp_accel(q, u, ud)),
                         sub.rel_sp_accel(q, u, ud), 1e-10, "solve_sp_accel")
        # a wanted transform: the solved segment composed with the other reproduces it
        X = f.rel_transform(mb.sanitize(rng.normal(size=mb.nq)))
        assert_close(f.solve_transform(q, ob, X) @ bp.rel_transform(q), X, 1e-10, "compose at the start")
        assert_close(ob.rel_transform(q) @ f.solve_transform(q, bp, X), X, 1e-10, "compose at the end")
        # a wanted velocity V: the solved V(o,b) composed with the actual V(b,p) by Karana's Eq. 1.48
        V = rng.normal(size=6)
        Vs, R, lbp, Vbp = f.solve_sp_vel(q, u, ob, bp, V), ob.rel_transform(q)[:3, :3], bp.rel_transform(q)[:3, 3], \
            bp.rel_sp_vel(q, u)
        assert_close(np.r_[Vs[:3] + R @ Vbp[:3], Vs[3:] + np.cross(Vs[:3], R @ lbp) + R @ Vbp[3:]], V, 1e-10,
                     "solve_sp_vel composes")
    with pytest.raises(ValueError, match="neither end"):
        mb.f2f("newtonian", mb.frame_names[-1]).solve_transform(np.zeros(mb.nq) + mb.neutral_q(),
                                                                 mb.f2f(mb.frame_names[1], mb.frame_names[2]),
                                                                 np.eye(4))


def test_f2f_subchain_orientation(mb):
    names = list(mb.frame_names)
    f = mb.f2f(names[-1], names[-3])
    path = f.path()
    assert path[0] == names[-1] and path[-1] == names[-3] and len(set(path)) == len(path)
    assert f.subchain_orientation(f) is True
    assert f.subchain_orientation(mb.f2f(names[-3], names[-1])) is False
    if len(path) >= 3:
        assert f.subchain_orientation((path[1], path[-1])) is True
        assert f.subchain_orientation((path[-1], path[1])) is False
    off = [n for n in names if n not in path]
    assert f.subchain_orientation((off[0], path[0])) is None
    # the path is the tree's: each step is a parent-child pair or a frame on its body
    bodies = {b["name"]: b["parent"] for b in mb.manifest["bodies"]}
    for a, b in zip(path, path[1:]):
        fr = mb.manifest["frames"]
        link = bodies.get(a) == b or bodies.get(b) == a or fr[a]["body"] == fr[b]["body"]
        assert link, f"{a} -> {b} is not a tree edge"


def test_f2f_new_queries_batch(mb):
    rng = np.random.default_rng(11)
    names = list(mb.frame_names)
    f = mb.f2f(names[1], names[-1])
    Q = mb.sanitize(rng.normal(size=(3, mb.nq)))
    U, Ud = rng.normal(size=(3, mb.nu)), rng.normal(size=(3, mb.nu))
    for name, args in (("pframe_observed_rel_sp_vel", (Q, U)), ("pframe_observed_rel_sp_accel", (Q, U, Ud)),
                       ("phi_dot", (Q, U)), ("oframe_deriv_rel_rates", (Q, U)),
                       ("coriolis_accel_oop", (Q, U, names[2])), ("coriolis_accel_tpp", (Q, U, names[2]))):
        batch = getattr(f, name)(*args)
        for i in range(3):
            one = getattr(f, name)(*[a[i] if isinstance(a, np.ndarray) else a for a in args])
            assert_close(batch[i], one, 1e-14, name)


def test_hinge_oframe_ortho_complement_and_rates(mb):
    """Per hinge: C_o^T H_o = 0 and [H_o C_o] spans R^6 (1e-10); d/dt [log R; l] of the hinge by central
    differences of its transform along Qdot = N U (1e-6)."""
    rng = np.random.default_rng(12)
    for name, info in mb.manifest["hinges"].items():
        h = mb.hinge_kernels(name)
        if not h.nu:
            continue
        q = h.sanitize(rng.normal(size=h.nq))
        u = rng.normal(size=h.nu)
        Ho = h.oframe_coord_map(q)
        if h.nu < 6:
            C = h.oframe_ortho_complement(q)
            assert_close(C.T @ Ho, np.zeros((6 - h.nu, h.nu)), 1e-10, f"{name}: C_o^T H_o")
            assert np.linalg.matrix_rank(np.hstack([Ho, C]), tol=1e-8) == 6, name
        T = h.transform(q)
        if np.linalg.norm(np_rotation_log(T[:3, :3])) < np.pi - 0.2:
            d = h.qdot_map(q) @ u
            def pose(s):
                X = h.transform(q + s * d)
                return np.r_[np_rotation_log(X[:3, :3]), X[:3, 3]]
            assert_close(h.oframe_deriv_rel_rates(q, u), (pose(H) - pose(-H)) / (2 * H), 1e-6, f"{name} rates")
