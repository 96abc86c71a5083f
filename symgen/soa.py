"""Model dynamics as straight-line C: the SOA recursions traced once per model on a :class:`~symgen.tape.Tape`.

Each algorithm is one short function that reads like the book (Jain, *Robot and Multibody Dynamics*;
Featherstone, *Rigid Body Dynamics Algorithms*).  Running it on the model's constants and on symbolic
runtime values (Q, U, the parameters, and the non-constant entries of each hinge kernel's output) folds
every per-body constant and every structural zero: the inertias, the onode/pnode transforms, a PIN's one
nonzero column, identity rotations.  The result is one branch-free C function per algorithm (the only
branches return the index of a body whose D is not positive definite).

Conventions (as the rest of symgen): spatial vectors ``[angular; linear]`` in body axes, ``X_pb = (R, l)``
the pose of body b in its parent, ``phi^T(p, b)`` moves velocities down (parent -> body), ``phi(p, b)``
moves forces up, ``S`` the hinge map in the body frame (6 x nU, kept as a list of columns).

Names follow SOA: ``P`` articulated inertia, ``D = S^T P S``, ``G = P S D^-1``, ``tauper = I - G S^T``
(applied, never formed), ``z`` residual force, ``eps = T - S^T z``, ``nu = D^-1 eps``, ``alpha`` spatial
acceleration, ``a`` Coriolis and ``b`` gyroscopic terms.
"""
from __future__ import annotations

from dataclasses import dataclass

from .tape import Tape, Val

#: above this many ancestor-walk steps (sum over columns of the depth) the mass matrix walk is a C loop
CRBA_UNROLL_LIMIT = 1200
#: above this many lines of straight-line forward dynamics (about 55 PIN bodies), forward and inverse
#: dynamics call the per-body helpers instead (C compilers take time superlinear in a function's length:
#: 190 s for a 200-body chain)
STRAIGHT_LINE_LIMIT = 10000
#: from this many lines of straight-line forward dynamics (about 16 PIN bodies) the straight-line FD, ID
#: and M get an AVX2 copy picked at load time (templates/model.c.jinja).  Below it they are short enough that
#: the copy measured no faster (arm7: 1,100 lines, same time; quadruped: 2,200 lines, FD 17% faster) and it
#: would only double their compile time.
AVX2_COPY_MIN_LINES = 2000
#: ... except a function longer than this: gcc's time grows faster than the length (register allocation),
#: and a second copy of a 9,000-line FD doubles 13 s of compile (g1 with hands, 49 DOF)
AVX2_COPY_MAX_LINES = 6000
#: from this many lines a straight-line function is compiled as a translation unit of its own, in parallel
#: with the rest of the model (symgen.build; a C program still compiles the model's one .c file)
SPLIT_MIN_LINES = 1500
#: above this many lines the straight-line poses kernel gives way to the per-body helper calls, and so do the
#: one-frame Jacobian's per-body steps (together)
POSES_STRAIGHT_LIMIT = 4000
JAC_STEPS_LIMIT = 6000


class NotPositiveDefinite(Exception):
    """D of a body is a constant that is not positive definite (the model can never be solved)."""

    def __init__(self, k):
        super().__init__(k)
        self.k = k


@dataclass
class BodyInfo:
    """What the tracer knows of one body: constants, and where its runtime values come from."""

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
    X_alias: list = None   # per entry: [j, sign] when it equals sign * entry j (emit.kernel_structure), else None
    H_alias: list = None
    Hd_alias: list = None
    armature: list = None  # rotor inertia per hinge U (added to D, to M's diagonal, and as A Udot to T)

    def arm(self, c) -> float:
        return float(self.armature[c]) if self.armature else 0.0


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
    """The hinge kernel outputs as the tracer sees them: constants, array entries, and entries that are
    another entry (or its negative) as that same value."""
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
    k = b.k
    return (pick(b.X_const, b.X_alias, f"X{k}"), pick(b.H_const, b.H_alias, f"H{k}"),
            pick(b.Hd_const, b.Hd_alias, f"Hd{k}"))


def joint(T, b: BodyInfo):
    """X_pb = onode X_op(Q) pnode^-1 as (R, l); S = phi^T(pnode, b) H; Sdot likewise."""
    X, H, Hd = _hinge_values(T, b)
    Rop = [X[4 * i + j] for i in range(3) for j in range(3)]
    t = [T.dot(list(zip(Rop[3 * i:3 * i + 3], b.pinv_l)) + [(1.0, X[4 * i + 3])]) for i in range(3)]
    l = [T.dot(list(zip(b.on_R[3 * i:3 * i + 3], t)), b.on_l[i]) for i in range(3)]
    R = _mat3(T, _mat3(T, b.on_R, Rop), b.pinv_R)
    cols = lambda A: [phiT(T, b.pinv_R, b.pinv_l, [A[i * b.nu + c] for i in range(6)])  # noqa: E731
                      for c in range(b.nu)]
    return R, l, cols(H), cols(Hd)


def _colsum(T, cols, x, init=None):
    """sum_c cols[c] x[c] (+ init), a 6-vector."""
    init = init or [0.0] * 6
    return [T.dot([(col[i], xc) for col, xc in zip(cols, x)] + [(1.0, init[i])]) for i in range(6)]


def velocities(T, bodies, u):
    """Base to tip: V = phi^T V_parent + S u;  a = crm(V) S u + Sdot u;  b = crf(V) M V."""
    kin = []
    for b in bodies:
        R, l, S, Sd = joint(T, b)
        uh = u[b.u0:b.u0 + b.nu]
        Su = _colsum(T, S, uh)
        Vp = kin[b.parent]["V"] if b.parent >= 0 else [0.0] * 6
        V = [T.name(x, f"V{b.k}_{i}") for i, x in enumerate(_colsum(T, S, uh, phiT(T, R, l, Vp)))]
        a = _colsum(T, Sd, uh, crm(T, V, Su))
        bb = crf(T, V, matvec(T, b.M, V))
        kin.append({"R": R, "l": l, "S": S, "V": V, "a": a, "b": bb})
    return kin


def _ldl_inverse(T, D, b: BodyInfo):
    """D^-1 of a small SPD matrix by D = L diag(d) L^T, each pivot checked (returns k + 1 if not > 0)."""
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
            T.effect(("if (!(", dj, f" > 0.0)) return {b.k + 1};  /* D of '{b.name}' is not positive definite */"))
        d[j] = T.name(dj, f"d{b.k}_{j}")
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


def _unit_columns(S):
    """For each column of S: the index i if the column is the constant unit vector e_i, else None."""
    def unit(col):
        if all(isinstance(x, float) for x in col) and sorted(col) == [0.0] * 5 + [1.0]:
            return col.index(1.0)
        return None
    return [unit(col) for col in S]


def atbi(T: Tape, bodies, nu: int):
    """ATBI forward dynamics: Udot from (Q, U, T, f_ext, g).  p = [g (3), T (nU), f_ext (6 per body)]."""
    q_u = [T.input(f"u[{i}]") for i in range(nu)]
    Tin = [T.input(f"p[{3 + i}]") for i in range(nu)]
    fext = lambda b: [T.input(f"p[{3 + nu + 6 * b.k + i}]") for i in range(6)]  # noqa: E731
    T.comment("kinematics base to tip: X_pb, S, V, a (Coriolis), b (gyroscopic)")
    kin = velocities(T, bodies, q_u)
    Pc = [[] for _ in bodies]
    zc = [[] for _ in bodies]
    step = [None] * len(bodies)
    for b in reversed(bodies):
        k, K = b.k, kin[b.k]
        T.comment(f"body {k} '{b.name}' tip to base: P = M + sum phi P+ phi^T, z = P a + b - f_ext + sum phi z+")
        P = _accumulate(T, b.M, Pc[k])
        P = [[T.name(P[i][j], f"P{k}_{min(i, j)}{max(i, j)}") for j in range(6)] for i in range(6)]
        z = _accumulate(T, [T.dot([(1.0, x), (-1.0, f)]) for x, f in zip(K["b"], fext(b))], zc[k] + [matvec(T, P, K["a"])])
        S = K["S"]
        if b.nu:
            PS = [matvec(T, P, s) for s in S]                                        # P S (columns)
            D = [[_dot(T, S[r], PS[c], b.arm(c) if r == c else 0.0) for c in range(b.nu)] for r in range(b.nu)]  # + A
            Dinv = _ldl_inverse(T, D, b)
            G = [[_dot(T, [PS[m][i] for m in range(b.nu)], [Dinv[m][c] for m in range(b.nu)])
                  for c in range(b.nu)] for i in range(6)]                          # G = P S D^-1 (6 x nU)
            eps = [T.name(T.add(Tin[b.u0 + c], T.neg(_dot(T, S[c], z))), f"eps{k}_{c}") for c in range(b.nu)]
            nu_ = [T.name(_dot(T, Dinv[c], eps), f"nu{k}_{c}") for c in range(b.nu)]
        else:
            G, eps, nu_, PS, Dinv = [[] for _ in range(6)], [], [], [], []
        # S^T G = 1, S^T P+ = 0 and S^T z+ = T hold exactly (without armature): where S's columns are unit
        # vectors (a PIN about a body axis, a free joint) those rows of G, P+ and z+ are known, not computed
        axis = _unit_columns(S) if not b.armature or not any(b.armature) else [None] * b.nu
        for c, i in enumerate(axis):
            if i is not None:
                G[i] = [1.0 if cc == c else 0.0 for cc in range(b.nu)]
        step[k] = (G, nu_, PS, Dinv, eps)
        if b.parent < 0:
            continue
        known = {i: c for c, i in enumerate(axis) if i is not None}
        zplus = [Tin[b.u0 + known[i]] if i in known else _dot(T, G[i], eps, z[i]) for i in range(6)]  # z + G eps
        if b.nu:
            Pplus = [[None] * 6 for _ in range(6)]                                   # P+ = P - G (P S)^T
            for i in range(6):
                for j in range(i, 6):
                    Pplus[i][j] = Pplus[j][i] = 0.0 if i in known or j in known else T.dot(
                        [(-1.0, T.mul(G[i][c], PS[c][j])) for c in range(b.nu)], P[i][j])
        else:
            Pplus = P
        Pc[b.parent].append(phi_sym(T, K["R"], K["l"], Pplus))
        zc[b.parent].append(phi(T, K["R"], K["l"], zplus))
    T.comment("base to tip: alpha+ = phi^T alpha_parent, Udot = nu - G^T alpha+, alpha = alpha+ + S Udot + a")
    g0 = [0.0, 0.0, 0.0] + [T.neg(T.input(f"p[{i}]")) for i in range(3)]          # gravity as base acceleration
    alpha = [None] * len(bodies)
    for b in bodies:
        K, (G, nu_, PS, Dinv, eps) = kin[b.k], step[b.k]
        ap = phiT(T, K["R"], K["l"], alpha[b.parent] if b.parent >= 0 else g0)
        if b.parent >= 0:
            udot = [T.dot([(-1.0, T.mul(G[i][c], ap[i])) for i in range(6)], nu_[c]) for c in range(b.nu)]
        else:   # a root: Udot = D^-1 (eps - (P S)^T alpha+), the same without forming G (6 x 6 for a free joint)
            w = [T.dot([(-1.0, T.mul(PS[c][i], ap[i])) for i in range(6)], eps[c]) for c in range(b.nu)]
            udot = [_dot(T, Dinv[c], w) for c in range(b.nu)]
        for c, x in enumerate(udot):
            T.store(f"out[{b.u0 + c}]", x)
        alpha[b.k] = [T.name(x, f"alpha{b.k}_{i}")
                      for i, x in enumerate(_colsum(T, K["S"], udot, [T.add(x, y) for x, y in zip(ap, K["a"])]))]
    T.effect(("return 0;",))


def rnea(T: Tape, bodies, nu: int):
    """Newton-Euler inverse dynamics: T from (Q, U, Udot, f_ext, g).  p = [g (3), Udot (nU), f_ext]."""
    u = [T.input(f"u[{i}]") for i in range(nu)]
    udot = [T.input(f"p[{3 + i}]") for i in range(nu)]
    T.comment("kinematics base to tip: X_pb, S, V, a (Coriolis), b (gyroscopic)")
    kin = velocities(T, bodies, u)
    T.comment("base to tip: alpha = phi^T alpha_parent + S Udot + a;  f = M alpha + b - f_ext")
    g0 = [0.0, 0.0, 0.0] + [T.neg(T.input(f"p[{i}]")) for i in range(3)]
    alpha, f = [None] * len(bodies), [None] * len(bodies)
    for b in bodies:
        K = kin[b.k]
        ap = phiT(T, K["R"], K["l"], alpha[b.parent] if b.parent >= 0 else g0)
        alpha[b.k] = [T.name(x, f"alpha{b.k}_{i}") for i, x in
                      enumerate(_colsum(T, K["S"], udot[b.u0:b.u0 + b.nu], [T.add(x, y) for x, y in zip(ap, K["a"])]))]
        fe = [T.input(f"p[{3 + nu + 6 * b.k + i}]") for i in range(6)]
        f[b.k] = [T.dot([(1.0, x), (1.0, y), (-1.0, e)]) for x, y, e in
                  zip(matvec(T, b.M, alpha[b.k]), K["b"], fe)]
    T.comment("tip to base: f_parent += phi f;  T = S^T f")
    fc = [[] for _ in bodies]
    for b in reversed(bodies):
        K = kin[b.k]
        fk = [T.name(x, f"f{b.k}_{i}") for i, x in enumerate(_accumulate(T, f[b.k], fc[b.k]))]
        for c in range(b.nu):   # T = S^T f + A Udot
            T.store(f"out[{b.u0 + c}]", T.dot([(b.arm(c), udot[b.u0 + c])], _dot(T, K["S"][c], fk)))
        if b.parent >= 0:
            fc[b.parent].append(phi(T, K["R"], K["l"], fk))


def crba_steps(bodies) -> int:
    """Ancestor-walk steps of the composite-body mass matrix (columns x depth)."""
    depth = [0] * len(bodies)
    for b in bodies:
        depth[b.k] = 0 if b.parent < 0 else depth[b.parent] + 1
    return sum(b.nu * depth[b.k] for b in bodies)


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
            pairs += [(-m, T.mul(l[i], l[j])), (-1.0, T.mul(l[i], hr[j])), (-1.0, T.mul(hr[i], l[j]))]
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


def _ancestors(bodies, b):
    """b's strict ancestors, nearest first."""
    out = []
    while b.parent >= 0:
        b = bodies[b.parent]
        out.append(b)
    return out


def crba(T: Tape, bodies, nu: int):
    """Composite rigid body mass matrix (nU x nU): Ic = M + sum phi Ic_child phi^T (kept rigid: m, h, J);
    F = Ic S;  M[k, k] = S^T F;  walking up the ancestors j: F = phi F, M[j, k] = M[k, j]^T = S_j^T F."""
    related = sum(b.nu * (a.nu if a is not b else 0) for b in bodies for a in _ancestors(bodies, b)) * 2 \
        + sum(b.nu * b.nu for b in bodies)
    # a fill loop first when at least 40% of M is structural zeros (measured: 8% faster on the humanoid, half
    # zeros; slower on the quadruped, a third zeros, where a store per zero is cheaper)
    fill = 5 * (nu * nu - related) >= 2 * nu * nu
    if fill:
        T.effect((f"{{ int i; for (i = 0; i < {nu * nu}; ++i) out[i] = 0.0; }}  /* structural zeros; the rest follows */",))
    T.comment("kinematics base to tip: X_pb, S")
    kin = [dict(zip(("R", "l", "S"), joint(T, b)[:3])) for b in bodies]
    T.comment("composite inertias tip to base: (m, h, J)c = (m, h, J) + sum phi (m, h, J)c_child phi^T")
    Ic, acc = [None] * len(bodies), [[] for _ in bodies]
    for b in reversed(bodies):
        K = kin[b.k]
        m, h, J = rigid_parts(b.M)
        m = m + sum(c[0] for c in acc[b.k])
        h = [T.name(T.dot([(1.0, c[1][i]) for c in acc[b.k]], h[i]), f"hc{b.k}_{i}") for i in range(3)]
        J = [[T.dot([(1.0, c[2][i][j]) for c in acc[b.k]], J[i][j]) for j in range(3)] for i in range(3)]
        J = [[T.name(J[min(i, j)][max(i, j)], f"Jc{b.k}_{min(i, j)}{max(i, j)}") for j in range(3)] for i in range(3)]
        Ic[b.k] = (m, h, J)
        if b.parent >= 0:
            acc[b.parent].append((m, *rigid_phi(T, K["R"], K["l"], m, h, J)))
    T.comment("columns: F = Ic S, moved up the ancestors; M[j, k] = S_j^T F")
    done = set()
    for b in bodies:
        if not b.nu:
            continue
        F = [rigid_apply(T, *Ic[b.k], s) for s in kin[b.k]["S"]]
        j = b
        while True:
            for r in range(j.nu):
                for c in range(b.nu):
                    v = _dot(T, kin[j.k]["S"][r], F[c], b.arm(c) if (j is b and r == c) else 0.0)  # + A
                    row, col = j.u0 + r, b.u0 + c
                    T.store(f"out[{row * nu + col}]", v)
                    done.add((row, col))
                    if row != col:
                        T.store(f"out[{col * nu + row}]", v)
                        done.add((col, row))
            if j.parent < 0:
                break
            F = [phi(T, kin[j.k]["R"], kin[j.k]["l"], f) for f in F]
            j = bodies[j.parent]
    assert len(done) == related
    if not fill:
        for r in range(nu):
            for c in range(nu):
                if (r, c) not in done:
                    T.store(f"out[{r * nu + c}]", 0.0)
