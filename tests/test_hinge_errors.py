"""Bad hinge types and parameters give a ValueError naming the hinge and the parameter."""
from __future__ import annotations

import numpy as np
import pytest

import symgen

BAD = [
    (("NOPE",), {}, ["unknown hinge type", "NOPE", "PIN"]),
    ((42,), {}, ["unknown hinge type"]),
    (("COMPOUND",), {}, ["COMPOUND", "not implemented"]),
    (("PIN",), {"axis": (0, 0, 0)}, ["PIN", "axis", "zero"]),
    (("PIN",), {"axis": (1, 1, 0)}, ["PIN", "axis", "not unit"]),
    (("PIN",), {"axis": (1, 0)}, ["PIN", "axis", "3-vector"]),
    (("PIN",), {"axis": "z"}, ["PIN", "axis"]),
    (("PIN",), {"axis": (np.nan, 0, 1)}, ["PIN", "axis", "non-finite"]),
    (("PIN",), {"pitch": 1.0}, ["PIN", "unknown parameter", "pitch"]),
    (("SLIDER",), {"axes": [(1, 0, 0)]}, ["SLIDER", "unknown parameter", "axes"]),
    (("UJOINT",), {"axes": [(1, 0, 0)]}, ["UJOINT", "axes", "needs 2"]),
    (("UJOINT",), {"axes": [(1, 0, 0), (1, 0, 0)]}, ["UJOINT", "parallel"]),
    (("GIMBAL",), {"axes": [(1, 0, 0), (0, 1, 0), (0, 0, 2)]}, ["GIMBAL", "axes'[2]", "not unit"]),
    (("GIMBAL",), {"axes": 5}, ["GIMBAL", "axes"]),
    (("HELICAL",), {"pitch": "steep"}, ["HELICAL", "pitch"]),
    (("HELICAL",), {"pitch": float("inf")}, ["HELICAL", "pitch", "finite"]),
    (("HOOKE",), {"ij_q": (0, 0, 0, 2)}, ["HOOKE", "ij_q", "not unit"]),
    (("HOOKE",), {"ij_q": (0, 0, 1)}, ["HOOKE", "ij_q", "quaternion"]),
    (("HOOKE",), {"ij_q": (0, 0, np.sin(np.pi / 8), np.cos(np.pi / 8))}, ["HOOKE", "ij_q", "perpendicular"]),
    (("PERPENDICULAR",), {"ij_q": (0, 0, 0, 1)}, ["PERPENDICULAR", "ij_q", "perpendicular"]),
    (("PARALLEL",), {"ij_q": (0.5, 0.5, 0.5, 0.5)}, ["PARALLEL", "ij_q", "parallel"]),
    (("INLINE",), {"axis": (0, 0, 1)}, ["INLINE", "unknown parameter"]),
    (("CUSTOM",), {"subhinges": ["PIN", "WARP"]}, ["CUSTOM", "subhinges'[1]", "WARP"]),
    (("CUSTOM",), {"subhinges": "PIN"}, ["CUSTOM", "subhinges", "list"]),
    (("CUSTOM",), {"subhinges": ["PIN"], "axes": [(0, 0, 1), None]}, ["CUSTOM", "axes", "one entry per subhinge"]),
    (("CUSTOM",), {"subhinges": ["PIN", "SPHERICAL"], "axes": [None, None]}, ["CUSTOM", "axes'[0]", "needs an axis"]),
    (("CUSTOM",), {"subhinges": ["SPHERICAL"], "axes": [(0, 0, 1)]}, ["CUSTOM", "axes'[0]", "takes no axis"]),
    (("CUSTOM",), {"subhinges": ["SCREW"], "pitch": [0.1, 0.2]}, ["CUSTOM", "pitch"]),
    (("CUSTOM",), {"subhinges": ["PIN"], "shape": 1}, ["CUSTOM", "unknown parameter", "shape"]),
]


@pytest.mark.parametrize("args,kw,words", BAD, ids=[f"{a[0]}-{sorted(k)}-{i}" for i, (a, k, _) in enumerate(BAD)])
def test_bad_hinge_parameters(args, kw, words):
    with pytest.raises(ValueError) as exc:
        symgen.hinge(*args, **kw)
    for w in words:
        assert w in str(exc.value), f"{w!r} not in {exc.value}"


def test_numeric_input_shapes():
    h = symgen.hinge("GIMBAL")
    with pytest.raises(ValueError, match=r"GIMBAL: q must have shape \(3,\)"):
        h.singular_values(np.zeros(4))
    with pytest.raises(ValueError, match="GIMBAL: q must"):
        h.sanitize(np.zeros((2, 2, 3)))
    with pytest.raises(ValueError, match="unknown kernel"):
        h.numeric("teleport")
    with pytest.raises(ValueError, match="4x4"):
        h.jacobian(np.eye(3))


def test_defaults_and_lookup_are_case_insensitive():
    assert symgen.hinge("pin").coord_map == symgen.hinge("PIN", axis=(0, 0, 1)).coord_map
    assert symgen.subhinge_types("gimbal") == ("PIN", "PIN", "PIN")
    assert symgen.hinge_type_string("helical") == "HELICAL"
    assert symgen.subhinge_types("FULL6DOF") == ("LINEAR3", "SPHERICAL_QUAT")
    assert symgen.subhinge_types("CUSTOM") == ("LINEAR", "LINEAR", "PIN")
