"""The build-time singular-hinge check (symgen.runtime.checks) is linear in the bodies; it must name exactly
the hinges that the plain quadratic formula names (kept here as the reference: per hinge, the subtree's
rigid composite inertia summed body by body from the C kinematics' poses and Jacobians)."""
from __future__ import annotations

import numpy as np
import pytest

import symgen
from model_factory import build_coverage_tree, random_tree_dict
from symgen.model import model_from_dict
from symgen.runtime.checks import SINGULAR_RTOL, hinge_maps, singular_hinges, singular_message


def _reference(mb, n_states=3, seed=0):
    """The quadratic check as it was: every (hinge, subtree body) pair through np.block."""
    def spatial_inertia(m, c, J):
        cx = np.array([[0, -c[2], c[1]], [c[2], 0, -c[0]], [-c[1], c[0], 0]])
        return np.block([[np.asarray(J, float) - m * cx @ cx, m * cx], [-m * cx, m * np.eye(3)]])

    def phi(R, l):
        lx = np.array([[0, -l[2], l[1]], [l[2], 0, -l[0]], [-l[1], l[0], 0]])
        return np.block([[R, lx @ R], [np.zeros((3, 3)), R]])

    man = mb.manifest
    bodies = man["bodies"]
    nb = len(bodies)
    index = {b["name"]: k for k, b in enumerate(bodies)}
    parent = [index.get(b["parent"], -1) for b in bodies]
    subtree = [[k] for k in range(nb)]
    for k in reversed(range(nb)):
        if parent[k] >= 0:
            subtree[parent[k]] += subtree[k]
    M = [spatial_inertia(b["mass"], np.asarray(b["com"], float), b["inertia"]) for b in bodies]
    scale = max(float(np.abs(Mk).max()) for Mk in M) or 1.0
    rng = np.random.default_rng(seed)
    Q = mb.sanitize(rng.uniform(-2.0, 2.0, (n_states, mb.nq)))
    R, p, J, _ = mb.binding.bodies(Q, np.zeros((n_states, mb.nu)))
    found = []
    for k, b in enumerate(bodies):
        h = man["hinges"][b["hinge"]]
        u0, u1 = h["u"]
        if u1 == u0:
            continue
        arm = np.diag(h.get("armature") or [0.0] * (u1 - u0))
        singular = True
        for i in range(n_states):
            Ic = np.zeros((6, 6))
            for j in subtree[k]:
                F = phi(R[i, k].T @ R[i, j], R[i, k].T @ (p[i, j] - p[i, k]))
                Ic += F @ M[j] @ F.T
            S = J[i, k][:, u0:u1]
            D = S.T @ Ic @ S + arm
            if np.linalg.eigvalsh((D + D.T) / 2)[0] > SINGULAR_RTOL * scale:
                singular = False
                break
        if singular:
            found.append((b["hinge"], b["name"], [bodies[j]["name"] for j in subtree[k]]))
    return found


def _with_singular_bodies(seed):
    """A random tree of a few hinge types with structural singularities put in: massless leaves and
    subtrees, a point mass on a PIN's axis, a point mass at a BALL's centre, next to regular bodies."""
    d = random_tree_dict(seed, types=["PIN", "PIN", "BALL", "SLIDER", "UJOINT", "GIMBAL", "FULL6DOF", "LOCKED",
                                      "CYLINDRICAL", "PIN"], name=f"singular{seed}")
    rng = np.random.default_rng(seed + 100)
    zero = [[0.0] * 3 for _ in range(3)]
    pins = [b for b in d["bodies"] if b["hinge"]["type"] == "PIN"]
    for b in rng.choice(d["bodies"], 3, replace=False):       # massless bodies (leaves or not)
        b["mass"], b["inertia"] = 0.0, zero
    on_axis = pins[0]                                          # point mass on its axis, through the pnode
    on_axis["hinge"]["axis"] = [0.0, 0.0, 1.0]
    on_axis["pnode"] = {"xyz": [0.0, 0.0, 0.0], "rpy": [0.0, 0.0, 0.0]}
    on_axis["com"], on_axis["inertia"] = [0.0, 0.0, 0.3], zero
    outboard = {on_axis["name"]}
    for b in d["bodies"]:                                      # parents come first: its subtree massless
        if b["parent"] in outboard:
            outboard.add(b["name"])
            b["mass"], b["inertia"] = 0.0, zero
    for b in d["bodies"]:
        if b["hinge"]["type"] == "BALL":
            b["pnode"] = {"xyz": [0.0, 0.0, 0.0], "rpy": [0.0, 0.0, 0.0]}
            b["com"], b["inertia"] = [0.0, 0.0, 0.0], zero
    return model_from_dict(d, f"<singular {seed}>")


@pytest.fixture(scope="module", params=["all_hinges", "hinges1", "hinges3", "singular1", "singular2"])
def built(request):
    """model_factory's random trees (every hinge type in one tree, all_hinges; two small ones with armature) and two
    trees with singular hinges."""
    name = request.param
    if not name.startswith("singular"):
        return build_coverage_tree(name)
    return symgen.build(_with_singular_bodies(int(name[8:])))


def _assert_hinge_maps_are_jacobian_columns(mb):
    Q = mb.sanitize(np.random.default_rng(4).uniform(-2, 2, (2, mb.nq)))
    S, _, _ = hinge_maps(mb, Q)
    _, _, J, _ = mb.binding.bodies(Q, np.zeros((2, mb.nu)))
    for k, b in enumerate(mb.manifest["bodies"]):
        u0, u1 = mb.manifest["hinges"][b["hinge"]]["u"]
        np.testing.assert_allclose(S[:, :, u0:u1], J[:, k, :, u0:u1], rtol=0, atol=1e-12, err_msg=b["name"])


def test_hinge_maps_are_the_jacobians_own_columns(built):
    """S of every hinge from six inverse-dynamics passes = the hinge's own columns of the C kinematics'
    body Jacobian."""
    _assert_hinge_maps_are_jacobian_columns(built)


def test_linear_check_names_what_the_quadratic_formula_names(built):
    for seed in (0, 1):
        new, ref = singular_hinges(built, seed=seed), _reference(built, seed=seed)
        assert new == ref
        assert singular_message(new) == singular_message(ref)
    assert list(built.singular_hinges) == [h for h, _, _ in _reference(built)]


def test_the_singular_models_have_singular_hinges():
    """The injected singularities are found (so the comparison above is not vacuous)."""
    found = {h for s in (1, 2) for h, _, _ in singular_hinges(symgen.build(_with_singular_bodies(s)))}
    assert any("_pin" in h for h in found) and any("_ball" in h for h in found), found


def test_per_kind_form_gives_the_same_hinge_maps():
    """Large models run the per-kind form of inverse dynamics (symgen.algorithms.soa's limits; form="per_kind" here): the
    check reads S through it the same way."""
    mb = symgen.build(_with_singular_bodies(1), form="per_kind")
    assert set(mb.forms.values()) == {"per_kind"}
    _assert_hinge_maps_are_jacobian_columns(mb)
    assert singular_hinges(mb) == _reference(mb)
