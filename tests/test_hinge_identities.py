"""Layer 1–2 checks of every hinge type: the derived equations against differentiation of the transform.

Tolerances: identities that hold exactly in the symbolic derivation (symbolic derivative evaluated
numerically) are checked to 1e-10 of the data scale; central differences (step 1e-6, truncation error
~1e-12, round-off ~1e-10) to 1e-6 of the data scale.
"""
from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from scipy.spatial.transform import Rotation

from helpers import (CASES, assert_close, body_velocity, case_id, central_diff, get_hinge, log_pose,
                     neutral_q, random_q, rotation_angle)
from symgen.symbolic.spatial import NUMERIC_MODULES

EXACT, FD = 1e-10, 1e-6
N_STATES = 6


@pytest.fixture(params=CASES, ids=[case_id(c) for c in CASES])
def h(request):
    return get_hinge(request.param)


def _states(h, seed, n=N_STATES, max_angle=2.5):
    rng = np.random.default_rng(seed)
    return [(random_q(h, rng, max_angle), rng.normal(size=h.nu)) for _ in range(n)]


def _flow_derivative(h, M: sp.Matrix) -> sp.Matrix:
    """Symbolic d/dt of a matrix of Q along Q_dot = N U."""
    qdot = h.qdot_map * h.u
    out = sp.zeros(*M.shape)
    for i, qi in enumerate(h.q):
        out += M.diff(qi) * qdot[i]
    return out


def _fn(h, M):
    f = sp.lambdify([*h.q, *h.u], M, modules=NUMERIC_MODULES)
    return lambda q, u: np.asarray(f(*q, *u), dtype=float)


def test_coord_map_is_transform_derivative(h):
    """H*_p U = [vee(R^T R_dot); R^T l_dot] with the transform differentiated along Q_dot = N U."""
    Tdot = _fn(h, _flow_derivative(h, h.transform))
    T, H, N = h.numeric("transform"), h.numeric("coord_map"), h.numeric("qdot_map")
    for q, u in _states(h, 1):
        V = H(q) @ u
        assert_close(V, body_velocity(T(q), Tdot(q, u)), EXACT, "symbolic dT/dt")
        fd = central_diff(T, q, N(q) @ u)          # independent of symgen's own derivative rules
        assert_close(V, body_velocity(T(q), fd), FD, "finite-difference dT/dt")


def test_oframe_coord_map(h):
    """H*_o U = [vee(R_dot R^T); l_dot]: the same motion seen from and represented in the onode."""
    T, Ho, N = h.numeric("transform"), h.numeric("oframe_coord_map"), h.numeric("qdot_map")
    for q, u in _states(h, 2):
        Td = central_diff(T, q, N(q) @ u)
        R = T(q)[:3, :3]
        W = Td[:3, :3] @ R.T
        assert_close(Ho(q) @ u, np.r_[W[2, 1], W[0, 2], W[1, 0], Td[:3, 3]], FD, "oframe map")


def test_bias_is_coord_map_derivative(h):
    """coord_map_dot = d/dt H*_p and bias = (d/dt H*_p) U, symbolically and by central differences."""
    Hdot = _fn(h, _flow_derivative(h, h.coord_map))
    H, N = h.numeric("coord_map"), h.numeric("qdot_map")
    Hd, b = h.numeric("coord_map_dot"), h.numeric("bias")
    for q, u in _states(h, 3):
        expected = Hdot(q, u)
        assert_close(Hd(q, u), expected, EXACT, "coord_map_dot")
        assert_close(b(q, u), expected @ u, EXACT, "bias")
        assert_close(b(q, u), central_diff(H, q, N(q) @ u) @ u, FD, "bias (finite differences)")


def test_pose_gradient_matches_log_differences(h):
    """G e_j = d/de [log R; l](Q + e N e_j), log from scipy, away from the log's jump at angle pi."""
    T, G, N = h.numeric("transform"), h.numeric("pose_gradient"), h.numeric("qdot_map")
    rng = np.random.default_rng(4)
    checked = 0
    while checked < N_STATES:
        q = random_q(h, rng, 2.0)
        if rotation_angle(T(q)[:3, :3]) > np.pi - 0.3:
            continue
        fd = np.column_stack([central_diff(lambda x: log_pose(T(x)), q, N(q)[:, j]) for j in range(h.nu)]) \
            if h.nu else np.zeros((6, 0))
        assert_close(G(q), fd, FD, "pose gradient")
        checked += 1


def test_ortho_complement(h):
    """OC^T H*_p = 0 everywhere; rank(OC) + rank(H*_p) = 6 wherever H*_p has full column rank (random
    states, and the neutral state unless it is a singular configuration, as for Z-X-Z Euler angles)."""
    H, OC = h.numeric("coord_map"), h.numeric("ortho_complement")
    assert h.ortho_complement.shape == (6, 6 - h.nu)
    qs = [q for q, _ in _states(h, 5)] + [neutral_q(h)]
    for q in qs:
        Hq, C = H(q), OC(q)
        assert_close(C.T @ Hq, np.zeros((6 - h.nu, h.nu)), EXACT, "OC^T H")
        rank = lambda A: np.linalg.matrix_rank(A, tol=1e-9) if A.size else 0  # noqa: E731
        if rank(Hq) == h.nu:
            assert rank(C) + rank(Hq) == 6, f"ranks {rank(C)} + {rank(Hq)} at q={q}"
        else:
            assert q is qs[-1], f"coord map lost rank at a random state {q}"


def _random_offset(rng):
    R = Rotation.from_rotvec(rng.normal(size=3)).as_matrix()
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = R, rng.normal(size=3)
    return T


def test_jacobian_to_offset_frame(h):
    """J(X_pt) U = velocity of t = p * X_pt relative to the onode, in t (finite differences of t's pose);
    J_dot U = d/dt (J U) at fixed U."""
    rng = np.random.default_rng(6)
    X = _random_offset(rng)
    J = _fn(h, h.jacobian(sp.Matrix(X)))
    Jd = _fn(h, h.jacobian_dot(sp.Matrix(X)))
    T, N = h.numeric("transform"), h.numeric("qdot_map")
    frame = lambda q: T(q) @ X  # noqa: E731
    for q, u in _states(h, 7, n=4):
        d = N(q) @ u
        assert_close(J(q, u) @ u, body_velocity(frame(q), central_diff(frame, q, d)), FD, "jacobian")
        assert_close(Jd(q, u) @ u, central_diff(lambda x: J(x, u) @ u, q, d), FD, "jacobian_dot")
    assert h.jacobian() == h.coord_map


def test_transform_is_identity_at_neutral(h):
    assert_close(h.numeric("transform")(neutral_q(h)), np.eye(4), 1e-15, "X_op(neutral)")


def test_batched_numeric_equals_single(h):
    # Equal to rounding: numpy evaluates sin/cos of arrays with SIMD kernels that may differ from the
    # scalar libm result in the last bit, so "equal" here is a few ulp (1e-15), not bitwise.
    states = _states(h, 8, n=5)
    Q = np.array([q for q, _ in states]).reshape(5, h.nq)
    U = np.array([u for _, u in states]).reshape(5, h.nu)
    for name in ("transform", "coord_map", "pose_gradient", "ortho_complement", "qdot_map"):
        f = h.numeric(name)
        batch = f(Q)
        for i in range(5):
            np.testing.assert_allclose(batch[i], f(Q[i]), rtol=1e-15, atol=1e-15)
    batch = h.numeric("bias")(Q, U)
    assert batch.shape == (5, 6)
    for i in range(5):
        np.testing.assert_allclose(batch[i], h.numeric("bias")(Q[i], U[i]), rtol=1e-15, atol=1e-15)


# ---------------------------------------------------------------------------------------------
# quaternion and rotation-vector coordinates
# ---------------------------------------------------------------------------------------------

QUAT_CASES = [c for c in CASES if "SPHERICAL_QUAT" in get_hinge(c).subhinge_types]
SPH_CASES = [c for c in CASES if "SPHERICAL" in get_hinge(c).subhinge_types]


@pytest.mark.parametrize("case", QUAT_CASES, ids=[case_id(c) for c in QUAT_CASES])
def test_quaternion_norm_preserved_by_qdot_map(case):
    """d/dt |q|^2 = 2 q^T N_q U = 0 identically: q^T N_q simplifies to zero."""
    h = get_hinge(case)
    N = h.qdot_map
    i = 0
    for s, start in zip(h.spec.subhinges, np.cumsum([0] + [s.info.nq for s in h.spec.subhinges])):
        if s.type == "SPHERICAL_QUAT":
            rows = [h.spec.q_order[j] for j in range(start, start + 4)]
            quat = sp.Matrix([h.q[r] for r in rows])
            product = (quat.T * N.extract(rows, list(range(h.nu)))).applyfunc(sp.expand)
            assert product == sp.zeros(1, h.nu)
            i += 1
    assert i >= 1


@pytest.mark.parametrize("case", QUAT_CASES + SPH_CASES, ids=[case_id(c) for c in QUAT_CASES + SPH_CASES])
def test_sanitize_keeps_the_pose(case):
    """SPHERICAL: |r| > pi is replaced by the equivalent vector with |r| <= pi (same transform);
    quaternions are renormalized (same rotation); nothing else changes."""
    h = get_hinge(case)
    assert h.has_sanitize
    rng = np.random.default_rng(9)
    T = h.numeric("transform")
    for _ in range(20):
        q = random_q(h, rng)
        offsets = np.cumsum([0] + [s.info.nq for s in h.spec.subhinges])
        for s, start in zip(h.spec.subhinges, offsets):
            idx = [h.spec.q_order[j] for j in range(start, start + s.info.nq)]
            if s.type == "SPHERICAL":
                q[idx] = q[idx] / np.linalg.norm(q[idx]) * rng.uniform(np.pi + 1e-6, 7 * np.pi)
            if s.type == "SPHERICAL_QUAT":
                q[idx] *= rng.uniform(0.5, 2.0)
        qs = h.sanitize(q)
        changed = np.zeros(h.nq, bool)
        for s, start in zip(h.spec.subhinges, offsets):
            idx = [h.spec.q_order[j] for j in range(start, start + s.info.nq)]
            if s.type == "SPHERICAL":
                assert np.linalg.norm(qs[idx]) <= np.pi + 1e-12
                R0 = Rotation.from_rotvec(q[idx]).as_matrix()
                assert_close(Rotation.from_rotvec(qs[idx]).as_matrix(), R0, 1e-12, "sanitized rotation")
                changed[idx] = True
            if s.type == "SPHERICAL_QUAT":
                assert abs(np.linalg.norm(qs[idx]) - 1) < 1e-14
                assert_close(qs[idx], q[idx] / np.linalg.norm(q[idx]), 1e-14, "normalized quaternion")
                changed[idx] = True
        np.testing.assert_array_equal(qs[~changed], q[~changed])
        assert_close(T(qs), T(h.sanitize(qs)), 1e-14, "sanitize is idempotent")
    # inside the ball nothing moves
    q = neutral_q(h)
    np.testing.assert_array_equal(h.sanitize(q), q)


# ---------------------------------------------------------------------------------------------
# hinge-type semantics against closed forms
# ---------------------------------------------------------------------------------------------

def test_bushing_is_simbody_closed_form():
    """Q = (qx, qy, qz, px, py, pz): R = Rx(qx) Ry(qy) Rz(qz) (body-fixed X-Y-Z), l = p, U = Q_dot."""
    import symgen

    h = symgen.hinge("BUSHING")
    assert h.subhinge_types == ("LINEAR3", "PIN", "PIN", "PIN")
    qx, qy, qz, px, py, pz = h.q
    Rx = sp.Matrix([[1, 0, 0], [0, sp.cos(qx), -sp.sin(qx)], [0, sp.sin(qx), sp.cos(qx)]])
    Ry = sp.Matrix([[sp.cos(qy), 0, sp.sin(qy)], [0, 1, 0], [-sp.sin(qy), 0, sp.cos(qy)]])
    Rz = sp.Matrix([[sp.cos(qz), -sp.sin(qz), 0], [sp.sin(qz), sp.cos(qz), 0], [0, 0, 1]])
    assert (h.transform[:3, :3] - Rx * Ry * Rz).applyfunc(sp.expand) == sp.zeros(3)
    assert h.transform[:3, 3] == sp.Matrix([px, py, pz])
    assert h.qdot_map == sp.eye(6)
    # and numerically against scipy's intrinsic XYZ Euler angles
    rng = np.random.default_rng(10)
    for _ in range(10):
        q = rng.uniform(-3, 3, 6)
        T = h.numeric("transform")(q)
        assert_close(T[:3, :3], Rotation.from_euler("XYZ", q[:3]).as_matrix(), 1e-14, "R")
        np.testing.assert_array_equal(T[:3, 3], q[3:])


def _rotation_of(q_xyzw):
    return Rotation.from_quat(q_xyzw).as_matrix()


@pytest.mark.parametrize("name,kw", [("HOOKE", {}), ("HOOKE", {"ij_q": "x30"}), ("PERPENDICULAR", {}),
                                     ("PERPENDICULAR", {"ij_q": "x90"}), ("PARALLEL", {}),
                                     ("PARALLEL", {"ij_q": "z40"}), ("INLINE", {}), ("INPLANE", {})])
def test_karana_hinge_constraints(name, kw):
    """The hinge parameters keep the documented constraint for every Q, and the reference
    configuration reproduces ij_q: R_ij(Q) = R(i2onode) R_op(Q) R(j2pnode)^T."""
    import symgen
    from helpers import quat_about

    named = {"x30": quat_about((1, 0, 0), 30), "x90": quat_about((1, 0, 0), 90), "z40": quat_about((0, 0, 1), 40)}
    kw = {k: named[v] for k, v in kw.items()}
    h = symgen.hinge(name, **kw)
    p = h.params
    Ri, Rj = _rotation_of(p.i2onode_q), _rotation_of(p.j2pnode_q)
    T = h.numeric("transform")
    ex, ey, ez = np.eye(3)
    if "ij_q" in kw:
        assert_close(Ri @ T(neutral_q(h))[:3, :3] @ Rj.T, _rotation_of(kw["ij_q"]), 1e-12, "reference")
    rng = np.random.default_rng(11)
    for _ in range(10):
        X = T(random_q(h, rng))
        Rij = Ri @ X[:3, :3] @ Rj.T
        l_i = Ri @ X[:3, 3]
        if name == "HOOKE":
            assert abs((Rij @ ey) @ ex) < 1e-12 and np.allclose(l_i, 0)
        elif name == "PERPENDICULAR":
            assert abs((Rij @ ez) @ ez) < 1e-12
        elif name == "PARALLEL":
            assert abs(abs((Rij @ ez) @ ez) - 1) < 1e-12
        elif name == "INLINE":
            assert np.allclose(l_i[:2], 0, atol=1e-15) and abs(l_i[2]) > 0
        elif name == "INPLANE":
            assert abs(l_i[2]) < 1e-15


def test_helical_translation_is_pitch_times_angle():
    import symgen

    h = symgen.hinge("HELICAL", axis=(0, 1, 0), pitch=0.05)
    T = h.numeric("transform")(np.array([1.3]))
    assert_close(T[:3, 3], [0, 0.05 * 1.3, 0], 1e-15, "l")
    assert_close(T[:3, :3], Rotation.from_rotvec([0, 1.3, 0]).as_matrix(), 1e-15, "R")


def test_full6dof_speeds():
    """FULL6DOF: U = [p_dot in oframe; w in pframe] -> Q_dot of the position part is U[:3]."""
    import symgen

    h = symgen.hinge("FULL6DOF")
    assert (h.nq, h.nu) == (7, 6)
    rng = np.random.default_rng(12)
    q, u = random_q(h, rng), rng.normal(size=6)
    np.testing.assert_allclose((h.numeric("qdot_map")(q) @ u)[:3], u[:3], rtol=0, atol=1e-15)
    assert_close(h.numeric("oframe_coord_map")(q)[3:] @ u, u[:3], 1e-14, "oframe linear velocity")


def _Rx(a):
    return Rotation.from_euler("x", a).as_matrix()


@pytest.mark.parametrize("name,kw,closed", [
    ("PLANAR", {}, lambda q: (np.eye(3), [q[0], q[1], 0.0])),
    ("TRANSLATIONAL", {}, lambda q: (np.eye(3), list(q))),
    ("CYLINDRICAL", {}, lambda q: (Rotation.from_rotvec([0, 0, q[1]]).as_matrix(), [0.0, 0.0, q[0]])),
    ("UJOINT", {}, lambda q: (Rotation.from_euler("XY", q).as_matrix(), [0.0, 0.0, 0.0])),
    ("GIMBAL", {}, lambda q: (Rotation.from_euler("XYZ", q).as_matrix(), [0.0, 0.0, 0.0])),
    ("CUSTOM", {}, lambda q: (Rotation.from_rotvec([0, 0, q[2]]).as_matrix(), [q[0], q[1], 0.0])),
    ("CUSTOM", {"subhinges": ["PIN", "LINEAR"], "axes": [[0, 1, 0], [1, 0, 0]]},
     lambda q: (Rotation.from_rotvec([0, q[0], 0]).as_matrix(),
                Rotation.from_rotvec([0, q[0], 0]).as_matrix() @ [q[1], 0.0, 0.0])),
], ids=["PLANAR", "TRANSLATIONAL", "CYLINDRICAL", "UJOINT", "GIMBAL", "CUSTOM-default", "CUSTOM-pin-linear"])
def test_transform_closed_forms(name, kw, closed):
    """Hinge types that were only checked against themselves (issue 25, item 6): X_op(Q) against a closed form,
    the rotations from scipy (subhinges compose in series: each later one moves in the frame of the ones
    before it), 1e-14."""
    import symgen

    h = symgen.hinge(name, **kw)
    T = h.numeric("transform")
    rng = np.random.default_rng(13)
    for _ in range(10):
        q = rng.uniform(-3, 3, h.nq)
        R, l = closed(q)
        X = T(q)
        assert_close(X[:3, :3], R, 1e-14, f"{name} R")
        assert_close(X[:3, 3], l, 1e-14, f"{name} l")


def test_fit_q_and_fit_u_against_closed_form_euler_angles():
    """fit_q of a GIMBAL recovers the X-Y-Z body-fixed angles of a rotation by closed-form extraction
    (b = asin R02, a = atan2(-R12, R22), c = atan2(-R01, R00), or the other solution (a + pi, pi - b, c + pi)),
    and fit_u the rates of a known motion:
    for R = Rx(a) Ry(b) Rz(c), w_p = Rz^T Ry^T [da, 0, 0] + Rz^T [0, db, 0] + [0, 0, dc]; 1e-10."""
    import symgen
    from symgen.model import model_from_dict

    mb = symgen.build(model_from_dict({"name": "fitg", "bodies": [
        {"name": "a", "parent": "newtonian", "mass": 1.0, "inertia": [0.01, 0.02, 0.03, 0, 0, 0],
         "hinge": {"type": "GIMBAL"}}]}))
    rng = np.random.default_rng(14)
    for _ in range(5):
        angles = rng.uniform([-3, -1.4, -3], [3, 1.4, 3])
        R = Rotation.from_euler("XYZ", angles).as_matrix()
        want = [np.arctan2(-R[1, 2], R[2, 2]), np.arcsin(R[0, 2]), np.arctan2(-R[0, 1], R[0, 0])]
        X = np.eye(4)
        X[:3, :3] = R
        q = mb.fit_q("a", X)
        # the other Euler solution of the same R: (a + pi, pi - b, c + pi); fit_q may return either
        other = [want[0] + np.pi, np.pi - want[1], want[2] + np.pi]
        wrap = lambda x: (np.asarray(x) + np.pi) % (2 * np.pi) - np.pi  # noqa: E731
        err = min(np.abs(wrap(np.asarray(q) - w)).max() for w in (want, other))
        assert err < 1e-10, f"fit_q angles {q} are neither Euler solution of R ({want}, {other})"
        if np.abs(wrap(np.asarray(q) - want)).max() > 1e-10:
            q = np.asarray(other)
        rates = rng.normal(size=3)
        Ry, Rz = Rotation.from_euler("y", q[1]).as_matrix(), Rotation.from_euler("z", q[2]).as_matrix()
        w = Rz.T @ Ry.T @ [rates[0], 0, 0] + Rz.T @ [0, rates[1], 0] + [0, 0, rates[2]]
        assert_close(mb.fit_u("a", np.r_[w, 0, 0, 0], q), rates, 1e-10, "fit_u rates")


@pytest.mark.parametrize("name,kw", [("PIN", {"axis": (0.6, 0.0, 0.8)}), ("BALL_QUAT", {}), ("GIMBAL", {}),
                                     ("FULL6DOF", {}), ("CUSTOM", {"subhinges": ["PIN", "LINEAR"],
                                                                   "axes": [(0, 0, 1), (1, 0, 0)]})])
def test_reversed_transform_is_the_inverse(name, kw):
    """A reversed hinge's X_op(Q) is the inverse of the forward one's at the same Q (issue 25, item 4; 1e-13),
    with the same N; its coord map, bias, pose gradient and ortho complement are checked against the transform
    by the identity tests above (the reversed cases of helpers.CASES)."""
    import symgen

    fwd, rev = symgen.hinge(name, **kw), symgen.hinge(name, reverse=True, **kw)
    assert rev.spec.reversed and "reverse=True" in rev.spec.label()
    rng = np.random.default_rng(15)
    for _ in range(5):
        q = random_q(fwd, rng)
        assert_close(rev.numeric("transform")(q), np.linalg.inv(fwd.numeric("transform")(q)), 1e-13, "X^-1")
        assert_close(rev.numeric("qdot_map")(q), fwd.numeric("qdot_map")(q), 0.0, "N")
    with pytest.raises(ValueError, match="reverse"):
        symgen.hinge(name, reverse="yes", **kw)


@pytest.mark.parametrize("name,kw", [("BUSHING", {}), ("FULL6DOF", {}), ("HOOKE", {}),
                                     ("CUSTOM", {"subhinges": ["SCREW", "PIN"], "pitch": 0.2})])
def test_subhinge_access(name, kw):
    """h.subhinge(i) (Karana's per-subhinge CoordBase): the subhinges' transforms, each at its slice of Q,
    compose to the hinge's (1e-13), and the hinge's coord map is [phi^T(p_k, p_m) H_k]_k (1e-12)."""
    import symgen
    from symgen.symbolic.spatial import NUMERIC_MODULES  # noqa: F401

    h = symgen.hinge(name, **kw)
    rng = np.random.default_rng(16)
    q = random_q(h, rng)
    subs = [h.subhinge(i) for i in range(h.n_subhinges)]
    assert [s.type for s in subs] == list(h.subhinge_types)
    assert sorted(i for s in subs for i in s.q) == list(range(h.nq))
    X, blocks = np.eye(4), []
    for s in subs:
        X = X @ s.hinge.numeric("transform")(q[s.q])
    assert_close(X, h.numeric("transform")(q), 1e-13, "product of the subhinges' transforms")
    H = h.numeric("coord_map")(q)
    suffix = np.eye(4)
    for s in reversed(subs):
        R, l = suffix[:3, :3], suffix[:3, 3]
        phiT = np.block([[R.T, np.zeros((3, 3))], [-R.T @ np.array([[0, -l[2], l[1]], [l[2], 0, -l[0]],
                                                                     [-l[1], l[0], 0]]), R.T]])
        if s.u:
            assert_close(H[:, s.u], phiT @ s.hinge.numeric("coord_map")(q[s.q]), 1e-12, f"block {s.type}")
        suffix = s.hinge.numeric("transform")(q[s.q]) @ suffix
    with pytest.raises(IndexError):
        h.subhinge(h.n_subhinges)


def test_cofactor_complement_of_three_pins_about_three_points():
    """A hinge whose joints turn about different points (dm_control's rodent shoulder: three PINs about three
    points) takes its orthogonal complement from cofactors (symgen.hinges.derive._cofactor_complement, by
    Laplace's expansion along the constant columns): OC^T H = 0 at random states (1e-12), and OC spans the null
    space of H^T that numpy's SVD gives (an independent oracle: [OC, N] has rank 3).  Only the coord map is derived
    (the hinge's whole kernel set costs half a minute of the suite)."""
    import sympy as sp

    from symgen.hinges import derive

    h = derive.hinge("SERIAL", joints=[{"type": "PIN", "axis": (0, 0, 1), "anchor": (0, -0.005, 0)},
                                       {"type": "PIN", "axis": (1, 0, 0), "anchor": (0, -0.005, -0.01)},
                                       {"type": "PIN", "axis": (0.28734788556634544, 0.9578262852211514, 0.0)}])
    assert derive._common_anchor(h.spec) is False
    H = h.coord_map
    OC = derive._cofactor_complement(h.spec, H)
    q = sorted(H.free_symbols | OC.free_symbols, key=lambda x: x.name)
    Hf, Of = sp.lambdify(q, H, "numpy"), sp.lambdify(q, OC, "numpy")
    rng = np.random.default_rng(4)
    for _ in range(6):
        x = rng.uniform(-2.5, 2.5, len(q))
        Hq, C = np.array(Hf(*x), float), np.array(Of(*x), float)
        assert C.shape == (6, 3)
        assert np.abs(C.T @ Hq).max() < 1e-12 * max(1.0, np.abs(C).max())
        N = np.linalg.svd(Hq.T)[2][3:].T                     # the null space of H^T
        assert np.linalg.matrix_rank(C, tol=1e-9) == 3
        assert np.linalg.matrix_rank(np.hstack([C, N]), tol=1e-9) == 3
