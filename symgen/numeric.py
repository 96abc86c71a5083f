"""Numeric (numpy) twins of symgen's rotation helpers, used by the runtime: no sympy here."""
from __future__ import annotations

import math

import numpy as np

_SERIES_TERMS = 22      # terms of the Taylor series used below |s| < 4 (error < 1e-17 relative)
_SERIES_LIMIT = 4.0


def _series_coefficients(k: int) -> np.ndarray:
    return np.array([(-1.0) ** i / math.factorial(k + 2 * i) for i in range(_SERIES_TERMS)])


def stumpff_np(k, s):
    """Numeric ``c_k(s)`` for float arrays; Taylor series below ``|s| < 4``, closed form above."""
    k = int(k)
    s = np.asarray(s, dtype=float)
    out = np.empty_like(s)
    small = np.abs(s) < _SERIES_LIMIT
    if np.any(small):
        x = s[small]
        acc = np.zeros_like(x)
        for c in _series_coefficients(k)[::-1]:
            acc = acc * x + c
        out[small] = acc
    big = ~small
    if np.any(big):
        x = s[big]
        pos = x > 0
        th = np.sqrt(np.abs(x))
        c0 = np.where(pos, np.cos(th), np.cosh(th))
        c1 = np.where(pos, np.sin(th), np.sinh(th)) / th
        forms = [c0, c1]
        for j in range(2, k + 1):
            forms.append((1.0 / math.factorial(j - 2) - forms[j - 2]) / x)
        out[big] = forms[k]
    return out if out.ndim else float(out)


def np_skew(v):
    v = np.asarray(v, dtype=float)
    x, y, z = v[..., 0], v[..., 1], v[..., 2]
    o = np.zeros_like(x)
    return np.stack([np.stack([o, -z, y], -1), np.stack([z, o, -x], -1), np.stack([-y, x, o], -1)], -2)


def np_phi(R, l):
    """(..., 6, 6) phi(A, B) = [[R, l~ R], [0, R]] of X_AB = (R, l), batched: moves B's spatial forces to A."""
    R = np.asarray(R, dtype=float)
    out = np.zeros(R.shape[:-2] + (6, 6))
    out[..., :3, :3] = R
    out[..., :3, 3:] = np_skew(l) @ R
    out[..., 3:, 3:] = R
    return out


def np_quat_to_matrix(q):
    q = np.asarray(q, dtype=float)
    v = np_skew(q[..., :3])
    return np.eye(3) + 2 * q[..., 3, None, None] * v + 2 * v @ v


def np_matrix_to_quat(R):
    """Unit quaternion ``(x, y, z, w)`` with ``w >= 0`` of a rotation matrix (Shepperd's method)."""
    R = np.asarray(R, dtype=float)
    t = np.trace(R)
    cands = np.array([1 + t, 1 + 2 * R[0, 0] - t, 1 + 2 * R[1, 1] - t, 1 + 2 * R[2, 2] - t])
    i = int(np.argmax(cands))
    r = math.sqrt(cands[i])
    if i == 0:
        q = [(R[2, 1] - R[1, 2]) / (2 * r), (R[0, 2] - R[2, 0]) / (2 * r), (R[1, 0] - R[0, 1]) / (2 * r), r / 2]
    elif i == 1:
        q = [r / 2, (R[0, 1] + R[1, 0]) / (2 * r), (R[0, 2] + R[2, 0]) / (2 * r), (R[2, 1] - R[1, 2]) / (2 * r)]
    elif i == 2:
        q = [(R[0, 1] + R[1, 0]) / (2 * r), r / 2, (R[1, 2] + R[2, 1]) / (2 * r), (R[0, 2] - R[2, 0]) / (2 * r)]
    else:
        q = [(R[0, 2] + R[2, 0]) / (2 * r), (R[1, 2] + R[2, 1]) / (2 * r), r / 2, (R[1, 0] - R[0, 1]) / (2 * r)]
    q = np.array(q)
    return -q if q[3] < 0 else q


def np_rotvec_exp(r):
    r = np.asarray(r, dtype=float)
    s = float(r @ r)
    rx = np_skew(r)
    return np.eye(3) + stumpff_np(1, s) * rx + stumpff_np(2, s) * rx @ rx


def np_rotation_log(R):
    """Rotation vector (angle * axis, angle in [0, pi]) of a rotation matrix, via its quaternion."""
    q = np_matrix_to_quat(R)
    n = np.linalg.norm(q[:3])
    if n < 1e-300:
        return np.zeros(3)
    theta = 2.0 * math.atan2(n, q[3])
    return q[:3] * (theta / n)


def np_jr_inv(phi):
    """``J_r(phi)^-1 = I + [phi]x / 2 + e(s) [phi]x^2``, ``e = (c3 - 2 c4) / (2 c2)`` (finite for |phi| < 2 pi)."""
    phi = np.asarray(phi, dtype=float)
    s = float(phi @ phi)
    px = np_skew(phi)
    e = (stumpff_np(3, s) - 2 * stumpff_np(4, s)) / (2 * stumpff_np(2, s))
    return np.eye(3) + px / 2 + e * px @ px
