"""The two forms of the model dynamics, generated from the one algorithm in ``symgen.algorithms.soa``:

* the straight-line form (every body traced into one function) that ``forward_dynamics``,
  ``inverse_dynamics`` and ``mass_matrix`` take for models up to ``soa``'s size limits, and
* the per-kind form (``symgen.codegen.perkind``: the same per-body steps traced once per body kind, called by C loops
  over the bodies) that they take above them, and for every model built with ``form="per_kind"``.

A model carries one form of each entry point.  The two must agree to 1e-12 on every test model (a regression
check: one algorithm, two traces; each model is built once in each form), and the per-kind form must agree
with Pinocchio's ``aba``, ``rnea`` and ``crba`` (the oracle) to 1e-9 relative, as the straight-line form does
in tests/test_model_pinocchio.py.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import symgen
from model_factory import build_coverage_tree, with_derivatives

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "models"
TOL = 1e-12
PER_KIND = {"forward_dynamics": "per_kind", "inverse_dynamics": "per_kind", "mass_matrix": "per_kind"}
STRAIGHT = {"forward_dynamics": "straight", "inverse_dynamics": "straight", "mass_matrix": "straight"}


# every example but those with flexible bodies, which have no per-kind form (test_flexible.py: the build refuses it)
MODELS = ([(f.name, False) for f in sorted(EXAMPLES.glob("*.yaml")) if "flex:" not in f.read_text()]
          + [("arm6.urdf", False), ("arm7.urdf", False), ("quadruped.urdf", True), ("humanoid.urdf", True)]
          + [("hinges1", False), ("hinges3", False), ("rand11", True)])


def _build(name, floating, form, urdf_robots):
    if name.startswith("hinges"):        # model_factory's small trees with armature (per-kind: read at run time)
        return build_coverage_tree(name, form)
    if name.startswith("rand"):      # a random URDF tree: test_model_pinocchio's (straight) and the one below (per-kind)
        return symgen.build(str(urdf_robots / f"{name}.urdf"), floating_base=floating, form=form)
    return symgen.build(str(EXAMPLES / name), floating_base=floating, form=form,
                        derivatives=with_derivatives(Path(name).stem, form))


@pytest.fixture(scope="module", params=MODELS, ids=[f"{m}{'-floating' if fb else ''}" for m, fb in MODELS])
def model(request, urdf_robots):
    """(the model as built by default: straight-line, the same model built with form="per_kind")."""
    name, floating = request.param
    straight, per_kind = (_build(name, floating, form, urdf_robots) for form in ("auto", "per_kind"))
    assert per_kind.forms == PER_KIND
    return straight, per_kind


def _rel(a, b):
    return float(np.max(np.abs(a - b)) / max(1.0, float(np.max(np.abs(b))))) if np.size(b) else 0.0


def test_per_kind_form_agrees_with_straight_line(model):
    """FD, ID (with external forces) and M of both forms at random states, to 1e-12 relative."""
    mb, lf = model
    rng = np.random.default_rng(7)
    for _ in range(4):
        q = mb.sanitize(rng.uniform(-2, 2, mb.nq)) if mb.nq else np.zeros(0)
        u, T, udot = rng.normal(size=mb.nu), rng.normal(size=mb.nu), rng.normal(size=mb.nu)
        f = rng.normal(size=(mb.nb, 6))
        assert _rel(lf.forward_dynamics(q, u, T, f_ext=f, tree=True),
                    mb.forward_dynamics(q, u, T, f_ext=f, tree=True)) < TOL
        assert _rel(lf.inverse_dynamics(q, u, udot, f_ext=f), mb.inverse_dynamics(q, u, udot, f_ext=f)) < TOL
        assert _rel(lf.mass_matrix(q), mb.mass_matrix(q)) < TOL


def test_per_kind_form_identities(model):
    """Independent of the straight-line form: M Udot = T - C with C = ID(q, u, 0) (ATBI against Newton-Euler
    and the composite-body M, all per-kind form), M symmetric."""
    mb, lf = model
    rng = np.random.default_rng(3)
    q = mb.sanitize(rng.uniform(-2, 2, mb.nq)) if mb.nq else np.zeros(0)
    u, T = rng.normal(size=mb.nu), rng.normal(size=mb.nu)
    M = lf.mass_matrix(q)
    udot = lf.forward_dynamics(q, u, T, tree=True)
    C = lf.inverse_dynamics(q, u, np.zeros(mb.nu))
    assert _rel(M @ udot + C, T) < 1e-9
    assert _rel(M, M.T) < 1e-14


def test_per_kind_batches_run_the_looped_lanes_bit_for_bit(model):
    """The looped lane form (symgen.codegen.perkind.PerKindForm.emit_lanes: the same per-kind steps for W states,
    loops over the bodies): batched FD (with external forces), ID and M of the per-kind form run it for every full
    block of W states, and each state equals the one-state per-kind function bit for bit (the same operations in
    the same order); N = 2W + 3, a tail included."""
    from symgen.codegen.lanes import lane_width

    _, lf = model
    w = lane_width()
    assert lf.lane_width == w, "the per-kind form's batched FD has the looped lane form"
    n = 2 * w + 3
    rng = np.random.default_rng(11)
    Q = np.array([lf.sanitize(x) for x in rng.uniform(-2, 2, (n, lf.nq))]) if lf.nq else np.zeros((n, 0))
    U, T = rng.normal(size=(n, lf.nu)), rng.normal(size=(n, lf.nu))
    F = rng.normal(size=(n, lf.nb, 6))
    for what, got, one in (
            ("FD", lf.forward_dynamics(Q, U, T, f_ext=F, tree=True),
             [lf.forward_dynamics(Q[i], U[i], T[i], f_ext=F[i], tree=True) for i in range(n)]),
            ("ID", lf.inverse_dynamics(Q, U, T, f_ext=F), [lf.inverse_dynamics(Q[i], U[i], T[i], f_ext=F[i]) for i in range(n)]),
            ("M", lf.mass_matrix(Q), [lf.mass_matrix(Q[i]) for i in range(n)])):
        np.testing.assert_array_equal(got, np.array(one), err_msg=f"{lf.name} {what}: looped lanes vs one state")


@pytest.mark.parametrize("robot,floating", [("arm7", False), ("quadruped", True), ("rand11", True)])
def test_per_kind_form_agrees_with_pinocchio(robot, floating, urdf_robots):
    pin = pytest.importorskip("pinocchio")
    from pin_maps import compare_with_pinocchio

    path = urdf_robots / f"{robot}.urdf" if robot.startswith("rand") else EXAMPLES / f"{robot}.urdf"
    mb = symgen.build(str(path), floating_base=floating, form="per_kind")
    pm = (pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer()) if floating
          else pin.buildModelFromUrdf(str(path)))
    pm.gravity.linear[:] = mb.gravity
    err = compare_with_pinocchio(mb, pm, floating, np.random.default_rng(5), n_states=4, frames=False)
    assert max(err.values()) < 1e-9, err


def test_one_form_per_entry_point():
    """A model carries one form of FD, ID and M: the bundled arm7 (under the size limits) the straight-line
    form only (of the per-kind steps just the kinematics and the tip-to-base step of atbi_matrices, which upsilon
    reads too: no step of its own), and built with
    form="per_kind" that form only; the forms are in the manifest and on the model."""
    from symgen.model import load_model
    from symgen.pipeline.sources import cached_model_sources

    model = load_model(str(EXAMPLES / "arm7.urdf"))
    for form, expected in (("auto", STRAIGHT), ("per_kind", PER_KIND)):
        files, manifest = cached_model_sources(model, form)
        c = files["arm7.c"]
        assert manifest["forms"] == expected
        for fn in ("int sg_arm7_forward_dynamics(", "void sg_arm7_inverse_dynamics(", "void sg_arm7_mass_matrix(",
                   "int sg_arm7_atbi_matrices("):
            assert c.count(fn) == 1, fn
        steps = {s for s in ("velocities", "atbi_tip", "atbi_base", "rnea_base", "rnea_tip", "joint", "crba_tip",
                             "crba_walk", "upsilon_step") if f"sg_arm7_{s}_0(" in c}
        assert steps == ({"velocities", "atbi_tip"} if form == "auto" else
                         {"velocities", "atbi_tip", "atbi_base", "rnea_base", "rnea_tip", "joint", "crba_tip",
                          "crba_walk"}), steps
        assert "_loop(" not in c
        # batches run lanes in both: the straight-line tape printed on vectors, or the per-kind steps (looped lanes)
        assert "int sg_arm7_fd_lanes(" in c and "int sg_arm7_mm_lanes(" in c
        assert ("sg_arm7_velocities_l0(" in c) == (form == "per_kind")
    with pytest.raises(ValueError, match="form must be one of 'auto', 'per_kind'"):
        symgen.build(str(EXAMPLES / "arm7.urdf"), form="loop")


def test_the_cost_model_loops_the_mass_matrix_of_a_large_branched_tree():
    """symgen.codegen.schedule: the floating humanoid (a branched tree whose M walks 155 steps, past
    CRBA_LOOPED_FROM) takes the looped M, whose lanes measured faster than its unrolled one-state M, and keeps
    straight-line FD and ID; arm7 (a chain: M with unrolled lanes) and the quadruped (24 steps) stay straight-line;
    a parametric build (its inertias from p) keeps the unrolled M whatever its walk.  The reasons are in the
    manifest and the C.  The looped M itself is checked against Pinocchio's crba (test_dynamics'
    test_dynamics_match_pinocchio builds this humanoid) and against the straight-line M above."""
    from symgen.codegen import schedule
    from symgen.codegen.emit import body_infos
    from symgen.model import load_model
    from symgen.pipeline.sources import _hinge_layout, cached_model_sources

    def bodies(model):
        _, slugs, layout, _, _ = _hinge_layout(model)
        return body_infos(model, layout, slugs, {b.name: i for i, b in enumerate(model.bodies)})

    humanoid = load_model(str(EXAMPLES / "humanoid.urdf"), floating_base=True)
    hb = bodies(humanoid)
    assert schedule.branched(hb) and schedule.crba_steps(hb) >= schedule.CRBA_LOOPED_FROM
    plan = schedule.choose(hb, 5000)
    assert (plan["fd"], plan["id"], plan["mm"]) == ("straight", "straight", "per_kind")
    assert "branched" in plan["why"]["mm"]
    assert schedule.choose(hb, 5000, pinned=True)["mm"] == "straight"
    assert schedule.choose(hb, schedule.STRAIGHT_LINE_LIMIT + 1)["fd"] == "per_kind"
    for name, floating in (("arm7.urdf", False), ("quadruped.urdf", True)):
        b = bodies(load_model(str(EXAMPLES / name), floating_base=floating))
        assert schedule.choose(b, 1000)["mm"] == "straight", name

    files, manifest = cached_model_sources(humanoid)
    assert manifest["forms"] == {**STRAIGHT, "mass_matrix": "per_kind"}
    assert "looped lanes are faster" in manifest["form_reasons"]["mass_matrix"]
    assert "/* composite-body mass matrix, nU x nU (per_kind: a branched tree's M" in files["humanoid.c"]
    assert symgen.build(str(EXAMPLES / "humanoid.urdf"), floating_base=True).forms == manifest["forms"]


def test_pins_about_different_axes_are_folded_onto_one():
    """fold_pin_axes: a PIN about a is the reference PIN (axis r) between an onode turned by C and a pnode turned by
    C, C r = a (checked for random axes and a = -r, C orthonormal with det 1); the floating humanoid's PINs
    (URDF axes x, y, z) are one spec in its per-kind steps, their onodes and pnodes in sg_<m>_step_const while
    body_const keeps the model's.  That the folded steps compute the same dynamics is
    test_per_kind_form_agrees_with_straight_line's (the humanoid, the quadruped, arm6, spatial_chain fold)."""
    import re

    from symgen.codegen.perkind import _rotation_taking
    from symgen.model import load_model
    from symgen.pipeline.sources import cached_model_sources

    rng = np.random.default_rng(2)
    for r, a in [(rng.normal(size=3), rng.normal(size=3)) for _ in range(5)] + [([0.0, 1.0, 0.0], [0.0, -1.0, 0.0])]:
        r, a = np.asarray(r) / np.linalg.norm(r), np.asarray(a) / np.linalg.norm(a)
        C = _rotation_taking(r, a)
        np.testing.assert_allclose(C @ r, a, atol=1e-14)
        np.testing.assert_allclose(C @ C.T, np.eye(3), atol=1e-14)
        assert abs(np.linalg.det(C) - 1.0) < 1e-14
    files, man = cached_model_sources(load_model(str(EXAMPLES / "humanoid.urdf"), floating_base=True), "per_kind")
    c = files["humanoid.c"]
    pin_specs = {h["slug"] for h in man["hinges"].values() if h["type"] == "PIN"}
    assert len(pin_specs) > 1
    step_slugs = set(re.findall(r"ATBI tip to base[^;]*; [^;]*; kind \d+: (pin\w*)", c))
    assert len(step_slugs) == 1 and step_slugs <= pin_specs, step_slugs
    assert "sg_humanoid_step_const[" in c and c.count("a PIN folded") >= len(pin_specs) - 1
