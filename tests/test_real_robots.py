"""What real robot descriptions need (issue: real robots in), on small hand-written URDFs and YAML models.

Oracles: Pinocchio (aba, rnea, crba with ``model.armature``; what urdfdom accepts), closed forms (a free rigid
body: Euler's equations; a quaternion's rotation), geometric identities (HOOKE: outboard Y stays
perpendicular to inboard X) and algebraic ones (a locked hinge removes its rows and columns from M).
"""
from __future__ import annotations

import numpy as np
import pytest

import symgen
from helpers import assert_close
from model_factory import NECK
from symgen.model import ModelError, load_model

pin = pytest.importorskip("pinocchio")
from pin_maps import compare_with_pinocchio, set_armature  # noqa: E402

TOL = 1e-9


def _link(name, mass=None, inertia=(0.01, 0.02, 0.03, 0, 0, 0), xyz="0 0 0"):
    if mass is None:
        return f"<link name='{name}'/>"
    ixx, iyy, izz, ixy, ixz, iyz = inertia
    return (f"<link name='{name}'><inertial><origin xyz='{xyz}'/><mass value='{mass}'/>"
            f"<inertia ixx='{ixx}' iyy='{iyy}' izz='{izz}' ixy='{ixy}' ixz='{ixz}' iyz='{iyz}'/></inertial></link>")


def _joint(name, parent, child, jtype="revolute", axis="0 0 1", xyz="0 0 0.3"):
    ax = f"<axis xyz='{axis}'/>" if axis is not None else ""
    lim = "<limit lower='-3' upper='3' effort='10' velocity='5'/>" if jtype in ("revolute", "prismatic") else ""
    return (f"<joint name='{name}' type='{jtype}'><parent link='{parent}'/><child link='{child}'/>"
            f"<origin xyz='{xyz}' rpy='0.1 0.2 0.3'/>{ax}{lim}</joint>")


def _urdf(tmp_path, name, parts, head=""):
    p = tmp_path / f"{name}.urdf"
    p.write_text(head + f"<robot name='{name}'>" + "".join(parts) + "</robot>")
    return str(p)


def _inertia_warnings(model):
    return [w for w in model.warnings if "'inertia'" in w]


# ------------------------------------------------------------------------------------------------
# inertia validation
# ------------------------------------------------------------------------------------------------

ARM = [_link("base", 2.0), _joint("j1", "base", "l1"), _link("l1", 1.0, xyz="0.1 0 0"),
       _joint("j2", "l1", "l2", axis="0 1 0"), _link("l2", 0.5, xyz="0 0 0.2")]


def test_point_masses_and_zero_inertia_sensor_links_build_and_agree(tmp_path):
    """A 0.01 kg point mass on a revolute joint, a zero-inertia sensor link welded to it (talos'
    rgbd_optical_frame), a massless link: loaded without an inertia warning, dynamics = Pinocchio."""
    path = _urdf(tmp_path, "pointmass", ARM + [
        _joint("j3", "l2", "tip", xyz="0.1 0.2 0.3"), _link("tip", 0.01, (0, 0, 0, 0, 0, 0), xyz="0.05 0 0"),
        _joint("cam_joint", "tip", "camera", "fixed", None), _link("camera", 0.01, (0, 0, 0, 0, 0, 0)),
        _joint("imu_joint", "l1", "imu", "fixed", None), _link("imu")])
    model = load_model(path)
    assert not _inertia_warnings(model)
    for floating in (False, True):
        mb = symgen.build(path, floating_base=floating)
        assert not mb.singular_hinges
        pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if floating else pin.buildModelFromUrdf(path)
        err = compare_with_pinocchio(mb, pm, floating, np.random.default_rng(3), 5)
        assert max(err.values()) <= TOL, err


def test_rounding_negative_principal_moment_is_accepted(tmp_path):
    """go1's and anymal's base inertia: every entry 1e-6, principal moments (-2e-22, 8.5e-23, 3e-6), i.e.
    zero up to rounding (and a triangle violation, which is a warning)."""
    J = (1e-6,) * 6
    ev = np.linalg.eigvalsh(np.full((3, 3), 1e-6))
    assert -1e-20 < ev[0] < 0                  # the case really has a rounding-negative moment
    path = _urdf(tmp_path, "roundneg", [_link("base", 1.0, J), _joint("j1", "base", "l1"), _link("l1", 1.0)])
    model = load_model(path)
    assert not [w for w in _inertia_warnings(model) if "negative" in w]


def test_clearly_negative_moment_is_an_error_naming_file_link_field(tmp_path):
    path = _urdf(tmp_path, "negative", [_link("base", 1.0), _joint("j1", "base", "bad"),
                                        _link("bad", 1.0, (0.1, 0.1, -0.05, 0, 0, 0))])
    with pytest.raises(ModelError) as e:
        load_model(path)
    msg = str(e.value)
    assert path in msg and "link 'bad'" in msg and "field 'inertia'" in msg and "-0.05" in msg
    # Pinocchio loads such files: the opt-in loads it too, with a warning
    model = load_model(path, accept_indefinite_inertia=True)
    assert any("link 'bad'" in w and "not positive semi-definite" in w for w in model.warnings)


def test_negative_moment_of_a_welded_link_is_judged_by_the_composite(tmp_path):
    """tiago's antenna link: a negative moment (-3.5e-8 of 9e-8) on a link welded to the heavy base; the
    rigid composite is positive definite, so it is a warning naming the link, not an error."""
    path = _urdf(tmp_path, "welded", [_link("base", 5.0, (0.1, 0.1, 0.1, 0, 0, 0)),
                                      _joint("antenna_joint", "base", "antenna", "fixed", None),
                                      _link("antenna", 0.01, (-3.5e-8, 3.5e-8, 9e-8, 0, 0, 0)),
                                      _joint("j1", "base", "l1"), _link("l1", 1.0)])
    model = load_model(path)
    ws = _inertia_warnings(model)
    assert len(ws) == 1 and "link 'antenna'" in ws[0] and "composite" in ws[0] and "'base'" in ws[0]


def test_triangle_violation_is_a_warning_and_balance_inertia_is_opt_in(tmp_path):
    J = (0.001, 0.001, 0.01, 0, 0, 0)           # pr2's sensor_mount_link: 0.001 + 0.001 < 0.01
    path = _urdf(tmp_path, "triangle", ARM + [_joint("j3", "l2", "mount"), _link("mount", 0.2, J)])
    model = load_model(path)
    ws = _inertia_warnings(model)
    assert len(ws) == 1 and "link 'mount'" in ws[0] and "triangle inequality" in ws[0]
    assert np.allclose(model.body("mount").inertia, np.diag(J[:3]))        # not silently changed
    balanced = load_model(path, balance_inertia=True)
    assert np.allclose(balanced.body("mount").inertia, np.eye(3) * 0.012 / 3, rtol=0, atol=1e-15)
    assert any("balance_inertia replaced" in w and "link 'mount'" in w for w in balanced.warnings)
    # the dynamics accept the unphysical inertia as Pinocchio does
    mb = symgen.build(path)
    err = compare_with_pinocchio(mb, pin.buildModelFromUrdf(path), False, np.random.default_rng(0), 3)
    assert max(err.values()) <= TOL, err


@pytest.mark.parametrize("field,value,words", [
    ("mass", "-1", ["mass", ">= 0"]), ("mass", "nan", ["mass", "finite"]),
    ("ixx", "inf", ["inertia", "finite"]), ("ixy", "0.5", ["inertia", "semi-definite"]),
])
def test_bad_mass_properties_are_errors(tmp_path, field, value, words):
    link = _link("bad", 1.0).replace(f"{field}='{'1.0' if field == 'mass' else ''}", "")
    vals = {"mass": "1.0", "ixx": "0.01", "iyy": "0.02", "izz": "0.03", "ixy": "0", "ixz": "0", "iyz": "0"}
    vals[field] = value
    link = (f"<link name='bad'><inertial><mass value='{vals['mass']}'/><inertia ixx='{vals['ixx']}' "
            f"iyy='{vals['iyy']}' izz='{vals['izz']}' ixy='{vals['ixy']}' ixz='{vals['ixz']}' iyz='{vals['iyz']}'/>"
            "</inertial></link>")
    path = _urdf(tmp_path, "badmass", [_link("base", 1.0), _joint("j1", "base", "bad"), link])
    with pytest.raises(ModelError) as e:
        load_model(path)
    assert "link 'bad'" in str(e.value) and all(w in str(e.value) for w in words), str(e.value)


# ------------------------------------------------------------------------------------------------
# singular dynamics, armature, locking
# ------------------------------------------------------------------------------------------------

TIP = ARM + [_joint("thumb", "l2", "tip", xyz="0.1 0 0.05"), _link("tip")]   # romeo's RThumb3Link: massless tip


@pytest.fixture(scope="module")
def massless_tip(tmp_path_factory):
    return _urdf(tmp_path_factory.mktemp("tip"), "tip", TIP)


def test_massless_tip_is_named_at_build_time(massless_tip):
    mb = symgen.build(massless_tip)
    assert mb.singular_hinges == ("thumb",)
    msg = [w for w in mb.warnings if "hinge 'thumb'" in w]
    assert msg and "'tip'" in msg[0] and "armature" in msg[0] and "lock" in msg[0]
    q = mb.neutral_q()
    with pytest.raises(np.linalg.LinAlgError, match="hinge 'thumb'.*armature"):
        mb.forward_dynamics(q, np.zeros(mb.nu), np.zeros(mb.nu))


def test_configuration_singularity_warns_at_every_build(tmp_path):
    """Pinocchio answers a unit torque at the neutral configuration with accelerations above 1e12; the build
    warns, naming the yaw hinge and where, every time (a cache hit included), and a well-conditioned arm does
    not warn."""
    path = tmp_path / "neck.urdf"
    path.write_text(NECK)
    pm = pin.buildModelFromUrdf(str(path))
    pd = pm.createData()
    q0 = pin.neutral(pm)
    with np.errstate(all="ignore"):
        acc = pin.aba(pm, pd, q0, np.zeros(pm.nv), np.array([1.0, 0.0]))
    assert not np.all(np.abs(acc) < 1e12)                   # huge or not finite: ill-conditioned in Pinocchio
    for _ in range(2):                                       # the second build is a cache hit
        mb = symgen.build(str(path))
        assert mb.ill_conditioned_hinges == ("neck_yaw",) and mb.singular_hinges == ()
        msg = [w for w in mb.warnings if "hinge 'neck_yaw'" in w]
        assert msg and "neutral configuration" in msg[0] and "armature" in msg[0] and "'head'" in msg[0]
    q = mb.neutral_q() + np.array([0.0, 0.4])               # off the singular configuration: well defined
    pq = q.copy()
    assert_close(mb.forward_dynamics(q, np.zeros(2), np.array([1.0, 0.0])),
                 pin.aba(pm, pd, pq, np.zeros(2), np.array([1.0, 0.0])), TOL, "away from it")
    arm = symgen.build(_urdf(tmp_path, "arm", ARM))
    assert arm.ill_conditioned_hinges == () and not [w for w in arm.warnings if "singular to working" in w]


#: rotor inertia on the massless tip's hinge (without it its D is singular) and on the arm's two joints
TIP_ARMATURE = {"thumb": 0.002, "j1": 0.05, "j2": [0.01]}


@pytest.mark.parametrize("floating", [False, True], ids=["fixed", "floating"])
def test_armature_matches_pinocchio(massless_tip, floating):
    armature = TIP_ARMATURE
    mb = symgen.build(massless_tip, floating_base=floating, armature=armature)
    assert not mb.singular_hinges
    pm = pin.buildModelFromUrdf(massless_tip, pin.JointModelFreeFlyer()) if floating else \
        pin.buildModelFromUrdf(massless_tip)
    set_armature(pm, armature)
    err = compare_with_pinocchio(mb, pm, floating, np.random.default_rng(5), 6)
    assert max(err.values()) <= TOL, err


def test_armature_in_the_per_kind_form_matches_pinocchio(massless_tip):
    """Large models take the per-kind form (C loops over the bodies) instead of straight-line code: armature
    there too."""
    armature = {"thumb": 0.002, "j1": 0.05}
    mb = symgen.build(massless_tip, armature=armature, form="per_kind")
    pm = pin.buildModelFromUrdf(massless_tip)
    set_armature(pm, armature)
    err = compare_with_pinocchio(mb, pm, False, np.random.default_rng(6), 4, frames=False)
    assert max(err.values()) <= TOL, err


def test_armature_in_a_model_file_and_errors(tmp_path):
    doc = ("name: arm\nbodies:\n"
           "  - {name: a, parent: newtonian, mass: 1.0, inertia: [0.1, 0.1, 0.1, 0, 0, 0], com: [0.3, 0, 0],\n"
           "     hinge: {type: UJOINT, armature: [0.1, 0.2]}}\n")
    p = tmp_path / "arm.yaml"
    p.write_text(doc)
    mb = symgen.build(str(p))
    q = np.array([0.3, -0.4])
    M0 = symgen.build(str(p), armature={"a": 0.0}).mass_matrix(q)     # the override replaces the file's
    assert_close(mb.mass_matrix(q) - M0, np.diag([0.1, 0.2]), 1e-14, "M + diag(armature)")
    for bad, words in [({"nope": 1.0}, ["no hinge named 'nope'"]), ({"a": -1.0}, [">= 0"]),
                       ({"a": [1.0]}, ["2 numbers"])]:
        with pytest.raises(ModelError) as e:
            load_model(str(p), armature=bad)
        assert all(w in str(e.value) for w in words), str(e.value)


def test_locking_a_hinge_removes_its_rows_and_columns(massless_tip):
    """The full model is test_armature_matches_pinocchio's (a cache hit); the locked one keeps the armature of the
    joints that still move, so its M is the full M without the thumb's row and column."""
    full = symgen.build(massless_tip, armature=TIP_ARMATURE)
    locked = symgen.build(massless_tip, lock=["thumb"], armature={h: a for h, a in TIP_ARMATURE.items() if h != "thumb"})
    assert not locked.singular_hinges and locked.nu == full.nu - 1
    keep = [i for i in range(full.nu) if i != full.u_slice("thumb").start]
    rng = np.random.default_rng(2)
    for _ in range(3):
        ql = rng.uniform(-2, 2, locked.nq)
        qf = np.insert(ql, full.q_slice("thumb").start, 0.0)
        assert_close(locked.mass_matrix(ql), full.mass_matrix(qf)[np.ix_(keep, keep)], 1e-12, "M")
        assert_close(locked.frame_pose(ql, "tip"), full.frame_pose(qf, "tip"), 1e-12, "pose")


# ------------------------------------------------------------------------------------------------
# every generated file compiles: degenerate models (the build's strict -Werror check is part of the build)
# ------------------------------------------------------------------------------------------------

def _yaml(tmp_path, name, bodies):
    p = tmp_path / f"{name}.yaml"
    p.write_text(f"name: {name}\nbodies:\n" + "".join(f"  - {b}\n" for b in bodies))
    return str(p)


def test_one_floating_body_follows_euler_equations(tmp_path):
    J = np.diag([0.1, 0.2, 0.3])
    path = _yaml(tmp_path, "one_body", ["{name: b, parent: newtonian, mass: 2.0, inertia: [0.1, 0.2, 0.3, 0, 0, 0], "
                                        "hinge: {type: FULL6DOF}}"])
    mb = symgen.build(path)
    rng = np.random.default_rng(0)
    for _ in range(5):
        q = mb.sanitize(rng.normal(size=7))
        u = rng.normal(size=6)
        w = u[3:]
        ud = mb.forward_dynamics(q, u, np.zeros(6))
        # U = [p_dot in newtonian; w in the body]: free fall and torque-free Euler equations
        assert_close(ud[:3], [0, 0, -9.81], 1e-12, "free fall")
        assert_close(ud[3:], np.linalg.solve(J, -np.cross(w, J @ w)), 1e-12, "Euler")


def test_all_locked_model(tmp_path):
    path = _yaml(tmp_path, "all_locked", [
        "{name: a, parent: newtonian, mass: 2.0, inertia: [0.1, 0.2, 0.3, 0, 0, 0], hinge: {type: LOCKED}, "
        "onode: {xyz: [0, 0, 1], rpy: [0, 0, 1.5707963267948966]}}",
        "{name: b, parent: a, mass: 1.0, inertia: [0.1, 0.2, 0.3, 0, 0, 0], hinge: {type: LOCKED}, "
        "onode: {xyz: [1, 0, 0]}}"])
    mb = symgen.build(path)
    assert (mb.nq, mb.nu) == (0, 0)
    q = mb.neutral_q()
    assert_close(mb.frame_pose(q, "b")[:3, 3], [0, 1, 1], 1e-15, "pose")     # quarter turn about z, then x
    assert mb.forward_dynamics(q, q, q).shape == (0,) and mb.mass_matrix(q).shape == (0, 0)
    assert mb.jacobian(q, "b").shape == (6, 0) and mb.forward_dynamics(np.zeros((4, 0)), np.zeros((4, 0)),
                                                                       np.zeros((4, 0))).shape == (4, 0)


def test_zero_dof_root_hinge_then_moving_hinges(tmp_path):
    """A LOCKED root (a fixed-base URDF) with a PIN and a BALL below it, and a second root: vs Pinocchio's
    rnea through the URDF twin is covered elsewhere; here the closed form of a pendulum."""
    path = _yaml(tmp_path, "locked_root", [
        "{name: a, parent: newtonian, mass: 2.0, inertia: [0.1, 0.2, 0.3, 0, 0, 0], hinge: {type: LOCKED}}",
        "{name: b, parent: a, mass: 1.0, com: [0, 0, -0.5], inertia: [0, 0, 0, 0, 0, 0], "
        "hinge: {type: PIN, axis: [0, 1, 0]}, onode: {xyz: [1, 0, 0]}}"])
    mb = symgen.build(path)
    for th in (0.0, 0.4, -1.2):
        ud = mb.forward_dynamics(np.array([th]), np.zeros(1), np.zeros(1))
        assert_close(ud, [-9.81 / 0.5 * np.sin(th)], 1e-12, "point pendulum")


# ------------------------------------------------------------------------------------------------
# the URDF reader accepts what urdfdom (Pinocchio) accepts
# ------------------------------------------------------------------------------------------------

BODY = "".join(ARM)
ODD = {
    "whitespace before the declaration": ("\n  \n<?xml version='1.0'?>", BODY),
    "declaration with an encoding": ("<?xml version='1.0' encoding='utf-8'?>\n<!-- generated -->", BODY),
    "unknown tags and attributes": ("", BODY.replace("<link name='l1'>", "<link name='l1' color='red'><foo/>")
                                    + "<sensor name='s'/>"),
    "package:// meshes": ("", BODY.replace("</link>", "<visual><geometry><mesh filename='package://robot/m.dae'/>"
                                           "</geometry></visual></link>", 1)),
    "joint without axis": ("", BODY.replace("<axis xyz='0 1 0'/>", "")),
    "continuous, unaligned axis": ("", BODY.replace("type='revolute'", "type='continuous'")
                                   .replace("<axis xyz='0 1 0'/>", "<axis xyz='0.6 0 0.8'/>")),
}


@pytest.mark.parametrize("case", list(ODD))
def test_urdf_reader_accepts_what_urdfdom_accepts(tmp_path, case):
    head, body = ODD[case]
    path = _urdf(tmp_path, "odd", [body], head)
    pm = pin.buildModelFromUrdf(path)               # Pinocchio loads it ...
    mb = symgen.build(path)                         # ... so do we, and we agree
    err = compare_with_pinocchio(mb, pm, False, np.random.default_rng(0), 3)
    assert max(err.values()) <= TOL, (case, err)
    if "unknown" in case:
        assert any("<sensor>" in w for w in mb.warnings) and any("color" in w for w in mb.warnings)


def test_comment_before_the_declaration_is_read_with_a_warning(tmp_path):
    """TinyXML2 (urdfdom) refuses a comment before the XML declaration; the file is usable, so symgen reads it
    and says so (warn, don't refuse), and agrees with Pinocchio on the file without the comment."""
    odd = _urdf(tmp_path, "odd", [BODY], "<!-- generated --><?xml version='1.0'?>")
    plain = _urdf(tmp_path, "plain", [BODY], "<?xml version='1.0'?>")
    with pytest.raises(ValueError):
        pin.buildModelFromUrdf(odd)
    mb = symgen.build(odd)
    assert any("declaration" in w for w in mb.warnings)
    err = compare_with_pinocchio(mb, pin.buildModelFromUrdf(plain), False, np.random.default_rng(0), 3)
    assert max(err.values()) <= TOL, err


@pytest.mark.parametrize("text,words", [
    ("<robot>" + BODY + "</robot>", "no 'name'"),
    ("<robot name='r'>" + BODY.replace("<limit lower='-3' upper='3' effort='10' velocity='5'/>", "", 1) + "</robot>",
     "joint 'j1'.*needs <limit"),
])
def test_urdf_reader_refuses_what_urdfdom_refuses(tmp_path, text, words):
    path = tmp_path / "refused.urdf"
    path.write_text(text)
    with pytest.raises(ValueError):
        pin.buildModelFromUrdf(str(path))
    with pytest.raises(ModelError, match=words):
        load_model(str(path))


# ------------------------------------------------------------------------------------------------
# hinge parameters that place frames (ij_q) reach the bodies
# ------------------------------------------------------------------------------------------------

def test_hooke_ij_q_places_the_nodes(tmp_path):
    """HOOKE with ``ij_q`` in a model file: the outboard body sits at ``R(ij_q)`` in the reference
    configuration, and its Y axis stays perpendicular to the inboard X axis in every configuration."""
    from scipy.spatial.transform import Rotation

    rot = Rotation.from_euler("XY", [0.7, 0.5])       # R_ij e_y = Rx e_y is perpendicular to e_x, as HOOKE needs
    ij = rot.as_quat()                                # scipy's order is (x, y, z, w), as symgen's
    path = _yaml(tmp_path, "hooke", [
        "{name: a, parent: newtonian, mass: 1.0, inertia: [0.1, 0.1, 0.1, 0, 0, 0], hinge: {type: LOCKED}}",
        "{name: b, parent: a, mass: 1.0, inertia: [0.1, 0.1, 0.1, 0, 0, 0], "
        f"hinge: {{type: HOOKE, ij_q: {ij.tolist()}}}}}"])
    mb = symgen.build(path)
    f = mb.f2f("a", "b")
    assert_close(f.rel_transform(np.zeros(2))[:3, :3], rot.as_matrix(), 1e-12, "reference orientation")
    rng = np.random.default_rng(0)
    for _ in range(5):
        R = f.rel_transform(rng.uniform(-2, 2, 2))[:3, :3]
        assert abs(R[0, 1]) < 1e-12, R          # e_x . (outboard Y in inboard axes) = 0
