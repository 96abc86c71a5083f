"""Closed chains: cut-joint loop constraints and tree-augmented (TA) forward dynamics, traced into C.

A loop (Karana's LoopConstraintCutJoint) names a source frame S on body A, a target frame T on body B and a
cut-joint hinge h that runs from S (its oframe) to a frame E (its pframe).  The loop is closed when E
coincides with T (A or B may be the newtonian, index -1: a loop to the ground, whose node has no body, zero
velocity, the newtonian's acceleration and no columns in M^-1); the constrained directions are the ortho complement ``OC`` of h's coord map (6 x n_res,
``n_res = 6 - nU(h)``): LOCKED welds the frames, BALL joins the origins, PIN joins the origins and aligns
the axes.

Kinematics of a loop (all traced from the tree's per-body kinematics, :mod:`symgen.algorithms.soa`):

* ``X_ST = (R_ST, l_ST)``: T's pose in S, through the nearest common ancestor of A and B;
* ``W = V_T - phi^T(S, T) V_S``: T's velocity relative to S, in T axes at T's origin (linear in U);
* ``Wdot = alpha_T - phi^T(S, T) alpha_S + crm(W) phi^T(S, T) V_S`` (Featherstone: d/dt X_TS = -crm(W) X_TS);
* the cut joint's best-fit Q (Gauss-Newton on its own kernels, ``sg_cut_fit_q``), so ``X_SE = X_h(Q_h)``;
  its best-fit U and Udot are least squares on its coord map as seen at T;
* the error f2f E -> T (Karana's ``errorFrameToFrame``), in E axes:
  ``pose_error = [log R_ET; l_ET]``, ``vel_error``, ``accel_error`` = the part of T's relative velocity
  (acceleration) that the hinge does not explain.

TA forward dynamics (Jain; ``../shared/reference/soa_atbi_notes.md`` 3.7), one C function per model:

1. free accelerations: the ATBI with T, f_ext and gravity (:func:`symgen.algorithms.soa.atbi_factor`, ...);
2. the compliance ``Lambda = G_c M^-1 G_c^T`` (its lower triangle) from the operational-space compliance
   Upsilon on the same factorization (:func:`compliance`): each constraint row K_i (``K = OC^T`` in target
   axes) is a unit force ``K_i^T`` at T on body B and its opposite at S on body A, moved up through psi to
   the nearest common ancestor of each pair of node bodies, through Upsilon there and down through psi^T;
   a row of Lambda is K of the resulting relative accelerations;
3. ``Lambda lambda = stab - K a_free`` by a pivoted Cholesky on the lower triangle (``sg_psd_solve``): redundant rows (a pivot
   below ``RANK_TOL`` times the largest diagonal of Lambda) get lambda = 0, and the rank is returned;
4. the correction ``Udot = Udot_free + M^-1 G_c^T lambda``: one more M^-1 pass with the node forces.

``stab = -2 zeta omega_n K vel_error - omega_n^2 K pose_error`` (Baumgarte), computed only when a gain is
not zero.  For a cut hinge whose coord map is constant (LOCKED, PIN, SLIDER, BALL, ...) the acceleration
constraint is written with E = T (its rows K = OC^T are constants and fold); other cut hinges (UJOINT,
CUSTOM, ...) fit Q_h first.  Both are exact at states that satisfy the loop.

The multipliers lambda are the constrained components of the constraint force on the target node, in the
target frame: ``f_T = K^T lambda`` acts on body B at T, ``-f_T`` on body A (moved to S), and
``M Udot + C = T + G_c^T lambda`` with ``G_c = K J_rel``.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import soa
from .soa import _dot, _mat3, crm, phi, phiT
from ..ir.tape import Ptr

#: a pivot of the compliance Lambda below this fraction of its largest diagonal entry marks a redundant
#: constraint row (its lambda is 0); the number of pivots kept is the reported rank
RANK_TOL = 1e-10


@dataclass
class LoopInfo:
    """What the tracer knows of one loop constraint."""

    i: int                  # index in the model's loops
    name: str
    A: int                  # source body index (-1: the newtonian, the ground)
    B: int                  # target body index (-1: the newtonian)
    AS_R: list              # source frame pose on body A (R 9, l 3)
    AS_l: list
    BT_R: list              # target frame pose on body B
    BT_l: list
    slug: str               # cut hinge spec
    nq: int
    nu: int
    neutral_q: list
    has_sanitize: bool
    X_const: list           # 16 entries of the hinge transform, float or None per entry
    H_const: list           # 6 x nU coord map (pframe), float or None per entry
    Hd_const: list          # its time derivative
    OC_const: list          # 6 x n_res ortho complement, float or None per entry

    @property
    def n_res(self) -> int:
        return 6 - self.nu

    def kernel(self, name: str) -> str:
        """The name of one of the cut hinge's kernels (``transform``, ``coord_map``, ...; symgen.sources)."""
        return f"sg_{self.slug}_{name}"

    @property
    def constant_map(self) -> bool:
        """The coord map is constant: no fit needed for the acceleration constraint (E = T there)."""
        return all(x is not None for x in self.H_const) and all(x is not None for x in self.OC_const)


# ---- small spatial helpers ----------------------------------------------------------------------------

def _compose(T, R1, l1, R2, l2):
    """(R1, l1) o (R2, l2) = (R1 R2, l1 + R1 l2)."""
    return _mat3(T, R1, R2), [T.dot(list(zip(R1[3 * i:3 * i + 3], l2)), l1[i]) for i in range(3)]


def _path(bodies, k):
    """Body k and its ancestors, root first."""
    out = []
    while k >= 0:
        out.append(k)
        k = bodies[k].parent
    return out[::-1]


def _pose_in(T, bodies, kin, k, c):
    """Pose of body k in body c (an ancestor of k, or -1: the newtonian) from the joints' X_pb."""
    path = _path(bodies, k)
    path = path[path.index(c) + 1:] if c >= 0 else path
    R, l = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.0]
    for j in path:
        R, l = _compose(T, R, l, kin[j]["R"], kin[j]["l"])
    return R, l


def _common_ancestor(bodies, a, b):
    pa, pb = _path(bodies, a), _path(bodies, b)
    c = -1
    for x, y in zip(pa, pb):
        if x != y:
            break
        c = x
    return c


def _rot(R, v, T):
    """R v (R row-major 3x3)."""
    return [_dot(T, R[3 * i:3 * i + 3], v) for i in range(3)]


def _rotT(R, v, T):
    """R^T v."""
    return [_dot(T, R[i::3], v) for i in range(3)]


def _sub(T, a, b):
    return [T.dot([(1.0, x), (-1.0, y)]) for x, y in zip(a, b)]


def _unit(k):
    return [1.0 if i == k else 0.0 for i in range(6)]


# ---- loop kinematics ----------------------------------------------------------------------------------

def relative_pose(T, bodies, kin, L: LoopInfo):
    """X_ST = (R_ST, l_ST): the target frame's pose in the source frame."""
    c = _common_ancestor(bodies, L.A, L.B)
    RA, lA = _pose_in(T, bodies, kin, L.A, c)
    RB, lB = _pose_in(T, bodies, kin, L.B, c)
    RS, lS = _compose(T, RA, lA, L.AS_R, L.AS_l)
    RT, lT = _compose(T, RB, lB, L.BT_R, L.BT_l)
    RSt = [RS[3 * j + i] for i in range(3) for j in range(3)]
    return _mat3(T, RSt, RT), _rot(RSt, _sub(T, lT, lS), T)


def _of(V, k, ground):
    """Body k's entry of V; a node on the newtonian (k = -1) has no body: ``ground`` (zero velocity, or the
    newtonian's acceleration: gravity's [0; -g] in a pass that runs with it)."""
    return ground if k < 0 else V[k]


def node_velocities(T, X, L: LoopInfo, V, ground=None):
    """(V_S at S in S axes, V_T at T in T axes) from the bodies' velocities (or accelerations) V; ``ground``:
    the newtonian's (default zero) for a node on it."""
    g = [0.0] * 6 if ground is None else ground
    return phiT(T, L.AS_R, L.AS_l, _of(V, L.A, g)), phiT(T, L.BT_R, L.BT_l, _of(V, L.B, g))


def relative_velocity(T, X, L, V):
    """W = V_T - phi^T(S, T) V_S and phi^T(S, T) V_S."""
    VS, VT = node_velocities(T, X, L, V)
    XV = phiT(T, X[0], X[1], VS)
    return _sub(T, VT, XV), XV


def relative_acceleration(T, X, L, alpha, W=None, XV=None, ground=None):
    """Wdot = alpha_T - phi^T(S, T) alpha_S (+ crm(W) phi^T(S, T) V_S when velocities are given); ``ground``:
    the newtonian's acceleration in the pass that made ``alpha`` (gravity's [0; -g] in the ATBI's)."""
    aS, aT = node_velocities(T, X, L, alpha, ground)
    out = _sub(T, aT, phiT(T, X[0], X[1], aS))
    if W is not None:
        out = [T.add(x, y) for x, y in zip(out, crm(T, W, XV))]
    return out


class CutFrame:
    """The cut joint's frame E and the constraint rows of one loop at one state, as traced values.

    With ``fit`` (always for a non-constant coord map) the hinge's Q_h is fitted in C (``sg_cut_fit_q``) and
    its kernels are called on it; else E = T and everything is a constant of the hinge type."""

    def __init__(self, T, L: LoopInfo, X, model: str, fit: bool):
        self.L, self.T = L, T
        self._fits = 0              # least-squares fits emitted so far (their C arrays are numbered)
        n, r, i = L.nu, L.n_res, L.i
        if fit and n:
            T.local_arrays([(f"Xst{i}", 12), (f"qh{i}", max(L.nq, 1))], f"loop '{L.name}': X_ST; the cut joint's Q")
            for j, x in enumerate(X[0] + X[1]):
                T.store(f"Xst{i}[{j}]", x)
            T.invoke("sg_cut_fit_q", [L.nq, n, f"sg_{model}_loop{i}_q0", L.kernel("transform"),
                                      L.kernel("coord_map"), L.kernel("qdot_map"),
                                      L.kernel("sanitize") if L.has_sanitize else None, f"Xst{i}", f"qh{i}"])
            T.local_arrays([(f"Xh{i}", 16), (f"Hh{i}", 6 * n), (f"OCh{i}", max(6 * r, 1))])
            T.invoke(L.kernel("transform"), [f"qh{i}", None, None, f"Xh{i}"])
            T.invoke(L.kernel("coord_map"), [f"qh{i}", None, None, f"Hh{i}"])
            if r:
                T.invoke(L.kernel("ortho_complement"), [f"qh{i}", None, None, f"OCh{i}"])
            Xh = [T.input(f"Xh{i}[{j}]") for j in range(16)]
            Rh, lh = [Xh[4 * a + b] for a in range(3) for b in range(3)], [Xh[4 * a + 3] for a in range(3)]
            self.R_ET = _mat3(T, [Rh[3 * b + a] for a in range(3) for b in range(3)], X[0])   # R_h^T R_ST
            self.l_ET = _rotT(Rh, _sub(T, X[1], lh), T)
            H = [L.H_const[j] if L.H_const[j] is not None else T.input(f"Hh{i}[{j}]") for j in range(6 * n)]
            OC = [L.OC_const[j] if L.OC_const[j] is not None else T.input(f"OCh{i}[{j}]") for j in range(6 * r)]
            self.fitted = True
        elif fit:                   # a cut joint without coordinates: E = S X_h, X_h a constant (LOCKED: 1)
            Rh = [L.X_const[4 * a + b] for a in range(3) for b in range(3)]
            lh = [L.X_const[4 * a + 3] for a in range(3)]
            self.R_ET = _mat3(T, [Rh[3 * b + a] for a in range(3) for b in range(3)], X[0])
            self.l_ET = _rotT(Rh, _sub(T, X[1], lh), T)
            H, OC = list(L.H_const), list(L.OC_const)
            self.fitted = False
        else:                       # the acceleration constraint of a constant coord map: E = T
            self.R_ET, self.l_ET = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.0]
            H, OC = list(L.H_const), list(L.OC_const)
            self.fitted = False
        self.H = [[H[a * n + c] for a in range(6)] for c in range(n)]          # columns, pframe E
        #: the ortho complement's columns (E axes)
        self.OC = [[OC[a * r + c] for a in range(6)] for c in range(r)]
        #: constraint rows acting on a motion vector at T in T axes: K = OC^T R_ET-bar
        self.K = [self._rows_on_T(col) for col in self.OC]
        #: the hinge's directions seen at T, in E axes (Karana: the constraint hinge's coord map at the error f2f)
        self.Hhat = [self.to_E(phiT(T, self.R_ET, self.l_ET, h)) for h in self.H]

    def _rows_on_T(self, oc):
        """oc^T R_ET-bar as a row acting on T-axes vectors: [R_ET^T oc_w; R_ET^T oc_v]."""
        return _rotT(self.R_ET, oc[:3], self.T) + _rotT(self.R_ET, oc[3:], self.T)

    def to_E(self, v):
        """A motion vector at T in T axes -> at T in E axes."""
        return _rot(self.R_ET, v[:3], self.T) + _rot(self.R_ET, v[3:], self.T)

    def rows(self, v):
        """K v: the constrained components of a T-axes vector."""
        return [_dot(self.T, k, v) for k in self.K]

    def constrained(self, v_E):
        """OC^T v: the constrained components of an E-axes vector (an error of the error f2f)."""
        return [_dot(self.T, oc, v_E) for oc in self.OC]

    def fit_u(self, v_E, name):
        """Least-squares U of the hinge with Hhat U = v_E (a traced 6-vector in E axes), in C."""
        T, n = self.T, self.L.nu
        if not n:
            return []
        self._fits += 1
        i = f"{self.L.i}_{self._fits}"
        if not self.fitted and all(isinstance(x, float) for h in self.Hhat for x in h):
            import numpy as np

            Hp = np.linalg.pinv(np.array(self.Hhat, dtype=float).T)          # constant pseudo-inverse
            return [T.dot([(float(Hp[c, a]), v_E[a]) for a in range(6) if abs(Hp[c, a]) > 1e-15]) for c in range(n)]
        T.local_arrays([(f"{name}{i}_H", 6 * n), (f"{name}{i}_v", 6), (f"{name}{i}", n)])
        for a in range(6):
            for c in range(n):
                T.store(f"{name}{i}_H[{a * n + c}]", self.Hhat[c][a])
            T.store(f"{name}{i}_v[{a}]", v_E[a])
        T.invoke("sg_lstsq6", [n, f"{name}{i}_H", f"{name}{i}_v", f"{name}{i}"])
        return [T.input(f"{name}{i}[{c}]") for c in range(n)]

    def pose_error(self, arr, off=0):
        """[log R_ET; l_ET] (traced): the rotation log is computed in C (``sg_rotation_log``) into
        ``arr[off:off + 3]`` (a C array the caller owns) and read back from there."""
        T, i = self.T, self.L.i
        T.local_arrays([(f"Ret{i}", 9)])
        for j, x in enumerate(self.R_ET):
            T.store(f"Ret{i}[{j}]", x)
        T.invoke("sg_rotation_log", [f"Ret{i}", Ptr(arr, off)])
        return [T.input(f"{arr}[{off + a}]") for a in range(3)] + self.l_ET

    def unexplained(self, v_E):
        """v_E - Hhat Hhat^+ v_E: what the cut joint's best-fit motion leaves of an E-axes vector (its
        velocity error for T's relative velocity; its acceleration error for a_E)."""
        if not self.L.nu:
            return v_E
        return _sub(self.T, v_E, soa._colsum(self.T, self.Hhat, self.fit_u(v_E, "ux")))

    def free_acceleration(self, W, Wdot, uh=None):
        """a_T = Wdot - phi^T(E, T) (Hdot U_h) + crm(V_rel) phi^T(E, T) H U_h: T's acceleration relative to S
        less the hinge's velocity-product part (T axes), with U_h its best fit; returns (a_T, U_h)."""
        T, L = self.T, self.L
        uh = self.fit_u(self.to_E(W), "uh") if uh is None else uh
        if not L.nu:
            return Wdot, uh
        HU = phiT(T, self.R_ET, self.l_ET, soa._colsum(T, self.H, uh))
        Vrel = _sub(T, W, HU)
        a = [T.add(x, y) for x, y in zip(Wdot, crm(T, Vrel, HU))]
        if all(x == 0.0 for x in L.Hd_const if x is not None) and all(x is not None for x in L.Hd_const):
            return a, uh
        i = L.i
        T.local_arrays([(f"uhb{i}", L.nu), (f"bh{i}", 6)])
        for c, x in enumerate(uh):
            T.store(f"uhb{i}[{c}]", x)
        T.invoke(L.kernel("bias"), [f"qh{i}", f"uhb{i}", None, f"bh{i}"])
        bias = phiT(T, self.R_ET, self.l_ET, [T.input(f"bh{i}[{a}]") for a in range(6)])
        return _sub(T, a, bias), uh


# ---- the traced functions -----------------------------------------------------------------------------

def _alpha_pass(T, bodies, kin, udot):
    """alpha base to tip (:func:`symgen.algorithms.soa.rnea_base`; its forces are dead code and dropped) with no
    gravity: the loops need relative accelerations only."""
    alpha = [None] * len(bodies)
    for b in bodies:
        alpha[b.k], _ = soa.rnea_base(T, b, kin[b.k], alpha[b.parent] if not b.root else [0.0] * 6,
                                      udot[b.u0:b.u0 + b.nu], [0.0] * 6)
    return alpha


def loop_errors(T, bodies, loops, nu, io, model, layout):
    """``sg_<m>_loop_errors(q, u, p = Udot, out)``: per loop (layout ``loop_errors``) the error f2f's pose,
    velocity and acceleration errors (6 each, E axes), the cut joint's best-fit Q, U, Udot and the
    constrained parts (K times each error)."""
    u, udot = io.u(T), [T.input(f"p[{i}]") for i in range(nu)]
    kin = soa.velocities(T, bodies, u)
    alpha = _alpha_pass(T, bodies, kin, udot)
    V = [k["V"] for k in kin]
    for L in loops:
        R = layout.loop_errors[L.i]
        o = layout.loop_error_offset[L.i]
        T.comment(f"loop '{L.name}': X_ST, W, Wdot; the cut joint's best fit; the error f2f E -> T")
        X = relative_pose(T, bodies, kin, L)
        W, XV = relative_velocity(T, X, L, V)
        Wdot = relative_acceleration(T, X, L, alpha, W, XV)
        cf = CutFrame(T, L, X, model, fit=True)
        pose = cf.pose_error("out", o + R["pose"])
        for a in range(3):
            T.store(f"out[{o + R['pose'] + 3 + a}]", cf.l_ET[a])
        WE = cf.to_E(W)
        uh = cf.fit_u(WE, "uh")
        vel = _sub(T, WE, soa._colsum(T, cf.Hhat, uh))
        aT, _ = cf.free_acceleration(W, Wdot, uh)
        aE = cf.to_E(aT)
        udh = cf.fit_u(aE, "udh")
        acc = _sub(T, aE, soa._colsum(T, cf.Hhat, udh))
        for name, vec in (("vel", vel), ("accel", acc)):
            for a, x in enumerate(vec):
                T.store(f"out[{o + R[name] + a}]", x)
        if L.nq:
            for a in range(L.nq):
                T.store(f"out[{o + R['q'] + a}]", T.input(f"qh{L.i}[{a}]"))
        for name, vec in (("u", uh), ("udot", udh)):
            for a, x in enumerate(vec):
                T.store(f"out[{o + R[name] + a}]", x)
        for name, vec in (("pose_c", pose), ("vel_c", vel), ("accel_c", acc)):     # OC^T (error)
            for a, x in enumerate(cf.constrained(vec)):
                T.store(f"out[{o + R[name] + a}]", x)


def _baumgarte(T, model, nc, g):
    """stab (traced inputs): -2 zeta omega_n K vel_error - omega_n^2 K pose_error from sg_<m>_loop_stab
    (gains at p[g], p[g + 1]), computed only when a gain is not zero."""
    T.local_arrays([("stab", nc)])
    T.invoke_if_nonzero([T.input(f"p[{g}]"), T.input(f"p[{g + 1}]")], f"sg_{model}_loop_stab",
                        ["q", "u", Ptr("p", g), "stab"], zeros=("stab", nc))
    return [T.input(f"stab[{i}]") for i in range(nc)]


def loop_stab(T, bodies, loops, nu, io, model, layout):
    """``sg_<m>_loop_stab(q, u, p = [omega_n, zeta], out)``: the Baumgarte term of every constraint row."""
    u = io.u(T)
    kin = soa.velocities(T, bodies, u)
    V = [k["V"] for k in kin]
    w, z = T.input("p[0]"), T.input("p[1]")
    kp, kd = T.mul(w, w), T.mul(2.0, T.mul(z, w))
    row = 0
    for L in loops:
        T.comment(f"loop '{L.name}': pose and velocity errors of the error f2f, constrained parts")
        X = relative_pose(T, bodies, kin, L)
        W, _ = relative_velocity(T, X, L, V)
        cf = CutFrame(T, L, X, model, fit=True)
        T.local_arrays([(f"rho{L.i}", 3)])
        pose = cf.pose_error(f"rho{L.i}")
        vel = cf.unexplained(cf.to_E(W))
        for e, ed in zip(cf.constrained(pose), cf.constrained(vel)):
            T.store(f"out[{row}]", T.dot([(-1.0, T.mul(kp, e)), (-1.0, T.mul(kd, ed))]))
            row += 1


def _node_forces(T, bodies, loops, cfs, Xs, lam_rows):
    """Body wrenches of the constraint forces: for each loop, f_T = sum_i lam_i K_i^T at T on body B and
    -f_T moved to S on body A.  ``lam_rows``: per loop, its multipliers (floats or traced).  Returns
    ({body: wrench}, [f_T per loop])."""
    forces, fT_all = {}, []
    for L, cf, X, lam in zip(loops, cfs, Xs, lam_rows):
        fT = [T.dot([(k[a], x) for k, x in zip(cf.K, lam)]) for a in range(6)]
        fT_all.append(fT)
        fS = [T.neg(x) for x in phi(T, X[0], X[1], fT)]                      # -f_T at S, S axes
        for k, f in ((L.B, phi(T, L.BT_R, L.BT_l, fT)), (L.A, phi(T, L.AS_R, L.AS_l, fS))):
            if k < 0:                           # the ground's side: it takes the force, nothing moves
                continue
            forces[k] = [T.add(x, y) for x, y in zip(forces[k], f)] if k in forces else f
    return forces, fT_all


def compliance(T, bodies, kin, step, loops, cfs, Xs) -> dict:
    """Lambda = G_c M^-1 G_c^T, its lower triangle {(row, col): value}, from the node-level operational-space
    compliance (``soa_atbi_notes.md`` 3.6-3.7): a unit force in row ``col`` puts wrenches f_m on the loop's node
    bodies m (:func:`_node_forces`); body k then accelerates by ``alpha(k) = sum_m Omega(k, m) f_m`` with
    ``Omega(k, m) = psi^T(c, k) Upsilon(c) psi(c, m)``, c the nearest common ancestor (no common ancestor: 0).
    Down k's path from its root that is ``alpha = psi^T alpha_parent + Upsilon(c) U(c)`` at every c on it,
    U(c) the forces of the bodies m whose nearest common ancestor with k is c, each moved up to c through psi
    (:func:`symgen.algorithms.soa.psi_up`).  Upsilon is computed once, base to tip, for the bodies on the loops'
    paths (:func:`symgen.algorithms.soa.upsilon_step`); a row of Lambda reads K of the loop's relative
    acceleration.  Only the paths between the loops' nodes are walked: against one M^-1 pass per row
    (through the roots), the parts above the common ancestors are Upsilon's, computed once."""
    Y = {}

    def upsilon(k):
        if k not in Y:
            b = bodies[k]
            Y[k] = soa.upsilon_step(T, b, kin[k], step[k], None if b.root else upsilon(b.parent))
        return Y[k]

    out, col = {}, 0
    for L in loops:
        for r in range(L.n_res):
            unit = [[1.0 if (Lq is L and j == r) else 0.0 for j in range(Lq.n_res)] for Lq in loops]
            forces, _ = _node_forces(T, bodies, loops, cfs, Xs, unit)
            up = {}                             # (m, c): psi(c, m) f_m for the ancestors c of m (unread ones are dead code)
            for m, f in forces.items():
                up[m, m] = f
                c, v = m, f
                while bodies[c].parent >= 0:
                    v = soa.psi_up(T, bodies[c], kin[c], step[c], v)
                    c = bodies[c].parent
                    up[m, c] = v
            alpha = [None] * len(bodies)
            rows_left = [Lq for Lq, o in _row_offsets(loops) if o + Lq.n_res > col]
            for k in sorted({kk for Lq in rows_left for kk in (Lq.A, Lq.B) if kk >= 0}):
                a = [0.0] * 6
                path = _path(bodies, k)
                for i, c in enumerate(path):
                    if i:
                        a = soa.psi_down(T, bodies[c], kin[c], step[c], a)
                    below = path[i + 1] if i + 1 < len(path) else None
                    # the forces whose nearest common ancestor with k is c: at c's subtree, not at below's
                    U = [0.0] * 6
                    for m in forces:
                        if (m, c) in up and not (below is not None and (m, below) in up):
                            U = [T.add(x, y) for x, y in zip(U, up[m, c])]
                    if any(not (isinstance(x, float) and x == 0.0) for x in U):
                        a = [T.add(x, y) for x, y in zip(a, soa.matvec(T, upsilon(c), U))]
                alpha[k] = a
            for (Lq, o), cf, X in zip(_row_offsets(loops), cfs, Xs):
                if o + Lq.n_res <= col:
                    continue
                for i, x in enumerate(cf.rows(relative_acceleration(T, X, Lq, alpha))):
                    if o + i >= col:
                        out[o + i, col] = x
            col += 1
    return out


def _row_offsets(loops):
    """(loop, its first row in Lambda) for every loop."""
    o, res = 0, []
    for L in loops:
        res.append((L, o))
        o += L.n_res
    return res


def ta_forward_dynamics(T, bodies, loops, nu, io, model, layout):
    """``sg_<m>_ta_forward_dynamics(q, u, p, out)``: tree-augmented forward dynamics (see the module
    docstring).  p: layout ``ta_params`` (g, T, f_ext, omega_n, zeta); out: layout ``ta_out`` (Udot,
    lambda, f_T per loop, rank)."""
    P, O = layout.ta_params, layout.ta_out
    u, Tin = io.u(T), io.tau(T)
    T.comment("1. free accelerations: kinematics, ATBI tip to base (P, D, G kept), base to tip")
    kin = soa.velocities(T, bodies, u)
    step = soa.atbi_factor(T, bodies, kin, Tin, lambda k: io.f_ext(T, k))
    g0 = soa.gravity_acceleration(T, io.gravity(T))
    udot_f, alpha_f = soa.atbi_accelerations(T, bodies, kin, step, g0)
    V = [k["V"] for k in kin]
    nc = sum(L.n_res for L in loops)
    T.comment("2. each loop: X_ST, W, the constraint rows K and K a_free (T's free acceleration relative to S)")
    Xs, cfs, rhs = [], [], []
    for L in loops:
        X = relative_pose(T, bodies, kin, L)
        W, XV = relative_velocity(T, X, L, V)
        cf = CutFrame(T, L, X, model, fit=not L.constant_map)
        aT, _ = cf.free_acceleration(W, relative_acceleration(T, X, L, alpha_f, W, XV, ground=g0))
        Xs.append(X)
        cfs.append(cf)
        rhs += cf.rows(aT)
    stab = _baumgarte(T, model, nc, P["gains"])
    T.comment("3. compliance Lambda = G_c M^-1 G_c^T from the operational-space compliance Upsilon (Jain):")
    T.local_arrays([("Lam", nc * nc), ("rhs", nc), ("lam", nc)], ints=[("piv", nc), ("rank", None)])
    for (row, col), x in compliance(T, bodies, kin, step, loops, cfs, Xs).items():
        T.store(f"Lam[{row * nc + col}]", x)            # the lower triangle: all that sg_psd_solve reads
    for i in range(nc):
        T.store(f"rhs[{i}]", T.dot([(1.0, stab[i]), (-1.0, rhs[i])]))
    T.comment(f"4. Lambda lambda = stab - K a_free (pivoted Cholesky; redundant rows below {RANK_TOL:g} get 0)")
    T.invoke("sg_psd_solve", [nc, "Lam", "rhs", RANK_TOL, "lam", "piv"], result="rank")
    lam = [T.input(f"lam[{i}]") for i in range(nc)]
    lam_rows, o = [], 0
    for L in loops:
        lam_rows.append(lam[o:o + L.n_res])
        o += L.n_res
    T.comment("5. correction: Udot = Udot_free + M^-1 G_c^T lambda (the node forces through M^-1)")
    forces, fT = _node_forces(T, bodies, loops, cfs, Xs, lam_rows)
    dudot, _ = soa.minv(T, bodies, kin, step, forces)
    for b in bodies:
        for c in range(b.nu):
            T.store(f"out[{O['udot'] + b.u0 + c}]", T.add(udot_f[b.k][c], dudot[b.k][c]))
    for i in range(nc):
        T.store(f"out[{O['lambda'] + i}]", lam[i])
    for j, f in enumerate(fT):
        for a in range(6):
            T.store(f"out[{O['f_target'] + 6 * j + a}]", f[a])
    T.store_int(f"out[{O['rank']}]", "rank")
    T.ret(0)


def loop_jacobian(T, bodies, loops, nu, io, model, layout):
    """``sg_<m>_loop_jacobian(q, u, p, out)``: the constraint Jacobian G_c (n_c x nU, row-major) and the
    velocity-product term gamma (n_c), with the cut joint fitted: ``G_c U`` is the constrained velocity
    error (``OC^T vel_error``, the rate of the constrained pose error: the Newton Jacobian of ``project``
    at any state) and ``G_c Udot + gamma`` the constrained acceleration error.  At a closed state (E = T)
    they are the TA dynamics' own G_c and gamma."""
    u = io.u(T)
    kin = soa.velocities(T, bodies, u)
    V = [k["V"] for k in kin]
    zero = [0.0] * nu
    alpha0 = _alpha_pass(T, bodies, kin, zero)
    nc = sum(L.n_res for L in loops)
    row = 0
    for L in loops:
        T.comment(f"loop '{L.name}': G_c columns from T's relative velocity at unit U; gamma at Udot = 0")
        X = relative_pose(T, bodies, kin, L)
        W, XV = relative_velocity(T, X, L, V)
        cf = CutFrame(T, L, X, model, fit=True)
        aT, _ = cf.free_acceleration(W, relative_acceleration(T, X, L, alpha0, W, XV))
        for r, x in enumerate(cf.constrained(cf.unexplained(cf.to_E(aT)))):
            T.store(f"out[{nc * nu + row + r}]", x)
        for j in range(nu):
            unit = [1.0 if i == j else 0.0 for i in range(nu)]
            Wj, _ = relative_velocity(T, X, L, [k["V"] for k in soa.velocities(T, bodies, unit)])
            for r, x in enumerate(cf.constrained(cf.unexplained(cf.to_E(Wj)))):
                T.store(f"out[{(row + r) * nu + j}]", x)
        row += L.n_res
