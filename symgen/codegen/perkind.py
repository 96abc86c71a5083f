"""The per-kind form of the model algorithms: :mod:`symgen.algorithms.soa`'s per-body steps traced once per *body kind*, and
C loops over the model's flat topology arrays that call them.

A body kind is what the traced code of a step depends on: the hinge spec (its kernels and their structural
zeros), whether the body is a root or a leaf, whether its pnode and onode rotations are the identity and
whether its hinge has armature.  The rest of a body (inertia, onode and pnode poses, armature) is read at run
time from ``sg_<model>_body_const[k]`` (:attr:`symgen.abi.layout.ModelLayout.body_const`).  Bodies exchange
values through a per-body workspace (:attr:`symgen.abi.layout.ModelLayout.workspace`): a step stores what a later
step of the same body reads (entries that are constants for its kind are not stored: the later step knows
them too), what a child reads (V, alpha) and what it adds into its parent (P, z, f, the composite inertia).

Every step function has one signature, ``int f(int k, q, u, p, ws, out, mats)`` (``k`` the body), and sits in
a table indexed by kind, so a pass over the bodies is one C loop::

    for (k = nb - 1; k >= 0; --k) if ((s = sg_<m>_atbi_tip[sg_<m>_kind[k]](k, q, u, p, ws, out, mats))) return s;
"""
from __future__ import annotations

import re
from dataclasses import replace
from functools import partial

from ..algorithms import rnea_derivatives as rd, soa
from ..abi.layout import ModelLayout, Record, sym_index
from ..ir.dual import DualTape, tangent
from ..hinges.derive import NEEDS_U, NEEDS_U_DQ
from ..ir import program as P
from ..ir.tape import Tape
from .lanes import lane_width
from .kernels import lane_trig_args
from .printer import c_function, c_function_table, c_lines

_IDENTITY_R = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
_K = P.Param("k", "int", pointer=False)
_IN = tuple(P.Param(x, const=True) for x in ("q", "u", "p"))
#: a step's parameters (P.Param): the body k, the state, the workspace, the outputs; on lanes every array a vector of
#: SG_W states (out the states' rows of doubles where the step writes them directly), the status per lane
_SIGNATURE = (_K, *_IN, P.Param("ws"), P.Param("out"), P.Param("mats"))
_WALK_SIGNATURE = (_K, P.Param("ws"), P.Param("x", const=True), P.Param("y"), P.Param("rows"))
_LANE_SIGNATURE = (_K, *_IN, P.Param("ws"), P.Param("out"), P.Param("st", "int"))
_LANE_WALK_SIGNATURE = _WALK_SIGNATURE
_LANE_ROWS_SIGNATURE = (_K, *_IN, P.Param("ws"), P.Param("out", "double"), P.Param("st", "int"))


#: the looped lane form of M writes the W states' rows of out directly (no vector array of M zeroed and turned into
#: rows) when they are at most this long: Talos (W 8 x 38^2 doubles, 92 kB) 1.86 -> 1.50 µs a state (2,000
#: states), 2.02 -> 1.54 (16); tiago_dual's 733 kB ran 12.2 -> 6.8 µs in the cache but 13.2 -> 15.8 for 2,000
#: states (each entry written twice, zero then value, past the L2), so it keeps the vector array
MM_ROWS_MAX_BYTES = 256 * 1024


def _uses(ident: str, text: str) -> bool:
    return re.search(rf"\b{ident}\b", text) is not None


_WORD = re.compile(r"\b\w+\b")


def _prologue(views, lines) -> list:
    """The definitions of ``views`` ((name, statement), in order) that a step's ``lines`` (its statements,
    printed) read; none reads another."""
    words = set(_WORD.findall("\n".join(lines)))
    return [v for name, v in views if name in words]


def _is_identity_R(R) -> bool:
    return all(isinstance(x, float) for x in R) and [float(x) for x in R] == _IDENTITY_R


def _kernel_outputs(nq: int, nu: int) -> tuple:
    """(array, kernel, size) of each hinge kernel output a per-kind step may read (a hinge with ``nq`` Q and ``nu``
    U): the transform, the coord map and its rate, their derivative kernels, Qdot = N(Q) U's map."""
    return (("X", "transform", 16), ("H", "coord_map", 6 * nu), ("Hd", "coord_map_dot", 6 * nu),
            ("dqX", "transform_dq", 16 * nq), ("dqH", "coord_map_dq", 6 * nu * nq),
            ("dqHd", "coord_map_dot_dq", 6 * nu * nq), ("duHd", "coord_map_dot_du", 6 * nu * nu),
            ("N", "qdot_map", nq * nu))


def _pack_rigid(I) -> list:
    """A rigid inertia (m, h, J) as ten numbers: m, h, J's upper triangle (xx xy xz yy yz zz), the layout of the
    workspace's composite inertias and of ``body_const``'s J."""
    m, h, J = I
    return [m, *h, J[0][0], J[0][1], J[0][2], J[1][1], J[1][2], J[2][2]]


def _unpack_rigid(x) -> tuple:
    return x[0], x[1:4], [[x[4], x[5], x[6]], [x[5], x[7], x[8]], [x[6], x[8], x[9]]]


def body_kind(b: soa.BodyInfo, has_children: bool) -> tuple:
    """What a body's traced steps depend on (see the module docstring)."""
    return (b.slug, b.root, not has_children, _is_identity_R(b.pinv_R) and list(b.pinv_l) == [0.0] * 3,
            _is_identity_R(b.on_R), bool(b.armature and any(b.armature)))


def body_constants(b: soa.BodyInfo, L: ModelLayout) -> list:
    """The numbers of ``sg_<model>_body_const[k]`` (layout ``body_const``)."""
    m, h, J = soa.rigid_parts(b.M)
    out = [0.0] * L.body_const.size
    out[L.body_const["m"]] = m
    out[L.body_const.span("h")] = h
    out[L.body_const.span("J")] = [J[0][0], J[0][1], J[0][2], J[1][1], J[1][2], J[2][2]]
    out[L.body_const.span("on")] = list(b.on_R) + list(b.on_l)
    out[L.body_const.span("pinv")] = list(b.pinv_R) + list(b.pinv_l)
    for c in range(b.nu):
        out[L.body_const["arm"] + c] = b.arm(c)
    return [float(x) for x in out]


#: the fields of a body's workspace block that a child reads (V, alpha) or adds into (P, z, f, Ic): every body's at
#: the same offsets in :func:`lane_workspace`
FIXED_FIELDS = (("R", 9), ("l", 3), ("V", 6), ("a", 6), ("b", 6), ("P", 21), ("z", 6), ("alpha", 6), ("f", 6), ("Ic", 10))


def lane_workspace(nu: int) -> Record:
    """The workspace block of a body with ``nu`` U in the lane form (W vectors per entry, so 8 times a one-state
    block on AVX-512): the fields of :attr:`symgen.abi.layout.ModelLayout.workspace`, the fixed-size ones first
    and the others sized by the body's own U (not the model's largest hinge), so that tiago_dual's (130 bodies)
    is 0.8 MB of stack instead of 2.2."""
    return Record(*FIXED_FIELDS, ("H", 6 * nu), ("G", 6 * nu), ("nu", nu), ("PH", 6 * nu), ("Dinv", nu * nu),
                  ("eps", nu), ("F", 6 * nu))


def _pin_axis(h):
    """The axis of a PIN hinge without internal frames (its transform a rotation about that axis through the
    onode's origin), else None."""
    spec = getattr(h, "spec", None)
    if spec is None or spec.hinge_type != "PIN":
        return None
    prm = spec.params
    if tuple(prm.i2onode_q) != (0.0, 0.0, 0.0, 1.0) or tuple(prm.j2pnode_q) != (0.0, 0.0, 0.0, 1.0):
        return None
    a = [float(c[0]) for c in prm.axes]
    return a if abs(sum(x * x for x in a) - 1.0) < 1e-12 else None


def _rotation_taking(r, a):
    """A rotation C (3 x 3, numpy) with C r = a, for unit vectors r and a (Rodrigues; a half turn about an axis
    normal to r when a = -r)."""
    import numpy as np

    from ..numeric import np_skew

    r, a = np.asarray(r, float), np.asarray(a, float)
    v, c = np.cross(r, a), float(r @ a)
    if c < -1.0 + 1e-12:
        n = np.cross(r, [1.0, 0.0, 0.0] if abs(r[0]) < 0.9 else [0.0, 1.0, 0.0])
        n /= np.linalg.norm(n)
        return 2.0 * np.outer(n, n) - np.eye(3)
    vx = np_skew(v)
    return np.eye(3) + vx + vx @ vx / (1.0 + c)


def fold_pin_axes(bodies: list, hinges: dict) -> list:
    """The bodies as the per-kind steps see them, every PIN folded onto the axis r of the PIN spec most bodies have:
    a PIN about a turns by R_a(theta) = C R_r(theta) C^T (C r = a), so it is that PIN between an onode turned by C
    and a pnode turned by C (on_R C, C^T pnode^-1), the same X_pb, the same body-frame H and the same Q.  Its steps
    then call the reference's kernels (``slug``, the kernels' structure, ``kernels_of``), and PINs about any axes are
    one body kind (dm_control's rodent: 25 PIN axes, 42 kinds before).  Other bodies are returned as they are."""
    import dataclasses
    from collections import Counter

    import numpy as np

    axes = {b.name: _pin_axis(hinges.get(b.name)) for b in bodies if not b.flex}
    axes = {n: a for n, a in axes.items() if a is not None}
    if len({tuple(a) for a in axes.values()}) < 2:
        return list(bodies)
    count = Counter(b.slug for b in bodies if b.name in axes)
    ref_slug = max(count, key=lambda sl: (count[sl], sl))
    ref = next(b for b in bodies if b.slug == ref_slug and b.name in axes)
    r = axes[ref.name]
    out = []
    for b in bodies:
        if b.name not in axes or b.slug == ref_slug:
            out.append(b)
            continue
        C = _rotation_taking(r, axes[b.name])
        on = np.asarray(b.on_R, float).reshape(3, 3) @ C
        pinv_R, pinv_l = C.T @ np.asarray(b.pinv_R, float).reshape(3, 3), C.T @ np.asarray(b.pinv_l, float)
        out.append(dataclasses.replace(
            b, slug=ref.slug, on_R=[float(x) for x in on.ravel()], pinv_R=[float(x) for x in pinv_R.ravel()],
            pinv_l=[float(x) for x in pinv_l], X_const=ref.X_const, H_const=ref.H_const, Hd_const=ref.Hd_const,
            X_alias=ref.X_alias, H_alias=ref.H_alias, Hd_alias=ref.Hd_alias, kernels_of=ref.kernels_of or ref.name))
    return out


def fused_tree(bodies: list, fused: list, adds: dict, layout: ModelLayout) -> tuple:
    """``(layout, fused)`` for a :class:`PerKindForm` over the fused tree ``fused`` of
    :func:`symgen.algorithms.soa.fuse_static` (``adds`` its static bodies per host): the fused tree's layout (the
    model's Q, U and p: a static body has none of them) and the ``fused`` argument that says where each body's
    external force comes from."""
    from ..numeric import np_phi

    L = ModelLayout([(layout.nqh[int(b.tag)], layout.nuh[int(b.tag)]) for b in fused])
    assert (L.q0, L.u0) == ([layout.q0[int(b.tag)] for b in fused], [layout.u0[int(b.tag)] for b in fused]), \
        "a static body with coordinates"
    L.params = layout.params                   # p is the model's: f_ext of every body, the static ones included
    statics = []
    for j in sorted(adds):
        for k, R, l in adds[j]:                # phi(R, l) moves the static body's force into its host (soa.phi)
            statics.append((j, k, [float(x) for x in np_phi([R[0:3], R[3:6], R[6:9]], l).ravel()]))
    return L, {"orig": [int(b.tag) for b in fused], "statics": statics, "nb": len(bodies)}


class _Kind:
    """One body kind: a representative body and the constant entries of what its steps store."""

    def __init__(self, index: int, key: tuple, rep: soa.BodyInfo, name: str):
        self.index, self.key, self.rep = index, key, rep
        self.slug, self.root, self.leaf, self.pinv_identity, self.on_identity, self.armature = key
        self.label = (f"kind {index}: {self.slug}" + (", root" if self.root else "") + (", leaf" if self.leaf else "")
                      + ("" if self.pinv_identity else ", pnode moved") + ("" if self.on_identity else ", onode turned")
                      + (", armature" if self.armature else "") + f" (e.g. body '{rep.name}')")
        self.template = {}   # field -> list of float (constant for this kind) or None (stored at run time)


class PerKindForm:
    """C of the per-kind form for one model: the step functions, their tables and the FD / ID / M drivers."""

    def __init__(self, bodies: list, layout: ModelLayout, name: str, hinges: dict | None = None,
                 fused: dict | None = None, model: str | None = None):
        # hinges ({body: Hinge}): PINs about different axes folded onto one (fold_pin_axes); their steps then read
        # their onode and pnode from sg_<m>_step_const (body_const keeps the model's, which the kinematics read).
        # fused: the bodies are the fused tree (symgen.algorithms.soa.fuse_static, fused_tree), and this says where
        # each body's external force comes from: {"orig": each body's index in the model, "statics": (host, index
        # in the model, phi(R, l) of its pose in the host, 36 row-major) per static body fused, "nb": the model's
        # body count}; FD and ID then gather the external forces of the bodies that took static bodies, theirs moved
        # into them, after the workspace's blocks (_gather_f_ext), and the steps of the others read theirs from p
        # name: the prefix of the form's steps and tables (sg_<name>_...); model: the model's C name, of the entry
        # points its drivers call (sg_<model>_forward_dynamics; default: name)
        self.fused, self.model = fused, model or name
        self.model_bodies = list(bodies)
        bodies = fold_pin_axes(bodies, hinges) if hinges else list(bodies)
        self.const_table = "step_const" if any(b.kernels_of for b in bodies) else "body_const"
        self.bodies, self.L, self.name = bodies, layout, name
        has_children = {b.parent for b in bodies}
        self.kinds, self.kind_of = [], []
        index = {}
        for b in bodies:
            key = body_kind(b, b.k in has_children)
            if key not in index:
                index[key] = len(self.kinds)
                self.kinds.append(_Kind(len(self.kinds), key, b, name))
            self.kind_of.append(index[key])
        self.functions = []     # C lines of every step function, in order
        self.tables = []        # C lines of the step tables
        self._made = set()      # the tables made (a step shared by two drivers is traced once)
        self._sizes = {}
        self._record = None     # the workspace layout: the model's, or a compact one per body (_rec)
        self._ws_table = None   # then the name of the table of each body's block (sg_<m>_<table>[k])
        self._driver_lines = []  # the drivers' C (emit, emit_lanes): which tables they read

    # ---- reading and writing the workspace and the arguments ----------------------------------------
    def _offsets(self, record) -> list:
        """Each body's block in a compact workspace of ``record(nu)`` blocks, and the end (its size)."""
        offsets = [0]
        for b in self.bodies:
            offsets.append(offsets[-1] + record(b.nu).size)
        return offsets

    def _fx(self) -> int:
        """Where the fused tree's gathered external forces start in the workspace (:attr:`fused`): after the
        bodies' blocks."""
        return (len(self.bodies) * self.L.workspace.size if self._record is None
                else self._offsets(self._record)[-1])

    @property
    def status_stride(self) -> int:
        """nb + 1 of the model (a batch's status: lane l, body k: l (nb + 1) + k + 1)."""
        return (self.fused["nb"] if self.fused else len(self.bodies)) + 1

    def _hosts(self) -> list:
        """The fused tree's bodies that took static bodies (:attr:`fused`), in order: each one's external force is
        gathered into a slot of 6 after the workspace's blocks; the others read theirs from p."""
        if "hosts" not in self.fused:
            self.fused["hosts"] = sorted({h for h, _, _ in self.fused["statics"]})
        return self.fused["hosts"]

    def _fe(self) -> P.View:
        """A step's pointer to its body's external force (``fe``): into p, or (the fused tree's hosts) into the
        forces gathered after the workspace's blocks."""
        k, f0 = P.Var("k"), self.L.params["f_ext"]
        if not self.fused:
            return P.View("fe", "p", P.add(f0, P.mul(6, k)), const=True)
        nm = self.name
        return P.View("fe", "p", P.add(f0, P.mul(6, P.Lookup(f"sg_{nm}_orig", k))), const=True,
                      when=P.Cmp(P.Lookup(f"sg_{nm}_fe_slot", k), "<", 0),
                      other=("ws", P.add(self._fx(), P.mul(6, P.Lookup(f"sg_{nm}_fe_slot", k)))))

    def _gather_f_ext(self, p: str) -> list:
        """The statements that gather the external forces of the fused tree's hosts (:meth:`_hosts`): the host's
        own from ``p``, plus each of its static bodies', moved into it (phi(R, l) f over phi's nonzero entries, in
        the same order on every lane)."""
        f0, FX, hosts = self.L.params["f_ext"], self._fx(), self._hosts()
        slot = {h: i for i, h in enumerate(hosts)}
        orig = self.fused["orig"]
        dst, src, val = [], [], []
        for h, k, phi in self.fused["statics"]:
            for r in range(6):
                for c in range(6):
                    if phi[6 * r + c] != 0.0:
                        dst.append(FX + 6 * slot[h] + r)
                        src.append(f0 + 6 * k + c)
                        val.append(phi[6 * r + c])
        j = P.Var("j")
        return [P.Locals(tables=(("sg_fe_dst", dst), ("sg_fe_src", src),
                                 ("sg_fe_host", [f0 + 6 * orig[h] for h in hosts])), dtables=(("sg_fe_phi", val),)),
                P.Comment("f_ext of the bodies that took static bodies: their own and the static ones', moved into them"),
                P.Loop("j", 0, len(hosts), [P.Copy("ws", P.add(FX, P.mul(6, j)), p, P.Lookup("sg_fe_host", j), 6)]),
                P.Loop("j", 0, len(dst), [
                    P.Set(P.Elem("ws", P.Lookup("sg_fe_dst", j)),
                          P.Bin("*", P.Elem("sg_fe_phi", j), P.Elem(p, P.Lookup("sg_fe_src", j))), "+=")])]

    def _rec(self, kind):
        """The layout of a body's workspace block: the model's (every block the same size) or, for the lane form
        (:meth:`emit_lanes`), the compact one of the body's hinge (None: the fields of every body, those a child
        reads from or adds into its parent)."""
        if self._record is None:
            return self.L.workspace
        return self._record(0 if kind is None else kind.rep.nu)

    def _kind_body(self, T: Tape, kind: _Kind) -> soa.BodyInfo:
        """The kind's representative body with its constants as runtime inputs (``c[...]``)."""
        C, rep = self.L.body_const, kind.rep
        c = lambda field, i: T.input(f"c[{C[field] + i}]")  # noqa: E731
        Jp = [c("J", i) for i in range(6)]
        J = [[Jp[0], Jp[1], Jp[2]], [Jp[1], Jp[3], Jp[4]], [Jp[2], Jp[4], Jp[5]]]
        on = _IDENTITY_R if kind.on_identity else [c("on", i) for i in range(9)]
        pinv = (_IDENTITY_R + [0.0] * 3) if kind.pinv_identity else [c("pinv", i) for i in range(12)]
        return soa.BodyInfo(
            k=rep.k, name=kind.label, parent=-1 if kind.root else 0, slug=rep.slug, q0=0, u0=0, nu=rep.nu,
            on_R=on, on_l=[c("on", 9 + i) for i in range(3)], pinv_R=pinv[:9], pinv_l=pinv[9:],
            M=soa.rigid_inertia(c("m", 0), [c("h", i) for i in range(3)], J),
            X_const=rep.X_const, H_const=rep.H_const, Hd_const=rep.Hd_const, X_alias=rep.X_alias,
            H_alias=rep.H_alias, Hd_alias=rep.Hd_alias,
            armature=[c("arm", i) for i in range(rep.nu)] if kind.armature else None, tag="",
            status=f"sg_{self.name}_orig[k] + 1" if self.fused else "k + 1")   # the model's body index, + 1

    def _store(self, T, kind, field, values, slot="w", all_entries=False):
        """Store values in the workspace field; constants only when another body reads them."""
        tmpl = []
        for i, v in enumerate(values):
            if isinstance(v, float) and not all_entries:
                tmpl.append(v)
                continue
            tmpl.append(None)
            T.store(f"{slot}[{self._rec(kind)[field] + i}]", v)
        if slot == "w" and not all_entries:
            kind.template[field] = tmpl

    def _load(self, T, kind, field, n, slot="w"):
        tmpl = kind.template.get(field) if slot == "w" else None
        off = self._rec(kind if slot == "w" else None)[field]
        return [tmpl[i] if tmpl and tmpl[i] is not None else T.input(f"{slot}[{off + i}]") for i in range(n)]

    def _add(self, T, field, values, index=None):
        """Add values into the parent's workspace field (``wp[..] += ..``)."""
        off = self._rec(None)[field]
        for i, v in enumerate(values):
            if not (isinstance(v, float) and v == 0.0):
                T.accumulate(f"wp[{off + (index(i) if index else i)}]", v)

    def _store_K(self, T, kind, K):
        self._store(T, kind, "R", K["R"])
        self._store(T, kind, "l", K["l"])
        self._store(T, kind, "H", [x for col in K["H"] for x in col])
        for f in ("a", "b"):
            if f in K:
                self._store(T, kind, f, K[f])

    def _load_K(self, T, kind, b, with_ab=True):
        Hf = self._load(T, kind, "H", 6 * b.nu)
        K = {"R": self._load(T, kind, "R", 9), "l": self._load(T, kind, "l", 3),
             "H": [Hf[6 * c:6 * c + 6] for c in range(b.nu)]}
        if with_ab:
            K["a"], K["b"] = self._load(T, kind, "a", 6), self._load(T, kind, "b", 6)
        return K

    def _sym6(self, T, field, slot="w"):
        off = self._rec(None)[field]
        return [[T.input(f"{slot}[{off + sym_index(i, j)}]") for j in range(6)] for i in range(6)]

    def _io(self, T, b):
        L = self.L
        return {"u": [T.input(f"uh[{i}]") for i in range(b.nu)], "tau": [T.input(f"Th[{i}]") for i in range(b.nu)],
                "f_ext": [T.input(f"fe[{i}]") for i in range(6)],
                "g": [T.input(f"p[{L.params['gravity'] + i}]") for i in range(3)]}

    # ---- the steps, per kind ------------------------------------------------------------------------
    def _kinematics(self, T, kind, b):
        io = self._io(T, b)
        Vp = [0.0] * 6 if b.root else self._load(T, kind, "V", 6, slot="wp")
        K = soa.kinematics_step(T, b, Vp, io["u"])
        self._store_K(T, kind, K)
        self._store(T, kind, "V", K["V"], all_entries=True)

    def _joint(self, T, kind, b):
        R, l, H, _ = soa.joint(T, b)
        self._store_K(T, kind, {"R": R, "l": l, "H": H})

    def _atbi_tip(self, T, kind, b, mats):
        io = self._io(T, b)
        K = self._load_K(T, kind, b)
        Pc, zc = ([], []) if kind.leaf else ([self._sym6(T, "P")], [self._load(T, kind, "z", 6)])
        step, push = soa.atbi_tip(T, b, K, Pc, zc, io["tau"], io["f_ext"])
        if push:
            self._add(T, "P", [push[0][i][j] for i in range(6) for j in range(i, 6)])
            self._add(T, "z", push[1])
        n = b.nu
        if b.root:
            self._store(T, kind, "PH", [x for col in step["PH"] for x in col])
            self._store(T, kind, "Dinv", [x for row in step["Dinv"] for x in row])
            self._store(T, kind, "eps", step["eps"])
        else:
            self._store(T, kind, "G", [step["G"][i][c] for i in range(6) for c in range(n)])
            self._store(T, kind, "nu", step["nu"])
        if mats:
            T.effect(("if (mk) {",))
            for i, v in self._mats_entries(b, K, step):
                T.store(f"    mk[{i}]", v)
            T.effect(("}",))
        T.ret(0)

    def _mats_entries(self, b, K, step) -> list:
        """``(offset, value)`` of what the tip-to-base step stores into its body's ``atbi_matrices`` block: the
        factorization's own numbers (P's upper triangle, D, D^-1, G, H, z, eps, nu) and, in the psi block until
        :meth:`_mats_post` reads them, X_pb = (R, l); the rest (P's lower triangle, tauper, psi, z+) is the same
        arithmetic for every kind, in one loop over the bodies (:meth:`_mats_post`), not traced per kind."""
        M, n = self.L.mats, b.nu
        out = [(M["P"] + 6 * i + j, step["P"][i][j]) for i in range(6) for j in range(i, 6)]
        out += [(M["D"] + n * r + c, step["D"][r][c]) for r in range(n) for c in range(n)]
        out += [(M["Dinv"] + n * r + c, step["Dinv"][r][c]) for r in range(n) for c in range(n)]
        out += [(M["G"] + n * i + c, step["G"][i][c]) for i in range(6) for c in range(n)]
        out += [(M["H"] + n * i + c, K["H"][c][i]) for i in range(6) for c in range(n)]
        out += [(M["z"] + i, x) for i, x in enumerate(step["z"])]
        out += [(M["eps"] + c, x) for c, x in enumerate(step["eps"])]
        out += [(M["nu"] + c, x) for c, x in enumerate(step["nu"])]
        out += [(M["psi"] + i, x) for i, x in enumerate(list(K["R"]) + list(K["l"]))]
        return [(i, v) for i, v in out if not (isinstance(v, float) and v == 0.0)]   # the block is zeroed first

    def _mats_post(self, mats: str, phi: str) -> list:
        """The statements that complete every body's ``atbi_matrices`` block after the tip-to-base sweep
        (:meth:`_mats_entries`): P's lower triangle; tauper = I - G H^T; psi = phi(X_pb) tauper, phi = [[R, l~ R],
        [0, R]] the force transform of X_pb = (R, l) (:func:`symgen.algorithms.soa.phi`); z+ = z + G eps.  One loop over
        the bodies, the same arithmetic for every kind (``n``: the body's U, the row length of G and H).  ``phi``: a
        local array of 36 doubles."""
        M, nm = self.L.mats, self.name
        k, i, j, m, c = (P.Var(v) for v in "kijmc")
        n = P.Lookup(f"sg_{nm}_nuh", k)
        at = lambda field, *xs: P.Elem("mk", P.add(M[field], *xs))      # body k's block      # noqa: E731
        ph = lambda *xs: P.Elem(phi, P.add(*xs))                                             # noqa: E731
        Rl = lambda *xs: at("psi", *xs)             # R (row-major) then l, as the sweep left them  # noqa: E731
        mul, sub = (lambda a, b: P.Bin("*", a, b)), (lambda a, b: P.Bin("-", a, b))          # noqa: E731
        cross = [(1, 2, 2, 1), (2, 0, 0, 2), (0, 1, 1, 0)]      # row r of l~ R: l[a] R[b, :] - l[c] R[d, :]
        return [P.Loop("k", 0, self.L.nb, [
            P.Point("mk", mats, P.mul(M.size, k)),
            P.Comment("P's lower triangle"),
            P.Loop("i", 1, 6, [P.Loop("j", 0, i, [P.Set(at("P", P.mul(6, i), j), at("P", P.mul(6, j), i))])]),
            P.Comment("phi = [[R, l~ R], [0, R]] from X_pb = (R, l), which the sweep left in the psi block"),
            P.Zero(phi, 0, 36),
            P.Loop("i", 0, 3, [P.Loop("j", 0, 3, [P.Set(ph(P.mul(6, i), j), Rl(P.mul(3, i), j)),
                                                 P.Set(ph(P.mul(6, i), j, 21), Rl(P.mul(3, i), j))])]),
            P.Loop("j", 0, 3, [P.Set(ph(6 * r + 3, j), sub(mul(Rl(9 + a), Rl(3 * b_, j)), mul(Rl(9 + c_), Rl(3 * d, j))))
                               for r, (a, b_, c_, d) in enumerate(cross)]),
            P.Comment("tauper = I - G H^T"),
            P.Zero("mk", M["tauper"], 36),
            P.Loop("i", 0, 6, [P.Set(at("tauper", P.mul(7, i)), P.Num(1.0))]),
            P.Loop("i", 0, 6, [P.Loop("j", 0, 6, [P.Loop("c", 0, n, [
                P.Set(at("tauper", P.mul(6, i), j), mul(at("G", P.mul(n, i), c), at("H", P.mul(n, j), c)), "-=")])])]),
            P.Comment("psi = phi tauper"),
            P.Zero("mk", M["psi"], 36),
            P.Loop("i", 0, 6, [P.Loop("j", 0, 6, [P.Loop("m", 0, 6, [
                P.Set(at("psi", P.mul(6, i), j), mul(ph(P.mul(6, i), m), at("tauper", P.mul(6, m), j)), "+=")])])]),
            P.Comment("z+ = z + G eps"),
            P.Loop("i", 0, 6, [P.Set(at("zplus", i), at("z", i)), P.Loop("c", 0, n, [
                P.Set(at("zplus", i), mul(at("G", P.mul(n, i), c), at("eps", c)), "+=")])]),
        ])]

    def _upsilon_program_body(self, mats: str, out: str, W: str, HD: str) -> list:
        """Upsilon of every body frame, base to tip, from the completed ``atbi_matrices`` blocks (Jain):
        Upsilon(k) = psi^T Upsilon(parent) psi + H D^-1 H^T, Upsilon = 0 above a root (the same arithmetic for every
        kind: :func:`symgen.algorithms.soa.upsilon_step` is its traced form).  ``W`` (36) and ``HD`` (6 x the
        largest U) are local arrays."""
        M, nm, L = self.L.mats, self.name, self.L
        k, i, j, m, c, d, pk = (P.Var(v) for v in ("k", "i", "j", "m", "c", "d", "pk"))
        n = P.Lookup(f"sg_{nm}_nuh", k)
        at = lambda field, *xs: P.Elem("mk", P.add(M[field], *xs))      # body k's block      # noqa: E731
        Y = lambda *xs: P.Elem("yk", P.add(*xs))                          # Upsilon(k)          # noqa: E731
        Yp = lambda *xs: P.Elem("yp", P.add(*xs))                         # Upsilon(parent)     # noqa: E731
        mul = lambda a, b: P.Bin("*", a, b)                                                  # noqa: E731
        w = max(L.max_nu, 1)
        return [P.Loop("k", 0, L.nb, [
            P.Point("mk", mats, P.mul(M.size, k)), P.Point("yk", out, P.mul(36, k)),
            P.Zero("yk", 0, 36),
            P.Let("pk", P.Lookup(f"sg_{nm}_parent", k)),
            P.If(P.Cmp(pk, ">=", 0), [
                P.Point("yp", out, P.mul(36, pk)),
                P.Comment("psi^T Upsilon(parent) psi"),
                P.Zero(W, 0, 36),
                P.Loop("i", 0, 6, [P.Loop("j", 0, 6, [P.Loop("m", 0, 6, [
                    P.Set(P.Elem(W, P.add(P.mul(6, i), j)), mul(Yp(P.mul(6, i), m), at("psi", P.mul(6, m), j)), "+=")])])]),
                P.Loop("i", 0, 6, [P.Loop("j", 0, 6, [P.Loop("m", 0, 6, [
                    P.Set(Y(P.mul(6, i), j), mul(at("psi", P.mul(6, m), i), P.Elem(W, P.add(P.mul(6, m), j))), "+=")])])])]),
            P.Comment("+ H D^-1 H^T"),
            P.Zero(HD, 0, 6 * w),
            P.Loop("i", 0, 6, [P.Loop("d", 0, n, [P.Loop("c", 0, n, [
                P.Set(P.Elem(HD, P.add(P.mul(w, i), d)), mul(at("H", P.mul(n, i), c), at("Dinv", P.mul(n, c), d)), "+=")])])]),
            P.Loop("i", 0, 6, [P.Loop("j", 0, 6, [P.Loop("d", 0, n, [
                P.Set(Y(P.mul(6, i), j), mul(P.Elem(HD, P.add(P.mul(w, i), d)), at("H", P.mul(n, j), d)), "+=")])])])])]

    def _atbi_base(self, T, kind, b):
        n = b.nu
        K = self._load_K(T, kind, b)
        if b.root:
            PH, Dinv = self._load(T, kind, "PH", 6 * n), self._load(T, kind, "Dinv", n * n)
            step = {"PH": [PH[6 * c:6 * c + 6] for c in range(n)], "Dinv": [Dinv[n * r:n * r + n] for r in range(n)],
                    "eps": self._load(T, kind, "eps", n), "G": None, "nu": None}
            ap = soa.gravity_acceleration(T, self._io(T, b)["g"])
        else:
            G = self._load(T, kind, "G", 6 * n)
            step = {"G": [G[n * i:n * i + n] for i in range(6)], "nu": self._load(T, kind, "nu", n)}
            ap = self._load(T, kind, "alpha", 6, slot="wp")
        udot, alpha = soa.atbi_base(T, b, K, step, ap)
        for c, x in enumerate(udot):
            T.store(f"outh[{c}]", x)
        self._store(T, kind, "alpha", alpha, all_entries=True)

    def _rnea_base(self, T, kind, b):
        io = self._io(T, b)
        K = self._load_K(T, kind, b)
        ap = soa.gravity_acceleration(T, io["g"]) if b.root else self._load(T, kind, "alpha", 6, slot="wp")
        alpha, f = soa.rnea_base(T, b, K, ap, io["tau"], io["f_ext"])
        self._store(T, kind, "alpha", alpha, all_entries=True)
        self._store(T, kind, "f", f, all_entries=True)        # the children add into it

    def _rnea_tip(self, T, kind, b):
        io = self._io(T, b)
        K = self._load_K(T, kind, b)
        tau, push = soa.rnea_tip(T, b, K, self._load(T, kind, "f", 6), [], io["tau"])
        for c, x in enumerate(tau):
            T.store(f"outh[{c}]", x)
        if push:
            self._add(T, "f", push)

    def _crba_tip(self, T, kind, b):
        K = self._load_K(T, kind, b, with_ab=False)
        Icc = [] if kind.leaf else [_unpack_rigid(self._load(T, kind, "Ic", 10))]
        Ic, push = soa.crba_composite(T, b, K, Icc)
        if push:
            self._add(T, "Ic", _pack_rigid(push))
        if b.nu:
            F, block = soa.crba_column(T, b, K, Ic)
            nu = self.L.nu
            for r, row in enumerate(block):
                for c, v in enumerate(row):
                    T.store(f"out[(uo + {r}) * {nu} + uo + {c}]", v)
            if not b.root:
                self._store(T, kind, "F", [x for f in soa.crba_up(T, K, F) for x in f], all_entries=True)

    def _crba_walk(self, T, kind, b):
        K = self._load_K(T, kind, b, with_ab=False)
        F = [[T.input(f"x[{i}]") for i in range(6)]]
        for r, row in enumerate(soa.crba_rows(T, b, K, F)):
            T.store(f"rows[{r}]", row[0])
        if not b.root:
            for i, v in enumerate(soa.crba_up(T, K, F)[0]):
                T.store(f"y[{i}]", v)

    # ---- C text -------------------------------------------------------------------------------------
    def _views(self, lanes: bool) -> list:
        """``[(name, statement)]``: the pointers (and the U offset) a step may start with, each defined where the
        step reads it (:func:`_prologue`), in this order: its Q, U, constants, workspace block and its parent's, T,
        external force, outputs, atbi_matrices block, Upsilon rows, tangents."""
        nm, L, k = self.name, self.L, P.Var("k")
        q0, u0, parent = (P.Lookup(f"sg_{nm}_{t}", k) for t in ("q0", "u0", "parent"))
        if self._record is not None:   # a workspace of its own record (the lanes', the derivatives'): its table
            block = lambda b: P.Lookup(f"sg_{nm}_{self._ws_table}", b)               # noqa: E731
        else:
            block = lambda b: P.mul(self.L.workspace.size, b)                        # noqa: E731
        views = [("qh", P.View("qh", "q", q0, const=True)), ("uh", P.View("uh", "u", u0, const=True)),
                 ("uo", P.Let("uo", u0)),
                 ("c", P.View("c", f"sg_{nm}_{self.const_table}", row=k, elem="double", const=True)),
                 ("w", P.View("w", "ws", block(k))),
                 ("wp", P.View("wp", "ws", block(P.Lookup(f"sg_{nm}_parent", k)))),
                 ("Th", P.View("Th", "p", P.add(L.params["tau"], u0), const=True)),
                 ("fe", self._fe()),
                 ("outh", P.View("outh", "out", u0))]
        if not lanes:
            views += [("mk", P.View("mk", "mats", P.mul(L.mats.size, k), when=P.Cmp(P.Var("mats"), "!=", 0))),
                      ("yk", P.View("yk", "out", P.mul(36, k))),
                      ("yp", P.View("yp", "out", P.mul(36, parent), const=True)),
                      ("dw", P.View("dw", "dws", block(k))),
                      ("dwp", P.View("dwp", "dws", block(parent))),
                      ("sqh", P.View("sqh", "sq", q0, const=True)),
                      ("suh", P.View("suh", "su", u0, const=True))]
        return views

    def _function(self, step: str, kind: _Kind, trace, doc: str, signature=_SIGNATURE, params=None,
                  dual=None, lane=None) -> str:
        """Trace one step for one kind into a C function; returns its name.  ``dual(T, kind)``: the step is traced
        on that tape (a :class:`symgen.ir.dual.DualTape` recording on T) instead of T itself.  ``lane``: ``(vector
        type, width, target)``: a tangent step printed for that many directions at once
        (:meth:`symgen.ir.tape.Tape.lane_lines`: the tangents vectors, the values doubles)."""
        T = Tape()
        D = T if dual is None else dual(T, kind)
        b = self._kind_body(D, kind)
        trace(D, kind, b)
        body = T.lines() if lane is None else T.lane_lines(lane[0], str(lane[1]), scalars=_VALUE_ARRAYS)
        arrays = T.live_arrays()
        fn = f"sg_{self.name}_{step}_{kind.index}"
        head = []
        nq = self.L.nqh[kind.rep.k]
        for arr, kernel, size in _kernel_outputs(nq, b.nu):
            if arr in arrays:
                head += [P.Locals(arrays=((arr, size),)), P.Invoke(f"sg_{kind.slug}_{kernel}", ("qh", "uh", None, arr),
                                                                   check=False)]
        if lane is not None:
            signature = _dl_signature()
        views = self._views(lanes=False)
        if lane is not None:              # the tangents' pointers are to the directions' vectors
            views = [(n, replace(v, elem="vector") if n in ("outh", "dw", "dwp", "sqh", "suh") else v)
                     for n, v in views]
        pro = _prologue(views, c_lines(P.Program(head)) + body)
        returns = "int" if signature == _SIGNATURE else "void"
        tail = [P.Return(0)] if returns == "int" and not (body and body[-1].startswith("return")) else []
        rec = P.Function(fn, signature, [*pro, *head, P.Traced(body), *tail], returns=returns,
                         doc=f"{doc}; {kind.label}" + ("" if lane is None else f"; {lane[1]} directions at once"),
                         target=None if lane is None else lane[2], ints=("l",) if lane is not None else ())
        self.functions += c_function(rec, vector=None if lane is None else lane[0]) + [""]
        return fn

    def _table(self, step: str, trace, doc: str, **kw) -> str:
        """A step traced for every kind, and its table ``sg_<m>_<step>[kind]`` (once per step)."""
        tbl = f"sg_{self.name}_{step}"
        if tbl in self._made:
            return tbl
        self._made.add(tbl)
        fns = [self._function(step, kind, trace, doc, **kw) for kind in self.kinds]
        sig = kw.get("signature", _SIGNATURE)
        lane = kw.get("lane")
        if lane is not None:
            sig = _dl_signature()
        self.tables += c_function_table(P.FunctionTable(tbl, sig, tuple(fns), "int" if sig == _SIGNATURE else "void"),
                                        vector=None if lane is None else lane[0])
        return tbl

    def emit(self, want=("fd", "id", "mm")) -> dict:
        """The drivers' bodies: ``fd`` (int f(q, u, p, out, mats)), ``id`` and ``mm`` (f(q, u, p, out)), and
        ``mats`` (int f(q, u, p, out): the ATBI factorization's matrices and filter vectors into out, FD's
        kinematics and tip-to-base half alone; with ``fd`` wanted too, FD's driver fills them instead), and
        ``upsilon`` (int f(q, u, p, out): Upsilon of every body frame, 36 each, after that half): the programs of
        :meth:`programs` printed for one state."""
        out = {k: c_lines(prog) for k, prog in self.programs(want).items()}
        self._driver_lines += [ln for lines in out.values() for ln in lines]
        return out

    def programs(self, want, lanes: bool = False, hinges=None, memo=None) -> dict:
        """``{entry: Program}``: the looped schedule of each entry point in ``want`` (of "fd", "id", "mm", "mats",
        "upsilon"; "mats" only for one state) as a :class:`symgen.ir.program.Program`, written once and printed
        for one state (:meth:`emit`) or, with ``lanes``, for SG_W states (:meth:`emit_lanes`, whose step tables
        these are then: ``hinges`` and ``memo`` as :meth:`_lane_table` takes them)."""
        nm, L, nb, nu = self.name, self.L, len(self.bodies), self.L.nu
        kinds, parent, nuh, u0 = (f"sg_{nm}_{t}" for t in ("kind", "parent", "nuh", "u0"))
        if lanes:
            fixed = lane_workspace(0)
            table = lambda step, trace, doc, walk=False: self._lane_table(step, trace, doc, hinges, memo, walk=walk)  # noqa: E731
            block = lambda k: P.Lookup(f"sg_{nm}_lane_ws", k)                                                      # noqa: E731
            F_at = lambda k: P.Lookup(f"sg_{nm}_lane_F", k)                                                         # noqa: E731
            ws_size = self._offsets(lane_workspace)[-1]
            args, mm_args = ("q_l", "u_l", "p_l", "ws", "out_l", "st"), ("q_l", None, None, "ws", "out_l", None)
            out = "out_l"
            fd_tip = partial(self._atbi_tip, mats=False)
        else:
            fixed = L.workspace
            table = lambda step, trace, doc, walk=False: self._table(                                               # noqa: E731
                step, trace, doc, **({"signature": _WALK_SIGNATURE, "params": ("k", "ws", "x", "y", "rows")}
                                     if walk else {}))
            block = lambda k: P.mul(L.workspace.size, k)                                                           # noqa: E731
            F_at = lambda k: fixed["F"]                                                                              # noqa: E731
            ws_size = nb * L.workspace.size
            args, mm_args = ("q", "u", "p", "ws", "out", "mats"), ("q", "u", "p", "ws", "out", None)
            out = "out"
            fd_tip = partial(self._atbi_tip, mats=not self.fused)   # the fused tree's FD fills no atbi_matrices
        k, j, c, r = (P.Var(v) for v in "kjcr")
        P0 = fixed["P"]
        assert fixed["z"] == P0 + 21
        gather = []
        if self.fused:                  # the fused tree's hosts' external forces after the blocks (_gather_f_ext)
            gather, ws_size = self._gather_f_ext("p_l" if lanes else "p"), ws_size + 6 * len(self._hosts())
        ws = P.Locals(arrays=(("ws", ws_size),), comment=f"the workspace, {ws_size} {'vectors' if lanes else 'doubles'}")

        def up(*body):
            return P.Loop("k", 0, nb, list(body))

        def down(*body):
            return P.Loop("k", 0, nb, list(body), down=True)

        def step(tbl, check=False, a=args):
            return P.Step(tbl, kinds, k, a, check=check)

        progs = {}
        kin_doc = "kinematics base to tip: X_pb, H, V, a, b"
        tip_doc = "ATBI tip to base: P, z, D, G, eps, nu; P+ and z+ into the parent"
        if any(x in want for x in ("fd", "mats", "upsilon")):
            kin = table("velocities", self._kinematics, kin_doc)
            tip = table("atbi_tip", fd_tip, tip_doc)
            # P and z zeroed body by body just before the body's kinematics write its block (the block is then in
            # the cache once), not in a pass of their own over the whole workspace (tiago_dual's lanes: 0.8 MB)
            zero = P.Zero("ws", P.add(block(k), P0), 27, "P, z: the children add into them")
            if self.fused:              # a leaf's step reads neither (the fused tree's FD fills no atbi_matrices)
                zero = P.If(P.Cmp(P.Lookup(f"sg_{nm}_leaf", k), "==", 0), [zero])
            half = [up(zero, step(kin)), down(step(tip, check=True))]
            # atbi_matrices: the sweep's own numbers stored by the tip-to-base steps into a zeroed block per body,
            # completed by one loop that is the same for every kind (_mats_post); upsilon reads those blocks
            zero_mats = P.Zero("mats", 0, nb * L.mats.size, "atbi_matrices' blocks: the steps store their nonzeros")
            post = self._mats_post("mats", "phi")
            if "upsilon" in want and not lanes:
                w = max(L.max_nu, 1)
                progs["upsilon"] = P.Program([
                    ws, P.Locals(arrays=(("mats", nb * L.mats.size), ("phi", 36), ("W", 36), ("HD", 6 * w)),
                                 pointers=("mk", "yk", "yp")),
                    zero_mats, *half, *post,
                    P.Comment("Upsilon = psi^T Upsilon(parent) psi + H D^-1 H^T, base to tip"),
                    *self._upsilon_program_body("mats", "out", "W", "HD"), P.Return(0)])
            if "mats" in want and not lanes:
                if "fd" in want:        # FD's driver fills them (its tip-to-base steps are these)
                    sweep = [P.Locals(arrays=(("udot", max(nu, 1)), ("phi", 36)), pointers=("mats", "mk")),
                             P.Point("mats", "out"), zero_mats,
                             P.Invoke(f"sg_{self.model}_fd_per_kind", ("q", "u", "p", "udot", "mats"))]
                else:
                    sweep = [ws, P.Locals(arrays=(("phi", 36),), pointers=("mats", "mk")), P.Point("mats", "out"),
                             zero_mats, *half]
                progs["mats"] = P.Program([*sweep, *post, P.Return(0)])
            if "fd" in want:
                base = table("atbi_base", self._atbi_base, "ATBI base to tip: alpha+, Udot, alpha")
                progs["fd"] = P.Program([ws, *gather, *half, up(step(base)), P.Return(0)])
        if "id" in want:
            kin = table("velocities", self._kinematics, kin_doc)
            rb = table("rnea_base", self._rnea_base, "Newton-Euler base to tip: alpha, f = M alpha + b - f_ext")
            rt = table("rnea_tip", self._rnea_tip, "Newton-Euler tip to base: T = H^T f (+ A Udot); phi f into the parent")
            a = args if lanes else args[:-1] + (None,)
            progs["id"] = P.Program([ws, *gather, up(step(kin, a=a)), up(step(rb, a=a)), down(step(rt, a=a))])
        if "mm" in want:
            # on lanes M goes straight into the states' rows of out (doubles) where they are short enough to stay
            # in the cache (MM_ROWS_MAX_BYTES), instead of a vector array zeroed and turned into rows at the end
            m_out, nn = ("out", nu * nu) if lanes and self.mm_rows() else (out, None)
            jt = table("joint", self._joint, "X_pb and H")
            ct = (self._lane_table("crba_tip_rows", self._crba_tip, "composite inertia tip to base, the body's "
                                   "diagonal block of M (into each state's row) and F moved to the parent", hinges,
                                   memo, rows=nn) if nn else
                  table("crba_tip", self._crba_tip,
                        "composite inertia tip to base, the body's diagonal block of M and F moved to the parent"))
            walk = table("crba_walk", self._crba_walk, "one column F at an ancestor: rows H^T F, then phi F", walk=True)
            at = lambda b, i: P.add(P.Lookup(u0, b), i)                                                              # noqa: E731
            m_args = mm_args[:4] + (m_out,) + mm_args[5:]
            progs["mm"] = P.Program([
                ws, P.Locals(arrays=(("buf", 12), ("rows", L.max_nu)), pointers=("x", "y")),
                P.Zero(m_out, 0, P.mul(P.Var("SG_W"), nn), doubles=True) if nn else P.Zero(out, 0, nu * nu),
                up(P.Zero("ws", P.add(block(k), fixed["Ic"]), 10, "composite inertias")),
                up(step(jt, a=mm_args[:4] + (None,) + mm_args[5:] if lanes else mm_args)), down(step(ct, a=m_args)),
                P.Comment("each column F of body k, walked up its ancestors j: M[j, k] = M[k, j]^T = H_j^T F"),
                up(P.Loop("c", 0, P.Lookup(nuh, k), [
                    P.Point("x", "buf"), P.Point("y", "buf", 6),
                    P.Copy("x", 0, "ws", P.add(block(k), F_at(k), P.mul(6, c)), 6),
                    P.Ancestors("j", k, parent, [
                        P.Step(walk, kinds, j, ("ws", "x", "y", "rows")),
                        P.Loop("r", 0, P.Lookup(nuh, j), [
                            P.Scatter(((m_out, P.add(P.mul(at(j, r), nu), at(k, c))),
                                       (m_out, P.add(P.mul(at(k, c), nu), at(j, r)))), ("rows", r), rows=nn)]),
                        P.Swap("x", "y")])]))])
        return progs

    def mm_rows(self) -> bool:
        """Whether the looped lane form of M writes the SG_W states' rows of out directly (:data:`MM_ROWS_MAX_BYTES`)."""
        return 8 * lane_width() * self.L.nu ** 2 <= MM_ROWS_MAX_BYTES

    # ---- the looped lane form: the same steps for SG_W states at once --------------------------------
    def _lane_kernels(self, T: Tape, kind: _Kind, b: soa.BodyInfo, hinges: dict, memo: dict) -> list:
        """The start of a lane step: the hinge kernels' outputs it reads, ``sg_vd X[16]`` etc., on lane vectors where
        ``self._lane_kernel`` (:func:`symgen.codegen.kernels.lane_kernel_lines`) prints the kernel (its sines and cosines by
        ``sg_sincos_split_lanes``), else one lane at a time (the scalar kernel the one-state step calls)."""
        _lane_kernel = self._lane_kernel
        read = {}
        for text in T.live_inputs():
            m = re.fullmatch(r"(\w+)\[(\d+)\]", text)
            if m:
                read.setdefault(m.group(1), set()).add(int(m.group(2)))
        rep = kind.rep
        of = rep.kernels_of or rep.name          # a folded PIN calls its reference's kernels
        h, args = hinges.get(of), self.body_layout[of]["structure"]["trig_args"]
        nq, nu = self.L.nqh[rep.k], rep.nu
        decls, vector, per_lane = [], [], []
        for arr, kernel, size in _kernel_outputs(nq, nu):
            if arr not in read:
                continue
            live = sorted(read[arr])
            st = self.body_layout[of]["structure"]
            if kernel in st and arr in ("X", "H", "Hd"):
                # every entry the scalar kernel computes, not only those read: its CSE over a subset of them may
                # group a product differently (a step that reads only a few of them, through a derivative kernel's
                # aliases, then differs from the one-state step in the last bit)
                alias = st.get(f"{kernel}_alias") or [None] * len(st[kernel])
                live = sorted(set(live) | {i for i, c in enumerate(st[kernel]) if c is None and alias[i] is None})
            decls.append(P.Locals(arrays=((arr, size),)))
            lane = None if h is None else _lane_kernel(h, kernel, live, arr, 0, 0, 0, memo, {"q": "qh", "u": "uh"})
            if lane is not None:
                vector += lane
            else:
                per_lane.append((kernel, size, live, arr))
        head = []
        W, l, i = P.Var("SG_W"), P.Var("l"), P.Var("i")
        if any("s_l[" in x or "c_l[" in x for x in vector):
            n = len(args)
            lane_angles = lane_trig_args(h, "qh")       # a kernel on lane vectors: the hinge h is known
            head += [P.Locals(doubles=(("ang", P.mul(n, W)),),
                              comment="the hinge's angles, each angle's lanes one after the other"),
                     P.Locals(arrays=(("s_l", n), ("c_l", n))),
                     P.Loop("l", 0, W, [P.Set(P.Elem("ang", P.add(P.mul(j, W), l)), P.Printed(angle))
                                        for j, angle in enumerate(lane_angles)]),
                     P.Invoke("sg_sincos_split_lanes", (P.mul(n, W), "ang", P.Doubles("s_l"), P.Doubles("c_l")),
                              check=False)]
        head += decls + [P.Traced(vector)]
        if per_lane:
            k_size = max(n for _, n, _, _ in per_lane)
            # U only where a kernel reads it (coord_map_dot): the mass matrix's steps have no U (a null u)
            reads_u = any(kernel in NEEDS_U or kernel in NEEDS_U_DQ for kernel, _, _, _ in per_lane)
            calls = []
            for kernel, _, live, arr in per_lane:
                calls += [P.Invoke(f"sg_{kind.slug}_{kernel}", ("qr", "ur", None, "k_out"), check=False),
                          *(P.Set(P.Elem(arr, j, l), P.Elem("k_out", j)) for j in live)]
            head += [P.Comment("the hinge's kernels one lane at a time"), P.Loop("l", 0, W, [P.Block([
                P.Locals(doubles=(("qr", max(nq, 1)), ("ur", max(nu, 1)), ("k_out", k_size))),
                P.Loop("i", 0, nq, [P.Set(P.Elem("qr", i), P.Elem("qh", i, l))]),
                P.Loop("i", 0, nu, [P.Set(P.Elem("ur", i), P.Elem("uh", i, l) if reads_u else P.Num(0.0))]),
                *calls])])]
        return head

    def _lane_step(self, step: str, kind: _Kind, trace, doc: str, hinges: dict, memo: dict, walk=False,
                   rows=None) -> str:
        """One step of one kind traced and printed for SG_W states (:meth:`symgen.ir.tape.Tape.lane_lines`: the
        body's constants ``c`` are doubles, every other value a vector); returns the function's name.  ``rows``:
        ``out``'s row length when the step writes each state's row of ``out`` (a ``double *``) directly."""
        T = Tape()
        b = self._kind_body(T, kind)
        trace(T, kind, b)
        body = T.lane_lines("sg_vd", "SG_W", scalars=("c",), rows=rows and {"out": rows})
        head = self._lane_kernels(T, kind, b, hinges, memo)
        fn = f"sg_{self.name}_{step}_l{kind.index}"
        signature = _LANE_WALK_SIGNATURE if walk else _LANE_ROWS_SIGNATURE if rows else _LANE_SIGNATURE
        pro = _prologue(self._views(lanes=True), c_lines(P.Program(head), lanes=True) + body)
        rec = P.Function(fn, signature, [*pro, *head, P.Traced(body)], doc=f"{doc}; {kind.label}; SG_W states",
                         target="lanes", ints=("l",))
        self.lane_functions += c_function(rec, lanes=True) + [""]
        return fn

    def _lane_table(self, step: str, trace, doc: str, hinges: dict, memo: dict, walk=False, rows=None) -> str:
        tbl = f"sg_{self.name}_{step}_l"
        if tbl not in self._made:
            self._made.add(tbl)
            fns = [self._lane_step(step, kind, trace, doc, hinges, memo, walk, rows) for kind in self.kinds]
            sig = _LANE_WALK_SIGNATURE if walk else _LANE_ROWS_SIGNATURE if rows else _LANE_SIGNATURE
            self.lane_functions += c_function_table(P.FunctionTable(tbl, sig, tuple(fns)), lanes=True) + [""]
        return tbl

    def emit_lanes(self, want, hinges: dict, body_layout: dict, lane_kernel) -> dict:
        """The looped lane form of ``want`` (of "fd", "id", "mm"): each step of :meth:`emit`'s drivers printed
        for SG_W states at once (every workspace entry a vector of SG_W doubles, the bodies' constants shared), and
        drivers that loop over the bodies as :meth:`emit`'s do.  Returns ``{kind: lines}``, the bodies of
        ``sg_<m>_<kind>_lanes`` (templates/helpers/lanes.c.jinja: q and u, and for ID p, already in the vector
        arrays q_l, u_l, p_l; the outputs into out_l; a D that is not positive definite in lane l into st[l]);
        :attr:`lane_functions` holds the step functions and their tables, and the workspace offsets
        ``sg_<m>_lane_ws`` (:func:`lane_workspace`).  Bit for bit the one-state per-kind functions' operations
        (the hinge kernels on lane vectors compute their sines and cosines as the one-state kernels do).
        ``lane_kernel(hinge, kernel, live, array, q0, u0, trig0, memo)``: a hinge kernel's lines on lane vectors, or
        None (:func:`symgen.codegen.kernels.lane_kernel_lines`)."""
        self.body_layout, self._lane_kernel = body_layout, lane_kernel
        self._record, self._ws_table = lane_workspace, "lane_ws"
        saved, self._made = self._made, set()
        memo = {}
        nm, nb = self.name, len(self.bodies)
        offsets = self._offsets(lane_workspace)
        offsets.pop()                 # the end: the workspace's size (programs() reads it again)
        self.lane_functions = ["/* each body's block of the lanes' workspace (symgen.codegen.perkind.lane_workspace) */",
                               f"static const int sg_{nm}_lane_ws[{nb}] = {{ {', '.join(map(str, offsets))} }};", ""]
        try:
            out = {key: c_lines(prog, lanes=True, declared=("i", "l"))
                   for key, prog in self.programs(want, lanes=True, hinges=hinges, memo=memo).items()}
            self._driver_lines += [ln for lines in out.values() for ln in lines]
            if "mm" in want:
                self.lane_functions[1:1] = [
                    f"static const int sg_{nm}_lane_F[{nb}] = {{ {', '.join(str(lane_workspace(b.nu)['F']) for b in self.bodies)} }};"]
        finally:
            self._made, self._record, self._ws_table = saved | self._made, None, None
        return out

    def c_tables(self) -> list:
        """The topology and constants tables the step functions read (the fused tree's, :attr:`fused`: those its
        steps and drivers read; the model's are every one, which the kinematics read too)."""
        lines = self._c_tables()
        if not self.fused:
            return lines
        code = "\n".join(self.functions + self.tables + getattr(self, "lane_functions", []) + self._driver_lines)
        out, i = [], 0
        while i < len(lines):
            m = re.match(r"static const \w+ (sg_\w+)\[", lines[i])
            end = (lines.index("};", i) if lines[i].endswith("{") else i) if m else i
            if not m or f"{m.group(1)}[" in code:
                out += lines[i:end + 1]
            elif out and out[-1].startswith("/*") and lines[i].endswith("{"):
                out.pop()                           # its comment
            i = end + 1
        return out

    def _c_tables(self) -> list:
        nm, L = self.name, self.L
        ints = lambda xs: ", ".join(str(int(x)) for x in xs)  # noqa: E731
        rows = [f"    {{{', '.join(repr(x) for x in body_constants(b, L))}}},  /* '{b.name}' */" for b in self.model_bodies]
        steps = [f"    {{{', '.join(repr(x) for x in body_constants(b, L))}}},  /* '{b.name}'"
                 + (f": a PIN folded onto '{b.kernels_of}''s axis */" if b.kernels_of else " */") for b in self.bodies]
        return ([f"/* the bodies' topology: their parent (-1: newtonian), first Q and U, U count"
                 + (" and kind (which per-kind step functions they take) */" if self.functions else " */")]
                + ([f"static const int sg_{nm}_kind[{len(self.bodies)}] = {{ {ints(self.kind_of)} }};"]
                   if self.functions else []) + [
                 f"static const int sg_{nm}_parent[{len(self.bodies)}] = {{ {ints(b.parent for b in self.bodies)} }};",
                 *([f"static const int sg_{nm}_q0[{len(self.bodies)}] = {{ {ints(L.q0)} }};"]
                   if any(f"sg_{nm}_q0[" in ln for ln in self.functions + getattr(self, "lane_functions", []))
                   else []),
                 *([f"static const int sg_{nm}_orig[{len(self.bodies)}] = {{ {ints(self.fused['orig'])} }};  "
                    "/* the body's index in the model */",
                    f"static const int sg_{nm}_fe_slot[{len(self.bodies)}] = {{ "
                    f"{ints({h: i for i, h in enumerate(self._hosts())}.get(b.k, -1) for b in self.bodies)} }};  "
                    "/* -1, or its slot of external forces gathered with its static bodies' */",
                    f"static const int sg_{nm}_leaf[{len(self.bodies)}] = {{ "
                    f"{ints(self.kinds[i].leaf for i in self.kind_of)} }};"] if self.fused else []),
                 f"static const int sg_{nm}_u0[{len(self.bodies)}] = {{ {ints(L.u0)} }};",
                 f"static const int sg_{nm}_nuh[{len(self.bodies)}] = {{ {ints(L.nuh)} }};",
                 f"/* per body: m, h = m c (3), J about the origin (xx xy xz yy yz zz), onode R l, pnode^-1 R l, "
                 f"armature */",
                 f"static const double sg_{nm}_body_const[{len(self.bodies)}][{L.body_const.size}] = {{"] + rows + ["};"]
                + ([f"/* the same as the per-kind steps read them: the PINs folded onto one axis (fold_pin_axes) */",
                    f"static const double sg_{nm}_step_const[{len(self.bodies)}][{L.body_const.size}] = {{"] + steps
                   + ["};"] if self.const_table == "step_const" else []))


# ---- derivatives ---------------------------------------------------------------------------------------------

_TANGENT_SIGNATURE = (_K, *_IN, P.Param("ws"), P.Param("dws"), P.Param("sq", const=True),
                      P.Param("su", const=True), P.Param("out"))
_TANGENT_PARAMS = ("k", "q", "u", "p", "ws", "dws", "sq", "su", "out")
#: a derivative function's parameters (sg_<m>_<fd|id>_derivatives): the state, the tangent flag, out
DERIVATIVE_PARAMS = (*_IN, P.Param("tangent", "int", pointer=False), P.Param("out"))
#: what a tangent step reads that is a value (the same for every direction): a double in its lane printing
_VALUE_ARRAYS = ("c", "w", "wp", "qh", "uh", "X", "H", "Hd", "dqX", "dqH", "dqHd", "duHd", "Th", "fe", "p")


def _dl_signature() -> tuple:
    """A tangent step's parameters in the directions-on-lanes form: the tangents (dws, sq, su, out) vectors of
    the printing's vector type, the values doubles."""
    return (_K, *_IN, P.Param("ws"), P.Param("dws", "vector"), P.Param("sq", "vector", const=True),
            P.Param("su", "vector", const=True), P.Param("out", "vector"))


def rnea_workspace(nu: int) -> Record:
    """A body's block of the directions-on-lanes derivatives' workspace (values and tangents alike): what
    Newton-Euler's steps store, the fixed-size fields first (as :func:`lane_workspace`)."""
    return Record(("R", 9), ("l", 3), ("V", 6), ("a", 6), ("b", 6), ("alpha", 6), ("f", 6), ("H", 6 * nu))


#: the fields of a body's block of the analytic ID derivatives' workspace (:func:`idd_workspace`) with one 6-vector
#: per column of its hinge
_IDD_COLUMNS = ("H", "XHd", "hI", "hB", "qc", "qe", "qF", "ue", "uF")


def idd_workspace(nu: int) -> Record:
    """A body's block of the workspace of inverse dynamics' derivatives by the analytic recursions in the per-kind
    form (:meth:`PerKindDerivatives.emit_rnea_derivatives`), world axes: the pose X_0b (R0, l0), V, A, the subtree's
    sums (IC: m, h, J's upper triangle; SC: A's upper triangle, s; hC; F), then per column of its hinge H, X0 Hd,
    hI, hB and the directions' c, e, dF along Q (qc, qe, qF) and of U (ue, uF: c is H).  The fixed-size fields
    first, at the same offsets in every body's block (a child reads its parent's and adds into them)."""
    return Record(("R0", 9), ("l0", 3), ("V", 6), ("A", 6), ("IC", 10), ("SC", 9), ("hC", 6), ("F", 6),
                  *((f, 6 * nu) for f in _IDD_COLUMNS))


def _pack_s(S) -> list:
    A, sv = S
    return [A[0][0], A[0][1], A[0][2], A[1][1], A[1][2], A[2][2], *sv]


def _unpack_s(x) -> tuple:
    return [[x[0], x[1], x[2]], [x[1], x[3], x[4]], [x[2], x[4], x[5]]], x[6:9]


def _ltl_update(L, d) -> list:
    """The LTL factorization's step for row ``d`` once its pivot L_dd is taken: the row's entries divided by L_dd,
    then their products taken from the ancestors' rows (``L(r, col)``: where the factor's entry sits, a state's
    double or a lane vector; the same operations in the same order either way)."""
    i, j = P.Var("i"), P.Var("j")
    return [P.Ancestors("i", d, "lam", [P.Set(L(d, i), L(d, d), "/=")]),
            P.Ancestors("i", d, "lam", [P.Ancestors("j", i, "lam", inclusive=True, body=[
                P.Set(L(i, j), P.Bin("*", L(d, i), L(d, j)), "-=")])])]


def _l_solve_rows(L, nu: int, S: int):
    """L X = Y in place on the ``S``-column rows of ``W``, row i after its ancestors: two ancestors' rows a pass
    over row i (held in h until its pair comes), in the order of one at a time, so the same bits with row i read
    and written half as often (``L(r, col)`` as in :func:`_ltl_update`)."""
    i, j, c, h = P.Var("i"), P.Var("j"), P.Var("c"), P.Var("h")
    return P.Loop("i", 0, nu, [P.Block([
        P.Bind("r", "W", P.mul(i, S)), P.Def("lii", P.Bin("/", P.Num(1.0), L(i, i))), P.Let("h", -1),
        P.Ancestors("j", i, "lam", [P.If(P.Cmp(h, "<", 0), [P.Let("h", j)], [P.Block([
            P.Bind("rh", "W", P.mul(h, S)), P.Bind("rj", "W", P.mul(j, S)),
            P.Def("lih", L(i, h)), P.Def("lij", L(i, j)),
            P.Loop("c", 0, S, [P.Set(P.Elem("r", c), P.Bin(
                "-", P.Bin("-", P.Elem("r", c), P.Bin("*", P.Scalar("lih"), P.Elem("rh", c))),
                P.Bin("*", P.Scalar("lij"), P.Elem("rj", c))))]),
            P.Let("h", -1)])])]),
        P.If(P.Cmp(h, ">=", 0), [P.Block([
            P.Bind("rh", "W", P.mul(h, S)), P.Def("lih", L(i, h)),
            P.Loop("c", 0, S, [P.Set(P.Elem("r", c), P.Bin("*", P.Scalar("lih"), P.Elem("rh", c)), "-=")])])]),
        P.Loop("c", 0, S, [P.Set(P.Elem("r", c), P.Scalar("lii"), "*=")])])])


class _StepDual(DualTape):
    """A per-kind step traced on dual numbers: its workspace stores and its adds into the parent write the
    tangents into the tangent workspace (``w[i] = x`` -> ``dw[i] = dx``, ``wp[i] += x`` -> ``dwp[i] += dx``),
    its stores of T the tangents of T."""

    def store(self, target: str, value) -> None:
        super().store("d" + target if target[:2] in ("w[", "wp") else target, value)

    def accumulate(self, target: str, value) -> None:
        if not target.startswith("wp["):
            raise NotImplementedError(f"a tangent step has no form for {target} += ...")
        d = tangent(value)
        if not (isinstance(d, float) and d == 0.0):
            self.T.accumulate("d" + target, d)


class PerKindDerivatives(PerKindForm):
    """The derivatives of inverse and forward dynamics in the per-kind form, for models whose dynamics take it
    (past soa's straight-line limits).  Newton-Euler's per-body steps (kinematics, base to tip, tip to base) are
    traced once more per kind on dual numbers (:class:`_StepDual`: one direction, scalar tangents read from and
    written to a tangent workspace ``dws`` of the workspace's layout), and a C driver runs them once per
    direction, over the bodies the direction moves: its body's subtree base to tip, then that subtree and its
    ancestors tip to base.  dT/dUdot is M (``sg_<m>_mass_matrix``).  Forward dynamics: ``dUdot = M^-1 (dT -
    dRNEA)`` at FD's Udot, and M^-1, by M = L^T L with L of M's tree sparsity (Featherstone's LTL factorization,
    no fill-in) and two sparse triangular solves, each for all the columns of a block at once.
    The values' steps are traced again under their own names (``sg_<m>_dv_...``): the derivatives are a
    translation unit of their own."""

    def __init__(self, bodies: list, layout: ModelLayout, name: str, body_layout: dict, hinges: dict | None = None,
                 fused: dict | None = None, model: str | None = None):
        super().__init__(bodies, layout, name, hinges, fused=fused, model=model)
        self.body_layout = body_layout

    def _dual(self, T, kind, ancestor=False, carried=False):
        """The dual tape a tangent step of ``kind`` is traced on: the tangents of its inputs are the tangent
        workspace's entries (``dw``, ``dwp``), the seeds of the body's U (``suh``) and, for its hinge kernels'
        outputs, the seeds of its Q and U times the hinge's derivative kernels (whose constant entries fold).
        ``ancestor``: the step of a body that the directions do not move, only pass forces through (an ancestor of
        the moved bodies): its kinematics' tangents are zero, only its f's (what its children add) are not.
        ``carried``: the step of a body that the directions move only through its parent (none of them seeds its
        own Q or U): its hinge's outputs (X_pb, H, Hdot, in the workspace as R, l, H) and U have zero tangents."""
        from .derivatives import kernel_tangent

        rep = kind.rep
        st, nq = self.body_layout[rep.kernels_of or rep.name]["structure"], self.L.nqh[rep.k]
        rec = self._rec(kind)
        f0 = rec["f"]
        own = {i for field in ("R", "l", "H") for i in range(rec.span(field).start, rec.span(field).stop)}

        def tangent_of(text, T_):
            arr, _, rest = text.partition("[")
            i = int(rest[:-1])

            def seed(wrt, j):
                return T_.input(f"{'sqh' if wrt == 'q' else 'suh'}[{j}]")
            if ancestor:
                return T_.input(f"dw[{i}]") if arr == "w" and f0 <= i < f0 + 6 else 0.0
            if carried and (arr in ("uh", "X", "H", "Hd") or (arr == "w" and i in own)):
                return 0.0
            if arr in ("w", "wp"):
                return T_.input(f"d{arr}[{i}]")
            if arr == "uh":
                return seed("u", i)
            if arr in ("X", "H", "Hd"):
                return kernel_tangent(T_, rep, arr, "", i, st, nq, seed)
            return 0.0                        # constants, T (or Udot: M is dT/dUdot), f_ext, gravity

        return _StepDual(T, tangent_of)

    def _kinematics_carried(self, T, kind, b):
        """Kinematics base to tip at a carried body (:meth:`_dual`): X_pb and H from the workspace (the values'
        step stored them), so that only the tangents of V, a and b are computed and stored, and no hinge kernel
        runs but Hdot's (whose value the tangents do not read: the printer drops it)."""
        K0 = self._load_K(T, kind, b, with_ab=False)
        Vp = [0.0] * 6 if b.root else self._load(T, kind, "V", 6, slot="wp")
        K = soa.kinematics_step(T, b, Vp, self._io(T, b)["u"],
                                joint_values=(K0["R"], K0["l"], K0["H"], soa.joint(T, b)[3]))
        for f in ("a", "b"):
            self._store(T, kind, f, K[f])
        self._store(T, kind, "V", K["V"], all_entries=True)

    def _tangent_table(self, step, trace, doc):
        return self._table(step, trace, doc, signature=_TANGENT_SIGNATURE, params=_TANGENT_PARAMS, dual=self._dual)

    def u_path(self) -> list:
        """``lam[i]``: the U before U_i on its path to the root (the previous U of its body, else the last U of the
        nearest ancestor with one), -1 at the root: M's sparsity (M_ij = 0 unless one is on the other's path)."""
        last, lam = {}, []
        for b in self.bodies:
            up = b.parent
            while up >= 0 and up not in last:
                up = self.bodies[up].parent
            prev = last.get(up, -1)
            for c in range(b.nu):
                lam.append(prev)
                prev = b.u0 + c
            if b.nu:
                last[b.k] = prev
        return lam

    def u_preorder(self, lam: list) -> tuple:
        """``(pos, lo, hi)`` for the U tree ``lam`` (:meth:`u_path`): U c's place ``pos[c]`` in depth-first preorder,
        so that the U whose path passes U i (its subtree, i included) are the places ``pos[i] <= . < hi[i]`` and
        those it shares a path with lie in ``lo[i] <= . < hi[i]`` (``lo[i]``: the place of its tree's root, the
        first of its ancestors' places)."""
        n = len(lam)
        children = [[] for _ in range(n)]
        for c, a in enumerate(lam):
            if a >= 0:
                children[a].append(c)
        order, stack = [], [c for c in reversed(range(n)) if lam[c] < 0]
        while stack:
            c = stack.pop()
            order.append(c)
            stack.extend(reversed(children[c]))
        pos = [0] * n
        for place, c in enumerate(order):
            pos[c] = place
        hi = [pos[c] + 1 for c in range(n)]
        for c in reversed(order):                      # a subtree's places end where its last U's do
            if lam[c] >= 0:
                hi[lam[c]] = max(hi[lam[c]], hi[c])
        lo = list(pos)
        for c in range(n):                             # lam[c] < c: the root's place comes down the path
            if lam[c] >= 0:
                lo[c] = lo[lam[c]]
        return pos, lo, hi

    def fd_derivatives_program(self, nq: int) -> P.Program:
        """Forward dynamics' derivatives from inverse dynamics' (``dUdot = M^-1 (dT - dRNEA)`` at FD's Udot): FD,
        the derivatives of ID at FD's Udot into out, then ``sg_<m>_fd_derivatives_solve`` on out
        (:meth:`fd_solve_program`; the lane batch calls it too, once per state)."""
        nm, prm, nu = self.name, self.L.params, self.L.nu
        return P.Program([
            P.Locals(arrays=(("pu", prm.size), ("udot", nu))),
            P.Invoke(f"sg_{self.model}_forward_dynamics", ("q", "u", "p", "udot")),
            P.Copy("pu", 0, "p", 0, prm.size), P.Copy("pu", prm["tau"], "udot", 0, nu),
            P.Comment("dRNEA at FD's Udot (dUdot = -M^-1 dRNEA along Q and U) and M (the third block)"),
            P.Invoke(f"sg_{self.model}_id_derivatives", ("q", "u", "pu", "tangent", "out")),
            P.Comment("-M^-1 dRNEA/dQ, -M^-1 dRNEA/dU and M^-1 in place"),
            P.Invoke(f"sg_{self.model}_fd_derivatives_solve", ("tangent", "out")),
            P.Return(0)])

    def fd_solve_program(self, nq: int) -> P.Program:
        """The body of ``sg_<m>_fd_derivatives_solve(int tangent, double *out)``: out holds dRNEA/dQ, dRNEA/dU and
        M (``sg_<m>_id_derivatives``' output at FD's Udot) and becomes dUdot/dQ, dUdot/dU and M^-1 (:meth:`_fd_solve`);
        returns 0, or -3 where M is not positive definite."""
        arrays, tables, solve = self._fd_solve(nq)
        return P.Program([P.Locals(arrays=arrays, tables=tables,
                                   comment="lam: the U before each U on its path to the root; pos: each U's place in "
                                           "depth-first order, lo and hi: the places of the U on its side of the tree"),
                          *solve])

    def fd_derivative_functions(self, nq: int) -> tuple:
        """``(body, solve)``: the body of ``sg_<m>_fd_derivatives`` (:meth:`fd_derivatives_program`) and that of
        ``sg_<m>_fd_derivatives_solve``, which the template prints twice (:meth:`fd_solve_program`: its inner loops
        run over W's columns, contiguous, so a copy compiled for AVX-512, 8 columns a vector and the same operations
        per column, the same bits, beside the baseline one, 2 a vector on x86-64) and dispatches between."""
        return c_lines(self.fd_derivatives_program(nq)), c_lines(self.fd_solve_program(nq))

    def fd_derivative_lanes(self, nq: int) -> dict:
        """The pieces of ``sg_<m>_fd_derivatives_lanes`` (helpers/lanes.c.jinja) for a model whose ID derivatives
        have a lane form: FD's batch (its lane form) for the SG_W states, ``sg_<m>_id_derivatives_lanes`` at FD's Udot,
        then :meth:`fd_solve_program`'s solve state by state (tiago_dual: the ID derivatives, 50 µs a state alone,
        cost 20 on lanes).  Returns as the one-state function would for each state, lane l's status l (nb + 1) + s."""
        L, nu = self.L, self.L.nu
        ps, tau, size = L.params.size, L.params["tau"], nu * (nq + 2 * nu)
        lane, width = P.Var("l"), P.Var("SG_W")
        solve_lanes, before_solve = self._fd_solve_lanes_function(nq)
        on_lanes = [P.Comment("the SG_W states' solve on lanes (0: done; else the states one at a time, as the "
                              "one-state function, which name the state whose M is not positive definite)"),
                    P.If(P.And((P.Cmp(P.Var("tangent"), "!=", 0), P.Cmp(P.Call(solve_lanes, ("out",)), "==", 0))),
                         [P.Return(0)])] if solve_lanes else []
        prog = P.Program([
            P.Locals(arrays=(("pu", width * ps), ("udot", width * nu)),
                     comment="each state's p with T replaced by FD's Udot"),
            P.Comment("FD for the SG_W states (its lane form)"),
            P.Invoke(f"sg_{self.model}_forward_dynamics_batch", (width, "q", "u", "p", "udot")),
            P.Loop("l", 0, width, [P.Copy("pu", lane * ps, "p", lane * ps, ps),
                                   P.Copy("pu", lane * ps + tau, "udot", lane * nu, nu)]),
            P.Invoke(f"sg_{self.model}_id_derivatives_lanes", ("q", "u", "pu", "tangent", "out")),
            *on_lanes,
            P.Comment("each state's solve; a status names its lane: l (nb + 1) + s"),
            P.Loop("l", 0, width, [P.Invoke(f"sg_{self.model}_fd_derivatives_solve", ("tangent", P.At("out", lane * size)),
                                            status_base=lane * self.status_stride)])])
        lines = c_lines(prog, declared=("i", "l", "s", "c", "ndq"))
        before = [*c_function(P.Function(f"sg_{self.model}_id_derivatives_lanes", DERIVATIVE_PARAMS, None,
                                         returns="int", static=False)), *before_solve]
        return {"ins": [], "lines": lines, "out_size": size, "unused": [], "before": before, "with_function": True,
                "sincos": False}

    def _fd_solve_lanes_function(self, nq: int) -> tuple:
        """``(name, lines)``: ``sg_<m>_fd_derivatives_solve_lanes(double *out)``, :meth:`fd_solve_lanes_program`
        printed on lanes, for the lane batch's states along the tangent, or ``(None, [])`` where the solve's rows
        of SG_W states would pass :data:`symgen.codegen.schedule.FD_SOLVE_LANES_MAX_BYTES`."""
        from . import schedule

        nu = self.L.nu
        if (nu * 3 * nu + self._ltl_entries()[1]) * 8 * 8 > schedule.FD_SOLVE_LANES_MAX_BYTES:
            return None, []
        name = f"sg_{self.model}_fd_derivatives_solve_lanes"
        prog = self.fd_solve_lanes_program(nq)
        return name, c_function(P.Function(
            name, (P.Param("out", "double"),), prog.body, returns="int", target="lanes",
            doc="the solve of forward dynamics' derivatives for SG_W states along the tangent, lane l state l (its row "
                "of out at l * nU (nQ + 2 nU)): the one-state solve's operations on vectors, so the same bits; returns "
                "0, or 1 where a lane's M is not positive definite (out untouched)"), lanes=True)

    def _ltl_entries(self) -> tuple:
        """``(index, n)``: where L's entry (d, i) (i = d or an ancestor of d) sits in a packed array of the n
        entries of M's tree sparsity (-1 elsewhere), row by row."""
        lam, nu = self.u_path(), self.L.nu
        index, n = [-1] * (nu * nu), 0
        for d in range(nu):
            i = d
            while i >= 0:
                index[d * nu + i], n = n, n + 1
                i = lam[i]
        return index, n

    def fd_solve_lanes_program(self, nq: int) -> P.Program:
        """The solve of :meth:`fd_solve_program` along the tangent for SG_W states on lanes: M's entries on the tree
        (packed, :meth:`_ltl_entries`) and W's rows gathered from the states' rows of out, the same factorization and
        solves on vectors (the one-state solve's operations in its order, each lane's the same bits), out's blocks
        scattered back.  A pivot that is not positive in a lane returns 1 before out is written (the caller then
        solves the states one at a time, which names it)."""
        nu, lam = self.L.nu, self.u_path()
        pos, lo, hi = self.u_preorder(lam)
        lidx, nl = self._ltl_entries()
        S = 3 * nu                                     # W's row: [U block | M^-1 block | Q block], no padding
        size = nu * (nq + 2 * nu)                        # a state's row of out (its Q block nU x nQ long)
        a, c, d, i, j, l = (P.Var(v) for v in ("a", "c", "d", "i", "j", "l"))
        row = lambda x: P.mul(l, size) + x               # noqa: E731  lane l's entry x of out
        Lv = lambda r, col: P.Elem("Lv", P.Lookup("lidx", P.add(P.mul(r, nu), col)))  # noqa: E731
        Wr = lambda r, col: P.Elem("W", P.add(P.mul(r, S), col))  # noqa: E731
        lanes = lambda body: P.Loop("l", 0, P.Var("SG_W"), body)  # noqa: E731
        spans = [(P.Lookup("lo", i), P.Lookup("hi", i)), (P.add(nu, P.Lookup("pos", i)), P.add(nu, P.Lookup("hi", i))),
                 (P.add(2 * nu, P.Lookup("lo", i)), P.add(2 * nu, P.Lookup("hi", i)))]

        def over_spans(body):
            return [P.Loop("c", s0, s1, body) for s0, s1 in spans]
        return P.Program([
            P.Locals(arrays=(("W", nu * S), ("Lv", nl)),
                     tables=(("lam", tuple(lam)), ("pos", tuple(pos)), ("lo", tuple(lo)), ("hi", tuple(hi)),
                             ("lidx", tuple(lidx))),
                     comment="W: the solve's rows, Lv: M's entries on the tree, then L's (lidx: where (d, i) sits)"),
            P.Comment("M's entries on the tree, lane l from state l"),
            P.Loop("d", 0, nu, [P.Ancestors("i", d, "lam", inclusive=True, body=[lanes([
                P.Set(P.Elem("Lv", Lv(d, i).index, l),
                      P.Elem("out", row(P.add(2 * nu * nu, P.mul(d, nu), i))))])])]),
            P.Comment("M = L^T L in place, as the one-state solve (a pivot that is not positive: 1)"),
            P.Loop("d", 0, nu, down=True, body=[
                lanes([P.Check(P.Elem("Lv", Lv(d, d).index, l), 1, "M is not positive definite"),
                       P.Set(P.Elem("Lv", Lv(d, d).index, l), P.Fn("sqrt", P.Elem("Lv", Lv(d, d).index, l)))]),
                *_ltl_update(Lv, d)]),
            P.Comment("W's rows = [-dRNEA/dU | I | -dRNEA/dQ | 0], the U columns in depth-first order"),
            P.Loop("a", 0, nu, [
                P.Zero("W", P.add(P.mul(a, S), nu), nu),
                P.Loop("c", 0, nu, [lanes([
                    P.Set(P.Elem("W", P.add(P.mul(a, S), P.Lookup("pos", c)), l),
                          P.Neg(P.Elem("out", row(P.add(nu * nu, P.mul(a, nu), c))))),
                    P.Set(P.Elem("W", P.add(P.mul(a, S), 2 * nu, P.Lookup("pos", c)), l),
                          P.Neg(P.Elem("out", row(P.add(P.mul(a, nu), c)))))])]),
                lanes([P.Set(P.Elem("W", P.add(P.mul(a, S), nu, P.Lookup("pos", a)), l), P.Num(1.0))])]),
            P.Comment("L^T Y = W, row i over the places where it is not zero"),
            P.Loop("i", 0, nu, down=True, body=[P.Block([
                P.Bind("r", "W", P.mul(i, S)), P.Def("lii", P.Bin("/", P.Num(1.0), Lv(i, i))),
                *over_spans([P.Set(P.Elem("r", c), P.Scalar("lii"), "*=")]),
                P.Ancestors("j", i, "lam", [P.Block([
                    P.Bind("rj", "W", P.mul(j, S)), P.Def("lij", Lv(i, j)),
                    *over_spans([P.Set(P.Elem("rj", c), P.Bin("*", P.Scalar("lij"), P.Elem("r", c)), "-=")])])])])]),
            P.Comment("L X = Y, whole rows, as the one-state solve"),
            _l_solve_rows(Lv, nu, S),
            P.Comment("out's blocks (row-major nU x nU: dUdot/dQ, dUdot/dU, M^-1) from W's rows, lane l to state l"),
            P.Loop("a", 0, nu, [P.Loop("c", 0, nu, [lanes([
                P.Set(P.Elem("out", row(P.add(P.mul(a, nu), c))), P.Elem("W", P.add(P.mul(a, S), 2 * nu, P.Lookup("pos", c)), l)),
                P.Set(P.Elem("out", row(P.add(nu * nu, P.mul(a, nu), c))), P.Elem("W", P.add(P.mul(a, S), P.Lookup("pos", c)), l)),
                P.Set(P.Elem("out", row(P.add(2 * nu * nu, P.mul(a, nu), c))),
                      P.Elem("W", P.add(P.mul(a, S), nu, P.Lookup("pos", c)), l))])])]),
            P.Return(0)])

    def _fd_solve(self, nq: int) -> tuple:
        """``(arrays, tables, statements)`` of the solve: M = L^T L with L of M's tree sparsity (Featherstone's LTL
        factorization: ``lam[i]``, the U before U_i on its path to the root, so no fill-in) and the two sparse
        triangular solves for the three blocks of out at once, -M^-1 dRNEA/dU, M^-1 and -M^-1 dRNEA/dQ side by side
        in the rows of ``W`` (``S`` columns, a multiple of 8, so the rows' loops have one fixed length; row by
        row, L's row read once; a row divided by L_ii as its product with 1 / L_ii, within an ulp of the quotients:
        tiago_dual's solve 152 -> 124 µs).  The blocks' columns are the U in depth-first order (:meth:`u_preorder`): the
        first solve leaves row i zero but for the U on i's side of the tree (dRNEA_i moves with them only) and, in
        M^-1's block, i's subtree (L^-T's sparsity), and runs over those places only (tiago_dual: 27 % fewer
        operations; the same bits: what it skips subtracts zeros).  ``nq``: the model's Q count."""
        L, nu, lam = self.L, self.L.nu, self.u_path()
        pos, lo, hi = self.u_preorder(lam)
        S = -(-(2 * nu + nq) // 8) * 8                      # W's row: [U block | M^-1 block | Q block | padding]
        d, i, j, c, ndq, tg = (P.Var(v) for v in ("d", "i", "j", "c", "ndq", "tangent"))
        minv = P.add(P.mul(ndq, nu), nu * nu)              # where M, then M^-1, the third block, starts in out
        # L in place of M in out's third block (M^-1 replaces it once the solves are done)
        Lf = lambda r, col: P.Elem("out", P.add(minv, P.mul(r, nu), col))  # noqa: E731
        Wr = lambda r, col: P.Elem("W", P.add(P.mul(r, S), col))  # noqa: E731
        q_place = lambda col: P.Select(P.Cmp(tg, "!=", 0), P.add(2 * nu, P.Lookup("pos", col)), P.add(2 * nu, col))  # noqa: E731
        spans = [(P.Lookup("lo", i), P.Lookup("hi", i)),                                     # dRNEA/dU's rows
                 (P.add(nu, P.Lookup("pos", i)), P.add(nu, P.Lookup("hi", i))),               # M^-1's identity
                 (P.Var("qa"), P.Var("qe"))]                                                 # dRNEA/dQ's

        def over_spans(body):
            return [P.Loop("c", a, b_, body) for a, b_ in spans]
        arrays = (("W", nu * S),)
        tables = (("lam", tuple(lam)), ("pos", tuple(pos)), ("lo", tuple(lo)), ("hi", tuple(hi)))
        return arrays, tables, [
            P.Let("ndq", P.Select(P.Cmp(tg, "!=", 0), nu, nq)),
            P.Comment("M = L^T L, L lower triangular with M's sparsity (Featherstone's LTL factorization: no fill-in), "
                      "in place"),
            P.Loop("d", 0, nu, down=True, body=[
                P.Check(Lf(d, d), -3, "M is not positive definite"),
                P.Set(Lf(d, d), P.Fn("sqrt", Lf(d, d))),
                *_ltl_update(Lf, d)]),
            P.Comment("W's rows = [-dRNEA/dU | I | -dRNEA/dQ | 0], the U columns in depth-first order"),
            P.Zero("W", 0, nu * S),
            P.Loop("i", 0, nu, [
                P.Loop("c", 0, nu, [
                    P.Set(Wr(i, P.Lookup("pos", c)), P.Neg(P.Elem("out", P.add(P.mul(ndq, nu), P.mul(i, nu), c))))]),
                P.Set(Wr(i, P.add(nu, P.Lookup("pos", i))), P.Num(1.0)),
                P.Loop("c", 0, ndq, [P.Set(Wr(i, q_place(c)), P.Neg(P.Elem("out", P.add(P.mul(i, ndq), c))))])]),
            P.Comment("L^T Y = W, row i over the places where it is not zero"),
            P.Loop("i", 0, nu, down=True, body=[P.Block([
                P.Let("qa", P.Select(P.Cmp(tg, "!=", 0), P.add(2 * nu, P.Lookup("lo", i)), 2 * nu)),
                P.Let("qe", P.Select(P.Cmp(tg, "!=", 0), P.add(2 * nu, P.Lookup("hi", i)), P.add(2 * nu, ndq))),
                P.Bind("r", "W", P.mul(i, S)), P.Def("lii", P.Bin("/", P.Num(1.0), Lf(i, i))),
                *over_spans([P.Set(P.Elem("r", c), P.Scalar("lii"), "*=")]),
                P.Ancestors("j", i, "lam", [P.Block([
                    P.Bind("rj", "W", P.mul(j, S)), P.Def("lij", Lf(i, j)),
                    *over_spans([P.Set(P.Elem("rj", c), P.Bin("*", P.Scalar("lij"), P.Elem("r", c)), "-=")])])])])]),
            P.Comment("L X = Y, whole rows; two ancestors' rows a pass over row i (held in h until its pair comes), "
                      "in the order of one at a time: the same bits, row i read and written half as often"),
            _l_solve_rows(Lf, nu, S),
            P.Comment("out's blocks (row-major nU x m: dUdot/dQ, dUdot/dU, M^-1) from W's rows"),
            P.Loop("i", 0, nu, [
                P.Loop("c", 0, ndq, [P.Set(P.Elem("out", P.add(P.mul(i, ndq), c)), Wr(i, q_place(c)))]),
                P.Loop("c", 0, nu, [
                    P.Set(P.Elem("out", P.add(P.mul(ndq, nu), P.mul(i, nu), c)), Wr(i, P.Lookup("pos", c))),
                    P.Set(P.Elem("out", P.add(minv, P.mul(i, nu), c)), Wr(i, P.add(nu, P.Lookup("pos", c))))])]),
            P.Return(0)]

    def emit_derivatives(self, nq: int) -> dict:
        """``{"id": lines, "fd": lines}``: the bodies of ``sg_<m>_id_derivatives`` and ``sg_<m>_fd_derivatives``
        (q, u, p, tangent, out) in plain C (out as :mod:`symgen.codegen.derivatives`')."""
        nm, L, nb, nu = self.name, self.L, len(self.bodies), self.L.nu
        S = L.workspace.size
        K_end = L.workspace.span("b").stop          # R, l, H, V, a, b: the kinematics the tip to base step reads
        assert L.workspace["R"] == 0 and L.workspace["f"] == L.workspace["alpha"] + 6
        kinds, parent = f"sg_{nm}_kind", f"sg_{nm}_parent"
        kin = self._table("dv_velocities", self._kinematics, "kinematics base to tip: X_pb, H, V, a, b")
        rb = self._table("dv_rnea_base", self._rnea_base, "Newton-Euler base to tip: alpha, f = M alpha + b - f_ext")
        rt = self._table("dv_rnea_tip", self._rnea_tip, "Newton-Euler tip to base: T = H^T f (+ A Udot); phi f into "
                         "the parent")
        dkin = self._tangent_table("dt_velocities", self._kinematics, "the tangents of the kinematics base to tip")
        drb = self._tangent_table("dt_rnea_base", self._rnea_base, "the tangents of Newton-Euler base to tip")
        drt = self._tangent_table("dt_rnea_tip", self._rnea_tip, "the tangents of Newton-Euler tip to base")
        seed_params = (_K, P.Param("c", "int", pointer=False), P.Param("q", const=True), P.Param("u", const=True),
                       P.Param("sq"))
        self.seed_functions = []
        for kind in self.kinds:
            n_q, n_u = L.nqh[kind.rep.k], kind.rep.nu
            kq0, ku0, ci = P.Lookup(f"sg_{nm}_q0", P.Var("k")), P.Lookup(f"sg_{nm}_u0", P.Var("k")), P.Var("i")
            body = [P.Locals(arrays=(("N", n_q * n_u),)),
                    P.Invoke(f"sg_{kind.slug}_qdot_map", (P.At("q", kq0), P.At("u", ku0), None, "N"), check=False),
                    P.Loop("i", 0, n_q, [P.Set(P.Elem("sq", P.add(kq0, ci)),
                                               P.Elem("N", P.add(P.mul(ci, n_u), P.Var("c"))))])] if n_q and n_u else []
            self.seed_functions += c_function(P.Function(f"sg_{nm}_dseed_{kind.index}", seed_params, body,
                                                         doc=f"{kind.label}: sq = column c of N(Q)")) + [""]
        self.tables += c_function_table(P.FunctionTable(f"sg_{nm}_dseed", seed_params,
                                                        tuple(f"sg_{nm}_dseed_{k.index}" for k in self.kinds)))
        ub = [b.k for b in self.bodies for _ in range(b.nu)]
        qb = [b.k for b in self.bodies for _ in range(L.nqh[b.k])]
        k, d, b, c, i, ndq = (P.Var(v) for v in ("k", "d", "b", "c", "i", "ndq"))
        args = ("q", "u", "p", "ws", "dT", None)
        dargs = ("q", "u", "p", "ws", "dws", "sq", "su", "dT")

        def marked(tbl):
            return P.If(P.Cmp(P.Lookup("mark", k), "!=", 0), [P.Step(tbl, kinds, k, dargs)])

        u_dir = P.add(d, P.mul(-1, ndq))            # direction d's U, for d >= ndq
        prog = P.Program([
            P.Locals(arrays=(("ws", nb * S), ("dws", nb * S), ("sq", nq), ("su", nu), ("dT", nu)),
                     tables=(("u_body", tuple(ub)), ("q_body", tuple(qb))), ints=(("mark", nb),),
                     comment="u_body, q_body: the body of each U and Q; mark: from the direction's body b on, 1 for "
                             "the bodies it moves (b's subtree)"),
            P.Let("ndq", P.Select(P.Cmp(P.Var("tangent"), "!=", 0), nu, nq)),
            P.Comment("the values: kinematics, Newton-Euler base to tip, tip to base (each f with its children's)"),
            P.Loop("k", 0, nb, [P.Step(kin, kinds, k, args)]),
            P.Loop("k", 0, nb, [P.Step(rb, kinds, k, args)]),
            P.Loop("k", 0, nb, [P.Step(rt, kinds, k, args)], down=True),
            P.Invoke(f"sg_{self.model}_mass_matrix", ("q", "u", "p", P.At("out", P.add(P.mul(ndq, nu), nu * nu))), check=False),
            P.Zero("sq", 0, nq), P.Zero("su", 0, nu),
            P.Let("nd", P.add(ndq, nu)),
            P.Comment("direction d: Q (tangent: along N(Q) e_d; else Q_d), then U"),
            P.Loop("d", 0, P.Var("nd"), [
                P.If(P.Cmp(d, ">=", ndq), [P.Let("b", P.Lookup("u_body", u_dir)), P.Set(P.Elem("su", u_dir), P.Num(1.0))],
                     [P.If(P.Cmp(P.Var("tangent"), "!=", 0),
                           [P.Let("b", P.Lookup("u_body", d)), P.Let("c", P.add(d, P.mul(-1, P.Lookup(f"sg_{nm}_u0", b)))),
                            P.Step(f"sg_{nm}_dseed", kinds, b, (c, "q", "u", "sq"))],
                           [P.Let("b", P.Lookup("q_body", d)), P.Set(P.Elem("sq", d), P.Num(1.0))])]),
                P.Loop("k", b, nb, [P.SetInt("mark", k, P.Select(P.Cmp(k, "==", b), 1, P.Select(
                    P.Cmp(P.Lookup(parent, k), ">=", b), P.Lookup("mark", P.Lookup(parent, k)), 0)))]),
                P.Comment("the subtree's steps write every tangent they read before reading it, but b's own read its "
                          "parent's V and alpha; the ancestors' tip to base steps read their kinematics' and the f "
                          "their children add into: zero on the ancestors"),
                P.Ancestors("k", b, parent, [P.Zero("dws", P.mul(S, k), K_end, "R, l, H, V, a, b"),
                                             P.Zero("dws", P.add(P.mul(S, k), L.workspace["alpha"]), 12, "alpha, f")]),
                P.Zero("dT", 0, nu),
                P.Loop("k", b, nb, [marked(dkin)]), P.Loop("k", b, nb, [marked(drb)]),
                P.Loop("k", b, nb, [marked(drt)], down=True),
                P.Ancestors("k", b, parent, [P.Step(drt, kinds, k, dargs)]),
                P.Comment("into column d of out"),
                P.Loop("i", 0, nu, [P.Set(P.Elem("out", P.Select(
                    P.Cmp(d, "<", ndq), P.add(P.mul(i, ndq), d), P.add(P.mul(ndq, nu), P.mul(i, nu), u_dir))),
                    P.Elem("dT", i))]),
                P.If(P.Cmp(d, ">=", ndq), [P.Set(P.Elem("su", u_dir), P.Num(0.0))], [P.Zero("sq", 0, nq)])]),
            P.Return(0)])
        id_ = c_lines(prog)
        fd, self.fd_solve = self.fd_derivative_functions(nq)
        return {"id": id_, "fd": fd}

    # ---- inverse dynamics' derivatives along the tangent by the analytic recursions, per kind ----------
    def _ld(self, T, kind, field, n, slot="w"):
        """Entries of a field of the analytic recursions' workspace (:func:`idd_workspace`), all read at run time."""
        off = self._rec(kind if slot == "w" else None)[field]
        return [T.input(f"{slot}[{off + i}]") for i in range(n)]

    def _st(self, T, kind, field, values, at=0):
        off = self._rec(kind)[field] + at
        for i, v in enumerate(values):
            T.store(f"w[{off + i}]", v)

    def _idd_parent(self, T, kind, b, io):
        """(the parent's dict of :func:`~symgen.algorithms.rnea_derivatives.world_step` or None at a root, its V, its
        A: the newtonian frame's [0; -g] at a root)."""
        g0 = soa.gravity_acceleration(T, io["g"])
        if b.root:
            return None, [0.0] * 6, g0
        par = {f: self._ld(T, kind, f, n, slot="wp") for f, n in (("R0", 9), ("l0", 3), ("V", 6), ("A", 6))}
        return par, par["V"], par["A"]

    def _idd_world(self, T, kind, b):
        io = self._io(T, b)
        par, _, g0 = self._idd_parent(T, kind, b, io)
        w = rd.world_step(T, b, par, io["u"], io["tau"], io["f_ext"], g0)
        for f in ("R0", "l0", "V", "A"):
            self._st(T, kind, f, w[f])
        self._st(T, kind, "H", [x for h in w["H"] for x in h])
        self._st(T, kind, "XHd", [x for h in w["XHd"] for x in h])
        # the body's own terms of its subtree's sums: its children add theirs in (_idd_sums, tip to base)
        self._st(T, kind, "IC", _pack_rigid(w["I"]))
        self._st(T, kind, "SC", _pack_s(w["S"]))
        self._st(T, kind, "hC", w["mom"])
        self._st(T, kind, "F", w["f"])

    def _idd_columns(self, T, kind, b, field):
        x = self._ld(T, kind, field, 6 * b.nu)
        return [x[6 * c:6 * c + 6] for c in range(b.nu)]

    def _idd_sums(self, T, kind, b):
        w = {"I": _unpack_rigid(self._ld(T, kind, "IC", 10)), "S": _unpack_s(self._ld(T, kind, "SC", 9)),
             "mom": self._ld(T, kind, "hC", 6), "f": self._ld(T, kind, "F", 6)}
        rd.subtree_sums(T, b, w, [])          # the children's are in already
        if not b.root:
            self._add(T, "IC", _pack_rigid(w["IC"]))
            self._add(T, "SC", _pack_s(w["SC"]))
            self._add(T, "hC", w["hC"])
            self._add(T, "F", w["F"])
        if b.nu:
            w["H"] = self._idd_columns(T, kind, b, "H")
            rd.column_sums(T, w)
            self._st(T, kind, "hI", [x for h in w["hI"] for x in h])
            self._st(T, kind, "hB", [x for h in w["hB"] for x in h])

    def _idd_directions(self, T, kind, b):
        from .derivatives import kernel_tangent

        io, n, nu = self._io(T, b), b.nu, self.L.nu
        _, Vp, Ap = self._idd_parent(T, kind, b, io)
        w = {f: self._ld(T, kind, f, k) for f, k in (("R0", 9), ("l0", 3), ("V", 6), ("A", 6), ("hC", 6), ("F", 6))}
        w.update(Vp=Vp, Ap=Ap, u=io["u"], udot=io["tau"], IC=_unpack_rigid(self._ld(T, kind, "IC", 10)),
                 SC=_unpack_s(self._ld(T, kind, "SC", 9)),
                 **{f: self._idd_columns(T, kind, b, f) for f in ("H", "XHd", "hI", "hB")})
        st, nq = self.body_layout[kind.rep.kernels_of or kind.rep.name]["structure"], self.L.nqh[kind.rep.k]
        N = st.get("qdot_map") or [None] * (nq * n)

        def own_tangent(T, b, arr, wrt, k):
            def seed(w_, j):
                if w_ != wrt:
                    return 0.0
                if w_ == "u":
                    return 1.0 if j == k else 0.0
                x = N[j * n + k]
                return x if x is not None else T.input(f"N[{j * n + k}]", array="N")
            return [kernel_tangent(T, b, arr, "", i, st, nq, seed) for i in range(6 * n)]

        for k in range(n):
            for wrt in ("q", "u"):
                c, e, dF, dH = rd.direction(T, b, w, k, wrt, own_tangent)
                for f, v in (("qc", c), ("qe", e), ("qF", dF)) if wrt == "q" else (("ue", e), ("uF", dF)):
                    self._st(T, kind, f, v, at=6 * k)
                block = 0 if wrt == "q" else nu * nu
                for kk in range(n):
                    T.store(f"out[{block} + (uo + {kk}) * {nu} + uo + {k}]", rd.own_row(T, w, kk, c, e, dH, wrt))
            for kk in range(k, n):
                x = rd.mass_entry(T, b, w, kk, w["H"][k], k if kk == k else None)
                T.store(f"out[{2 * nu * nu} + (uo + {kk}) * {nu} + uo + {k}]", x)
                if kk != k:
                    T.store(f"out[{2 * nu * nu} + (uo + {k}) * {nu} + uo + {kk}]", x)

    def emit_rnea_derivatives(self) -> list:
        """Inverse dynamics' derivatives along the tangent by the analytic recursions
        (:mod:`symgen.algorithms.rnea_derivatives`' steps) in the per-kind form: the body of
        ``sg_<m>_id_derivatives_tangent(q, u, p, out)``.  Three steps per kind (world axes base to tip; the
        subtree's sums tip to base, each column's hI and hB; each direction of the body's hinge: c, e, dF and its
        rows at the body's own columns and M's diagonal block), then a loop writes the other rows one row of the
        three blocks at a time, in order (strided column stores cost twice as much on tiago_dual): at a direction
        of a body below the row's, the ancestors' rule ``H^T dF``; above it, the subtree's ``hI . e + hB . c``;
        M's ``hI . H``.  Its step functions and tables join :attr:`functions` and :attr:`tables`."""
        nm = self.name
        saved = self._record, self._ws_table
        self._record, self._ws_table = idd_workspace, "idd_ws"
        offsets = self._offsets(idd_workspace)
        self.functions += c_lines(P.Program([P.Comment(
            "each body's block of the analytic ID derivatives' workspace (perkind.idd_workspace), and the end")])) + \
            c_lines(P.Program([P.Locals(tables=((f"sg_{nm}_idd_ws", offsets),))])) + [""]
        try:
            steps = self._idd_tables(self._table)
        finally:
            self._record, self._ws_table = saved
        gather = []
        if self.fused:                  # the hosts' external forces after the blocks (_gather_f_ext)
            self._record = idd_workspace
            try:
                gather = self._gather_f_ext("p")
            finally:
                self._record = saved[0]
        size = offsets[-1] + (6 * len(self._hosts()) if self.fused else 0)
        body = c_lines(P.Program([P.Locals(arrays=(("ws", size),)),
                                  *self._idd_program(steps, ("q", "u", "p", "ws", "out", None), gather, None),
                                  P.Return(0)]))
        self._driver_lines += body
        return body

    def _idd_tables(self, table, **kw) -> tuple:
        """The three steps of the analytic ID derivatives, each a table of per-kind step functions (``table``:
        :meth:`_table` or :meth:`_lane_table` with ``kw``)."""
        return (table("idd_world", self._idd_world, "ID derivatives, base to tip in world axes: X_0b, H, X0 Hd, V, A; "
                      "the body's I, S, I V and f as its subtree's sums so far", **kw),
                table("idd_sums", self._idd_sums, "ID derivatives, tip to base: the subtree's sums IC, SC, hC, F into "
                      "the parent's; each column's hI = H^T IC and hB = H^T BC", **kw),
                table("idd_directions", self._idd_directions, "ID derivatives: each direction of the body's hinge "
                      "along Q and of U, its c, e and dF, its rows at the body's own columns, M's diagonal block",
                      **kw))

    def _idd_program(self, steps, args, gather, out_l) -> list:
        """The statements of the analytic ID derivatives (one state, or ``out_l``: the length of a state's row of
        out, SG_W states on lanes): the three steps body by body (``steps``: their tables; ``args``: what they
        take after k), then the rows but each body's own columns (its directions' step writes those), one row of
        dT/dQ, dT/dU and M at a time, from the workspace (:func:`idd_workspace`): each row zeroed but for the
        body's own columns, then at column (k, c) of a body k below a the ancestors' rule H^T dF, above a the
        subtree's hI . e + hB . c, M's hI . H either way (k's hI below a, a's above: the same numbers).  On lanes
        each entry is computed for the SG_W states in a vector and stored into each state's row (a quarter of
        tiago_dual's entries are not zero; building whole rows in vectors and transposing them spent half the
        function)."""
        nm, nb, nu = self.name, len(self.bodies), self.L.nu
        children = {b.k: [] for b in self.bodies}
        for b in self.bodies:
            if b.parent >= 0:
                children[b.parent].append(b.k)
        below, below_start, above, above_start = [], [0], [], [0]
        for b in self.bodies:
            stack, sub = list(children[b.k]), []
            while stack:
                k = stack.pop()
                sub.append(k)
                stack += children[k]
            below += sorted(k for k in sub if self.bodies[k].nu)
            below_start.append(len(below))
            k, anc = b.parent, []
            while k >= 0:
                anc.append(k)
                k = self.bodies[k].parent
            above += sorted(k for k in anc if self.bodies[k].nu)
            above_start.append(len(above))
        rec = idd_workspace(1)
        F0 = rec["H"]
        off = {f: rec[f] - F0 for f in _IDD_COLUMNS}          # a column field's offset is F0 + off[f] * nU(body)
        u0, nuh, blk = f"sg_{nm}_u0", f"sg_{nm}_nuh", f"sg_{nm}_{self._ws_table or 'idd_ws'}"
        n2 = nu * nu
        a, k, c, r, t, i, l = (P.Var(v) for v in "akcrtil")
        na, nk, u0a, col, row = (P.Var(v) for v in ("na", "nk", "u0a", "col", "row"))

        def dot6(x, x_off, y, y_off):
            """x . y of two 6-vectors, x[x_off ..] and y[y_off ..], summed from the first entry on"""
            s = P.Bin("*", P.Elem(x, x_off), P.Elem(y, y_off))
            for j in range(1, 6):
                s = P.Bin("+", s, P.Bin("*", P.Elem(x, P.add(x_off, j)), P.Elem(y, P.add(y_off, j))))
            return s

        def colf(f, n, j):                                   # column j of a body's field f (n: its U)
            return P.add(P.mul(off[f], n), P.mul(6, j))

        def entry(block):                                   # the entry at col of row (u0a + r) of out's block
            return P.add(row, block * n2, col) if out_l is None else \
                P.add(P.mul(P.Wide(l), out_l), row, block * n2, col)

        def zero_row(lo, hi):
            at = (lambda b_: P.add(row, b_ * n2, i)) if out_l is None else \
                (lambda b_: P.add(P.mul(P.Wide(l), out_l), row, b_ * n2, i))
            loop = P.Loop("i", lo, hi, [P.Set(P.Elem("out", at(b_)), P.Num(0.0)) for b_ in range(3)])
            return loop if out_l is None else P.Loop("l", 0, P.Var("SG_W"), [loop])

        def store(xq, xu, xm):
            if out_l is None:
                return [P.Set(P.Elem("out", entry(b_)), x) for b_, x in enumerate((xq, xu, xm))]
            return [*(P.Set(P.Elem("x", b_), v) for b_, v in enumerate((xq, xu, xm))),
                    P.Loop("l", 0, P.Var("SG_W"), [P.Set(P.Elem("out", entry(b_)), P.Elem("x", b_, l))
                                                   for b_ in range(3)])]

        def columns(which, fields, values):
            """the row's entries at the columns of the bodies ``which`` (below or above a); ``fields``: pointer ->
            the field of column (k, c) it points at"""
            return P.Loop("t", P.Lookup(f"{which}_start", a), P.Lookup(f"{which}_start", P.add(a, 1)), [
                P.Let("k", P.Lookup(which, t)), P.Let("nk", P.Lookup(nuh, k)),
                P.Point("wk", "ws", P.add(P.Lookup(blk, k), F0)),
                P.Loop("c", 0, nk, [P.Let("col", P.add(P.Lookup(u0, k), c)),
                                    *(P.Point(w, "wk", colf(f, nk, c)) for w, f in fields.items()),
                                    *store(*values)])])

        kinds = f"sg_{nm}_kind"
        world, sums, dirs = steps
        return [
            P.Locals(tables=(("below_start", below_start), ("below", below), ("above_start", above_start),
                             ("above", above)),
                     pointers=("wa", "wk", "H", "hI", "hB", "qF", "uF", "hk", "qe", "qc", "ue", "Hk"),
                     arrays=(("x", 3),) if out_l is not None else (),
                     comment="into the workspace: the row's body (wa) and its fields, the column's (wk) and "
                             "its fields"),
            *gather,
            P.Loop("k", 0, nb, [P.Step(world, kinds, k, args)]),
            P.Loop("k", 0, nb, [P.Step(sums, kinds, k, args)], down=True),
            P.Comment("and the rows at each body's own columns"),
            P.Loop("k", 0, nb, [P.Step(dirs, kinds, k, args)]),
            P.Comment("the other rows, one row of dT/dQ, dT/dU and M at a time: at column (k, c) of a body k below "
                      "a, the ancestors' rule H^T dF; above a, the subtree's hI . e + hB . c; M's hI . H either way "
                      "(k's hI below a, a's above: the same numbers); zero elsewhere"),
            P.Loop("a", 0, nb, [
                P.Let("na", P.Lookup(nuh, a)), P.Let("u0a", P.Lookup(u0, a)),
                P.Point("wa", "ws", P.add(P.Lookup(blk, a), F0)),
                P.Loop("r", 0, na, [
                    P.Let("row", P.mul(P.add(u0a, r), nu)),
                    zero_row(0, u0a), zero_row(P.add(u0a, na), nu),
                    P.Point("H", "wa", colf("H", na, r)), P.Point("hI", "wa", colf("hI", na, r)),
                    P.Point("hB", "wa", colf("hB", na, r)),
                    columns("below", {"qF": "qF", "uF": "uF", "hk": "hI"},
                            (dot6("H", 0, "qF", 0), dot6("H", 0, "uF", 0), dot6("hk", 0, "H", 0))),
                    columns("above", {"qe": "qe", "qc": "qc", "ue": "ue", "Hk": "H"},
                            (P.Bin("+", dot6("hI", 0, "qe", 0), dot6("hB", 0, "qc", 0)),
                             P.Bin("+", dot6("hI", 0, "ue", 0), dot6("hB", 0, "Hk", 0)), dot6("hI", 0, "Hk", 0)))])])]

    def emit_rnea_derivative_lanes(self, nq: int, hinges: dict, lane_kernel) -> dict:
        """The lane form of :meth:`emit_rnea_derivatives` (the looped lanes): its three steps per kind printed for
        SG_W states (:meth:`_lane_step`; the hinge kernels and their derivative kernels on lane vectors where they
        print so), their rows at each body's own columns stored straight into each state's row of out, and the
        same row loop on vectors of SG_W states.  Every lane computes the one-state function's operations in the
        same order: the same bits.  Returns the pieces of ``sg_<m>_id_derivatives_lanes`` that
        templates/helpers/lanes.c.jinja prints (``before``: the step functions and their tables, printed ahead of
        it; ``with_function``: it compiles in the one-state function's translation unit, where the per-kind
        derivatives' workspace table is); full-coordinate directions (``tangent`` 0) run the one-state forward
        mode per lane."""
        L, nu = self.L, self.L.nu
        self._lane_kernel = lane_kernel
        out_size = nu * (nq + 2 * nu)
        saved = self._record, self._ws_table, self._made, getattr(self, "lane_functions", None)
        self._record, self._ws_table, self._made, self.lane_functions = idd_workspace, "idd_ws", set(), []
        try:
            steps = self._idd_tables(self._lane_table, hinges=hinges, memo={}, rows=out_size)
            functions = self.lane_functions
        finally:
            self._record, self._ws_table, self._made, lane_functions = saved
            if lane_functions is not None:
                self.lane_functions = lane_functions
        o = self._offsets(idd_workspace)[-1]
        gather = []
        if self.fused:                  # the hosts' external forces after the blocks (_gather_f_ext)
            self._record = idd_workspace
            try:
                gather = self._gather_f_ext("p_l")
            finally:
                self._record = saved[0]
            o += 6 * len(self._hosts())
        l = P.Var("l")
        forward = P.Program([P.If(P.Cmp(P.Var("tangent"), "==", 0), [
            P.Comment("full-coordinate directions: the forward mode, one state at a time"),
            P.Loop("l", 0, P.Var("SG_W"), [P.Invoke(f"sg_{self.model}_id_derivatives", (
                P.At("q", P.mul(P.Wide(l), nq)), P.At("u", P.mul(P.Wide(l), nu)),
                P.At("p", P.mul(P.Wide(l), L.params.size)), 0, P.At("out", P.mul(P.Wide(l), out_size))),
                status_base=P.mul(l, self.status_stride))]),
            P.Return(0)])])
        rows = P.Program([P.Block([
            P.Locals(arrays=(("ws", o),), comment="the workspace (perkind.idd_workspace), SG_W states"),
            *self._idd_program(steps, ("q_l", "u_l", "p_l", "ws", "out", "st"), gather, out_size)])])
        declared = ("i", "l", "s", "c", "ndq")
        lines = c_lines(forward, declared=declared) + c_lines(rows, lanes=True, declared=declared)
        self._driver_lines += lines
        return {"ins": [("q", nq, nq), ("u", nu, nu), ("p", L.params.size, L.params.size)], "lines": lines,
                "out_size": out_size, "unused": [], "before": functions, "with_function": True,
                "sincos": any("sg_sincos_split_lanes(" in x for x in functions)}

    def _lane_derivatives_program(self, nq, width, o, values, seeded_steps, carried_steps, ancestor_step, u_order,
                                  q_order) -> P.Program:
        """The driver of :meth:`emit_lane_derivatives` for ``width`` directions at once, as a looped program: the
        values once (``values``: the kinematics, Newton-Euler base to tip and tip to base tables), then per block of
        ``width`` directions (neighbours in the depth-first orders ``u_order`` and ``q_order``) the seeds, the
        block's subtrees (``mark``), the bodies it seeds (``seeded``: their hinges' tangents; the others of the
        subtrees run ``carried_steps``) and their ancestors outside them (``anc``: forces passed through,
        ``ancestor_step``), each direction's column of out (``width`` adjacent columns of one block at once), the
        seeds off.  ``o``: the workspace's size (:func:`rnea_workspace`)."""
        nm, L, nb, nu = self.name, self.L, len(self.bodies), self.L.nu
        kinds, parent, u0, q0 = (f"sg_{nm}_{t}" for t in ("kind", "parent", "u0", "q0"))
        k, i, d, b, l, s0, nl, ndq = (P.Var(v) for v in ("k", "i", "d", "b", "l", "s0", "nl", "ndq"))
        kin, rb, rt = values
        (dkin, drb, drt), (ckin, crb, crt) = seeded_steps, carried_steps
        ub = tuple(b_.k for b_ in self.bodies for _ in range(b_.nu))
        qb = tuple(b_.k for b_ in self.bodies for _ in range(L.nqh[b_.k]))
        args, dargs = ("q", "u", "p", "ws", "tv", None), ("q", "u", "p", "ws", "dws", "sq", "su", "dT")
        on = lambda tbl, x: P.Cmp(P.Lookup(tbl, x), "!=", 0)                                   # noqa: E731
        minus = lambda a, x: P.add(a, P.mul(-1, x))                                            # noqa: E731
        par = P.Lookup(parent, k)
        def own_q(*body):               # over body b's own Q
            return P.Loop("i", P.Lookup(q0, b), P.add(P.Lookup(q0, b), P.Lookup("q_count", b)), list(body))

        seed_q = own_q(P.Set(P.Elem("sq", i, lane=l), P.Elem("sqs", i)), P.Set(P.Elem("sqs", i), P.Num(0.0)))
        unseed_q = own_q(P.Set(P.Elem("sq", i, lane=l), P.Num(0.0)))
        dws_at = lambda fld: P.Elem("dws", P.add(P.Lookup(f"sg_{nm}_dl_ws", k), rnea_workspace(0)[fld], i))  # noqa: E731

        def pick(flag, a, b_):
            return P.If(on(flag, k), [P.Step(a, kinds, k, dargs)], [P.Step(b_, kinds, k, dargs)])

        return P.Program([
            P.Locals(arrays=(("ws", o), ("tv", nu), ("sqs", nq)), vectors=(("dws", o), ("sq", nq), ("su", nu), ("dT", nu)),
                     ints=(("mark", nb), ("seeded", nb), ("anc", nb), ("dl", width), ("ol", width), ("ml", width)),
                     tables=(("u_body", ub), ("q_body", qb), ("q_count", tuple(L.nqh[b_.k] for b_ in self.bodies)),
                             ("u_order", tuple(u_order)), ("q_order", tuple(q_order))),
                     comment="mark: the block's subtrees; seeded: the bodies a direction of the block seeds; anc: their "
                             "ancestors outside them; u_order, q_order: the U and the Q in the depth-first order of their "
                             "bodies (a block of W directions moves W bodies' subtrees, and depth-first neighbours share "
                             "theirs); dl, ol, ml: each lane's direction and its column of out, ol + row * ml"),
            P.Let("ndq", P.Select(P.Cmp(P.Var("tangent"), "!=", 0), nu, nq)),
            P.Comment("the values: kinematics, Newton-Euler base to tip, tip to base (each f with its children's)"),
            P.Loop("k", 0, nb, [P.Step(kin, kinds, k, args)]), P.Loop("k", 0, nb, [P.Step(rb, kinds, k, args)]),
            P.Loop("k", 0, nb, [P.Step(rt, kinds, k, args)], down=True),
            P.Invoke(f"sg_{self.model}_mass_matrix", ("q", "u", "p", P.At("out", P.add(P.mul(ndq, nu), nu * nu))), check=False),
            P.Loop("i", 0, nq, [P.Set(P.Elem("sqs", i), P.Num(0.0)), P.Set(P.Elem("sq", i), P.Zeros())]),
            P.Loop("i", 0, nu, [P.Set(P.Elem("su", i), P.Zeros())]),
            P.Let("nd", P.add(ndq, nu)),
            P.Comment(f"the directions in places s0 .. s0 + {width - 1} of that order"),
            P.Loop("s0", 0, P.Var("nd"), step=width, body=[
                P.Let("nl", P.Select(P.Cmp(minus(P.Var("nd"), s0), "<", width), minus(P.Var("nd"), s0), width)),
                P.Loop("k", 0, nb, [P.SetInt("mark", k, 0), P.SetInt("seeded", k, 0), P.SetInt("anc", k, 0)]),
                P.Comment("the seeds: Q (tangent: N(Q) e_d), then U"),
                P.Loop("l", 0, nl, [
                    P.Let("d", P.Select(P.Cmp(P.add(s0, l), ">=", ndq), P.add(ndq, P.Lookup("u_order", minus(P.add(s0, l), ndq))),
                                        P.Select(P.Cmp(P.Var("tangent"), "!=", 0), P.Lookup("u_order", P.add(s0, l)),
                                                 P.Lookup("q_order", P.add(s0, l))))),
                    P.SetInt("dl", l, d),
                    P.SetInt("ol", l, P.Select(P.Cmp(d, "<", ndq), d, P.add(P.mul(ndq, nu), minus(d, ndq)))),
                    P.SetInt("ml", l, P.Select(P.Cmp(d, "<", ndq), ndq, nu)),
                    P.If(P.Cmp(d, ">=", ndq), [P.Let("b", P.Lookup("u_body", minus(d, ndq))),
                                               P.Set(P.Elem("su", minus(d, ndq), lane=l), P.Num(1.0))],
                         [P.If(P.Cmp(P.Var("tangent"), "!=", 0),
                               [P.Let("b", P.Lookup("u_body", d)),
                                P.Step(f"sg_{nm}_dseed", kinds, b, (minus(d, P.Lookup(u0, b)), "q", "u", "sqs")),
                                P.Comment("the seed moves b's own Q only"), seed_q],
                               [P.Let("b", P.Lookup("q_body", d)), P.Set(P.Elem("sq", d, lane=l), P.Num(1.0))])]),
                    P.SetInt("mark", b, 1), P.SetInt("seeded", b, 1)]),
                P.Loop("k", 0, nb, [P.If(P.And((P.Cmp(par, ">=", 0), on("mark", par))), [P.SetInt("mark", k, 1)])]),
                P.Loop("k", 0, nb, down=True, body=[P.If(
                    P.And((P.Or((on("mark", k), on("anc", k))), P.Cmp(par, ">=", 0), P.Cmp(P.Lookup("mark", par), "==", 0))),
                    [P.SetInt("anc", par, 1)])]),
                P.Comment("the ancestors' tangents of what the moved bodies read (V, alpha: zero) and of f (zero, but "
                          "for what their children add); their steps read no other"),
                P.Loop("k", 0, nb, [P.If(on("anc", k), [P.Loop("i", 0, 6, [
                    P.Set(dws_at(f), P.Zeros()) for f in ("V", "alpha", "f")])])]),
                P.Loop("i", 0, nu, [P.Set(P.Elem("dT", i), P.Zeros())]),
                P.Comment("the seeded bodies' steps with their hinges' tangents, the carried bodies' without"),
                P.Loop("k", 0, nb, [P.If(on("mark", k), [pick("seeded", dkin, ckin)])]),
                P.Loop("k", 0, nb, [P.If(on("mark", k), [pick("seeded", drb, crb)])]),
                P.Loop("k", 0, nb, down=True, body=[P.If(on("mark", k), [pick("seeded", drt, crt)],
                                                         [P.If(on("anc", k), [P.Step(ancestor_step, kinds, k, dargs)])])]),
                P.Comment(f"{width} adjacent columns of one block of out: each row's at once"),
                P.Let("whole", P.Select(P.Cmp(nl, "==", width), 1, 0)),
                P.Loop("l", 1, nl, [P.If(P.Or((P.Cmp(P.Lookup("ol", l), "!=", P.add(P.Lookup("ol", 0), l)),
                                               P.Cmp(P.Lookup("ml", l), "!=", P.Lookup("ml", 0)))), [P.Let("whole", 0)])]),
                P.If(P.Cmp(P.Var("whole"), "!=", 0),
                     [P.Loop("i", 0, nu, [P.Spill("out", P.add(P.Lookup("ol", 0), P.mul(i, P.Lookup("ml", 0))), P.Elem("dT", i))])],
                     [P.Loop("i", 0, nu, [P.Loop("l", 0, nl, [P.Set(P.Elem("out", P.add(P.Lookup("ol", l), P.mul(i, P.Lookup("ml", l)))),
                                                                    P.Elem("dT", i, lane=l))])])]),
                P.Comment("the seeds off"),
                P.Loop("l", 0, nl, [
                    P.Let("d", P.Lookup("dl", l)),
                    P.If(P.Cmp(d, ">=", ndq), [P.Set(P.Elem("su", minus(d, ndq), lane=l), P.Num(0.0))],
                         [P.If(P.Cmp(P.Var("tangent"), "!=", 0), [P.Let("b", P.Lookup("u_body", d)), unseed_q],
                               [P.Set(P.Elem("sq", d, lane=l), P.Num(0.0))])])])]),
            P.Return(0)])

    def emit_lane_derivatives(self, nq: int) -> tuple:
        """The derivatives of inverse dynamics with the directions on lanes: ``{"values": lines, "widths": {W:
        lines}}`` (templates/model.c.jinja compiles them where the compiler has vector types, each width where the
        CPU runs it, and dispatches between them).  ``values``: the steps of the values; ``widths``: for each
        width of the derivatives' vectors (``sg_dv8`` on AVX-512, ``sg_dv2``: helpers/derivatives.c) the tangent
        steps traced on dual numbers printed for that many directions at once (:meth:`_function` with ``lane``:
        the values doubles, every tangent a vector, one direction per lane) and a driver
        ``sg_<m>_id_derivatives_dl<W>`` that runs a block of W directions over the union of their bodies'
        subtrees (base to tip) and that and their ancestors (tip to base); the values once, by steps traced on the
        same compact workspace (:func:`rnea_workspace`).  A block's directions are neighbours in the depth-first
        order of their bodies, and its subtrees' bodies that none of its directions seeds run the carried steps
        (:meth:`_dual`, :meth:`_kinematics_carried`: no hinge tangents, no hinge kernel).  Each lane's numbers are the one-direction driver's (up to
        the sign of a zero: a lane adds the zero tangents of the block's other subtrees)."""
        nm, L, nu = self.name, self.L, self.L.nu
        saved = self._made, self.functions, self.tables
        self._record, self._ws_table = rnea_workspace, "dl_ws"
        offsets = self._offsets(rnea_workspace)
        o = offsets[-1]
        lines = [*c_lines(P.Program([P.Comment("each body's block of the directions-on-lanes workspace "
                                               "(perkind.rnea_workspace), and the end")])),
                 *c_lines(P.Program([P.Locals(tables=((f"sg_{nm}_dl_ws", offsets),))]))]
        widths = {}
        try:
            self._made, self.functions, self.tables = set(), [], []
            kin = self._table("dvl_velocities", self._kinematics, "kinematics base to tip: X_pb, H, V, a, b")
            rb = self._table("dvl_rnea_base", self._rnea_base, "Newton-Euler base to tip: alpha, f = M alpha + b - f_ext")
            rt = self._table("dvl_rnea_tip", self._rnea_tip, "Newton-Euler tip to base: T = H^T f (+ A Udot); phi f "
                             "into the parent")
            lines += self.functions + self.tables
            children = {b.k: [] for b in self.bodies}
            for b in self.bodies:
                if b.parent >= 0:
                    children[b.parent].append(b.k)
            depth_first, stack = [], [b.k for b in reversed(self.bodies) if b.parent < 0]
            while stack:
                k = stack.pop()
                depth_first.append(self.bodies[k])
                stack += reversed(children[k])
            u_order = [b.u0 + c for b in depth_first for c in range(b.nu)]
            q_order = [L.q0[b.k] + c for b in depth_first for c in range(L.nqh[b.k])]
            assert sorted(u_order) == list(range(nu)) and sorted(q_order) == list(range(nq))
            for vec, width, target in (("sg_dv8", 8, "avx512f"), ("sg_dv2", 2, None)):
                self._made, self.functions, self.tables = set(), [], []
                lane = (vec, width, target)
                sig = _dl_signature()
                tabs = []
                for step, trace, doc in (("dt_velocities", self._kinematics, "the tangents of the kinematics base to tip"),
                                         ("dt_rnea_base", self._rnea_base, "the tangents of Newton-Euler base to tip"),
                                         ("dt_rnea_tip", self._rnea_tip, "the tangents of Newton-Euler tip to base")):
                    tabs.append(self._table(f"{step}_dl{width}", trace, doc, signature=sig, params=_TANGENT_PARAMS,
                                            dual=self._dual, lane=lane))
                # the carried bodies' steps: moved through their parents only (their hinges' tangents fold to zero)
                carried = partial(self._dual, carried=True)
                ctabs = [self._table(f"{step}_carried_dl{width}", trace, doc + " at a body the directions move only "
                                     "through its parent", signature=sig, params=_TANGENT_PARAMS, dual=carried, lane=lane)
                         for step, trace, doc in (
                             ("dt_velocities", self._kinematics_carried, "the tangents of the kinematics base to tip"),
                             ("dt_rnea_base", self._rnea_base, "the tangents of Newton-Euler base to tip"),
                             ("dt_rnea_tip", self._rnea_tip, "the tangents of Newton-Euler tip to base"))]
                ckin, crb, crt = ctabs
                # the ancestors' tip to base: forces passed through (their kinematics' tangents fold to zero)
                drta = self._table(f"dt_rnea_tip_anc_dl{width}", self._rnea_tip, "the tangents of Newton-Euler tip to "
                                   "base at an ancestor of the moved bodies: f passed through", signature=sig,
                                   params=_TANGENT_PARAMS, dual=partial(self._dual, ancestor=True), lane=lane)
                dkin, drb, drt = tabs
                prog = self._lane_derivatives_program(nq, width, o, (kin, rb, rt), (dkin, drb, drt),
                                                      (ckin, crb, crt), drta, u_order, q_order)
                driver = c_function(P.Function(
                    f"sg_{nm}_id_derivatives_dl{width}", DERIVATIVE_PARAMS,
                    prog.body, doc=f"the derivatives of inverse dynamics, {width} directions at once (a lane each)",
                    returns="int", target=target), vector=vec)
                widths[width] = self.functions + self.tables + driver
        finally:
            (self._made, self.functions, self.tables), self._record, self._ws_table = saved, None, None
        return {"values": lines, "widths": widths}
