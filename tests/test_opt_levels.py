"""The optimization level (``SYMGEN_OPT``, symgen.pipeline.compile.opt_flags) changes the speed of the generated C,
never its numbers: C99 without -ffast-math is IEEE arithmetic in the order the source writes it (no FMA
contraction, no reassociation) at every level.  The suite compiles its models at -O0 (tests/conftest.py), so this
file builds two models again at the default -O3 and compares them with the suite's builds, bit for bit: one state
and batches (the lane forms, unrolled and looped), kinematics, the derivatives and a rollout."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import symgen
from model_factory import environment
from symgen.pipeline.compile import BuildError, opt_flags

MODELS = Path(__file__).resolve().parents[1] / "examples" / "models"


def _opt(level):
    return environment("SYMGEN_OPT", level)


#: the double pendulum (the unrolled schedule, its lanes and its derivatives' lanes: small, so that its -O3 build
#: costs 3 s of the suite where arm7's cost 20) and the floating quadruped in the per-kind form (the looped lanes);
#: each built at -O3 here and at the suite's level here or by the other files (test_per_kind_form)
CASES = [("double_pendulum.yaml", False, "auto"), ("quadruped.urdf", True, "per_kind")]


@pytest.fixture(scope="module", params=CASES, ids=[f"{m}-{form}" for m, _, form in CASES])
def pair(request):
    name, floating, form = request.param
    kw = {"floating_base": floating, "form": form, "derivatives": form == "auto"}
    with _opt("3"):
        fast = symgen.build(MODELS / name, **kw)
    return fast, symgen.build(MODELS / name, **kw)


def test_the_levels_are_two_modules(pair):
    fast, suite = pair
    assert fast.manifest["module"] != suite.manifest["module"] or os.environ.get("SYMGEN_OPT", "3") == "3"


def test_optimized_and_unoptimized_modules_agree_bit_for_bit(pair):
    fast, suite = pair
    rng = np.random.default_rng(17)
    n = 2 * fast.lane_width + 3
    Q = fast.sanitize(rng.uniform(-2, 2, (n, fast.nq)))
    U, T = rng.normal(size=(n, fast.nu)), rng.normal(size=(n, fast.nu))
    checks = [("FD", lambda m: m.forward_dynamics(Q, U, T)), ("ID", lambda m: m.inverse_dynamics(Q, U, T)),
              ("M", lambda m: m.mass_matrix(Q)), ("FD one state", lambda m: m.forward_dynamics(Q[0], U[0], T[0])),
              ("poses", lambda m: m.frame_poses(Q[1])),
              ("rollout", lambda m: m.rollout(Q, U, T=np.repeat(T[:, None], 5, axis=1), dt=1e-3, n_steps=5)["q"])]
    if fast.forms["forward_dynamics"] == "straight":
        checks += [("FD derivatives", lambda m: m.forward_dynamics_derivatives(Q, U, T)),
                   ("ID derivatives", lambda m: m.inverse_dynamics_derivatives(Q[2], U[2], T[2]))]
    for what, f in checks:
        np.testing.assert_array_equal(f(fast), f(suite), err_msg=f"{fast.name}: {what}, -O3 against the suite's level")


def test_a_bad_level_is_refused_with_its_name():
    with _opt("fast"), pytest.raises(BuildError, match=r"SYMGEN_OPT='fast'.*0, 1, 2, 3, s"):
        opt_flags()
    with _opt("2"):
        assert opt_flags()[0] == "-O2"


def test_a_parametric_build_in_parts_agrees_with_the_suites():
    """A parametric build compiled in parts (any level above -O0; -O1 here, the quickest): every part that assembles
    p from the model file's parameter values has its own copy of them (one step's derivatives are a part of their
    own), and the numbers equal the suite's -O0 build bit for bit: FD, the one-state step derivatives, a rollout."""
    path, params = MODELS / "arm7.urdf", ["link3.mass", "gravity"]
    with _opt("1"):
        parts = symgen.build(path, parameters=params)
    suite = symgen.build(path, parameters=params)
    assert len(parts.manifest["parts"]) > 1
    rng = np.random.default_rng(19)
    q, u, T = rng.uniform(-1, 1, parts.nq), rng.normal(size=parts.nu), rng.normal(size=parts.nu)
    for what, f in [("FD", lambda m: m.forward_dynamics(q, u, T)),
                    ("step derivatives", lambda m: np.concatenate([x.ravel() for x in m.step_derivatives(q, u, T, 1e-3)])),
                    ("rollout", lambda m: m.rollout(q, u, T=T, dt=1e-3, n_steps=3)["q"])]:
        np.testing.assert_array_equal(f(parts), f(suite), err_msg=f"parametric arm7: {what}, -O1 in parts against -O0")


def test_the_frame_kinematics_and_the_hinge_api_compile_in_parts_of_their_own():
    """A model with many hinge specs (all_hinges: 20) compiled in parts (-O1 here): its one-state frame kinematics are
    a part of their own (abi.layout.KINEMATICS_PART, at the module's level) and the hinge kernels' exported copies
    another (HINGE_API_PART, capped at -O1: the per-hinge API called from Python); every other part keeps static
    copies.  The frame kinematics equal the suite's -O0 build bit for bit (one state and batches), and each hinge's
    exported transform and coord map equal its derivation evaluated by numpy (sympy.lambdify: Hinge.numeric) to 1e-12."""
    from symgen.abi.layout import HINGE_API_PART, KINEMATICS_PART, MATS_PART
    from symgen.hinges.derive import hinge
    from symgen.model import load_model

    path = MODELS / "all_hinges.yaml"
    with _opt("1"):
        parts = symgen.build(path)
    suite = symgen.build(path)
    assert {KINEMATICS_PART, HINGE_API_PART} <= set(parts.manifest["parts"])
    # capped at -O1 too: the part of atbi_matrices and upsilon alone (MATS_PART: no entry point's dynamics there)
    assert parts.manifest["part_opt"] == {str(HINGE_API_PART): 1, str(MATS_PART): 1}
    rng = np.random.default_rng(23)
    Q = parts.sanitize(rng.uniform(-1, 1, (5, parts.nq)))
    U = rng.normal(size=(5, parts.nu))
    frame = parts.frame_names[-1]
    for what, f in [("frame_pose", lambda m: m.frame_pose(Q, frame)), ("frame_pose one state", lambda m: m.frame_pose(Q[0], frame)),
                    ("frame_poses", lambda m: m.frame_poses(Q)), ("jacobian", lambda m: m.jacobian(Q, frame)),
                    ("frame_velocity", lambda m: m.frame_velocity(Q, U, frame)), ("every body's kinematics", lambda m: m.binding.bodies(Q, U)), ("poses", lambda m: m.binding.poses(Q))]:
        got, want = f(parts), f(suite)
        for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
            np.testing.assert_array_equal(g, w, err_msg=f"all_hinges: {what}, in parts at -O1 against -O0")
    checked = 0
    for b in load_model(path).bodies:
        h = hinge(b.hinge_type, **b.hinge_kwargs())
        if not h.nq:
            continue
        k, q = parts.hinge_kernels(b.hinge_name), rng.uniform(-0.8, 0.8, h.nq)
        for kernel in ("transform", "coord_map"):
            np.testing.assert_allclose(getattr(k, kernel)(q), h.numeric(kernel)(q), rtol=0, atol=1e-12,
                                       err_msg=f"all_hinges: hinge {b.hinge_name!r} {kernel}, from the hinge API part")
        checked += 1
    assert checked >= 8, checked
