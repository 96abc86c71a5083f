"""YAML / JSON model files: loading and validation.

Format (keys not listed are errors)::

    name: spacecraft              # optional, default: file stem
    gravity: [0, 0, -9.81]        # optional
    bodies:                       # any order; parents are resolved by name
      - name: bus
        parent: newtonian
        mass: 1200.0
        com: [0, 0, 0]            # optional, default 0
        inertia: [[...], [...], [...]]   # about the CoM, body axes; or [Ixx, Iyy, Izz, Ixy, Ixz, Iyz]
        hinge: {type: FULL6DOF, name: bus_joint, ...params of symgen.hinge}   # name defaults to the body
        onode: {xyz: [0, 0, 0], rpy: [0, 0, 0]}   # or quat: [x, y, z, w]; on the parent; optional
        pnode: {xyz: [0, 0, 0]}                     # on this body; optional
        frames:                                     # optional named body-fixed frames
          - {name: star_tracker, xyz: [0.5, 0, 1], rpy: [0, 0, 0]}
        flex:                                       # optional: a flexible body (assumed modes, lumped nodes)
          nodes: [{name: tip, pos: [2, 0, 0], mass: 0.5}]          # body frame, undeformed; each node is a frame
          modes: [{frequency: 1.2, damping: 0.005, shape: {tip: [0, 0, 1]}}]   # Hz, ratio, node translations
    frames:                       # optional frames fixed on the newtonian (ground anchors for loops)
      - {name: anchor, xyz: [1, 0, 0], rpy: [0, 0, 0]}
    loops:                        # optional cut joints (closed chains): the hinge runs from the source frame
      - {name: closure, source: frameA, target: frameB, hinge: BALL}   # or hinge: {type: PIN, axis: [0, 0, 1]}
      - {name: grounded, source: anchor, target: frameC, hinge: PIN}   # newtonian or a ground frame as a node
"""
from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np

from ..diagnostics import Diagnostic, InertiaWarning, ModelInputWarning, NonOrthogonalModesWarning, emit, tag
from .inertia import check_mass_fields, model_err, validate_inertias
from .spec import NEWTONIAN, Body, Flex, FlexMode, FlexNode, Frame, LoopConstraint, Model, ModelError, Pose, rpy_matrix
from .mjcf import MJCF_SUFFIXES, load_mjcf, root_tag
from .urdf import load_urdf
from .validate import Ctx, as_floats, check_keys, check_name, check_number, check_vector

TOP_KEYS = {"name", "gravity", "bodies", "frames", "loops"}
BODY_KEYS = {"name", "parent", "mass", "com", "inertia", "hinge", "onode", "pnode", "frames", "flex"}
FLEX_KEYS = {"nodes", "modes"}
NODE_KEYS = {"name", "pos", "mass"}
MODE_KEYS = {"frequency", "damping", "shape"}
POSE_KEYS = {"xyz", "rpy", "quat"}
FRAME_KEYS = {"name", "xyz", "rpy", "quat"}
LOOP_KEYS = {"name", "source", "target", "hinge"}


def parse_pose(ctx, where, d) -> Pose:
    if d is None:
        return Pose()
    check_keys(ctx, where, d, POSE_KEYS)
    return _pose_fields(ctx, where, d)


def _frame(ctx, where: str, f, body: str, names: set) -> Frame:
    """One entry of a ``frames:`` list (on a body, or on the newtonian at the top level); its name must be new."""
    check_keys(ctx, where, f, FRAME_KEYS, required=("name",))
    name = check_name(ctx, where, f["name"])
    if name in names:
        raise ctx.err(where, f"duplicate frame name '{name}'")
    names.add(name)
    return Frame(name, body, _pose_fields(ctx, where, f))


def _flex(ctx, where: str, d, frame_names: set, warnings: list, body: str) -> Flex:
    """A body's ``flex:`` field: its lumped-mass nodes (each a frame, so each name must be new) and its modes
    (translations of the nodes per unit modal coordinate; a node a mode leaves out does not move in it)."""
    where = f"{where}: field 'flex'"
    check_keys(ctx, where, d, FLEX_KEYS, required=("nodes",))
    if not isinstance(d["nodes"], list) or not d["nodes"]:
        raise ctx.err(where, "field 'nodes' must be a non-empty list of {name, pos, mass}")
    nodes = []
    for j, n in enumerate(d["nodes"]):
        w = f"{where}: nodes[{j}]"
        check_keys(ctx, w, n, NODE_KEYS, required=("name", "pos", "mass"))
        name = check_name(ctx, w, n["name"])
        if name in frame_names:
            raise ctx.err(w, f"duplicate frame name '{name}' (a node is a frame)")
        frame_names.add(name)
        m = check_number(ctx, w, "mass", n["mass"])
        if m < 0:
            raise ctx.err(w, f"field 'mass' must not be negative, got {m}")
        nodes.append(FlexNode(name, tuple(check_vector(ctx, w, "pos", n["pos"], 3).tolist()), float(m)))
    raw = d.get("modes", []) or []
    if not isinstance(raw, list):
        raise ctx.err(where, "field 'modes' must be a list of {frequency, damping, shape}")
    index, modes = {n.name: i for i, n in enumerate(nodes)}, []
    for k, md in enumerate(raw):
        w = f"{where}: modes[{k}]"
        check_keys(ctx, w, md, MODE_KEYS, required=("frequency", "shape"))
        f = check_number(ctx, w, "frequency", md["frequency"])
        z = check_number(ctx, w, "damping", md.get("damping", 0.0))
        if not f > 0 or z < 0:
            raise ctx.err(w, f"frequency must be positive (Hz) and damping (a ratio) not negative, got {f}, {z}")
        if not isinstance(md["shape"], dict) or not md["shape"]:
            raise ctx.err(w, "field 'shape' must map node names to their translations [x, y, z] (body axes)")
        shape = [(0.0, 0.0, 0.0)] * len(nodes)
        for node, v in md["shape"].items():
            if node not in index:
                raise ctx.err(w, f"field 'shape': unknown node {node!r} (nodes: {', '.join(index)})")
            if isinstance(v, (list, tuple)) and len(v) == 6:
                raise ctx.err(w, f"field 'shape': node '{node}' has 6 numbers; rotational mode shapes are not "
                                 "supported (the nodes are particles): give its translation [x, y, z]")
            shape[index[node]] = tuple(check_vector(ctx, w, f"shape: {node}", v, 3).tolist())
        modes.append(FlexMode(float(f), float(z), tuple(shape)))
    flex = Flex(tuple(nodes), tuple(modes))
    mk = [flex.modal_mass(k) for k in range(len(modes))]
    for k, m in enumerate(mk):
        if not m > 0:
            raise ctx.err(f"{where}: modes[{k}]", "the mode moves no node mass (modal mass 0): it has no dynamics")
    ev = np.linalg.eigvalsh(np.array(flex.modal_mass_matrix())) if modes else np.ones(1)
    if ev[0] <= 1e-12 * ev[-1]:
        raise ctx.err(where, "the modes are linearly dependent over the node masses (their modal mass matrix "
                             f"sum m_i Phi_i^T Phi_i is singular: eigenvalues {ev[0]:.3g} .. {ev[-1]:.3g}): remove "
                             "the redundant mode")
    for k in range(len(modes)):
        for j in range(k):
            mkj = sum(n.mass * float(np.dot(a, b)) for n, a, b in zip(nodes, modes[k].shape, modes[j].shape))
            if abs(mkj) > 1e-6 * math.sqrt(mk[k] * mk[j]):
                issue = ("modes not mass-orthogonal over the nodes; the dynamics use the full modal mass matrix, but "
                         "each mode's stiffness is (2 pi f)^2 m_k, so the frequencies are not exactly the ones given")
                warnings.append(Diagnostic(
                    f"{where}: modes {j} and {k} are not mass-orthogonal over the nodes (m_jk = {mkj:.3g}); the "
                    "dynamics use the full modal mass matrix, but each mode's stiffness is (2 pi f)^2 m_k, so the "
                    "frequencies are not exactly the ones given", NonOrthogonalModesWarning, ("body", body), issue,
                    detail=f"modes {j} and {k}, m_jk = {mkj:.3g}"))
    return flex


def lump_nodes(m, com, J, nodes) -> tuple:
    """(mass, com, inertia about the com) of a rigid body (m, com, J about its com) with point masses added
    at the nodes' positions (parallel-axis theorem)."""
    com, J = np.asarray(com, float), np.asarray(J, float)
    pts = [(float(n.mass), np.asarray(n.pos, float)) for n in nodes]
    mt = float(m) + sum(mi for mi, _ in pts)
    c = (m * com + sum(mi * p for mi, p in pts)) / mt if mt > 0 else com
    def shift(mi, p):                       # a mass at p seen about c: mi (|r|^2 1 - r r^T), r = p - c
        r = p - c
        return mi * (np.dot(r, r) * np.eye(3) - np.outer(r, r))
    return mt, c, J + shift(m, com) + sum((shift(mi, p) for mi, p in pts), np.zeros((3, 3)))


def _pose_fields(ctx, where, d) -> Pose:
    xyz = check_vector(ctx, where, "xyz", d.get("xyz", [0, 0, 0]), 3)
    if "rpy" in d and "quat" in d:
        raise ctx.err(where, "give either 'rpy' or 'quat', not both")
    if "quat" in d:
        q = check_vector(ctx, where, "quat", d["quat"], 4)
        if abs(np.linalg.norm(q) - 1) > 1e-6:
            raise ctx.err(where, f"field 'quat' must be a unit quaternion (x, y, z, w), |q| = {np.linalg.norm(q):.6g}")
        q = q / np.linalg.norm(q)
        from ..numeric import np_quat_to_matrix

        R = np_quat_to_matrix(q)
    else:
        R = rpy_matrix(check_vector(ctx, where, "rpy", d.get("rpy", [0, 0, 0]), 3))
    return Pose(tuple(tuple(float(x) for x in row) for row in R), tuple(float(x) for x in xyz))


def _mass_fields(ctx, where, m, com, J) -> None:
    check_mass_fields(lambda f, msg: ctx.err(where, f"field '{f}' {msg}"), m, com, J)


def _inertia(ctx, where, v) -> np.ndarray:
    a = as_floats(ctx, where, v, f"field 'inertia' must be a 3x3 matrix or [Ixx, Iyy, Izz, Ixy, Ixz, Iyz], got {v!r}",
                  f"field 'inertia' must be numbers, got {v!r}")
    if a.shape == (6,):
        xx, yy, zz, xy, xz, yz = a
        a = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
    if a.shape != (3, 3) or not np.all(np.isfinite(a)):
        raise ctx.err(where, f"field 'inertia' must be a 3x3 matrix or 6 numbers, got shape {a.shape}")
    return a


def _hinge(ctx, where, d, body_name):
    from .. import hinges as H

    if not isinstance(d, dict):
        raise ctx.err(where, f"field 'hinge' must be a mapping with 'type', got {d!r}")
    if "type" not in d:
        raise ctx.err(where, "field 'hinge' is missing 'type'")
    params = {k: v for k, v in d.items() if k not in ("type", "name", "armature", "q0", "default_transform")}
    name = d.get("name", body_name)
    check_name(ctx, where, name, "hinge.name")
    try:
        spec = H.bind(d["type"], **params)
    except ValueError as e:
        raise ctx.err(where, f"field 'hinge': {e}") from None
    except TypeError as e:
        raise ctx.err(where, f"field 'hinge': {e}") from None
    frozen = tuple(sorted((k, _freeze(v)) for k, v in params.items()))
    armature = _armature_values(ctx, where, "hinge.armature", d["armature"], spec.nu) if "armature" in d else ()
    if "q0" in d and "default_transform" in d:
        raise ctx.err(where, "field 'hinge': give either 'q0' or 'default_transform', not both")
    q0 = tuple(float(x) for x in check_vector(ctx, where, "hinge.q0", d["q0"], spec.nq)) if "q0" in d else ()
    default = parse_pose(ctx, f"{where}: field 'hinge.default_transform'", d["default_transform"]) \
        if "default_transform" in d else None
    return name, spec, frozen, armature, q0, default


def _armature_values(ctx, where, field_, v, nu) -> tuple:
    """One armature per hinge U from a number (every U) or a list of nU numbers, each finite and >= 0."""
    if nu == 0:
        raise ctx.err(where, f"field '{field_}': the hinge has no degrees of freedom")
    vals = [v] * nu if isinstance(v, (int, float)) and not isinstance(v, bool) else v
    if isinstance(vals, (str, bytes, dict)) or not hasattr(vals, "__len__") or len(vals) != nu:
        raise ctx.err(where, f"field '{field_}' must be a number or a list of {nu} numbers (one per U), got {v!r}")
    out = []
    for x in vals:
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) or x < 0:
            raise ctx.err(where, f"field '{field_}' must be finite numbers >= 0, got {v!r}")
        out.append(float(x))
    return tuple(out)


def place_nodes(onode: Pose, pnode: Pose, params) -> tuple:
    """The hinge's own onode / pnode: the given nodes turned by the hinge parameters' ``i2onode_q`` and
    ``j2pnode_q`` (Karana HingeParams; identity for most hinge types), so that a HOOKE given ``ij_q`` puts the
    outboard body at ``ij_q`` in the reference configuration."""
    from ..numeric import np_quat_to_matrix

    def turn(pose, quat):
        if tuple(quat) == (0.0, 0.0, 0.0, 1.0):
            return pose
        return Pose(tuple(map(tuple, (np.array(pose.R) @ np_quat_to_matrix(np.array(quat, float))).tolist())), pose.xyz)
    return turn(onode, params.i2onode_q), turn(pnode, params.j2pnode_q)


def _freeze(v):
    if isinstance(v, (list, tuple)):
        return tuple(_freeze(x) for x in v)
    if isinstance(v, np.ndarray):
        return _freeze(v.tolist())
    return v


def model_from_dict(data, path: str = "<dict>", name: str | None = None, balance_inertia: bool = False,
                    accept_indefinite_inertia: bool = False) -> Model:
    """Validate a parsed model document and build a :class:`Model` (bodies sorted parent before child).
    Mass properties are checked by :func:`symgen.model.inertia.validate_inertias`.  The model's warnings are
    also warned (:mod:`symgen.diagnostics`), grouped, when it is complete."""
    model = _model_from_dict(data, path, name, balance_inertia, accept_indefinite_inertia)
    emit(model.warnings)
    return model


def _model_from_dict(data, path, name, balance_inertia, accept_indefinite_inertia) -> Model:
    """:func:`model_from_dict` without warning."""
    ctx = Ctx(path)
    check_keys(ctx, "model", data, TOP_KEYS, required=("bodies",))
    mname = data.get("name", name or Path(path).stem)
    check_name(ctx, "model", mname)
    gravity = tuple(check_vector(ctx, "model", "gravity", data.get("gravity", [0, 0, -9.81]), 3).tolist())
    raw = data["bodies"]
    if not isinstance(raw, list) or not raw:
        raise ctx.err("model", "field 'bodies' must be a non-empty list")
    bodies, frames, seen, hinge_names = {}, [], {NEWTONIAN}, set()
    frame_names, flex_warnings = {NEWTONIAN}, []
    for i, b in enumerate(raw):
        where = f"bodies[{i}]"
        if isinstance(b, dict) and isinstance(b.get("name"), str) and b["name"].strip():
            where = f"body '{b['name']}'"
        check_keys(ctx, where, b, BODY_KEYS, required=("name", "parent", "mass", "inertia", "hinge"))
        bname = check_name(ctx, where, b["name"])
        if bname in seen:
            raise ctx.err(where, "duplicate name" + (" (reserved for the root frame)" if bname == NEWTONIAN else ""))
        seen.add(bname)
        frame_names.add(bname)
        parent = check_name(ctx, where, b["parent"], "parent")
        m = check_number(ctx, where, "mass", b["mass"])
        com = check_vector(ctx, where, "com", b.get("com", [0, 0, 0]), 3)
        J = _inertia(ctx, where, b["inertia"])
        _mass_fields(ctx, where, m, com, J)
        hname, hspec, hparams, armature, q0, default = _hinge(ctx, where, b["hinge"], bname)
        if hname in hinge_names:
            raise ctx.err(where, f"duplicate hinge name '{hname}'")
        hinge_names.add(hname)
        onode, pnode = place_nodes(parse_pose(ctx, f"{where}: field 'onode'", b.get("onode")),
                                   parse_pose(ctx, f"{where}: field 'pnode'", b.get("pnode")), hspec.params)
        fl = b.get("frames", [])
        if not isinstance(fl, list):
            raise ctx.err(where, "field 'frames' must be a list")
        for j, f in enumerate(fl):
            frames.append(_frame(ctx, f"{where}: frames[{j}]", f, bname, frame_names))
        flex = _flex(ctx, where, b["flex"], frame_names, flex_warnings, bname) if b.get("flex") is not None else None
        if flex is not None and not flex.modes:
            # no modes: the nodes are particles fixed on the body, so the body is rigid (what it was before its
            # modes were added) with the nodes in its mass properties, and each node a body-fixed frame
            m, com, J = lump_nodes(m, com, J, flex.nodes)
            frames += [Frame(n.name, bname, Pose(xyz=n.pos)) for n in flex.nodes]
            flex = None
        bodies[bname] = Body(bname, parent, m, tuple(com.tolist()), tuple(map(tuple, J.tolist())), hname,
                             hspec.hinge_type, hparams, onode, pnode, armature, q0, default, flex)
    gl = data.get("frames", []) or []
    if not isinstance(gl, list):
        raise ctx.err("model", "field 'frames' must be a list (frames fixed on the newtonian)")
    for j, f in enumerate(gl):
        frames.append(_frame(ctx, f"frames[{j}] (on '{NEWTONIAN}')", f, NEWTONIAN, frame_names))
    for b in bodies.values():
        if b.parent != NEWTONIAN and b.parent not in bodies:
            raise ctx.err(f"body '{b.name}'", f"unknown parent '{b.parent}'")
    order = _topological(ctx, bodies)
    loops = []
    raw_loops = data.get("loops", []) or []
    if not isinstance(raw_loops, list):
        raise ctx.err("model", "field 'loops' must be a list")
    frame_body = {NEWTONIAN: NEWTONIAN, **{b: b for b in bodies}, **{f.name: f.body for f in frames}}
    loop_names = set()
    for i, lc in enumerate(raw_loops):
        where = f"loops[{i}]"
        if not isinstance(lc, dict):
            raise ctx.err(where, f"must be a mapping with name, source, target and hinge, got {lc!r}")
        check_keys(ctx, where, lc, LOOP_KEYS, required=("name", "source", "target", "hinge"))
        lname = check_name(ctx, where, lc["name"])
        where = f"loops[{i}] '{lname}'"
        if lname in loop_names:
            raise ctx.err(where, "duplicate loop name")
        loop_names.add(lname)
        for k in ("source", "target"):
            if not isinstance(lc[k], str) or lc[k] not in frame_body:
                raise ctx.err(where, f"field '{k}': unknown frame {lc[k]!r} (a body, a body's named frame, "
                                     f"'{NEWTONIAN}' or a frame fixed on it)")
        if frame_body[lc["source"]] == frame_body[lc["target"]]:
            raise ctx.err(where, f"source '{lc['source']}' and target '{lc['target']}' are on the same body "
                                 f"'{frame_body[lc['source']]}': the loop constrains nothing")
        h = lc["hinge"] if isinstance(lc["hinge"], dict) else {"type": lc["hinge"]}
        if any(k in h for k in ("armature", "name", "q0", "default_transform")):
            raise ctx.err(where, "field 'hinge': a cut joint takes a type and its parameters (no name, armature, "
                                 "q0 or default_transform)")
        _, spec, params, *_ = _hinge(ctx, where, h, lname)
        loops.append(LoopConstraint(lname, lc["source"], lc["target"], str(h["type"]).upper(), params))
    if loops and any(b.flex for b in order):
        raise ctx.err("model", "closed chains (loops:) in a model with flexible bodies (flex:) are not supported yet")
    model = validate_inertias(Model(str(mname), order, frames, loops, gravity, path), model_err(path, "body"),
                              balance_inertia, accept_indefinite_inertia)
    return dataclasses.replace(model, warnings=tag(model.warnings, InertiaWarning) + flex_warnings)


def _topological(ctx, bodies: dict) -> list:
    """Parents before children: by depth below newtonian, the file's order within one depth (linear)."""
    children = {}
    for b in bodies.values():
        children.setdefault(b.parent, []).append(b)
    rank = {name: i for i, name in enumerate(bodies)}
    order, level = [], [NEWTONIAN]
    while level:
        level = sorted((c for name in level for c in children.get(name, ())), key=lambda b: rank[b.name])
        order += level
        level = [b.name for b in level]
    if len(order) < len(bodies):
        placed = {b.name for b in order}
        cyc = sorted(n for n in bodies if n not in placed)
        raise ctx.err(f"body '{cyc[0]}'", f"parent chain never reaches '{NEWTONIAN}' (cycle among {', '.join(cyc)})")
    return order


def _syntax_error(e: Exception) -> str:
    """A parser's complaint in one line, with the line and column where it has them (yaml marks, json)."""
    mark = getattr(e, "problem_mark", None)
    if mark is not None:  # yaml.MarkedYAMLError
        return f"line {mark.line + 1}, column {mark.column + 1}: {getattr(e, 'problem', None) or e}"
    if isinstance(e, json.JSONDecodeError):
        return f"line {e.lineno}, column {e.colno}: {e.msg}"
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def load_model(path, floating_base: bool = False, *, balance_inertia: bool = False,
               accept_indefinite_inertia: bool = False, armature=None, lock=None,
               loops_from_equality: bool = False) -> Model:
    """Load a ``.yaml``/``.yml``/``.json`` model, a ``.urdf``, or an MJCF file (``.xml`` whose root element is
    ``<mujoco>``: compiled by MuJoCo, read by :mod:`symgen.model.mjcf`; ``loops_from_equality`` turns its
    ``connect`` equalities between bodies into BALL cut joints).

    ``floating_base`` adds FULL6DOF at the root.  ``balance_inertia`` replaces inertias that violate the
    triangle inequality by isotropic ones (MuJoCo's ``balanceinertia``, opt-in, with a warning);
    ``accept_indefinite_inertia`` loads a clearly negative principal moment with a warning instead of an
    error (as Pinocchio does).  ``armature``: ``{hinge: number or list of nU numbers}``, rotor inertia added
    to the hinge's D (Pinocchio ``model.armature``, MuJoCo ``joint/armature``); it replaces the file's.
    ``lock``: hinge names (held at their neutral coordinates) or ``{hinge: q}``: each becomes LOCKED at that
    configuration (its onode absorbs ``X_op(q)``).

    The model's warnings (``model.warnings``, one string each) are also warned as Python warnings when the model
    is complete, grouped by kind (:mod:`symgen.diagnostics`: ``symgen.IgnoredElementWarning``, ...)."""
    p = Path(path)
    if not p.exists():
        raise ModelError(f"{path}: no such file")
    suffix = p.suffix.lower()
    if suffix in MJCF_SUFFIXES:
        tag = root_tag(p)
        if tag == "mujoco":
            model = load_mjcf(p, loops_from_equality=loops_from_equality, balance_inertia=balance_inertia,
                              accept_indefinite_inertia=accept_indefinite_inertia)
            if floating_base:
                raise ModelError(f"{path}: floating_base does not apply to MJCF (give the root body a <freejoint/>)")
        elif tag == "robot":
            model = load_urdf(p, floating_base=floating_base, balance_inertia=balance_inertia,
                              accept_indefinite_inertia=accept_indefinite_inertia)
        else:
            raise ModelError(f"{path}: unknown XML model: root element <{tag}> (MJCF has <mujoco>, URDF <robot>)")
    elif loops_from_equality:
        raise ModelError(f"{path}: loops_from_equality applies to MJCF files only")
    elif suffix == ".urdf":
        model = load_urdf(p, floating_base=floating_base, balance_inertia=balance_inertia,
                          accept_indefinite_inertia=accept_indefinite_inertia)
    elif suffix not in (".yaml", ".yml", ".json"):
        raise ModelError(f"{path}: unknown model format '{suffix}' (use .yaml, .yml, .json, .urdf or MJCF .xml)")
    else:
        try:
            text = p.read_text()
        except (OSError, UnicodeDecodeError) as e:
            raise ModelError(f"{path}: cannot read: {e}") from None
        try:
            if suffix == ".json":
                data = json.loads(text)
            else:
                import yaml

                # libyaml's parser where PyYAML has it (a 1000-body file: 0.9 s -> 0.1 s); same documents
                data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        except Exception as e:  # yaml.YAMLError, json.JSONDecodeError, recursion on absurd nesting
            raise ModelError(f"{path}: malformed {suffix[1:].upper()}: {_syntax_error(e)}; fix the file's "
                             "syntax there") from None
        model = _model_from_dict(data, str(path), p.stem, balance_inertia, accept_indefinite_inertia)
        if floating_base:
            model = add_floating_base(model)
    if lock:
        model = lock_hinges(model, lock)
    if armature:
        model = apply_armature(model, armature)
    emit(model.warnings)           # grouped Python warnings (symgen.diagnostics), the model complete
    return model


def _body_of_hinge(model: Model, hinge: str, what: str):
    for b in model.bodies:
        if b.hinge_name == hinge:
            return b
    raise ModelError(f"{model.source}: {what}: no hinge named {hinge!r} (hinges: "
                     f"{', '.join(b.hinge_name for b in model.bodies)})")


def apply_armature(model: Model, armature: dict) -> Model:
    """The model with ``armature`` (``{hinge: number or list of nU numbers}``) set on the named hinges."""
    from .. import hinges as H

    if not isinstance(armature, dict):
        raise ModelError(f"{model.source}: armature must be a mapping {{hinge name: value}}, got {armature!r}")
    ctx = Ctx(model.source)
    new = {}
    for hname, v in armature.items():
        b = _body_of_hinge(model, hname, "armature")
        nu = H.bind(b.hinge_type, **b.hinge_kwargs()).nu
        new[b.name] = _armature_values(ctx, f"hinge '{hname}'", "armature", v, nu)
    bodies = [dataclasses.replace(b, armature=new[b.name]) if b.name in new else b for b in model.bodies]
    return dataclasses.replace(model, bodies=bodies)


def lock_hinges(model: Model, lock) -> Model:
    """The model with the named hinges LOCKED: ``lock`` is a list of hinge names (each held at its neutral
    coordinates) or ``{hinge: q}``.  The locked configuration moves into the onode: onode' = onode X_op(q)."""
    from ..hinges.derive import hinge as make_hinge

    items = lock.items() if isinstance(lock, dict) else ((name, None) for name in lock)
    new = {}
    for hname, q in items:
        b = _body_of_hinge(model, hname, "lock")
        h = make_hinge(b.hinge_type, **b.hinge_kwargs())
        if q is None:
            q = h.spec.neutral_q()     # zeros, identity quaternions
        q = np.asarray(q, dtype=float)
        if q.shape != (h.nq,) or not np.all(np.isfinite(q)):
            raise ModelError(f"{model.source}: lock: hinge '{hname}' needs {h.nq} finite coordinates, got {q.tolist()}")
        X = b.onode.matrix @ np.asarray(h.numeric("transform")(q), dtype=float)
        new[b.name] = dataclasses.replace(b, hinge_type="LOCKED", hinge_params=(), armature=(),
                                          onode=Pose.from_matrix(X))
    bodies = [new.get(b.name, b) for b in model.bodies]
    names = [model.body(k).hinge_name for k in new]
    locked = [Diagnostic(f"hinge '{h}' locked", ModelInputWarning, ("hinge", h), "locked") for h in names]
    return dataclasses.replace(model, bodies=bodies, warnings=list(model.warnings) + locked,
                               mujoco=None)   # locked coordinates leave: Q is no longer MuJoCo's qpos


def add_floating_base(model: Model) -> Model:
    """Put a FULL6DOF hinge between newtonian and the root body (which must hang from newtonian by a
    LOCKED hinge, as a URDF root does)."""
    roots = [b for b in model.bodies if b.parent == NEWTONIAN]
    out = []
    for b in model.bodies:
        if b.parent == NEWTONIAN and len(roots) == 1:
            if b.hinge_type != "LOCKED":
                raise ModelError(f"{model.source}: body '{b.name}': floating_base needs a root attached to "
                                 f"'{NEWTONIAN}' by nothing (LOCKED), it has {b.hinge_type}")
            b = dataclasses.replace(b, hinge_type="FULL6DOF", hinge_params=(), armature=())
        out.append(b)
    return Model(model.name, out, model.frames, model.loops, model.gravity, model.source, model.warnings)


def to_physical_hinge(model: Model, loop: str, reverse: bool = False) -> Model:
    """Replace the cut joint of ``loop`` by a real hinge of the same type (Karana's
    ``LoopConstraintCutJoint::toPhysicalHinge``): the target frame's body becomes the child of the source
    frame's body (``reverse=True``: the converse), with the onode at the parent's frame and the pnode at the
    child's.  Allowed only when the new child is a base body (parent ``newtonian``) with a 6-dof hinge, so
    the tree stays a tree; the loop is removed.  The new hinge is named after the loop."""
    from .. import hinges as H

    loops = {lc.name: lc for lc in model.loops}
    if loop not in loops:
        raise ModelError(f"{model.source or model.name}: no loop named {loop!r} (loops: {', '.join(loops) or 'none'})")
    lc = loops[loop]
    frame_of = {NEWTONIAN: (NEWTONIAN, Pose()), **{b.name: (b.name, Pose()) for b in model.bodies}}
    frame_of.update({f.name: (f.body, f.pose) for f in model.frames})
    (pb, on), (cb, pn) = frame_of[lc.source], frame_of[lc.target]
    if reverse:
        (pb, on), (cb, pn) = (cb, pn), (pb, on)
    where = f"{model.source or model.name}: loop '{loop}'"
    if cb == NEWTONIAN:
        raise ModelError(f"{where}: to_physical_hinge cannot make '{NEWTONIAN}' a child (its node is on the ground); "
                         f"use reverse={not reverse}")
    child = model.body(cb)
    if child.parent != NEWTONIAN or H.bind(child.hinge_type, **child.hinge_kwargs()).nu != 6:
        raise ModelError(f"{where}: to_physical_hinge needs the new child body '{cb}' to be a base body (parent "
                         f"'{NEWTONIAN}') with a 6-dof hinge; it has parent '{child.parent}' and hinge "
                         f"{child.hinge_type}")
    spec = H.bind(lc.hinge_type, **lc.hinge_kwargs())
    on, pn = place_nodes(on, pn, spec.params)
    new = dataclasses.replace(child, parent=pb, hinge_name=loop, hinge_type=lc.hinge_type,
                              hinge_params=lc.hinge_params, onode=on, pnode=pn, armature=())
    bodies = {b.name: (new if b.name == cb else b) for b in model.bodies}
    order = _topological(Ctx(model.source), bodies)
    return Model(model.name, order, model.frames, [x for x in model.loops if x.name != loop], model.gravity,
                 model.source, list(model.warnings))   # (no mujoco: Q is no longer MuJoCo's qpos)
