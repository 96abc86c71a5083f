"""symgen.symbolic.spatial against independent oracles: mpmath (high precision), scipy's Rotation, identities."""
from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from scipy.spatial.transform import Rotation

from helpers import assert_close
from symgen.symbolic import spatial as S

S_VALUES = [0.0, 1e-14, 1e-6, 1e-3, 0.5, 2.0, 3.999, 4.001, 7.5, 9.87, 30.0, 100.0]


@pytest.mark.parametrize("k", range(7))
def test_stumpff_numeric_matches_mpmath(k):
    """stumpff_np (series below 4, closed form above) against a 40-digit mpmath series: 1e-13 relative,
    with a 1e-15 absolute floor where c_k crosses zero (c_1 at s = pi^2 is ~2e-5 and ill-conditioned)."""
    for s in S_VALUES:
        exact = float(S.stumpff(k, sp.Float(s, 50)).evalf(40))
        got = S.stumpff_np(k, s)
        assert abs(got - exact) <= 1e-13 * abs(exact) + 1e-15, (k, s, got, exact)


@pytest.mark.parametrize("k", range(5))
def test_stumpff_closed_forms_and_derivative(k):
    """c_k equals its sin/cos closed form; d c_k/ds matches a high-precision central difference."""
    s = sp.Float("2.3", 50)
    closed = S.stumpff(k, sp.Symbol("x")).rewrite(sp.cos).subs(sp.Symbol("x"), s)
    assert abs(float(S.stumpff(k, s).evalf(30) - closed.evalf(30))) < 1e-25
    x = sp.Symbol("x")
    d = sp.diff(S.stumpff(k, x), x).subs(x, s).evalf(30)
    h = sp.Float("1e-12", 50)
    fd = ((S.stumpff(k, s + h).evalf(45) - S.stumpff(k, s - h).evalf(45)) / (2 * h))
    assert abs(float(d - fd)) < 1e-15


def test_stumpff_array_and_zero():
    np.testing.assert_allclose(S.stumpff_np(2, np.array([0.0, 0.0])), [0.5, 0.5], rtol=0, atol=0)
    assert S.stumpff(3, sp.Integer(0)) == sp.Rational(1, 6)


def _rotvec(rng, max_angle=3.0):
    v = rng.normal(size=3)
    return v / np.linalg.norm(v) * rng.uniform(0, max_angle)


def _f(expr, *syms):
    return sp.lambdify(syms, expr, modules=S.NUMERIC_MODULES)


r_sym = sp.Matrix(sp.symbols("r0:3", real=True))
rd_sym = sp.Matrix(sp.symbols("d0:3", real=True))


def test_rotvec_exp_matches_scipy():
    exp = _f(S.rotvec_exp(r_sym), *r_sym)
    rng = np.random.default_rng(0)
    for r in [_rotvec(rng) for _ in range(20)] + [np.zeros(3), np.array([1e-9, 0, 0])]:
        assert_close(np.array(exp(*r), float), Rotation.from_rotvec(r).as_matrix(), 1e-14, "exp")


def test_rotvec_jacobians():
    """w_body = J_r r_dot and w_space = J_l r_dot (central differences of exp); J J^-1 = I."""
    exp = _f(S.rotvec_exp(r_sym), *r_sym)
    Jr, Jl = _f(S.rotvec_jr(r_sym), *r_sym), _f(S.rotvec_jl(r_sym), *r_sym)
    Jri, Jli = _f(S.rotvec_jr_inv(r_sym), *r_sym), _f(S.rotvec_jl_inv(r_sym), *r_sym)
    E = lambda r: np.array(exp(*r), float)  # noqa: E731
    rng = np.random.default_rng(1)
    for r in [_rotvec(rng) for _ in range(10)] + [np.array([1e-7, -2e-7, 0.0])]:
        rd = rng.normal(size=3)
        R = E(r)
        Rd = (E(r + 1e-6 * rd) - E(r - 1e-6 * rd)) / 2e-6
        wb, ws = R.T @ Rd, Rd @ R.T
        assert_close(np.array(Jr(*r), float) @ rd, [wb[2, 1], wb[0, 2], wb[1, 0]], 1e-8, "J_r")
        assert_close(np.array(Jl(*r), float) @ rd, [ws[2, 1], ws[0, 2], ws[1, 0]], 1e-8, "J_l")
        assert_close(np.array(Jr(*r), float) @ np.array(Jri(*r), float), np.eye(3), 1e-12, "J_r J_r^-1")
        assert_close(np.array(Jl(*r), float) @ np.array(Jli(*r), float), np.eye(3), 1e-12, "J_l J_l^-1")


def test_rotation_jr_inv_equals_jr_inv_of_log():
    """J_r^-1 written in R's entries equals J_r^-1(r) for |r| < pi, including tiny and near-pi angles."""
    Rm = sp.Matrix(3, 3, sp.symbols("R0:9", real=True))
    from_R = _f(S.rotation_jr_inv(Rm), *Rm)
    Jri = _f(S.rotvec_jr_inv(r_sym), *r_sym)
    rng = np.random.default_rng(2)
    axes = [v / np.linalg.norm(v) for v in rng.normal(size=(6, 3))]
    for a in axes:
        for angle in (1e-9, 1e-4, 0.3, 1.7, 3.0, np.pi - 1e-3):
            r = a * angle
            R = Rotation.from_rotvec(r).as_matrix()
            tol = 1e-12 if angle < 3.1 else 1e-9  # the [phi]x term conditions like eps / (pi - angle)
            assert_close(np.array(from_R(*R.ravel()), float), np.array(Jri(*r), float), tol, f"angle {angle}")


def test_quaternion_conventions_match_scipy():
    """(x, y, z, w) storage, Hamilton product, R = R(q) as scipy (and Pinocchio/Eigen) define them."""
    q_sym = sp.symbols("x y z w", real=True)
    p_sym = sp.symbols("a b c d", real=True)
    R = _f(S.quat_to_matrix(q_sym), *q_sym)
    prod = _f(S.quat_product(p_sym, q_sym), *p_sym, *q_sym)
    rng = np.random.default_rng(3)
    for _ in range(10):
        p, q = Rotation.random(random_state=rng), Rotation.random(random_state=rng)
        assert_close(np.array(R(*q.as_quat()), float), q.as_matrix(), 1e-14, "R(q)")
        pq = np.array(prod(*p.as_quat(), *q.as_quat()), float).ravel()
        assert_close(Rotation.from_quat(pq).as_matrix(), (p * q).as_matrix(), 1e-14, "p (x) q")
        assert_close(S.np_quat_to_matrix(q.as_quat()), q.as_matrix(), 1e-14, "np R(q)")
        qq = S.np_matrix_to_quat(q.as_matrix())
        ref = q.as_quat() * np.sign(q.as_quat()[3])
        assert_close(qq, ref, 1e-14, "matrix -> quat")
        assert_close(S.np_rotation_log(q.as_matrix()), q.as_rotvec(), 1e-12, "log")


def test_quat_xi_gives_body_rate():
    """q_dot = Xi(q) w / 2  =>  R^T R_dot = [w]x  (w in the rotated frame)."""
    q_sym = sp.Matrix(sp.symbols("x y z w", real=True))
    Xi = _f(S.quat_xi(q_sym), *q_sym)
    rng = np.random.default_rng(4)
    for _ in range(5):
        q = Rotation.random(random_state=rng).as_quat()
        w = rng.normal(size=3)
        qd = np.array(Xi(*q), float) @ w / 2
        R = S.np_quat_to_matrix(q)
        Rd = (S.np_quat_to_matrix(q + 1e-6 * qd) - S.np_quat_to_matrix(q - 1e-6 * qd)) / 2e-6
        W = R.T @ Rd
        assert_close([W[2, 1], W[0, 2], W[1, 0]], w, 1e-8, "body rate")


def _num(M):
    return np.array(M.evalf(), dtype=float)


def test_phi_composition_and_transport():
    """phi(A,B) phi(B,C) = phi(A,C); V_B = phi^T V_A is rigid transport (w_B = R^T w_A,
    v_B = R^T (v_A + w_A x l)); the spatial inertia is phi(o, c) diag(J, m I) phi(o, c)^T."""
    rng = np.random.default_rng(5)
    R1, R2 = (Rotation.random(random_state=rng).as_matrix() for _ in range(2))
    l1, l2 = rng.normal(size=3), rng.normal(size=3)
    P = _num(S.phi(sp.Matrix(R1), l1) * S.phi(sp.Matrix(R2), l2))
    assert_close(P, _num(S.phi(sp.Matrix(R1 @ R2), l1 + R1 @ l2)), 1e-14, "composition")
    V = rng.normal(size=6)
    VB = _num(S.phi_T(sp.Matrix(R1), l1) * sp.Matrix(V)).ravel()
    assert_close(VB, np.r_[R1.T @ V[:3], R1.T @ (V[3:] + np.cross(V[:3], l1))], 1e-14, "transport")
    m, c = 2.5, rng.normal(size=3)
    A = rng.normal(size=(3, 3))
    J = A @ A.T + np.eye(3)
    Mc = np.block([[J, np.zeros((3, 3))], [np.zeros((3, 3)), m * np.eye(3)]])
    Ph = _num(S.phi(sp.eye(3), c))
    assert_close(_num(S.spatial_inertia(m, c, J)), Ph @ Mc @ Ph.T, 1e-13, "inertia")
    # crm / crf: (V x) W = -(W x) V, and crf = -crm^T
    W = rng.normal(size=6)
    assert_close(_num(S.crm(V) * sp.Matrix(W)).ravel(), -_num(S.crm(W) * sp.Matrix(V)).ravel(), 1e-14, "crm")
    assert_close(_num(S.crf(V)), -_num(S.crm(V)).T, 0, "crf")
