"""Random models for tests: trees mixing every hinge type, and random URDF trees for Pinocchio."""
from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path

import numpy as np

import symgen


def _inertia(rng, m):
    """A physically valid inertia: principal moments from a random box, random orientation."""
    a, b, c = rng.uniform(0.05, 0.5, 3)
    moments = m / 12 * np.array([b * b + c * c, a * a + c * c, a * a + b * b])
    Q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    return (Q @ np.diag(moments) @ Q.T).tolist()


def _pose(rng, scale=0.4):
    return {"xyz": rng.uniform(-scale, scale, 3).tolist(), "rpy": rng.uniform(-np.pi, np.pi, 3).tolist()}


#: random_tree_dict(7) rounded, with CUSTOM (SPHERICAL, LINEAR): the bundled example with every hinge type in one
#: tree (60 U), which test_dynamics, test_lanes, test_per_kind_form, test_load_checks and test_model_kinematics build
#: (one compile per form and session)
ALL_HINGES = Path(__file__).resolve().parents[1] / "examples" / "models" / "all_hinges.yaml"

#: the random trees of the identity tests: every hinge type in one tree (all_hinges) and in four small ones, two
#: with armature on every hinge that moves (:func:`hinge_group_tree`; test_derivatives and test_centroidal build
#: the same four).  Small trees compile in a fraction of a big one's time (a C compiler's time grows faster than
#: a function's length): they used to be two more 60-U trees (seeds 3 and 7 with armature), 250 s of the suite
COVERAGE_TREES = ("all_hinges", "hinges1", "hinges3")


def coverage_tree(name: str):
    """The model of a :data:`COVERAGE_TREES` name (or ``hinges0`` .. ``hinges3``), for ``build_model``."""
    from symgen.model import load_model

    return load_model(ALL_HINGES) if name == "all_hinges" else hinge_group_tree(int(name[len("hinges"):]))


#: the (name, form) pairs whose derivatives test_derivatives takes: every file builds them with their derivatives,
#: so that each is one module per session.  A model built without them compiles a second module on its first
#: derivative call, which at -O0 (one compiler run per file, symgen.pipeline.compile.one_run_checks) compiles the
#: value functions again: 5-7 s for each small tree, 24 s for all_hinges in the per-kind form.
#: (all_hinges in the per-kind form is not among them: its module with derivatives compiles in 38 s, during which a
#: second file waiting for it idles one of the two cores; its value module, 17 s, and that one compile side by side.)
WITH_DERIVATIVES = {(f"hinges{i}", "auto") for i in range(4)} | {("arm7", "per_kind")}


def with_derivatives(name: str, form: str = "auto") -> bool:
    """Whether the tests build model ``name`` (a coverage tree, or an example's stem) in ``form`` with its
    derivatives (:data:`WITH_DERIVATIVES`)."""
    return (name, form) in WITH_DERIVATIVES


def build_coverage_tree(name: str, form: str = "auto"):
    """The built model of a :data:`COVERAGE_TREES` name (all_hinges as every file builds the example: by its path),
    with its derivatives where test_derivatives takes them (:data:`WITH_DERIVATIVES`)."""
    from symgen.pipeline.package import build_model

    d = with_derivatives(name, form)
    if name == "all_hinges":
        return symgen.build(ALL_HINGES, form=form, derivatives=d)
    return build_model(coverage_tree(name), form=form, derivatives=d)


def random_tree_dict(seed: int, types=None, name=None) -> dict:
    """A model document whose bodies use each hinge type once (random order, random parents, random
    onode/pnode poses and body frames)."""
    rng = np.random.default_rng(seed)
    types = list(types or symgen.HINGE_TYPES)
    rng.shuffle(types)
    bodies, names = [], ["newtonian"]
    for i, t in enumerate(types):
        m = float(rng.uniform(0.5, 3.0))
        hinge = {"type": t, "name": f"h{i}_{t.lower()}"}
        if t == "PIN":
            v = rng.normal(size=3)
            hinge["axis"] = (v / np.linalg.norm(v)).tolist()
        if t == "CUSTOM":
            hinge["subhinges"] = ["SPHERICAL", "LINEAR"]
        bodies.append({
            "name": f"b{i}", "parent": names[int(rng.integers(0, len(names)))], "mass": m,
            "com": rng.uniform(-0.2, 0.2, 3).tolist(), "inertia": _inertia(rng, m), "hinge": hinge,
            "onode": _pose(rng), "pnode": _pose(rng, 0.2),
            "frames": [{"name": f"f{i}", **_pose(rng)}],
        })
        names.append(f"b{i}")
    return {"name": name or f"tree{seed}", "gravity": [0.0, 0.0, -9.81], "bodies": bodies}


def random_urdf(seed: int, n_links: int = 9) -> str:
    """A random URDF tree with revolute, continuous, prismatic and fixed joints (valid inertias)."""
    rng = np.random.default_rng(seed)
    kinds = ["revolute", "continuous", "prismatic", "fixed"]
    links, joints = [], []
    for i in range(n_links):
        m = float(rng.uniform(0.3, 4.0))
        J = np.array(_inertia(rng, m))
        c = rng.uniform(-0.1, 0.1, 3)
        rpy = rng.uniform(-1, 1, 3)
        links.append(f'''  <link name="l{i}">
    <inertial>
      <origin xyz="{c[0]} {c[1]} {c[2]}" rpy="{rpy[0]} {rpy[1]} {rpy[2]}"/>
      <mass value="{m}"/>
      <inertia ixx="{J[0, 0]}" ixy="{J[0, 1]}" ixz="{J[0, 2]}" iyy="{J[1, 1]}" iyz="{J[1, 2]}" izz="{J[2, 2]}"/>
    </inertial>
  </link>''')
        if i == 0:
            continue
        kind = kinds[i % 4] if i < 5 else kinds[int(rng.integers(0, 4))]
        parent = int(rng.integers(0, i))
        xyz, orpy = rng.uniform(-0.3, 0.3, 3), rng.uniform(-np.pi, np.pi, 3)
        ax = rng.normal(size=3)
        ax /= np.linalg.norm(ax)
        axis = f'\n    <axis xyz="{ax[0]} {ax[1]} {ax[2]}"/>' if kind != "fixed" else ""
        limit = '\n    <limit lower="-3" upper="3" effort="10" velocity="5"/>' if kind in ("revolute", "prismatic") else ""
        joints.append(f'''  <joint name="j{i}" type="{kind}">
    <parent link="l{parent}"/>
    <child link="l{i}"/>
    <origin xyz="{xyz[0]} {xyz[1]} {xyz[2]}" rpy="{orpy[0]} {orpy[1]} {orpy[2]}"/>{axis}{limit}
  </joint>''')
    return f'<?xml version="1.0"?>\n<robot name="rand{seed}">\n' + "\n".join(links + joints) + "\n</robot>\n"


#: iCub's neck in miniature: a yaw joint (z), then a pitch joint (y) carrying a point mass 0.1 above it; at zero
#: pitch the mass sits on the yaw axis, so nothing outboard of the yaw joint has inertia about it there (and only
#: there: the structural check, which asks for a singularity at every configuration, does not fire)
NECK = ("<robot name='neck'><link name='torso'><inertial><mass value='5'/>"
        "<inertia ixx='0.1' iyy='0.1' izz='0.1' ixy='0' ixz='0' iyz='0'/></inertial></link>"
        "<joint name='neck_yaw' type='revolute'><parent link='torso'/><child link='neck'/><origin xyz='0 0 0.3'/>"
        "<axis xyz='0 0 1'/><limit lower='-1' upper='1' effort='1' velocity='1'/></joint><link name='neck'/>"
        "<joint name='neck_pitch' type='revolute'><parent link='neck'/><child link='head'/><origin xyz='0 0 0'/>"
        "<axis xyz='0 1 0'/><limit lower='-1' upper='1' effort='1' velocity='1'/></joint>"
        "<link name='head'><inertial><origin xyz='0 0 0.1'/><mass value='1'/>"
        "<inertia ixx='0' iyy='0' izz='0' ixy='0' ixz='0' iyz='0'/></inertial></link></robot>")


#: every hinge type once, over four small random trees (the derivative functions of a tree compile in a time
#: that grows faster than its length: four trees of five bodies take a fraction of one of twenty)
HINGE_GROUPS = [symgen.HINGE_TYPES[i::4] for i in range(4)]


def hinge_group_tree(i):
    """Random tree i of HINGE_GROUPS[i]'s hinge types; trees 1 and 3 with armature on every moving hinge, CUSTOM
    as (LINEAR, PIN, LINEAR) (test_derivatives, test_centroidal and the :data:`COVERAGE_TREES` tests build the same
    models: one build each per session)."""
    from symgen.hinges import bind
    from symgen.model import model_from_dict

    d = random_tree_dict(40 + i, types=HINGE_GROUPS[i], name=f"dtree{i}")
    for k, b in enumerate(d["bodies"]):
        if b["hinge"]["type"] == "CUSTOM":        # all_hinges has (SPHERICAL, LINEAR)
            b["hinge"]["subhinges"] = ["LINEAR", "PIN", "LINEAR"]
        params = {key: v for key, v in b["hinge"].items() if key not in ("type", "name")}
        nu = bind(b["hinge"]["type"], **params).nu
        if nu and i % 2:
            b["hinge"]["armature"] = [0.01 * (1 + k)] * nu
    return model_from_dict(d, f"<derivative tree {i}>")


@contextmanager
def environment(name: str, value: str):
    """The environment variable ``name`` set to ``value`` inside the block, restored (or removed) after it."""
    old = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


#: a floating robot with static bodies of every sort (fixed joints: a leaf on the base, a chain of two on link1, a
#: force-torque link between link1 and link2, a tool on link2), whose dynamics run over the fused tree
#: (symgen.algorithms.soa.fuse_static): test_dynamics.py and test_derivatives.py build it
STATIC_URDF = """<robot name="fused">
  <link name="base"><inertial><origin xyz="0.01 0.02 -0.03" rpy="0.1 0.2 0.3"/><mass value="3.0"/>
    <inertia ixx="0.11" ixy="0.01" ixz="0.02" iyy="0.12" iyz="0.01" izz="0.13"/></inertial></link>
  <link name="imu"><inertial><origin xyz="0.05 0 0.02"/><mass value="0.2"/>
    <inertia ixx="0.001" ixy="0" ixz="0" iyy="0.002" iyz="0" izz="0.003"/></inertial></link>
  <link name="link1"><inertial><origin xyz="0 0.1 0.2" rpy="0.3 0 0.1"/><mass value="1.5"/>
    <inertia ixx="0.05" ixy="0.002" ixz="0" iyy="0.04" iyz="0.001" izz="0.03"/></inertial></link>
  <link name="sensor"><inertial><origin xyz="0.02 0.01 0.03"/><mass value="0.4"/>
    <inertia ixx="0.004" ixy="0.0005" ixz="0" iyy="0.005" iyz="0" izz="0.006"/></inertial></link>
  <link name="sensor_tip"><inertial><origin xyz="0 0 0.05" rpy="0 0.4 0"/><mass value="0.3"/>
    <inertia ixx="0.002" ixy="0" ixz="0.0003" iyy="0.003" iyz="0" izz="0.001"/></inertial></link>
  <link name="link2"><inertial><origin xyz="0.1 0 0.1"/><mass value="1.0"/>
    <inertia ixx="0.02" ixy="0" ixz="0.001" iyy="0.03" iyz="0" izz="0.02"/></inertial></link>
  <link name="ft"><inertial><origin xyz="0.01 -0.02 0.03" rpy="0.2 0.1 0"/><mass value="0.6"/>
    <inertia ixx="0.006" ixy="0.0004" ixz="0" iyy="0.004" iyz="0.0001" izz="0.005"/></inertial></link>
  <link name="tool"><inertial><origin xyz="0 0.03 0.01"/><mass value="0.5"/>
    <inertia ixx="0.003" ixy="0" ixz="0" iyy="0.002" iyz="0.0002" izz="0.004"/></inertial></link>
  <joint name="imu_joint" type="fixed"><parent link="base"/><child link="imu"/>
    <origin xyz="0.1 -0.05 0.2" rpy="0.2 -0.1 0.5"/></joint>
  <joint name="j1" type="revolute"><parent link="base"/><child link="link1"/><origin xyz="0 0 0.3" rpy="0 0.2 0"/>
    <axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="10" velocity="5"/></joint>
  <joint name="sensor_joint" type="fixed"><parent link="link1"/><child link="sensor"/>
    <origin xyz="0.05 0.1 0.25" rpy="0.3 0.1 -0.2"/></joint>
  <joint name="sensor_tip_joint" type="fixed"><parent link="sensor"/><child link="sensor_tip"/>
    <origin xyz="0 0.02 0.07" rpy="-0.4 0 0.3"/></joint>
  <joint name="ft_joint" type="fixed"><parent link="link1"/><child link="ft"/>
    <origin xyz="0.03 0 0.3" rpy="0 0.3 0.2"/></joint>
  <joint name="j2" type="revolute"><parent link="ft"/><child link="link2"/><origin xyz="0 0.02 0.1" rpy="0.1 0 0.4"/>
    <axis xyz="1 0 0"/><limit lower="-3" upper="3" effort="10" velocity="5"/></joint>
  <joint name="tool_joint" type="fixed"><parent link="link2"/><child link="tool"/>
    <origin xyz="0.2 0 0.1" rpy="0 0 0.7"/></joint>
</robot>
"""
