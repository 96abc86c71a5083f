"""Frame-to-frame queries (Karana FrameToFrame) and their numerical-difference twins (no sympy, no jinja2).

``mb.f2f(o, p)`` returns a :class:`FrameToFrame`: the relative kinematics of pframe p with respect to oframe
o, built with batched numpy from the two frames' poses, Jacobians and Jacobian derivatives
(``ModelBinding.frame_data``):

* ``rel_transform``: ``X_op``, the pose of p in o;
* ``rel_sp_vel``: the velocity of p relative to o, observed from and represented in o
  (``[R_op w_p - w_o; R_op v_p - v_o + l_op x w_o]`` in o axes); ``jacobian`` maps U to it;
* ``rel_sp_accel``: its time derivative (components in o);
* ``pose_gradient``: maps U to ``d/dt [log R_op; l_op]``.

The rest of Karana's FrameToFrame, with the state as arguments (models are stateless); R = R_op, l = l_op,
(w, v) = ``rel_sp_vel`` and (dw, a) = ``rel_sp_accel``, all in o unless said:

* ``pframe_observed_rel_sp_vel``: ``[R^T w; R^T (v + l x w)]``, the derivative of ``R^T l`` (p-observed);
* ``pframe_observed_rel_sp_accel``: ``[R^T dw; R^T (a + v x w)]``, Karana's d/dt(R^T v) (not the time
  derivative of ``pframe_observed_rel_sp_vel``);
* ``to_pframe_relative_sp_vel`` / ``_accel``: a hypothetical V(o, p) (A(o, p)) turned into V(p, o) (A(p, o)),
  what ``f2f(p, o).rel_sp_vel`` (``rel_sp_accel``) would be;
* ``to_oframe_observed(q, u, x, xdot)``: the o-observed derivative of a 3-vector from its p-observed one
  (``R xdot + w x R x``, in o components);
* ``phi_dot``: d/dt of phi(o, p);
* ``coriolis_accel_oop`` / ``coriolis_accel_tpp``: the Coriolis terms of composing o -> p with p -> target
  (Jain's Eq. 1.69 and 1.73; see the methods for the identities they satisfy);
* ``solve_transform`` / ``solve_sp_vel`` / ``solve_sp_accel``: what a sub-path at either end of o -> p must do
  for o -> p to take a wanted value, the rest of the path as it is at the state;
* ``subchain_orientation``: whether another f2f's path lies on this one's, and which way;
* ``oframe_deriv_rel_rates``: d/dt [log R; l] (``pose_gradient @ u``).

The numerical-difference twins ``rel_sp_vel_num_diff``, ``jacobian_num_diff`` and ``pose_gradient_num_diff``
(Karana's ``*NumDiff``) compute the same from central differences of ``rel_transform``, for cross-validation.
"""
from __future__ import annotations

import numpy as np

from ..numeric import np_jr_inv, np_phi, np_rotation_log, np_skew

FD_STEP = 1e-6


def _vee(W):
    return np.stack([W[..., 2, 1], W[..., 0, 2], W[..., 1, 0]], axis=-1)


def _unit_speeds(n, nu):
    """(j, U = e_j for each of n states) for j in 0..nU-1."""
    for j in range(nu):
        e = np.zeros((n, nu))
        e[:, j] = 1.0
        yield j, e


def _mv(A, x):
    """A x for stacks of matrices and vectors."""
    return np.einsum("nij,nj->ni", A, x)


def _mtv(A, x):
    """A^T x for stacks of matrices and vectors."""
    return np.einsum("nji,nj->ni", A, x)


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
        """4x4 ``X_op``: the pose of the pframe in the oframe."""
        single, _, _, Rop, lop, *_ = self._data(q)
        T = np.zeros((Rop.shape[0], 4, 4))
        T[:, :3, :3], T[:, :3, 3], T[:, 3, 3] = Rop, lop, 1.0
        return self._b.unbatch(single, T)

    def jacobian(self, q, oriented: bool = True) -> np.ndarray:
        """6 x nU: U to ``rel_sp_vel``; ``oriented=False`` negates it (Karana's ``jacobian(target, oriented)``:
        coordinates whose edge runs against the path)."""
        single, _, _, Rop, lop, Jo, _, Jp, _ = self._data(q)
        J = self._jac(Rop, lop, Jo, Jp)
        return self._b.unbatch(single, J if oriented else -J)

    def rel_sp_vel(self, q, u) -> np.ndarray:
        """6-vector ``[w; v]``: the pframe's velocity relative to the oframe, observed from and represented in the
        oframe (``jacobian(q) @ u``)."""
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

    def pose_gradient(self, q, oriented: bool = True) -> np.ndarray:
        """6 x nU map from U to d/dt [log R_op; l_op] (log: rotation vector, angle in [0, pi]);
        ``oriented=False`` negates it (Karana's ``poseGradient(f_to_f, oriented)``)."""
        single, _, _, Rop, lop, Jo, _, Jp, _ = self._data(q)
        J = self._jac(Rop, lop, Jo, Jp)
        G = np.empty_like(J)
        for i in range(J.shape[0]):  # 3x3 per state; the log has no batched closed form worth the trouble
            phi = np_rotation_log(Rop[i])
            G[i, :3] = np_jr_inv(phi) @ Rop[i].T @ J[i, :3]
        G[:, 3:] = J[:, 3:]
        return self._b.unbatch(single, G if oriented else -G)

    # ---- the rest of Karana's FrameToFrame
    def _vel(self, q, u):
        """(single, R, l, w, v) at (q, u), batched."""
        single, _, U, Rop, lop, Jo, _, Jp, _ = self._data(q, u)
        V = _mv(self._jac(Rop, lop, Jo, Jp), U)
        return single, Rop, lop, V[:, :3], V[:, 3:]

    def _vec(self, single, x, n=6):
        """x as a batch of n-vectors broadcast to the state's batch."""
        x = np.asarray(x, dtype=np.float64)
        if x.shape[-1] != n or x.ndim > 2:
            raise ValueError(f"{self}: expected a {n}-vector or a batch (N, {n}), got shape {x.shape}")
        return x.reshape(-1, n)

    def pframe_observed_rel_sp_vel(self, q, u) -> np.ndarray:
        """The velocity of p relative to o observed from and represented in p (Karana
        pframeObservedRelSpVel): ``[R^T w; R^T (v + l x w)]``, the linear part the derivative of ``R^T l``.
        Not ``f2f(p, o).rel_sp_vel``, which is o's velocity relative to p."""
        single, R, l, w, v = self._vel(q, u)
        return self._b.unbatch(single, np.concatenate([_mtv(R, w), _mtv(R, v + np.cross(l, w))], axis=1))

    def pframe_observed_rel_sp_accel(self, q, u, udot) -> np.ndarray:
        """Karana pframeObservedRelSpAccel: ``[R^T dw; R^T (a + v x w)]`` = d/dt (R^T [w; v]) with (dw, a) =
        ``rel_sp_accel``: the derivative of the p components of o's relative velocity (not the time
        derivative of :meth:`pframe_observed_rel_sp_vel`)."""
        single, R, _, w, v = self._vel(q, u)
        A = self._vec(single, self.rel_sp_accel(q, u, udot))
        return self._b.unbatch(single, np.concatenate([_mtv(R, A[:, :3]), _mtv(R, A[:, 3:] + np.cross(v, w))], 1))

    def to_pframe_relative_sp_vel(self, q, V) -> np.ndarray:
        """A hypothetical V(o, p) = [w; v] (in o) as V(p, o), the velocity of o relative to p observed from and
        represented in p (Karana toPframeRelativeSpVel): ``[-R^T w; -R^T (v + l x w)]``; with the true V this
        is ``f2f(p, o).rel_sp_vel``."""
        single, _, _, R, l, *_ = self._data(q)
        V = self._vec(single, V)
        w, v = V[:, :3], V[:, 3:]
        return self._b.unbatch(single and V.shape[0] == 1,
                               np.concatenate([-_mtv(R, w), -_mtv(R, v + np.cross(l, w))], axis=1))

    def to_pframe_relative_sp_accel(self, q, u, A) -> np.ndarray:
        """A hypothetical A(o, p) = [dw; a] (in o) as A(p, o), with the velocities at (q, u) (Karana
        toPframeRelativeSpAccel): ``[-R^T dw; -R^T (a + l x dw + 2 v x w - w x (l x w))]``; with the true A
        this is ``f2f(p, o).rel_sp_accel``."""
        single, R, l, w, v = self._vel(q, u)
        A = self._vec(single, A)
        dw, a = A[:, :3], A[:, 3:]
        lin = a + np.cross(l, dw) + 2.0 * np.cross(v, w) - np.cross(w, np.cross(l, w))
        return self._b.unbatch(single and A.shape[0] == 1, np.concatenate([-_mtv(R, dw), -_mtv(R, lin)], axis=1))

    def to_oframe_observed(self, q, u, x, xdot) -> np.ndarray:
        """The o-observed time derivative, in o components, of a 3-vector given in p components with its
        p-observed derivative (Karana toOframeObserved): ``R xdot + w x (R x)``.  To move a derivative from
        observer B to observer A, call it on ``f2f(A, B)``."""
        single, R, _, w, _ = self._vel(q, u)
        x, xdot = self._vec(single, x, 3), self._vec(single, xdot, 3)
        return self._b.unbatch(single and x.shape[0] == 1, _mv(R, xdot) + np.cross(w, _mv(R, x)))

    def phi(self, q) -> np.ndarray:
        """phi(o, p) = [[R, l~ R], [0, R]] (6 x 6): moves p's spatial forces to o."""
        single, _, _, R, l, *_ = self._data(q)
        return self._b.unbatch(single, np_phi(R, l))

    def phi_dot(self, q, u) -> np.ndarray:
        """d/dt phi(o, p) (Karana phiDotMatrix): ``[[w~ R, (v~ + l~ w~) R], [0, w~ R]]``, equal to
        ``-phi(o, p) [V_p(o, p)]~*`` with V_p = [R^T w; R^T v] (the spatial cross product of forces)."""
        single, R, l, w, v = self._vel(q, u)
        Rd = np_skew(w) @ R
        P = np.zeros((R.shape[0], 6, 6))
        P[:, :3, :3] = P[:, 3:, 3:] = Rd
        P[:, :3, 3:] = np_skew(v) @ R + np_skew(l) @ Rd
        return self._b.unbatch(single, P)

    def _chain(self, target):
        """(f2f(p, t), f2f(o, t)) for a target frame."""
        t = self.model.frame_names[self._b.frame_index(target)]
        return FrameToFrame(self.model, self.pframe, t), FrameToFrame(self.model, self.oframe, t)

    def coriolis_accel_oop(self, q, u, target) -> np.ndarray:
        """The Coriolis term of composing o -> p with p -> t, in o (Karana coriolisAccelOop, Jain Eq. 1.69):
        ``[w(o,p) x w(p,t); w(o,p) x (v(o,t) - v(o,p) + v(p,t))]``, every vector in o components.  It is what
        ``A(o,t) = [dw(o,p) + R dw(p,t); a(o,p) + dw(o,p) x R l(p,t) + R a(p,t)] + coriolis`` needs, with
        A = ``rel_sp_accel`` and R = R_op."""
        pt, ot = self._chain(target)
        single, R, _, w, v = self._vel(q, u)
        _, _, _, wpt, vpt = pt._vel(q, u)
        _, _, _, _, vot = ot._vel(q, u)
        Wpt, Vpt = _mv(R, wpt), _mv(R, vpt)
        return self._b.unbatch(single, np.concatenate([np.cross(w, Wpt), np.cross(w, vot - v + Vpt)], axis=1))

    def coriolis_accel_tpp(self, q, u, target) -> np.ndarray:
        """The Coriolis term of composing o -> p with p -> t, in t (Karana coriolisAccelTpp, Jain Eq. 1.73):
        ``[w(o,p) x w(p,t); w(o,p) x v(p,t) + v(o,t) x w(p,t)]``, every vector in t components.  It is what
        ``f2f(o,t).pframe_observed_rel_sp_accel = phi(p,t)^T pframe_observed_rel_sp_accel +
        R_tp f2f(p,t).rel_sp_accel + coriolis`` needs."""
        pt, ot = self._chain(target)
        single, _, _, w, _ = self._vel(q, u)
        _, Rpt, _, wpt, vpt = pt._vel(q, u)
        _, Rot, _, _, vot = ot._vel(q, u)
        w_t, vpt_t, wpt_t, vot_t = _mtv(Rot, w), _mtv(Rpt, vpt), _mtv(Rpt, wpt), _mtv(Rot, vot)
        return self._b.unbatch(single, np.concatenate([np.cross(w_t, wpt_t),
                                                       np.cross(w_t, vpt_t) + np.cross(vot_t, wpt_t)], axis=1))

    def _split(self, sub):
        """(sub at the start: True / at the end: False, the other segment's f2f) for a sub-path of this one."""
        if not isinstance(sub, FrameToFrame):
            sub = FrameToFrame(self.model, *sub)
        if sub.oframe == self.oframe:
            return True, FrameToFrame(self.model, sub.pframe, self.pframe)
        if sub.pframe == self.pframe:
            return False, FrameToFrame(self.model, self.oframe, sub.oframe)
        raise ValueError(f"{self}: {sub} is at neither end of the path (its oframe must be {self.oframe!r} or its "
                         f"pframe {self.pframe!r})")

    def _segments(self, sub, other):
        """(sub at the start, f2f o -> b, f2f b -> p) for a sub-path at either end and the rest (None: found)."""
        first, seg = self._split(sub)
        other = other if other is not None else seg
        ob, bp = (sub, other) if first else (other, sub)
        ob, bp = (x if isinstance(x, FrameToFrame) else FrameToFrame(self.model, *x) for x in (ob, bp))
        return first, ob, bp

    def solve_transform(self, q, sub, X) -> np.ndarray:
        """The transform ``sub`` (an f2f at either end of this path: o -> b or b -> p) must have for this f2f's
        ``rel_transform`` to be X (4 x 4), the rest of the path as it is at q (Karana solveTransform)."""
        first, other = self._split(sub)
        Xo = np.asarray(other.rel_transform(q))
        X = np.asarray(X, dtype=np.float64)
        return X @ np.linalg.inv(Xo) if first else np.linalg.inv(Xo) @ X

    def solve_sp_vel(self, q, u, sub, other, V) -> np.ndarray:
        """The relative velocity ``sub`` must have for this f2f's ``rel_sp_vel`` to be V, the rest of the path
        (``other``; None: found from the path) moving as at (q, u) (Karana solveSpVel).  With o -> b -> p:
        ``V(o,p) = [w(o,b) + R w(b,p); v(o,b) + w(o,b) x R l(b,p) + R v(b,p)]``, R = R_ob."""
        first, ob, bp = self._segments(sub, other)
        single, R, _, w_ob, v_ob = ob._vel(q, u)
        _, _, l_bp, w_bp, v_bp = bp._vel(q, u)
        V = self._vec(single, V)
        L = _mv(R, l_bp)
        if first:
            w = V[:, :3] - _mv(R, w_bp)
            v = V[:, 3:] - _mv(R, v_bp) - np.cross(w, L)
        else:
            w = _mtv(R, V[:, :3] - w_ob)
            v = _mtv(R, V[:, 3:] - v_ob - np.cross(w_ob, L))
        return self._b.unbatch(single and V.shape[0] == 1, np.concatenate([w, v], axis=1))

    def solve_sp_accel(self, q, u, udot, sub, other, A) -> np.ndarray:
        """The relative acceleration ``sub`` must have for this f2f's ``rel_sp_accel`` to be A, the rest of the
        path (``other``; None: found from the path) accelerating as at (q, u, udot) and the Coriolis term taken
        with the velocities at (q, u) (Karana solveSpAccel).  With o -> b -> p, R = R_ob, L = R l(b,p):
        ``A(o,p) = [dw(o,b) + R dw(b,p); a(o,b) + dw(o,b) x L + R a(b,p)] + coriolis_accel_oop``."""
        first, ob, bp = self._segments(sub, other)
        single, R, _, _, _ = ob._vel(q, u)
        _, _, l_bp, _, _ = bp._vel(q, u)
        cor = self._vec(single, ob.coriolis_accel_oop(q, u, self.pframe))
        A = self._vec(single, A)
        L = _mv(R, l_bp)
        if first:
            A_bp = self._vec(single, bp.rel_sp_accel(q, u, udot))
            dw = A[:, :3] - _mv(R, A_bp[:, :3]) - cor[:, :3]
            a = A[:, 3:] - np.cross(dw, L) - _mv(R, A_bp[:, 3:]) - cor[:, 3:]
        else:
            A_ob = self._vec(single, ob.rel_sp_accel(q, u, udot))
            dw = _mtv(R, A[:, :3] - A_ob[:, :3] - cor[:, :3])
            a = _mtv(R, A[:, 3:] - A_ob[:, 3:] - np.cross(A_ob[:, :3], L) - cor[:, 3:])
        return self._b.unbatch(single and A.shape[0] == 1, np.concatenate([dw, a], axis=1))

    def path(self) -> list:
        """The frames from o to p through the tree: o, the bodies up to the common ancestor and down, p
        (a frame that is not a body frame hangs off its body)."""
        m = self.model
        names = {b["name"] for b in m.manifest["bodies"]}
        parent = {b["name"]: b["parent"] for b in m.manifest["bodies"]}

        def up(f):
            chain = [f]
            if f not in names and f != "newtonian":
                k = m.manifest["frames"][f]["body"]
                chain.append("newtonian" if k < 0 else m.manifest["bodies"][k]["name"])
            while chain[-1] != "newtonian":
                chain.append(parent[chain[-1]])
            return chain

        a, b = up(self.oframe), up(self.pframe)
        common = next(x for x in a if x in set(b))
        return a[:a.index(common) + 1] + b[:b.index(common)][::-1]

    def subchain_orientation(self, sub):
        """True if ``sub``'s path (an f2f or (oframe, pframe)) lies on this one's and runs the same way, False if
        it runs the other way, None if it is not on the path (Karana subchainOrientation)."""
        sub = sub if isinstance(sub, FrameToFrame) else FrameToFrame(self.model, *sub)
        mine, theirs = self.path(), sub.path()
        k = len(theirs)
        for seq, result in ((theirs, True), (theirs[::-1], False)):
            if any(mine[i:i + k] == seq for i in range(len(mine) - k + 1)):
                return result
        return None

    def oframe_deriv_rel_rates(self, q, u) -> np.ndarray:
        """d/dt [log R_op; l_op] (Karana oframeDerivRelRates): the rates of the rotation vector and of the
        position in o, ``pose_gradient(q) @ u``."""
        b = self._b
        single, Q, U = b.states(q, u)
        return b.unbatch(single, _mv(np.asarray(self.pose_gradient(Q)), U))

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

    def jacobian_num_diff(self, q, h: float = FD_STEP) -> np.ndarray:
        """:meth:`jacobian` (6 x nU) from central differences of ``rel_transform`` along ``Qdot = N e_j``, column
        by column (Karana's ``jacobianNumDiff``)."""
        m, b = self.model, self._b
        single, Q, _ = b.states(q)
        J = np.empty((Q.shape[0], 6, m.nu))
        for j, e in _unit_speeds(Q.shape[0], m.nu):
            J[:, :, j] = np.asarray(self.rel_sp_vel_num_diff(Q, e, h)).reshape(-1, 6)
        return b.unbatch(single, J)

    def pose_gradient_num_diff(self, q, h: float = FD_STEP) -> np.ndarray:
        """pose_gradient from central differences of [log R_op; l_op] along N e_j."""
        m, b = self.model, self._b
        single, Q, _ = b.states(q)
        G = np.empty((Q.shape[0], 6, m.nu))
        for j, e in _unit_speeds(Q.shape[0], m.nu):
            qp, qm = self._along(Q, m.qdot(Q, e), h)
            Tp, Tm = self.rel_transform(qp), self.rel_transform(qm)
            for i in range(Q.shape[0]):
                G[i, :3, j] = (np_rotation_log(Tp[i, :3, :3]) - np_rotation_log(Tm[i, :3, :3])) / (2 * h)
            G[:, 3:, j] = (Tp[:, :3, 3] - Tm[:, :3, 3]) / (2 * h)
        return b.unbatch(single, G)
