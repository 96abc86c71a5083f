"""Fitting hinge coordinates to a pose or a velocity (no sympy, no jinja2): Newton on one hinge's compiled
kernels (:meth:`MultibodyModel.fit_q`, :meth:`MultibodyModel.fit_u`)."""
from __future__ import annotations

import numpy as np

from ..numeric import np_rotation_log


def fit_q(mb, hinge: str, transform, q0=None, tol: float = 1e-12, max_iter: int = 50) -> np.ndarray:
    """Hinge coordinates whose X_op equals ``transform`` (4x4, pnode pose in the onode).

    Newton on the hinge's pose gradient: ``dQ = N G^+ ([log R*; l*] - [log R; l])``, restarted from a few
    starting points if needed.  Coordinates are returned sanitized; a hinge with fewer than 6 DOF
    returns the least-squares best fit.  Redundant coordinates (quaternion sign, angle + 2 pi) may
    differ from the ones that produced ``transform``."""
    k = mb.hinge_kernels(hinge)               # KeyError naming the hinges if there is no such hinge
    target = np.asarray(transform, dtype=float)
    if target.shape != (4, 4):
        raise ValueError(f"fit_q: transform must be 4x4, got {target.shape}")
    neutral = mb.manifest["hinges"][hinge]["neutral_q"]
    starts = [np.array(neutral, float) if q0 is None else np.asarray(q0, float)]
    rng = np.random.default_rng(0)
    for _ in range(8):
        s = np.array(neutral, float) + rng.normal(scale=0.7, size=k.nq)
        starts.append(k.sanitize(s))
    best, best_err = None, np.inf
    for q in starts:
        for _ in range(max_iter):
            X = k.transform(q)
            # error as a small rotation in the pframe: R^T R* = exp(e), then map through J_r
            e_rot = np_rotation_log(X[:3, :3].T @ target[:3, :3])
            e = np.concatenate([e_rot, target[:3, 3] - X[:3, 3]])
            err = float(np.linalg.norm(e))
            if err < tol:
                break
            H = k.coord_map(q)
            # velocity needed: w (pframe) ~ e_rot, l_dot ~ e_lin
            A = np.vstack([H[:3], X[:3, :3] @ H[3:]])
            du = np.linalg.lstsq(A, e, rcond=None)[0]
            q = k.sanitize(q + k.qdot_map(q) @ du)
        X = k.transform(q)
        err = float(np.linalg.norm(np.concatenate([np_rotation_log(X[:3, :3].T @ target[:3, :3]),
                                                   target[:3, 3] - X[:3, 3]])))
        if err < best_err:
            best, best_err = q, err
        if best_err < tol:
            break
    return best


def fit_u(mb, hinge: str, spatial_velocity, q=None) -> np.ndarray:
    """Least-squares hinge U with ``H*_p(Q) U = spatial_velocity`` (pnode relative to onode, in the
    pnode); ``q`` is the hinge's Q (default neutral)."""
    k = mb.hinge_kernels(hinge)
    q = np.array(mb.manifest["hinges"][hinge]["neutral_q"], float) if q is None else np.asarray(q, float)
    return np.linalg.lstsq(k.coord_map(q), np.asarray(spatial_velocity, float), rcond=None)[0]
