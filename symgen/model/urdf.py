"""URDF importer (stdlib ElementTree).

Mapping (DESIGN.md §6): ``revolute``/``continuous`` -> PIN (axis), ``prismatic`` -> SLIDER, ``fixed`` -> LOCKED,
``floating`` -> FULL6DOF, ``planar`` -> CUSTOM [LINEAR, LINEAR, PIN] (two in-plane axes, then the normal).
Every link is a body and a frame (named like the link); every joint is a hinge (named like the joint) whose
onode is the joint origin on the parent link and whose pnode is the child link frame.  The root link hangs
from ``newtonian`` by a LOCKED hinge named ``root_joint``, or by FULL6DOF with ``floating_base=True``.

Honoured: ``<inertial>`` origin (xyz and rpy: the inertia is rotated into link axes), joint origin and axis
(a non-unit axis is normalized with a warning).  Reported as warnings, never silently wrong: ``<mimic>``
(the joint stays independent, as in Pinocchio), ``<dynamics>``, ``<calibration>``, ``<safety_controller>``,
``<transmission>``, ``<gazebo>`` and unknown tags; links without ``<inertial>`` become massless.
Geometry (``<visual>``, ``<collision>``, ``<material>``) and ``<limit>`` do not enter kinematics or
dynamics and are ignored.
"""
from __future__ import annotations

import dataclasses
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

from ..diagnostics import Diagnostic, IgnoredElementWarning, InertiaWarning, ModelInputWarning, about, note, tag
from .inertia import check_mass_fields, model_err, validate_inertias
from .spec import NEWTONIAN, Body, Model, ModelError, Pose, rpy_matrix
from .validate import Ctx

JOINT_TYPES = {"revolute": "PIN", "continuous": "PIN", "prismatic": "SLIDER", "fixed": "LOCKED",
               "floating": "FULL6DOF", "planar": "CUSTOM"}
IGNORED = {"visual", "collision", "material", "limit"}
WARNED_JOINT = {"mimic", "dynamics", "calibration", "safety_controller"}
KNOWN_ROBOT = {"link", "joint", "material", "transmission", "gazebo"}


KNOWN_ATTRIBUTES = {"link": {"name", "type"}, "joint": {"name", "type"}}
_DECLARATION = re.compile(rb"<\?xml[^>]*\?>")


def _parse(path, warnings: list):
    """The document's root element.  Whitespace before the XML declaration is accepted, as urdfdom (TinyXML2)
    does; so are comments before it, which TinyXML2 refuses, with a warning (the standard parser refuses a
    declaration that is not first in both cases)."""
    try:
        raw = Path(path).read_bytes()
    except OSError as e:
        raise ModelError(f"{path}: cannot read: {e}") from None
    m = _DECLARATION.search(raw)
    if m and raw[:m.start()].strip():
        raw = raw[:m.start()] + raw[m.end():]
        warnings.append(note("the XML declaration is not at the start of the file (urdfdom refuses that); read anyway",
                             ModelInputWarning))
    elif m:
        raw = raw[m.start():]
    try:
        return ET.fromstring(raw)
    except ET.ParseError as e:
        raise ModelError(f"{path}: malformed XML: {e}") from None


def _floats(ctx, where, text, n, field_):
    try:
        v = np.array([float(x) for x in (text or "").split()])
    except ValueError:
        raise ctx.err(where, f"field '{field_}' must be {n} numbers, got {text!r}") from None
    if v.shape != (n,) or not np.all(np.isfinite(v)):
        raise ctx.err(where, f"field '{field_}' must be {n} finite numbers, got {text!r}")
    return v


def _origin(ctx, where, el) -> Pose:
    o = el.find("origin")
    if o is None:
        return Pose()
    xyz = _floats(ctx, where, o.get("xyz", "0 0 0"), 3, "origin xyz")
    R = rpy_matrix(_floats(ctx, where, o.get("rpy", "0 0 0"), 3, "origin rpy"))
    return Pose(tuple(map(tuple, R.tolist())), tuple(xyz.tolist()))


def _perp_pair(n):
    a = np.eye(3)[int(np.argmin(np.abs(n)))]
    t1 = np.cross(n, a)
    t1 /= np.linalg.norm(t1)
    return t1, np.cross(n, t1)


def load_urdf(path, floating_base: bool = False, balance_inertia: bool = False,
              accept_indefinite_inertia: bool = False) -> Model:
    ctx = Ctx(str(path))
    warnings = []
    root = _parse(path, warnings)
    if root.tag != "robot":
        raise ctx.err("document", f"root element must be <robot>, got <{root.tag}>")
    if not root.get("name"):
        raise ctx.err("document", "<robot> has no 'name' attribute (urdfdom, Pinocchio's parser, refuses it too)")
    for el in root:
        if not isinstance(el.tag, str):
            continue
        if el.tag not in KNOWN_ROBOT:
            warnings.append(note(f"unsupported tag <{el.tag}> ignored", IgnoredElementWarning))
        elif el.tag in ("transmission", "gazebo"):
            warnings.append(note(f"<{el.tag}> ignored (actuation and simulator settings are not modelled)",
                                 IgnoredElementWarning))
        extra = sorted(a for a in el.attrib if a not in KNOWN_ATTRIBUTES.get(el.tag, {"name"}) and "}" not in a)
        if extra and el.tag in KNOWN_ATTRIBUTES:
            issue = f"unknown attribute(s) {', '.join(extra)} ignored"
            warnings.append(Diagnostic(f"<{el.tag} name='{el.get('name')}'>: {issue}", IgnoredElementWarning,
                                       (el.tag, el.get("name")), issue))

    links = {}
    for i, el in enumerate(root.findall("link")):
        name = el.get("name")
        if not name:
            raise ctx.err(f"link[{i}]", "missing attribute 'name'")
        if name in links:
            raise ctx.err(f"link '{name}'", "duplicate name")
        if name == NEWTONIAN:
            raise ctx.err(f"link '{name}'", f"name '{NEWTONIAN}' is reserved for the root frame")
        where = f"link '{name}'"
        inertial = el.find("inertial")
        if inertial is None:
            warnings.append(Diagnostic(f"link '{name}' has no <inertial>: massless", ModelInputWarning,
                                       ("link", name), "no <inertial>, massless"))
            links[name] = (0.0, (0.0, 0.0, 0.0), np.zeros((3, 3)))
            continue
        m_el = inertial.find("mass")
        if m_el is None or m_el.get("value") is None:
            raise ctx.err(where, "field 'inertial/mass' is missing")
        try:
            m = float(m_el.get("value"))
        except ValueError:
            raise ctx.err(where, f"field 'inertial/mass' must be a number, got {m_el.get('value')!r}") from None
        it = inertial.find("inertia")
        if it is None:
            raise ctx.err(where, "field 'inertial/inertia' is missing")
        try:
            vals = {k: float(it.get(k, "0")) for k in ("ixx", "iyy", "izz", "ixy", "ixz", "iyz")}
        except ValueError:
            raise ctx.err(where, "field 'inertial/inertia' must be numbers") from None
        Jl = np.array([[vals["ixx"], vals["ixy"], vals["ixz"]], [vals["ixy"], vals["iyy"], vals["iyz"]],
                       [vals["ixz"], vals["iyz"], vals["izz"]]])
        org = _origin(ctx, where, inertial)
        R = np.array(org.R)
        J = R @ Jl @ R.T if np.all(np.isfinite(Jl)) else Jl
        check_mass_fields(lambda f, msg: ctx.err(where, f"field 'inertial/{f}' {msg}"), m, np.array(org.xyz), J)
        links[name] = (m, org.xyz, J)
    if not links:
        raise ctx.err("document", "no <link> elements")

    joints, children = [], {}
    names = set()
    for i, el in enumerate(root.findall("joint")):
        jname = el.get("name")
        if not jname:
            raise ctx.err(f"joint[{i}]", "missing attribute 'name'")
        where = f"joint '{jname}'"
        if jname in names:
            raise ctx.err(where, "duplicate name")
        names.add(jname)
        jtype = el.get("type")
        if jtype not in JOINT_TYPES:
            raise ctx.err(where, f"field 'type': unsupported joint type {jtype!r} (supported: {', '.join(JOINT_TYPES)})")
        par, chi = el.find("parent"), el.find("child")
        if par is None or par.get("link") is None or chi is None or chi.get("link") is None:
            raise ctx.err(where, "needs <parent link=...> and <child link=...>")
        p, c = par.get("link"), chi.get("link")
        for role, ln in (("parent", p), ("child", c)):
            if ln not in links:
                raise ctx.err(where, f"field '{role}': unknown link '{ln}'")
        if c in children:
            raise ctx.err(where, f"link '{c}' is the child of two joints ('{children[c][0]}' and '{jname}')")
        for sub in el:
            if sub.tag in WARNED_JOINT:
                what = "the joint stays independent, as in Pinocchio" if sub.tag == "mimic" else "not modelled"
                warnings.append(about("joint", jname, f"<{sub.tag}> ignored ({what})", IgnoredElementWarning))
            elif sub.tag not in IGNORED | {"origin", "axis", "parent", "child"}:
                warnings.append(about("joint", jname, f"unsupported tag <{sub.tag}> ignored", IgnoredElementWarning))
        if jtype in ("revolute", "prismatic"):
            lim = el.find("limit")
            if lim is None or lim.get("effort") is None or lim.get("velocity") is None:
                raise ctx.err(where, f"a {jtype} joint needs <limit effort=... velocity=...> (urdfdom, Pinocchio's "
                                     "parser, refuses it too; use type='continuous' for an unlimited revolute)")
        axis = np.array([1.0, 0.0, 0.0])
        ax = el.find("axis")
        if ax is not None:
            axis = _floats(ctx, where, ax.get("xyz", "1 0 0"), 3, "axis xyz")
        n = np.linalg.norm(axis)
        if jtype in ("revolute", "continuous", "prismatic", "planar"):
            if n == 0:
                raise ctx.err(where, "field 'axis': axis is zero")
            if abs(n - 1) > 1e-9:
                warnings.append(Diagnostic(f"joint '{jname}': axis {axis.tolist()} normalized to unit length",
                                           ModelInputWarning, ("joint", jname), "axis normalized to unit length"))
            axis = axis / n
        children[c] = (jname, p, jtype, _origin(ctx, where, el), axis)
        joints.append(jname)

    roots = [ln for ln in links if ln not in children]
    if len(roots) != 1:
        raise ctx.err("document", f"expected one root link, found {len(roots)}: {', '.join(roots) or 'none (a cycle)'}")
    rootname = roots[0]
    # parent-before-child order (also detects cycles that leave links unreachable)
    order, placed, frontier = [], {rootname}, [rootname]
    kids = {}
    for c, (jn, p, *_rest) in children.items():
        kids.setdefault(p, []).append(c)
    while frontier:
        cur = frontier.pop(0)
        order.append(cur)
        for c in kids.get(cur, []):
            if c not in placed:
                placed.add(c)
                frontier.append(c)
    if len(order) != len(links):
        missing = sorted(set(links) - set(order))
        raise ctx.err(f"link '{missing[0]}'", "not reachable from the root link (joint cycle)")

    root_joint = "root_joint" if "root_joint" not in names else f"{rootname}_root_joint"
    bodies = []
    for ln in order:
        m, com, J = links[ln]
        inertia = tuple(map(tuple, J.tolist()))
        if ln == rootname:
            bodies.append(Body(ln, NEWTONIAN, m, tuple(com), inertia, root_joint,
                               "FULL6DOF" if floating_base else "LOCKED"))
            continue
        jname, p, jtype, origin, axis = children[ln]
        htype = JOINT_TYPES[jtype]
        params = ()
        if htype in ("PIN", "SLIDER"):
            params = (("axis", tuple(float(x) for x in axis)),)
        elif htype == "CUSTOM":
            t1, t2 = _perp_pair(axis)
            params = (("axes", (tuple(t1.tolist()), tuple(t2.tolist()), tuple(axis.tolist()))),
                      ("subhinges", ("LINEAR", "LINEAR", "PIN")))
        bodies.append(Body(ln, p, m, tuple(com), inertia, jname, htype, params, origin, Pose()))
    model = Model(Path(path).stem, bodies, [], [], (0.0, 0.0, -9.81), str(path), warnings)
    model = validate_inertias(model, model_err(str(path), "link"), balance_inertia, accept_indefinite_inertia)
    return dataclasses.replace(model, warnings=tag(model.warnings, InertiaWarning))   # (validate_inertias's own)
