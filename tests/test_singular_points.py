"""Near singular points the derived expressions stay finite where the math is finite, and
singular_values shows rank loss where the coord map really loses rank."""
from __future__ import annotations

import numpy as np
import pytest

import symgen
from helpers import assert_close
from symgen.hinges.derive import KERNELS, NEEDS_U


def _all_kernels(h, q, u):
    return {k: h.numeric(k)(q, u) if k in NEEDS_U else h.numeric(k)(q) for k in KERNELS}


@pytest.mark.parametrize("name", ["BALL", "INLINE", "INPLANE"])
def test_spherical_small_angles_are_finite_and_continuous(name):
    """theta -> 0 for SPHERICAL: every kernel finite at r = 0 and within 1e-8 of its r = 0 value at
    |r| = 1e-9 (all kernels are smooth there; the Stumpff functions carry no 1/theta)."""
    h = symgen.hinge(name)
    rng = np.random.default_rng(0)
    u = rng.normal(size=h.nu)
    base = np.zeros(h.nq)
    at_zero = _all_kernels(h, base, u)
    for k, v in at_zero.items():
        assert np.all(np.isfinite(v)), k
    assert_close(at_zero["qdot_map"][-3:, -3:], np.eye(3), 1e-15, "N(0) = I")
    d = rng.normal(size=3)
    for scale in (1e-9, 1e-6):
        q = base.copy()
        q[-3:] = d / np.linalg.norm(d) * scale
        near = _all_kernels(h, q, u)
        for k in KERNELS:
            assert np.all(np.isfinite(near[k])), k
            assert_close(near[k], at_zero[k], 10 * scale, f"{k} at |r| = {scale}")


def test_quaternion_identity_is_finite():
    h = symgen.hinge("BALL_QUAT")
    for k, v in _all_kernels(h, np.array([0, 0, 0, 1.0]), np.ones(3)).items():
        assert np.all(np.isfinite(v)), k
    assert_close(h.numeric("pose_gradient")(np.array([0, 0, 0, 1.0])), np.eye(6, 3), 1e-15, "G(identity)")


@pytest.mark.parametrize("sign", [1, -1])
def test_gimbal_lock(sign):
    """GIMBAL middle angle -> +-pi/2: kernels finite, smallest singular value -> 0 (rank 2),
    while a generic state keeps all three well above 0."""
    h = symgen.hinge("GIMBAL")
    q = np.array([0.4, sign * np.pi / 2, -0.7])
    for k, v in _all_kernels(h, q, np.array([0.3, -0.2, 0.5])).items():
        assert np.all(np.isfinite(v)), k
    sv = h.singular_values(q)
    assert sv.shape == (3,) and sv[-1] < 1e-15 and sv[1] > 0.5
    # approaching the lock: det(H_w) = cos(q1) for body-fixed X-Y-Z, so the product of the singular
    # values is |cos q1|; at the lock the other two are sqrt(2) and 1, so the smallest ~ eps / sqrt(2)
    for eps in (1e-2, 1e-4, 1e-6):
        q1 = sign * (np.pi / 2 - eps)
        sv = h.singular_values(np.array([0.4, q1, -0.7]))
        assert abs(np.prod(sv) - abs(np.cos(q1))) < 1e-12
        assert abs(sv[-1] - eps / np.sqrt(2)) < eps ** 2
    assert h.singular_values(np.array([0.4, 0.3, -0.7]))[-1] > 0.5
    # batched
    assert h.singular_values(np.zeros((4, 3))).shape == (4, 3)


def test_ujoint_stays_full_rank_and_hooke_too():
    for name in ("UJOINT", "HOOKE"):
        h = symgen.hinge(name)
        for q1 in np.linspace(-3, 3, 13):
            assert h.singular_values(np.array([0.2, q1]))[-1] > 0.99
