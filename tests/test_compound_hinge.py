"""The compound hinge (SERIAL: several subhinges in series, each about its own anchor and axis, with a ref).

* A compound hinge declared in a YAML file (``tests/data/serial_compound.yaml``) against the same chain written
  out by hand as separate bodies with massless links between them (``tests/data/serial_chain.yaml``):
  kinematics (every body and frame pose, Jacobians) to 1e-12, dynamics (forward and inverse dynamics, the mass
  matrix, armature included) to 1e-10, at random states.
* Its derived coord map passes the identity tests of every registered hinge type: SERIAL is registered, so
  ``tests/helpers.py::CASES`` holds it with its defaults (two turns about different anchors, a ref) and three
  more compound hinges; ``tests/test_hinge_identities.py`` and ``tests/test_c_kernels.py`` run on them
  (``-k SERIAL``).  Here: parameter errors, and what ``symgen.hinge`` shows.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import symgen

DATA = Path(__file__).resolve().parent / "data"
KIN, DYN = 1e-12, 1e-10


@pytest.fixture(scope="module")
def pair():
    return symgen.build(DATA / "serial_compound.yaml"), symgen.build(DATA / "serial_chain.yaml")


def _states(mb, n, seed):
    rng = np.random.default_rng(seed)
    q = mb.sanitize(mb.neutral_q() + rng.uniform(-1.0, 1.0, (n, mb.nq)))
    return q, rng.normal(size=(n, mb.nu)), rng.normal(size=(n, mb.nu))


def test_same_coordinates(pair):
    a, b = pair
    assert (a.nq, a.nu) == (b.nq, b.nu) == (7 + 6 + 1, 6 + 5 + 1)
    assert a.q_slice("arm_joints") == slice(7, 13) and a.u_slice("arm_joints") == slice(6, 11)
    # the reference pose (Q = ref) is the same pose
    np.testing.assert_allclose(a.neutral_q()[7:13], [0.3, 0.1, 0, 0, 0, 1])
    np.testing.assert_allclose(a.frame_poses(a.neutral_q())[[a.frame_names.index("tip")]],
                               b.frame_poses(a.neutral_q())[[b.frame_names.index("tip")]], atol=KIN)


def test_kinematics_agree(pair):
    a, b = pair
    q, u, udot = _states(a, 8, 1)
    for name in ("base", "arm", "arm_site", "tip"):
        np.testing.assert_allclose(a.frame_pose(q, name), b.frame_pose(q, name), rtol=0, atol=KIN, err_msg=name)
        np.testing.assert_allclose(a.jacobian(q, name), b.jacobian(q, name), rtol=0, atol=KIN, err_msg=name)
        np.testing.assert_allclose(a.frame_velocity(q, u, name), b.frame_velocity(q, u, name), rtol=0,
                                   atol=KIN * 10, err_msg=name)
        for i in range(2):
            np.testing.assert_allclose(a.jacobian_dot(q[i], u[i], name), b.jacobian_dot(q[i], u[i], name),
                                       rtol=0, atol=KIN * 10, err_msg=name)


def test_dynamics_agree(pair):
    a, b = pair
    q, u, tau = _states(a, 8, 2)
    M_a, M_b = a.mass_matrix(q), b.mass_matrix(q)
    np.testing.assert_allclose(M_a, M_b, rtol=0, atol=DYN * np.abs(M_b).max())
    fd_a, fd_b = a.forward_dynamics(q, u, tau), b.forward_dynamics(q, u, tau)
    np.testing.assert_allclose(fd_a, fd_b, rtol=0, atol=DYN * np.abs(fd_b).max())
    id_a, id_b = a.inverse_dynamics(q, u, fd_a), b.inverse_dynamics(q, u, fd_a)
    np.testing.assert_allclose(id_a, id_b, rtol=0, atol=DYN * np.abs(id_b).max())
    np.testing.assert_allclose(id_a, tau, rtol=0, atol=DYN * np.abs(tau).max())
    # armature is on the compound hinge's own U (M's diagonal grows by it)
    assert a.manifest["hinges"]["arm_joints"]["armature"] == [0.01, 0.02, 0.003, 0.004, 0.005]


def test_symgen_hinge_shows_the_compound_hinge():
    h = symgen.hinge("SERIAL", joints=[{"type": "hinge", "axis": [0, 0, 1], "anchor": [0.1, 0, 0], "ref": 0.5},
                                       {"type": "slide", "axis": [1, 0, 0], "anchor": [3, 3, 3]}])
    assert h.subhinge_types == ("PIN", "LINEAR") and (h.nq, h.nu) == (2, 2)
    assert [s.anchor for s in h.spec.subhinges] == [(0.1, 0.0, 0.0), None]   # a slide's anchor does nothing
    assert h.spec.neutral_q() == [0.5, 0.0]
    np.testing.assert_allclose(h.numeric("transform")([0.5, 0.0]), np.eye(4), atol=1e-15)
    # a quarter turn about the line through (0.1, 0, 0): the origin goes to (0.1, -0.1, 0)
    T = h.numeric("transform")([0.5 + np.pi / 2, 0.0])
    np.testing.assert_allclose(T[:3, 3], [0.1, -0.1, 0.0], atol=1e-15)
    assert h.coord_map.shape == (6, 2) and h.ortho_complement.shape == (6, 4)


@pytest.mark.parametrize("joints, message", [
    ([], "non-empty list"),
    ([{"axis": [0, 0, 1]}], "expected a mapping with 'type'"),
    ([{"type": "universal"}], "unknown subhinge type"),
    ([{"type": "hinge", "axis": [0, 0, 2]}], "not unit"),
    ([{"type": "ball", "ref": 0.1}], "'ref' needs a one-coordinate subhinge"),
    ([{"type": "ball", "axis": [0, 0, 1]}], "takes no axis"),
    ([{"type": "hinge", "anchor": [0, 1]}], "'anchor' must be 3 finite numbers"),
    ([{"type": "hinge", "range": [0, 1]}], "unknown key(s) range"),
    ([{"type": "hinge", "axis": [1, 0, 0]}, {"type": "hinge", "axis": [1, 0, 0]}], "parallel"),
])
def test_bad_parameters(joints, message):
    with pytest.raises(ValueError, match=None) as e:
        symgen.hinge("SERIAL", joints=joints)
    assert message in str(e.value) and "SERIAL" in str(e.value)


def test_parallel_axes_about_different_anchors_are_a_planar_chain():
    """Two pins about parallel lines through different points (a planar two-link chain in one body) have a
    full-rank coord map away from the folded configurations."""
    h = symgen.hinge("SERIAL", joints=[{"type": "hinge", "axis": [0, 0, 1]},
                                       {"type": "hinge", "axis": [0, 0, 1], "anchor": [0.5, 0, 0]}])
    assert np.linalg.matrix_rank(h.numeric("coord_map")([0.1, 0.7])) == 2
    H, OC = h.numeric("coord_map")([0.1, 0.7]), h.numeric("ortho_complement")([0.1, 0.7])
    np.testing.assert_allclose(OC.T @ H, 0, atol=1e-12)
    assert np.linalg.matrix_rank(OC) == 4
