"""Parametric builds: which model quantities stay runtime inputs of the generated dynamics.

A name is ``"<body>.mass"``, ``"<body>.com"``, ``"<body>.inertia"`` (about the CoM, body axes, 3x3),
``"<hinge>.armature"`` (one per hinge U) or ``"gravity"`` (always a runtime input; accepted so a dispersion
spec can name it).  The generated C reads them from a block ``theta`` at the end of the dynamics' ``p``
(:class:`symgen.abi.layout.ModelLayout`): per body with any parametric mass property, its rigid inertia about
the body origin as (m, h = m c, J: xx xy xz yy yz zz) -- 10 numbers, whichever of mass, CoM and inertia is
named; per parametric armature, its nU values.  The runtime converts the user's values to that block.

Standard library only (the runtime reads the resolved blocks from the manifest)."""
from __future__ import annotations

from .spec import ModelError

BODY_QUANTITIES = ("mass", "com", "inertia")


def resolve(model, hinge_nu) -> list:
    """The theta blocks of ``model.parameters``, in model order: ``[{"kind": "inertia", "body": k, "names":
    [...], "size": 10}, {"kind": "armature", "body": k, "hinge": name, "names": [...], "size": nU}, ...]``
    (``hinge_nu[k]``: nU of body k's hinge); ModelError on an unknown name."""
    names = list(dict.fromkeys(model.parameters or ()))
    index = {b.name: k for k, b in enumerate(model.bodies)}
    hinge_body = {b.hinge_name: k for k, b in enumerate(model.bodies)}
    inertia, armature = {}, {}
    for name in names:
        if name == "gravity":
            continue
        owner, dot, what = name.rpartition(".")
        if dot and what in BODY_QUANTITIES and owner in index:
            inertia.setdefault(index[owner], []).append(name)
        elif dot and what == "armature" and owner in hinge_body:
            armature.setdefault(hinge_body[owner], []).append(name)
        else:
            raise ModelError(
                f"{model.source or model.name}: parameter {name!r}: expected 'gravity', '<body>.mass', "
                f"'<body>.com', '<body>.inertia' or '<hinge>.armature' (bodies: {', '.join(index)}; hinges: "
                f"{', '.join(hinge_body)})")
    if model.loops and (inertia or armature):
        raise ModelError(f"{model.source or model.name}: parametric mass properties or armature are not "
                         "supported yet for a model with loop constraints; build it without parameters=")
    blocks = []
    for k, b in enumerate(model.bodies):
        if k in inertia:
            blocks.append({"kind": "inertia", "body": k, "names": inertia[k], "size": 10})
        if k in armature:
            blocks.append({"kind": "armature", "body": k, "hinge": b.hinge_name, "names": armature[k],
                           "size": hinge_nu[k]})
    return blocks


def nominal_theta(model, blocks) -> list:
    """The theta values of the model as written: per inertia block (m, m c, J about the body origin packed
    xx xy xz yy yz zz), per armature block the hinge's armature (zeros where it has none)."""
    out = []
    for blk in blocks:
        b = model.bodies[blk["body"]]
        if blk["kind"] == "inertia":
            out += inertia_block(b.mass, b.com, b.inertia)
        else:
            out += [float(a) for a in b.armature] or [0.0] * blk["size"]
    return out


def inertia_block(m, c, J) -> list:
    """(m, h = m c, J_o packed xx xy xz yy yz zz), J_o = J + m (|c|^2 1 - c c^T) the inertia about the body
    origin from J about the CoM (parallel axis)."""
    m, c = float(m), [float(x) for x in c]
    J = [[float(x) for x in row] for row in J]
    cc = sum(x * x for x in c)
    Jo = [[J[i][j] + m * ((cc if i == j else 0.0) - c[i] * c[j]) for j in range(3)] for i in range(3)]
    return [m, m * c[0], m * c[1], m * c[2], Jo[0][0], Jo[0][1], Jo[0][2], Jo[1][1], Jo[1][2], Jo[2][2]]
