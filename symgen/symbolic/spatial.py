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

sympy's own tools know ``stumpff`` too: :func:`sympy.lambdify` (any ``modules``) calls the numeric twin
through the documented ``_imp_`` hook (mpmath numbers get an mpmath evaluation at working precision), and
the printers ``pycode``, ``ccode``, ``NumPyPrinter``/``SciPyPrinter``, ``MpmathPrinter`` and ``latex`` print
self-contained code that is just as safe at ``s = 0`` (series near 0, closed form away from it; see the
printer methods of :class:`stumpff`).
"""
from __future__ import annotations

import math

import sympy as sp

from ..numeric import (_SERIES_LIMIT, _SERIES_TERMS, np_matrix_to_quat, np_quat_to_matrix,  # noqa: F401
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

    # ---- numeric implementation and code printing (sympy's documented extension points)
    #
    # lambdify: ``_imp_`` is put in the namespace of every lambdified function (and, because it is, the
    # printers inside lambdify print a plain ``stumpff(k, s)`` call to it).  Printers used on their own
    # (``sympy.pycode``, ``sympy.ccode``, ``NumPyPrinter().doprint``, ``lambdify(..., use_imps=False)``)
    # print self-contained, small-angle-safe code instead; a printer that defines ``_print_stumpff``
    # (symgen's C emitter) or was given ``user_functions={"stumpff": name}`` prints a call to that.

    @staticmethod
    def _imp_(k, s):
        """Numeric ``c_k(s)`` for lambdify: numpy arrays and floats via :func:`stumpff_np`, mpmath numbers
        at mpmath's working precision, sympy objects stay symbolic."""
        if isinstance(s, sp.Basic):
            return stumpff(sp.sympify(k), s)
        if type(s).__module__.startswith("mpmath"):
            return _stumpff_mpmath(int(k), s)
        return stumpff_np(int(k), s)

    def _pythoncode(self, printer, **kwargs):
        return _defer_to_printer(self, printer) or _stumpff_python(self, printer)

    _lambdacode = _pythoncode

    def _numpycode(self, printer, **kwargs):
        return _defer_to_printer(self, printer) or _stumpff_numpy(self, printer)

    _cupycode = _jaxcode = _numpycode

    def _mpmathcode(self, printer, **kwargs):
        return _defer_to_printer(self, printer) or _stumpff_mpmath_code(self, printer)

    def _ccode(self, printer, **kwargs):
        return _defer_to_printer(self, printer) or _stumpff_c(self, printer)

    def _numexprcode(self, printer, **kwargs):
        # NumExprPrinter would otherwise expand _imp_ with sympy arguments, which returns stumpff again
        raise TypeError("numexpr does not support function 'stumpff' (use lambdify's 'numpy' module)")

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


#: ``modules=`` argument for :func:`sympy.lambdify` that knows symgen's special functions (kept for
#: compatibility: plain ``sympy.lambdify(args, expr)`` works too, through ``stumpff._imp_``).
NUMERIC_MODULES = [{"stumpff": stumpff_np}, "numpy"]


# ---- printed code for stumpff (used by the printer methods above)
#
# Python and numpy: the split of stumpff_np and the C helper sg_stumpff.  For |s| < _SERIES_LIMIT the
# Taylor series in Horner form (the same _SERIES_TERMS double coefficients, evaluated in the same order,
# so the printed code agrees with stumpff_np to the last bit or two); above it the closed form from
# cos/sin (s > 0) or cosh/sinh (s < 0) of sqrt(|s|) and c_{j+2} = (1/j! - c_j)/s.  C: see _stumpff_c.
# mpmath: a hypergeometric function.  Nothing divides by a small s, so there is no nan/inf and no
# cancellation near s = 0.

def _defer_to_printer(expr, printer):
    """A printer's own rule for stumpff wins: ``_print_stumpff`` (symgen.codegen.emit's C printer) or a name
    given in ``user_functions`` (lambdify puts ``_imp_`` there).  ``None`` when there is none."""
    own = getattr(printer, "_print_stumpff", None)
    if own is not None:
        return own(expr)
    if "stumpff" in getattr(printer, "known_functions", {}):
        return printer._print_Function(expr)
    return None


def _float_literal(x: float) -> str:
    """Shortest round-trip literal of a double (valid Python and C)."""
    return repr(float(x))


def _series_text(k: int, x: str, terms: int = _SERIES_TERMS) -> str:
    """Horner form of ``sum_{i < terms} (-x)^i / (k+2i)!`` in the variable text ``x``."""
    coeffs = [(-1.0) ** i / math.factorial(k + 2 * i) for i in range(terms)]
    text = _float_literal(coeffs[-1])
    for c in reversed(coeffs[:-1]):
        text = "%s + %s*(%s)" % (_float_literal(c), x, text)
    return text


def _closed_text(k: int, x: str, sqrt: str, even: str, odd: str, neg: bool) -> str:
    """Closed form of ``c_k(x)`` for ``|x| >= _SERIES_LIMIT``: ``even``/``odd`` are cos/sin (``x > 0``) or
    cosh/sinh (``x < 0``, ``neg``) of ``t = sqrt(|x|)``."""
    t = "%s(%s%s)" % (sqrt, "-" if neg else "", x)
    text = "%s(%s)" % (even, t) if k % 2 == 0 else "%s(%s)/%s" % (odd, t, t)
    for j in range(2 + k % 2, k + 1, 2):
        text = "(%s - %s)/%s" % (_float_literal(1.0 / math.factorial(j - 2)), text, x)
    return text


def _stumpff_python(expr, printer) -> str:
    """Scalar Python (``math``): ``(lambda _s: series if abs(_s) < 4 else cosh.. if _s <= -4 else cos..)(s)``.
    The lambda binds ``s`` once; only the branch taken is evaluated."""
    k, s = int(expr.args[0]), printer._print(expr.args[1])
    f = {n: printer._module_format("math." + n) for n in ("sqrt", "sin", "cos", "sinh", "cosh")}
    lim = _float_literal(_SERIES_LIMIT)
    return "(lambda _s: %s if abs(_s) < %s else %s if _s <= -%s else %s)(%s)" % (
        _series_text(k, "_s"), lim, _closed_text(k, "_s", f["sqrt"], f["cosh"], f["sinh"], True), lim,
        _closed_text(k, "_s", f["sqrt"], f["cos"], f["sin"], False), s)


def _stumpff_numpy(expr, printer) -> str:
    """Array code (numpy, or ``printer._module``): all three branches are evaluated, each on its own
    clamped copy of ``s`` (series on 0 outside |s| < 4, cos/sin on >= 4, cosh/sinh on <= -4), so no branch
    divides by zero or overflows for an entry it does not produce; nan stays nan."""
    k, s = int(expr.args[0]), printer._print(expr.args[1])
    mod = getattr(printer, "_module", "numpy")
    f = {n: printer._module_format("%s.%s" % (mod, n))
         for n in ("where", "absolute", "sqrt", "sin", "cos", "sinh", "cosh")}
    lim = _float_literal(_SERIES_LIMIT)
    small = "%s(_s) < %s" % (f["absolute"], lim)
    return ("(lambda _s: (lambda _h, _n, _p: {where}({small}, {series}, {where}(_s <= -{lim}, {hyp}, {trig})))"
            "({where}({small}, _s, 0.0), {where}(_s > -{lim}, -{lim}, _s), {where}(_s < {lim}, {lim}, _s)))"
            "({s})").format(
        where=f["where"], small=small, lim=lim, s=s, series=_series_text(k, "_h"),
        hyp=_closed_text(k, "_n", f["sqrt"], f["cosh"], f["sinh"], True),
        trig=_closed_text(k, "_p", f["sqrt"], f["cos"], f["sin"], False))


def _stumpff_mpmath_code(expr, printer) -> str:
    """mpmath: ``c_k(s) = 1F2(1; (k+1)/2, (k+2)/2; -s/4) / k!`` (mpmath sums it at working precision,
    raising precision against cancellation; no singularity anywhere)."""
    k, s = int(expr.args[0]), printer._print(expr.args[1])
    hyp, mpf = printer._module_format("mpmath.hyp1f2"), printer._module_format("mpmath.mpf")
    return "(%s(1, %s(%d)/2, %s(%d)/2, -(%s)/4)/%d)" % (hyp, mpf, k + 1, mpf, k + 2, s, math.factorial(k))


def _stumpff_mpmath(k: int, s):
    """Numeric ``c_k(s)`` of an mpmath number (the function behind :meth:`stumpff._imp_` for mpmath)."""
    import mpmath

    return mpmath.hyp1f2(1, mpmath.mpf(k + 1) / 2, mpmath.mpf(k + 2) / 2, -s / 4) / math.factorial(k)


def _series_terms_needed(k: int, limit: float = _SERIES_LIMIT, tol: float = 1e-17) -> int:
    """Fewest terms with ``|s| < limit`` truncation error (first omitted term) below ``tol * c_k(0)``."""
    n = 1
    while limit ** n * math.factorial(k) / math.factorial(k + 2 * n) > tol:
        n += 1
    return n


def _stumpff_c(expr, printer) -> str:
    """C (needs only ``<math.h>``).  C has no expression-level binding, so the argument text is repeated;
    to keep that down (nested rotations put stumpffs inside stumpff arguments) the forms are:

    * ``c_0 = cos(sqrt(s))`` / ``cosh(sqrt(-s))``; ``c_1 = sin(t)/t`` (``sinh``), exactly 1 at ``s = 0``;
      ``c_2 = c_1(s/4)^2 / 2`` (the half-angle form of ``(1 - cos t)/t^2``: no cancellation);
    * ``k >= 3``: the series below ``|s| < 4`` with only as many terms as double precision needs, the
      closed form above.

    ``sympy.cse`` before ``ccode`` keeps the source short."""
    k, x = int(expr.args[0]), "(%s)" % printer._print(expr.args[1])
    return _c_text(k, x)


def _c_text(k: int, x: str) -> str:
    if k == 0:
        return "((%s >= 0.0) ? cos(sqrt(%s)) : cosh(sqrt(-%s)))" % (x, x, x)
    if k == 1:
        return "((%s == 0.0) ? 1.0 : (%s > 0.0) ? (sin(sqrt(%s))/sqrt(%s)) : (sinh(sqrt(-%s))/sqrt(-%s)))" % (
            x, x, x, x, x, x)
    if k == 2:
        return "(0.5*pow(%s, 2))" % _c_text(1, "(%s/4.0)" % x)
    return "((fabs(%s) < %s) ? (%s) : (%s > 0.0) ? (%s) : (%s))" % (
        x, _float_literal(_SERIES_LIMIT), _series_text(k, x, _series_terms_needed(k)), x,
        _closed_text(k, x, "sqrt", "cos", "sin", False),
        _closed_text(k, x, "sqrt", "cosh", "sinh", True))


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
