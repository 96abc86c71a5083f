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
