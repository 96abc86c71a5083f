"""Parametric builds: symgen.build(path, parameters=[...]) keeps mass properties, armature and gravity as
runtime inputs of the generated dynamics.

Oracles: Pinocchio with the same changed inertias, armature and gravity (aba, rnea, crba through the maps of
tests/pin_maps.py); a folded build of the model file edited with the same values (ElementTree); the
parametric build at the model file's values against the folded build (a regression pair)."""
from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

import symgen
from pin_maps import compare_with_pinocchio, set_armature
from symgen.model import ModelError

URDF = Path(__file__).resolve().parents[1] / "examples" / "models" / "arm7.urdf"
PARAMS = ["link3.mass", "link3.com", "link5.inertia", "joint4.armature", "gravity"]


@pytest.fixture(scope="module")
def folded():
    return symgen.build(URDF)


@pytest.fixture(scope="module")
def parametric():
    return symgen.build(URDF, parameters=PARAMS)


def dispersed(rng):
    """A random case of the parameters: mass +-20 %, CoM moved by a few cm, a random SPD inertia, armature, a
    tilted gravity."""
    A = rng.normal(size=(3, 3))
    return {"link3.mass": 3.2 * (1 + 0.2 * rng.uniform(-1, 1)),
            "link3.com": np.array([0.0, 0.03, 0.1]) + 0.03 * rng.normal(size=3),
            "link5.inertia": 0.01 * (A @ A.T + np.eye(3)),
            "joint4.armature": np.array([0.05 * rng.uniform()]),
            "gravity": np.array([0.5, -0.3, -9.7]) + 0.1 * rng.normal(size=3)}


def test_parameters_list_the_model_file_values(parametric):
    """mb.parameters names every parameter with its value in arm7.urdf (read here with ElementTree)."""
    robot = ET.parse(URDF).getroot()
    link = {lk.get("name"): lk.find("inertial") for lk in robot.findall("link")}
    assert list(parametric.parameters) == PARAMS
    assert parametric.parameters["link3.mass"] == float(link["link3"].find("mass").get("value"))
    np.testing.assert_array_equal(parametric.parameters["link3.com"],
                                  [float(x) for x in link["link3"].find("origin").get("xyz").split()])
    I = link["link5"].find("inertia").attrib
    np.testing.assert_array_equal(np.diag(parametric.parameters["link5.inertia"]),
                                  [float(I["ixx"]), float(I["iyy"]), float(I["izz"])])
    np.testing.assert_array_equal(parametric.parameters["gravity"], [0, 0, -9.81])


def test_model_file_values_reproduce_the_folded_build(folded, parametric):
    """At the model file's values (no params, and params equal to them) the parametric build gives the folded
    build's FD, ID and M to 1e-12, one state and a batch."""
    rng = np.random.default_rng(0)
    Q, U, T = (rng.normal(size=(6, 7)) for _ in range(3))
    nominal = parametric.parameters
    for kw in ({}, {"params": nominal}):
        for q, u, t in ((Q[0], U[0], T[0]), (Q, U, T)):
            assert np.abs(parametric.forward_dynamics(q, u, t, **kw) - folded.forward_dynamics(q, u, t)).max() < 1e-12
            assert np.abs(parametric.inverse_dynamics(q, u, t, **kw) - folded.inverse_dynamics(q, u, t)).max() < 1e-12
            assert np.abs(parametric.mass_matrix(q, **kw) - folded.mass_matrix(q)).max() < 1e-12


class WithParams:
    """The parametric model seen through fixed params (for compare_with_pinocchio)."""

    def __init__(self, mb, params):
        self._mb, self._params = mb, params

    def __getattr__(self, name):
        return getattr(self._mb, name)

    def forward_dynamics(self, q, u, T):
        return self._mb.forward_dynamics(q, u, T, params=self._params)

    def inverse_dynamics(self, q, u, udot):
        return self._mb.inverse_dynamics(q, u, udot, params=self._params)

    def mass_matrix(self, q):
        return self._mb.mass_matrix(q, params=self._params)


def test_dispersed_parameters_match_pinocchio(parametric):
    """Three random cases: Pinocchio's model gets the same link3 mass and CoM, link5 inertia, joint4 armature
    and gravity (pin.Inertia at the CoM); aba, rnea, crba agree to 1e-10 relative at 4 states each."""
    import pinocchio as pin

    rng = np.random.default_rng(1)
    base = pin.buildModelFromUrdf(str(URDF))
    for _ in range(3):
        prm = dispersed(rng)
        pm = base.copy()
        j3, j5 = pm.getJointId("joint3"), pm.getJointId("joint5")
        I3 = pm.inertias[j3]
        pm.inertias[j3] = pin.Inertia(prm["link3.mass"], prm["link3.com"], I3.inertia)
        I5 = pm.inertias[j5]
        pm.inertias[j5] = pin.Inertia(I5.mass, I5.lever, prm["link5.inertia"])
        set_armature(pm, {"joint4": prm["joint4.armature"][0]})
        pm.gravity.linear = prm["gravity"]
        err = compare_with_pinocchio(WithParams(parametric, prm), pm, False, rng, n_states=4, frames=False)
        assert max(err.values()) < 1e-10, err


def test_parameter_values_as_users_write_them(parametric):
    """A plain number for a one-dof hinge's armature (shape (1,)), lists for arrays, one value or one per state:
    the same numbers as the (1,)-shaped / array call, and Pinocchio's aba, rnea, crba with that armature."""
    import pinocchio as pin

    rng = np.random.default_rng(3)
    Q, U, T = (rng.normal(size=(5, 7)) for _ in range(3))
    shaped = {"joint4.armature": np.array([0.1]), "link3.com": np.array([0.01, 0.02, 0.12]),
              "link5.inertia": np.diag([0.02, 0.03, 0.01]), "gravity": np.array([0.0, 0.5, -9.7])}
    plain = {"joint4.armature": 0.1, "link3.com": [0.01, 0.02, 0.12], "link5.inertia": np.diag([0.02, 0.03, 0.01]).tolist(),
             "gravity": [0.0, 0.5, -9.7]}
    for q, u, t in ((Q[0], U[0], T[0]), (Q, U, T)):
        for a, b in ((plain, shaped), ({"joint4.armature": 0.1}, {"joint4.armature": [0.1]})):
            np.testing.assert_array_equal(parametric.forward_dynamics(q, u, t, params=a),
                                          parametric.forward_dynamics(q, u, t, params=b))
            np.testing.assert_array_equal(parametric.inverse_dynamics(q, u, t, params=a),
                                          parametric.inverse_dynamics(q, u, t, params=b))
            np.testing.assert_array_equal(parametric.mass_matrix(q, params=a), parametric.mass_matrix(q, params=b))
    # one armature per state: (N,) for a one-dof hinge, as (N, 1) and as one call per state
    arm = np.linspace(0.01, 0.2, 5)
    per_state = parametric.forward_dynamics(Q, U, T, params={"joint4.armature": arm})
    np.testing.assert_array_equal(per_state, parametric.forward_dynamics(Q, U, T, params={"joint4.armature": arm[:, None]}))
    for i in range(5):
        np.testing.assert_array_equal(per_state[i], parametric.forward_dynamics(Q[i], U[i], T[i],
                                                                                params={"joint4.armature": arm[i]}))
    with pytest.raises(ValueError, match=r"'joint4.armature' must have shape \(1,\) or be a number"):
        parametric.forward_dynamics(Q, U, T, params={"joint4.armature": [0.1, 0.2]})
    # the plain number against Pinocchio with that armature
    pm = pin.buildModelFromUrdf(str(URDF))
    set_armature(pm, {"joint4": 0.1})
    err = compare_with_pinocchio(WithParams(parametric, {"joint4.armature": 0.1}), pm, False, rng, n_states=4,
                                 frames=False)
    assert max(err.values()) < 1e-10, err


def edited_urdf(tmp_path, prm) -> Path:
    """arm7.urdf with the case's values written in (ElementTree), for a folded build."""
    tree = ET.parse(URDF)
    robot = tree.getroot()
    for lk in robot.findall("link"):
        inertial = lk.find("inertial")
        if lk.get("name") == "link3":
            inertial.find("mass").set("value", repr(prm["link3.mass"]))
            inertial.find("origin").set("xyz", " ".join(repr(float(x)) for x in prm["link3.com"]))
        if lk.get("name") == "link5":
            J = prm["link5.inertia"]
            inertial.find("inertia").attrib.update({k: repr(float(J[i, j])) for k, (i, j) in {
                "ixx": (0, 0), "ixy": (0, 1), "ixz": (0, 2), "iyy": (1, 1), "iyz": (1, 2), "izz": (2, 2)}.items()})
    path = tmp_path / "arm7.urdf"
    tree.write(path)
    return path


def test_parametric_rollout_per_case_matches_folded_builds(tmp_path, parametric):
    """One rollout call with a different parameter case per trajectory; the case with the edited file's values
    equals a folded build of that file (armature and gravity given at build / call time) to 1e-12, and the
    cases differ from each other."""
    rng = np.random.default_rng(2)
    cases = [dispersed(rng) for _ in range(3)]
    stacked = {k: np.stack([np.asarray(c[k], float) for c in cases]) for k in PARAMS}
    q0 = np.tile(np.linspace(-0.5, 0.5, 7), (3, 1))
    out = parametric.rollout(q0, np.zeros((3, 7)), 1e-3, 200, every=50, params=stacked)
    assert out["ok"].all() and np.abs(out["q"][0, -1] - out["q"][1, -1]).max() > 1e-6
    prm = cases[1]
    mb = symgen.build(edited_urdf(tmp_path, prm), armature={"joint4": float(prm["joint4.armature"][0])})
    ref = mb.rollout(q0[1], np.zeros(7), 1e-3, 200, every=50, gravity=prm["gravity"])
    assert np.abs(out["q"][1] - ref["q"][0]).max() < 1e-12 and np.abs(out["u"][1] - ref["u"][0]).max() < 1e-12
    one = parametric.rollout(q0[1], np.zeros(7), 1e-3, 200, every=50, params=prm)
    assert np.array_equal(one["q"][0], out["q"][1])


def test_parameter_errors(parametric, folded):
    with pytest.raises(ModelError, match=r"parameter 'link9.mass'.*bodies: .*link3"):
        symgen.build(URDF, parameters=["link9.mass"])
    with pytest.raises(ModelError, match="'joint3.stiffness'"):
        symgen.build(URDF, parameters=["joint3.stiffness"])
    q = np.zeros(7)
    with pytest.raises(KeyError, match="no parameter 'link4.mass'"):
        parametric.forward_dynamics(q, q, q, params={"link4.mass": 1.0})
    with pytest.raises(KeyError, match="none; build with parameters="):
        folded.forward_dynamics(q, q, q, params={"link3.mass": 1.0})
    with pytest.raises(ValueError, match=r"'link3.com' must have shape \(3,\)"):
        parametric.forward_dynamics(q, q, q, params={"link3.com": [1.0, 2.0]})
    with pytest.raises(ModelError, match="loop constraints"):
        symgen.build(URDF.parents[0] / "fourbar.yaml", parameters=["crank.mass"])


def test_cli_parametric_build_loads_without_sympy(tmp_path, parametric):
    """`python -m symgen build --parameter ...` writes a package whose manifest carries the parameters; loaded
    in a fresh interpreter with sympy and jinja2 unavailable, it takes params= and gives the in-process
    parametric build's numbers."""
    import json
    import subprocess
    import sys

    args = [sys.executable, "-m", "symgen", "build", str(URDF), "--out", str(tmp_path), "-q"]
    for name in PARAMS:
        args += ["--parameter", name]
    out = subprocess.run(args, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert json.loads((tmp_path / "arm7" / "manifest.json").read_text())["parameters"]["names"] == PARAMS
    script = (f"import sys, json, numpy as np\nsys.modules['sympy'] = None; sys.modules['jinja2'] = None\n"
              f"from symgen.runtime import load_built\nmb = load_built({str(tmp_path / 'arm7')!r})\n"
              f"q = np.linspace(-1, 1, 7)\n"
              f"print(json.dumps(mb.forward_dynamics(q, q, q, params={{'link3.mass': 4.0}}).tolist()))\n")
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    q = np.linspace(-1, 1, 7)
    np.testing.assert_array_equal(json.loads(res.stdout), parametric.forward_dynamics(q, q, q, params={"link3.mass": 4.0}))
