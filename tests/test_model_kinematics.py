"""Model kinematics on random trees that mix every hinge type (layer 4), against finite differences.

Tolerances: central differences (step 1e-6) to 1e-6 of the data scale; exact identities to 1e-10.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import symgen
from helpers import assert_close
from model_factory import tree_model
from symgen.numeric import np_rotation_log

ROOT = Path(__file__).resolve().parents[1]
H = 1e-6


@pytest.fixture(scope="module", params=["random-tree-3", "all_hinges-example"])
def mb(request):
    from symgen.pipeline.package import build_model

    if request.param == "all_hinges-example":
        return symgen.build(ROOT / "examples" / "models" / "all_hinges.yaml")
    return build_model(tree_model(3))   # the tree test_dynamics and test_loop_form build too (one compile)


def _state(mb, rng):
    return mb.sanitize(rng.normal(size=mb.nq)), rng.normal(size=mb.nu), rng.normal(size=mb.nu)


def _vee(W):
    return np.array([W[2, 1], W[0, 2], W[1, 0]])


def test_every_hinge_type_is_used(mb):
    types = {h["type"] for h in mb.manifest["hinges"].values()}
    assert types == set(symgen.HINGE_TYPES)


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
