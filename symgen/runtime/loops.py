"""Closed chains on a built model (no sympy, no jinja2): the loop constraints' queries, tree-augmented
forward dynamics, closed-chain inverse dynamics and constraint kinematics (``project``).

The numbers come from the generated C (``sg_<m>_loop_errors``, ``loop_jacobian``, ``ta_forward_dynamics``,
see :mod:`symgen.algorithms.loops`); this room only batches, names and solves the small dense problems around them
(Newton steps of ``project``, the least squares of inverse dynamics).
"""
from __future__ import annotations

import numpy as np


class LoopError(RuntimeError):
    """A loop constraint that cannot be satisfied (frames out of reach, a singular configuration)."""


class LoopConstraint:
    """One loop constraint (a cut joint) of a built model: ``mb.loop(name)``.

    The cut-joint hinge ``hinge_type`` runs from the ``source`` frame; the loop is closed when its pframe E
    coincides with the ``target`` frame.  Errors are those of the error f2f E -> T (Karana's
    ``errorFrameToFrame``) in E axes, with the cut joint at its best-fit Q, U, Udot: ``pose_error`` =
    ``[log R_ET; l_ET]``, ``vel_error`` = ``[w; v]``, ``accel_error`` likewise; the constrained parts
    (``OC^T`` error, ``n_residuals`` numbers) are what the dynamics and ``project`` drive to zero."""

    def __init__(self, mb, i: int, info: dict):
        self._mb, self.index = mb, i
        self.name, self.source, self.target = info["name"], info["source"], info["target"]
        self.hinge_type, self.hinge_params = info["hinge"], info.get("hinge_params", {})
        self.n_residuals, self.nq, self.nu = info["n_res"], info["nq"], info["nu"]
        self.source_body, self.target_body = info["source_body"], info["target_body"]
        self._rec = mb.layout.loop_errors[i]
        self._off = mb.layout.loop_error_offset[i]
        #: rows of this loop in G_c, lambda and the other stacked constraint arrays
        self.rows = slice(sum(mb.layout.n_res[:i]), sum(mb.layout.n_res[:i + 1]))
        self._slug = info["slug"]

    def __repr__(self):
        return (f"<LoopConstraint {self.name}: {self.source} -> {self.target} by {self.hinge_type}, "
                f"{self.n_residuals} residuals>")

    def _errors(self, q, u=None, udot=None):
        b = self._mb.binding
        single, Q, U = b.states(q, u)
        _, _, A = b.states(q, udot)
        out, _ = b.call_batch("loop_errors", Q, U, A, b.layout.loop_errors_size)  # A rides in p's place
        blk = out[:, self._off:self._off + self._rec.size]
        return single, blk

    def _field(self, blk, single, name):
        a = blk[:, self._rec.span(name)]
        return a[0] if single else a

    def pose_error(self, q) -> np.ndarray:
        """``[log R_ET; l_ET]`` (6, E axes): the error f2f's relative pose with the cut joint at its best fit."""
        single, blk = self._errors(q)
        return self._field(blk, single, "pose")

    def vel_error(self, q, u) -> np.ndarray:
        """T's velocity relative to E, ``[w; v]`` (6, E axes): what the cut joint's best-fit U leaves."""
        single, blk = self._errors(q, u)
        return self._field(blk, single, "vel")

    def accel_error(self, q, u, udot) -> np.ndarray:
        """T's acceleration relative to E (6, E axes): what the cut joint's best-fit U and Udot leave."""
        single, blk = self._errors(q, u, udot)
        return self._field(blk, single, "accel")

    def residuals(self, q, u=None, udot=None) -> dict:
        """The constrained parts ``OC^T error`` (n_residuals each) of the pose, velocity and acceleration
        errors, and the cut joint's best-fit ``q``, ``u``, ``udot``."""
        single, blk = self._errors(q, u, udot)
        return {k: self._field(blk, single, f) for k, f in (("pose", "pose_c"), ("vel", "vel_c"),
                                                              ("accel", "accel_c"), ("q", "q"), ("u", "u"),
                                                              ("udot", "udot"))}

    def cut_q(self, q) -> np.ndarray:
        """The cut joint's best-fit Q (its pframe as close to the target as the hinge allows)."""
        return self.residuals(q)["q"]

    def cut_force_map(self, q) -> np.ndarray:
        """F = H (H^T H)^-1 (6 x nU of the cut joint): its generalized force T_cut -> the least-norm wrench
        ``F T_cut`` on the target node (target axes, ``H^T F T_cut = T_cut``), H the cut joint's coord map at
        its best-fit Q."""
        if not self.nu:
            return np.zeros((6, 0))
        from .hinge_kernels import HingeKernels

        hk = HingeKernels(self._mb.binding, self._mb.manifest["hinge_specs"][self._slug])
        qh = self.cut_q(q) if self.nq else np.zeros(0)
        H = hk.coord_map(qh)
        return H @ np.linalg.inv(H.T @ H)

    def sp_external_force_from_t(self, T_cut, q=None, as_f_ext: bool = False):
        """Cut-joint generalized forces -> equal and opposite spatial forces at the two nodes (Karana's
        ``spExternalForceFromT``): once the joint is cut its T no longer enters the tree dynamics, so it is
        applied as external forces.  The force on the target node is ``f = H (H^T H)^-1 T_cut`` (the
        least-norm wrench with ``H^T f = T_cut``, H the cut joint's coord map at its best-fit Q), in the
        target frame; the source node gets ``-f`` moved to the source frame.

        Returns ``(f_source, f_target)`` (each ``[N; F]`` in its own frame at its origin), or with
        ``as_f_ext=True`` the ``(nb, 6)`` body wrenches to pass as ``f_ext=``.  ``q`` defaults to the
        model's default Q (then the cut joint's best fit there)."""
        mb = self._mb
        T_cut = np.asarray(T_cut, dtype=float).reshape(-1)
        if T_cut.shape != (self.nu,):
            raise ValueError(f"{mb.name}: loop '{self.name}': T_cut must have {self.nu} entries (the cut joint's "
                             f"U), got {T_cut.shape[0]}")
        q = mb.default_q() if q is None else np.asarray(q, dtype=float)
        fE = self.cut_force_map(q) @ T_cut
        # E -> T is the identity when the loop is closed; X_ST from the frame poses
        XS, XT = mb.frame_pose(q, self.source), mb.frame_pose(q, self.target)
        XST = np.linalg.solve(XS, XT)
        R, l = XST[:3, :3], XST[:3, 3]
        fT = fE
        FS = -(R @ fT[3:])
        NS = -(R @ fT[:3]) + np.cross(l, FS)
        fS = np.concatenate([NS, FS])
        if not as_f_ext:
            return fS, fT
        F = np.zeros((mb.nb, 6))
        for frame, f in ((self.source, fS), (self.target, fT)):
            if mb.binding.frame(frame)[0] >= 0:             # a node on the ground takes its force: nothing moves
                F += mb.binding.fext(1, {frame: f})[0]
        return F


def ta_forward_dynamics(mb, q, u, T, f_ext=None, gravity=None, baumgarte=None) -> dict:
    """Tree-augmented forward dynamics (the C ``sg_<m>_ta_forward_dynamics``).  Returns ``udot``, ``lambda``
    (stacked, n_c), ``f_target`` ((n_loops, 6)) and ``rank`` (of the compliance, per state)."""
    b = mb.binding
    single, Q, U = b.states(q, u)
    _, _, Tm = b.states(q, T)
    n, L = Q.shape[0], b.layout
    P = np.zeros((n, L.ta_params.size))
    P[:, :L.params.size] = b.p(n, Tm, f_ext, gravity)
    if baumgarte is not None:
        P[:, L.ta_params.span("gains")] = b.loop_gains(baumgarte)
    out, status = b.call_batch("ta_forward_dynamics", Q, U, P, L.ta_out.size)
    b.check_status(status, "forward_dynamics")
    O = L.ta_out
    res = {"udot": out[:, O.span("udot")], "lambda": out[:, O.span("lambda")],
           "f_target": out[:, O.span("f_target")].reshape(n, -1, 6), "rank": out[:, O["rank"]].astype(int)}
    return {k: (v[0] if single else v) for k, v in res.items()}


def constraint_jacobian(mb, q, u=None):
    """(G_c, gamma): the stacked constraint Jacobian (n_c x nU) and velocity-product term (n_c), so that
    ``G_c Udot + gamma`` is the constrained relative acceleration the TA dynamics sets to zero (or to the
    Baumgarte term)."""
    b = mb.binding
    single, Q, U = b.states(q, u)
    L = b.layout
    out, _ = b.call_batch("loop_jacobian", Q, U, None, L.loop_jacobian.size)
    G = out[:, L.loop_jacobian.span("G")].reshape(-1, L.nc, mb.nu)
    g = out[:, L.loop_jacobian.span("gamma")]
    return (G[0], g[0]) if single else (G, g)


def constraint_residuals(mb, q, u=None):
    """Stacked constrained pose and velocity errors (n_c each) of every loop at one state."""
    e, ed = [], []
    for c in mb.loops:
        r = c.residuals(q, u)
        e.append(r["pose"])
        ed.append(r["vel"])
    return np.concatenate(e) if e else np.zeros(0), np.concatenate(ed) if ed else np.zeros(0)


def _free_columns(mb, fixed):
    if fixed is None:
        return np.ones(mb.nu, dtype=bool)
    cols = np.ones(mb.nu, dtype=bool)
    for h in ([fixed] if isinstance(fixed, str) else fixed):
        cols[mb.u_slice(h)] = False
    return cols


def project(mb, q, u=None, fixed=None, tol: float = 1e-12, max_iter: int = 50, max_step: float = 0.5):
    """Assemble the closed chains: Newton on the constrained pose errors with the constraint Jacobian
    (minimum-norm steps ``dU = -G_c^+ e`` over the free hinges, ``Q <- Q + N(Q) dU`` then sanitized), then
    project U onto the constraint null space (minimum-norm change).  ``fixed``: hinge names whose Q and U
    are held (drive the crank, solve the rest).  Raises :class:`LoopError` naming the loop with the largest
    residual when the pose error does not fall below ``tol`` (frames out of reach, a singular
    configuration); never returns a non-converged state."""
    q = np.array(q, dtype=float)
    if q.ndim != 1:
        raise ValueError(f"{mb.name}: project takes one state, got q of shape {q.shape}")
    q = mb.sanitize(q)
    u = np.zeros(mb.nu) if u is None else np.array(u, dtype=float)
    free = _free_columns(mb, fixed)

    def err_of(q):
        e, _ = constraint_residuals(mb, q)
        return e, (float(np.linalg.norm(e)) if e.size else 0.0)

    def step(q, d):
        return mb.sanitize(q + mb.qdot(q, d))

    e, err = err_of(q)
    for it in range(max_iter):
        if not np.max(np.abs(e), initial=0.0) >= tol:
            break
        # Newton direction from the constraint Jacobian (exact at closure: quadratic convergence there);
        # away from closure a backtracking line search, and a finite-difference Jacobian if that fails
        for jac in ("analytic", "numeric"):
            if jac == "analytic":
                G, _ = constraint_jacobian(mb, q)
            else:
                h = 1e-7
                G = np.zeros((e.size, mb.nu))
                for j in np.flatnonzero(free):
                    G[:, j] = (err_of(step(q, h * np.eye(mb.nu)[j]))[0] - err_of(step(q, -h * np.eye(mb.nu)[j]))[0]) / (2 * h)
            d = np.zeros(mb.nu)
            d[free] = -np.linalg.lstsq(G[:, free], e, rcond=1e-12)[0]
            t, accepted = min(1.0, max_step / max(float(np.max(np.abs(d))), 1e-300)), False
            while t > 1.0 / 64:
                qn = step(q, t * d)
                en, errn = err_of(qn)
                if errn < err:
                    accepted = True
                    break
                t /= 2
            if accepted:
                q, e, err = qn, en, errn
                break
        else:
            break
    if np.max(np.abs(e), initial=0.0) >= tol or not np.all(np.isfinite(e)):
        worst, werr = None, -1.0
        for c in mb.loops:
            r = float(np.max(np.abs(c.residuals(q)["pose"]))) if c.n_residuals else 0.0
            if r > werr:
                worst, werr = c, r
        held = f" with {', '.join([fixed] if isinstance(fixed, str) else fixed)} held" if fixed else ""
        raise LoopError(f"{mb.name}: project: loop '{worst.name}' ({worst.source} -> {worst.target}, "
                        f"{worst.hinge_type}) does not close{held}: its constrained pose error is still "
                        f"{werr:.3g} after {it + 1} Newton steps (tolerance {tol:g}); the frames may be "
                        f"out of reach, or the configuration singular")
    G, _ = constraint_jacobian(mb, q)
    if G.size:
        u = u.copy()
        du = np.zeros(mb.nu)
        du[free] = -np.linalg.lstsq(G[:, free], G @ u, rcond=1e-12)[0]
        u += du
    return q, u


class ClosedInverseDynamics(tuple):
    """What ``mb.inverse_dynamics(..., actuated=...)`` returns on a closed chain: the pair ``(T, lam)`` (so
    ``T, lam = mb.inverse_dynamics(...)`` unpacks it), plus ``cut``: ``{loop name: the cut joint's generalized
    force (its nU)}`` for each loop named in ``actuated`` (empty when none is)."""

    def __new__(cls, T, lam, cut):
        self = super().__new__(cls, (T, lam))
        self.cut = cut
        return self

    @property
    def T(self):
        """The generalized forces (nU), zero off the actuated hinges."""
        return self[0]

    @property
    def lam(self):
        """The constraint multipliers, ``{loop name: lambda}``."""
        return self[1]


def _relative_jacobian(mb, q, c):
    """J_W (6 x nU): U -> W = V_T - phi^T(S, T) V_S, the target's velocity relative to the source at the
    target's origin in target axes (a node on the newtonian has no columns)."""
    JS, JT = mb.jacobian(q, c.source), mb.jacobian(q, c.target)
    X = np.linalg.solve(mb.frame_pose(q, c.source), mb.frame_pose(q, c.target))
    R, l = X[:3, :3], X[:3, 3]
    w, v = JS[:3], JS[3:]
    return JT - np.vstack([R.T @ w, R.T @ (v + np.cross(w.T, l).T)])


def closed_inverse_dynamics(mb, q, u, udot, actuated, f_ext=None, gravity=None):
    """Actuator forces and constraint multipliers of a closed chain moving with (Q, U, Udot) (consistent
    with the loops): least squares of ``ID_tree(Q, U, Udot) = S T_a + sum_c J_W,c^T F_c T_c + G_c^T lambda``
    over the actuated hinges' T, the actuated cut joints' T_c and lambda (minimum norm where redundant).
    ``actuated`` names hinges and loops: a loop's cut joint is actuated like a hinge, its generalized force
    T_c acting as the wrench ``F_c T_c = H (H^T H)^-1 T_c`` on the target node and its opposite on the source
    (:meth:`LoopConstraint.sp_external_force_from_t`, Karana's ``spExternalForceFromT``; H the cut joint's
    coord map at its fitted Q).  Returns a :class:`ClosedInverseDynamics`: ``(T (nU, zero off the actuated
    hinges), {loop: lambda})`` with ``.cut = {loop: T_c}`` for the actuated loops."""
    q, u, udot = (np.asarray(x, dtype=float) for x in (q, u, udot))
    if q.ndim != 1:
        raise ValueError(f"{mb.name}: inverse_dynamics with actuated= takes one state")
    names = [actuated] if isinstance(actuated, str) else list(actuated)
    loops = {c.name: c for c in mb.loops}
    cols = np.zeros(mb.nu, dtype=bool)
    cut_loops = []
    for h in names:
        if h in loops:
            cut_loops.append(loops[h])
        else:
            try:
                cols[mb.u_slice(h)] = True
            except KeyError:
                raise KeyError(f"{mb.name}: actuated={h!r} is neither a hinge nor a loop (loops: "
                               f"{', '.join(loops) or 'none'})") from None
    tau = mb.inverse_dynamics(q, u, udot, f_ext=f_ext, gravity=gravity, tree=True)
    G, _ = constraint_jacobian(mb, q, u)
    blocks = [np.eye(mb.nu)[:, cols]]
    for c in cut_loops:
        if c.nu:
            blocks.append(_relative_jacobian(mb, q, c).T @ c.cut_force_map(q))
    A = np.hstack(blocks + [G.T])
    x = np.linalg.lstsq(A, tau, rcond=1e-12)[0]
    T = np.zeros(mb.nu)
    n = int(cols.sum())
    T[cols] = x[:n]
    cut = {}
    for c in cut_loops:
        cut[c.name] = x[n:n + c.nu].copy()
        n += c.nu
    lam = x[n:]
    return ClosedInverseDynamics(T, {c.name: lam[c.rows] for c in mb.loops}, cut)
