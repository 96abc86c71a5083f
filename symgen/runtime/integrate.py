"""Integration of a built model's equations of motion (no sympy, no jinja2).

:func:`rollout` integrates many cases inside C in one call (``sg_<m>_rollout``: fixed-step RK4 or
semi-implicit Euler, Q sanitized after every step); :func:`simulate` is the one-trajectory interface on top
of it, with a Python RK4 loop only for what C does not take (a callable T, projection onto the loops)."""
from __future__ import annotations

import numpy as np


class Trajectory(tuple):
    """``(t, Q, U)`` of :func:`simulate`; ``drift``: on a model with loops, the largest constrained pose
    error of any loop at each row (zeros without loops)."""

    def __new__(cls, t, Q, U, drift):
        self = super().__new__(cls, (t, Q, U))
        self.t, self.Q, self.U, self.drift = t, Q, U, drift
        return self


METHODS = {"rk4": 0, "euler": 1, "semi_implicit_euler": 1}


def rollout(mb, q0, u0, dt: float, n_steps: int, T=None, every: int = 1, method: str = "rk4", f_ext=None,
            gravity=None, baumgarte=None, params=None) -> dict:
    """N trajectories integrated inside C in one call, with a fixed step (MuJoCo's ``rollout``).

    ``q0`` (N, nQ) or (nQ,), ``u0`` (N, nU) or (nU,) (one row serves every case).  ``T``: None (zero), (nU,)
    for every case, (N, nU) constant per case, or (N, n_steps, nU) per step (held over the step).
    ``method``: ``"rk4"`` (classical RK4) or ``"euler"`` (semi-implicit: U first, then Q with the new U).  After
    every step quaternions are renormalized and SPHERICAL rotation vectors sanitized.  ``f_ext`` and ``gravity``
    as in :meth:`~MultibodyModel.forward_dynamics`, the same for every case; on a model with loops each stage
    runs TA forward dynamics, ``baumgarte=(omega_n, zeta)`` as there.  ``params``: a parametric build's
    parameters (:attr:`~MultibodyModel.parameters`), one value for every case or one per case.

    Returns ``{"t": (K,), "q": (N, K, nQ), "u": (N, K, nU), "ok": (N,) bool}`` with ``K = n_steps // every
    + 1``, row 0 the initial state and row j the state after ``j * every`` steps; always with the case axis,
    as MuJoCo's.  A case whose forward dynamics fails (D not positive definite) stops there: its later rows
    are NaN, ``ok`` is False and ``status`` holds forward dynamics' code (body index + 1).  The C call
    releases the GIL: Python threads run rollouts in parallel."""
    n_steps, every = int(n_steps), int(every)
    if n_steps < 0 or every < 1:
        raise ValueError(f"{mb.name}: rollout needs n_steps >= 0 and every >= 1, got {n_steps}, {every}")
    if method not in METHODS:
        raise ValueError(f"{mb.name}: rollout method must be one of {', '.join(METHODS)}, got {method!r}")
    if not (np.isfinite(dt) and dt > 0):
        raise ValueError(f"{mb.name}: rollout needs a finite dt > 0, got {dt!r}")
    Q0 = np.ascontiguousarray(np.atleast_2d(np.asarray(q0, dtype=np.float64)))
    U0 = np.ascontiguousarray(np.atleast_2d(np.asarray(u0, dtype=np.float64)))
    n = max(Q0.shape[0], U0.shape[0])
    Q0, U0 = (np.ascontiguousarray(np.broadcast_to(A, (n, A.shape[1]))) if A.shape[0] == 1 else A
              for A in (Q0, U0))
    if Q0.shape != (n, mb.nq) or U0.shape != (n, mb.nu):
        raise ValueError(f"{mb.name}: rollout needs q0 (N, {mb.nq}) or ({mb.nq},) and u0 (N, {mb.nu}) or "
                         f"({mb.nu},) with the same N, got {np.shape(q0)} and {np.shape(u0)}")
    T_arr, T_case, T_step = _torques(mb, T, n, n_steps)
    n_p = n if params else 1  # one p per case only when the parameters may differ between cases
    b = mb.binding
    p = b.p(n_p, np.zeros(mb.nu), f_ext, gravity, params)
    if mb.loops:
        p = np.concatenate([p, np.broadcast_to(b.loop_gains(baumgarte), (n_p, 2))], axis=1)
    elif baumgarte is not None:
        raise ValueError(f"{mb.name}: baumgarte= stabilizes loop constraints; this model has none")
    p = np.ascontiguousarray(p)
    K = n_steps // every + 1
    q_out, u_out = np.empty((n, K, mb.nq)), np.empty((n, K, mb.nu))
    status = np.zeros(max(n, 1), dtype=np.intc)
    b.rollout(n, n_steps, every, METHODS[method], dt, Q0, U0, T_arr, T_case, T_step, p, p.shape[1] if n_p > 1 else 0,
              q_out, u_out, status)
    return {"t": np.arange(K) * (every * float(dt)), "q": q_out, "u": u_out, "ok": status[:n] == 0,
            "status": status[:n]}


def _torques(mb, T, n, n_steps):
    """(array or None, case stride, step stride) of the T argument of :func:`rollout`."""
    if T is None:
        return None, 0, 0
    A = np.ascontiguousarray(np.asarray(T, dtype=np.float64))
    nu = mb.nu
    if A.shape == (nu,):
        return A, 0, 0
    if A.shape == (n, nu):
        return A, nu, 0
    if A.shape == (n, n_steps, nu):
        return A, n_steps * nu, nu
    raise ValueError(f"{mb.name}: rollout T must be ({nu},), (N, {nu}) per case or (N, n_steps, {nu}) per step "
                     f"with N = {n}, n_steps = {n_steps}; got {A.shape}")


def simulate(mb, q0, u0, t_span, dt: float, T=None, f_ext=None, gravity=None, baumgarte=None,
             project: bool = False):
    """Fixed-step RK4 from ``t_span[0]`` to ``t_span[1]``.  ``T``: None, an array (nU), or a callable
    ``T(t, q, u)``.  After every step quaternions are renormalized and SPHERICAL rotation vectors
    sanitized.  Returns ``(t, Q, U)`` with one row per step (the initial state included), a tuple with a
    ``drift`` attribute (see :class:`Trajectory`).

    On a model with loops each stage runs the TA forward dynamics; ``baumgarte=(omega_n, zeta)`` stabilizes
    the constraint errors, ``project=True`` projects Q and U back onto the constraints after every step
    (:meth:`MultibodyModel.project`).

    The integration runs in C (:func:`rollout`, one case) unless T is a callable or projection is asked
    for; then :func:`simulate_python` runs the same steps in Python."""
    t0, t1 = float(t_span[0]), float(t_span[1])
    n = int(round((t1 - t0) / dt))
    if callable(T) or (project and mb.loops):
        return simulate_python(mb, q0, u0, t_span, dt, T=T, f_ext=f_ext, gravity=gravity, baumgarte=baumgarte,
                               project=project)
    r = rollout(mb, q0, u0, dt, n, T=T, f_ext=f_ext, gravity=gravity, baumgarte=baumgarte)
    if not r["ok"][0]:
        mb.binding.check_status(int(r["status"][0]), "forward_dynamics")
    Q, U = r["q"][0], r["u"][0]
    return Trajectory(t0 + r["t"], Q, U, np.array([_drift(mb, q) for q in Q]))


def simulate_python(mb, q0, u0, t_span, dt: float, T=None, f_ext=None, gravity=None, baumgarte=None,
                    project: bool = False):
    """:func:`simulate` as a Python loop over the C forward dynamics: one ``qdot`` and one
    ``forward_dynamics`` call per RK4 stage (the reference :func:`rollout` is checked against)."""
    t0, t1 = float(t_span[0]), float(t_span[1])
    n = int(round((t1 - t0) / dt))
    q, u = np.array(q0, dtype=float), np.array(u0, dtype=float)
    Tf = (lambda t, q, u: np.zeros(mb.nu)) if T is None else (T if callable(T) else (lambda t, q, u: T))

    def f(t, q, u):
        return mb.qdot(q, u), mb.forward_dynamics(q, u, Tf(t, q, u), f_ext=f_ext, gravity=gravity,
                                                  baumgarte=baumgarte)

    ts, Qs, Us = np.empty(n + 1), np.empty((n + 1, mb.nq)), np.empty((n + 1, mb.nu))
    ts[0], Qs[0], Us[0] = t0, q, u
    dr = np.zeros(n + 1)
    dr[0] = _drift(mb, q)
    for i in range(n):
        t = t0 + i * dt
        k1q, k1u = f(t, q, u)
        k2q, k2u = f(t + dt / 2, q + dt / 2 * k1q, u + dt / 2 * k1u)
        k3q, k3u = f(t + dt / 2, q + dt / 2 * k2q, u + dt / 2 * k2u)
        k4q, k4u = f(t + dt, q + dt * k3q, u + dt * k3u)
        q = mb.sanitize(q + dt / 6 * (k1q + 2 * k2q + 2 * k3q + k4q))
        u = u + dt / 6 * (k1u + 2 * k2u + 2 * k3u + k4u)
        if project and mb.loops:
            q, u = mb.project(q, u)
        ts[i + 1], Qs[i + 1], Us[i + 1] = t0 + (i + 1) * dt, q, u
        dr[i + 1] = _drift(mb, q)
    return Trajectory(ts, Qs, Us, dr)


def _drift(mb, q) -> float:
    """The largest constrained pose error of any loop at q (0 without loops)."""
    if not mb.loops:
        return 0.0
    e = np.concatenate([c.residuals(q)["pose"] for c in mb.loops])
    return float(np.max(np.abs(e))) if e.size else 0.0
