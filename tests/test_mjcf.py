"""MJCF through MuJoCo's compiler (symgen.model.mjcf) against MuJoCo itself.

The hand-written files in ``tests/data/mjcf/`` together use: default classes (``childclass``, ``class``, nested),
armature and joint types through defaults, inertia from capsule (``fromto``), box, sphere, cylinder, ellipsoid and
mesh geoms, an explicit ``<inertial>``, ``settotalmass``, degrees and radians, ``eulerseq``, ``euler``,
``axisangle``, ``xyaxes``, ``zaxis`` and ``quat``, several joints in one body with different anchors, one common
anchor, and a ball with a slide, ``ref`` on hinges and slides, free and ball joints, two free root bodies, a welded
body, a mocap body, ``<option gravity>``, sites and named geoms.

MuJoCo runs with contacts, constraints, equality, limits, friction loss, springs, dampers and actuation disabled
(``opt.disableflags``), gravity compensation zeroed and no fluid.  At random ``qpos``/``qvel`` and applied
generalized forces: ``qacc`` and ``qfrc_bias`` (inverse dynamics at zero acceleration) to 1e-8, ``mj_fullM``
(armature included) and the pose of every body, site and named geom to 1e-10.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")
import symgen  # noqa: E402

DATA = Path(__file__).resolve().parent / "data" / "mjcf"
FILES = ["arm_defaults.xml", "two_free.xml"]
ACC, POSE = 1e-8, 1e-10
N = 6


def tree_only(m):
    """MuJoCo's settings under which its dynamics is the tree's (what symgen imports)."""
    D = mujoco.mjtDisableBit
    for flag in (D.mjDSBL_CONTACT, D.mjDSBL_CONSTRAINT, D.mjDSBL_EQUALITY, D.mjDSBL_FRICTIONLOSS, D.mjDSBL_LIMIT,
                 D.mjDSBL_SPRING, D.mjDSBL_DAMPER, D.mjDSBL_ACTUATION):
        m.opt.disableflags |= int(flag)
    m.body_gravcomp[:] = 0
    m.opt.density = m.opt.viscosity = 0
    m.opt.wind[:] = 0
    return m


def random_qpos(m, rng):
    """Random qpos in MuJoCo's convention: unit quaternions (w, x, y, z), angles and distances."""
    q = m.qpos0 + rng.uniform(-1.0, 1.0, m.nq)
    for j in range(m.njnt):
        a = m.jnt_qposadr[j]
        if m.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE:
            v = rng.normal(size=4)
            q[a + 3:a + 7] = v / np.linalg.norm(v)
        elif m.jnt_type[j] == mujoco.mjtJoint.mjJNT_BALL:
            v = rng.normal(size=4)
            q[a:a + 4] = v / np.linalg.norm(v)
    return q


@pytest.fixture(scope="module", params=FILES)
def pair(request):
    path = DATA / request.param
    return symgen.build(path), tree_only(mujoco.MjModel.from_xml_path(str(path)))


def states(m, seed):
    rng = np.random.default_rng(seed)
    return [(random_qpos(m, rng), rng.normal(size=m.nv), rng.normal(size=m.nv)) for _ in range(N)]


def mj_forward(m, qpos, qvel, tau):
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:], d.qfrc_applied[:] = qpos, qvel, tau
    mujoco.mj_forward(m, d)
    M = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(m, d, M)
    return d, M


def test_sizes_and_coordinates(pair):
    mb, m = pair
    assert (mb.nq, mb.nu) == (m.nq, m.nv)
    qpos, qvel, _ = states(m, 0)[0]
    q, u = mb.from_mujoco(qpos, qvel)
    np.testing.assert_array_equal(u, qvel)
    back = mb.to_mujoco(q, u)
    np.testing.assert_array_equal(back[0], qpos)
    np.testing.assert_array_equal(back[1], qvel)
    # every MuJoCo joint has its slices (a compound hinge's joints too), equal to qpos / qvel addresses
    sizes = {0: (7, 6), 1: (4, 3), 2: (1, 1), 3: (1, 1)}
    for j in range(m.njnt):
        name = m.joint(j).name or None
        if name:
            nq_j, nv_j = sizes[int(m.jnt_type[j])]
            assert mb.q_slice(name) == slice(m.jnt_qposadr[j], m.jnt_qposadr[j] + nq_j)
            assert mb.u_slice(name) == slice(m.jnt_dofadr[j], m.jnt_dofadr[j] + nv_j)
    # batched, and the quaternions really moved: w last in symgen
    Q = mb.from_mujoco(np.array([qpos, qpos]))
    assert Q.shape == (2, m.nq)
    for a in mb.manifest["mujoco"]["quat_adr"]:
        assert Q[1, a + 3] == qpos[a]


def test_dynamics_agree_with_mujoco(pair):
    mb, m = pair
    worst = {"qacc": 0.0, "bias": 0.0, "M": 0.0}
    for qpos, qvel, tau in states(m, 1):
        d, M = mj_forward(m, qpos, qvel, tau)
        q, u = mb.from_mujoco(qpos, qvel)
        worst["M"] = max(worst["M"], np.abs(mb.mass_matrix(q) - M).max())
        worst["bias"] = max(worst["bias"], np.abs(mb.inverse_dynamics(q, u, np.zeros(m.nv)) - d.qfrc_bias).max())
        worst["qacc"] = max(worst["qacc"], np.abs(mb.forward_dynamics(q, u, tau) - d.qacc).max())
    print(m.nq, worst)
    assert worst["M"] < POSE and worst["bias"] < ACC and worst["qacc"] < ACC, worst


def test_poses_agree_with_mujoco(pair):
    mb, m = pair
    names = [n for n in mb.frame_names if n != "newtonian"]
    checked = 0
    for qpos, qvel, tau in states(m, 2):
        d, _ = mj_forward(m, qpos, qvel, tau)
        q = mb.from_mujoco(qpos)
        X = mb.frame_poses(q)
        for name in names:
            kind, nm = name.split(":", 1) if ":" in name else (None, name)
            for k, pos, mat in (("body", d.xpos, d.xmat), ("site", d.site_xpos, d.site_xmat),
                                ("geom", d.geom_xpos, d.geom_xmat)):
                if kind not in (None, k):
                    continue
                i = mujoco.mj_name2id(m, getattr(mujoco.mjtObj, f"mjOBJ_{k.upper()}"), nm)
                if i >= 0:
                    T = X[mb.frame_names.index(name)]
                    np.testing.assert_allclose(T[:3, 3], pos[i], rtol=0, atol=POSE, err_msg=f"{k} {nm}")
                    np.testing.assert_allclose(T[:3, :3], mat[i].reshape(3, 3), rtol=0, atol=POSE,
                                               err_msg=f"{k} {nm}")
                    checked += 1
                    break
            else:
                raise AssertionError(f"frame {name!r} is no MuJoCo body, site or geom")
    assert checked == N * len(names)
    # every named body is a frame
    for b in range(1, m.nbody):
        if m.body(b).name:
            assert m.body(b).name in mb.frame_names


def mj_rollout(m, qpos, qvel, n_steps):
    """``mujoco.rollout`` with MuJoCo's RK4 from each (qpos, qvel): (qpos, qvel) after each step."""
    from mujoco import rollout

    m.opt.integrator = mujoco.mjtIntegrator.mjINT_RK4
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS       # [time, qpos, qvel, ...]
    d = mujoco.MjData(m)
    init = np.zeros((len(qpos), mujoco.mj_stateSize(m, spec)))
    for i in range(len(qpos)):
        d.qpos[:], d.qvel[:], d.time = qpos[i], qvel[i], 0.0
        mujoco.mj_getState(m, d, init[i], spec)
    state, _ = rollout.rollout(m, d, init, nstep=n_steps)
    return state[:, :, 1:1 + m.nq], state[:, :, 1 + m.nq:1 + m.nq + m.nv]


def test_rollout_agrees_with_mujoco_rollout(pair):
    """mb.rollout (classical RK4, quaternions renormalized) against mujoco.rollout (its RK4): 1e-9 after one step
    (measured: 2e-12 in qvel, 4e-14 in qpos; both methods are fourth order, so they part by O(dt^5) a step)."""
    mb, m = pair
    rng = np.random.default_rng(5)
    qpos = np.array([random_qpos(m, rng) for _ in range(8)])
    qvel = rng.normal(size=(8, m.nv))
    mq, mv = mj_rollout(m, qpos, qvel, 2)
    r = mb.rollout(*mb.from_mujoco(qpos, qvel), m.opt.timestep, 2)
    assert r["ok"].all()
    qs, us = mb.to_mujoco(r["q"][:, 1], r["u"][:, 1])
    np.testing.assert_allclose(qs, mq[:, 0], rtol=0, atol=1e-9)
    np.testing.assert_allclose(us, mv[:, 0], rtol=0, atol=1e-9)
    qs, us = mb.to_mujoco(r["q"][:, 2], r["u"][:, 2])
    np.testing.assert_allclose(us, mv[:, 1], rtol=0, atol=1e-9)


def test_what_is_not_imported_is_one_warning():
    model = symgen.load_model(DATA / "arm_defaults.xml")
    lines = [w for w in model.warnings if w.startswith("not imported")]
    assert len(lines) == 1
    for what in ("contacts", "tendons", "actuators", "joint limits (shoulder)", "damping", "friction loss",
                 "stiffness (elbow_z)", "gravity compensation (hand)", "equality constraints (connect reach, weld hold)",
                 "mocap bodies"):
        assert what in lines[0], what


def test_mapping():
    model = symgen.load_model(DATA / "arm_defaults.xml")
    fore = model.body("fore")
    assert fore.hinge_type == "SERIAL" and fore.hinge_name == "elbow_x+elbow_z+extend"
    joints = fore.hinge_kwargs()["joints"]
    assert [j["type"] for j in joints] == ["PIN", "PIN", "LINEAR"]
    assert joints[0]["ref"] == pytest.approx(np.radians(-15)) and joints[2]["ref"] == 0.02
    assert joints[0]["anchor"] == (0.0, 0.02, 0.0) and joints[1]["anchor"] == (0.05, 0.0, 0.0)
    assert fore.armature == (0.01, 0.01, 0.01)                   # the top default's armature
    assert model.body("upper").armature == (0.03,)               # class "pitch"
    assert model.body("base").hinge_type == model.body("target").hinge_type == "LOCKED"   # welded, mocap
    assert model.body("hand").hinge_type == "BALL_QUAT"
    assert model.gravity == (0.5, -0.3, -9.7)
    two = symgen.load_model(DATA / "two_free.xml")
    assert [b.hinge_type for b in two.bodies if b.parent == "newtonian"] == ["FULL6DOF", "FULL6DOF"]
    assert sum(b.mass for b in two.bodies) == pytest.approx(7.5)  # settotalmass
    assert two.mujoco["quat_adr"] == [3, 13, 18]


# ---------------------------------------------------------------------------------------------
# the command line and bad input
# ---------------------------------------------------------------------------------------------

import subprocess  # noqa: E402
import sys  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def run(*args, pre=""):
    code = f"{pre}import sys; from symgen.cli import main; sys.exit(main({list(args)!r}))"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)


def test_info_shows_the_compound_hinge_with_its_subhinges():
    out = run("info", str(DATA / "arm_defaults.xml"))
    assert out.returncode == 0, out.stderr
    assert "hinge 'elbow_x+elbow_z+extend' SERIAL(3 subhinges)  Q[1:4] U[1:4]" in out.stdout
    assert "0: PIN 'elbow_x'  axis (1, 0, 0)  anchor (0, 0.02, 0)  ref -0.261799  Q[1:2] U[1:2]" in out.stdout
    assert "2: LINEAR 'extend'  axis (1, 0, 0)  ref 0.02  Q[3:4] U[3:4]" in out.stdout
    assert "not imported (not tree dynamics): contacts" in out.stderr


def _fails(out, *needles):
    assert out.returncode == 1, (out.returncode, out.stdout, out.stderr)
    err = out.stderr[out.stderr.index("symgen: error:"):]
    assert "Traceback" not in out.stderr and "\n\n" not in err.strip()
    for n in needles:
        assert n in err, (n, err)


@pytest.mark.parametrize("text, needles", [
    ("<mujoco><worldbody><body></worldbody></mujoco>", ("malformed XML", "line 1")),
    ("<mujoco><worldbody><body><joint type='twist'/></body></worldbody></mujoco>",
     ("MuJoCo refuses the file", "twist")),
    ("<mujoco><worldbody><body><geom type='mesh' mesh='nowhere'/></body></worldbody></mujoco>",
     ("MuJoCo refuses the file", "nowhere")),
])
def test_bad_files_fail_cleanly_and_write_nothing(tmp_path, text, needles):
    f = tmp_path / "robot.xml"
    f.write_text(text)
    out_dir = tmp_path / "gen"
    out = run("build", str(f), "--out", str(out_dir))
    _fails(out, str(f), *needles)
    assert not out_dir.exists()
    with pytest.raises(symgen.ModelError, match="robot.xml"):
        symgen.load_model(f)


def test_missing_mujoco_names_the_extra(tmp_path):
    out_dir = tmp_path / "gen"
    out = run("build", str(DATA / "two_free.xml"), "--out", str(out_dir), pre="import sys; sys.modules['mujoco'] = None; ")
    _fails(out, "two_free.xml", "mujoco package", "symgen[mjcf]")
    assert not out_dir.exists()


def test_unknown_xml_root(tmp_path):
    f = tmp_path / "thing.xml"
    f.write_text("<scene/>")
    _fails(run("info", str(f)), "root element <scene>")


def test_equalities_become_loops():
    """``loops_from_equality=True``: the connect 'reach' (hand to the mocap target) is a BALL cut joint between
    frames at its two anchors, the weld 'hold' (forearm to the welded base) a LOCKED one between its relpose frame on
    body1 and its anchor on body2.  At random states their pose errors are MuJoCo's: the connect's gap between the
    anchors, the weld's distance and rotation angle between the frames MuJoCo holds together (computed from
    MuJoCo's xpos, xmat and eq_data); neither equality is listed as not imported."""
    path = DATA / "arm_defaults.xml"
    mb = symgen.build(path, loops_from_equality=True)
    assert mb.loop_names == ("reach", "hold") and not any("equality" in w for w in mb.warnings)
    m = mujoco.MjModel.from_xml_path(str(path))
    d = mujoco.MjData(m)
    for qpos, _, _ in states(m, 7):
        d.qpos[:] = qpos
        mujoco.mj_kinematics(m, d)
        R = [d.xmat[b].reshape(3, 3) for b in range(m.nbody)]
        (c1, c2), (w1, w2) = (m.eq_obj1id[0], m.eq_obj2id[0]), (m.eq_obj1id[1], m.eq_obj2id[1])
        gap = d.xpos[c1] + R[c1] @ m.eq_data[0, :3] - d.xpos[c2] - R[c2] @ m.eq_data[0, 3:6]
        err = mb.loop("reach").pose_error(mb.from_mujoco(qpos))
        np.testing.assert_allclose(err[:3], 0, atol=1e-12)          # a ball: no rotation is constrained
        assert abs(np.linalg.norm(err[3:]) - np.linalg.norm(gap)) < POSE
        rel = np.zeros(9)
        mujoco.mju_quat2Mat(rel, m.eq_data[1, 6:10])
        Ra = R[w1] @ rel.reshape(3, 3)
        dist = np.linalg.norm(d.xpos[w1] + R[w1] @ m.eq_data[1, 3:6] - d.xpos[w2] - R[w2] @ m.eq_data[1, :3])
        angle = np.arccos(np.clip((np.trace(Ra.T @ R[w2]) - 1) / 2, -1, 1))
        err = mb.loop("hold").pose_error(mb.from_mujoco(qpos))
        assert abs(np.linalg.norm(err[3:]) - dist) < POSE and abs(np.linalg.norm(err[:3]) - angle) < 1e-9
    # and at MuJoCo's reference pose both loops are closed
    q0 = mb.from_mujoco(m.qpos0)
    for name in ("reach", "hold"):
        np.testing.assert_allclose(mb.loop(name).pose_error(q0), 0, atol=1e-12)
    with pytest.raises(symgen.ModelError, match="MJCF files only"):
        symgen.load_model(DATA.parent / "serial_chain.yaml", loops_from_equality=True)


def test_cli_build_of_an_mjcf_file(tmp_path):
    out = run("build", str(DATA / "two_free.xml"), "--out", str(tmp_path / "gen"))
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("built two_free: nQ = 22, nU = 19, 5 bodies, 10 frames")
    assert (tmp_path / "gen" / "two_free" / "two_free.c").exists()


def test_from_mujoco_needs_an_mjcf_model():
    mb = symgen.build(ROOT / "examples" / "models" / "arm7.urdf")     # a URDF model (built by most files already)
    with pytest.raises(ValueError, match="built from an MJCF file"):
        mb.from_mujoco(np.zeros(mb.nq))
