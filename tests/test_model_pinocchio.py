"""Layer 5: frame poses and Jacobians of URDF robots against Pinocchio (an oracle nobody here wrote).

Pinocchio's spatial vectors are [linear; angular] (rows reordered here), a continuous joint's q is
(cos, sin), and a free-flyer's v is [v; w] in the body frame while symgen's FULL6DOF U is
[p_dot in the world; w in the body] — so J_pin = J_symgen T with T = diag(R, I, I, ...).
Tolerance 1e-10 (both are exact up to rounding).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pin = pytest.importorskip("pinocchio")

import symgen  # noqa: E402
from helpers import assert_close  # noqa: E402
from pin_maps import to_pin_q, u_map  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ROBOTS = ["arm7", "rand11", "rand12"]


@pytest.fixture(scope="module", params=[(r, fb) for r in ROBOTS for fb in (False, True)],
                ids=[f"{r}-{'floating' if fb else 'fixed'}" for r in ROBOTS for fb in (False, True)])
def pair(request, urdf_robots):
    """arm7 and two random URDF trees (random_urdf(11 | 12, 10)), from tests/conftest.py's urdf_robots: the
    robots test_dynamics compares with Pinocchio too (one build each per session)."""
    robot, floating = request.param
    path = str(urdf_robots / f"{robot}.urdf")
    mb = symgen.build(path, floating_base=floating)
    pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if floating else pin.buildModelFromUrdf(path)
    return mb, pm, floating


def _random_q(mb, rng):
    return mb.sanitize(rng.uniform(-2.5, 2.5, mb.nq))


def test_hinges_are_the_urdf_joints(pair):
    mb, pm, floating = pair
    names = set(pm.names[1:])
    assert names <= set(mb.hinge_names)
    for f in pm.frames:
        if f.type == pin.FrameType.BODY:
            assert f.name in mb.frame_names


def test_frame_poses_match_pinocchio(pair):
    mb, pm, _ = pair
    pd = pm.createData()
    rng = np.random.default_rng(0)
    for _ in range(10):
        q = _random_q(mb, rng)
        pin.framesForwardKinematics(pm, pd, to_pin_q(mb, pm, q))
        for f in pm.frames:
            if f.type == pin.FrameType.BODY:
                assert_close(mb.frame_pose(q, f.name), pd.oMf[pm.getFrameId(f.name)].homogeneous, 1e-10, f.name)


def test_jacobians_match_pinocchio(pair):
    """Jacobian of the last link (and of every link) in LOCAL frame, rows reordered to [angular; linear]."""
    mb, pm, floating = pair
    pd = pm.createData()
    rng = np.random.default_rng(1)
    last = [f.name for f in pm.frames if f.type == pin.FrameType.BODY][-1]
    for _ in range(10):
        q = _random_q(mb, rng)
        qp = to_pin_q(mb, pm, q)
        pin.computeJointJacobians(pm, pd, qp)
        pin.framesForwardKinematics(pm, pd, qp)
        T = u_map(mb, pm, q, floating)
        for f in pm.frames:
            if f.type != pin.FrameType.BODY:
                continue
            Jp = pin.getFrameJacobian(pm, pd, pm.getFrameId(f.name), pin.LOCAL)
            assert_close(mb.jacobian(q, f.name) @ T, np.vstack([Jp[3:], Jp[:3]]), 1e-10, f"J {f.name}")
        assert last in mb.frame_names


def test_batched_poses_jacobians_and_velocities_match_pinocchio(pair):
    """The batches of the frame pose, Jacobian and velocity (their full blocks of the lane width in the walk's lane
    form, the rest one state at a time: 2 W + 3 states) against Pinocchio's oMf, LOCAL getFrameJacobian and
    getFrameVelocity, state by state, every link."""
    mb, pm, floating = pair
    pd = pm.createData()
    rng = np.random.default_rng(5)
    n = 2 * mb.lane_width + 3
    Q = np.array([_random_q(mb, rng) for _ in range(n)])
    V = rng.normal(size=(n, pm.nv))
    Ts = [u_map(mb, pm, q, floating) for q in Q]
    U = np.array([T @ v for T, v in zip(Ts, V)])
    links = [f.name for f in pm.frames if f.type == pin.FrameType.BODY]
    got = {name: (mb.jacobian(Q, name), mb.frame_velocity(Q, U, name), mb.frame_pose(Q, name)) for name in links}
    for i in range(n):
        qp = to_pin_q(mb, pm, Q[i])
        pin.forwardKinematics(pm, pd, qp, V[i])
        pin.updateFramePlacements(pm, pd)
        pin.computeJointJacobians(pm, pd, qp)
        for name in links:
            fid = pm.getFrameId(name, pin.FrameType.BODY)
            Jp = pin.getFrameJacobian(pm, pd, fid, pin.LOCAL)
            assert_close(got[name][0][i] @ Ts[i], np.vstack([Jp[3:], Jp[:3]]), 1e-10, f"J {name}, state {i}")
            Vp = pin.getFrameVelocity(pm, pd, fid, pin.LOCAL).vector
            assert_close(got[name][1][i], np.r_[Vp[3:], Vp[:3]], 1e-10, f"V {name}, state {i}")
            assert_close(got[name][2][i], pd.oMf[fid].homogeneous, 1e-10, f"pose {name}, state {i}")


def test_velocities_and_classical_accelerations_match_pinocchio(pair):
    """frame_velocity and frame_acceleration (classical) against pin.getFrameVelocity /
    getFrameClassicalAcceleration in the LOCAL frame."""
    mb, pm, floating = pair
    pd = pm.createData()
    rng = np.random.default_rng(2)
    for _ in range(5):
        q = _random_q(mb, rng)
        v, a = rng.normal(size=pm.nv), rng.normal(size=pm.nv)
        T = u_map(mb, pm, q, floating)
        u = T @ v
        # udot: d/dt (T v) = T a + T_dot v; T_dot only in the free-flyer block: R [w]x v_lin
        ud = T @ a
        if floating:
            R = mb.frame_pose(q, mb.body_names[0])[:3, :3]
            w = v[3:6]
            ud[mb.u_slice("root_joint").start:mb.u_slice("root_joint").start + 3] += R @ np.cross(w, v[:3])
        qp = to_pin_q(mb, pm, q)
        pin.forwardKinematics(pm, pd, qp, v, a)
        pin.updateFramePlacements(pm, pd)
        for f in pm.frames:
            if f.type != pin.FrameType.BODY:
                continue
            fid = pm.getFrameId(f.name)
            V = pin.getFrameVelocity(pm, pd, fid, pin.LOCAL).vector
            A = pin.getFrameClassicalAcceleration(pm, pd, fid, pin.LOCAL).vector
            assert_close(mb.frame_velocity(q, u, f.name), np.r_[V[3:], V[:3]], 1e-10, f"V {f.name}")
            assert_close(mb.frame_acceleration(q, u, ud, f.name), np.r_[A[3:], A[:3]], 1e-10, f"A {f.name}")
