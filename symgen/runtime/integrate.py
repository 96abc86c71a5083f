"""Integration of a built model's equations of motion (no sympy, no jinja2): fixed-step RK4
(:meth:`MultibodyModel.simulate`).  Each stage is one ``qdot`` and one ``forward_dynamics`` call."""
from __future__ import annotations

import numpy as np


def simulate(mb, q0, u0, t_span, dt: float, T=None, f_ext=None, gravity=None):
    """Fixed-step RK4 from ``t_span[0]`` to ``t_span[1]``.  ``T``: None, an array (nU), or a callable
    ``T(t, q, u)``.  After every step quaternions are renormalized and SPHERICAL rotation vectors
    sanitized.  Returns ``(t, Q, U)`` with one row per step (the initial state included)."""
    t0, t1 = float(t_span[0]), float(t_span[1])
    n = int(round((t1 - t0) / dt))
    q, u = np.array(q0, dtype=float), np.array(u0, dtype=float)
    Tf = (lambda t, q, u: np.zeros(mb.nu)) if T is None else (T if callable(T) else (lambda t, q, u: T))

    def f(t, q, u):
        return mb.qdot(q, u), mb.forward_dynamics(q, u, Tf(t, q, u), f_ext=f_ext, gravity=gravity)

    ts, Qs, Us = np.empty(n + 1), np.empty((n + 1, mb.nq)), np.empty((n + 1, mb.nu))
    ts[0], Qs[0], Us[0] = t0, q, u
    for i in range(n):
        t = t0 + i * dt
        k1q, k1u = f(t, q, u)
        k2q, k2u = f(t + dt / 2, q + dt / 2 * k1q, u + dt / 2 * k1u)
        k3q, k3u = f(t + dt / 2, q + dt / 2 * k2q, u + dt / 2 * k2u)
        k4q, k4u = f(t + dt, q + dt * k3q, u + dt * k3u)
        q = mb.sanitize(q + dt / 6 * (k1q + 2 * k2q + 2 * k3q + k4q))
        u = u + dt / 6 * (k1u + 2 * k2u + 2 * k3u + k4u)
        ts[i + 1], Qs[i + 1], Us[i + 1] = t0 + (i + 1) * dt, q, u
    return ts, Qs, Us
