"""MJCF (MuJoCo XML) through MuJoCo's own compiler: the file is compiled by the ``mujoco`` package (the optional
extra ``symgen[mjcf]``) and the symgen :class:`Model` is read from the compiled ``MjModel``, so default classes,
``compiler/@angle``, ``eulerseq``, inertia inferred from geoms (``fromto``, meshes, ``settotalmass``, ...),
``<frame>``, ``<include>`` and the rest are MuJoCo's own result.

Mapping (MuJoCo -> symgen):

* every body (id order, which is parent before child) is a body named like it (an unnamed one ``body<id>``);
  the world body is ``newtonian``; mass, ``body_ipos`` (CoM) and ``body_iquat``/``body_inertia`` (the inertia,
  turned into body axes) are the body's mass properties;
* a body's joints become its hinge, whose Q and U are the joints' ``qpos`` and ``qvel`` in MuJoCo's order
  (quaternions stored ``(x, y, z, w)``: :func:`quat_adr` lists where MuJoCo's ``(w, x, y, z)`` ones are):
  no joint -> LOCKED (welded bodies and mocap bodies, held at the model pose); ``free`` -> FULL6DOF (onode and
  pnode at the world origin and the body frame: Q = ``[x y z qx qy qz qw]``, U = qvel, linear velocity in world
  axes, angular in the body); one ``hinge`` -> PIN about ``jnt_axis``, turning about the anchor ``jnt_pos``
  (onode ``X_body * T(pos) * Rot(axis, -ref)``, pnode ``T(pos)``, so Q = qpos with ``ref`` included); one
  ``slide`` -> SLIDER (onode ``X_body * T(-ref axis)``); one ``ball`` -> BALL_QUAT about its anchor; several
  joints -> one compound hinge (SERIAL) with one subhinge per joint in MuJoCo's order, each about its own
  anchor and axis, with its ``ref`` (an anchor every rotating joint shares moves into the onode and pnode);
* ``dof_armature`` -> the hinge's armature; ``opt.gravity`` -> gravity (zero when the file disables gravity);
* sites and named geoms of the moving bodies become frames named like them (on the world body they are not
  frames and are listed in a warning); a name taken by a body gets the prefix ``site:`` / ``geom:``.

Not tree dynamics, listed in one warning (never silently dropped): contacts, tendons, actuators, joint limits,
damping, stiffness, friction loss, gravity compensation, fluid forces, equality constraints, flexes.  With
``loops_from_equality=True`` a ``connect`` equality between two bodies (neither the world body) becomes a BALL
cut joint and a ``weld`` a LOCKED one (closed chains, symgen's rigid loops: MuJoCo's are soft, solref/solimp);
``joint``, ``tendon`` and ``flex`` equalities stay in the warning.
"""
from __future__ import annotations

import dataclasses
import math
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

from ..diagnostics import Diagnostic, IgnoredElementWarning, InertiaWarning, ModelInputWarning, note, tag
from .inertia import model_err, validate_inertias
from .spec import NEWTONIAN, Body, Frame, LoopConstraint, Model, ModelError, Pose

#: MuJoCo's joint types (mjtJoint)
FREE, BALL, SLIDE, HINGE = 0, 1, 2, 3
MJCF_SUFFIXES = (".xml", ".mjcf")
EXTRA = "pip install 'symgen[mjcf]' (or: pip install mujoco)"


def root_tag(path) -> str:
    """The root element's tag of an XML file; ModelError (with the line and column) for malformed XML."""
    try:
        return ET.parse(str(path)).getroot().tag
    except ET.ParseError as e:
        raise ModelError(f"{path}: malformed XML: {e}; fix the file's syntax there") from None
    except OSError as e:
        raise ModelError(f"{path}: cannot read: {e}") from None


def compile_mjcf(path):
    """``mujoco.MjModel.from_xml_path(path)``, its refusal as one ModelError naming the file."""
    try:
        import mujoco
    except ImportError:
        raise ModelError(f"{path}: this is an MJCF file (root element <mujoco>); symgen reads it through MuJoCo's "
                         f"own compiler, which needs the mujoco package: {EXTRA}") from None
    try:
        return mujoco.MjModel.from_xml_path(str(path))
    except Exception as e:  # mujoco raises ValueError with the compiler's message
        text = " ".join(ln.strip() for ln in str(e).splitlines() if ln.strip())
        raise ModelError(f"{path}: MuJoCo refuses the file: {text}") from None


def load_mjcf(path, *, loops_from_equality: bool = False, balance_inertia: bool = False,
              accept_indefinite_inertia: bool = False) -> Model:
    """Compile an MJCF file with MuJoCo and read the symgen :class:`Model` from the result (module docstring)."""
    m = compile_mjcf(path)
    return model_from_mjmodel(m, source=str(path), name=Path(path).stem, loops_from_equality=loops_from_equality,
                              balance_inertia=balance_inertia, accept_indefinite_inertia=accept_indefinite_inertia)


def _quat_matrix(q_wxyz) -> np.ndarray:
    w, x, y, z = np.asarray(q_wxyz, float) / np.linalg.norm(q_wxyz)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def _rot(axis, angle) -> np.ndarray:
    a = np.asarray(axis, float)
    K = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    return np.eye(3) + math.sin(angle) * K + (1 - math.cos(angle)) * K @ K


def _T(R=None, p=None) -> np.ndarray:
    T = np.eye(4)
    if R is not None:
        T[:3, :3] = R
    if p is not None:
        T[:3, 3] = p
    return T


def _unit(v) -> tuple:
    v = np.asarray(v, float)
    return tuple(float(x) for x in v / np.linalg.norm(v))


def _names(m, kind: str, n: int) -> list:
    return [getattr(m, kind)(i).name for i in range(n)]


def quat_adr(m) -> list:
    """qpos addresses of the quaternions (MuJoCo ``(w, x, y, z)``; symgen ``(x, y, z, w)``)."""
    out = []
    for j in range(m.njnt):
        if m.jnt_type[j] == FREE:
            out.append(int(m.jnt_qposadr[j]) + 3)
        elif m.jnt_type[j] == BALL:
            out.append(int(m.jnt_qposadr[j]))
    return out


def _hinge_of(m, b: int, X0: np.ndarray, jnames: list, where: str):
    """(hinge type, params, onode, pnode) of body ``b`` from its joints (module docstring)."""
    adr, n = int(m.body_jntadr[b]), int(m.body_jntnum[b])
    js = list(range(adr, adr + n))
    if not js:
        return "LOCKED", (), Pose.from_matrix(X0), Pose()
    types = [int(m.jnt_type[j]) for j in js]
    if FREE in types:
        if n > 1 or m.body_parentid[b] != 0:
            raise ModelError(f"{where}: a free joint must be the only joint of a child of the world body")
        return "FULL6DOF", (), Pose(), Pose()
    pos = {j: np.array(m.jnt_pos[j], float) for j in js}
    ref = {j: float(m.qpos0[m.jnt_qposadr[j]]) for j in js if m.jnt_type[j] in (HINGE, SLIDE)}
    axis = {j: _unit(m.jnt_axis[j]) for j in js if m.jnt_type[j] in (HINGE, SLIDE)}
    if n == 1:
        j = js[0]
        if types[0] == HINGE:
            onode = X0 @ _T(p=pos[j]) @ _T(_rot(axis[j], -ref[j]))
            return "PIN", (("axis", axis[j]),), Pose.from_matrix(onode), Pose.from_matrix(_T(p=pos[j]))
        if types[0] == SLIDE:
            onode = X0 @ _T(p=-ref[j] * np.array(axis[j]))
            return "SLIDER", (("axis", axis[j]),), Pose.from_matrix(onode), Pose()
        return "BALL_QUAT", (), Pose.from_matrix(X0 @ _T(p=pos[j])), Pose.from_matrix(_T(p=pos[j]))
    # several joints: one compound hinge, one subhinge per joint in MuJoCo's order
    rotating = [j for j in js if m.jnt_type[j] in (HINGE, BALL)]
    common = None
    if rotating and all(np.array_equal(pos[j], pos[rotating[0]]) for j in rotating) and np.any(pos[rotating[0]]):
        common = pos[rotating[0]]
    joints = []
    for j in js:
        t = int(m.jnt_type[j])
        d = {"type": {HINGE: "PIN", SLIDE: "LINEAR", BALL: "SPHERICAL_QUAT"}[t], "name": jnames[j]}
        if t in (HINGE, SLIDE):
            d["axis"] = axis[j]
            if ref[j] != 0.0:
                d["ref"] = ref[j]
        if t in (HINGE, BALL) and common is None and np.any(pos[j]):
            d["anchor"] = tuple(float(x) for x in pos[j])
        joints.append(d)
    onode, pnode = (X0, np.eye(4)) if common is None else (X0 @ _T(p=common), _T(p=common))
    return "SERIAL", (("joints", tuple(joints)),), Pose.from_matrix(onode), Pose.from_matrix(pnode)


def model_from_mjmodel(m, source: str = "<MjModel>", name: str = "mjcf", *, loops_from_equality: bool = False,
                       balance_inertia: bool = False, accept_indefinite_inertia: bool = False) -> Model:
    """The symgen :class:`Model` of a compiled ``mujoco.MjModel`` (module docstring)."""
    import mujoco

    if m.nbody < 2:
        raise ModelError(f"{source}: the model has no body besides the world body")
    warnings: list = []
    bnames = _names(m, "body", m.nbody)
    jnames = _names(m, "joint", m.njnt)
    names = [NEWTONIAN]
    taken = {NEWTONIAN}
    for b in range(1, m.nbody):
        nm = bnames[b] or f"body{b}"
        if nm in taken:
            new = f"body{b}"
            warnings.append(Diagnostic(f"body {b} named {nm!r}: renamed {new!r} (the name is taken)", ModelInputWarning,
                                       ("body", nm), "renamed (the name is taken)", detail=f"body {b}: {new!r}"))
            nm = new
        taken.add(nm)
        names.append(nm)
    for j in range(m.njnt):
        if not jnames[j]:
            b = int(m.jnt_bodyid[j])
            jnames[j] = f"{names[b]}_joint{j - int(m.body_jntadr[b])}"
    hinge_names: set = set()
    bodies = []
    for b in range(1, m.nbody):
        where = f"{source}: body '{names[b]}'"
        X0 = _T(_quat_matrix(m.body_quat[b]), m.body_pos[b])
        htype, params, onode, pnode = _hinge_of(m, b, X0, jnames, where)
        adr, n = int(m.body_jntadr[b]), int(m.body_jntnum[b])
        if n == 0:
            hname = f"{names[b]}_weld"
        else:
            hname = "+".join(jnames[j] for j in range(adr, adr + n))
        while hname in hinge_names:
            hname += "_"
        hinge_names.add(hname)
        armature = ()
        if n:
            dofs = m.dof_armature[int(m.body_dofadr[b]):int(m.body_dofadr[b]) + int(m.body_dofnum[b])]
            if np.any(dofs):
                armature = tuple(float(x) for x in dofs)
        Ri = _quat_matrix(m.body_iquat[b])
        J = Ri @ np.diag(np.asarray(m.body_inertia[b], float)) @ Ri.T
        J = 0.5 * (J + J.T)
        parent = names[int(m.body_parentid[b])]
        bodies.append(Body(names[b], parent, float(m.body_mass[b]), tuple(float(x) for x in m.body_ipos[b]),
                           tuple(map(tuple, J.tolist())), hname, htype, params, onode, pnode, armature))

    # frames: sites and named geoms
    frames, world_frames = [], []
    for kind, count, bodyid, posa, quata in (("site", m.nsite, m.site_bodyid, m.site_pos, m.site_quat),
                                             ("geom", m.ngeom, m.geom_bodyid, m.geom_pos, m.geom_quat)):
        for i, nm in enumerate(_names(m, kind, count)):
            if not nm:
                continue
            b = int(bodyid[i])
            if b == 0:
                world_frames.append(nm)
                continue
            if nm in taken:
                new = f"{kind}:{nm}"
                warnings.append(Diagnostic(f"{kind} {nm!r}: frame named {new!r} (the name is taken)",
                                           ModelInputWarning, (kind, nm), "frame renamed (the name is taken)",
                                           detail=repr(new)))
                nm = new
            if nm in taken:
                continue
            taken.add(nm)
            frames.append(Frame(nm, names[b], Pose.from_matrix(_T(_quat_matrix(quata[i]), posa[i]))))

    disabled = int(m.opt.disableflags)
    gravity = (0.0, 0.0, 0.0) if disabled & mujoco.mjtDisableBit.mjDSBL_GRAVITY else \
        tuple(float(x) for x in m.opt.gravity)

    loops, used_eq = [], set()
    if loops_from_equality:
        loops, used_eq = _equality_loops(m, names, frames, taken)
    not_imported = _not_tree_dynamics(m, names, jnames, used_eq)
    if not_imported:
        warnings.append(note("not imported (not tree dynamics): " + "; ".join(not_imported), IgnoredElementWarning))
    if world_frames:
        warnings.append(note(f"sites and geoms on the world body are not frames: {_some(world_frames)}",
                             IgnoredElementWarning))
    model = Model(name, bodies, frames, loops, gravity, source, warnings,
                  mujoco={"nq": int(m.nq), "nv": int(m.nv), "quat_adr": quat_adr(m), "joints": _joint_slices(m, jnames)})
    model = validate_inertias(model, model_err(source, "body"), balance_inertia, accept_indefinite_inertia)
    return dataclasses.replace(model, warnings=tag(model.warnings, InertiaWarning))   # (validate_inertias's own)


def _joint_slices(m, jnames) -> dict:
    """``{joint name: [qpos start, qpos end, qvel start, qvel end]}``: where each MuJoCo joint's coordinates
    sit in Q and U (the same indices as qpos and qvel), so ``mb.q_slice(joint)`` works for a compound hinge's
    joints too."""
    nq = {FREE: 7, BALL: 4, SLIDE: 1, HINGE: 1}
    nv = {FREE: 6, BALL: 3, SLIDE: 1, HINGE: 1}
    out = {}
    for j in range(m.njnt):
        t, qa, da = int(m.jnt_type[j]), int(m.jnt_qposadr[j]), int(m.jnt_dofadr[j])
        out[jnames[j]] = [qa, qa + nq[t], da, da + nv[t]]
    return out


def _some(items, k: int = 6) -> str:
    items = list(items)
    return ", ".join(items[:k]) + (f" and {len(items) - k} more" if len(items) > k else "")


def _not_tree_dynamics(m, names, jnames, used_eq) -> list:
    """What the compiled model has that is not tree dynamics: one phrase each."""
    import mujoco

    out = []
    off = int(m.opt.disableflags)
    D = mujoco.mjtDisableBit
    collide = [i for i in range(m.ngeom) if m.geom_contype[i] or m.geom_conaffinity[i]]
    if collide and not off & D.mjDSBL_CONTACT:
        out.append(f"contacts ({len(collide)} colliding geoms)")
    if m.ntendon:
        out.append(f"{m.ntendon} tendons")
    if m.nu:
        out.append(f"{m.nu} actuators")
    lim = [jnames[j] for j in range(m.njnt) if m.jnt_limited[j]]
    if lim:
        out.append(f"joint limits ({_some(lim)})")
    for what, arr, per in (("damping", m.dof_damping, "dof"), ("friction loss", m.dof_frictionloss, "dof"),
                           ("stiffness", m.jnt_stiffness, "jnt")):
        idx = [i for i in range(len(arr)) if arr[i] != 0]
        if idx:
            js = list(dict.fromkeys(jnames[int(m.dof_jntid[i]) if per == "dof" else i] for i in idx))
            out.append(f"{what} ({_some(js)})")
    gc = [names[b] for b in range(1, m.nbody) if m.body_gravcomp[b] != 0]
    if gc:
        out.append(f"gravity compensation ({_some(gc)})")
    if m.opt.density or m.opt.viscosity or np.any(m.opt.wind):
        out.append("fluid forces (opt density, viscosity, wind)")
    eq = [i for i in range(m.neq) if i not in used_eq]
    if eq:
        kinds = {0: "connect", 1: "weld", 2: "joint", 3: "tendon", 4: "flex"}
        out.append(f"{len(eq)} equality constraints ("
                   + _some(f"{kinds.get(int(m.eq_type[i]), 'other')} {m.equality(i).name or i}" for i in eq) + ")")
    mocap = [names[b] for b in range(1, m.nbody) if m.body_mocapid[b] >= 0]
    if mocap:
        out.append(f"mocap bodies, held at the model pose (LOCKED): {_some(mocap)}")
    if getattr(m, "nflex", 0):
        out.append(f"{m.nflex} flexes")
    return out


def _equality_loops(m, names, frames, taken):
    """``connect`` and ``weld`` equalities between two bodies (neither the world body) -> BALL and LOCKED cut joints
    (``loops_from_equality``).  connect: from a frame on body1 at its anchor ``eq_data[0:3]`` to a frame on body2
    at ``eq_data[3:6]`` (the same point in the reference pose), both with body axes.  weld: from the frame
    ``(relpose quat eq_data[6:10], relpose pos eq_data[3:6])`` on body1 to the frame ``(I, anchor eq_data[0:3])``
    on body2 (MuJoCo's weld holds these two together; its ``torquescale`` only weighs its soft rows).  Frames are
    named ``<equality>:a`` and ``:b``.  Other equalities stay in the warning."""
    loops, used = [], set()
    for i in range(m.neq):
        t = int(m.eq_type[i])
        if t not in (0, 1) or int(m.eq_objtype[i]) != 1:   # connect / weld between bodies (mjOBJ_BODY)
            continue
        b1, b2 = int(m.eq_obj1id[i]), int(m.eq_obj2id[i])
        if b1 == 0 or b2 == 0:
            continue
        data = np.asarray(m.eq_data[i], float)
        nm = m.equality(i).name or f"equality{i}"
        if t == 0:
            poses, htype = ((b1, _T(p=data[0:3])), (b2, _T(p=data[3:6]))), "BALL"
        else:
            poses, htype = ((b1, _T(_quat_matrix(data[6:10]), data[3:6])), (b2, _T(p=data[0:3]))), "LOCKED"
        fr = []
        for (b, X), side in zip(poses, "ab"):
            fname = f"{nm}:{side}"
            while fname in taken:
                fname += "_"
            taken.add(fname)
            frames.append(Frame(fname, names[b], Pose.from_matrix(X)))
            fr.append(fname)
        loops.append(LoopConstraint(nm, fr[0], fr[1], htype))
        used.add(i)
    return loops, used
