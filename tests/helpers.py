"""Shared test helpers: the hinge cases, random states, and independent numeric oracles."""
from __future__ import annotations

import sysconfig
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

import symgen


def erd_file(relpath):
    """A file of example-robot-data (pip; under its cmeel prefix's ``share/example-robot-data/robots/``), or None
    where the package is not installed."""
    for base in {sysconfig.get_paths()["data"], sysconfig.get_paths()["purelib"]}:
        p = Path(base) / "cmeel.prefix" / "share" / "example-robot-data" / "robots" / relpath
        if p.exists():
            return p
    return None


def quat_about(axis, degrees):
    """(x, y, z, w) of a rotation about an axis, from scipy (an independent construction)."""
    return tuple(Rotation.from_rotvec(np.radians(degrees) * np.asarray(axis, float)).as_quat())


#: every hinge type with defaults, plus non-default axes / parameters and several CUSTOM sequences
CASES = [(t, {}) for t in symgen.HINGE_TYPES] + [
    ("PIN", {"axis": (0, 1, 0)}),
    ("PIN", {"axis": (0.6, 0.0, 0.8)}),
    ("UJOINT", {"axes": [(0, 1, 0), (0, 0, 1)]}),
    ("GIMBAL", {"axes": [(0, 0, 1), (1, 0, 0), (0, 0, 1)]}),
    ("SLIDER", {"axis": (0, 0.6, 0.8)}),
    ("PLANAR", {"axes": [(0, 0, 1), (1, 0, 0)]}),
    ("CYLINDRICAL", {"axis": (1, 0, 0)}),
    ("HELICAL", {"axis": (0, 1, 0), "pitch": 0.05}),
    ("HELICAL", {"pitch": -0.3}),
    ("HOOKE", {"ij_q": quat_about((1, 0, 0), 30)}),
    ("PERPENDICULAR", {"ij_q": quat_about((1, 0, 0), 90)}),
    ("PARALLEL", {"ij_q": quat_about((0, 0, 1), 40)}),
    ("CUSTOM", {"subhinges": ["LINEAR3", "SPHERICAL"]}),
    ("CUSTOM", {"subhinges": ["PIN", "LINEAR"], "axes": [(0, 0, 1), (1, 0, 0)]}),
    ("CUSTOM", {"subhinges": ["SPHERICAL", "LINEAR"]}),
    ("CUSTOM", {"subhinges": ["SCREW", "PIN"], "pitch": 0.2}),
    ("CUSTOM", {"subhinges": ["SPHERICAL_QUAT", "LINEAR3"]}),
    ("CUSTOM", {"subhinges": ["LINEAR", "PIN", "LINEAR"]}),
    ("CUSTOM", {"subhinges": ["LOCKED", "PIN", "PIN"]}),
    # reversed mobilizers (Simbody Direction::Reverse): the motion defined from the pnode to the onode
    ("PIN", {"axis": (0.6, 0.0, 0.8), "reverse": True}),
    ("BALL_QUAT", {"reverse": True}),
    ("GIMBAL", {"reverse": True}),
    ("CUSTOM", {"subhinges": ["PIN", "LINEAR"], "axes": [(0, 0, 1), (1, 0, 0)], "reverse": True}),
    # the compound hinge: MuJoCo's joints in one body (a slide and a ball about an anchor; three hinges about
    # one common anchor, one with a ref; a screw and a pin about different lines)
    ("SERIAL", {"joints": [{"type": "slide", "axis": (1, 0, 0), "ref": -0.1},
                           {"type": "ball", "anchor": (0.1, -0.2, 0.3)}]}),
    ("SERIAL", {"joints": [{"type": "hinge", "axis": (1, 0, 0), "anchor": (0, 0.05, 0.2), "ref": 0.3},
                           {"type": "hinge", "axis": (0, 0.6, 0.8), "anchor": (0, 0.05, 0.2)},
                           {"type": "hinge", "axis": (0, 0, 1), "anchor": (0, 0.05, 0.2)}]}),
    ("SERIAL", {"joints": [{"type": "SCREW", "axis": (0, 1, 0), "pitch": 0.05, "anchor": (0.2, 0, 0)},
                           {"type": "PIN", "axis": (0, 1, 0), "anchor": (-0.1, 0, 0.1), "ref": 1.0}]}),
]


def case_id(case):
    name, kw = case
    if not kw:
        return name
    return name + "-" + "-".join(f"{k}={v}" for k, v in kw.items()).replace(" ", "")


_HINGES = {}


def get_hinge(case):
    key = case_id(case)
    if key not in _HINGES:
        _HINGES[key] = symgen.hinge(case[0], **case[1])
    return _HINGES[key]


def random_q(h, rng, max_angle=2.5):
    """Random Q in hinge order, drawn by the registry (``SubhingeType.random_q``): angles in
    (-max_angle, max_angle), distances in (-1, 1), rotation vectors of norm < max_angle, unit quaternions."""
    return h.spec.random_q(rng, max_angle)


def neutral_q(h):
    """The registry's neutral Q (zeros, identity quaternions), hinge order."""
    return np.array(h.spec.neutral_q(), float)


def rotation_angle(R):
    return np.linalg.norm(Rotation.from_matrix(R).as_rotvec())


def log_pose(T):
    """[log R; l] with scipy's rotation vector (independent of symgen)."""
    return np.concatenate([Rotation.from_matrix(T[:3, :3]).as_rotvec(), T[:3, 3]])


def body_velocity(T, Tdot):
    """[w; v] of a moving frame in its own coordinates from its pose and pose rate."""
    R = T[:3, :3]
    W = R.T @ Tdot[:3, :3]
    return np.concatenate([[W[2, 1], W[0, 2], W[1, 0]], R.T @ Tdot[:3, 3]])


def central_diff(f, x, direction, h=1e-6):
    return (f(x + h * direction) - f(x - h * direction)) / (2 * h)


def assert_close(actual, expected, rtol, what=""):
    """|actual - expected| <= rtol * max(1, |expected|_max) elementwise."""
    actual, expected = np.asarray(actual, float), np.asarray(expected, float)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    scale = max(1.0, float(np.max(np.abs(expected), initial=0.0)))
    err = float(np.max(np.abs(actual - expected), initial=0.0))
    assert err <= rtol * scale, f"{what}: max error {err:.3e} > {rtol:.1e} * {scale:.3g}"
