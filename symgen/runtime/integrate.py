"""Integration of a built model's equations of motion (no sympy, no jinja2): fixed-step RK4
(:meth:`MultibodyModel.simulate`).  Each stage is one ``qdot`` and one ``forward_dynamics`` call."""
from __future__ import annotations

import numpy as np


class Trajectory(tuple):
    """``(t, Q, U)`` of :func:`simulate`; ``drift``: on a model with loops, the largest constrained pose
    error of any loop at each row (zeros without loops)."""

    def __new__(cls, t, Q, U, drift):
        self = super().__new__(cls, (t, Q, U))
        self.t, self.Q, self.U, self.drift = t, Q, U, drift
        return self


def simulate(mb, q0, u0, t_span, dt: float, T=None, f_ext=None, gravity=None, baumgarte=None,
             project: bool = False):
    """Fixed-step RK4 from ``t_span[0]`` to ``t_span[1]``.  ``T``: None, an array (nU), or a callable
    ``T(t, q, u)``.  After every step quaternions are renormalized and SPHERICAL rotation vectors
    sanitized.  Returns ``(t, Q, U)`` with one row per step (the initial state included), a tuple with a
    ``drift`` attribute (see :class:`Trajectory`).

    On a model with loops each stage runs the TA forward dynamics; ``baumgarte=(omega_n, zeta)`` stabilizes
    the constraint errors, ``project=True`` projects Q and U back onto the constraints after every step
    (:meth:`MultibodyModel.project`)."""
    t0, t1 = float(t_span[0]), float(t_span[1])
    n = int(round((t1 - t0) / dt))
    q, u = np.array(q0, dtype=float), np.array(u0, dtype=float)
    Tf = (lambda t, q, u: np.zeros(mb.nu)) if T is None else (T if callable(T) else (lambda t, q, u: T))

    def f(t, q, u):
        if mb.loops:
            return mb.qdot(q, u), mb.forward_dynamics(q, u, Tf(t, q, u), f_ext=f_ext, gravity=gravity,
                                                      baumgarte=baumgarte)
        return mb.qdot(q, u), mb.forward_dynamics(q, u, Tf(t, q, u), f_ext=f_ext, gravity=gravity)

    def drift(q):
        if not mb.loops:
            return 0.0
        e = np.concatenate([c.residuals(q)["pose"] for c in mb.loops])
        return float(np.max(np.abs(e))) if e.size else 0.0

    ts, Qs, Us = np.empty(n + 1), np.empty((n + 1, mb.nq)), np.empty((n + 1, mb.nu))
    ts[0], Qs[0], Us[0] = t0, q, u
    dr = np.zeros(n + 1)
    dr[0] = drift(q)
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
        dr[i + 1] = drift(q)
    return Trajectory(ts, Qs, Us, dr)
