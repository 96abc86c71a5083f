"""Derivatives of forward and inverse dynamics: :mod:`symgen.algorithms.soa`'s ATBI and Newton-Euler traced once
more on dual numbers (:mod:`symgen.ir.dual`), printed as one C function each (``templates/model.c.jinja``).

The function computes the values once (scalars), then the tangents group by group: the directions come in
groups (:func:`direction_groups`) of one kind each, and a group's tangents are vectors of its directions (one
lane each, SG_DW lanes per vector).  Each group is traced with only its own seeds, so what is zero for it folds
away: a U direction moves no transform, a T direction none of Newton-Euler, a leg's directions nothing of the
other legs.  The directions, in order: Q (``tangent``: the motion of Q that U = e_j produces,
``Qdot = N(Q) e_j``, nU of them; else each coordinate Q_i, nQ of them), U (nU), and T for forward dynamics or
Udot for inverse dynamics (nU).  Forward dynamics runs its T groups first (M^-1 by the O(n) M^-1 pass), then
its Q and U groups' r = dT - dRNEA times that M^-1, over the rows where r can be nonzero.  The hinge kernels'
outputs take their tangents from the hinges' derivative kernels (:data:`symgen.codegen.kernels.DERIVATIVE_KERNELS`):
``dX = sum_i dX/dQ_i dQ_i``.

``out`` = [d/dQ (nU x nQdir), d/dU (nU x nU), d/dT or d/dUdot (nU x nU)], each row-major: for forward
dynamics dUdot/dQ, dUdot/dU and M^-1; for inverse dynamics dT/dQ, dT/dU and M.
"""
from __future__ import annotations

import re

from ..ir import program as P
from .printer import c_lines

#: derivative functions longer than this (scalar and lane statements) are not generated: the model's derivative
#: calls raise, naming the limit (the straight-line form's compile time grows with its length)
DERIVATIVE_MAX_LINES = 40000

#: directions per group (the AVX-512 copy's vector width; the baseline copy runs a group in blocks of SG_DW)
GROUP = 8

_KERNEL_OF = {"X": "transform", "H": "coord_map", "Hd": "coord_map_dot"}

#: the kinds of directions, in out's order: along Q, of U, of T (forward dynamics) or Udot (inverse dynamics)
_KINDS = ("q", "u", "T")


class _RowsIO:
    """:class:`symgen.algorithms.soa.ArrayIO` writing a group's outputs to ``array[i]`` (a row array: lane l at
    ``array[l * nU + i]``; a vector array: one vector per i)."""

    def __init__(self, io, array):
        self._io, self._array = io, array

    def __getattr__(self, k):
        return getattr(self._io, k)

    def out(self, i):
        return f"{self._array}[{i}]"


def direction_groups(bodies, width: int = GROUP) -> list:
    """The bodies with coordinates in groups whose directions share one lane code, each group at most ``width``
    U's (a body with more is a group of its own).  A direction of body b has tangents on b's subtree (base to
    tip) and on its ancestors (tip to base), zero elsewhere, and the zeros fold away; so a group costs about its
    subtrees' bodies twice plus its ancestors'.  Greedy: merge the two groups that save the most while they fit
    (a floating base's group fills up with directions that ride along for free)."""
    children = {b.k: [] for b in bodies}
    for b in bodies:
        if not b.root:
            children[b.parent].append(b.k)
    by_k = {b.k: b for b in bodies}
    below, above = {}, {}
    for b in reversed(bodies):
        below[b.k] = {b.k}.union(*[below[c] for c in children[b.k]])
    for b in bodies:
        above[b.k] = set() if b.root else above[b.parent] | {b.parent}

    def cost(g):
        sub = set().union(*[below[k] for k in g])
        return 2 * len(sub) + len(set().union(*[above[k] for k in g]) - sub)

    def size(g):
        return sum(by_k[k].nu for k in g)

    groups = [[b.k] for b in bodies if b.nu]
    while True:
        best = None
        for i in range(len(groups)):
            for j in range(i + 1, len(groups)):
                if size(groups[i]) + size(groups[j]) <= width:
                    gain = cost(groups[i]) + cost(groups[j]) - cost(groups[i] + groups[j])
                    if best is None or gain > best[0]:
                        best = (gain, i, j)
        if best is None:
            break
        _, i, j = best
        groups[i] = sorted(groups[i] + groups[j])
        del groups[j]
    return [[by_k[k] for k in g] for g in sorted(groups)]


def kernel_value(T, b, arr, tag, j):
    """Entry j of body b's hinge kernel output ``arr`` (X, H or Hd) as the traced steps read it: a constant, an
    alias of another entry, or the array entry ``<arr><tag>[j]``."""
    own = {"X": (b.X_const, b.X_alias), "H": (b.H_const, b.H_alias), "Hd": (b.Hd_const, b.Hd_alias)}[arr]
    c, a = own[0][j], own[1][j] if own[1] else None
    if c is not None:
        return c
    if a is not None:
        v = kernel_value(T, b, arr, tag, a[0])
        return v if a[1] > 0 else T.neg(v)
    return T.input(f"{arr}{tag}[{j}]", array=f"{arr}{tag}")


def kernel_tangent(T, b, arr, tag, i, structure, nq, seed):
    """The tangent of entry i of body b's hinge kernel output ``arr`` (X, H or Hd): ``sum_j dK_i/dQ_j dQ_j +
    dK_i/dU_j dU_j`` from the hinge's derivative kernels (``structure``: their constant and alias entries, which
    fold; the others are read from ``d<q|u><arr><tag>[...]``).  ``seed(wrt, j)``: the tangent of the body's
    coordinate j of Q or U (a traced value or 0.0)."""
    base = _KERNEL_OF[arr]
    size = 16 if arr == "X" else 6 * b.nu
    pairs = []
    for wrt, n in (("q", nq), ("u", b.nu)):
        kernel = f"{base}_d{wrt}"
        consts, alias = structure.get(kernel), structure.get(f"{kernel}_alias")
        if consts is None:
            continue
        for j in range(n):
            c, a = consts[j * size + i], alias[j * size + i] if alias else None
            s = seed(wrt, j)
            if c == 0.0 or (isinstance(s, float) and s == 0.0):
                continue
            if c is not None:
                entry = c
            elif a is not None:                   # the derivative is an entry of the kernel itself (PIN: -sin)
                entry = kernel_value(T, b, arr, tag, a[0]) if a[1] > 0 else T.neg(kernel_value(T, b, arr, tag, a[0]))
            else:
                entry = T.input(f"d{wrt}{arr}{tag}[{j * size + i}]", array=f"d{wrt}{arr}{tag}")
            pairs.append((entry, s))
    return T.dot(pairs)


def _tangents(bodies, L, layout, seed):
    """``tangent_of(text, T)`` for :class:`symgen.ir.dual.DualTape`: the tangent of each input of the traced
    dynamics, from the seeds and the hinges' derivative kernels (whose constant entries fold).  ``seed(kind, i,
    T)``: the seed of coordinate i of ``kind`` ("q", "u", "T": Q_i, U_i, T_i or Udot_i), a lane input or 0.0."""
    by_tag = {str(b.k): b for b in bodies}
    tau0 = L.params["tau"]

    def tangent_of(text, T):
        m = re.fullmatch(r"(\w+?)(\d*)\[(\d+)\]", text)
        arr, tag, i = m.group(1), m.group(2), int(m.group(3))
        if arr == "u" and not tag:
            return seed("u", i, T)
        if arr == "p" and not tag:
            return seed("T", i - tau0, T) if tau0 <= i < tau0 + L.nu else 0.0
        if arr not in _KERNEL_OF or tag not in by_tag:
            return 0.0
        b = by_tag[tag]
        q0 = layout[b.name]["q"][0]
        return kernel_tangent(T, b, arr, tag, i, layout[b.name]["structure"], layout[b.name]["nq"],
                              lambda wrt, j: seed(wrt, (q0 if wrt == "q" else b.u0) + j, T))

    return tangent_of


def _live_entries(T) -> dict:
    """{array: the entries the live code of T reads} (inputs ``a[i]``)."""
    live = {}
    for text in T.live_inputs():
        m = re.fullmatch(r"(\w+)\[(\d+)\]", text)
        live.setdefault(m.group(1), []).append(int(m.group(2)))
    return live


def _kernel_calls(calls, items) -> list:
    """The one-state function's hinge kernel arrays and calls (statements of a looped program): ``items`` (body,
    array, kernel, size, ...)."""
    head = []
    for b, arr, kernel, size, *_ in items:
        head += [P.Locals(arrays=((arr, size),), comment=f"'{b.name}'"), P.Traced([calls(b.name, kernel, arr)])]
    return head


def derivative_kernel_arrays(T, bodies, layout):
    """(body, array, kernel, size) of each derivative kernel output the live code reads."""
    read = set()
    for text in T.live_inputs():
        m = re.fullmatch(r"(d[qu](?:X|H|Hd)\d+)\[\d+\]", text)
        if m:
            read.add(m.group(1))
    for b in bodies:
        nq = layout[b.name]["nq"]
        for wrt, n in (("q", nq), ("u", b.nu)):
            for arr, base in _KERNEL_OF.items():
                name = f"d{wrt}{arr}{b.k}"
                if name in read:
                    yield b, name, f"{base}_d{wrt}", n * (16 if arr == "X" else 6 * b.nu)


def _coords(kind, group, layout):
    """The coordinates a group of ``kind`` seeds: (body, first, count) of Q (kind q) or of U."""
    for b in group:
        if kind == "q":
            if layout[b.name]["nq"]:
                yield b, layout[b.name]["q"][0], layout[b.name]["nq"]
        else:
            yield b, b.u0, b.nu


def emit_derivatives(kind, bodies, L, layout, slugs, calls_factory, kernel_arrays, trace_bodies, lane_head=None):
    """The derivative functions of ``kind`` (``"fd"`` or ``"id"``): ``{"lines": the body of
    sg_<m>_<kind>_derivatives(q, u, p, tangent, out), "lanes": the lane-batch form or None}``, or None when the
    traced function is longer than :data:`DERIVATIVE_MAX_LINES` or D is a constant that is not positive definite.
    ``calls_factory()``: a new hinge-kernel call printer (symgen.codegen.kernels.HingeCalls);
    ``kernel_arrays(T, bodies)``: the value kernels the live code reads; ``trace_bodies(T, bodies)``: the bodies
    as the trace sees them (a parametric build's inertias from p); ``lane_head(items, strides, size)``:
    :func:`symgen.codegen.kernels.lane_kernel_head` (None: no lane-batch form; see :func:`_lane_form`).

    The directions come in groups (:func:`direction_groups`) of one kind each (Q, U, then T or Udot), each
    group traced with only its own seeds, so that what is zero for it folds: a U direction moves no transform,
    a T direction none of Newton-Euler, a leg's directions nothing of the other legs.  Forward dynamics runs its
    T group first (M^-1 into out's third block, by the M^-1 pass), then each Q and U group's Newton-Euler tangents
    r = dT - dRNEA times that M^-1."""
    from ..algorithms import soa
    from ..ir.dual import DualTape
    from ..ir.tape import Tape

    nu, nq = L.nu, sum(layout[b.name]["nq"] for b in bodies)
    T = Tape()
    io = soa.ArrayIO(L)
    kinds = ("T", "q", "u") if kind == "fd" else _KINDS       # forward dynamics: M^-1 (the T directions) first
    plan = []                                               # (key, kind, group) of each traced group
    for gk in kinds:
        # forward dynamics' T directions: one group of all bodies (M^-1's base-to-tip pass is dense, so splitting
        # them by subtree saves little and costs a copy of the M^-1 pass per group in compile time)
        for g in ([list(bodies)] if kind == "fd" and gk == "T" else direction_groups(bodies)):
            if any(n for _, _, n in _coords(gk, g, layout)):
                plan.append((f"{gk}{len(plan)}", gk, g))
    lane_arrays, rows, vectors = {}, {}, set()
    traced = []
    for key, gk, g in plan:
        own = {(gk, i) for _, c0, n in _coords(gk, g, layout) for i in range(c0, c0 + n)}
        arr = f"s{key}"

        def seed(k, i, T, own=own, arr=arr):
            return T.input(f"{arr}[{i}]", array=arr) if (k, i) in own else 0.0

        D = DualTape(T, _tangents(bodies, L, layout, seed))
        lane_arrays[arr] = lane_arrays[f"r{key}"] = key
        solve = kind == "id" or gk == "T"        # forward dynamics along Q and U: r as vectors, times M^-1 in C
        if solve:
            rows[f"r{key}"] = nu
        else:
            vectors.add(f"r{key}")
        traced.append((D, trace_bodies(D, bodies), _RowsIO(io, f"r{key}"), solve))
    try:
        if kind == "fd":
            r = soa.atbi_derivatives(T, trace_bodies(T, bodies), nu, io, traced)
            nonzero = [[i for i, x in enumerate(rg) if not (isinstance(x, float) and x == 0.0)] for rg in r]
        else:
            for D, tb, gio, _ in traced:
                soa.rnea(D, tb, nu, gio)
            nonzero = [None] * len(traced)
    except soa.NotPositiveDefinite:
        return None
    scalar, lanes = T.split_lines(lane_arrays, rows=rows, vectors=vectors)
    if len(scalar) + sum(len(x) for x in lanes.values()) > DERIVATIVE_MAX_LINES:
        return None
    calls = calls_factory()
    head = _kernel_calls(calls, list(kernel_arrays(T, bodies)) + list(derivative_kernel_arrays(T, bodies, layout)))
    live = T.live_arrays()
    body = []
    n_maps = set()
    for (key, gk, g), rows_r in zip(plan, nonzero):
        if key not in lanes:
            continue
        body += _group_block(key, gk, g, layout, nu, nq, lanes[key], f"s{key}" in live, n_maps,
                             rows_r if gk != "T" else None)
    for b in bodies:
        if b.k in n_maps:
            head += [P.Locals(arrays=((f"N{b.k}", layout[b.name]["nq"] * b.nu),), comment=f"'{b.name}': Qdot = N U"),
                     P.Traced([calls(b.name, "qdot_map", f"N{b.k}")])]
    covered = sum(n for _, gk, g in plan if gk == "q" for _, _, n in _coords("q", g, layout))
    tangent = P.Cmp(P.Var("tangent"), "!=", 0)
    i = P.Var("i")
    # ndq: the column count of d/dQ (nU tangent, else nQ); a model without U reads none of it
    prog = P.Program([
        P.Locals(zero=True), P.Traced(calls.head()), *head, P.Traced(scalar),
        *([P.Let("ndq", P.Select(tangent, nu, nq))] if body else []),
        *([P.If(P.Cmp(P.Var("tangent"), "==", 0), [P.Comment("Q's without a U: zero"),
                                                   P.Loop("i", 0, nu * nq, [P.Set(P.Elem("out", i), P.Num(0.0))])])]
          if covered < nq else []),
        *body, P.Return(0)])
    # the traced statements' own loops run over l (a group's lanes)
    lines = c_lines(prog, vector="sg_dv", zero="sg_dv_zero", ints=("l",),
                    unused=("q", "u", "p", "sg_dv_zero", "tangent", "out"))
    lanes_form = None if lane_head is None else \
        _lane_form(kind, T, plan, nonzero, lane_arrays, bodies, L, layout, kernel_arrays, lane_head, covered < nq)
    return {"lines": lines, "lanes": lanes_form}


#: lane-batch derivative functions longer than this are not generated (their batches go one state at a time).
#: 25,000 (was 20,000) takes in Talos (38 DOF, floating: FD 24,270 lines, ID 20,231): its batched FD derivatives
#: 57 -> 40 µs a state (interleaved, same process), ID unchanged (36-38 µs; its one-state form already fills
#: its vectors with 8 directions)
DERIVATIVE_LANE_MAX_LINES = 25000


def _lane_form(kind, T, plan, nonzero, lane_arrays, bodies, L, layout, kernel_arrays, lane_head, q_without_u):
    """The lane-batch form of a derivative function, ``sg_<m>_<kind>_derivatives_lanes(q, u, p, tangent, out)``
    for SG_W states (rows as in the _batch function; templates/helpers/lanes.c.jinja's vectors): the same traced
    statements (:meth:`symgen.ir.tape.Tape.split_lines` with ``states``) with one state per lane, the values of
    the SG_W states first, then each direction's tangents of those states, one direction at a time.  Where the
    one-state function spends a scalar operation per value and a vector of SG_DW directions per tangent (a
    group of 2 directions fills a quarter of its AVX-512 vectors), this spends a vector of states on both.
    Returns the pieces the template prints, or None (a statement without that form, or past
    :data:`DERIVATIVE_LANE_MAX_LINES`)."""
    from ..ir.tape import LaneError

    nu, nq = L.nu, sum(layout[b.name]["nq"] for b in bodies)
    if not nu:
        return None                                       # nothing to differentiate (every hinge welded)
    rs = {a for a in lane_arrays if a.startswith("r")}
    try:
        scalar, lanes = T.split_lines(lane_arrays, "sg_vd", "SG_W", vectors=rs, zero="sg_vd_zero", states="sg_vd",
                                      arrays={"q": "q_l", "u": "u_l", "p": "p_l"})
    except LaneError:
        return None
    if len(scalar) + sum(len(x) for x in lanes.values()) > DERIVATIVE_LANE_MAX_LINES:
        return None
    live = _live_entries(T)                               # array -> entries read
    size = {a: max(live[a]) + 1 for a in ("q", "u", "p") if a in live}   # q, u, p: entries read (max index + 1)
    strides = {"q": nq, "u": nu, "p": L.params.size}
    items = list(kernel_arrays(T, bodies))
    items += [(b, arr, kernel, n, sorted(live[arr])) for b, arr, kernel, n in derivative_kernel_arrays(T, bodies,
                                                                                                         layout)]
    body, n_maps = [], set()
    out_size = nu * (nq + 2 * nu)
    seeded_all = T.live_arrays()
    for (key, gk, g), rows_r in zip(plan, nonzero):
        if key not in lanes:
            continue
        body += _lane_group_block(key, gk, g, layout, nu, nq, lanes[key], f"s{key}" in seeded_all, n_maps, out_size,
                                  rows_r if kind == "fd" and gk != "T" else None, kind == "fd" and gk == "T")
    by_k = {b.k: b for b in bodies}
    items += [(by_k[k], f"N{k}", "qdot_map", layout[by_k[k].name]["nq"] * by_k[k].nu,
               list(range(layout[by_k[k].name]["nq"] * by_k[k].nu))) for k in sorted(n_maps)]
    head, _, _, angles = lane_head(items, strides, size)
    ins = [(a, size[a], strides[a]) for a in ("q", "u", "p") if a in size]
    l, i = P.Var("l"), P.Var("i")
    zero = [P.If(P.Cmp(P.Var("tangent"), "==", 0), [P.Comment("Q's without a U: zero"), P.Loop("l", 0, P.Var("SG_W"), [
        P.Loop("i", 0, nu * nq, [P.Set(P.Elem("out", P.add(P.mul(P.Wide(l), out_size), i)), P.Num(0.0))])])])] \
        if q_without_u else []
    minv = [P.Locals(arrays=(("Minv_l", nu * nu),), comment="M^-1, from the directions of T")] if kind == "fd" and \
        any(gk == "T" for _, gk, _ in plan) else []
    prog = P.Program([*minv, P.Traced(head), P.Traced(scalar),
                      P.Let("ndq", P.Select(P.Cmp(P.Var("tangent"), "!=", 0), nu, nq)), *zero, *body])
    lines = c_lines(prog, lanes=True, declared=("i", "l", "s", "c", "ndq"), zero="sg_vd_zero")
    return {"ins": ins, "lines": lines, "out_size": out_size, "sincos": bool(angles),
            "unused": [a for a in ("q", "u", "p", "tangent") if not any(
                re.search(rf"\b{a}\b", ln) for ln in lines) and a not in size]}


def _group_head(key, gk, g, layout, nu, nq):
    """What both forms of a group's block start with: ``(coords, the seed array, its size, the most directions,
    the block's first statements, dirs)``: its comment, its direction tables (tangent: the U of its bodies,
    Qdot = N e_j; else each Q_i: they differ along Q only) and ``nd``, their count; ``dirs(at)``: the index
    expression of the group's direction ``at``."""
    coords = [(b, c0, n) for b, c0, n in _coords(gk, g, layout) if n]
    names = ", ".join(f"'{b.name}'" for b in g)
    if gk == "q":
        dirs_t = [b.u0 + j for b in g if layout[b.name]["nq"] for j in range(b.nu)]
        dirs_q = [c0 + i for _, c0, n in coords for i in range(n)]
    else:
        dirs_t = dirs_q = [c0 + i for _, c0, n in coords for i in range(n)]
    tangent = P.Cmp(P.Var("tangent"), "!=", 0)
    if dirs_t == dirs_q:
        tables = (("dirs", dirs_t),)

        def dirs(at):
            return P.Lookup("dirs", at)
    else:
        tables = (("dirs_t", dirs_t), ("dirs_q", dirs_q))

        def dirs(at):
            return P.Select(tangent, P.Lookup("dirs_t", at), P.Lookup("dirs_q", at))
    what = "along Q" if gk == "q" else "of U" if gk == "u" else "of T (or Udot)"
    nd = P.Select(tangent, len(dirs_t), len(dirs_q)) if len(dirs_t) != len(dirs_q) else len(dirs_t)
    head = [P.Comment(f"directions {what} of {names}"), P.Locals(tables=tables), P.Let("nd", nd)]
    return coords, f"s{key}", nq if gk == "q" else nu, max(len(dirs_t), len(dirs_q)), head, dirs


def _column(gk, nu, d):
    """``(offset, stride)``: where the column of a group's direction ``d`` (an index expression: Q's, U's or
    T's) starts in out = [d/dQ (nU x ndq), d/dU (nU x nU), d/dT (nU x nU)], each row-major, and its row stride."""
    ndq = P.Var("ndq")
    if gk == "q":
        return d, ndq
    return P.add(P.mul(nu, ndq), nu * nu if gk == "T" else 0, d), nu


def _into_column(gk, nu, d, value, state=None, size=0):
    """Direction ``d``'s nU derivatives (``value(i)``: the double of output i) into its column of out (``state``:
    an index expression, the state whose row of out, ``size`` doubles a state)."""
    i = P.Var("i")
    off, stride = _column(gk, nu, d)
    at = P.add(off, P.mul(i, stride)) if state is None else P.add(P.mul(P.Wide(state), size), off, P.mul(i, stride))
    return P.Loop("i", 0, nu, [P.Set(P.Elem("out", at), value(i))])


def _q_seed_fills(coords, arr, n_maps, lane):
    """The tangent Q seeds of direction d (a U of one of the group's bodies): column d - u0 of its N(Q) into the
    seeds of its Q (``lane``: the lane of a direction, None in the lane-batch form)."""
    d, i = P.Var("d"), P.Var("i")
    fills = []
    for b, c0, n in coords:
        if b.nu:
            n_maps.add(b.k)
            fills.append(P.If(P.And((P.Cmp(d, ">=", b.u0), P.Cmp(d, "<", b.u0 + b.nu))), [P.Loop("i", 0, n, [
                P.Set(P.Elem(arr, P.add(c0, i), lane), P.Elem(f"N{b.k}", P.add(P.mul(i, b.nu), d, -b.u0)))])]))
    return fills


def _lane_group_block(key, gk, g, layout, nu, nq, lanes, seeded, n_maps, out_size, times_minv, keeps_minv):
    """:func:`_group_block` for the lane-batch form: the group's directions one at a time, each a vector of SG_W
    states; its rows into each state's out (``out_size`` doubles per state).  ``keeps_minv``: the group is forward
    dynamics' T directions, whose results (M^-1's columns) are kept in ``Minv_l`` for ``times_minv``'s groups."""
    coords, arr, size, nd_max, head, dirs = _group_head(key, gk, g, layout, nu, nq)
    s, d, i, c, l = (P.Var(v) for v in "sdicl")
    W, res = P.Var("SG_W"), f"r{key}"
    one = P.Bin("+", P.Zeros(), P.Num(1.0))
    step = [P.Let("d", dirs(s))]
    # the direction's own arrays live in the loop's body (the compiler keeps them in registers between uses)
    own = P.Locals(arrays=((res, nu),) + (((arr, size),) if seeded else ()))
    locs = P.Locals()
    if seeded:
        step += [P.Comment("the seeds: direction d, in every state"),
                 *[P.Loop("i", c0, c0 + n, [P.Set(P.Elem(arr, i), P.Zeros())]) for _, c0, n in coords]]
        step += [P.If(P.Cmp(P.Var("tangent"), "==", 0), [P.Set(P.Elem(arr, d), one)],
                      _q_seed_fills(coords, arr, n_maps, None))] if gk == "q" else [P.Set(P.Elem(arr, d), one)]
    step += [P.Comment("the derivatives along direction d, one state per lane"), P.Traced(lanes)]
    if times_minv is not None:
        # M^-1 r after the loop, for every direction of the group at once: each M^-1 entry read once per row
        # and group rather than once per direction (the sums in the one-state function's order: the same bits)
        k = max(len(times_minv), 1)
        R = lambda c_, s_: P.Elem("R", P.add(P.mul(c_, nd_max), s_))  # noqa: E731
        locs = P.Locals(arrays=(("R", k * nd_max), ("acc", nd_max)),
                        tables=(("rows", times_minv or [0]),), comment="R: r of each direction on the rows where "
                        "it can be nonzero (rows)")
        step += [P.Loop("c", 0, k, [P.Set(R(c, s), P.Elem(res, P.Lookup("rows", c)))]) if times_minv else
                 P.Set(R(0, s), P.Zeros())]
        rest = [P.Loop("s", P.Var("nd"), nd_max, [P.Loop("c", 0, k, [P.Set(R(c, s), P.Zeros())])]),
                P.Comment("(M^-1 r)_i = sum_k M^-1_ik r_k, into each state's column of out"),
                P.Loop("i", 0, nu, [
                    P.Loop("s", 0, nd_max, [P.Set(P.Elem("acc", s), P.Zeros())]),
                    P.Loop("c", 0, k, [P.Block([
                        P.Def("m", P.Elem("Minv_l", P.add(P.mul(i, nu), P.Lookup("rows", c)))),
                        P.Loop("s", 0, nd_max, [P.Set(P.Elem("acc", s), P.Bin("*", P.Scalar("m"), R(c, s)), "+=")])])]),
                    P.Loop("s", 0, P.Var("nd"), [P.Loop("l", 0, W, [P.Set(
                        P.Elem("out", P.add(P.mul(P.Wide(l), out_size), _column(gk, nu, dirs(s))[0],
                                            P.mul(i, _column(gk, nu, dirs(s))[1]))),
                        P.Elem("acc", s, l))])])])]
        return [P.Block([*head, locs, P.Loop("s", 0, P.Var("nd"), [P.Block([own, *step])]), *rest])]
    if keeps_minv:
        step += [P.Loop("i", 0, nu, [P.Set(P.Elem("Minv_l", P.add(P.mul(i, nu), d)), P.Elem(res, i))])]
    step += [P.Comment("into each state's column of out"),
             P.Loop("l", 0, W, [_into_column(gk, nu, d, lambda i_: P.Elem(res, i_, l), l, out_size)])]
    return [P.Block([*head, P.Loop("s", 0, P.Var("nd"), [P.Block([own, *step])])])]


def _group_block(key, gk, g, layout, nu, nq, lanes, seeded, n_maps, times_minv=None):
    """The block of one group: its directions SG_DW at a time, the seeds, its lane statements, its rows into out.
    ``times_minv``: the rows where the group's r (one vector per row) can be nonzero, when the group's result is
    M^-1 r with the M^-1 that out's third block already holds (forward dynamics)."""
    coords, arr, size, _, head, dirs = _group_head(key, gk, g, layout, nu, nq)
    s, d, i, c, l = (P.Var(v) for v in "sdicl")
    DW, res = P.Var("SG_DW"), f"r{key}"
    nd = P.Var("nd")
    # the directions of this block: nl = min(SG_DW, nd - s)
    left = P.add(nd, P.mul(-1, s))
    step = [P.Let("nl", P.Select(P.Cmp(left, "<", DW), left, DW))]
    vectors = ((arr, size),) if seeded else ()
    if seeded:
        fills = [P.Let("d", dirs(P.add(s, l)))]
        fills += [P.If(P.Cmp(P.Var("tangent"), "==", 0), [P.Set(P.Elem(arr, d, l), P.Num(1.0))],
                       _q_seed_fills(coords, arr, n_maps, l))] if gk == "q" else [P.Set(P.Elem(arr, d, l), P.Num(1.0))]
        step += [P.Comment("the seeds: one direction per lane"),
                 *[P.Loop("i", c0, c0 + n, [P.Set(P.Elem(arr, i), P.Zeros())]) for _, c0, n in coords],
                 P.Loop("l", 0, P.Var("nl"), fills)]
    if times_minv is None:
        locs = P.Locals(arrays=((res, P.mul(DW, nu)),), vectors=vectors,
                        comment=f"{res}: lane l, the derivatives along direction l of the block")
        step += [P.Traced(lanes),
                 P.Loop("l", 0, P.Var("nl"), [_into_column(gk, nu, dirs(P.add(s, l)),
                                                           lambda i_: P.Elem(res, P.add(P.mul(l, nu), i_)))])]
    else:
        k = len(times_minv)
        locs = P.Locals(arrays=(("y", P.mul(DW, nu)),), vectors=((res, nu),) + vectors,
                        tables=(("rows", times_minv or [0]),),
                        comment=f"{res}: r = dT - dRNEA, one direction per lane; y: lane l, M^-1 r along direction "
                                f"l of the block; rows: where r can be nonzero")
        # acc: one vector (M^-1 r)_i of the block's directions, summed over the rows where r can be nonzero
        minv = P.add(P.mul(P.Var("ndq"), nu), nu * nu)
        step += [P.Traced(lanes),
                 P.Comment("(M^-1 r)_i = sum_k M^-1_ik r_k, M^-1 in out's third block"),
                 P.Loop("i", 0, nu, [
                     P.Block([P.Locals(vectors=(("acc", 1),)), P.Set(P.Elem("acc", 0), P.Zeros()),
                              P.Loop("c", 0, k, [P.Set(P.Elem("acc", 0), P.Bin(
                                  "*", P.Elem("out", P.add(minv, P.mul(i, nu), P.Lookup("rows", c))),
                                  P.Elem(res, P.Lookup("rows", c))), "+=")]),
                              P.Loop("l", 0, DW, [P.Set(P.Elem("y", P.add(P.mul(l, nu), i)), P.Elem("acc", 0, l))])])]),
                 P.Loop("l", 0, P.Var("nl"), [_into_column(gk, nu, dirs(P.add(s, l)),
                                                           lambda i_: P.Elem("y", P.add(P.mul(l, nu), i_)))])]
    # the block's own arrays live in the loop's body (as the tables in the group's block)
    tables = P.Locals(tables=locs.tables)
    own = P.Locals(arrays=locs.arrays, vectors=locs.vectors, comment=locs.comment)
    return [P.Block([*head, tables, P.Loop("s", 0, nd, [P.Block([own, *step])], step=DW)])]


#: the analytic inverse-dynamics derivatives (symgen.algorithms.rnea_derivatives) longer than this (lines of the
#: one-state function) are not generated: the forward mode serves the tangent directions too.  Talos (38 DOF,
#: floating) is 26,500 lines and takes its derivative module's -O3 compile from about 4 to about 10 minutes;
#: tiago_dual (107 DOF) would be 77,000 lines, whose two functions were still compiling after 20 CPU-minutes each
RNEA_DERIVATIVE_MAX_LINES = 30000
#: ... and a model with more U's than this is not traced at all: it would be past that limit (tiago_dual, 107 U's,
#: traced 77,000 lines in 2 of its 6 s of generation, to be thrown away; Talos, 38 U's, 25,000 lines)
RNEA_DERIVATIVE_MAX_U = 64


def trace_rnea_derivatives(bodies, L, layout, trace_bodies):
    """The typed program (a :class:`~symgen.ir.tape.Tape`) of inverse dynamics' derivatives along the tangent
    (:func:`symgen.algorithms.rnea_derivatives.rnea_derivatives`) of a tree of rigid bodies: it reads q, u, p, the
    hinge kernels' outputs (``X<k>``, ``H<k>``, ``Hd<k>``), their derivatives (``dqH<k>``, ``dqHd<k>``, ``duHd<k>``,
    :func:`derivative_kernel_arrays`) and Qdot = N(Q) U's map (``N<k>``, nQ x nU row-major) where not constant, and
    writes out = [dT/dQ, dT/dU, M] (nU x nU each).  ``trace_bodies(T, bodies)``: the bodies as the trace sees them
    (a parametric build's inertias from p)."""
    from ..algorithms import soa
    from ..algorithms.rnea_derivatives import rnea_derivatives
    from ..ir.tape import Tape

    T = Tape()

    def own_tangent(T, b, arr, wrt, k):
        structure, nqb = layout[b.name]["structure"], layout[b.name]["nq"]
        N = structure.get("qdot_map") or [None] * (nqb * b.nu)

        def seed(w, j):
            if w != wrt:
                return 0.0
            if w == "u":
                return 1.0 if j == k else 0.0
            if N[j * b.nu + k] is not None:
                return N[j * b.nu + k]
            return T.input(f"N{b.k}[{j * b.nu + k}]", array=f"N{b.k}")

        return [kernel_tangent(T, b, arr, str(b.k), i, structure, nqb, seed) for i in range(6 * b.nu)]

    rnea_derivatives(T, trace_bodies(T, bodies), L.nu, soa.ArrayIO(L), own_tangent)
    return T


def emit_rnea_derivatives(name, bodies, L, layout, calls_factory, kernel_arrays, trace_bodies, lane_head=None):
    """Inverse dynamics' derivatives along the tangent by the analytic recursions printed straight-line
    (:func:`symgen.algorithms.rnea_derivatives.rnea_derivatives`), for a parametric build (its inertias read from p;
    every other model takes the looped steps, :meth:`symgen.codegen.perkind.PerKindDerivatives.emit_rnea_derivatives`):
    ``{"lines": the body of
    sg_<m>_id_derivatives_tangent(q, u, p, out), "lanes": the pieces of its lane-batch form or None}``, or None
    for a model with flexible bodies or without U, or one past :data:`RNEA_DERIVATIVE_MAX_U` or
    :data:`RNEA_DERIVATIVE_MAX_LINES`.  The lane form
    writes each state's row of out (``nU (nQ + 2 nU)`` doubles, the tangent layout in its first 3 nU^2) and, for
    full-coordinate directions (``tangent`` 0), calls the one-state function per lane (the forward mode).
    ``name``: the model's C name; the other arguments as :func:`emit_derivatives`'."""
    from ..ir.tape import LaneError

    nu, nq = L.nu, sum(layout[b.name]["nq"] for b in bodies)
    if not nu or nu > RNEA_DERIVATIVE_MAX_U or any(b.flex for b in bodies):
        return None
    T = trace_rnea_derivatives(bodies, L, layout, trace_bodies)
    body = T.lines()
    if len(body) > RNEA_DERIVATIVE_MAX_LINES:
        return None
    by_k = {b.k: b for b in bodies}
    live = _live_entries(T)
    n_items = [(by_k[k], f"N{k}", "qdot_map", layout[by_k[k].name]["nq"] * by_k[k].nu,
                list(range(layout[by_k[k].name]["nq"] * by_k[k].nu))) for k in sorted(by_k) if f"N{k}" in live]
    d_items = [(b, arr, kernel, size, sorted(live[arr])) for b, arr, kernel, size in
               derivative_kernel_arrays(T, bodies, layout)]
    items = list(kernel_arrays(T, bodies)) + d_items + n_items
    calls = calls_factory()
    kernels = _kernel_calls(calls, items)                 # before calls.head(): the calls fill it
    prog = P.Program([P.Traced(calls.head()), *kernels, P.Traced(body), P.Return(0)])
    out = {"lines": c_lines(prog, unused=("q", "u", "p")), "lanes": None}
    if lane_head is None:
        return out
    out_size = nu * (nq + 2 * nu)
    try:
        lane_body = T.lane_lines("sg_vd", "SG_W", {"q": "q_l", "u": "u_l", "p": "p_l"}, rows={"out": out_size})
    except LaneError:
        return out
    size = {a: max(live[a]) + 1 for a in ("q", "u", "p") if a in live}
    strides = {"q": nq, "u": nu, "p": L.params.size}
    lhead, _, _, angles = lane_head(items, strides, size)
    ins = [(a, size[a], strides[a]) for a in ("q", "u", "p") if a in size]
    l = P.Var("l")
    forward = P.Program([P.If(P.Cmp(P.Var("tangent"), "==", 0), [
        P.Comment("full-coordinate directions: the forward mode, one state at a time"),
        P.Loop("l", 0, P.Var("SG_W"), [P.Invoke(f"sg_{name}_id_derivatives", (
            P.At("q", P.mul(P.Wide(l), nq)), P.At("u", P.mul(P.Wide(l), nu)), P.At("p", P.mul(P.Wide(l), L.params.size)),
            0, P.At("out", P.mul(P.Wide(l), out_size))), status_base=P.mul(l, len(bodies) + 1))]),
        P.Return(0)])])
    fallback = c_lines(forward, declared=("i", "l", "s", "c", "ndq"))
    out["lanes"] = {"ins": ins, "lines": fallback + lhead + lane_body, "out_size": out_size, "sincos": bool(angles),
                    "unused": [a for a in ("q", "u", "p") if a not in size]}
    return out
