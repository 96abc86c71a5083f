"""Spatial algebra in sympy (and the few numeric twins the runtime needs).

Conventions (DESIGN.md §2):

* spatial vectors are ``[angular; linear]``: velocity ``V = [w; v]``, force ``f = [N; F]``;
* ``X_AB = (R_AB, l_AB)`` is the pose of frame B in frame A (``x_A = R_AB x_B + l_AB``);
* ``phi(A, B) = [[R, l~ R], [0, R]]`` moves forces inboard (``f_A = phi f_B``) and, transposed,
  velocities outboard (``V_B = phi^T V_A``);
* quaternions are ``(x, y, z, w)``, Hamilton product, ``R = I + 2 w [v]x + 2 [v]x^2``.

Small-angle safety.  Every function of a rotation angle that appears in a derivation is written with
the *Stumpff functions* ``c_k(s)`` of the squared angle ``s = theta^2``::

    c_k(s) = sum_i (-s)^i / (k + 2 i)!
    c_0 = cos(theta), c_1 = sin(theta)/theta, c_2 = (1 - cos(theta))/theta^2, c_3 = (theta - sin(theta))/theta^3

They are entire in ``s`` and closed under differentiation (``dc_k/ds = (k c_{k+2} - c_{k+1}) / 2``), so
derivatives of exp/log maps never contain ``1/theta`` and evaluate to finite values at ``theta = 0``.
The numeric twins (:func:`stumpff_np`, and the C helper emitted later) switch to the Taylor series
below ``|s| < 4``.
"""
from __future__ import annotations

import sympy as sp

from .runtime.numeric import (_SERIES_LIMIT, _SERIES_TERMS, np_matrix_to_quat, np_quat_to_matrix,  # noqa: F401
                              np_rotation_log, np_rotvec_exp, np_skew, stumpff_np)

__all__ = [
    "stumpff", "stumpff_np", "NUMERIC_MODULES",
    "skew", "vee", "rot_axis", "rotvec_exp", "rotvec_jr", "rotvec_jl", "rotvec_jr_inv", "rotvec_jl_inv",
    "rotation_jr_inv", "quat_to_matrix", "quat_product", "quat_xi",
    "phi", "phi_T", "crm", "crf", "spatial_inertia", "transform4", "transform_parts",
    "np_skew", "np_quat_to_matrix", "np_matrix_to_quat", "np_rotvec_exp", "np_rotation_log",
]


# ----------------------------------------------------------------------------------------------
# Stumpff functions: the small-angle-safe building block
# ----------------------------------------------------------------------------------------------

class stumpff(sp.Function):
    r"""Stumpff function ``c_k(s) = sum_i (-s)^i / (k+2i)!`` (entire in ``s``).

    With ``s = theta**2``: ``c_0 = cos theta``, ``c_1 = sin theta / theta``,
    ``c_2 = (1 - cos theta)/theta**2``, ``c_3 = (theta - sin theta)/theta**3`` and
    ``c_{k+2} = (1/k! - c_k)/s``.  ``d c_k / ds = (k c_{k+2} - c_{k+1}) / 2``.
    """

    nargs = 2
    is_real = True

    @classmethod
    def eval(cls, k, s):
        if not (k.is_Integer and k >= 0):
            raise ValueError(f"stumpff: order k must be a non-negative integer, got {k}")
        if s.is_zero:
            return sp.Integer(1) / sp.factorial(k)
        return None

    def fdiff(self, argindex=2):
        if argindex != 2:
            raise sp.ArgumentIndexError(self, argindex)
        k, s = self.args
        return (k * stumpff(k + 2, s) - stumpff(k + 1, s)) / 2

    def _eval_evalf(self, prec):
        k, s = self.args
        if not (k.is_Integer and s.is_number):
            return None
        import mpmath

        with mpmath.workprec(prec + 30):
            x = mpmath.mpf(sp.Float(s, prec + 30))
            total, term, i = mpmath.mpf(0), mpmath.mpf(1) / mpmath.factorial(int(k)), 0
            while True:
                total += term
                i += 1
                term = term * (-x) / ((int(k) + 2 * i - 1) * (int(k) + 2 * i))
                if abs(term) < mpmath.eps * (abs(total) + 1e-300) and i > 2:
                    break
            return sp.Float(total, prec)

    def _eval_rewrite_as_cos(self, k, s, **kwargs):
        """Closed form in sin/cos of ``sqrt(s)`` (singular-looking at ``s = 0``; for checking only)."""
        if not k.is_Integer:
            return None
        th = sp.sqrt(s)
        forms = [sp.cos(th), sp.sin(th) / th]
        for j in range(2, int(k) + 1):
            forms.append((sp.Integer(1) / sp.factorial(j - 2) - forms[j - 2]) / s)
        return forms[int(k)]

    _eval_rewrite_as_sin = _eval_rewrite_as_cos

    def _pretty(self, printer):
        k = self.args[0]
        sub = "".join("₀₁₂₃₄₅₆₇₈₉"[int(d)] for d in str(k)) if printer._use_unicode else f"_{k}"
        return printer._helper_print_function(self.func, [self.args[1]], func_name=f"c{sub}")

    def _sympystr(self, printer):
        return "c%s(%s)" % (self.args[0], printer._print(self.args[1]))

    def _latex(self, printer, exp=None):
        k, s = self.args
        tex = r"c_{%s}\!\left(%s\right)" % (printer._print(k), printer._print(s))
        return tex if exp is None else r"%s^{%s}" % (tex, exp)


#: ``modules=`` argument for :func:`sympy.lambdify` that knows symgen's special functions.
NUMERIC_MODULES = [{"stumpff": stumpff_np}, "numpy"]


# ----------------------------------------------------------------------------------------------
# SO(3)
# ----------------------------------------------------------------------------------------------

def _col(v) -> sp.Matrix:
    m = sp.Matrix(v)
    if m.shape == (1, 3):
        m = m.T
    if m.shape != (3, 1):
        raise ValueError(f"expected a 3-vector, got shape {m.shape}")
    return m


def skew(v) -> sp.Matrix:
    """``[v]x``: the 3x3 matrix with ``skew(v) * w = v x w``."""
    x, y, z = _col(v)
    return sp.Matrix([[0, -z, y], [z, 0, -x], [-y, x, 0]])


def vee(m) -> sp.Matrix:
    """Inverse of :func:`skew` applied to the skew part: ``vee(S) = (S32, S13, S21)``."""
    return sp.Matrix([m[2, 1], m[0, 2], m[1, 0]])


def rot_axis(axis, theta) -> sp.Matrix:
    """Rotation by ``theta`` about the unit ``axis`` (Rodrigues): ``I + sin t [a]x + (1 - cos t) [a]x^2``.

    For a coordinate axis this is exactly ``rotx``/``roty``/``rotz``.
    """
    a = skew(axis)
    return sp.eye(3) + sp.sin(theta) * a + (1 - sp.cos(theta)) * (a * a)


def rotvec_exp(r) -> sp.Matrix:
    """``exp([r]x) = I + c1(s) [r]x + c2(s) [r]x^2`` with ``s = r.r``; smooth at ``r = 0``."""
    r = _col(r)
    s = (r.T * r)[0]
    rx = skew(r)
    return sp.eye(3) + stumpff(1, s) * rx + stumpff(2, s) * (rx * rx)


def rotvec_jr(r) -> sp.Matrix:
    """Right Jacobian: ``w_body = J_r(r) r_dot`` for ``R = exp([r]x)``: ``I - c2 [r]x + c3 [r]x^2``."""
    r = _col(r)
    s = (r.T * r)[0]
    rx = skew(r)
    return sp.eye(3) - stumpff(2, s) * rx + stumpff(3, s) * (rx * rx)


def rotvec_jl(r) -> sp.Matrix:
    """Left Jacobian: ``w_space = J_l(r) r_dot``: ``I + c2 [r]x + c3 [r]x^2``."""
    r = _col(r)
    s = (r.T * r)[0]
    rx = skew(r)
    return sp.eye(3) + stumpff(2, s) * rx + stumpff(3, s) * (rx * rx)


def _jinv_coefficient(s):
    """``e(s) = (1 - theta sin theta / (2 (1 - cos theta))) / theta^2 = (c3 - 2 c4) / (2 c2)``; e(0) = 1/12."""
    return (stumpff(3, s) - 2 * stumpff(4, s)) / (2 * stumpff(2, s))


def rotvec_jr_inv(r) -> sp.Matrix:
    """``J_r(r)^-1 = I + [r]x / 2 + e(s) [r]x^2`` (finite for ``|r| < 2 pi``)."""
    r = _col(r)
    s = (r.T * r)[0]
    rx = skew(r)
    return sp.eye(3) + rx / 2 + _jinv_coefficient(s) * (rx * rx)


def rotvec_jl_inv(r) -> sp.Matrix:
    """``J_l(r)^-1 = I - [r]x / 2 + e(s) [r]x^2``."""
    r = _col(r)
    s = (r.T * r)[0]
    rx = skew(r)
    return sp.eye(3) - rx / 2 + _jinv_coefficient(s) * (rx * rx)


def rotation_jr_inv(R) -> sp.Matrix:
    """``J_r(log R)^-1`` written directly in the entries of a rotation matrix ``R``.

    With ``w = vee(R - R^T) = 2 sin(theta) n``, ``cos(theta) = (tr R - 1)/2``,
    ``theta = atan2(|w|/2, cos theta)`` in ``[0, pi]`` and ``s = theta^2``::

        [phi]x   = (R - R^T) / (2 c1(s))          (= theta [n]x)
        [phi]x^2 = ((R + R^T)/2 - I) / c2(s)      (= theta^2 (n n^T - I), well conditioned near pi)
        J_r^-1   = I + [phi]x / 2 + e(s) [phi]x^2

    Finite on ``theta in [0, pi)``; at ``theta = pi`` the log itself jumps (from ``pi n`` to ``-pi n``),
    and the ``[phi]x`` term loses relative accuracy like ``eps / (pi - theta)``.
    """
    R = sp.Matrix(R)
    w = vee(R - R.T)
    cos_t = (R.trace() - 1) / 2
    sin_t = sp.sqrt((w.T * w)[0]) / 2
    s = sp.atan2(sin_t, cos_t) ** 2
    phix = (R - R.T) / (2 * stumpff(1, s))
    phix2 = ((R + R.T) / 2 - sp.eye(3)) / stumpff(2, s)
    return sp.eye(3) + phix / 2 + _jinv_coefficient(s) * phix2


def quat_to_matrix(q) -> sp.Matrix:
    """``R(q) = I + 2 w [v]x + 2 [v]x^2`` for ``q = (x, y, z, w)`` (orthogonal only when ``|q| = 1``)."""
    x, y, z, w = q
    v = skew([x, y, z])
    return sp.eye(3) + 2 * w * v + 2 * (v * v)


def quat_product(p, q) -> sp.Matrix:
    """Hamilton product ``p (x) q`` of ``(x, y, z, w)`` quaternions."""
    pv, pw = sp.Matrix(p[:3]), p[3]
    qv, qw = sp.Matrix(q[:3]), q[3]
    v = pw * qv + qw * pv + pv.cross(qv)
    return sp.Matrix([v[0], v[1], v[2], pw * qw - (pv.T * qv)[0]])


def quat_xi(q) -> sp.Matrix:
    """``Xi(q)`` (4x3) with ``q (x) (w, 0) = Xi(q) w``, so ``q_dot = Xi(q) w_body / 2``."""
    x, y, z, w = q
    top = w * sp.eye(3) + skew([x, y, z])
    return top.col_join(sp.Matrix([[-x, -y, -z]]))


# ----------------------------------------------------------------------------------------------
# Spatial (6D)
# ----------------------------------------------------------------------------------------------

def phi(R, l) -> sp.Matrix:
    """``phi(A, B) = [[R_AB, [l_AB]x R_AB], [0, R_AB]]`` (6x6)."""
    R = sp.Matrix(R)
    top = R.row_join(skew(l) * R)
    return top.col_join(sp.zeros(3).row_join(R))


def phi_T(R, l) -> sp.Matrix:
    """``phi(A, B)^T``: maps a spatial velocity in A to the rigidly attached frame B."""
    return phi(R, l).T


def crm(V) -> sp.Matrix:
    """Motion cross product ``V x``: ``[[w~, 0], [v~, w~]]``."""
    V = sp.Matrix(V)
    w, v = skew(V[:3, 0]), skew(V[3:, 0])
    return w.row_join(sp.zeros(3)).col_join(v.row_join(w))


def crf(V) -> sp.Matrix:
    """Force cross product ``V x*`` = ``-crm(V)^T``."""
    return -crm(V).T


def spatial_inertia(m, c, Jc) -> sp.Matrix:
    """``M = [[J_c - m c~ c~, m c~], [-m c~, m I]]`` about the frame origin (DESIGN.md §2)."""
    cx = skew(c)
    Jc = sp.Matrix(Jc)
    return (Jc - m * cx * cx).row_join(m * cx).col_join((-m * cx).row_join(m * sp.eye(3)))


def transform4(R, l) -> sp.Matrix:
    """Homogeneous ``[[R, l], [0, 1]]``."""
    return sp.Matrix(R).row_join(_col(l)).col_join(sp.Matrix([[0, 0, 0, 1]]))


def transform_parts(T):
    """``(R, l)`` of a 4x4 homogeneous transform."""
    T = sp.Matrix(T)
    return T[:3, :3], T[:3, 3]
