"""A hinge type is defined in ``symgen/hinges`` only: the registry against the every-hinge example, and a
NEW subhinge type registered from this file alone, derived, compiled, built into a model and run.

The new subhinge PIN_CS turns about its axis by the angle whose cosine and sine are its two coordinates:
Q = (c, s) on the unit circle, U = the angular rate, ``R = I + s [a]x + (1 - c) [a]x^2``, ``N = [-s; c]``;
its neutral Q is (1, 0) and sanitizing normalizes (c, s).  No trigonometric function appears in its
kinematics.  The hinge type CYLINDRICAL_CS is LINEAR then PIN_CS about one axis.

Oracles: scipy rotations (closed-form transforms), central differences of the transform, coord map and
scipy's rotation-vector log (1e-6 of the data scale), Kane's equations written here from each body's
Jacobian, spatial inertia and gravity (1e-8), identities (1e-10), C against lambdify (1e-12).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import sympy as sp
import yaml
from scipy.spatial.transform import Rotation

import symgen
from helpers import assert_close, body_velocity, central_diff, log_pose
from symgen.hinges import derive
from symgen.hinges import (HINGE_TYPE_TABLE, SUBHINGE_TYPES, SubhingeKinematics, bind, hinge_table_markdown,
                           register_hinge_type, register_subhinge, temporary_types)

ROOT = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------------------------------------
# the registry against the every-hinge example (the README table: tests/test_cli_and_docs.py)
# ---------------------------------------------------------------------------------------------

def test_every_hinge_example_uses_every_registered_type():
    """examples/models/all_hinges.yaml has a body for each hinge type, and its hinges use every subhinge."""
    doc = yaml.safe_load((ROOT / "examples" / "models" / "all_hinges.yaml").read_text())
    hinges = [b["hinge"] for b in doc["bodies"]]
    assert sorted(h["type"] for h in hinges) == sorted(symgen.HINGE_TYPES)
    used = {s for h in hinges
            for s in bind(h["type"], **{k: v for k, v in h.items() if k not in ("type", "name")}).subhinge_types}
    assert used == set(SUBHINGE_TYPES)


# ---------------------------------------------------------------------------------------------
# the new subhinge type, defined here
# ---------------------------------------------------------------------------------------------

def _cs_kinematics(sign=1):
    """PIN_CS kinematics about ``sign * axis``."""
    def kinematics(q, axis, pitch=None):
        c, s = q
        a = sign * sp.Matrix(axis)
        A = sp.Matrix([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
        return SubhingeKinematics(sp.eye(3) + s * A + (1 - c) * A * A, sp.zeros(3, 1),
                                  a.col_join(sp.zeros(3, 1)), sp.Matrix([[-s], [c]]))
    return kinematics


def _cs_sanitize(q):
    v = sp.Matrix(q)
    return v / sp.sqrt(v[0] ** 2 + v[1] ** 2)


def _cs_random(rng, max_angle):
    t = rng.uniform(-max_angle, max_angle)
    return np.array([np.cos(t), np.sin(t)])


def _register_cs(name="PIN_CS", sign=1):
    return register_subhinge(name, 2, 1, _cs_kinematics(sign), has_axis=True, q_meaning="(cos, sin) of the angle",
                             rotation="axis", sanitize=_cs_sanitize, neutral_q=(1.0, 0.0), random_q=_cs_random)


@pytest.fixture
def cs_types():
    """PIN_CS and CYLINDRICAL_CS, registered for one test."""
    with temporary_types():
        _register_cs()
        register_hinge_type("CYLINDRICAL_CS", ["LINEAR", "PIN_CS"],
                            "translation along and rotation about one axis, angle as (cos, sin)",
                            axes=[(0.0, 0.0, 1.0)] * 2)
        yield


def test_registration_is_listed_and_temporary(cs_types):
    before = tuple(symgen.HINGE_TYPES)
    assert "CYLINDRICAL_CS" in symgen.HINGE_TYPES and "PIN_CS" in symgen.SUBHINGE_TYPES
    assert symgen.subhinge_types("cylindrical_cs") == ("LINEAR", "PIN_CS")
    assert "| CYLINDRICAL_CS | 3 | 2 | LINEAR → PIN_CS | `axis` = z |" in hinge_table_markdown()
    with pytest.raises(ValueError, match="already registered"):
        _register_cs()
    with pytest.raises(ValueError, match="unknown subhinge"):
        register_hinge_type("WARPED", ["PIN_CS", "WARP"], "-", axes=[(1.0, 0.0, 0.0)])
    with temporary_types():
        _register_cs("PIN_CS_TMP")
        register_hinge_type("TMP_HINGE", ["PIN_CS_TMP"], "-", axes=[(1.0, 0.0, 0.0)])
        assert symgen.HINGE_TYPES[-1] == "TMP_HINGE"
    assert tuple(symgen.HINGE_TYPES) == before and "PIN_CS_TMP" not in SUBHINGE_TYPES
    with pytest.raises(ValueError, match="unknown hinge type"):
        bind("TMP_HINGE")


def test_cache_keys_carry_the_definition():
    """One name, two definitions (axis a, then -a), each in its own temporary registry: different keys,
    and the second derivation (through the caches) is its own: R(-a, t) = R(a, t)^T."""
    out = []
    for sign in (1, -1):
        with temporary_types():
            _register_cs("PIN_CSX", sign)
            spec = bind("CUSTOM", subhinges=["PIN_CSX"], axes=[(0.0, 0.6, 0.8)])
            out.append((spec.key(), derive.derivation_key(spec), derive.derived(spec)["transform"]))
    (k1, d1, T1), (k2, d2, T2) = out
    assert k1 != k2 and d1 != d2
    assert (T2[:3, :3] - T1[:3, :3].T).applyfunc(sp.expand) == sp.zeros(3)
    assert "PIN_CSX" not in SUBHINGE_TYPES and "PIN_CSX" not in HINGE_TYPE_TABLE


# ---------------------------------------------------------------------------------------------
# derivation of hinges using it
# ---------------------------------------------------------------------------------------------

AXIS = np.array([0.0, 0.6, 0.8])
CASES = {
    "cylindrical_cs": ("CYLINDRICAL_CS", {"axis": tuple(AXIS)}),
    "custom_cs_cs": ("CUSTOM", {"subhinges": ["PIN_CS", "PIN_CS"], "axes": [(1, 0, 0), (0, 1, 0)]}),
}


def _expected_transform(case, q):
    """Closed form from scipy: CYLINDRICAL_CS slides d along a and turns by atan2(s, c) about a; the CUSTOM
    case turns about x, then about the new y."""
    T = np.eye(4)
    if case == "cylindrical_cs":
        d, c, s = q
        T[:3, :3] = Rotation.from_rotvec(np.arctan2(s, c) * AXIS).as_matrix()
        T[:3, 3] = d * AXIS
    else:
        c1, s1, c2, s2 = q
        T[:3, :3] = (Rotation.from_rotvec([np.arctan2(s1, c1), 0, 0])
                     * Rotation.from_rotvec([0, np.arctan2(s2, c2), 0])).as_matrix()
    return T


@pytest.fixture(params=list(CASES))
def case(request, cs_types):
    name, kw = CASES[request.param]
    return request.param, symgen.hinge(name, **kw)


def test_transform_neutral_and_closed_form(case):
    name, h = case
    T = h.numeric("transform")
    assert h.spec.neutral_q() == {"cylindrical_cs": [0.0, 1.0, 0.0], "custom_cs_cs": [1.0, 0.0, 1.0, 0.0]}[name]
    assert_close(T(np.array(h.spec.neutral_q())), np.eye(4), 1e-15, "identity at neutral Q")
    rng = np.random.default_rng(1)
    for _ in range(10):
        q = h.spec.random_q(rng)
        X = T(q)
        assert_close(X[:3, :3] @ X[:3, :3].T, np.eye(3), 1e-12, "R orthonormal")
        assert abs(np.linalg.det(X[:3, :3]) - 1) < 1e-12
        assert_close(X, _expected_transform(name, q), 1e-12, "closed form")


def test_maps_are_derivatives_of_the_transform(case):
    """Coord map = body velocity of the transform along Q_dot = N U; bias = derivative of the coord map
    times U; pose gradient = derivative of scipy's [log R; l]; ortho complement^T coord map = 0."""
    _, h = case
    T, H, N = h.numeric("transform"), h.numeric("coord_map"), h.numeric("qdot_map")
    bias, G, OC = h.numeric("bias"), h.numeric("pose_gradient"), h.numeric("ortho_complement")
    rng = np.random.default_rng(2)
    for _ in range(10):
        q, u = h.spec.random_q(rng, max_angle=1.2), rng.normal(size=h.nu)
        d = N(q) @ u
        assert_close(H(q) @ u, body_velocity(T(q), central_diff(T, q, d)), 1e-6, "coord map")
        assert_close(bias(q, u), central_diff(H, q, d) @ u, 1e-6, "bias")
        assert_close(G(q) @ u, central_diff(lambda x: log_pose(T(x)), q, d), 1e-6, "pose gradient")
        C = OC(q)
        assert C.shape == (6, 6 - h.nu)
        assert_close(C.T @ H(q), np.zeros((6 - h.nu, h.nu)), 1e-12, "ortho complement")
        assert np.linalg.matrix_rank(np.hstack([H(q), C]), tol=1e-9) == 6


def test_sanitize_and_c_kernels(case):
    """Sanitize puts (c, s) back on the unit circle (same pose as the unit Q); the compiled C equals
    lambdify (1e-12)."""
    from symgen.pipeline.sources import compile_hinge

    name, h = case
    assert h.has_sanitize
    T = h.numeric("transform")
    rng = np.random.default_rng(3)
    Q = np.array([h.spec.random_q(rng) for _ in range(8)])
    scaled = Q.copy()
    for pair in {"cylindrical_cs": [[1, 2]], "custom_cs_cs": [[0, 1], [2, 3]]}[name]:
        scaled[:, pair] *= rng.uniform(0.5, 2.0, size=(len(Q), 1))
    assert_close(h.sanitize(scaled), Q, 1e-14, "sanitized Q")
    assert_close(T(h.sanitize(scaled)), T(Q), 1e-14, "same pose")
    k = compile_hinge(h)
    U = rng.normal(size=(len(Q), h.nu))
    for name in ("transform", "coord_map", "oframe_coord_map", "qdot_map", "pose_gradient", "ortho_complement"):
        assert_close(getattr(k, name)(Q), h.numeric(name)(Q), 1e-12, name)
    for name in ("coord_map_dot", "bias"):
        assert_close(getattr(k, name)(Q, U), h.numeric(name)(Q, U), 1e-12, name)
    assert_close(k.sanitize(scaled), h.sanitize(scaled), 1e-12, "C sanitize")


# ---------------------------------------------------------------------------------------------
# a model using it
# ---------------------------------------------------------------------------------------------

MODEL = """
name: cs_model
gravity: [0.0, 0.0, -9.81]
bodies:
- name: base
  parent: newtonian
  mass: 2.0
  com: [0.1, -0.05, 0.2]
  inertia: [[0.05, 0.002, 0.0], [0.002, 0.04, -0.003], [0.0, -0.003, 0.03]]
  hinge: {type: CYLINDRICAL_CS, name: slide_turn, axis: [0.0, 0.6, 0.8]}
  onode: {xyz: [0.1, 0.2, 0.3], rpy: [0.3, -0.2, 0.5]}
- name: arm
  parent: base
  mass: 1.2
  com: [0.0, 0.15, -0.1]
  inertia: [[0.02, 0.0, 0.001], [0.0, 0.03, 0.0], [0.001, 0.0, 0.025]]
  hinge: {type: CUSTOM, name: two_cs, subhinges: [PIN_CS, PIN_CS], axes: [[1, 0, 0], [0, 1, 0]]}
  onode: {xyz: [0.0, 0.3, 0.1]}
  pnode: {xyz: [0.05, 0.0, -0.2], rpy: [0.1, 0.2, -0.3]}
- name: hand
  parent: arm
  mass: 0.7
  com: [0.05, 0.0, 0.05]
  inertia: [[0.01, 0.001, 0.0], [0.001, 0.012, 0.0], [0.0, 0.0, 0.008]]
  hinge: {type: BALL, name: wrist}
  onode: {xyz: [0.0, 0.4, 0.0]}
- name: side
  parent: base
  mass: 0.9
  com: [0.2, 0.0, 0.0]
  inertia: [[0.004, 0.0, 0.0], [0.0, 0.02, 0.0], [0.0, 0.0, 0.02]]
  hinge: {type: PIN, name: side_pin, axis: [0, 1, 0]}
  onode: {xyz: [0.2, 0.0, 0.1], rpy: [0.0, 0.4, 0.0]}
"""


@pytest.fixture(scope="module")
def mb(tmp_path_factory):
    path = tmp_path_factory.mktemp("cs-model") / "cs_model.yaml"
    path.write_text(MODEL)
    with temporary_types():
        _register_cs()
        register_hinge_type("CYLINDRICAL_CS", ["LINEAR", "PIN_CS"], "-", axes=[(0.0, 0.0, 1.0)] * 2)
        return symgen.build(path)


def _spatial_inertia(body):
    m, c, Jc = body["mass"], np.array(body["com"]), np.array(body["inertia"])
    C = _skew(c)
    return np.block([[Jc - m * C @ C, m * C], [-m * C, m * np.eye(3)]])


def _skew(v):
    return np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])


def _cross_force(V):
    """V x* (the spatial cross product acting on forces), V = [w; v]."""
    W, v = _skew(V[:3]), _skew(V[3:])
    return np.block([[W, v], [np.zeros((3, 3)), W]])


def _state(mb, rng):
    q = np.empty(mb.nq)
    q[mb.q_slice("slide_turn")] = np.r_[rng.uniform(-1, 1), _cs_random(rng, 3.0)]
    q[mb.q_slice("two_cs")] = np.r_[_cs_random(rng, 3.0), _cs_random(rng, 3.0)]
    q[mb.q_slice("wrist")] = rng.uniform(-1, 1, 3)
    q[mb.q_slice("side_pin")] = rng.uniform(-3, 3)
    return q, rng.normal(size=mb.nu), rng.normal(size=mb.nu)


def test_model_layout_neutral_and_sanitize(mb):
    assert (mb.nq, mb.nu) == (11, 8)
    assert [mb.q_slice(h).stop - mb.q_slice(h).start for h in ("slide_turn", "two_cs", "wrist", "side_pin")] \
        == [3, 4, 3, 1]
    neutral = np.zeros(mb.nq)  # cos 0 = 1, sin 0 = 0
    neutral[mb.q_slice("slide_turn")] = [0, 1, 0]
    neutral[mb.q_slice("two_cs")] = [1, 0, 1, 0]
    assert_close(mb.neutral_q(), neutral, 0, "neutral Q")
    rng = np.random.default_rng(4)
    q, _, _ = _state(mb, rng)
    bad = q.copy()
    pairs = [mb.q_slice("slide_turn").start + 1, mb.q_slice("two_cs").start, mb.q_slice("two_cs").start + 2]
    for i in pairs:
        bad[i:i + 2] *= rng.uniform(0.5, 2.0)
    w = mb.q_slice("wrist")
    bad[w] *= 5.0 / np.linalg.norm(bad[w])  # a rotation vector past pi
    fixed = mb.sanitize(bad)
    rest = np.ones(mb.nq, bool)
    rest[w] = False
    assert_close(fixed[rest], q[rest], 1e-14, "(c, s) pairs back on the circle, the rest unchanged")
    assert np.linalg.norm(fixed[w]) <= np.pi
    same = q.copy()
    same[w] = bad[w]
    for f in mb.frame_names:
        assert_close(mb.frame_pose(fixed, f), mb.frame_pose(same, f), 1e-12, f"pose of {f}")
def test_model_dynamics_obey_kanes_equations(mb):
    """Jacobians = derivatives of the frame poses (1e-6); M = sum J^T M_k J (1e-10); forward dynamics obeys
    Kane's equations sum_k J_k^T (M_k Vdot_k + V_k x* M_k V_k - f_gravity,k) = T with Vdot_k = J_k udot +
    Jdot_k u, Jdot by central differences of J (1e-8); inverse(forward(T)) = T and
    M udot + ID(q, u, 0) = T (1e-10)."""
    doc = yaml.safe_load(MODEL)
    bodies = {b["name"]: b for b in doc["bodies"]}
    g = np.array(doc["gravity"])
    rng = np.random.default_rng(5)
    for _ in range(4):
        q, u, T = _state(mb, rng)
        d = mb.qdot(q, u)
        udot = mb.forward_dynamics(q, u, T)
        M = mb.mass_matrix(q)
        rhs, M_oracle = np.zeros(mb.nu), np.zeros((mb.nu, mb.nu))
        for name, body in bodies.items():
            J = mb.jacobian(q, name)
            X = mb.frame_pose(q, name)
            assert_close(J @ u, body_velocity(X, central_diff(lambda x: mb.frame_pose(x, name), q, d)), 1e-6,
                         f"J u of {name}")
            Jdot = central_diff(lambda x: mb.jacobian(x, name), q, d)
            Mk = _spatial_inertia(body)
            V, Vdot = J @ u, J @ udot + Jdot @ u
            m, c, gb = body["mass"], np.array(body["com"]), X[:3, :3].T @ g
            f_gravity = np.r_[np.cross(c, m * gb), m * gb]
            rhs += J.T @ (Mk @ Vdot + _cross_force(V) @ Mk @ V - f_gravity)
            M_oracle += J.T @ Mk @ J
        assert_close(M, M_oracle, 1e-10, "mass matrix")
        assert_close(rhs, T, 1e-8, "Kane's equations")
        assert_close(mb.inverse_dynamics(q, u, udot), T, 1e-10, "ID(FD(T))")
        assert_close(M @ udot + mb.inverse_dynamics(q, u, np.zeros(mb.nu)), T, 1e-10, "M udot + C")
