"""One-state fast paths (issue 12 item 8): frames by handle, ``out=``, one C call per query.

A single state (C-contiguous float64 vectors) goes to ``sg_<model>_frame_pose / frame_poses /
frame_jacobian / frame_velocity`` (frame by index) and to the single-state dynamics; anything else takes the
general, batched path.  Checked here on arm7 (fixed base), the quadruped (floating base) and the double
pendulum (an extra body-fixed frame with an offset):

* the fast paths against the general path (batches, lists, strided views) bitwise: the general path loops
  over the same per-state C function;
* one frame's pose against all frames' poses to 1e-14 relative (one frame walks its ancestors composing
  relative transforms, all frames compose from the root);
* handles against names, ``out=`` filled and returned, bad ``out=`` and bad frames refused with a message;
* frame poses, Jacobians and velocities against Pinocchio (LOCAL, rows reordered) to 1e-10;
* the C fallbacks for large models (all bodies' poses and ``body_jacobian`` instead of the per-body walk
  steps) against the walk to 1e-14 (observed up to 12 eps on the spacecraft: world-pose differences).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import symgen
from helpers import assert_close
from pin_maps import to_pin_q, u_map

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "examples" / "models"
ROBOTS = {"arm7": (MODELS / "arm7.urdf", False), "quadruped-floating": (MODELS / "quadruped.urdf", True),
          "double_pendulum": (MODELS / "double_pendulum.yaml", False)}
WALK_RTOL = 1e-14


@pytest.fixture(scope="module", params=list(ROBOTS), ids=list(ROBOTS))
def robot(request):
    path, floating = ROBOTS[request.param]
    return symgen.build(str(path), floating_base=floating)


def _states(mb, n, seed):
    rng = np.random.default_rng(seed)
    return mb.sanitize(rng.uniform(-2.5, 2.5, (n, mb.nq))), rng.normal(size=(n, mb.nu)), rng.normal(size=(n, mb.nu))


def test_frames_are_newtonian_bodies_then_extra_frames(robot):
    mb = robot
    assert mb.frame_names[0] == "newtonian"
    assert mb.frame_names[1:1 + mb.nb] == mb.body_names
    q = mb.sanitize(np.random.default_rng(0).uniform(-1, 1, mb.nq))
    np.testing.assert_array_equal(mb.frame_pose(q, "newtonian"), np.eye(4))
    np.testing.assert_array_equal(mb.jacobian(q, "newtonian"), np.zeros((6, mb.nu)))
    np.testing.assert_array_equal(mb.frame_velocity(q, np.ones(mb.nu), "newtonian"), np.zeros(6))
    np.testing.assert_array_equal(mb.frame_poses(q)[0], np.eye(4))


def test_single_state_equals_batched_path(robot):
    mb = robot
    Q, U, A = _states(mb, 6, 1)
    poses = mb.frame_poses(Q)
    assert poses.shape == (6, len(mb.frame_names), 4, 4)
    for f in mb.frame_names:
        P, J, V = mb.frame_pose(Q, f), mb.jacobian(Q, f), mb.frame_velocity(Q, U, f)   # batched path
        for i in range(len(Q)):
            np.testing.assert_array_equal(mb.frame_pose(Q[i], f), P[i])
            np.testing.assert_array_equal(mb.jacobian(Q[i], f), J[i])
            np.testing.assert_array_equal(mb.frame_velocity(Q[i], U[i], f), V[i])
            assert_close(mb.jacobian(Q[i], f) @ U[i], V[i], 1e-14, f"J u of {f}")
    for i in range(len(Q)):
        np.testing.assert_array_equal(mb.frame_poses(Q[i]), poses[i])
        for k, f in enumerate(mb.frame_names):
            assert_close(mb.frame_pose(Q[i], f), poses[i, k], WALK_RTOL, f"frame_poses {f}")
        np.testing.assert_array_equal(mb.inverse_dynamics(Q[i], U[i], A[i]), mb.inverse_dynamics(Q[i:i + 1], U[i:i + 1], A[i:i + 1])[0])
        np.testing.assert_array_equal(mb.forward_dynamics(Q[i], U[i], A[i]), mb.forward_dynamics(Q[i:i + 1], U[i:i + 1], A[i:i + 1])[0])
        np.testing.assert_array_equal(mb.mass_matrix(Q[i]), mb.mass_matrix(Q[i:i + 1])[0])


def test_general_path_inputs_give_the_fast_path_numbers(robot):
    """Lists, strided views and other dtypes go the general way, to the same numbers."""
    mb = robot
    Q, U, _ = _states(mb, 1, 2)
    q, u = Q[0], U[0]
    f = mb.body_names[-1]
    strided = lambda a: np.repeat(a, 2)[::2]  # noqa: E731
    for conv in (list, strided, lambda a: a.astype(np.longdouble)):
        np.testing.assert_array_equal(mb.frame_pose(conv(q), f), mb.frame_pose(q, f))
        np.testing.assert_array_equal(mb.jacobian(conv(q), f), mb.jacobian(q, f))
        np.testing.assert_array_equal(mb.frame_poses(conv(q)), mb.frame_poses(q))
        np.testing.assert_array_equal(mb.frame_velocity(conv(q), conv(u), f), mb.frame_velocity(q, u, f))
        np.testing.assert_array_equal(mb.mass_matrix(conv(q)), mb.mass_matrix(q))
        np.testing.assert_array_equal(mb.inverse_dynamics(conv(q), conv(u), conv(u)), mb.inverse_dynamics(q, u, u))


def test_handles_equal_names(robot):
    mb = robot
    Q, U, _ = _states(mb, 2, 3)
    for i, f in enumerate(mb.frame_names):
        h = mb.frame_handle(f)
        assert int(h) == i and h.name == f and f in repr(h)
        assert mb.frame_handle(h) == h and mb.frame_handle(np.str_(f)) == h   # str subclasses are names too
        np.testing.assert_array_equal(mb.frame_pose(Q[0], h), mb.frame_pose(Q[0], f))
        np.testing.assert_array_equal(mb.jacobian(Q[0], h), mb.jacobian(Q[0], f))
        np.testing.assert_array_equal(mb.frame_velocity(Q[0], U[0], h), mb.frame_velocity(Q[0], U[0], f))
        np.testing.assert_array_equal(mb.frame_pose(Q, h), mb.frame_pose(Q, f))                 # batched
        np.testing.assert_array_equal(mb.jacobian(Q, h), mb.jacobian(Q, f))
        np.testing.assert_array_equal(mb.frame_velocity(Q, U, h), mb.frame_velocity(Q, U, f))
        np.testing.assert_array_equal(mb.jacobian_dot(Q[0], U[0], h), mb.jacobian_dot(Q[0], U[0], f))
        np.testing.assert_array_equal(mb.frame_acceleration(Q[0], U[0], U[1], h),
                                      mb.frame_acceleration(Q[0], U[0], U[1], f))
    a, b = mb.frame_names[1], mb.frame_names[-1]
    np.testing.assert_array_equal(mb.f2f(mb.frame_handle(a), mb.frame_handle(b)).rel_transform(Q),
                                  mb.f2f(a, b).rel_transform(Q))
    body = mb.body_names[-1]
    wrench = np.arange(1.0, 7.0)
    np.testing.assert_array_equal(mb.inverse_dynamics(Q[0], U[0], U[1], f_ext={mb.frame_handle(body): wrench}),
                                  mb.inverse_dynamics(Q[0], U[0], U[1], f_ext={body: wrench}))


def test_out_is_filled_and_returned(robot):
    mb = robot
    Q, U, _ = _states(mb, 3, 4)
    h = mb.frame_handle(mb.frame_names[-1])
    nf = len(mb.frame_names)
    cases = [(mb.frame_pose, (Q[0], h), (4, 4)), (mb.jacobian, (Q[0], h), (6, mb.nu)),
             (mb.frame_velocity, (Q[0], U[0], h), (6,)), (mb.frame_poses, (Q[0],), (nf, 4, 4)),
             (mb.frame_pose, (Q, h), (3, 4, 4)), (mb.jacobian, (Q, h), (3, 6, mb.nu)),
             (mb.frame_velocity, (Q, U, h), (3, 6)), (mb.frame_poses, (Q,), (3, nf, 4, 4)),
             (mb.frame_pose, (list(Q[0]), h), (4, 4)), (mb.mass_matrix, (Q[0],), (mb.nu, mb.nu))]
    for fn, args, shape in cases:
        o = np.full(shape, np.nan)
        assert fn(*args, out=o) is o, fn.__name__
        np.testing.assert_array_equal(o, fn(*args))


def test_bad_out_and_bad_frames_are_refused(robot, tmp_path):
    mb = robot
    Q, U, _ = _states(mb, 2, 5)
    q, u = Q[0], U[0]
    f = mb.frame_names[-1]
    ro = np.empty((4, 4))
    ro.flags.writeable = False
    for bad in (np.empty((4, 3)), np.empty((4, 4), np.float32), np.empty((4, 8))[:, ::2], np.empty((4, 4)).T, ro,
                [[0.0] * 4] * 4, np.empty((2, 4, 4))):
        with pytest.raises(ValueError, match="frame_pose: out= must be"):
            mb.frame_pose(q, f, out=bad)
    with pytest.raises(ValueError, match="frame_pose: out="):
        mb.frame_pose(Q, f, out=np.empty((4, 4)))            # a batch needs (N, 4, 4)
    with pytest.raises(ValueError, match="jacobian: out="):
        mb.jacobian(q, f, out=np.empty((mb.nu, 6)))
    with pytest.raises(ValueError, match="frame_velocity: out="):
        mb.frame_velocity(q, u, f, out=np.empty(5))
    with pytest.raises(ValueError, match="frame_poses: out="):
        mb.frame_poses(q, out=np.empty((len(mb.frame_names) - 1, 4, 4)))
    for bad_name in ("no_such_frame", 3, None):
        for call in (lambda fr: mb.frame_pose(q, fr), lambda fr: mb.jacobian(q, fr),
                     lambda fr: mb.frame_velocity(q, u, fr), lambda fr: mb.frame_handle(fr)):
            with pytest.raises(KeyError, match="no frame named"):
                call(bad_name)
    # a handle of another model is refused (it is an index into another model's frames)
    other = symgen.build(str(MODELS / "spacecraft.yaml"))
    foreign = other.frame_handle(other.frame_names[-1])
    for call in (lambda fr: mb.frame_pose(q, fr), lambda fr: mb.jacobian(q, fr), lambda fr: mb.frame_velocity(q, u, fr),
                 lambda fr: mb.frame_pose(Q, fr)):
        with pytest.raises(ValueError, match="frame handle of another model"):
            call(foreign)


ONE_STATE = ("frame_pose", "jacobian", "frame_velocity", "frame_poses", "mass_matrix", "inverse_dynamics",
             "forward_dynamics")


def test_compiled_one_state_calls_equal_the_python_paths(robot, tmp_path):
    """symgen.build and an installed package's load put the compiled one-state calls (runtime/fastcall.c) in
    front of the methods; a model loaded without them (the Python one-state path) and the batched path give
    the same numbers bitwise, gravity edits and replacements included."""
    from symgen.runtime import MultibodyModel, load_built

    mb = robot
    for name in ONE_STATE:
        call = getattr(mb, name)
        assert type(call).__name__ == "Call" and call.__name__ == name, call
        assert call.__doc__ == getattr(MultibodyModel, name).__doc__
    plain = MultibodyModel(_Module(mb), mb.manifest)          # no extension: the methods' own paths
    assert not any(type(getattr(plain, n)).__name__ == "Call" for n in ONE_STATE)
    Q, U, A = _states(mb, 3, 8)
    h, f = mb.frame_handle(mb.frame_names[-1]), mb.frame_names[-1]
    g0 = mb.gravity.copy()

    def all_calls(m, i):
        return [m.frame_pose(Q[i], h), m.frame_pose(Q[i], f), m.jacobian(Q[i], h), m.frame_velocity(Q[i], U[i], f),
                m.frame_poses(Q[i]), m.mass_matrix(Q[i]), m.inverse_dynamics(Q[i], U[i], A[i]),
                m.forward_dynamics(Q[i], U[i], A[i])]

    try:
        for edit in (None, "in place", "replaced"):
            if edit == "in place":
                mb.gravity[1] = plain.gravity[1] = 2.5
            elif edit == "replaced":
                mb.gravity = plain.gravity = [0.1, -0.2, -3.0]
            for i in range(len(Q)):
                for a, b in zip(all_calls(mb, i), all_calls(plain, i)):
                    np.testing.assert_array_equal(a, b)
            np.testing.assert_array_equal(mb.forward_dynamics(Q[0], U[0], A[0]),
                                          mb.forward_dynamics(Q[:1], U[:1], A[:1])[0])
            np.testing.assert_array_equal(mb.inverse_dynamics(Q[0], U[0], A[0]),
                                          mb.inverse_dynamics(Q[:1], U[:1], A[:1])[0])
    finally:
        mb.gravity = g0
    r1, r2 = mb.frame_pose(Q[0], h), mb.frame_pose(Q[0], h)
    assert r1 is not r2 and not np.shares_memory(r1, r2)      # a new array every call
    # errors still come from the methods: wrong shapes, other models' handles, bad names
    with pytest.raises(ValueError, match="q must have shape"):
        mb.frame_pose(np.zeros(mb.nq + 1), h)
    with pytest.raises(ValueError, match="u must have shape"):
        mb.forward_dynamics(Q[0], np.zeros(mb.nu + 1), A[0])
    with pytest.raises(KeyError, match="no frame named"):
        mb.jacobian(Q[0], "no_such_frame")


def test_installed_package_ships_the_compiled_calls(tmp_path):
    """``python -m symgen build --out`` writes the extension beside the model module; ``load_built`` of the
    package uses it (same numbers as symgen.build's model).  With an empty cache, the extension is compiled by a
    process of its own while the build generates the model's sources (symgen.pipeline.package), into the cache."""
    import json
    import os
    import subprocess
    import sys

    from symgen.runtime import load_built

    path, cache = MODELS / "double_pendulum.yaml", tmp_path / "cache"
    out = subprocess.run([sys.executable, "-m", "symgen", "build", str(path), "--out", str(tmp_path), "-q"],
                         capture_output=True, text=True, env=dict(os.environ, SYMGEN_CACHE_DIR=str(cache)))
    assert out.returncode == 0, out.stderr
    pkg = tmp_path / "double_pendulum"
    info = json.loads((pkg / "manifest.json").read_text())["fastcall"]
    assert (pkg / info["so"]).exists() and (cache / "modules" / info["so"]).exists()
    log = [json.loads(line) for line in (cache / "compile.log").read_text().splitlines()]
    built_by = {e["module"].split("_")[0] == "sg": e["pid"] for e in log}      # {is the extension: its process}
    assert set(built_by) == {True, False} and built_by[True] != built_by[False], log
    mb, ref = load_built(pkg), symgen.build(str(path))
    assert not hasattr(symgen.runtime, "load_model")     # renamed load_built (symgen.model.load_model reads files)
    assert type(mb.forward_dynamics).__name__ == "Call"
    Q, U, A = _states(ref, 2, 9)
    for i in range(2):
        np.testing.assert_array_equal(mb.forward_dynamics(Q[i], U[i], A[i]), ref.forward_dynamics(Q[i], U[i], A[i]))
        np.testing.assert_array_equal(mb.jacobian(Q[i], "link2"), ref.jacobian(Q[i], "link2"))


class _Module:
    def __init__(self, mb):
        self.lib, self.ffi = mb.binding.lib, mb.binding.ffi


def test_large_model_fallbacks_equal_the_walk(monkeypatch):
    """Above symgen.algorithms.soa's frame limits, one frame's pose and Jacobian come from the all-body poses kernel and
    ``body_jacobian`` (and all frames' poses from the per-body helpers); same numbers to 1e-14."""
    from symgen.algorithms import soa
    from symgen.model import load_model
    from symgen.pipeline.package import build_model
    from symgen.pipeline.sources import model_sources

    path = MODELS / "double_pendulum.yaml"
    walk = symgen.build(str(path))
    monkeypatch.setattr(soa, "POSES_STRAIGHT_LIMIT", 0)
    monkeypatch.setattr(soa, "JAC_STEPS_LIMIT", 0)
    model = load_model(str(path))
    files, manifest = model_sources(model)
    c = files[f"{manifest['name']}.c"]
    assert "_jstep_" not in c and "_pstep_" not in c and "sg_link_pose(X," in c
    loops = build_model(model)
    Q, U, _ = _states(walk, 4, 6)
    for f in walk.frame_names:
        for i in range(len(Q)):
            assert_close(loops.frame_pose(Q[i], f), walk.frame_pose(Q[i], f), WALK_RTOL, f"pose {f}")
            assert_close(loops.jacobian(Q[i], f), walk.jacobian(Q[i], f), WALK_RTOL, f"J {f}")
            assert_close(loops.frame_velocity(Q[i], U[i], f), walk.frame_velocity(Q[i], U[i], f), WALK_RTOL, f"V {f}")
            assert_close(loops.frame_poses(Q[i]), walk.frame_poses(Q[i]), WALK_RTOL, "frame_poses")


# ------------------------------------------------------------------------------------------------
# Pinocchio
# ------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module", params=["arm7", "quadruped-floating"])
def pair(request):
    pin = pytest.importorskip("pinocchio")
    path, floating = ROBOTS[request.param]
    mb = symgen.build(str(path), floating_base=floating)
    pm = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer()) if floating else pin.buildModelFromUrdf(str(path))
    return mb, pm, floating


def test_fast_paths_match_pinocchio(pair):
    """Every link: pose (one frame and all frames), Jacobian and velocity in the LOCAL frame, by handle."""
    import pinocchio as pin

    mb, pm, floating = pair
    pd = pm.createData()
    rng = np.random.default_rng(7)
    links = [f.name for f in pm.frames if f.type == pin.FrameType.BODY]
    handles = {n: mb.frame_handle(n) for n in links}
    J = np.empty((6, mb.nu))
    for _ in range(5):
        q = mb.sanitize(rng.uniform(-2.5, 2.5, mb.nq))
        v = rng.normal(size=pm.nv)
        T = u_map(mb, pm, q, floating)
        u = T @ v
        qp = to_pin_q(mb, pm, q)
        pin.forwardKinematics(pm, pd, qp, v)
        pin.updateFramePlacements(pm, pd)
        pin.computeJointJacobians(pm, pd, qp)
        poses = mb.frame_poses(q)
        for name, h in handles.items():
            fid = pm.getFrameId(name, pin.FrameType.BODY)
            ref = pd.oMf[fid].homogeneous
            assert_close(mb.frame_pose(q, h), ref, 1e-10, f"pose {name}")
            assert_close(poses[mb.frame_names.index(name)], ref, 1e-10, f"frame_poses {name}")
            Jp = pin.getFrameJacobian(pm, pd, fid, pin.LOCAL)
            assert_close(mb.jacobian(q, h, out=J) @ T, np.vstack([Jp[3:], Jp[:3]]), 1e-10, f"J {name}")
            V = pin.getFrameVelocity(pm, pd, fid, pin.LOCAL).vector
            assert_close(mb.frame_velocity(q, u, h), np.r_[V[3:], V[:3]], 1e-10, f"V {name}")
