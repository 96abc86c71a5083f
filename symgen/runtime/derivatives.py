"""Derivatives of the dynamics and of one integration step (no sympy, no jinja2).

The dynamics derivatives are generated C (``sg_<m>_fd_derivatives``, ``sg_<m>_id_derivatives``:
:mod:`symgen.codegen.derivatives`, forward-mode derivatives of the traced ATBI and Newton-Euler recursions);
this module shapes them, and composes them through one RK4 or semi-implicit Euler step.

**Q derivatives are tangent**: column j is the derivative along the motion of Q that U = e_j produces,
``Qdot = N(Q) e_j`` (for PIN and SLIDER hinges d/dQ itself; for BALL_QUAT and FULL6DOF the body-frame rotation
and, for FULL6DOF, the oframe-axes translation its U describes).  On every joint whose velocity matches
Pinocchio's this is Pinocchio's tangent convention.
"""
from __future__ import annotations

import numpy as np


def forward_dynamics_derivatives(mb, q, u, T, f_ext=None, gravity=None, params=None, wrt: str = "state"):
    """``(dUdot/dQ, dUdot/dU, M^-1)`` (each nU x nU; a leading N for a batch); ``wrt="params"``: dUdot/dtheta
    (nU x n_theta, :func:`theta`) of a parametric build."""
    if wrt == "params":
        return -mb.binding.derivatives("fd", q, u, T, f_ext, gravity, params)[2] @ \
            theta_derivative(mb, q, u, mb.forward_dynamics(q, u, T, f_ext=f_ext, gravity=gravity, params=params),
                             f_ext, gravity, params)
    _check_wrt(wrt)
    return mb.binding.derivatives("fd", q, u, T, f_ext, gravity, params)


def inverse_dynamics_derivatives(mb, q, u, udot, f_ext=None, gravity=None, params=None, wrt: str = "state"):
    """``(dT/dQ, dT/dU, M)`` (each nU x nU; a leading N for a batch); ``wrt="params"``: dT/dtheta (nU x
    n_theta), the inverse-dynamics regressor Y with ``Y theta = T`` when every inertia is a parameter."""
    if wrt == "params":
        return theta_derivative(mb, q, u, udot, f_ext, gravity, params)
    _check_wrt(wrt)
    return mb.binding.derivatives("id", q, u, udot, f_ext, gravity, params)


def _check_wrt(wrt):
    if wrt != "state":
        raise ValueError(f"wrt must be 'state' or 'params', got {wrt!r}")


# ---- parameters -------------------------------------------------------------------------------------------

def theta_names(mb) -> list:
    """The names of theta's entries: per inertia parameter ``<body>.m``, ``<body>.h_x`` .. (h = m c), ``<body>.J_xx``
    .. (about the body origin: J_xx, J_xy, J_xz, J_yy, J_yz, J_zz), per armature ``<hinge>.armature[i]``."""
    out = []
    for blk in mb.binding.layout.theta_blocks:
        if blk["kind"] == "inertia":
            b = mb.body_names[blk["body"]]
            out += [f"{b}.{x}" for x in ("m", "h_x", "h_y", "h_z", "J_xx", "J_xy", "J_xz", "J_yy", "J_yz", "J_zz")]
        else:
            h = mb.manifest["bodies"][blk["body"]]["hinge"]
            out += [f"{h}.armature[{i}]" for i in range(blk["size"])]
    return out


def theta(mb, params=None) -> np.ndarray:
    """theta (n_theta,): the build's inertia parameters as the dynamics read them, linearly (mass m, first moment
    h = m c, inertia J about the body origin; armatures), from ``params`` (``{name: value}``) or the model file."""
    return mb.binding.p(1, np.zeros(mb.nu), None, None, params)[0, mb.binding.layout.params.span("theta")]


def theta_derivative(mb, q, u, udot, f_ext, gravity, params):
    """dT/dtheta: inverse dynamics is linear in theta (the Newton-Euler forces are linear in each body's
    (m, h, J) and in the armatures), so column j is ID at theta = e_j minus ID at theta = 0, every other input
    the same: nU x n_theta (a leading N for a batch), exact to rounding."""
    b = mb.binding
    span = b.layout.params.span("theta")
    single, Q, U = b.states(q, u)
    _, _, A = b.states(q, udot)
    n, k = Q.shape[0], span.stop - span.start
    if k == 0:
        raise ValueError(f"{mb.name}: wrt='params' needs a parametric build with inertia or armature parameters "
                         "(symgen.build(..., parameters=[...])); this one has none")
    P = b.p(n, A, f_ext, gravity, params)
    P = np.repeat(P[:, None, :], k + 1, axis=1)                     # (n, k + 1, p): theta = 0, e_0, .., e_{k-1}
    P[:, :, span] = np.vstack([np.zeros(k), np.eye(k)])
    rep = lambda X: np.repeat(X, k + 1, axis=0)  # noqa: E731
    tau, status = b.call_batch("inverse_dynamics", rep(Q), rep(U), P.reshape(n * (k + 1), -1), mb.nu)
    tau = tau.reshape(n, k + 1, mb.nu)
    Y = np.swapaxes(tau[:, 1:] - tau[:, :1], 1, 2)
    return b.unbatch(single, Y)


# ---- one integration step ---------------------------------------------------------------------------------

def step_derivatives(mb, q, u, T, dt: float, method: str = "rk4", f_ext=None, gravity=None, params=None):
    """``(A, B)`` of one :meth:`~MultibodyModel.rollout` step x' = step(x, T): x = (Q tangent, U); A (2nU x 2nU)
    = dx'/dx, B (2nU x nU) = dx'/dT; a leading N for a batch.

    The step is differentiated exactly as :func:`symgen.runtime.integrate.rollout` takes it, in Q's own
    coordinates (RK4's stages are off the unit sphere for a quaternion), from the generated derivatives of forward
    dynamics (d/dQ_i, d/dU, M^-1) and of Qdot = N(Q) U; then the tangent at both ends: the input's columns along
    N(Q) e_j, the output's rows by N(Q')^+ (which drops the component normalization removes).  The Jacobian of
    the renormalization after the step (``sanitize``) is taken by central differences (step 1e-6: an error of
    about 1e-12, it is a smooth map)."""
    from .integrate import METHODS

    if method not in METHODS:
        raise ValueError(f"{mb.name}: step_derivatives method must be one of {', '.join(METHODS)}, got {method!r}")
    b = mb.binding
    single, Q, U = b.states(q, u)
    n, nq, nu = Q.shape[0], mb.nq, mb.nu
    Tm = np.broadcast_to(np.asarray(T, dtype=float), (n, nu)) if np.ndim(T) else np.full((n, nu), float(T))
    h = float(dt)

    def f(Qs, Us):
        """(k, dk/dx (nq + nu), dk/dT at fixed x) at states Qs, Us (n rows)."""
        Fq, Fu, Minv = b.derivatives("fd", Qs, Us, Tm, f_ext, gravity, params, tangent=False)
        ud = mb.forward_dynamics(Qs, Us, Tm, f_ext=f_ext, gravity=gravity, params=params)
        N = qdot_map(mb, Qs)
        Qq = b.call_batch("qdot_dq", Qs, Us, None, nq * nq)[0].reshape(n, nq, nq)
        J = np.concatenate([np.concatenate([Qq, N], axis=2), np.concatenate([Fq, Fu], axis=2)], axis=1)
        k = np.concatenate([np.einsum("nij,nj->ni", N, Us), ud], axis=1)
        return k, J, np.concatenate([np.zeros((n, nq, nu)), Minv], axis=1)

    x = np.concatenate([Q, U], axis=1)
    I = np.broadcast_to(np.eye(nq + nu), (n, nq + nu, nq + nu))
    if METHODS[method] == 0:                                           # RK4
        ks, dX, dT = [], [], []
        xs, dxs, dts = x, I, np.zeros((n, nq + nu, nu))
        for c in (0.5, 0.5, 1.0, None):
            k, J, Bk = f(xs[:, :nq], xs[:, nq:])
            dk, dkT = J @ dxs, J @ dts + Bk
            ks.append(k), dX.append(dk), dT.append(dkT)
            if c is not None:
                xs, dxs, dts = x + c * h * k, I + c * h * dk, c * h * dkT
        w = (1.0, 2.0, 2.0, 1.0)
        x1 = x + h / 6 * sum(wi * k for wi, k in zip(w, ks))
        dx1 = I + h / 6 * sum(wi * d for wi, d in zip(w, dX))
        dT1 = h / 6 * sum(wi * d for wi, d in zip(w, dT))
    else:                                                              # semi-implicit Euler: U first, then Q
        Fq, Fu, Minv = b.derivatives("fd", Q, U, Tm, f_ext, gravity, params, tangent=False)
        ud = mb.forward_dynamics(Q, U, Tm, f_ext=f_ext, gravity=gravity, params=params)
        U1 = U + h * ud
        N = qdot_map(mb, Q)
        Qq = b.call_batch("qdot_dq", Q, U1, None, nq * nq)[0].reshape(n, nq, nq)
        du1 = np.concatenate([h * Fq, np.eye(nu) + h * Fu], axis=2)      # dU1/d(Q, U)
        dq1 = np.concatenate([np.eye(nq) + h * Qq, np.zeros((n, nq, nu))], axis=2) + h * N @ du1
        x1 = np.concatenate([Q + h * np.einsum("nij,nj->ni", N, U1), U1], axis=1)
        dx1 = np.concatenate([dq1, du1], axis=1)
        dT1 = np.concatenate([h * N @ (h * Minv), h * Minv], axis=1)
    # renormalization (sanitize) after the step, then the tangents at both ends
    S = _sanitize_jacobian(mb, x1[:, :nq])
    q1 = mb.sanitize(x1[:, :nq])
    Nin, Nout = qdot_map(mb, Q), qdot_map(mb, q1)
    Lout = np.zeros((n, 2 * nu, nq + nu))
    Lout[:, :nu, :nq] = np.linalg.pinv(Nout) @ S
    Lout[:, nu:, nq:] = np.eye(nu)
    Rin = np.zeros((n, nq + nu, 2 * nu))
    Rin[:, :nq, :nu] = Nin
    Rin[:, nq:, nu:] = np.eye(nu)
    A, B = Lout @ dx1 @ Rin, Lout @ dT1
    return b.unbatch(single, A), b.unbatch(single, B)


def qdot_map(mb, Q) -> np.ndarray:
    """N(Q) (n, nQ, nU) with Qdot = N(Q) U: Qdot is linear in U, so column j is Qdot at U = e_j."""
    n, nu = Q.shape[0], mb.nu
    E = np.tile(np.eye(nu), (n, 1))
    qd = mb.binding.call_batch("qdot", np.repeat(Q, nu, axis=0), E, None, mb.nq)[0]
    return np.swapaxes(qd.reshape(n, nu, mb.nq), 1, 2)


def _sanitize_jacobian(mb, Q, eps: float = 1e-6) -> np.ndarray:
    """d sanitize(Q) / dQ (n, nQ, nQ) by central differences."""
    n, nq = Q.shape
    E = eps * np.eye(nq)
    plus = mb.sanitize((Q[:, None, :] + E).reshape(-1, nq)).reshape(n, nq, nq)
    minus = mb.sanitize((Q[:, None, :] - E).reshape(-1, nq)).reshape(n, nq, nq)
    return np.swapaxes((plus - minus) / (2 * eps), 1, 2)
