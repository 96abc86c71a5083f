"""The C pieces of a model: kinematics, frames, and the dynamics from :mod:`symgen.algorithms.soa` via
:mod:`symgen.ir.tape`, one form per entry point (straight-line, with its lane form for batches, or
:mod:`symgen.codegen.perkind`), gathered for the templates.  The hinge kernels' own C and their calls are
:mod:`symgen.codegen.kernels`'.
"""
from __future__ import annotations

import re

from ..algorithms import soa
from ..abi.layout import (ALL_DERIVATIVE_PARTS, CENTROIDAL_PARTS, DERIVATIVE_GLUE_PART, DERIVATIVE_LANE_PARTS,
                          DERIVATIVE_PARTS, FRAME_LANES_PART, HINGE_API_PART, KINEMATICS_PART, LOOPED_LANES_PART, MATS_PART,
                          STEP_PART)
from ..ir import program as P
from .plan import model_batches
from .printer import c_function, c_lines
from .lanes import lane_width
from .kernels import (C_KERNELS, DERIVATIVE_KERNELS, TRIG_KERNELS, CKernel, HingeCalls, SgCPrinter,  # noqa: F401
                      banner_info, c_identifier_ok, derivative_kernels, emit_hinge, emit_statements,
                      hinge_trig_args, kernel_structure, lane_kernel_head, lane_kernel_lines, spec_slug,
                      void_unused)



































# --------------------------------------------------------------------------------------------------
# per-model translation unit
# --------------------------------------------------------------------------------------------------

def _c_array(values) -> str:
    return "{" + ", ".join(repr(float(v)) for v in values) + "}"


def _pose12(pose) -> list:
    import numpy as np

    return list(np.asarray(pose.R, dtype=float).ravel()) + list(pose.xyz)




def emit_loops(model, layout: dict, slugs: dict, index: dict, name: str, ML, loops: list, hinges=None,
               kernels=None) -> dict:
    """C of a model's closed chains (:mod:`symgen.algorithms.loops`): the cut joints' neutral-Q tables and the traced
    bodies of ``loop_errors``, ``loop_stab``, ``loop_jacobian`` and ``ta_forward_dynamics``, and the lane form of
    the last (``ta_lanes``, :func:`_lane_function`: its solves one lane at a time; ``hinges`` and ``kernels`` as
    that takes them), or None.  ``loops``: per loop, a dict with the LoopInfo fields but ``i``, ``A``, ``B`` (body
    names ``source_body`` and ``target_body`` instead)."""

    from ..algorithms import loops as lp

    if not loops:
        return {"loops": [], "ta_lanes": None}
    bodies = body_infos(model, layout, slugs, index)
    infos = [lp.LoopInfo(i=i, A=index.get(d["source_body"], -1), B=index.get(d["target_body"], -1),
                         **{k: v for k, v in d.items() if k not in ("source_body", "target_body")})
             for i, d in enumerate(loops)]
    io = soa.ArrayIO(ML)

    def trace(fn, tapes=None):
        return _trace_function(lambda T, bodies, nu: fn(T, bodies, infos, nu, io, name, ML), bodies, ML.nu,
                               HingeCalls(layout, slugs), tapes)
    ta_tape = []
    lines = {"loop_errors_lines": trace(lp.loop_errors), "loop_stab_lines": trace(lp.loop_stab),
             "loop_jacobian_lines": trace(lp.loop_jacobian), "ta_lines": trace(lp.ta_forward_dynamics, ta_tape)}
    # TA dynamics on lanes: its ATBI passes and the compliance on vectors, the pivoted solve one lane at a time
    ta_lanes = None if any(b.flex for b in bodies) else _lane_function(
        ta_tape[0], bodies, ML.nu, layout, slugs, ML.ta_params.size, ML.ta_out.size, hinges=hinges, kernels=kernels,
        calls_per_lane=True)
    if ta_lanes is not None:
        ta_lanes["part"] = 0
    return {"loops": [{"i": L.i, "name": L.name, "q0": _c_array(L.neutral_q or [0.0]), "nres": L.n_res, "nq": L.nq,
                       "slug": L.slug} for L in infos],
            "max_nc": max(1, ML.nc), "nc": ML.nc, "loop_errors_size": ML.loop_errors_size,
            "ta_p_size": ML.ta_params.size, "ta_out_size": ML.ta_out.size, "jac_size": ML.loop_jacobian.size,
            "loop_helpers_unused": _unused_loop_helpers(lines), "ta_lanes": ta_lanes, **lines}


#: the optional helpers of ``helpers/loops.c`` (each guarded by ``#ifndef SG_LOOP_NO_<NAME>``) and the helpers
#: that call them: a model whose cut joints have no coordinates (LOCKED only) calls neither, and an unused static
#: function does not compile under -Werror
_LOOP_HELPERS = {"sg_cut_fit_q": (), "sg_lstsq6": ("sg_cut_fit_q",)}


def _unused_loop_helpers(lines: dict) -> list:
    """The ``SG_LOOP_NO_<NAME>`` guards of the optional loop helpers that no traced loop function calls."""
    text = "\n".join(x for ls in lines.values() for x in ls)
    used = {h for h in _LOOP_HELPERS if f"{h}(" in text}
    used |= {h for h, callers in _LOOP_HELPERS.items() if used & set(callers)}
    return [f"SG_LOOP_NO_{h[3:].upper()}" for h in _LOOP_HELPERS if h not in used]


def emit_model(model, layout: dict, slugs: dict, name: str, loops: list = (), form: str = "auto",
               derivatives: bool = False) -> dict:
    """C pieces of a model's translation unit (constants and unrolled per-body statements).

    ``layout``: ``{body: {"q": (start, stop), "u": (start, stop), "nq": .., "nu": ..}}``; ``slugs``: hinge spec
    slug of each body.  Kernel ``kinematics`` writes, per body k at ``out + k * B`` (``B = 12 + 12 nU``):
    ``R`` (3x3 body in newtonian), ``p`` (3), ``J`` (6 x nU, body frame), ``Jdot`` (6 x nU).
    """
    nb = len(model.bodies)
    n_modes = [layout[b.name].get("modes", {}).get("n", 0) for b in model.bodies]
    nu = sum(layout[b.name]["nu"] for b in model.bodies) + sum(n_modes)
    nq = sum(layout[b.name]["nq"] for b in model.bodies) + sum(n_modes)
    index = {b.name: i for i, b in enumerate(model.bodies)}
    max_nu = max([1] + [layout[b.name]["nu"] for b in model.bodies])
    from ..abi.layout import ModelLayout

    from ..model.parameters import nominal_theta, resolve

    blocks = resolve(model, [layout[b.name]["nu"] for b in model.bodies])
    ML = ModelLayout([(layout[b.name]["nq"], layout[b.name]["nu"]) for b in model.bodies],
                     [(d["nq"], d["nu"]) for d in loops], blocks, n_modes)
    theta0 = nominal_theta(model, ML.theta_blocks)
    B = ML.kinematics.size

    def const(k, field):
        """The onode or inverse pnode pose (R, l) of body k in the per-kind form's constants table."""
        return P.At(f"sg_{name}_body_const", ML.body_const[field], row=k)
    kin, qdot, qdot_dq, qdot_map, sanitize, poses = [], [], [], [], [], []
    kin_calls, pose_calls = HingeCalls(layout, slugs), HingeCalls(layout, slugs)
    hmap_cases = []
    for k, b in enumerate(model.bodies):
        L, s = layout[b.name], slugs[b.name]
        q0, u0, hnu, hnq = L["q"][0], L["u"][0], L["nu"], L["nq"]
        parent = None if b.parent == "newtonian" else P.At("out", index[b.parent] * B)
        kin += [P.Comment(f"body {k} '{b.name}' <- '{b.parent}' by hinge '{b.hinge_name}' ({b.hinge_type}): "
                          f"Q[{q0}:{q0 + hnq}], U[{u0}:{u0 + hnu}]"),
                P.Traced([kin_calls(b.name, "transform", "X"), kin_calls(b.name, "coord_map", "H"),
                          kin_calls(b.name, "coord_map_dot", "Hd")]),
                P.Invoke("sg_link_body", (nu, hnu, u0, "X", "H", "Hd", const(k, "on"), const(k, "pinv"), parent, "u",
                                          P.At("out", k * B)), check=False)]
        hmap_cases.append((k, [P.Comment(f"'{b.name}'"),
                               P.Invoke(f"sg_{s}_coord_map", (P.At("q", q0), "u", None, "H"), check=False)]))
        pparent = None if b.parent == "newtonian" else P.At("out", index[b.parent] * ML.poses.size)
        poses += [P.Comment(f"body {k} '{b.name}'"), P.Traced([pose_calls(b.name, "transform", "X")]),
                  P.Invoke("sg_link_pose", ("X", const(k, "on"), const(k, "pinv"), pparent,
                                            P.At("out", k * ML.poses.size)), check=False)]
        if hnq:
            qdot += _qdot_lines(L["structure"].get("qdot_map"), s, b.hinge_name, q0, u0, hnq, hnu)
            i, j = P.Var("i"), P.Var("j")
            qdot_map += [P.Comment(f"hinge '{b.hinge_name}'"),
                         P.Invoke(f"sg_{s}_qdot_map", (P.At("q", q0), P.At("u", u0), None, "N"), check=False),
                         P.Loop("i", 0, hnq, [P.Loop("j", 0, hnu, [
                             P.Set(P.Elem("out", (i + q0) * nu + u0 + j), P.Elem("N", i * hnu + j))])])]
            dq = L["structure"].get("qdot_dq")
            if dq and any(c is None or c != 0.0 for c in dq):
                qdot_dq += [P.Comment(f"hinge '{b.hinge_name}'"),
                            P.Invoke(f"sg_{s}_qdot_dq", (P.At("q", q0), P.At("u", u0), None, "N"), check=False),
                            P.Loop("i", 0, hnq, [P.Loop("j", 0, hnq, [
                                P.Set(P.Elem("out", (j + q0) * nq + q0 + i), P.Elem("N", i * hnq + j))])])]
            sanitize += [P.Comment(f"hinge '{b.hinge_name}'"),
                         P.Invoke(f"sg_{s}_sanitize", (P.At("q", q0), "u", None, P.At("out", q0)), check=False)
                         if L["has_sanitize"] else P.Copy("out", q0, "q", q0, hnq)]
        if "modes" in L:                           # a flexible body's modal coordinates: Qdot = U, nothing to sanitize
            (mq0, mq1), mu0 = L["modes"]["q"], L["modes"]["u"][0]
            qdot += [P.Comment(f"'{b.name}' modes"),
                     *(P.Set(P.Elem("out", mq0 + i), P.Elem("u", mu0 + i)) for i in range(mq1 - mq0))]
            i = P.Var("i")
            qdot_map += [P.Comment(f"'{b.name}' modes"),
                         P.Loop("i", 0, mq1 - mq0, [P.Set(P.Elem("out", (i + mq0) * nu + mu0 + i), P.Num(1.0))])]
            sanitize += [P.Comment(f"'{b.name}' modes"), P.Copy("out", mq0, "q", mq0, mq1 - mq0)]
    max_nq = max([1] + [layout[b.name]["nq"] for b in model.bodies])
    from ..hinges.derive import hinge

    specs, hinges = {}, {}                     # one Hinge per bound spec (its derivation is read once)
    for b in model.bodies:
        h = hinge(b.hinge_type, **b.hinge_kwargs())
        hinges[b.name] = specs.setdefault(h.spec.key(), h)
    dyn = _emit_model_dynamics(model, layout, slugs, index, name, ML, form, derivatives and not loops, hinges)
    fk = _traced_frame_kinematics(model, layout, slugs, index, nu, ML.poses.size, hinges)
    dyn["lanes"]["fp"] = fk["frame_poses_lanes"]
    # the frame walk's lane form: the frame pose's, Jacobian's and velocity's batches
    dyn["lanes"]["fj"] = dyn["lanes"]["fv"] = dyn["lanes"]["fpose"] = fk["jacobian_lanes"]
    if fk["frame_poses_lanes"] and fk["frame_poses_lanes"]["part"]:
        dyn["made_parts"].add(FRAME_LANES_PART)
    dyn["lanes"]["sincos"] = dyn["lanes"]["sincos"] or bool(fk["frame_poses_lanes"] and fk["frame_poses_lanes"]["sincos"])
    closed = emit_loops(model, layout, slugs, index, name, ML, list(loops), hinges)
    dyn["lanes"]["ta"] = closed.pop("ta_lanes")
    dyn["lanes"]["sincos"] = dyn["lanes"]["sincos"] or bool(dyn["lanes"]["ta"] and dyn["lanes"]["ta"]["sincos"])
    if fk["frame_poses"] is not None:
        poses, pose_calls = [], None                # poses_from_frames (templates/model.c.jinja)
    elif fk["poses"] is not None:
        poses, pose_calls = [P.Traced(fk["poses"])], None
    params = ("q", "u", "p", "out")              # the entry points' parameters, each cast to void where unread
    qdot_lines = c_lines(P.Program(
        ([P.Locals(arrays=(("N", max_nq * max_nu),))] if any(isinstance(x, P.Invoke) for x in qdot) else []) + qdot),
        unused=params + ("sg_matvec",))
    # N(Q) (nQ x nU) and dQdot/dQ (nQ x nQ), row-major, from the hinges' kernels; equivalent Q (sanitize)
    qdot_map_lines = c_lines(P.Program(
        ([P.Locals(arrays=(("N", max_nq * max_nu),))] if any(isinstance(x, P.Invoke) for x in qdot_map) else [])
        + [P.Zero("out", 0, nq * nu, "out = N(Q), Qdot = N U")] + qdot_map), unused=params)
    qdot_dq_lines = c_lines(P.Program(
        ([P.Locals(arrays=(("N", max_nq * max_nq),))] if qdot_dq else [])
        + [P.Zero("out", 0, nq * nq, "out = d Qdot / d Q, Qdot = N(Q) U")] + qdot_dq), unused=params)
    sanitize_lines = c_lines(P.Program(sanitize), unused=params)
    # sg_link_pose: the helper form, for large models (cast to void where the traced poses serve)
    poses_lines = c_lines(P.Program(poses if pose_calls is None else [
        P.Locals(arrays=(("X", 16),)), P.Traced(pose_calls.head()), *poses]), unused=params + ("sg_link_pose",))
    kinematics_lines = c_lines(P.Program([
        P.Locals(arrays=(("X", 16), ("H", 6 * max_nu), ("Hd", 6 * max_nu))),
        P.Zero("H", 0, 6 * max_nu, "a LOCKED hinge writes none"), P.Zero("Hd", 0, 6 * max_nu),
        P.Traced(kin_calls.head()), *kin]), unused=params)

    frames = _frame_tables(model, index)
    # the one-state frame kinematics: a part of their own when long, compiled beside part 0 (at the module's level:
    # at -O2 Talos's frame Jacobian took 22 % longer), else part 0's; the hinge kernels' exports (the per-hinge API,
    # called from Python) in a part of their own at -O1 when the model has many hinge specs, else in the kinematics'
    kin_lines = (len(poses_lines) + len(kinematics_lines) + len(fk["frame_poses"] or [])
                 + sum(len(st["jlines"]) for st in fk["steps"]))
    kinematics_part = KINEMATICS_PART if kin_lines >= soa.LANE_SPLIT_MIN_LINES else 0
    hinge_api_part = HINGE_API_PART if len(specs) >= HINGE_API_SPECS else kinematics_part
    dyn["made_parts"] |= {p for p in (kinematics_part, hinge_api_part) if p}
    if hinge_api_part == HINGE_API_PART:
        dyn["part_opt"][HINGE_API_PART] = 1
    # the hinge API part's lines are in the hinge sources, which render does not count: about 500 a spec
    part_lines = {HINGE_API_PART: HINGE_SOURCE_LINES * len(specs)} if hinge_api_part == HINGE_API_PART else {}
    return {"kinematics_part": kinematics_part, "hinge_api_part": hinge_api_part, "part_lines": part_lines,
            "nb": nb, "nq": nq, "nu": nu, "block": B, "pose_size": ML.poses.size, "pinv_offset": ML.body_const["pinv"], **dyn,
            "size_defines": ML.c_defines(f"sg_{name}"),
            "batches": model_batches(ML, nq, nu, nb, nb * B, frames["n_frames"], dyn["lanes"], bool(loops)),
            "theta_table": c_lines(P.Program([P.Comment("the parameters' values in the model file")])) +
            c_lines(P.Program([P.Locals(dtables=((f"sg_{name}_theta0", theta0),))])) if theta0 else [],
            "theta_init": c_lines(P.Program([P.Loop("i", 0, len(theta0), [P.Set(
                P.Elem("p", P.add(ML.params["theta"], P.Var("i"))), P.Elem(f"sg_{name}_theta0", P.Var("i")))])]),
                declared=("i",)) if theta0 else [],
            # the rollout in the part of the FD lane form its blocks call (a static function of part 0 when short)
            "rollout_part": (dyn["lanes"]["ta" if loops else "fd"] or {}).get("part", 0),
            "rollout": {**_rollout_spec(ML, bool(loops), nq, nu, dyn["lanes"]["ta" if loops else "fd"]),
                        "qdot_lanes": _qdot_lanes(model, layout, hinges, nq, nu)},
            "kinematics_lines": kinematics_lines,
            "model_helpers": ["sincos_n"] if any(layout[b.name]["structure"]["trig_args"] for b in model.bodies)
            else [],
            "qdot_lines": qdot_lines, "qdot_dq_lines": qdot_dq_lines,
            "qdot_map_lines": qdot_map_lines,
            "hinge_blocks": [[layout[b.name]["q"][0], layout[b.name]["nq"], layout[b.name]["u"][0], layout[b.name]["nu"],
                              int(bool(layout[b.name]["has_sanitize"]))] for b in model.bodies],
            "max_hinge_nu": max_nu, "sanitize_lines": sanitize_lines,
            "kinematics_size": nb * B, "poses_lines": poses_lines,
            "hmap_switch": c_lines(P.Program([P.Switch(P.Var("j"), tuple(hmap_cases))]), declared=("j",)), "max_nu6": 6 * max_nu, "frame_steps": fk["steps"],
            "frame_poses_lines": fk["frame_poses"], "poses_from_frames": fk["frame_poses"] is not None, **frames, **_node_cases(model, index, layout),
            **closed}


#: from this many hinge specs the hinge kernels' exports compile as a part of their own (abi.layout.HINGE_API_PART;
#: dog.xml's 31 specs: 2.6 s of part 0's -O3)
HINGE_API_SPECS = 8
#: about the lines of one hinge spec's C file (488-1,729 in dog.xml's), to weigh the hinge API part
HINGE_SOURCE_LINES = 500


def _rollout_spec(ML, loops: bool, nq: int, nu: int, fd_lanes) -> dict:
    """What templates/helpers/rollout.c.jinja prints for ``sg_<m>_rollout``: the forward dynamics each stage runs
    (TA on a model with loops), its p (size, fields) and output size, and whether blocks of SG_W cases step
    together on the lane form of that forward dynamics (``lanes``: ``fd_lanes``, the FD's lane form, or with
    loops the TA dynamics', whose Udot the block copies out of its rows, ``lane_fd``).  ``p_lanes``: the entries
    of p that ``sg_<m>_fd_lanes_pl`` reads, which the block keeps in lanes from step to step (0: it calls
    ``sg_<m>_fd_lanes``, or the TA's), ``p_lanes_T`` how many of them are T (p[3], p[4], ...)."""
    lanes = bool(fd_lanes)
    p_lanes = fd_lanes["p_lanes"][0] if lanes and not loops and fd_lanes["p_lanes"] else 0
    return {"fd": "ta_forward_dynamics" if loops else "forward_dynamics",
            "p_size": ML.ta_params.size if loops else ML.params.size,
            "p_fields": "g, T, f_ext" + (", theta" if ML.theta_blocks else "") + (", gains" if loops else ""),
            "out_size": ML.ta_out.size if loops else max(nu, 1), "nq_dim": max(nq, 1), "nu_dim": max(nu, 1),
            "lanes": lanes, "p_lanes": p_lanes, "p_lanes_T": max(0, min(nu, p_lanes - 3)),
            "lane_fd": "ta" if loops else "fd"}


_IDENTITY12 = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0]


def _frame_rows(model, index) -> list:
    """The frames in the manifest's order (newtonian, the bodies, the extra body-fixed frames, the flexible
    bodies' nodes): (name, body index or -1 for newtonian, pose on that body as R row-major + p; a node's at
    its undeformed place)."""
    rows = [("newtonian", -1, _IDENTITY12)] + [(b.name, k, _IDENTITY12) for k, b in enumerate(model.bodies)]
    rows += [(f.name, index.get(f.body, -1), [float(x) for x in _pose12(f.pose)]) for f in model.frames]
    return rows + [(nd["name"], nd["body"], _IDENTITY12[:9] + nd["s"]) for nd in _node_rows(model)]


def _node_rows(model) -> list:
    """Each flexible body's nodes, in body order: name, body index, s (3), Phi (3 rows of n_modes)."""
    return [{"name": nd.name, "body": k, "s": [float(x) for x in nd.pos],
             "Phi": [[float(md.shape[i][r]) for md in b.flex.modes] for r in range(3)]}
            for k, b in enumerate(model.bodies) if b.n_modes for i, nd in enumerate(b.flex.nodes)]


def _node_cases(model, index, layout) -> dict:
    """The C of the node frames (templates/model.c.jinja's sg_<m>_node_offset and _node_columns): per node frame
    f, ``x[9 + r] += sum_j Phi[r][j] q[eta_j]`` and the Jacobian's modal columns ``out[(3 + r) nU + eta_j] = Phi[r][j]``."""
    rows = _frame_rows(model, index)
    first = len(rows) - len(_node_rows(model))
    nu = sum(layout[b.name]["nu"] + layout[b.name].get("modes", {}).get("n", 0) for b in model.bodies)
    offset, columns = [], []
    for f, nd in enumerate(_node_rows(model), start=first):
        modes = layout[model.bodies[nd["body"]].name]["modes"]
        (q0, _), (u0, _) = modes["q"], modes["u"]
        moves = []
        for r, row in enumerate(nd["Phi"]):
            terms = [P.Bin("*", P.Num(c), P.Elem("q", q0 + j)) for j, c in enumerate(row) if c != 0.0]
            if terms:
                total = terms[0]
                for t in terms[1:]:
                    total = P.Bin("+", total, t)
                moves.append(P.Set(P.Elem("x", 9 + r), total, "+="))
        offset.append((f, [P.Comment(f"'{nd['name']}'"), *moves]))
        columns.append((f, [P.Comment(f"'{nd['name']}'"), *(
            P.Set(P.Elem("out", (3 + r) * nu + u0 + j), P.Num(c)) for r, row in enumerate(nd["Phi"])
            for j, c in enumerate(row) if c != 0.0)]))
    switch = lambda cases: c_lines(P.Program([P.Switch(P.Var("f"), tuple(cases))]), declared=("f",)) if cases else []  # noqa: E731
    offset, columns = switch(offset), switch(columns)
    return {"node_offset_cases": offset, "node_column_cases": columns}


def _frame_tables(model, index) -> dict:
    """C tables of the frames: the body of each, its pose on that body, whether frame_pose walks."""
    rows = _frame_rows(model, index)
    depth = []
    for b in model.bodies:
        depth.append(1 if b.parent == "newtonian" else depth[index[b.parent]] + 1)
    # one frame's pose: walk its ancestors (jstep) when they are few, else all bodies' poses (straight-line,
    # about 2/3 of a walk step per body on arm7)
    walk = ["1" if r[1] >= 0 and 3 * depth[r[1]] <= 2 * len(model.bodies) else "0" for r in rows]
    return {"frame_walk": ", ".join(walk), "n_frames": len(rows), "frame_body": ", ".join(str(r[1]) for r in rows),
            "frame_X": [(_c_array(r[2]), r[0]) for r in rows]}




def _traced_frame_kinematics(model, layout, slugs, index, nu, pose_size, hinges=None) -> dict:
    """Straight-line C for frame kinematics, onode / pnode constants and the hinges' structural zeros folded
    (as the dynamics):

    * ``poses``: the body of the poses kernel (world pose of every body, 12 each), None where ``frame_poses`` is
      traced (the poses kernel then copies the body frames' poses out of it);
    * ``frame_poses``: the body of the all-frame poses kernel (4x4 per frame, frame offsets folded);
      both None above soa.POSES_STRAIGHT_LIMIT lines;
    * ``steps``: per body k, the step for a frame whose pose in body k is ``x = p`` (R 9, l 3):
      ``sg_<name>_jstep_k(q, u, p, out, y)``: the frame's pose in k's parent, ``y = X_parent,k x`` (newtonian's
      at a root), and, where ``out`` is not null, the columns of k's hinge, ``phi^T(X_kf) S_k``, into ``out``
      (6 x nU).  ``sg_<name>_frame_pose`` and
      ``sg_<name>_frame_jacobian`` walk them from the frame's body to the root: only the frame's ancestors.
      [] above soa.JAC_STEPS_LIMIT lines (the all-body poses and ``body_jacobian`` then)."""
    bodies = body_infos(model, layout, slugs, index)

    def compose(T, R, l, x):
        """(R, l) o x for x = [R 9, l 3]: [R x_R, l + R x_l]."""
        return soa._mat3(T, R, x[:9]) + [T.dot(list(zip(R[3 * i:3 * i + 3], x[9:])), l[i]) for i in range(3)]

    def world_poses(T, bodies, store):
        world = []
        for b in bodies:
            T.comment(f"body {b.k} '{b.name}'")
            R, l, _, _ = soa.joint(T, b)
            X = R + l if b.parent < 0 else compose(T, world[b.parent][:9], world[b.parent][9:], R + l)
            world.append(X)
            store(b.k, X)
        return world

    def poses(T, bodies, nu):
        world_poses(T, bodies, lambda k, X: [T.store(f"out[{pose_size * k + i}]", x) for i, x in enumerate(X)])

    nodes = {nd["name"]: nd for nd in _node_rows(model)}

    def frame_poses(T, bodies, nu):
        world = world_poses(T, bodies, lambda k, X: None)
        for f, (fname, k, Xf) in enumerate(_frame_rows(model, index)):
            T.comment(f"frame {f} '{fname}'")
            if fname in nodes:             # a node: its place on the body moves with the modes, s + Phi eta
                F = bodies[k].flex
                Xf = Xf[:9] + [T.dot([(c, T.input(f"q[{F.q0 + j}]")) for j, c in enumerate(row)], s)
                               for row, s in zip(nodes[fname]["Phi"], nodes[fname]["s"])]
            X = Xf if k < 0 else world[k] if Xf == _IDENTITY12 else compose(T, world[k][:9], world[k][9:], Xf)
            for i, x in enumerate([X[0], X[1], X[2], X[9], X[3], X[4], X[5], X[10], X[6], X[7], X[8], X[11],
                                   0.0, 0.0, 0.0, 1.0]):
                T.store(f"out[{16 * f + i}]", x)

    def trace(fn, tapes=None):
        return _trace_function(fn, bodies, nu, HingeCalls(layout, slugs), tapes)

    def short(lines):
        return lines if len(lines) <= soa.POSES_STRAIGHT_LIMIT else None

    steps, step_tapes, total = [], [], 0
    for b in bodies:
        def jstep(T, bodies, nu, b=b):
            x = [T.input(f"p[{i}]") for i in range(12)]
            R, l, H, _ = soa.joint(T, b)
            for i, v in enumerate(compose(T, R, l, x)):
                T.store(f"y[{i}]", v)
            if H:      # last: the values it defines are read in its block only
                T.begin_if_array("out", "the Jacobian's columns (frame_jacobian; frame_pose passes none)")
                for c, col in enumerate(H):
                    for i, v in enumerate(soa.phiT(T, x[:9], x[9:], col)):
                        T.store(f"out[{i * nu + b.u0 + c}]", v)
                T.end_if()

        jl = trace(jstep, step_tapes)
        jl = c_lines(P.Program([P.Traced(jl)]), unused=("out",))   # a LOCKED hinge writes no columns
        total += len(jl)
        steps.append({"k": b.k, "name": b.name, "jlines": jl})
    # the same steps for SG_W states (the frame_pose, frame_jacobian and frame_velocity batches' full blocks), on
    # lane vectors, the hinge kernels printed on them or called per lane; None where a step has no lane form, and
    # for a model with flexible bodies (a node's own place and columns)
    lane_steps = [] if not any(b.flex for b in bodies) else None
    lane_kernels = {}
    for st, T in zip(steps, step_tapes):
        lane = None if lane_steps is None else _lane_function(T, bodies, nu, layout, slugs, 0, 6 * nu,
                                                                hinges=hinges, kernels=lane_kernels)
        if lane is None:
            lane_steps = None
            break
        lane_steps.append({"k": st["k"], "name": st["name"], "head": lane["head"], "lines": lane["lines"]})
    # the all-frame poses are the body poses and each extra frame's product: traced once, and the body poses
    # (poses) read from them, not traced a second time (arm7: 238 lines)
    fp_tape = []
    frames_traced = short(trace(frame_poses, fp_tape))
    # the same trace printed for SG_W states (the frame_poses batch's full blocks)
    fp_lanes = None if frames_traced is None else _lane_function(
        fp_tape[0], bodies, nu, layout, slugs, 0, 16 * len(_frame_rows(model, index)), hinges=hinges)
    if fp_lanes is not None:     # a long one compiles beside part 0 (tiago_dual's: 1,500 lines)
        fp_lanes["part"] = FRAME_LANES_PART if len(fp_lanes["lines"]) >= soa.LANE_SPLIT_MIN_LINES else 0
    walk = total <= soa.JAC_STEPS_LIMIT
    return {"poses": None if frames_traced is not None else short(trace(poses)), "frame_poses": frames_traced,
            "frame_poses_lanes": fp_lanes, "steps": steps if walk else [],
            "jacobian_lanes": {"steps": lane_steps} if walk and lane_steps else None}


def body_infos(model, layout, slugs, index) -> list:
    """What the tracers (:mod:`symgen.algorithms.soa`, :mod:`symgen.codegen.perkind`) know of each body: its constants and the
    structure of its hinge kernels."""
    import numpy as np

    from ..numeric import np_skew

    bodies = []
    for k, b in enumerate(model.bodies):
        L, pinv = layout[b.name], b.pnode.inverse()
        st = L["structure"]
        c, m, J = np.array(b.com), b.mass, np.array(b.inertia)
        cx = np_skew(c)
        M = np.block([[J - m * cx @ cx, m * cx], [-m * cx, m * np.eye(3)]])
        bodies.append(soa.BodyInfo(
            k=k, name=b.name, parent=-1 if b.parent == "newtonian" else index[b.parent], slug=slugs[b.name],
            q0=L["q"][0], u0=L["u"][0], nu=L["nu"],
            on_R=[float(x) for x in np.asarray(b.onode.R, float).ravel()], on_l=[float(x) for x in b.onode.xyz],
            pinv_R=[float(x) for x in np.asarray(pinv.R, float).ravel()], pinv_l=[float(x) for x in pinv.xyz],
            M=[[float(x) for x in row] for row in M],
            X_const=st["transform"], H_const=st["coord_map"], Hd_const=st["coord_map_dot"],
            X_alias=st["transform_alias"], H_alias=st["coord_map_alias"], Hd_alias=st["coord_map_dot_alias"],
            armature=[float(a) for a in b.armature] or None, flex=_flex_info(b, L)))
    return bodies


def _flex_info(b, L):
    """A flexible body's modes for the tracer (:class:`symgen.algorithms.soa.FlexInfo`), None for a rigid one."""
    if not b.n_modes:
        return None
    import numpy as np

    F, n = b.flex, b.n_modes
    Linv = np.linalg.inv(np.linalg.cholesky(F.modal_mass_matrix()))
    return soa.FlexInfo(s=[[float(x) for x in nd.pos] for nd in F.nodes], m=[float(nd.mass) for nd in F.nodes],
                        Phi=[[[float(md.shape[i][r]) for md in F.modes] for r in range(3)] for i in range(len(F.nodes))],
                        k=[F.stiffness(j) for j in range(n)], c=[F.damping(j) for j in range(n)],
                        q0=L["modes"]["q"][0], u0=L["modes"]["u"][0],
                        Linv=[[float(Linv[i][j]) if j <= i else 0.0 for j in range(n)] for i in range(n)])


def _emit_model_dynamics(model, layout, slugs, index, name, L, form="auto", derivatives=False, hinges=None) -> dict:
    """The dynamics kernels' bodies, one form per entry point, both from :mod:`symgen.algorithms.soa`'s steps: with
    ``form="auto"`` each entry point takes the form :func:`symgen.codegen.schedule.choose` (the cost model)
    chooses, straight-line or the per-kind form (:mod:`symgen.codegen.perkind`); ``form="per_kind"``
    takes the per-kind form for all three (what tests compare the straight-line form with).  ``atbi_matrices``
    (introspection: the factorization's matrices at every body) always takes the per-kind form, which compiles
    in a fraction of the straight-line form's time (FD's tip-to-base steps, FD's own when FD takes that form
    too).  ``forms`` says which entry point took which, ``form_reasons`` why."""
    from .perkind import PerKindForm

    if form not in soa.FORMS:
        raise ValueError(f"form must be one of {', '.join(map(repr, soa.FORMS))}, not {form!r}")
    bodies = body_infos(model, layout, slugs, index)
    flexible = [b.name for b in bodies if b.flex]
    # the centroidal functions compile on first use with the derivatives (abi.layout.ALL_DERIVATIVE_PARTS): a module
    # without them has their stubs only, so their code is generated with the derivatives (rodent: 3 s of emit)
    traced = _traced_dynamics(bodies, L, layout, slugs, straight=form == "auto", centroidal=bool(derivatives))
    if flexible and not all(traced[k] for k in ("fd", "id", "mm")):
        from ..model import ModelError

        raise ModelError(f"{model.source or model.name}: flexible bodies ({', '.join(flexible)}) have the "
                         "straight-line dynamics only, and " +
                         ("this build asks for the per-kind form (form='per_kind')" if form != "auto" else
                          "this model is past symgen.codegen.schedule's size limits"))
    # a flexible model's derivative module holds the centroidal functions only (its derivative functions are not
    # generated yet: the verbs say so, MultibodyModel._tree_only)
    if L.theta_blocks and not (traced["fd"] and traced["mm"]):
        from ..model import ModelError

        raise ModelError(f"{model.source or model.name}: parametric builds need the straight-line dynamics, and "
                         + ("this build asks for the per-kind form (form='per_kind')" if form != "auto" else
                            "this model is past symgen.codegen.schedule's size limits") + "; build it without parameters=")
    lane_kernels = {}            # the hinge kernels on lane vectors, printed once for every lane function
    lanes = emit_lanes(bodies, layout, slugs, L, traced["tapes"], hinges=hinges, kernels=lane_kernels,
                       dyn_bodies=traced["dyn_bodies"], name=name)
    per_kind_entries = tuple(k for k in ("fd", "id", "mm") if traced[k] is None)
    per_kind = PerKindForm(bodies, L, name, hinges)     # atbi_matrices and upsilon: every body's matrices
    # the entry points that take the looped schedule run over the fused tree (as the unrolled ones do:
    # soa.fuse_static), with tables and steps of their own (sg_<m>_dyn_...), where fusing removes bodies
    looped_form = per_kind
    if per_kind_entries and len(traced["dyn_bodies"]) < len(bodies):
        from .perkind import fused_tree

        L_dyn, fused = fused_tree(bodies, traced["dyn_bodies"], traced["dyn_adds"], L)
        looped_form = PerKindForm(traced["dyn_bodies"], L_dyn, f"{name}_dyn", hinges, fused=fused)
    mats_upsilon = () if flexible else ("mats", "upsilon")
    if looped_form is per_kind:
        drivers = per_kind.emit(per_kind_entries + mats_upsilon)
    else:
        drivers = {**per_kind.emit(mats_upsilon), **looped_form.emit(per_kind_entries)}
    # the looped lane form of the entry points that take the per-kind form (their steps for SG_W states at once)
    looped = looped_form.emit_lanes(per_kind_entries, hinges or {}, layout, lane_kernel_lines) \
        if per_kind_entries and not flexible else {}
    for k, lines in looped.items():
        lanes[k] = _looped_lane_function(k, lines, L, rows=k == "mm" and looped_form.mm_rows())
    t0 = L.params["tau"]
    for k in ("fd", "id"):        # the batches of states that share p but for T / Udot (plan.CBatch.mid): where the
        f = lanes[k]              # lane function takes p in lanes, the offset and count of T / Udot among its entries
        if f:
            f["mid"] = (t0, max(0, min(L.nu, f["p_lanes"][0] - t0))) if f["p_lanes"] else None
    if looped:
        lanes["looped"] = {"part": LOOPED_LANES_PART, "functions": looped_form.lane_functions}
        lanes["sincos"] = lanes["sincos"] or any("sg_sincos_split_lanes(" in x for x in looped_form.lane_functions)
    fd = traced["fd"] or c_lines(P.Program([P.Return(P.Call(f"sg_{name}_fd_per_kind", ("q", "u", "p", "out", None)))]))
    mats = drivers.get("mats")
    if flexible:               # the per-kind steps know no modes: these two refuse (status -1) rather than mislead
        refuse = c_lines(P.Program([P.Comment("not available for a model with flexible bodies (the per-kind form "
                                              "has no modes)"), P.Return(-1)]), unused=("q", "u", "p", "out"))
        mats, drivers["upsilon"] = refuse, list(refuse)
    id_, mm = traced["id"] or drivers["id"], traced["mm"] or drivers["mm"]
    # long functions are compiled as translation units of their own, in parallel (templates/model.c.jinja)
    long_ = lambda lines: len(lines) >= soa.SPLIT_MIN_LINES  # noqa: E731
    parts = {"fd": 1 if long_(fd) else 0, "id": 2 if long_(id_) else 0, "mm": 3 if long_(mm) else 0}
    # a lane function from soa.LANE_SPLIT_MIN_LINES is a translation unit of its own too (4, 5, 6), so that it
    # compiles beside its one-state twin instead of after it
    # made_parts: the parts besides 0 (the build orders them by their lines in the rendered file,
    # symgen.codegen.render.part_sizes); one step's derivatives (templates/helpers/step_derivatives.c) are one
    made_parts = {STEP_PART, DERIVATIVE_GLUE_PART} | {parts[k] for k in ("fd", "id", "mm") if parts[k]}
    for i, k in enumerate(("fd", "id", "mm")):
        if lanes[k] and not lanes[k].get("looped"):
            size = lanes[k].get("size", len(lanes[k]["lines"]))           # its segments' lines included
            lanes[k]["part"] = 4 + i if size >= soa.LANE_SPLIT_MIN_LINES else parts[k]
            if lanes[k]["part"]:
                made_parts.add(lanes[k]["part"])
    if looped:
        made_parts.add(LOOPED_LANES_PART)
    # the centroidal momentum matrix (with its lane form) and the momentum's rate: translation units of their own,
    # compiled on first use with the derivatives (abi.layout.ALL_DERIVATIVE_PARTS): with them in every module the
    # suite's models took a quarter more compile time, Talos's cold build 30 -> 40 s
    for k in ("cm", "cd"):
        parts[k] = CENTROIDAL_PARTS[k]
        made_parts.add(parts[k])
        if lanes[k]:
            lanes[k].update(part=parts[k], guard="!defined(SG_NO_DERIVATIVES)")
    # the per-kind form (its steps, atbi_matrices, upsilon, and the entry points that take it) is a translation
    # unit of its own, compiled beside part 0 (which keeps a copy of the topology tables it reads): a per-kind
    # model's part 0 was its whole file but the lanes (tiago_dual: 21 s of -O3 on one core, the other idle)
    mats_part = MATS_PART if per_kind.functions or looped_form.functions else 0
    if mats_part:
        for k in ("fd", "id", "mm"):
            if not traced[k]:
                parts[k] = MATS_PART
        made_parts.add(mats_part)
    derivs = _emit_derivatives(bodies, L, layout, slugs, straight=traced["fd"] is not None, hinges=hinges,
                               name=name, kernels=lane_kernels, dyn=(traced["dyn_bodies"], traced["dyn_adds"])) \
        if derivatives and not flexible else {"fd": None, "id": None}
    derivative_per_kind = derivs.pop("per_kind", None)
    derivative_widths = derivs.pop("per_kind_widths", None)
    lanes.update(fd_derivatives=None, id_derivatives=None)
    for k, f in derivs.items():
        if f:
            f["part"] = DERIVATIVE_PARTS[k]                 # each a translation unit of its own
            made_parts.add(f["part"])
            if f["lanes"]:                                  # its lane-batch form too, compiled beside it
                # (the looped analytic recursions' lanes in the function's part: they call the step functions there)
                f["lanes"]["part"] = f["part"] if f["lanes"].get("with_function") else DERIVATIVE_LANE_PARTS[k]
                made_parts.add(f["lanes"]["part"])
                lanes["sincos"] = lanes["sincos"] or f["lanes"]["sincos"]
            lanes[f"{k}_derivatives"] = f["lanes"]
    # a long straight-line FD or ID: printed as segments (segmented_function), in the same part
    before = {"fd": [], "id": []}
    for k, fn in (("fd", f"sg_{name}_forward_dynamics"), ("id", f"sg_{name}_inverse_dynamics")):
        if traced[k] and traced["tapes"][k] is not None:
            seg = segmented_function(traced["tapes"][k], len(traced[k]), traced["dyn_bodies"], L.nu, layout, slugs,
                                     fn, k == "fd")
            if seg is not None:
                before[k] = seg[1]
                if k == "fd":
                    fd = seg[0]
                else:
                    id_ = seg[0]
    # the straight-line analytic ID derivatives compile at -O2 where the module takes -O3 (pipeline.package): the
    # same bits and speed, in half the time (Talos's lane part: 118 s against 255)
    part_opt = {p: 2 for p in (DERIVATIVE_PARTS["id"], DERIVATIVE_LANE_PARTS["id"])
                if derivs["id"] and derivs["id"].get("straight_tangent")}
    # a per-kind part that holds only atbi_matrices and upsilon (introspection, no entry point's dynamics) compiles
    # at -O1: arm7's in 0.24 s against 0.42 of a core at -O3
    if mats_part and not per_kind_entries:
        part_opt[mats_part] = 1
    forms = {"forward_dynamics": "straight" if traced["fd"] else "per_kind",
             "inverse_dynamics": "straight" if traced["id"] else "per_kind",
             "mass_matrix": "straight" if traced["mm"] else "per_kind"}
    form_reasons = dict(zip(forms, (traced["why"][k] for k in ("fd", "id", "mm"))))
    return {"parts": parts, "made_parts": made_parts, "part_opt": part_opt, "forms": forms,
            "form_reasons": form_reasons, "lanes": lanes, "derivs": derivs,
            "derivs_asked": bool(derivatives),
            "per_kind_functions": per_kind.functions + per_kind.tables + (
                looped_form.functions + looped_form.tables if looped_form is not per_kind else []),
            "per_kind_tables": per_kind.c_tables() + (looped_form.c_tables() if looped_form is not per_kind else []),
            "fd_per_kind": drivers.get("fd"),
            "fd_lines": fd, "id_lines": id_, "mm_lines": mm, "atbi_matrices_lines": mats,
            "fd_before": before["fd"], "id_before": before["id"],
            "cm_lines": traced["cm"], "cd_lines": traced["cd"],
            "upsilon_lines": drivers["upsilon"],
            "per_kind_entries": ", ".join([k for k, v in forms.items() if v == "per_kind"] + ["atbi_matrices", "upsilon"]),
            "p_size": L.params.size, "mats_size": L.mats.size * L.nb, "mats_block": L.mats.size, "mats_part": mats_part,
            "step_part": STEP_PART,
            "derivative_parts": sorted(ALL_DERIVATIVE_PARTS), "glue_part": DERIVATIVE_GLUE_PART,
            "derivative_per_kind": derivative_per_kind, "derivative_per_kind_part": DERIVATIVE_PARTS["id"],
            "derivative_widths": derivative_widths,
            # the derivatives take the per-kind form (declared alike in the module without them: one header)
            "per_kind_derivatives": traced["fd"] is None and not flexible}


def _emit_derivatives(bodies, L, layout, slugs, straight: bool, hinges=None, name: str = "", kernels=None,
                      dyn=None) -> dict:
    """The derivative functions of FD and ID (:mod:`symgen.codegen.derivatives`): {"fd": {"lines", "lanes"},
    "id": ...}, None for one that is not generated (the trace is over the length limit); "lanes": the
    lane-batch form (hinge kernels on lane vectors from ``hinges`` where they print so; ``kernels``: the values'
    lane functions' dict of them, see :func:`lane_kernel_head`).  Where FD takes the
    per-kind form, so do they (:class:`symgen.codegen.perkind.PerKindDerivatives`): then "per_kind" holds the
    step functions and tables the ID part compiles, and each function's "per_kind" is True.  A straight-line
    model's FD derivatives whose forward mode is :data:`symgen.codegen.schedule.FD_DERIVATIVES_LTL_FROM` lines or
    longer take the per-kind FD derivatives (ID's, then the LTL solve) too.  ``dyn``: (the fused tree, its static
    bodies: soa.fuse_static) that the looped analytic recursions of ID's derivatives and the LTL solve run over
    (:func:`symgen.codegen.perkind.fused_tree`, steps and tables sg_<m>_dyn_d_...) where fusing removes bodies."""
    from . import schedule
    from .derivatives import emit_derivatives, emit_rnea_derivatives

    out = {"fd": None, "id": None}
    kernels = {} if kernels is None else kernels

    def lane_head(items, strides, size):
        return lane_kernel_head(items, bodies, L.nu, layout, slugs, strides, size, hinges, kernels)

    from .perkind import PerKindDerivatives

    nq = sum(layout[b.name]["nq"] for b in bodies)
    # inverse dynamics along the tangent: the analytic recursions, one state and in lanes (the forward mode keeps the
    # full-coordinate directions, which the step derivatives take).  Looped (their per-kind steps) wherever the
    # per-kind form reads the bodies' inertias (not a parametric build's, which p carries): as fast as the
    # straight-line printing or faster (arm7 0.57 against 0.59 us a state, the quadruped 2.6 against 2.9, Talos 10.6
    # against 13.4: a few small functions in the cache instead of one long one) and compiled in seconds (Talos's
    # straight-line recursions: 26,500 lines, minutes at -O2)
    looped = bool(L.nu) and not L.theta_blocks and not any(b.flex for b in bodies) and hinges is not None

    def recursions():
        """The PerKindDerivatives of the looped recursions: over the fused tree where it has fewer bodies."""
        if dyn is None or len(dyn[0]) == len(bodies):
            return PerKindDerivatives(bodies, L, name, layout, hinges)
        from .perkind import fused_tree

        L_dyn, fused = fused_tree(bodies, dyn[0], dyn[1], L)
        return PerKindDerivatives(dyn[0], L_dyn, f"{name}_dyn_d", layout, hinges, fused=fused, model=name)

    def tables_of(pk):
        return pk.c_tables() if pk.fused else []

    def looped_tangent(pk):
        """(the body of sg_<m>_id_derivatives_tangent, its lane form) by the looped recursions, or (None, None)."""
        if not looped:
            return None, None
        return pk.emit_rnea_derivatives(), pk.emit_rnea_derivative_lanes(nq, hinges, lane_kernel_lines)

    if not straight:
        pk = PerKindDerivatives(bodies, L, name, layout, hinges)
        drivers = pk.emit_derivatives(nq)
        from .perkind import DERIVATIVE_PARAMS

        dl = pk.emit_lane_derivatives(nq)
        pkd = recursions() if looped else pk
        tangent_lines, tangent_lanes = looped_tangent(pkd)
        one = c_function(P.Function(f"sg_{name}_id_derivatives_1", DERIVATIVE_PARAMS, [P.Traced(drivers["id"])],
                                    doc="the derivatives of inverse dynamics, one direction at a time", returns="int"))
        fd_lanes = pkd.fd_derivative_lanes(nq) if tangent_lanes else None   # the ID lanes at FD's Udot
        return {"fd": {"lines": drivers["fd"], "lanes": fd_lanes, "per_kind": True, "solve": pk.fd_solve},
                "id": {"lines": [], "lanes": tangent_lanes or None, "per_kind": True, "tangent_lines": tangent_lines,
                       "directions_on_lanes": True},
                "per_kind": tables_of(pkd) + pk.functions + pk.seed_functions + pk.tables
                + (pkd.functions + pkd.tables if pkd is not pk else []) + one,
                "per_kind_widths": dl}
    for k in out:
        f = emit_derivatives(k, bodies, L, layout, slugs, lambda: HingeCalls(layout, slugs), kernel_arrays,
                             lambda T, bs: parametric_bodies(T, bs, L), lane_head)
        out[k] = f and {**f, "per_kind": False}
    if out["id"] and looped:
        pk = recursions()
        out["id"]["tangent_lines"], out["id"]["lanes"] = looped_tangent(pk)
        out["per_kind"] = tables_of(pk) + pk.functions + pk.tables
        if out["fd"] and len(out["fd"]["lines"]) >= schedule.FD_DERIVATIVES_LTL_FROM:
            # a long forward mode: FD's derivatives from ID's and the LTL solve (schedule.FD_DERIVATIVES_LTL_FROM)
            body, solve = pk.fd_derivative_functions(nq)
            out["fd"] = {"lines": body, "lanes": pk.fd_derivative_lanes(nq) if out["id"]["lanes"] else None,
                         "per_kind": True, "solve": solve}
        return out
    tangent_form = out["id"] and emit_rnea_derivatives(     # a parametric build's: straight-line
        name, bodies, L, layout, lambda: HingeCalls(layout, slugs), kernel_arrays,
        lambda T, bs: parametric_bodies(T, bs, L), lane_head)
    if tangent_form:
        out["id"].update(tangent_lines=tangent_form["lines"], lanes=tangent_form["lanes"], straight_tangent=True)
    return out


def _qdot_lanes(model, layout, hinges, nq: int, nu: int) -> list | None:
    """The body of ``sg_<m>_qdot_lanes`` (templates/helpers/rollout.c.jinja): Qdot = N(Q) U for SG_W rows at
    once, on lane vectors: each hinge's non-constant entries of N by :func:`lane_kernel_lines` (its qdot_map
    kernel's statements) and the rows as :func:`_qdot_lines` sums them, in the same order (the same bits as
    ``sg_<m>_qdot`` per row); a flexible body's modes ``Qdot = U``.  None when a hinge's N has no lane form
    (a function call in it): the rollout then takes Qdot one row at a time."""
    lines = []
    for k, b in enumerate(model.bodies):
        L = layout[b.name]
        q0, u0, hnq, hnu = L["q"][0], L["u"][0], L["nq"], L["nu"]
        if hnq:
            N_const = L["structure"].get("qdot_map")
            live = [i for i, c in enumerate(N_const) if c is None]
            if live:
                kernel = lane_kernel_lines(hinges[b.name], "qdot_map", live, f"N{k}", q0, u0, 0)
                if kernel is None:
                    return None
                lines += c_lines(P.Program([P.Locals(arrays=((f"N{k}", hnq * hnu),), comment=f"'{b.hinge_name}'")]),
                                 lanes=True) + kernel
            lines += c_lines(P.Program([P.Set(P.Elem("o_l", q0 + i), _qdot_sum(N_const, i, hnu, u0, f"N{k}", "u_l")
                                              or P.Zeros()) for i in range(hnq)]), lanes=True, zero=None)
        if "modes" in L:
            (mq0, mq1), mu0 = L["modes"]["q"], L["modes"]["u"][0]
            lines += c_lines(P.Program([P.Set(P.Elem("o_l", mq0 + i), P.Elem("u_l", mu0 + i))
                                        for i in range(mq1 - mq0)]), lanes=True)
    return lines or None                                 # no Q (every hinge locked): nothing to take


def _qdot_lines(N_const, slug: str, hinge: str, q0: int, u0: int, nq: int, nu: int) -> list:
    """A hinge's rows of Qdot = N(Q) U (statements): the qdot_map kernel into N only when N has an entry that
    depends on Q (``N_const``: kernel_structure's constants, None where an entry is not one), then one sum per row
    without its zero entries (a PIN or SLIDER is ``out[i] = u[j]``, a free joint's translation too)."""
    out = [P.Comment(f"hinge '{hinge}'")]
    if N_const is None or any(c is None for c in N_const):
        out.append(P.Invoke(f"sg_{slug}_qdot_map", (P.At("q", q0), P.At("u", u0), None, "N"), check=False))
    return out + [P.Set(P.Elem("out", q0 + i), _qdot_sum(N_const, i, nu, u0, "N", "u") or P.Num(0.0))
                  for i in range(nq)]


def _qdot_sum(N_const, i: int, nu: int, u0: int, N: str, u: str):
    """Row i of N(Q) U, in j order (the one-state and the lane forms sum alike): ``N[i nU + j] * u[u0 + j]``
    where the entry is not a constant, the constant ones folded (1 and -1 signs, 0 dropped); None for none."""
    total = None
    for j in range(nu):
        c, x = None if N_const is None else N_const[i * nu + j], P.Elem(u, u0 + j)
        if c is None:
            term = P.Bin("*", P.Elem(N, i * nu + j), x)
        elif c == 1.0:
            term = x
        elif c == -1.0:
            term = P.Neg(x)
        elif c != 0.0:
            term = P.Bin("*", P.Num(c), x)
        else:
            continue
        total = term if total is None else P.Bin("+", total, term)
    return total




def parametric_bodies(T, bodies, L) -> list:
    """The bodies with the parameters of a parametric build (:attr:`symgen.abi.layout.ModelLayout.theta_blocks`)
    as runtime inputs read from p instead of folded constants: a body's rigid inertia (m, h, J about its
    origin), a hinge's armature."""
    import dataclasses

    out = list(bodies)
    for blk in L.theta_blocks:
        b, p = out[blk["body"]], [T.input(f"p[{blk['offset'] + i}]") for i in range(blk["size"])]
        if blk["kind"] == "inertia":
            J = [[p[4], p[5], p[6]], [p[5], p[7], p[8]], [p[6], p[8], p[9]]]
            out[blk["body"]] = dataclasses.replace(b, M=soa.rigid_inertia(p[0], p[1:4], J))
        else:
            out[blk["body"]] = dataclasses.replace(b, armature=p)
    return out


def _traced_dynamics(bodies, L, layout, slugs, straight: bool = True, centroidal: bool = True) -> dict:
    """Straight-line bodies of forward dynamics, inverse dynamics and the mass matrix (:mod:`symgen.algorithms.soa`);
    None for those that take the per-kind form: all with ``straight=False``, else those symgen.codegen.schedule's
    cost model loops (FD and ID together by FD's length, M by its walk).  ``tapes``: the traced tape of each
    straight-line one (None where it has none), which the lane form prints a second way; ``why``: the cost model's
    reason for each entry point's form."""
    from functools import partial

    from . import schedule

    pinned = bool(L.theta_blocks) or any(b.flex for b in bodies)

    none = {"fd": None, "id": None, "mm": None}
    io = soa.ArrayIO(L)
    tapes = dict(none)
    # FD, ID, M and the centroidal functions run over the tree with its static subtrees fused into their moving
    # ancestors (soa.fuse_static); a parametric build's inertias come from p, so it keeps every body
    dyn, adds = (list(bodies), {}) if pinned else soa.fuse_static(bodies)
    dyn_io = soa.FusedIO(io, dyn, adds) if adds else io

    def trace(key, fn, over=bodies, with_io=io):
        run, kept = partial(fn, io=with_io), []
        lines = _trace_function(lambda T, bs, n_u: run(T, parametric_bodies(T, bs, L), n_u), over, L.nu,
                                HingeCalls(layout, slugs), kept)
        tapes[key] = kept[0]
        return lines

    # the centroidal functions are O(n) in every model (no ancestor walk): straight-line whatever the size; traced
    # only for a module that compiles them (``centroidal``: the one with the derivatives)
    centroidal = ({"cm": trace("cm", soa.centroidal_momentum_matrix, dyn, dyn_io),
                   "cd": trace("cd", soa.centroidal_dynamics, dyn, dyn_io)} if centroidal else {"cm": None, "cd": None})
    if not straight:
        why = {k: "form='per_kind'" for k in ("fd", "id", "mm")}
        return {**none, **centroidal, "tapes": {**tapes, **none}, "why": why, "dyn_bodies": bodies, "dyn_adds": {}}
    fd = trace("fd", soa.atbi, dyn, dyn_io)
    plan = schedule.choose(dyn, len(fd), pinned=pinned)
    if plan["fd"] != schedule.UNROLLED:
        tapes["fd"] = None
    unrolled = {k: plan[k] == schedule.UNROLLED for k in ("fd", "id", "mm")}
    return {"fd": fd if unrolled["fd"] else None, "id": trace("id", soa.rnea, dyn, dyn_io) if unrolled["id"] else None,
            "mm": trace("mm", soa.crba, dyn, dyn_io) if unrolled["mm"] else None, **centroidal, "tapes": tapes,
            "why": plan["why"], "dyn_bodies": dyn, "dyn_adds": adds}


def traced_programs(model, layout: dict, slugs: dict, name: str | None = None) -> dict:
    """The typed programs (:class:`symgen.ir.tape.Tape`) of a tree's straight-line entry points, for a printer other
    than C's (the tests' numpy printer): ``{"bodies": [BodyInfo], "layout": ModelLayout, "programs": {kind: Tape}}``
    with kind in fd (ATBI), id (Newton-Euler), mm (the mass matrix), cm (the centroidal momentum matrix), cd (its
    rate), each present when that entry point is straight-line.  ``layout``, ``slugs``: as :func:`emit_model`'s
    (:func:`symgen.pipeline.sources.model_programs` computes them).  A program reads ``q``, ``u``, ``p`` (the
    layout's params) and the hinge kernels' outputs ``X<k>`` (transform, 4 x 4), ``H<k>`` (coord map, 6 x nU),
    ``Hd<k>`` (its derivative) of body k, and writes ``out``; and idd, inverse dynamics' derivatives along the
    tangent (:func:`symgen.codegen.derivatives.trace_rnea_derivatives`, which says what else it reads), for a
    tree of rigid bodies.  ``looped``: the looped programs (:class:`symgen.ir.program.Program`) named by the
    model's C ``name`` (when given): ``fd_derivatives``, forward dynamics' derivatives from inverse dynamics' by
    the LTL factorization of M and its solves, which calls ``sg_<name>_forward_dynamics`` and
    ``sg_<name>_id_derivatives``."""
    from ..abi.layout import ModelLayout
    from ..model.parameters import resolve

    n_modes = [layout[b.name].get("modes", {}).get("n", 0) for b in model.bodies]
    L = ModelLayout([(layout[b.name]["nq"], layout[b.name]["nu"]) for b in model.bodies], [],
                    resolve(model, [layout[b.name]["nu"] for b in model.bodies]), n_modes)
    bodies = body_infos(model, layout, slugs, {b.name: i for i, b in enumerate(model.bodies)})
    tapes = _traced_dynamics(bodies, L, layout, slugs)["tapes"]
    if L.nu and not any(b.flex for b in bodies):
        from .derivatives import trace_rnea_derivatives
        tapes["idd"] = trace_rnea_derivatives(bodies, L, layout, lambda T, bs: parametric_bodies(T, bs, L))
    looped = {}
    if name is not None and L.nu and not any(b.flex for b in bodies):
        from .perkind import PerKindDerivatives

        pk = PerKindDerivatives(bodies, L, name, layout)
        nq = sum(layout[b.name]["nq"] for b in model.bodies)
        looped["fd_derivatives"], looped["fd_derivatives_solve"] = pk.fd_derivatives_program(nq), pk.fd_solve_program(nq)
    return {"bodies": bodies, "layout": L, "programs": {k: T for k, T in tapes.items() if T is not None},
            "looped": looped}


def kernel_arrays(T, bodies) -> list:
    """The hinge kernel outputs a traced function reads (``X<k>``, ``H<k>``, ``Hd<k>``, filled by the body's
    transform, coord map and its derivative): (body, array, kernel, size, entries read), in body order."""
    read = {}
    for text in T.live_inputs():
        m = re.fullmatch(r"((?:X|H|Hd)\d+)\[(\d+)\]", text)
        if m:
            read.setdefault(m.group(1), []).append(int(m.group(2)))
    return [(b, arr, kernel, size, sorted(read[arr])) for b in bodies
            for arr, kernel, size in ((f"X{b.tag}", "transform", 16), (f"H{b.tag}", "coord_map", 6 * b.nu),
                                      (f"Hd{b.tag}", "coord_map_dot", 6 * b.nu)) if arr in read]


def segmented_function(T, n: int, bodies, nu, layout, slugs, fn: str, returns: bool) -> tuple | None:
    """The straight-line function of tape ``T`` (what :func:`_trace_function` prints) as segments of about
    :data:`symgen.algorithms.soa.SEGMENT_LINES` lines: ``(wrapper lines, segment functions' lines)``, the wrapper computing the hinge
    kernels into one array ``sg_w`` that every segment reads, then calling ``<fn>_seg<j>(q, u, p, out, sg_w, sg_c)``
    in order (``returns``: the function returns a status, which a segment's pivot check gives and the wrapper
    passes on); ``n``: its length in lines.  None when the function is short or its tape cannot be cut
    (``Tape.segments``)."""
    cut = T.segments(-(-n // soa.SEGMENT_LINES)) if n > soa.SEGMENT_LINES else None
    if cut is None:
        return None
    calls, w, ptrs = HingeCalls(layout, slugs), 0, {}
    items = [(b, arr, calls(b.name, kernel, arr), size) for b, arr, kernel, size, _ in kernel_arrays(T, bodies)]
    wrapper = []
    n_ang = len(calls._angles)
    if n_ang:
        ptrs.update(ang=0, sc=n_ang)
        w = 3 * n_ang
        wrapper += [P.Comment("the hinges' angles; (sin, cos) of each"), P.View("ang", "sg_w", 0),
                    P.View("sc", "sg_w", n_ang), P.Traced(calls.head()[1:])]   # (head's first line declares them)
    for b, arr, call, size in items:
        ptrs[arr] = w
        wrapper += [P.Comment(f"'{b.name}'"), P.View(arr, "sg_w", w), P.Traced([call])]
        w += size
    slots = cut["slots"]
    wrapper = [P.Locals(arrays=(("sg_w", w),), comment="the hinge kernels' outputs, which every segment reads"),
               P.Locals(arrays=(("sg_c", len(slots)),), comment="the values a segment passes on to a later one")] + wrapper
    args = ("q", "u", "p", "out", "sg_w", "sg_c")
    params = (*(P.Param(x, const=True) for x in ("q", "u", "p")), P.Param("out"), P.Param("sg_w", const=True),
              P.Param("sg_c"))
    before = []
    for j, seg in enumerate(cut["segments"]):
        name = f"{fn}_seg{j}"
        body = [P.View(a, "sg_w", ptrs[a], const=True) for a in sorted(seg["arrays"]) if a in ptrs]
        body += [P.Def(v, P.Elem("sg_c", slots[v])) for v in seg["carry_in"]]
        lines = seg["lines"]
        tail = [P.Set(P.Elem("sg_c", slots[v]), P.Scalar(v)) for v in seg["carry_out"]]
        if lines and lines[-1].startswith("return"):       # the traced function's own last statement
            body += [P.Traced(lines[:-1]), *tail, P.Traced(lines[-1:])]
        else:
            body += [P.Traced(lines), *tail, P.Return(0)]
        before += c_function(P.Function(name, params, body, returns="int",
                                        doc=f"{fn}, segment {j + 1} of {len(cut['segments'])} "
                                            "(emit.segmented_function)")) + [""]
        wrapper.append(P.Invoke(name, args, check=returns))
    if returns:
        wrapper.append(P.Return(0))
    return c_lines(P.Program(wrapper), unused=("q", "u", "p", "out")), before


def _trace_function(fn, bodies, nu, calls, tapes: list | None = None) -> list:
    """Trace one algorithm; prepend the hinge kernel calls whose outputs the live code reads.  ``tapes``: a
    list the tape is appended to (None when the trace stopped at a constant D that is not positive definite),
    for a second printing (the lane form)."""
    from ..algorithms.soa import NotPositiveDefinite
    from ..ir.tape import Tape

    T = Tape()
    try:
        fn(T, bodies, nu)
    except NotPositiveDefinite as e:
        b = bodies[e.k]
        if tapes is not None:
            tapes.append(None)
        return c_lines(P.Program([P.Comment(f"D of '{b.name}' is constant and not positive definite"),
                                  P.Return(int(b.status))]), unused=("q", "u", "p", "out"))
    if tapes is not None:
        tapes.append(T)
    body = T.lines()
    head = []
    for b, arr, kernel, size, _ in kernel_arrays(T, bodies):
        head += [P.Locals(arrays=((arr, size),), comment=f"'{b.name}'"), P.Traced([calls(b.name, kernel, arr)])]
    # the calls first (they fill calls.head()); Locals are declared ahead of every statement
    return c_lines(P.Program([P.Traced(calls.head()), *head, P.Traced(body)]), unused=("q", "u", "p", "out"))


# --------------------------------------------------------------------------------------------------
# the lane form: the traced FD, ID and M printed a second way, for SG_W states per call
# --------------------------------------------------------------------------------------------------

#: straight-line functions longer than this get no lane form (their batches stay one state at a time).  The
#: straight-line limit itself (schedule.STRAIGHT_LINE_LIMIT): every straight-line FD, ID and M gets its lane form.  It
#: was 6,000, which left Talos (38 DOF, floating) without lanes: its batched FD went from 4.2 to 1.1 µs per state
#: with them, its cold build from 16.7 to 20.2 s (both measured beside other work)
LANE_MAX_LINES = 10000
#: the lane arrays a straight-line lane function reads and writes in place of q, u, p and out
_LANE_ARRAYS = {"q": "q_l", "u": "u_l", "p": "p_l", "out": "out_l"}




def _looped_lane_function(kind: str, lines: list, L, rows: bool = False) -> dict:
    """The pieces of templates/helpers/lanes.c.jinja for a lane function of the looped schedule
    (:meth:`symgen.codegen.perkind.PerKindForm.emit_lanes`: ``lines`` its body): the whole of q (and u) into
    vector arrays, the outputs from out_l (``rows``: the body writes the states' rows of out itself, M's
    :meth:`~symgen.codegen.perkind.PerKindForm.mm_rows`); FD and ID take p already in lanes."""
    nq, nu, n_p = L.nq, L.nu, L.params.size
    ins = {"fd": [("q", nq, nq), ("u", nu, nu)], "id": [("q", nq, nq), ("u", nu, nu)],
           "mm": [("q", nq, nq)]}[kind]
    ins = [x for x in ins if x[1]]
    out_size = nu * nu if kind == "mm" else nu
    return {"ins": ins, "head": [], "lines": lines, "loop_i": True, "out_l": bool(out_size) and not rows, "guard": "",
            "unused": [a for a in ("q", "u", "p", "out") if a not in {x[0] for x in ins}
                       and not (a == "p" and kind in ("fd", "id")) and not (a == "out" and out_size)],
            "out_size": out_size, "sincos": False, "p_lanes": (n_p, n_p) if kind in ("fd", "id") else None,
            "part": LOOPED_LANES_PART, "looped": True}


def _lane_function(T, bodies, nu, layout, slugs, p_stride, out_size, p_lanes=False, hinges=None,
                   kernels=None, fn: str | None = None, calls_per_lane: bool = False) -> dict | None:
    """One traced algorithm (its tape, None for a trace that stopped at a constant D that is not positive
    definite) printed as a lane function (templates/helpers/lanes.c.jinja), or None when it has no lane form.
    Returns the pieces the template prints: the inputs to transpose into lane-major arrays ``<a>_l[i][l]``
    (array, count, row stride), the hinge kernels (on lane vectors where :func:`lane_kernel_lines` prints them from
    ``hinges`` {body: Hinge}, else called per lane; ``kernels``: a dict that keeps them for the other lane
    functions of the model, which read the same kernels), the statements.  ``p_lanes``: the function
    also comes as ``..._lanes_pl``, which takes p already in lanes (``p_l``; the rollout keeps it so from step
    to step); then ``p`` is left out of the inputs and its (count, row stride) is the result's ``p_lanes``.
    ``fn``: the function's name, for its segments (:func:`_lane_segments`) where it is longer than
    :data:`symgen.algorithms.soa.LANE_SEGMENT_LINES` (``before``: their functions, printed before it); None: never segmented.
    ``calls_per_lane``: the tape's local arrays and routine calls (the closed chains' solves) run one lane at a
    time (:meth:`symgen.ir.tape.Tape.lane_lines`' ``batch``), reading the function's own rows of q, u and p."""
    from ..ir.tape import LaneError

    if T is None:
        return None                                       # a constant D that can never be solved: scalar
    strides = {"q": sum(layout[b.name]["nq"] + (b.flex.n if b.flex else 0) for b in bodies), "u": nu, "p": p_stride}
    try:     # the outputs into vectors out_l[i], turned into SG_W rows once at the end (one loop nest, not a
        # per-lane loop per output: the centroidal momentum matrix's 6 nU + 9 took 8.7 s of gcc on Talos, 1.9 s so)
        body = T.lane_lines("sg_vd", "SG_W", _LANE_ARRAYS, batch=strides if calls_per_lane else None)
    except LaneError:
        return None
    if len(body) > LANE_MAX_LINES:
        return None
    size = {}                                             # array -> entries read (max index + 1)
    for text in T.live_inputs():
        m = re.fullmatch(r"(\w+)\[(\d+)\]", text)
        if m:
            size[m.group(1)] = max(size.get(m.group(1), 0), int(m.group(2)) + 1)
    segmented = bool(fn) and len(body) > soa.LANE_SEGMENT_LINES
    got = lane_kernel_head(kernel_arrays(T, bodies), bodies, nu, layout, slugs, strides, size, hinges, kernels,
                           pool="sg_wl" if segmented else None)     # segments read the kernels' arrays in sg_wl
    head, per_lane, sc_calls, angles = got[:4]
    ins = [(a, size[a], strides[a]) for a in ("q", "u", "p") if a in size]
    used = {"q": bool(head) or "q" in size, "u": bool(per_lane) or "u" in size, "p": "p" in size,
            "out": any(re.search(r"\bout_l\[", line) for line in body)}    # no U (every hinge locked): no out
    p_in = [(n, stride) for a, n, stride in ins if a == "p" and p_lanes]
    ins = [x for x in ins if not (p_in and x[0] == "p")]
    have = {a for a, _, _ in ins} | ({"p"} if p_in else set())
    before = []
    if segmented:
        seg = _lane_segments(T, len(body), head, fn, have, used["out"], got[4])
        if seg is not None:
            head, body, before = seg
        else:                  # the tape cannot be cut: the kernels' arrays of their own, as unsegmented
            head = lane_kernel_head(kernel_arrays(T, bodies), bodies, nu, layout, slugs, strides, size, hinges,
                                    kernels)[0]
    return {"ins": ins, "head": head, "lines": body, "loop_i": bool(ins) or sc_calls or used["out"], "out_l": used["out"], "guard": "",
            "unused": [a for a, x in used.items() if not x], "out_size": out_size, "sincos": bool(angles),
            "p_lanes": p_in[0] if p_in else None, "before": before, "size": len(body) + len(before)}


def _lane_segments(T, n: int, head: list, fn: str, have: set, out_l: bool, pool: tuple) -> tuple | None:
    """A lane function's statements as segments (:func:`segmented_function`'s, for SG_W states): ``(head, wrapper
    lines, segment functions)``.  The head's hinge-kernel arrays are pointers into one array of vectors ``sg_wl``
    that every segment reads (``pool``: their offsets there and its size, from :func:`lane_kernel_head`); the
    vectors (``sg_cl``) and doubles (``sg_cs``) a segment passes on to a later one, the lane arrays of q, u, p and
    the outputs are the segments' arguments (0 where the function has none); ``n``: its length in lines."""
    cut = T.lane_segments(-(-n // soa.LANE_SEGMENT_LINES), "sg_vd", "SG_W", _LANE_ARRAYS)
    if cut is None:
        return None
    (ptrs, w), new_head = pool, list(head)
    vec = [v for v in cut["slots"] if v not in cut["scalar"]]
    sca = [v for v in cut["slots"] if v in cut["scalar"]]
    vslot, sslot = {v: i for i, v in enumerate(vec)}, {v: i for i, v in enumerate(sca)}
    new_head = c_lines(P.Program([
        P.Locals(arrays=(("sg_wl", w),), comment="the hinge kernels' outputs, which every segment reads"),
        P.Locals(arrays=(("sg_cl", len(vec)),), comment="the vectors a segment passes on to a later one"),
        P.Locals(doubles=(("sg_cs", len(sca)),), comment="the doubles a segment passes on")]), lanes=True) + new_head
    args = tuple([f"{a}_l" if a in have else None for a in ("q", "u", "p")] + ["out_l" if out_l else None, "st",
                                                                              "sg_wl", "sg_cl", "sg_cs"])
    params = (*(P.Param(f"{x}_l", const=True) for x in ("q", "u", "p")), P.Param("out_l"), P.Param("st", "int"),
              P.Param("sg_wl", const=True), P.Param("sg_cl"), P.Param("sg_cs", "double"))
    before, calls = [], []
    for j, seg in enumerate(cut["segments"]):
        name = f"{fn}_seg{j}"
        body = [P.View(a, "sg_wl", ptrs[a], const=True) for a in sorted(seg["arrays"]) if a in ptrs]
        body += [P.Def(v, P.Elem("sg_cs", sslot[v]), "double") if v in sslot else P.Def(v, P.Elem("sg_cl", vslot[v]))
                 for v in seg["carry_in"]]
        body += [P.Traced(seg["lines"])]
        body += [P.Set(P.Elem("sg_cs", sslot[v]) if v in sslot else P.Elem("sg_cl", vslot[v]), P.Scalar(v))
                 for v in seg["carry_out"]]
        before += c_function(P.Function(name, params, body, target="lanes", ints=("l",),
                                        doc=f"{fn}, segment {j + 1} of {len(cut['segments'])} (emit._lane_segments)"),
                             lanes=True) + [""]
        calls += c_lines(P.Program([P.Invoke(name, args, check=False)]), lanes=True)
    return new_head, calls, before








def emit_lanes(bodies, layout, slugs, L, tapes: dict, width: int | None = None, hinges=None, kernels=None,
               dyn_bodies=None, name: str | None = None) -> dict:
    """The lane form of forward dynamics, inverse dynamics and the mass matrix (``sg_<name>_<kind>_lanes``,
    templates/helpers/lanes.c.jinja): each straight-line function of :func:`_traced_dynamics` (``tapes``) printed
    a second way by :meth:`symgen.ir.tape.Tape.lane_lines`, SG_W states per call.  A kind is left out (its batch
    stays one state at a time) where it has no straight-line form, is longer than :data:`LANE_MAX_LINES`, or has
    a statement without a lane form; so is M of a branched tree (a body with two children: its M has many
    entries for its arithmetic, and per lane it measured slower than one state at a time: floating quadruped
    0.44 against 0.35 µs per state, floating humanoid 1.8 against 1.4; arm7, a chain, 0.05 against 0.10).
    Closed chains' TA dynamics has its own (:func:`emit_loops`' ``ta_lanes``).  FD also comes as ``sg_<name>_fd_lanes_pl`` (p already in lanes), which the
    rollout's blocks of SG_W cases call (templates/helpers/rollout.c.jinja); ``sincos``: a lane function takes
    sines and cosines of hinge angles (``sg_sincos_split_lanes``); ``kernels``: see :func:`lane_kernel_head`;
    ``dyn_bodies``: the tree FD, ID and M run over (static subtrees fused, symgen.algorithms.soa.fuse_static), whose
    branching decides M's lanes (default ``bodies``)."""
    kernels = {} if kernels is None else kernels     # the hinge kernels on lane vectors, printed once
    width = lane_width() if width is None else width  # SG_W: symgen.codegen.lanes

    def lane(key, p_stride, out_size, p_lanes=False):
        fn = f"sg_{name}_{key}_lanes" if name and key in ("fd", "id") else None
        return _lane_function(tapes.get(key), bodies, L.nu, layout, slugs, p_stride, out_size, p_lanes, hinges,
                              kernels, fn=fn)

    from .schedule import branched as branches

    branched = branches(dyn_bodies or bodies)       # a branched tree's M: slower per lane than one state at a time
    kinds = {"fd": lane("fd", L.params.size, L.nu, p_lanes=True), "id": lane("id", L.params.size, L.nu, p_lanes=True),
             "mm": None if branched else lane("mm", L.params.size if L.theta_blocks else 0, L.nu * L.nu),
             # the centroidal momentum's rate has none: the length of inverse dynamics, compile time for a call that
             # MPC makes once per state (its batches go one state at a time)
             "cm": lane("cm", L.params.size if L.theta_blocks else 0, 6 * L.nu + 9), "cd": None}
    if kinds["cm"]:            # its batches write A_G, h_G and c, or A_G alone: out's row length (plan.CLanes.rows)
        kinds["cm"]["rows"] = True
    return {"width": width, **kinds, "sincos": any(f and f["sincos"] for f in kinds.values()), "looped": None}
