"""Frame-to-frame queries (Karana FrameToFrame) and their numerical-difference twins (no sympy, no jinja2).

``mb.f2f(o, p)`` returns a :class:`FrameToFrame`: the relative kinematics of pframe p with respect to oframe
o, built with batched numpy from the two frames' poses, Jacobians and Jacobian derivatives
(``ModelBinding.frame_data``):

* ``rel_transform``: ``X_op``, the pose of p in o;
* ``rel_sp_vel``: the velocity of p relative to o, observed from and represented in o
  (``[R_op w_p - w_o; R_op v_p - v_o + l_op x w_o]`` in o axes); ``jacobian`` maps U to it;
* ``rel_sp_accel``: its time derivative (components in o);
* ``pose_gradient``: maps U to ``d/dt [log R_op; l_op]``.

The numerical-difference twins ``rel_sp_vel_num_diff`` and ``pose_gradient_num_diff`` (Karana's ``*NumDiff``)
compute the same from central differences of ``rel_transform``, for cross-validation.
"""
from __future__ import annotations

import numpy as np

from ..numeric import np_jr_inv, np_rotation_log, np_skew

FD_STEP = 1e-6


def _vee(W):
    return np.stack([W[..., 2, 1], W[..., 0, 2], W[..., 1, 0]], axis=-1)


class FrameToFrame:
    """Relative kinematics of ``pframe`` with respect to ``oframe`` (Karana FrameToFrame); get one from
    :meth:`MultibodyModel.f2f`.  Every method takes one state or a batch (leading axis N)."""

    def __init__(self, model, oframe: str, pframe: str):
        self.model, self.oframe, self.pframe = model, oframe, pframe
        self._b = model.binding

    def __repr__(self):
        return f"<f2f {self.oframe} -> {self.pframe}>"

    def _data(self, q, u=None):
        b = self._b
        single, Q, U = b.states(q, u)
        Ro, po, Jo, Jdo = b.frame_data(Q, U, self.oframe)
        Rp, pp, Jp, Jdp = b.frame_data(Q, U, self.pframe)
        RoT = np.swapaxes(Ro, -1, -2)
        Rop = RoT @ Rp
        lop = np.einsum("nij,nj->ni", RoT, pp - po)
        return single, Q, U, Rop, lop, Jo, Jdo, Jp, Jdp

    @staticmethod
    def _jac(Rop, lop, Jo, Jp):
        Jw = Rop @ Jp[:, :3] - Jo[:, :3]
        Jv = Rop @ Jp[:, 3:] - Jo[:, 3:] + np_skew(lop) @ Jo[:, :3]
        return np.concatenate([Jw, Jv], axis=1)

    def rel_transform(self, q) -> np.ndarray:
        single, _, _, Rop, lop, *_ = self._data(q)
        T = np.zeros((Rop.shape[0], 4, 4))
        T[:, :3, :3], T[:, :3, 3], T[:, 3, 3] = Rop, lop, 1.0
        return self._b.unbatch(single, T)

    def jacobian(self, q) -> np.ndarray:
        single, _, _, Rop, lop, Jo, _, Jp, _ = self._data(q)
        return self._b.unbatch(single, self._jac(Rop, lop, Jo, Jp))

    def rel_sp_vel(self, q, u) -> np.ndarray:
        single, _, U, Rop, lop, Jo, _, Jp, _ = self._data(q, u)
        return self._b.unbatch(single, np.einsum("nij,nj->ni", self._jac(Rop, lop, Jo, Jp), U))

    def rel_sp_accel(self, q, u, udot) -> np.ndarray:
        """d/dt of rel_sp_vel (components in the oframe) = J Udot + Jdot U."""
        single, Q, U, Rop, lop, Jo, Jdo, Jp, Jdp = self._data(q, u)
        _, _, Ud = self._b.states(q, udot)
        wo = np.einsum("nij,nj->ni", Jo[:, :3], U)
        wp = np.einsum("nij,nj->ni", Jp[:, :3], U)
        Rop_dot = -np_skew(wo) @ Rop + Rop @ np_skew(wp)
        ldot = np.einsum("nij,nj->ni", self._jac(Rop, lop, Jo, Jp)[:, 3:], U)
        Jdw = Rop_dot @ Jp[:, :3] + Rop @ Jdp[:, :3] - Jdo[:, :3]
        Jdv = (Rop_dot @ Jp[:, 3:] + Rop @ Jdp[:, 3:] - Jdo[:, 3:] + np_skew(ldot) @ Jo[:, :3]
               + np_skew(lop) @ Jdo[:, :3])
        Jd = np.concatenate([Jdw, Jdv], axis=1)
        J = self._jac(Rop, lop, Jo, Jp)
        return self._b.unbatch(single, np.einsum("nij,nj->ni", J, Ud) + np.einsum("nij,nj->ni", Jd, U))

    def pose_gradient(self, q) -> np.ndarray:
        """6 x nU map from U to d/dt [log R_op; l_op] (log: rotation vector, angle in [0, pi])."""
        single, _, _, Rop, lop, Jo, _, Jp, _ = self._data(q)
        J = self._jac(Rop, lop, Jo, Jp)
        G = np.empty_like(J)
        for i in range(J.shape[0]):  # 3x3 per state; the log has no batched closed form worth the trouble
            phi = np_rotation_log(Rop[i])
            G[i, :3] = np_jr_inv(phi) @ Rop[i].T @ J[i, :3]
        G[:, 3:] = J[:, 3:]
        return self._b.unbatch(single, G)

    # ---- numerical-difference twins (cross-validation)
    def _along(self, Q, d, h):
        m = self.model
        return m.sanitize(Q + h * d), m.sanitize(Q - h * d)

    def rel_sp_vel_num_diff(self, q, u, h: float = FD_STEP) -> np.ndarray:
        """rel_sp_vel from central differences of rel_transform along Qdot = N U."""
        m, b = self.model, self._b
        single, Q, U = b.states(q, u)
        d = m.qdot(Q, U)
        qp, qm = self._along(Q, d, h)
        Tp, Tm, T = self.rel_transform(qp), self.rel_transform(qm), self.rel_transform(Q)
        Td = (Tp - Tm) / (2 * h)
        w = _vee(Td[:, :3, :3] @ np.swapaxes(T[:, :3, :3], -1, -2))
        return b.unbatch(single, np.concatenate([w, Td[:, :3, 3]], axis=1))

    def pose_gradient_num_diff(self, q, h: float = FD_STEP) -> np.ndarray:
        """pose_gradient from central differences of [log R_op; l_op] along N e_j."""
        m, b = self.model, self._b
        single, Q, _ = b.states(q)
        G = np.empty((Q.shape[0], 6, m.nu))
        for j in range(m.nu):
            e = np.zeros((Q.shape[0], m.nu))
            e[:, j] = 1.0
            qp, qm = self._along(Q, m.qdot(Q, e), h)
            Tp, Tm = self.rel_transform(qp), self.rel_transform(qm)
            for i in range(Q.shape[0]):
                G[i, :3, j] = (np_rotation_log(Tp[i, :3, :3]) - np_rotation_log(Tm[i, :3, :3])) / (2 * h)
            G[:, 3:, j] = (Tp[:, :3, 3] - Tm[:, :3, 3]) / (2 * h)
        return b.unbatch(single, G)
