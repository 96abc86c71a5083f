"""Centroidal momentum matrix, momentum, its rate and the centre of mass (issue 35's new algorithm).

Oracles: Pinocchio's ``ccrba``, ``computeCentroidalMomentum``, ``computeCentroidalMomentumTimeVariation`` and
``centerOfMass`` on fixed and floating robots (arm7 and example-robot-data's UR5, fixed; the bundled quadruped,
floating), 1e-10 relative; on models Pinocchio cannot load (every hinge type, flexible
bodies) the identities that define them: h_G is the sum of every body's momentum moved to the centre of mass
(from the body Jacobians and inertias, 1e-10), its linear part is m times the centre of mass's velocity and
hdot_G is the time derivative of h_G along the motion (central differences, 1e-6 relative).  Batches (a block
of W on the lane form and a tail) equal the one-state calls bit for bit.
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
from symgen.pipeline.package import build_model

ROOT = Path(__file__).resolve().parents[1]
W = lane_width()

#: (name, floating): robots whose module with the derivative (and centroidal) functions test_derivatives builds
#: anyway (each other robot here cost 30-65 s of the suite for that module alone)
PIN_ROBOTS = [("arm7", False), ("ur5", False), ("quadruped", True)]
ERD = {"ur5": "ur_description/urdf/ur5_robot.urdf"}


def _rel(a, b):
    return float(np.max(np.abs(a - b)) / max(1.0, float(np.max(np.abs(b)))))


def _swap(x):
    """[angular; linear] <-> [linear; angular] along the first axis."""
    return np.concatenate([x[3:6], x[0:3]], axis=0)


@pytest.fixture(scope="module", params=PIN_ROBOTS, ids=[f"{r}-{'floating' if f else 'fixed'}" for r, f in PIN_ROBOTS])
def pin_pair(request):
    pin = pytest.importorskip("pinocchio")
    name, floating = request.param
    path = erd_file(ERD[name]) if name in ERD else ROOT / "examples" / "models" / f"{name}.urdf"
    if path is None:
        pytest.skip("example-robot-data is not installed")
    # the fixed robots as test_derivatives builds them (with derivatives: one module each per session)
    mb = symgen.build(str(path), floating_base=True) if floating else symgen.build(str(path), derivatives=True)
    pm = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer()) if floating else pin.buildModelFromUrdf(str(path))
    return mb, pm, floating


def test_centroidal_functions_match_pinocchio(pin_pair):
    """A_G = ccrba (rows swapped, columns through u = T v), h_G, hdot_G (u_dot = T a + T_dot v) and the centre of
    mass, at random states: 1e-10 relative."""
    import pinocchio as pin

    mb, pm, floating = pin_pair
    pd = pm.createData()
    rng = np.random.default_rng(7)
    for i in range(5):
        q = mb.sanitize(rng.uniform(-2.0, 2.0, mb.nq))
        qp = to_pin_q(mb, pm, q)
        v, a = rng.normal(size=pm.nv), rng.normal(size=pm.nv)
        T = u_map(mb, pm, q, floating)
        u, udot = T @ v, T @ a
        if floating:
            s = mb.u_slice("root_joint").start
            udot[s:s + 3] += mb.frame_pose(q, mb.body_names[0])[:3, :3] @ np.cross(v[3:6], v[:3])
        Ag = pin.ccrba(pm, pd, qp, v)
        assert _rel(_swap(mb.centroidal_momentum_matrix(q) @ T), Ag) < 1e-10, f"A_G, state {i}"
        hg = pin.computeCentroidalMomentum(pm, pd, qp, v).vector
        assert _rel(_swap(mb.centroidal_momentum(q, u)), hg) < 1e-10, f"h_G, state {i}"
        assert _rel(mb.center_of_mass(q), pin.centerOfMass(pm, pd, qp)) < 1e-10, f"c, state {i}"
        dhg = pin.computeCentroidalMomentumTimeVariation(pm, pd, qp, v, a).vector
        assert _rel(_swap(mb.centroidal_dynamics(q, u, udot)), dhg) < 1e-10, f"hdot_G, state {i}"
    # one state from Python: the compiled call (runtime/fastcall.c, installed with the derivative module) gives
    # the method's own path's numbers bit for bit
    assert type(mb.centroidal_momentum_matrix).__name__ == "Call"
    np.testing.assert_array_equal(mb.centroidal_momentum_matrix(q), symgen.MultibodyModel.centroidal_momentum_matrix(mb, q))


@pytest.fixture(scope="module")
def models():
    """Models Pinocchio cannot load: every hinge type over four random trees (two with armature; the trees
    test_derivatives builds), a flexible spacecraft, the bundled floating quadruped."""
    out = {f"hinges{i}": build_model(hinge_group_tree(i), derivatives=True) for i in range(4)}   # test_derivatives
    out["flexible_spacecraft.yaml"] = symgen.build(str(ROOT / "examples" / "models" / "flexible_spacecraft.yaml"))
    out["quadruped-floating"] = symgen.build(str(ROOT / "examples" / "models" / "quadruped.urdf"), floating_base=True)
    return out


MODELS = ["hinges0", "hinges1", "hinges2", "hinges3", "flexible_spacecraft.yaml", "quadruped-floating"]


def _state(mb, rng):
    q = mb.sanitize(rng.uniform(-1.0, 1.0, mb.nq))
    return q, rng.normal(size=mb.nu), rng.normal(size=mb.nu)


@pytest.mark.parametrize("name", MODELS)
def test_momentum_is_the_sum_of_the_bodies(models, name):
    """h_G = sum over the bodies of phi(X_0b) M_b V_b moved to c, with V_b = J_b U from the body Jacobians and M_b
    the body's spatial inertia from the manifest (rigid bodies; 1e-10), and h_G = A_G U; m c = sum m_b c_b."""
    mb = models[name]
    if mb.modes:
        pytest.skip("a flexible body's momentum has its modes' part: checked by the rate below")
    rng = np.random.default_rng(11)
    for _ in range(4):
        q, u, _ = _state(mb, rng)
        h, mc, m = np.zeros(6), np.zeros(3), 0.0
        for body in mb.body_names:
            mass, com, inertia = mb.binding.body_props[body]
            X = mb.frame_pose(q, body)
            R, p = X[:3, :3], X[:3, 3]
            V = mb.jacobian(q, body) @ u                          # [w; v] of the body origin, body axes
            w, v = V[:3], V[3:]
            J = np.array(inertia).reshape(3, 3)                   # about the CoM, body axes
            L = mass * (v + np.cross(w, com))                     # linear momentum, body axes
            H = J @ w + mass * np.cross(com, v + np.cross(w, com))  # angular, about the body origin
            h += np.concatenate([R @ H + np.cross(p, R @ L), R @ L])
            mc += mass * (p + R @ com)
            m += mass
        c = mc / m
        h[:3] -= np.cross(c, h[3:])
        assert_close(mb.center_of_mass(q), c, 1e-10, "c")
        assert_close(mb.centroidal_momentum(q, u), h, 1e-10, "h_G")
        assert_close(mb.centroidal_momentum_matrix(q) @ u, h, 1e-10, "A_G U")


@pytest.mark.parametrize("name", MODELS)
def test_rate_is_the_derivative_of_the_momentum(models, name):
    """hdot_G = d/dt h_G(q(t), u(t)) along Qdot = N(Q) U, Udot (central differences, step 1e-6: 1e-6 relative),
    and its linear part is m cddot; the linear part of h_G is m cdot (the centre of mass's velocity by central
    differences)."""
    mb = models[name]
    rng = np.random.default_rng(12)
    eps = 1e-6
    for _ in range(4):
        q, u, udot = _state(mb, rng)
        qd = mb.qdot(q, u)
        qp, qm = q + eps * qd, q - eps * qd
        rate = (mb.centroidal_momentum(qp, u + eps * udot) - mb.centroidal_momentum(qm, u - eps * udot)) / (2 * eps)
        assert _rel(mb.centroidal_dynamics(q, u, udot), rate) < 1e-6, "hdot_G"
        if not mb.modes:                  # (a flexible body's mass is its nodes')
            cdot = (mb.center_of_mass(qp) - mb.center_of_mass(qm)) / (2 * eps)
            mass = sum(props[0] for props in mb.binding.body_props.values())
            assert _rel(mb.centroidal_momentum(q, u)[3:], mass * cdot) < 1e-6, "linear momentum = m cdot"


@pytest.mark.parametrize("name", ["hinges1", "quadruped-floating", "flexible_spacecraft.yaml"])
def test_batches_equal_one_state_calls(models, name):
    """A batch of 2 W + 3 states (full blocks on the lane form, a tail one state at a time) equals the one-state
    calls bit for bit."""
    mb = models[name]
    rng = np.random.default_rng(13)
    n = 2 * W + 3
    Q = np.array([mb.sanitize(rng.uniform(-1, 1, mb.nq)) for _ in range(n)])
    U, A = rng.normal(size=(n, mb.nu)), rng.normal(size=(n, mb.nu))
    for verb, args in (("centroidal_momentum_matrix", (Q,)), ("centroidal_momentum", (Q, U)),
                       ("center_of_mass", (Q,)), ("centroidal_dynamics", (Q, U, A))):
        batch = getattr(mb, verb)(*args)
        one = np.array([getattr(mb, verb)(*(x[i] for x in args)) for i in range(n)])
        assert batch.shape == one.shape
        assert np.array_equal(batch, one), verb
    # out=: the same numbers written into the caller's array (a batch twice), one state
    # and a batch; a wrong shape is refused
    ref = mb.centroidal_momentum_matrix(Q)
    out = np.full((n, 6, mb.nu), np.nan)
    for _ in range(2):
        assert mb.centroidal_momentum_matrix(Q, out=out) is out and np.array_equal(out, ref)
    one = np.empty((6, mb.nu))
    assert mb.centroidal_momentum_matrix(Q[1], out=one) is one and np.array_equal(one, ref[1])
    with pytest.raises(ValueError, match="out= must be"):
        mb.centroidal_momentum_matrix(Q, out=np.empty((n, mb.nu, 6)))
