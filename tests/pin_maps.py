"""symgen <-> Pinocchio coordinate maps shared by the oracle tests.

Pinocchio stores a continuous joint as (cos, sin) and a free-flyer's v as [v; w] in the body frame; symgen's
FULL6DOF U is [p_dot in the world; w in the body]: u_symgen = T v_pin with T = diag(R_base, I, I, ...).
"""
from __future__ import annotations

import numpy as np


def to_pin_q(mb, pm, q):
    qp = np.zeros(pm.nq)
    for j in range(1, pm.njoints):
        jm, sl = pm.joints[j], mb.q_slice(pm.names[j])
        if jm.nq == 2 and jm.nv == 1:
            qp[jm.idx_q:jm.idx_q + 2] = np.cos(q[sl][0]), np.sin(q[sl][0])
        else:
            qp[jm.idx_q:jm.idx_q + jm.nq] = q[sl]
    return qp


def u_map(mb, pm, q, floating):
    """T (nu x nv) with u_symgen = T v_pin, columns in Pinocchio's order."""
    T = np.zeros((mb.nu, pm.nv))
    for j in range(1, pm.njoints):
        jm, su = pm.joints[j], mb.u_slice(pm.names[j])
        T[su, jm.idx_v:jm.idx_v + jm.nv] = np.eye(jm.nv)
    if floating:
        s = mb.u_slice("root_joint").start
        T[s:s + 3, 0:3] = mb.frame_pose(q, mb.body_names[0])[:3, :3]
    return T


def compare_with_pinocchio(mb, pm, floating, rng, n_states=5, frames=True) -> dict:
    """Largest relative error ``|symgen - pin| / max(1, |pin|_max)`` of forward dynamics (``pin.aba``),
    inverse dynamics (``pin.rnea``), the mass matrix (``pin.crba``) and every link pose
    (``framesForwardKinematics``) over ``n_states`` random states, after the maps above.  ``pm.gravity``
    and ``pm.armature`` must already match the symgen model's."""
    import pinocchio as pin

    def rel(a, b):
        a, b = np.asarray(a, float), np.asarray(b, float)
        if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
            return float("inf")
        return float(np.max(np.abs(a - b)) / max(1.0, float(np.max(np.abs(b))))) if a.size else 0.0

    pd = pm.createData()
    err = {"fd": 0.0, "id": 0.0, "M": 0.0, "poses": 0.0}
    links = [f.name for f in pm.frames if f.type == pin.FrameType.BODY] if frames else []
    for _ in range(n_states):
        q = mb.sanitize(rng.uniform(-2.0, 2.0, mb.nq))
        qp = to_pin_q(mb, pm, q)
        v, a, tau = rng.normal(size=pm.nv), rng.normal(size=pm.nv), rng.normal(size=pm.nv)
        T = u_map(mb, pm, q, floating)
        u, udot, extra = T @ v, T @ a, 0.0
        if floating:
            # d/dt (T v) = T a + T_dot v, T_dot only in the free-flyer block: R [w]x v_lin
            s = mb.u_slice("root_joint").start
            extra = np.zeros(mb.nu)
            extra[s:s + 3] = mb.frame_pose(q, mb.body_names[0])[:3, :3] @ np.cross(v[3:6], v[:3])
            udot = udot + extra
        # inverse dynamics: power balance T_symgen . u = tau_pin . v  ->  tau_pin = T^T T_symgen
        err["id"] = max(err["id"], rel(T.T @ mb.inverse_dynamics(q, u, udot), pin.rnea(pm, pd, qp, v, a)))
        expected = T @ pin.aba(pm, pd, qp, v, tau) + extra
        err["fd"] = max(err["fd"], rel(mb.forward_dynamics(q, u, np.linalg.solve(T.T, tau)), expected))
        Mp = pin.crba(pm, pd, qp)
        Mp = np.triu(Mp) + np.triu(Mp, 1).T
        err["M"] = max(err["M"], rel(T.T @ mb.mass_matrix(q) @ T, Mp))
        if links:
            pin.framesForwardKinematics(pm, pd, qp)
            for name in links:
                err["poses"] = max(err["poses"], rel(mb.frame_pose(q, name), pd.oMf[pm.getFrameId(name, pin.FrameType.BODY)].homogeneous))
    return err


def set_armature(pm, armature: dict) -> None:
    """Pinocchio's ``model.armature`` from symgen's ``{hinge: value}`` (hinge names are the joint names)."""
    arm = np.array(pm.armature)
    for h, val in armature.items():
        jm = pm.joints[pm.getJointId(h)]
        arm[jm.idx_v:jm.idx_v + jm.nv] = val
    pm.armature = arm
