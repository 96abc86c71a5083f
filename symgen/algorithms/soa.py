"""Model dynamics: the SOA recursions, written once as per-body steps, traced into C in two forms.

Each algorithm (ATBI forward dynamics, Newton-Euler inverse dynamics, the composite-body mass matrix) is a
few per-body steps that read like the book (Jain, *Robot and Multibody Dynamics*; Featherstone, *Rigid Body
Dynamics Algorithms*), run on a :class:`~symgen.ir.tape.Tape`:

* **straight-line** (:func:`atbi`, :func:`rnea`, :func:`crba` below): the steps run over every body of the
  model, on the model's constants and on symbolic runtime values (Q, U, the parameters, the non-constant
  entries of each hinge kernel's output).  Every per-body constant and structural zero folds: the inertias,
  the onode/pnode transforms, a PIN's one nonzero column, identity rotations.  One branch-free C function
  per algorithm (the only branches return the index of a body whose D is not positive definite).
* **per-kind form** (:mod:`symgen.codegen.perkind`): the same steps traced once per *body kind* (hinge spec, root or
  not, ...) with the body's constants as runtime inputs, and a C loop over the model's flat topology arrays
  calling them.  For models too large for one straight-line function, and for ``atbi_matrices``.

Conventions (as the rest of symgen): spatial vectors ``[angular; linear]`` in body axes, ``X_pb = (R, l)``
the pose of body b in its parent, ``phi^T(p, b)`` moves velocities down (parent -> body), ``phi(p, b)``
moves forces up.  ``H`` is the hinge map in the body frame (6 x nU, kept as a list of columns):
``H = phi^T(pnode, b) H*_p``, Jain's and Karana's name (Featherstone's ``S``).

Names follow SOA: ``P`` articulated inertia, ``D = H^T P H``, ``G = P H D^-1``, ``tauper = I - G H^T``
(applied, never formed), ``z`` residual force, ``eps = T - H^T z``, ``nu = D^-1 eps``, ``alpha+`` and
``alpha`` spatial accelerations, ``a`` Coriolis and ``b`` gyroscopic terms.  The optimizations are named
rewrites beside the equations: :func:`known_axis_rows` (rows of G, P+, z+ fixed by ``H^T G = 1`` where a
column of H is a unit vector) and :func:`rotate_block` (a rotation about a body axis turns an inertia block
by the double angle).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir.tape import Tape, Val

#: the forms a build can ask for (``symgen.build(..., form=)``): "auto" takes, per entry point, the form
#: symgen.codegen.schedule's cost model chooses; "per_kind" takes the per-kind (looped) form for all
FORMS = ("auto", "per_kind")

# Size limits of the printing (the choice between the forms is symgen.codegen.schedule's).  Their effect on build
# time and speed is measured by benchmarks/scaling.py (build time against model size) and
# benchmarks/vs_pinocchio.py (speed).
#: from this many lines a straight-line function is compiled as a translation unit of its own, in parallel
#: with the rest of the model (symgen.build; a C program still compiles the model's one .c file)
SPLIT_MIN_LINES = 800
#: ... and a lane function (the batches' form, symgen.codegen.emit.emit_lanes) from this many lines, compiled for its
#: lane width's ISA (symgen.codegen.lanes)
LANE_SPLIT_MIN_LINES = 500
#: above this many lines the straight-line poses kernel gives way to the per-body helper calls, and so do the
#: one-frame Jacobian's per-body steps (together)
POSES_STRAIGHT_LIMIT = 4000
JAC_STEPS_LIMIT = 6000

#: a straight-line one-state FD or ID longer than this many lines is printed as segments of about this length,
#: functions called one after the other that pass the values crossing between them through an array
#: (:meth:`symgen.ir.tape.Tape.segments`, symgen.codegen.emit.segmented_function): gcc's register allocation
#: grows faster than the function, so the segments compile in less time than the whole (Talos's FD, 7,140 lines
#: in 4 segments: see the CHANGELOG)
SEGMENT_LINES = 2000
#: the same for a lane function, whose carried values are vectors of SG_W doubles: its segments are longer, so that
#: what they pass on stays in the L1 cache (Talos's lane FD in 4 segments carried 768 vectors, 49 kB, and ran 10%
#: slower; in 2, 428)
LANE_SEGMENT_LINES = 4000


class NotPositiveDefinite(Exception):
    """D of a body is a constant that is not positive definite (the model can never be solved)."""

    def __init__(self, k):
        super().__init__(k)
        self.k = k


@dataclass
class FlexInfo:
    """A flexible body's modes as the tracer sees them (constants): node positions ``s`` (3 each, body frame,
    undeformed), masses ``m``, shapes ``Phi`` (per node 3 rows of n_modes: the node's translation per unit of
    each mode), stiffness ``k`` and damping ``c`` per mode, where the modal Q and U start, and ``Linv``: the inverse
    of the Cholesky factor L of the nodes' modal mass matrix M_ee = L L^T (constant; lower triangular)."""

    s: list
    m: list
    Phi: list
    k: list
    c: list
    q0: int
    u0: int
    Linv: list

    @property
    def n(self) -> int:
        return len(self.k)


@dataclass
class BodyInfo:
    """What the tracer knows of one body: constants (floats, or runtime inputs in the per-kind form), and where
    its runtime values come from."""

    k: int                 # index (parent before child)
    name: str
    parent: int            # -1: newtonian
    slug: str              # hinge spec (C prefix sg_<slug>_)
    q0: int
    u0: int
    nu: int
    on_R: list             # onode pose on the parent: R (9, row-major), l (3)
    on_l: list
    pinv_R: list           # body pose in the pnode, inverted: R (9), l (3)
    pinv_l: list
    M: list                # 6x6 spatial inertia about the body origin (body axes)
    X_const: list          # 16 entries of the hinge transform: float if constant, None if runtime
    H_const: list          # 6 x nU coord map (row-major), same
    Hd_const: list         # 6 x nU coord map derivative, same
    X_alias: list = None   # per entry: [j, sign] when it equals sign * entry j (kernels.kernel_structure), else None
    H_alias: list = None
    Hd_alias: list = None
    armature: list = None  # rotor inertia per hinge U (added to D, to M's diagonal, and as A Udot to T)
    tag: str = None        # suffix of this body's names in the C (default: its index; "" in the per-kind form)
    status: str = None     # C expression returned when D is not positive definite (default: k + 1)
    flex: FlexInfo = None  # a flexible body's modes (None: rigid)
    kernels_of: str = None  # the body whose hinge kernels (and their structure) this one's steps call: a PIN folded
    #                         onto another PIN's axis (symgen.codegen.perkind.fold_pin_axes); None: its own

    def __post_init__(self):
        if self.tag is None:
            self.tag = str(self.k)
        if self.status is None:
            self.status = str(self.k + 1)

    @property
    def root(self) -> bool:
        return self.parent < 0

    def arm(self, c):
        """Armature of hinge U c (a float, or a runtime value in the per-kind form)."""
        return self.armature[c] if self.armature else 0.0


def rigid_inertia(m, h, J) -> list:
    """The 6x6 spatial inertia [[J, h~], [-h~, m 1]] of a rigid body (h = m c) from (m, h, J) given as
    floats or traced values; the structural zeros stay 0.0."""
    hx = [[0.0, -h[2], h[1]], [h[2], 0.0, -h[0]], [-h[1], h[0], 0.0]]
    return ([[J[i][j] for j in range(3)] + hx[i] for i in range(3)] +
            [[-hx[i][j] if hx[i][j] != 0.0 else 0.0 for j in range(3)] + [m if j == i else 0.0 for j in range(3)]
             for i in range(3)])


class ArrayIO:
    """Where a straight-line function reads its inputs and writes its output: ``u[i]``, ``p`` laid out as
    :attr:`symgen.abi.layout.ModelLayout.params` (g, then T or Udot, then f_ext), ``out[i]``."""

    def __init__(self, layout):
        self.L = layout

    def u(self, T):
        return [T.input(f"u[{i}]") for i in range(self.L.nu)]

    def tau(self, T):
        return [T.input(f"p[{self.L.params['tau'] + i}]") for i in range(self.L.nu)]

    def gravity(self, T):
        return [T.input(f"p[{self.L.params['gravity'] + i}]") for i in range(3)]

    def f_ext(self, T, k):
        return [T.input(f"p[{self.L.f_ext(k) + i}]") for i in range(6)]

    @staticmethod
    def out(i):
        return f"out[{i}]"


# ---- spatial algebra on traced scalars --------------------------------------------------------------

def _dot(T, xs, ys, init=0.0):
    return T.dot(list(zip(xs, ys)), init)


def _mat3(T, A, B):
    """A B for row-major 3x3 lists."""
    return [_dot(T, A[3 * i:3 * i + 3], B[j::3]) for i in range(3) for j in range(3)]


def phiT(T, R, l, V):
    """phi^T(A, B) V for X_AB = (R, l): w_B = R^T w_A, v_B = R^T (v_A + w_A x l)."""
    v = [T.dot([(1.0, V[3]), (V[1], l[2]), (-1.0, T.mul(V[2], l[1]))]),
         T.dot([(1.0, V[4]), (V[2], l[0]), (-1.0, T.mul(V[0], l[2]))]),
         T.dot([(1.0, V[5]), (V[0], l[1]), (-1.0, T.mul(V[1], l[0]))])]
    return ([_dot(T, R[i::3], V[:3]) for i in range(3)] + [_dot(T, R[i::3], v) for i in range(3)])


def phi(T, R, l, f):
    """phi(A, B) f for X_AB = (R, l): F_A = R F, N_A = R N + l x F_A."""
    N = [_dot(T, R[3 * i:3 * i + 3], f[:3]) for i in range(3)]
    F = [_dot(T, R[3 * i:3 * i + 3], f[3:]) for i in range(3)]
    return [T.dot([(1.0, N[0]), (l[1], F[2]), (-1.0, T.mul(l[2], F[1]))]),
            T.dot([(1.0, N[1]), (l[2], F[0]), (-1.0, T.mul(l[0], F[2]))]),
            T.dot([(1.0, N[2]), (l[0], F[1]), (-1.0, T.mul(l[1], F[0]))])] + F


def crm(T, V, x):
    """crm(V) x = [w x x_w; v x x_w + w x x_v]."""
    return [T.dot([(V[1], x[2]), (-1.0, T.mul(V[2], x[1]))]),
            T.dot([(V[2], x[0]), (-1.0, T.mul(V[0], x[2]))]),
            T.dot([(V[0], x[1]), (-1.0, T.mul(V[1], x[0]))]),
            T.dot([(V[4], x[2]), (-1.0, T.mul(V[5], x[1])), (V[1], x[5]), (-1.0, T.mul(V[2], x[4]))]),
            T.dot([(V[5], x[0]), (-1.0, T.mul(V[3], x[2])), (V[2], x[3]), (-1.0, T.mul(V[0], x[5]))]),
            T.dot([(V[3], x[1]), (-1.0, T.mul(V[4], x[0])), (V[0], x[4]), (-1.0, T.mul(V[1], x[3]))])]


def crf(T, V, f):
    """crf(V) f = [w x f_N + v x f_F; w x f_F]."""
    return [T.dot([(V[1], f[2]), (-1.0, T.mul(V[2], f[1])), (V[4], f[5]), (-1.0, T.mul(V[5], f[4]))]),
            T.dot([(V[2], f[0]), (-1.0, T.mul(V[0], f[2])), (V[5], f[3]), (-1.0, T.mul(V[3], f[5]))]),
            T.dot([(V[0], f[1]), (-1.0, T.mul(V[1], f[0])), (V[3], f[4]), (-1.0, T.mul(V[4], f[3]))]),
            T.dot([(V[1], f[5]), (-1.0, T.mul(V[2], f[4]))]),
            T.dot([(V[2], f[3]), (-1.0, T.mul(V[0], f[5]))]),
            T.dot([(V[0], f[4]), (-1.0, T.mul(V[1], f[3]))])]


def matvec(T, A, x):
    return [_dot(T, row, x) for row in A]


def axis_rotation(T, R):
    """(k, c, s) when R (row-major 3x3) turns about body axis k: row and column k are e_k and the block on the
    other two axes (a, b) = (k + 1, k + 2) mod 3 is [[c, -s], [s, c]] in traced values (a PIN about x, y
    or z whose onode and pnode do not rotate).  None otherwise."""
    for k in range(3):
        a, b = (k + 1) % 3, (k + 2) % 3
        fixed = [R[3 * k + j] for j in (a, b)] + [R[3 * j + k] for j in (a, b)]
        if not (isinstance(R[4 * k], float) and R[4 * k] == 1.0 and all(isinstance(x, float) and x == 0.0 for x in fixed)):
            continue
        c, s = R[4 * a], R[3 * b + a]
        if isinstance(c, Val) and isinstance(s, Val) and R[4 * b] is c and R[3 * a + b] is T.neg(s):
            return k, c, s
    return None


def rotate_block(T, rot, A, symmetric=False):
    """R A R^T for R = axis_rotation (k, c, s) and a 3x3 block A (row-major): the axis row and column turn
    like vectors; on the (a, b) plane the symmetric part turns by the double angle (cos 2q = c^2 - s^2,
    sin 2q = 2 c s) and the antisymmetric part does not turn.  About half the products of R A R^T."""
    k, c, s = rot
    a, b = (k + 1) % 3, (k + 2) % 3
    C2h = T.dot([(0.5, T.mul(c, c)), (-0.5, T.mul(s, s))])          # cos(2q) / 2
    S2h = T.mul(c, s)                                               # sin(2q) / 2
    at = lambda i, j: A[3 * i + j]  # noqa: E731
    out = [None] * 9
    out[4 * k] = at(k, k)
    out[3 * a + k] = T.dot([(c, at(a, k)), (-1.0, T.mul(s, at(b, k)))])
    out[3 * b + k] = T.dot([(s, at(a, k)), (c, at(b, k))])
    if symmetric:
        out[3 * k + a], out[3 * k + b] = out[3 * a + k], out[3 * b + k]
    else:
        out[3 * k + a] = T.dot([(c, at(k, a)), (-1.0, T.mul(s, at(k, b)))])
        out[3 * k + b] = T.dot([(s, at(k, a)), (c, at(k, b))])
    diff = T.dot([(1.0, at(a, a)), (-1.0, at(b, b))])
    ssum = T.dot([(1.0, at(a, b)), (1.0, at(b, a))])
    mean = T.dot([(0.5, at(a, a)), (0.5, at(b, b))])
    e = T.dot([(diff, C2h), (-1.0, T.mul(ssum, S2h))])
    g = T.dot([(diff, S2h), (ssum, C2h)])
    out[4 * a] = T.add(mean, e)
    out[4 * b] = T.dot([(1.0, mean), (-1.0, e)])
    if symmetric:
        out[3 * a + b] = out[3 * b + a] = g
    else:
        w = T.dot([(0.5, at(a, b)), (-0.5, at(b, a))])
        out[3 * a + b], out[3 * b + a] = T.add(g, w), T.dot([(1.0, g), (-1.0, w)])
    return out


def _rotate(T, R, A, symmetric=False):
    """R A R^T (row-major 3x3 lists), by rotate_block when R turns about a body axis."""
    rot = axis_rotation(T, R)
    if rot is not None:
        return rotate_block(T, rot, A, symmetric)
    Rt = [R[3 * j + i] for i in range(3) for j in range(3)]
    return _mat3(T, _mat3(T, R, A), Rt)


def phi_sym(T, R, l, P):
    """phi P phi^T for symmetric P = [[A, B], [B^T, C]] (3x3 blocks): rotate each block (R A R^T, ...),
    then shift by l~: [[Ar + l~ Br^T - Br l~ - l~ Cr l~, Br + l~ Cr], [., Cr]].  Symmetric result, each
    entry computed once."""
    blk = lambda r, c: [P[r + i][c + j] for i in range(3) for j in range(3)]  # noqa: E731
    Ar = _rotate(T, R, blk(0, 0), symmetric=True)
    Br = _rotate(T, R, blk(0, 3))
    Cr = _rotate(T, R, blk(3, 3), symmetric=True)
    L = [0.0, -l[2], l[1], l[2], 0.0, -l[0], -l[1], l[0], 0.0]
    LC = _mat3(T, L, Cr)                   # l~ Cr
    BL = _mat3(T, Br, L)                   # Br l~
    out = [[None] * 6 for _ in range(6)]
    for i in range(3):
        for j in range(3):
            if j >= i:
                lcl = _dot(T, LC[3 * i:3 * i + 3], L[j::3])                     # l~ Cr l~
                lbt = _dot(T, L[3 * i:3 * i + 3], Br[3 * j:3 * j + 3])           # l~ Br^T
                top = T.dot([(1.0, Ar[3 * i + j]), (1.0, lbt), (-1.0, BL[3 * i + j]), (-1.0, lcl)])
                out[i][j] = out[j][i] = top
                out[3 + i][3 + j] = out[3 + j][3 + i] = Cr[3 * i + j]
            out[i][3 + j] = out[3 + j][i] = T.add(Br[3 * i + j], LC[3 * i + j])
    return out


# ---- per-body kinematics ------------------------------------------------------------------------------

def _hinge_values(T, b: BodyInfo):
    """The hinge kernel outputs as the tracer sees them: constants, array entries (``X<tag>``, ``H<tag>``,
    ``Hd<tag>``), and entries that are another entry (or its negative) as that same value."""
    def pick(consts, alias, arr):
        vals = []
        for i, c in enumerate(consts):
            a = alias[i] if alias else None
            if c is not None:
                vals.append(c)
            elif a is not None:
                vals.append(vals[a[0]] if a[1] > 0 else T.neg(vals[a[0]]))
            else:
                vals.append(T.input(f"{arr}[{i}]", array=arr))
        return vals
    t = b.tag
    return (pick(b.X_const, b.X_alias, f"X{t}"), pick(b.H_const, b.H_alias, f"H{t}"),
            pick(b.Hd_const, b.Hd_alias, f"Hd{t}"))


def joint(T, b: BodyInfo):
    """X_pb = onode X_op(Q) pnode^-1 as (R, l); H = phi^T(pnode, b) H*_p; Hdot likewise."""
    X, Hp, Hpd = _hinge_values(T, b)
    Rop = [X[4 * i + j] for i in range(3) for j in range(3)]
    t = [T.dot(list(zip(Rop[3 * i:3 * i + 3], b.pinv_l)) + [(1.0, X[4 * i + 3])]) for i in range(3)]
    l = [T.dot(list(zip(b.on_R[3 * i:3 * i + 3], t)), b.on_l[i]) for i in range(3)]
    R = _mat3(T, _mat3(T, b.on_R, Rop), b.pinv_R)
    cols = lambda A: [phiT(T, b.pinv_R, b.pinv_l, [A[i * b.nu + c] for i in range(6)])  # noqa: E731
                      for c in range(b.nu)]
    return R, l, cols(Hp), cols(Hpd)


def _colsum(T, cols, x, init=None):
    """sum_c cols[c] x[c] (+ init), a 6-vector."""
    init = init or [0.0] * 6
    return [T.dot([(col[i], xc) for col, xc in zip(cols, x)] + [(1.0, init[i])]) for i in range(6)]


def kinematics_step(T, b: BodyInfo, V_parent, u, joint_values=None):
    """Base to tip at body b: X_pb and H (:func:`joint`); V = phi^T V_parent + H u;
    a = crm(V) H u + Hdot u (Coriolis);  b = crf(V) M V (gyroscopic).  u: the hinge's U.  ``joint_values``:
    (R, l, H, Hdot) when the caller has them already (the per-kind derivatives read X_pb and H from a workspace)."""
    R, l, H, Hd = joint(T, b) if joint_values is None else joint_values
    Hu = _colsum(T, H, u)
    V = [T.name(x, f"V{b.tag}_{i}") for i, x in enumerate(_colsum(T, H, u, phiT(T, R, l, V_parent)))]
    a = _colsum(T, Hd, u, crm(T, V, Hu))
    K = {"R": R, "l": l, "H": H, "V": V, "a": a, "b": crf(T, V, matvec(T, b.M, V))}
    if b.flex:
        K["modal"] = modal_bias(T, b, modal_inertia(T, b), V)
    return K


def velocities(T, bodies, u):
    """:func:`kinematics_step` over the bodies, base to tip (a root's parent, the newtonian, is at rest)."""
    kin = []
    for b in bodies:
        Vp = kin[b.parent]["V"] if not b.root else [0.0] * 6
        kin.append(kinematics_step(T, b, Vp, u[b.u0:b.u0 + b.nu]))
    return kin


def _ldl_inverse(T, D, b: BodyInfo):
    """D^-1 of a small SPD matrix by D = L diag(d) L^T, each pivot checked (returns b.status if not > 0)."""
    n = len(D)
    L = [[1.0 if i == j else 0.0 for j in range(n)] for i in range(n)]
    d = [None] * n
    for j in range(n):
        dj = T.dot([(-1.0, T.mul(T.mul(L[j][m], L[j][m]), d[m])) for m in range(j)], 0.0)
        dj = T.add(D[j][j], dj)
        if isinstance(dj, float):
            if not dj > 0.0:
                raise NotPositiveDefinite(b.k)
        else:
            T.check_positive(dj, b.status, f"D of '{b.name}' is not positive definite")
        d[j] = T.name(dj, f"d{b.tag}_{j}")
        for i in range(j + 1, n):
            v = T.add(D[i][j], T.dot([(-1.0, T.mul(T.mul(L[i][m], L[j][m]), d[m])) for m in range(j)]))
            L[i][j] = T.div(v, d[j])
    dinv = [T.div(1.0, dj) for dj in d]
    # Linv (unit lower) by forward substitution
    Li = [[1.0 if i == j else 0.0 for j in range(n)] for i in range(n)]
    for j in range(n):
        for i in range(j + 1, n):
            Li[i][j] = T.dot([(-1.0, T.mul(L[i][m], Li[m][j])) for m in range(j, i)])
    Dinv = [[None] * n for _ in range(n)]
    for i in range(n):
        for j in range(i, n):
            Dinv[i][j] = Dinv[j][i] = T.dot([(T.mul(Li[m][i], Li[m][j]), dinv[m]) for m in range(max(i, j), n)])
    return Dinv


def _accumulate(T, base, contributions):
    """base + sum(contributions), entrywise, one statement per entry (6-vectors or 6x6 symmetric)."""
    if base and isinstance(base[0], list):
        out = [[None] * 6 for _ in range(6)]
        for i in range(6):
            for j in range(i, 6):
                out[i][j] = out[j][i] = T.dot([(1.0, c[i][j]) for c in contributions], base[i][j])
        return out
    return [T.dot([(1.0, c[i]) for c in contributions] + [(1.0, base[i])]) for i in range(6)]


# ---- flexible bodies: the modes as a child of the body (Jain's modal "hinge", X = I) -------------------

def _cross(T, a, b):
    """a x b of 3-vectors (floats or traced values)."""
    return [T.dot([(a[(i + 1) % 3], b[(i + 2) % 3]), (-1.0, T.mul(a[(i + 2) % 3], b[(i + 1) % 3]))]) for i in range(3)]


def modal_inertia(T, b: BodyInfo) -> dict:
    """The nodes of flexible body b at ``d_i = s_i + Phi_i eta`` (first order in eta), their mass matrix over
    (V, etadot) in the body frame, ``sum_i m_i B_i^T B_i`` with ``B_i = [-d_i~, 1, Phi_i]``:

        M_VV = the nodes' rigid inertia (m, h, J) about the body origin at their deformed positions,
        M_Ve (6 x n) = sum m_i [d_i x Phi_i; Phi_i],   M_ee (n x n) = sum m_i Phi_i^T Phi_i (constant)."""
    F, n = b.flex, b.flex.n
    eta, etad = ([T.input(f"q[{F.q0 + j}]") for j in range(n)], [T.input(f"u[{F.u0 + j}]") for j in range(n)])
    d = [[T.dot([(P[r][j], eta[j]) for j in range(n)], s[r]) for r in range(3)] for s, P in zip(F.s, F.Phi)]
    m = float(sum(F.m))
    h = [T.dot([(mi, di[r]) for mi, di in zip(F.m, d)]) for r in range(3)]
    J = [[None] * 3 for _ in range(3)]
    for r in range(3):
        a, c = (r + 1) % 3, (r + 2) % 3
        J[r][r] = T.dot([(mi, T.mul(di[x], di[x])) for mi, di in zip(F.m, d) for x in (a, c)])
        for q in range(r + 1, 3):
            J[r][q] = J[q][r] = T.dot([(-mi, T.mul(di[r], di[q])) for mi, di in zip(F.m, d)])
    # M_Ve's column j: sum m_i [d_i x phi_ij; phi_ij], linear in eta: sum m_i s_i x phi_ij + sum_l eta_l A_lj with
    # the constants A_lj = sum m_i phi_il x phi_ij (3 n^2 products, whatever the number of nodes)
    phi = [[[P[r][j] for r in range(3)] for j in range(n)] for P in F.Phi]          # phi[i][j]: node i, mode j
    csum = lambda vs: [float(sum(v[r] for v in vs)) for r in range(3)]  # noqa: E731
    cross = lambda a, c: [a[1] * c[2] - a[2] * c[1], a[2] * c[0] - a[0] * c[2], a[0] * c[1] - a[1] * c[0]]  # noqa: E731
    cols = []
    for j in range(n):
        B = csum([[mi * x for x in cross(si, ph[j])] for mi, si, ph in zip(F.m, F.s, phi)])
        A = [csum([[mi * x for x in cross(ph[l], ph[j])] for mi, ph in zip(F.m, phi)]) for l in range(n)]
        top = [T.name(T.dot([(A[l][r], eta[l]) for l in range(n)], B[r]), f"Mve{b.tag}_{j}_{r}") for r in range(3)]
        cols.append(top + [float(sum(mi * ph[j][r] for mi, ph in zip(F.m, phi))) for r in range(3)])
    Mee = [[sum(mi * sum(P[r][j] * P[r][l] for r in range(3)) for mi, P in zip(F.m, F.Phi)) for l in range(n)]
           for j in range(n)]
    return {"eta": eta, "etad": etad, "d": d, "m": m, "h": h, "J": J, "MVV": rigid_inertia(m, h, J),
            "MVe": cols, "Mee": Mee}


def modal_bias(T, b: BodyInfo, Mi: dict, V) -> dict:
    """The nodes' velocity terms at body velocity V = [w; v]: each node accelerates by
    ``B_i [alpha; etaddot] + c_i``, ``c_i = w x (v + w x d_i) + 2 w x Phi_i etadot``, so

        b_V = sum m_i [d_i x c_i; c_i],   b_e = sum m_i Phi_i^T c_i.   Returns Mi with b_V and b_e."""
    F, n, w, v = b.flex, b.flex.n, V[:3], V[3:]
    bV, be = [[] for _ in range(6)], [[] for _ in range(n)]
    for mi, di, P in zip(F.m, Mi["d"], F.Phi):
        e = [T.dot([(P[r][j], Mi["etad"][j]) for j in range(n)]) for r in range(3)]       # Phi_i etadot
        t = [T.add(x, y) for x, y in zip(v, _cross(T, w, di))]                            # v + w x d_i
        c = [T.dot([(1.0, x), (2.0, y)]) for x, y in zip(_cross(T, w, t), _cross(T, w, e))]
        for r, x in enumerate(_cross(T, di, c) + c):
            bV[r].append((mi, x))
        for j in range(n):
            be[j] += [(mi * P[r][j], c[r]) for r in range(3)]
    return {**Mi, "bV": [T.dot(x) for x in bV], "be": [T.dot(x) for x in be]}


def modal_tip(T, b: BodyInfo, Mk: dict, T_m) -> tuple:
    """Body b's modes eliminated as a hinge is (tip to base; the modes see the body's acceleration alpha).
    D = M_ee is constant, factored at build time as D = L L^T (``FlexInfo.Linv`` = L^-1), so that

        eps = T_m - k eta - c etadot - b_e,   Y = L^-1 M_Ve^T,   y = L^-1 eps
        P_f = M_VV - Y^T Y  (= M_VV - G M_Ve^T, G = M_Ve D^-1),   z_f = b_V + Y^T y  (= b_V + G eps)

    (P_f, z_f) join the body's P and z as a child's push does.  Returns (step {Y, y}, (P_f, z_f))."""
    F, n, Li = b.flex, b.flex.n, b.flex.Linv
    eps = [T.name(T.dot([(-F.k[j], Mk["eta"][j]), (-F.c[j], Mk["etad"][j]), (-1.0, Mk["be"][j])], T_m[j]),
                  f"epsm{b.tag}_{j}") for j in range(n)]
    Y = [[T.name(T.dot([(Li[j][m], Mk["MVe"][m][i]) for m in range(j + 1)]), f"Ym{b.tag}_{j}_{i}") for i in range(6)]
         for j in range(n)]
    y = [T.name(T.dot([(Li[j][m], eps[m]) for m in range(j + 1)]), f"ym{b.tag}_{j}") for j in range(n)]
    P = [[None] * 6 for _ in range(6)]
    for i in range(6):
        for j in range(i, 6):
            P[i][j] = P[j][i] = T.dot([(-1.0, T.mul(Y[c][i], Y[c][j])) for c in range(n)], Mk["MVV"][i][j])
    z = [T.dot([(Y[c][i], y[c]) for c in range(n)], Mk["bV"][i]) for i in range(6)]
    return {"Y": Y, "y": y}, (P, z)


def modal_base(T, b: BodyInfo, mstep: dict, alpha) -> list:
    """Body b's modal accelerations from its acceleration alpha: etaddot = D^-1 (eps - M_Ve^T alpha)
    = L^-T (y - Y alpha)."""
    n, Li = b.flex.n, b.flex.Linv
    w = [T.dot([(-1.0, T.mul(mstep["Y"][c][i], alpha[i])) for i in range(6)], mstep["y"][c]) for c in range(n)]
    return [T.dot([(Li[m][j], w[m]) for m in range(j, n)]) for j in range(n)]


def modal_forces(T, b: BodyInfo, Mk: dict, alpha, etadd) -> tuple:
    """Newton-Euler for body b's nodes at its acceleration alpha and the modal accelerations: the force they
    need from the body, ``f_f = M_VV alpha + M_Ve etaddot + b_V``, and the modal forces,
    ``T_m = M_Ve^T alpha + M_ee etaddot + b_e + k eta + c etadot``."""
    F, n = b.flex, b.flex.n
    f = [T.dot([(Mk["MVe"][j][i], etadd[j]) for j in range(n)], T.add(_dot(T, Mk["MVV"][i], alpha), Mk["bV"][i]))
         for i in range(6)]
    tau = [T.dot([(Mk["Mee"][j][l], etadd[l]) for l in range(n)] + [(F.k[j], Mk["eta"][j]), (F.c[j], Mk["etad"][j])],
                 T.add(_dot(T, Mk["MVe"][j], alpha), Mk["be"][j])) for j in range(n)]
    return f, tau


# ---- ATBI forward dynamics ----------------------------------------------------------------------------

def known_axis_rows(b: BodyInfo, H) -> dict:
    """Rewrite: ``{row i: column c}`` where column c of H is the constant unit vector e_i (a PIN about a body
    axis, a free joint).  H^T G = 1, H^T P+ = 0 and H^T z+ = T hold exactly (without armature), so row i of
    G is e_c^T, row and column i of P+ are zero and z+_i = T_c: known, not computed."""
    if b.armature and any(not (isinstance(a, float) and a == 0.0) for a in b.armature):
        return {}
    known = {}
    for c, col in enumerate(H):
        if all(isinstance(x, float) for x in col) and sorted(col) == [0.0] * 5 + [1.0]:
            known[col.index(1.0)] = c
    return known


def atbi_tip(T, b: BodyInfo, K, P_children, z_children, T_h, f_ext):
    """ATBI tip to base at body b (its children done):

        P = M + sum phi P+ phi^T,   z = P a + b - f_ext + sum phi z+      (sums over the children)
        D = H^T P H + A,  G = P H D^-1,  eps = T - H^T z,  nu = D^-1 eps
        P+ = P - G (P H)^T  (= tauper P),   z+ = z + G eps

    Returns (step, push): step = {P, D, Dinv, G, PH, z, eps, nu, and z+ below a root}; push = (phi P+ phi^T,
    phi z+) for the parent, None at a root."""
    t, H, n = b.tag, K["H"], b.nu
    P = _accumulate(T, b.M, P_children)
    P = [[T.name(P[i][j], f"P{t}_{min(i, j)}{max(i, j)}") for j in range(6)] for i in range(6)]
    z = _accumulate(T, [T.dot([(1.0, x), (-1.0, f)]) for x, f in zip(K["b"], f_ext)],
                    list(z_children) + [matvec(T, P, K["a"])])
    known = known_axis_rows(b, H)
    PH = [matvec(T, P, h) for h in H]                                            # P H (columns)
    D = [[_dot(T, H[r], PH[c], b.arm(c) if r == c else 0.0) for c in range(n)] for r in range(n)]
    Dinv = _ldl_inverse(T, D, b) if n else []
    G = [[1.0 if cc == known[i] else 0.0 for cc in range(n)] if i in known else
         [_dot(T, [PH[m][i] for m in range(n)], [Dinv[m][c] for m in range(n)]) for c in range(n)]
         for i in range(6)]                                                     # G = P H D^-1 (6 x nU)
    eps = [T.name(T.add(T_h[c], T.neg(_dot(T, H[c], z))), f"eps{t}_{c}") for c in range(n)]
    nu = [T.name(_dot(T, Dinv[c], eps), f"nu{t}_{c}") for c in range(n)]
    step = {"P": P, "D": D, "Dinv": Dinv, "G": G, "PH": PH, "z": z, "eps": eps, "nu": nu}
    if b.root:
        return step, None
    zplus = step["zplus"] = [T_h[known[i]] if i in known else _dot(T, G[i], eps, z[i]) for i in range(6)]
    Pplus = [[None] * 6 for _ in range(6)]
    for i in range(6):
        for j in range(i, 6):
            Pplus[i][j] = Pplus[j][i] = 0.0 if i in known or j in known else T.dot(
                [(-1.0, T.mul(G[i][c], PH[c][j])) for c in range(n)], P[i][j])
    return step, (phi_sym(T, K["R"], K["l"], Pplus), phi(T, K["R"], K["l"], zplus))


def atbi_base(T, b: BodyInfo, K, step, alpha_parent):
    """ATBI base to tip at body b: alpha+ = phi^T alpha_parent;  Udot = nu - G^T alpha+;
    alpha = alpha+ + H Udot + a.  Rewrite at a root: Udot = D^-1 (eps - (P H)^T alpha+), the same without G
    (6 x 6 for a free joint).  Returns (Udot, alpha)."""
    ap = phiT(T, K["R"], K["l"], alpha_parent)
    G, PH, n = step.get("G"), step.get("PH"), b.nu
    if not b.root:
        udot = [T.dot([(-1.0, T.mul(G[i][c], ap[i])) for i in range(6)], step["nu"][c]) for c in range(n)]
    else:
        w = [T.dot([(-1.0, T.mul(PH[c][i], ap[i])) for i in range(6)], step["eps"][c]) for c in range(n)]
        udot = [_dot(T, step["Dinv"][c], w) for c in range(n)]
    alpha = [T.name(x, f"alpha{b.tag}_{i}")
             for i, x in enumerate(_colsum(T, K["H"], udot, [T.add(x, y) for x, y in zip(ap, K["a"])]))]
    return udot, alpha


def gravity_acceleration(T, g):
    """Gravity as the newtonian frame's spatial acceleration: alpha_0 = [0; -g]."""
    return [0.0, 0.0, 0.0] + [T.neg(x) for x in g]


def atbi_factor(T, bodies, kin, Tin, f_ext):
    """:func:`atbi_tip` over the bodies, tip to base.  Returns each body's step (P, D, Dinv, G, eps, nu)."""
    Pc, zc, step = [[] for _ in bodies], [[] for _ in bodies], [None] * len(bodies)
    for b in reversed(bodies):
        if b.flex:
            T.comment(f"body {b.k} '{b.name}': its modes, eliminated into the body (a child with X = I)")
            mstep, push = modal_tip(T, b, kin[b.k]["modal"], Tin[b.flex.u0:b.flex.u0 + b.flex.n])
            Pc[b.k].append(push[0])
            zc[b.k].append(push[1])
        T.comment(f"body {b.k} '{b.name}' tip to base: P = M + sum phi P+ phi^T, z = P a + b - f_ext + sum phi z+")
        step[b.k], push = atbi_tip(T, b, kin[b.k], Pc[b.k], zc[b.k], Tin[b.u0:b.u0 + b.nu], f_ext(b.k))
        if push:
            Pc[b.parent].append(push[0])
            zc[b.parent].append(push[1])
        if b.flex:
            step[b.k]["modal"] = mstep
    return step


def atbi_accelerations(T, bodies, kin, step, alpha0):
    """:func:`atbi_base` over the bodies, base to tip, from the newtonian's acceleration alpha0 (gravity).
    Returns (Udot per body, alpha per body)."""
    T.comment("base to tip: alpha+ = phi^T alpha_parent, Udot = nu - G^T alpha+, alpha = alpha+ + H Udot + a")
    udot, alpha = [None] * len(bodies), [None] * len(bodies)
    for b in bodies:
        udot[b.k], alpha[b.k] = atbi_base(T, b, kin[b.k], step[b.k], alpha[b.parent] if not b.root else alpha0)
    return udot, alpha


def atbi(T: Tape, bodies, n_u: int, io):
    """ATBI forward dynamics over all bodies, straight-line: Udot from (Q, U, T, f_ext, g)."""
    u, Tin = io.u(T), io.tau(T)
    T.comment("kinematics base to tip: X_pb, H, V, a (Coriolis), b (gyroscopic)")
    kin = velocities(T, bodies, u)
    step = atbi_factor(T, bodies, kin, Tin, lambda k: io.f_ext(T, k))
    T.comment("base to tip: alpha+ = phi^T alpha_parent, Udot = nu - G^T alpha+, alpha = alpha+ + H Udot + a")
    alpha, g0 = [None] * len(bodies), gravity_acceleration(T, io.gravity(T))
    for b in bodies:
        udot, alpha[b.k] = atbi_base(T, b, kin[b.k], step[b.k], alpha[b.parent] if not b.root else g0)
        for c, x in enumerate(udot):
            T.store(io.out(b.u0 + c), x)
        if b.flex:
            for j, x in enumerate(modal_base(T, b, step[b.k]["modal"], alpha[b.k])):
                T.store(io.out(b.flex.u0 + j), x)
    T.ret(0)


# ---- M^-1 f on the ATBI factorization -----------------------------------------------------------------

def minv_tip(T, b: BodyInfo, K, step, z_children, f, T_h=None):
    """M^-1 pass tip to base at body b, on atbi_tip's factorization (P, G, D^-1 kept; no velocity terms):
    z = -f + sum phi z+,  eps = T_h - H^T z,  nu = D^-1 eps,  z+ = z + G eps  (T_h: generalized forces, default 0).
    Returns ({eps, nu}, phi z+ for the parent or None at a root)."""
    H, n = K["H"], b.nu
    T_h = T_h if T_h is not None else [0.0] * n
    z = _accumulate(T, [T.neg(x) for x in f], z_children) if z_children else [T.neg(x) for x in f]
    eps = [T.add(T_h[c], T.neg(_dot(T, H[c], z))) for c in range(n)]
    nu = [_dot(T, step["Dinv"][c], eps) for c in range(n)]
    if b.root:
        return {"eps": eps, "nu": nu}, None
    known = known_axis_rows(b, H)
    zplus = [T_h[known[i]] if i in known else _dot(T, step["G"][i], eps, z[i]) for i in range(6)]  # H^T z+ = T_h
    return {"eps": eps, "nu": nu}, phi(T, K["R"], K["l"], zplus)


def minv_base(T, b: BodyInfo, K, step, m, alpha_parent):
    """M^-1 pass base to tip at body b: alpha+ = phi^T alpha_parent;  Udot = nu - G^T alpha+ (at a root
    D^-1 (eps - (P H)^T alpha+));  alpha = alpha+ + H Udot.  Returns (Udot, alpha)."""
    ap = phiT(T, K["R"], K["l"], alpha_parent)
    if not b.root:
        udot = [T.dot([(-1.0, T.mul(step["G"][i][c], ap[i])) for i in range(6)], m["nu"][c]) for c in range(b.nu)]
    else:
        w = [T.dot([(-1.0, T.mul(step["PH"][c][i], ap[i])) for i in range(6)], m["eps"][c]) for c in range(b.nu)]
        udot = [_dot(T, step["Dinv"][c], w) for c in range(b.nu)]
    return udot, _colsum(T, K["H"], udot, ap)


def minv(T, bodies, kin, step, forces: dict, tau=None):
    """Udot = M^-1 (tau + J^T f) for external body wrenches ``forces`` ({body index: [N; F] at its origin}) and
    generalized forces ``tau`` (nU, default none) on the ATBI factorization ``step`` (:func:`atbi_factor`), O(n);
    bodies with no force below them fold away.  Returns (Udot per body, alpha per body)."""
    zc, m = [[] for _ in bodies], [None] * len(bodies)
    for b in reversed(bodies):
        m[b.k], push = minv_tip(T, b, kin[b.k], step[b.k], zc[b.k], forces.get(b.k, [0.0] * 6),
                                None if tau is None else tau[b.u0:b.u0 + b.nu])
        if push:
            zc[b.parent].append(push)
    udot, alpha = [None] * len(bodies), [None] * len(bodies)
    for b in bodies:
        udot[b.k], alpha[b.k] = minv_base(T, b, kin[b.k], step[b.k], m[b.k],
                                          alpha[b.parent] if not b.root else [0.0] * 6)
    return udot, alpha


# ---- Upsilon and psi on the ATBI factorization (operational-space compliance) -----------------------

def psi_up(T, b: BodyInfo, K, step, v):
    """psi(parent, b) v = phi tauper v, tauper = I - G H^T: a force at body b moved to its parent through the
    articulated hinge (the M^-1 pass's z+ with T = 0; rows of a known axis fold to 0)."""
    H, G, n = K["H"], step["G"], b.nu
    known = known_axis_rows(b, H)
    w = [_dot(T, H[c], v) for c in range(n)]                                      # H^T v
    t = [0.0 if i in known else T.dot([(-1.0, T.mul(G[i][c], w[c])) for c in range(n)], v[i]) for i in range(6)]
    return phi(T, K["R"], K["l"], t)


def psi_down(T, b: BodyInfo, K, step, a):
    """psi^T(parent, b) a = tauper^T phi^T a = a+ - H (G^T a+), a+ = phi^T a: a motion of the parent seen at b
    through the articulated hinge."""
    H, G, n = K["H"], step["G"], b.nu
    ap = phiT(T, K["R"], K["l"], a)
    s = [T.neg(_dot(T, [G[i][c] for i in range(6)], ap)) for c in range(n)]
    return _colsum(T, H, s, ap)


def _swap(M):
    """S M S, S = [[0, I], [I, 0]]: the angular and linear blocks exchanged."""
    return [[M[(i + 3) % 6][(j + 3) % 6] for j in range(6)] for i in range(6)]


def upsilon_step(T, b: BodyInfo, K, step, Y_parent):
    """Upsilon(b) = psi^T Upsilon(parent) psi + H D^-1 H^T (Jain; Upsilon = 0 above a root), symmetric 6 x 6.
    phi^T Y phi = S phi_sym(R^T, -R^T l, S Y S) S (phi^T(A, B) is the motion transform; with its angular and
    linear blocks exchanged it is the force transform of X_BA), then tauper^T (.) tauper with tauper = I - G H^T."""
    H, G, Dinv, n, t = K["H"], step["G"], step["Dinv"], b.nu, b.tag
    X = [[0.0] * 6 for _ in range(6)]
    if Y_parent is not None:
        R, l = K["R"], K["l"]
        Rt = [R[3 * j + i] for i in range(3) for j in range(3)]
        Yp = _swap(phi_sym(T, Rt, [T.neg(_dot(T, R[i::3], l)) for i in range(3)], _swap(Y_parent)))  # phi^T Y phi
        W = [[_dot(T, Yp[i], [G[m][c] for m in range(6)]) for c in range(n)] for i in range(6)]  # Y' G
        S = [[_dot(T, [G[m][c] for m in range(6)], [W[m][d] for m in range(6)]) for d in range(n)] for c in range(n)]
        X = [[T.dot([(-1.0, T.mul(H[c][i], W[j][c])) for c in range(n)]
                    + [(-1.0, T.mul(W[i][c], H[c][j])) for c in range(n)], Yp[i][j]) for j in range(6)]
             for i in range(6)]
        C = [[T.add(S[c][d], Dinv[c][d]) for d in range(n)] for c in range(n)]               # G^T Y' G + D^-1
    else:
        C = Dinv
    Y = [[None] * 6 for _ in range(6)]
    for i in range(6):
        for j in range(i, 6):
            hch = T.dot([(H[c][i], _dot(T, C[c], [H[d][j] for d in range(n)])) for c in range(n)], X[i][j])
            Y[i][j] = Y[j][i] = T.name(hch, f"Y{t}_{i}{j}")
    return Y


# ---- Newton-Euler inverse dynamics --------------------------------------------------------------------

def rnea_base(T, b: BodyInfo, K, alpha_parent, udot, f_ext):
    """Newton-Euler base to tip at body b: alpha = phi^T alpha_parent + H Udot + a;  f = M alpha + b - f_ext."""
    ap = phiT(T, K["R"], K["l"], alpha_parent)
    alpha = [T.name(x, f"alpha{b.tag}_{i}")
             for i, x in enumerate(_colsum(T, K["H"], udot, [T.add(x, y) for x, y in zip(ap, K["a"])]))]
    f = [T.dot([(1.0, x), (1.0, y), (-1.0, e)]) for x, y, e in zip(matvec(T, b.M, alpha), K["b"], f_ext)]
    return alpha, f


def rnea_tip(T, b: BodyInfo, K, f, f_children, udot, push_root=False):
    """Newton-Euler tip to base at body b: f += sum phi f_child;  T = H^T f + A Udot.  Returns (T, push):
    push = phi f for the parent; at a root None, or with ``push_root`` phi f in the newtonian frame."""
    f = [T.name(x, f"f{b.tag}_{i}") for i, x in enumerate(_accumulate(T, f, f_children))]
    tau = [T.dot([(b.arm(c), udot[c])], _dot(T, K["H"][c], f)) for c in range(b.nu)]
    return tau, None if b.root and not push_root else phi(T, K["R"], K["l"], f)


def rnea(T: Tape, bodies, n_u: int, io):
    """Newton-Euler inverse dynamics over all bodies, straight-line: T from (Q, U, Udot, f_ext, g)."""
    u, udot = io.u(T), io.tau(T)
    T.comment("kinematics base to tip: X_pb, H, V, a (Coriolis), b (gyroscopic)")
    kin = velocities(T, bodies, u)
    for i, x in enumerate(newton_euler(T, bodies, kin, udot, io)):
        T.store(io.out(i), x)


def newton_euler(T, bodies, kin, udot, io, world=None) -> list:
    """T (nU) from the kinematics ``kin`` (:func:`velocities`) and Udot: :func:`rnea_base` base to tip,
    :func:`rnea_tip` tip to base.  ``world``: a list that gets each root's f in the newtonian frame (about
    its origin): what the whole subtree's motion takes."""
    T.comment("base to tip: alpha = phi^T alpha_parent + H Udot + a;  f = M alpha + b - f_ext")
    alpha, f, g0 = [None] * len(bodies), [None] * len(bodies), gravity_acceleration(T, io.gravity(T))
    fc, out = [[] for _ in bodies], [0.0] * n_of(bodies)
    for b in bodies:
        alpha[b.k], f[b.k] = rnea_base(T, b, kin[b.k], alpha[b.parent] if not b.root else g0,
                                       udot[b.u0:b.u0 + b.nu], io.f_ext(T, b.k))
        if b.flex:                         # the nodes: a child with X = I; their modal forces
            ff, out[b.flex.u0:b.flex.u0 + b.flex.n] = modal_forces(
                T, b, kin[b.k]["modal"], alpha[b.k], udot[b.flex.u0:b.flex.u0 + b.flex.n])
            fc[b.k].append(ff)
    T.comment("tip to base: f_parent += phi f;  T = H^T f")
    for b in reversed(bodies):
        tau, push = rnea_tip(T, b, kin[b.k], f[b.k], fc[b.k], udot[b.u0:b.u0 + b.nu], world is not None)
        out[b.u0:b.u0 + b.nu] = tau
        if push and b.root:
            world.append(push)
        elif push:
            fc[b.parent].append(push)
    return out


# ---- the dynamics' tree: static subtrees fused into their moving ancestor --------------------------------

def _static(b: BodyInfo) -> bool:
    """A body that moves rigidly with its parent: no U, a constant hinge transform, a constant rigid inertia."""
    return (not b.root and b.nu == 0 and b.flex is None and all(isinstance(x, float) for x in b.X_const)
            and all(isinstance(x, float) for row in b.M for x in row))


def fuse_static(bodies):
    """The tree that forward dynamics, inverse dynamics and the mass matrix run over: every static body
    (:func:`_static`: a locked hinge, as a URDF fixed joint reads; a sensor frame, a sole, a gripper's fixed parts, a
    wrist's force-torque link between two moving links) fused into the nearest ancestor that moves, as Pinocchio
    merges fixed joints and MuJoCo's ``fusestatic`` does.  The host's rigid inertia gains each one's, moved into it
    (:func:`rigid_phi`: constants, folded at build time); a static body's children hang from the host, their onode
    moved by the static body's pose in it (X_host,child = X_host,static onode X(Q) pnode^-1).  The gyroscopic and
    Coriolis terms, the composites and the external forces are the same equations over fewer bodies (the spatial
    cross products are frame-invariant, and a static body's velocity and acceleration are its host's, moved).
    Returns ``(fused, adds)``: the host bodies renumbered parent before child (``k``, ``parent``), each keeping its
    name, ``tag`` and ``status`` (the C names and error codes of the full tree), and per fused index the
    ``(k, R, l)`` of every static body it took, with its pose in the host, whose f_ext it adds (:class:`FusedIO`)."""
    import dataclasses

    if not any(_static(b) for b in bodies):
        return list(bodies), {}
    from ..ir.tape import Tape

    T0 = Tape()                                  # constants only: every operation folds to a float
    host, pose = {}, {}                          # a fused body's host (original index), its pose there
    index, fused, adds = {}, [], {}
    for b in bodies:
        if _static(b):
            R, l, _, _ = joint(T0, b)
            h = host.get(b.parent, b.parent)
            if b.parent in host:
                R, l = compose(T0, *pose[b.parent], R, l)
            host[b.k], pose[b.k] = h, (R, l)
            j = index[h]
            m, hj, J = rigid_parts(fused[j].M)          # the host's rigid inertia gains the body's, moved (rigid)
            mb, hb, Jb = rigid_parts(b.M)
            hb, Jb = rigid_phi(T0, R, l, mb, hb, Jb)
            assert all(isinstance(x, float) for x in [m, *hj, *hb]), "a host with a runtime inertia"
            M = rigid_inertia(m + mb, [x + y for x, y in zip(hj, hb)],
                              [[x + y for x, y in zip(r0, r1)] for r0, r1 in zip(J, Jb)])
            fused[j] = dataclasses.replace(fused[j], M=M)
            adds.setdefault(j, []).append((b.k, R, l))
            continue
        moved = {}
        if not b.root and b.parent in host:            # the child of a static body: its onode moved into the host
            on_R, on_l = compose(T0, *pose[b.parent], b.on_R, b.on_l)
            assert all(isinstance(x, float) for x in [*on_R, *on_l]), "a moved onode that is not constant"
            moved = {"on_R": on_R, "on_l": on_l}
        index[b.k] = len(fused)
        parent = -1 if b.root else index[host.get(b.parent, b.parent)]
        fused.append(dataclasses.replace(b, k=len(fused), parent=parent, tag=b.tag, status=b.status, **moved))
    return fused, adds


class FusedIO:
    """An io (:class:`ArrayIO`, or another with its methods) for the fused tree of :func:`fuse_static`: body k of
    the fused tree reads the external force of its original body plus, moved into it, each static body's it
    took: ``f_k + sum phi(R, l) f_j``.  Everything else is the wrapped io's."""

    def __init__(self, io, fused, adds):
        self.io, self.orig, self.adds = io, [int(b.tag) for b in fused], adds

    def __getattr__(self, name):
        return getattr(self.io, name)

    def f_ext(self, T, k):
        f = self.io.f_ext(T, self.orig[k])
        for j, R, l in self.adds.get(k, ()):
            f = [T.add(a, b) for a, b in zip(f, phi(T, R, l, self.io.f_ext(T, j)))]
        return f


def n_of(bodies) -> int:
    """nU of the bodies (their modes included)."""
    return max([b.u0 + b.nu for b in bodies] + [b.flex.u0 + b.flex.n for b in bodies if b.flex] + [0])


def atbi_derivatives(T, bodies, n_u: int, io, groups):
    """The tangents of ATBI forward dynamics along seeded directions, on the values of the tape T:

        Udot = ATBI(Q, U, T)                                  (values, once)
        r = dT - dRNEA(Q, U, Udot)                            (Newton-Euler on dual numbers)
        dUdot = M^-1 r

    M^-1 is not differentiated (Carpentier and Mansard, RSS 2018, Sec. IV).  ``groups``: (D, bodies, io, solve)
    per group of directions, D a :class:`symgen.ir.dual.DualTape` on T seeded with the group's directions (what
    is zero for a group folds).  A group with ``solve`` stores dUdot through its io, M^-1 applied by
    :func:`minv` on the ATBI factorization (O(n) per direction; the T directions, whose r is the seed, give
    M^-1 itself); a group without stores r, for the caller to multiply by that M^-1.  Returns each group's r."""
    from ..ir.dual import tangent

    u, tau = io.u(T), io.tau(T)
    T.comment("values: ATBI forward dynamics")
    kin = velocities(T, bodies, u)
    step = atbi_factor(T, bodies, kin, tau, lambda k: io.f_ext(T, k))
    udot_b, _ = atbi_accelerations(T, bodies, kin, step, gravity_acceleration(T, io.gravity(T)))
    udot = [0.0] * n_u
    for b in bodies:
        udot[b.u0:b.u0 + b.nu] = udot_b[b.k]
    out = []
    for D, bodies_d, io_d, solve in groups:
        D.comment("tangents: r = dT - dRNEA(Q, U, Udot) along the group's seeds (Newton-Euler on dual numbers)")
        d_rnea = newton_euler(D, bodies_d, velocities(D, bodies_d, io_d.u(D)), udot, io_d)
        r = [T.add(tangent(t), T.neg(tangent(x))) for t, x in zip(io_d.tau(D), d_rnea)]
        out.append(r)
        if not solve:
            for i, x in enumerate(r):
                T.store(io_d.out(i), x)
            continue
        T.comment("tangents: dUdot = M^-1 r on the ATBI factorization")
        dudot, _ = minv(T, bodies, kin, step, {}, tau=r)
        for b in bodies:
            for c, x in enumerate(dudot[b.k]):
                T.store(io_d.out(b.u0 + c), x)
    return out


# ---- composite-body mass matrix -----------------------------------------------------------------------

def rigid_parts(M):
    """(m, h, J) of a rigid-body spatial inertia M = [[J, h~], [-h~, m 1]] about the body origin (h = m c)."""
    return M[3][3], [M[2][4], M[0][5], M[1][3]], [row[:3] for row in M[:3]]


def rigid_phi(T, R, l, m, h, J):
    """phi (m, h, J) phi^T for X_AB = (R, l), kept rigid (10 numbers instead of a 6x6):
    h_A = R h + m l;  J_A = R J R^T + m (|l|^2 1 - l l^T) + 2 (l . R h) 1 - l (R h)^T - (R h) l^T."""
    hr = [_dot(T, R[3 * i:3 * i + 3], h) for i in range(3)]
    Jr = _rotate(T, R, [x for row in J for x in row], symmetric=True)
    ll = _dot(T, l, l)
    lh = _dot(T, l, hr)
    Jn = [[None] * 3 for _ in range(3)]
    for i in range(3):
        for j in range(i, 3):
            pairs = [(1.0, Jr[3 * i + j])]
            pairs += [(T.neg(m), T.mul(l[i], l[j])), (-1.0, T.mul(l[i], hr[j])), (-1.0, T.mul(hr[i], l[j]))]
            if i == j:
                pairs += [(m, ll), (2.0, lh)]
            Jn[i][j] = Jn[j][i] = T.dot(pairs)
    return [T.dot([(m, l[i])], hr[i]) for i in range(3)], Jn


def rigid_apply(T, m, h, J, s):
    """(m, h, J) [w; v] = [J w + h x v; m v - h x w]."""
    w, v = s[:3], s[3:]
    return ([T.dot(list(zip(J[i], w)) + [(h[(i + 1) % 3], v[(i + 2) % 3]), (-1.0, T.mul(h[(i + 2) % 3], v[(i + 1) % 3]))])
             for i in range(3)] +
            [T.dot([(m, v[i]), (-1.0, T.mul(h[(i + 1) % 3], w[(i + 2) % 3])), (h[(i + 2) % 3], w[(i + 1) % 3])])
             for i in range(3)])


def crba_composite(T, b: BodyInfo, K, Ic_children, own=True):
    """Composite inertia tip to base at body b, kept rigid: (m, h, J)c = (m, h, J) + sum over the children
    of phi (m, h, J)c phi^T (``own=False``: the children's only).  Returns (Ic, push): push = phi Ic phi^T for
    the parent, None at a root."""
    t = b.tag
    m, h, J = rigid_parts(b.M) if own else (0.0, [0.0] * 3, [[0.0] * 3 for _ in range(3)])
    m = T.dot([(1.0, c[0]) for c in Ic_children], m)
    h = [T.name(T.dot([(1.0, c[1][i]) for c in Ic_children], h[i]), f"hc{t}_{i}") for i in range(3)]
    J = [[T.dot([(1.0, c[2][i][j]) for c in Ic_children], J[i][j]) for j in range(3)] for i in range(3)]
    J = [[T.name(J[min(i, j)][max(i, j)], f"Jc{t}_{min(i, j)}{max(i, j)}") for j in range(3)] for i in range(3)]
    return (m, h, J), None if b.root else (m, *rigid_phi(T, K["R"], K["l"], m, h, J))


def crba_column(T, b: BodyInfo, K, Ic):
    """Body b's columns of M: F = Ic H;  the diagonal block M[b, b] = H^T F + A.  Returns (F, block)."""
    F = [rigid_apply(T, *Ic, h) for h in K["H"]]
    return F, crba_rows(T, b, K, F, diagonal=True)


def crba_rows(T, j: BodyInfo, K, F, diagonal=False):
    """M[j, b] = H_j^T F (rows of body j's hinge, one column per column of F; + A on the diagonal block)."""
    return [[_dot(T, K["H"][r], F[c], j.arm(c) if diagonal and r == c else 0.0) for c in range(len(F))]
            for r in range(j.nu)]


def crba_up(T, K, F):
    """F moved to the parent: F = phi F (each column)."""
    return [phi(T, K["R"], K["l"], f) for f in F]


@dataclass
class _Modes:
    """A flexible body's modal coordinates as a block of M (where their U start, how many)."""
    u0: int
    nu: int


def _ancestors(bodies, b):
    """b's strict ancestors, nearest first."""
    out = []
    while not b.root:
        b = bodies[b.parent]
        out.append(b)
    return out


def crba(T: Tape, bodies, n_u: int, io):
    """Composite rigid body mass matrix (nU x nU), straight-line: the composite inertias tip to base
    (:func:`crba_composite`), then each body's columns F = Ic H walked up its ancestors j (:func:`crba_rows`,
    :func:`crba_up`): M[j, b] = M[b, j]^T = H_j^T F."""
    related = sum(b.nu * (a.nu if a is not b else 0) for b in bodies for a in _ancestors(bodies, b)) * 2 \
        + sum(b.nu * b.nu for b in bodies) \
        + sum(b.flex.n * (b.flex.n + 2 * sum(a.nu for a in [b] + _ancestors(bodies, b))) for b in bodies if b.flex)
    # a fill loop first when at least 40% of M is structural zeros (one loop beats a store per zero there)
    fill = 5 * (n_u * n_u - related) >= 2 * n_u * n_u
    if fill:
        T.fill_zeros("out", n_u * n_u, "structural zeros; the rest follows")
    T.comment("kinematics base to tip: X_pb, H")
    kin = [dict(zip(("R", "l", "H"), joint(T, b)[:3])) for b in bodies]
    T.comment("composite inertias tip to base: (m, h, J)c = (m, h, J) + sum phi (m, h, J)c_child phi^T")
    Ic, acc = [None] * len(bodies), [[] for _ in bodies]
    for b in reversed(bodies):
        if b.flex:                            # the nodes at their deformed positions: a child with X = I
            kin[b.k]["modal"] = Mk = modal_inertia(T, b)
            acc[b.k].append((Mk["m"], Mk["h"], Mk["J"]))
        Ic[b.k], push = crba_composite(T, b, kin[b.k], acc[b.k])
        if push:
            acc[b.parent].append(push)
    T.comment("columns: F = Ic H, moved up the ancestors; M[j, k] = H_j^T F")
    done = set()

    def store(j, b, block):
        for r, row in enumerate(block):
            for c, v in enumerate(row):
                r_, c_ = j.u0 + r, b.u0 + c
                for rr, cc in ((r_, c_), (c_, r_)) if r_ != c_ else ((r_, c_),):
                    T.store(io.out(rr * n_u + cc), v)
                    done.add((rr, cc))
    for b in bodies:
        if not b.nu:
            continue
        F, block = crba_column(T, b, kin[b.k], Ic[b.k])
        store(b, b, block)
        for j, child in zip(_ancestors(bodies, b), [b] + _ancestors(bodies, b)):
            F = crba_up(T, kin[child.k], F)
            store(j, b, crba_rows(T, j, kin[j.k], F))
    for b in bodies:
        if b.flex:                            # the modes' columns: F = M_Ve at the body, M[modes, modes] = M_ee
            Mk, modes = kin[b.k]["modal"], _Modes(b.flex.u0, b.flex.n)
            store(modes, modes, Mk["Mee"])
            F = Mk["MVe"]
            store(b, modes, crba_rows(T, b, kin[b.k], F))
            for j, child in zip(_ancestors(bodies, b), [b] + _ancestors(bodies, b)):
                F = crba_up(T, kin[child.k], F)
                store(j, modes, crba_rows(T, j, kin[j.k], F))
    assert len(done) == related
    if not fill:
        for r in range(n_u):
            for c in range(n_u):
                if (r, c) not in done:
                    T.store(io.out(r * n_u + c), 0.0)


# ---- centroidal momentum ------------------------------------------------------------------------------

def compose(T, R0, l0, R, l):
    """The pose (R0 R, l0 + R0 l) of X_0b = X_0p X_pb."""
    return _mat3(T, R0, R), [T.dot(list(zip(R0[3 * i:3 * i + 3], l)), l0[i]) for i in range(3)]


def shift(T, c, f):
    """A force about the newtonian origin moved to the point c (world axes): N_c = N - c x F."""
    return [T.add(n, T.neg(x)) for n, x in zip(f[:3], _cross(T, c, f[3:]))] + f[3:]


class _NoLoads:
    """The io of a Newton-Euler pass without gravity and without external forces (the momentum's own rate)."""

    def gravity(self, T):
        return [0.0] * 3

    def f_ext(self, T, k):
        return [0.0] * 6


def grounded(bodies) -> set:
    """The bodies welded to the newtonian frame: a root without U or modes, and the same below it (a fixed-base
    URDF's root link).  They never move: the centroidal functions count them as the ground, as Pinocchio counts
    its universe's inertia (``ccrba``, ``centerOfMass``)."""
    out = set()
    for b in bodies:
        if not b.nu and not b.flex and (b.root or b.parent in out):
            out.add(b.k)
    return out


def composite_inertias(T, bodies, kin):
    """(m, h, J)c of every body, tip to base (:func:`crba_composite`; a flexible body's nodes at their deformed
    positions as a child with X = I; the :func:`grounded` bodies' own inertia left out)."""
    ground = grounded(bodies)
    Ic, acc = [None] * len(bodies), [[] for _ in bodies]
    for b in reversed(bodies):
        if b.flex:
            Mk = kin[b.k].get("modal") or modal_inertia(T, b)
            kin[b.k]["modal"] = Mk
            acc[b.k].append((Mk["m"], Mk["h"], Mk["J"]))
        Ic[b.k], push = crba_composite(T, b, kin[b.k], acc[b.k], own=b.k not in ground)
        if push:
            acc[b.parent].append(push)
    return Ic


def mass_moments(T, bodies, kin):
    """(m, h, None) of every subtree about its body's origin, in its axes, tip to base (h = m c; what
    :func:`centre_of_mass` reads of :func:`composite_inertias`, without the rotational inertia):
    m = m_b + sum m_child,  h = h_b + sum (R h_child + m_child l)."""
    ground = grounded(bodies)
    out, acc = [None] * len(bodies), [[] for _ in bodies]
    for b in reversed(bodies):
        m, h, _ = rigid_parts(b.M) if b.k not in ground else (0.0, [0.0] * 3, None)
        if b.flex:
            Mk = kin[b.k]["modal"]
            acc[b.k].append((Mk["m"], Mk["h"]))
        m = T.dot([(1.0, c[0]) for c in acc[b.k]], m)
        h = [T.dot([(1.0, c[1][i]) for c in acc[b.k]], h[i]) for i in range(3)]
        out[b.k] = (m, h, None)
        if not b.root:
            R, l = kin[b.k]["R"], kin[b.k]["l"]
            acc[b.parent].append((m, [T.dot([(m, l[i])], _dot(T, R[3 * i:3 * i + 3], h)) for i in range(3)]))
    return out


def centre_of_mass(T, bodies, kin, Ic):
    """(m, c): the moving mass and its centre in the newtonian frame, from the roots' composite inertias (a
    root's X_pb is its pose in the newtonian frame); c = 0 for a model without moving mass."""
    m, h = [], [[] for _ in range(3)]
    for b in bodies:
        if b.root:
            mb, hb, _ = Ic[b.k]
            m.append((1.0, mb))
            for i, x in enumerate(_dot(T, kin[b.k]["R"][3 * i:3 * i + 3], hb) for i in range(3)):
                h[i] += [(1.0, x), (mb, kin[b.k]["l"][i])]
    m = T.dot(m)
    if isinstance(m, float) and m == 0.0:
        return m, [0.0] * 3
    return m, [T.name(T.div(T.dot(x), m), f"com_{i}") for i, x in enumerate(h)]


def centroidal_momentum_matrix(T: Tape, bodies, n_u: int, io):
    """The centroidal momentum matrix A_G (6 x nU, rows [angular; linear], about the centre of mass c, world
    axes; Orin and Goswami's CMM), h_G = A_G U and c:  out = [A_G row-major, h_G (6), c (3)]; the
    :func:`grounded` bodies are the ground.  Composite
    inertias tip to base (:func:`crba_composite`, as M's); each body's columns F = Ic H carried to the
    newtonian frame (its world pose) and to c:  A_G[:, b] = shift(c, phi(X_0b) Ic_b H_b), taken as
    phi(R_0b, l_0b - c) Ic_b H_b (one cross product a column)."""
    u = io.u(T)
    T.comment("kinematics base to tip: X_pb, H, world poses X_0b")
    kin, world = [], []
    for b in bodies:
        R, l, H, _ = joint(T, b)
        kin.append({"R": R, "l": l, "H": H})
        world.append((R, l) if b.root else compose(T, *world[b.parent], R, l))
    T.comment("composite inertias tip to base: (m, h, J)c = (m, h, J) + sum phi (m, h, J)c_child phi^T")
    Ic = composite_inertias(T, bodies, kin)
    T.comment("mass and centre of mass c from the roots' composite inertias")
    _, c = centre_of_mass(T, bodies, kin, Ic)
    T.comment("columns: A_G[:, k] = phi(R_0b, l_0b - c) Ic H, shift(c, phi(X_0b) f) in one  (the modes': f = M_Ve)")
    cols = [None] * n_u
    for b in bodies:
        F = [rigid_apply(T, *Ic[b.k], h) for h in kin[b.k]["H"]]
        places = list(range(b.u0, b.u0 + len(F)))
        if b.flex:
            F += kin[b.k]["modal"]["MVe"]
            places += range(b.flex.u0, b.flex.u0 + len(kin[b.k]["modal"]["MVe"]))
        if F:
            R0, l0 = world[b.k]
            lc = [T.add(x, T.neg(ci)) for x, ci in zip(l0, c)]     # body b's origin from c, world axes
            for k, f in zip(places, F):
                cols[k] = phi(T, R0, lc, f)
    for j, col in enumerate(cols):
        for i, x in enumerate(col):
            T.store(io.out(i * n_u + j), x)
    T.comment("h_G = A_G U")
    for i in range(6):
        T.store(io.out(6 * n_u + i), T.dot([(col[i], x) for col, x in zip(cols, u)]))
    for i in range(3):
        T.store(io.out(6 * n_u + 6 + i), c[i])


def centroidal_dynamics(T: Tape, bodies, n_u: int, io):
    """The rate of the centroidal momentum, hdot_G = A_G Udot + Adot_G U (6, [angular; linear], about the centre
    of mass, world axes), Udot in p as inverse dynamics reads it: Newton-Euler (:func:`newton_euler`) without
    gravity and external forces gives each root's f, the net force its subtree's motion takes; their sum in
    the newtonian frame, moved to c (d/dt h_G = the net force about c, since cdot x m cdot = 0)."""
    u, udot = io.u(T), io.tau(T)
    T.comment("kinematics base to tip: X_pb, H, V, a (Coriolis), b (gyroscopic)")
    kin = velocities(T, bodies, u)
    world = []
    newton_euler(T, bodies, kin, udot, _NoLoads(), world)
    T.comment("mass and centre of mass c: (m, h) of every subtree, tip to base (h = m c)")
    _, c = centre_of_mass(T, bodies, kin, mass_moments(T, bodies, kin))
    T.comment("hdot_G = shift(c, sum of the roots' f in the newtonian frame)")
    total = [T.dot([(1.0, f[i]) for f in world]) for i in range(6)]
    for i, x in enumerate(shift(T, c, total)):
        T.store(io.out(i), x)
