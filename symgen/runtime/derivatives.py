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

import math

import numpy as np

from .integrate import METHODS as _METHODS


def forward_dynamics_derivatives(mb, q, u, T, f_ext=None, gravity=None, params=None, wrt: str = "state"):
    """``[dUdot/dQ, dUdot/dU, M^-1]``: an array (3, nU, nU) for one state, (3, N, nU, nU) for a batch (it unpacks
    as the three); ``wrt="params"``: dUdot/dtheta (nU x n_theta, :func:`theta`) of a parametric build."""
    if wrt == "params":
        return -_state_derivatives(mb, "fd", q, u, T, f_ext, gravity, params)[2] @ \
            theta_derivative(mb, q, u, mb.forward_dynamics(q, u, T, f_ext=f_ext, gravity=gravity, params=params),
                             f_ext, gravity, params)
    _check_wrt(wrt)
    return _state_derivatives(mb, "fd", q, u, T, f_ext, gravity, params)


def inverse_dynamics_derivatives(mb, q, u, udot, f_ext=None, gravity=None, params=None, wrt: str = "state"):
    """``[dT/dQ, dT/dU, M]`` (an array (3, nU, nU), (3, N, nU, nU) for a batch); ``wrt="params"``: dT/dtheta (nU x
    n_theta), the inverse-dynamics regressor Y with ``Y theta = T`` when every inertia is a parameter."""
    if wrt == "params":
        return theta_derivative(mb, q, u, udot, f_ext, gravity, params)
    _check_wrt(wrt)
    return _state_derivatives(mb, "id", q, u, udot, f_ext, gravity, params)


def _state_derivatives(mb, kind, q, u, x, f_ext, gravity, params):
    """The three matrices: one C call on the arrays' memory for one state without keywords, else the batch."""
    if f_ext is None and gravity is None and params is None:
        r = mb.derivative_binding().derivatives_one(kind, q, u, x)
        if r is not None and r[1] == 0:
            return r[0]
    return mb.derivative_binding().derivatives(kind, q, u, x, f_ext, gravity, params)  # a status: raised there


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

    Generated C (``sg_<m>_step_derivatives``, ``templates/helpers/step_derivatives.c``): the step is differentiated
    exactly as :func:`symgen.runtime.integrate.rollout` takes it, in Q's own coordinates (RK4's stages are off
    the unit sphere for a quaternion), from the generated derivatives of forward dynamics (d/dQ_i, d/dU, M^-1)
    and of Qdot = N(Q) U; then the tangent at both ends: the input's columns along N(Q) e_j, the output's rows
    by N(Q')^+ (which drops the component renormalization removes).  The Jacobian of the renormalization after
    the step (``sanitize``) is taken by central differences (step 1e-6: an error of about 1e-12 on a smooth
    map)."""
    code = _METHODS.get(method)
    if code is None:
        raise ValueError(f"{mb.name}: step_derivatives method must be one of {', '.join(_METHODS)}, got {method!r}")
    try:
        dt = float(dt)
    except (TypeError, ValueError):
        dt = float("nan")
    if not 0.0 < dt < math.inf:
        raise ValueError(f"{mb.name}: step_derivatives needs a finite dt > 0, got {dt!r}")
    b = mb.derivative_binding()
    if f_ext is None and gravity is None and params is None:
        r = b.step_one(q, u, T, dt, code)
        if r is not None:
            if r[2]:
                _step_status(mb, r[2], 0)
            return r[0], r[1]
    single, Q, U = b.states(q, u)
    n, nu = Q.shape[0], mb.nu
    Tm = np.asarray(T, dtype=float)
    if Tm.shape not in ((nu,), (n, nu)):
        raise ValueError(f"{mb.name}: step_derivatives needs T ({nu},) or (N, {nu}) with N = {n}, got {Tm.shape}")
    Tm = np.broadcast_to(Tm, (n, nu))
    P = np.ascontiguousarray(b.p(n, Tm, f_ext, gravity, params))
    lib, name = b.lib, b.name
    work = np.empty(getattr(lib, f"sg_{name}_step_work_size")())
    fn = getattr(lib, f"sg_{name}_step_derivatives")
    A, B = np.empty((n, 2 * nu, 2 * nu)), np.empty((n, 2 * nu, nu))
    pw = b.buf(work)
    for i in range(n):
        s = fn(b.buf(Q[i]), b.buf(U[i]), b.buf(P[i]), dt, code, pw, b.buf(A[i]), b.buf(B[i]))
        if s:
            _step_status(mb, s, i)
    return b.unbatch(single, A), b.unbatch(single, B)


def _step_status(mb, s, i):
    if s == -1:
        raise NotImplementedError(f"{mb.name}: step_derivatives needs the forward dynamics derivatives, which were "
                                  "not generated for this model (see forward_dynamics_derivatives)")
    mb.binding.check_status(i * (mb.nb + 1) + s, "step_derivatives")
