"""Hinge -> equations (sympy).

For a bound hinge (:class:`symgen.hinges.HingeSpec`) this module derives, in the hinge's own symbols
``q_0..`` / ``u_0..`` (hinge order, DESIGN.md §2):

==================== ============ ==============================================================
``transform``        4x4          ``X_op = X_1 X_2 ... X_m`` (product of subhinge transforms)
``coord_map``        6 x nU       ``H*_p = [phi^T(p_k, p_m) H_k]_k`` (pnode velocity rel. onode, in pnode)
``oframe_coord_map`` 6 x nU       ``diag(R_op, R_op) H*_p``
``qdot_map``         nQ x nU      ``N``: ``Q_dot = N U`` (block diagonal over subhinges)
``coord_map_dot``    6 x nU       ``d/dt H*_p`` along ``Q_dot = N U``: block k is ``-crm(V_k->m) S_k``
``bias``             6            ``H*_p_dot U = sum_{k<j} crm(S_k U_k) S_j U_j``
``pose_gradient``    6 x nU       ``d[log R_op; l_op]/dQ N = [J_r^-1(log R_op) H_w; dl_op/dQ N]``
``ortho_complement`` 6 x (6-nU)   columns ``c`` with ``c^T H*_p = 0`` (constraint wrenches, pnode)
``sanitize``         nQ           equivalent coordinates (|r| <= pi for SPHERICAL, unit q for quaternions)
==================== ============ ==============================================================

Every subhinge's own map ``H_k`` is constant in its pframe, so the coord map, its derivative and the bias
are closed forms (no symbolic differentiation, no simplification).  The tests check each against
differentiation of the transform.  Derivations are cached on disk; see :func:`cache_dir`.
"""
from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
import time
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import sympy as sp

from .. import __version__, progress
from ..symbolic import spatial as S
from . import HingeSpec, bind

KERNELS = ("transform", "coord_map", "oframe_coord_map", "qdot_map", "coord_map_dot", "bias", "pose_gradient",
           "ortho_complement")
#: kernels whose value depends on U as well as Q
NEEDS_U = frozenset({"coord_map_dot", "bias"})
#: the derivative kernels (symgen.codegen.kernels.DERIVATIVE_KERNELS, qdot_dq) that read U
NEEDS_U_DQ = frozenset({"coord_map_dot_dq", "qdot_dq"})


# --------------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------------

def _num(x):
    """A float parameter as a sympy number: exact integer where it is one (keeps expressions clean)."""
    if x is None:
        return None
    return sp.Integer(int(x)) if float(x).is_integer() else sp.Float(x)


def _vec(v):
    return None if v is None else sp.Matrix([_num(x) for x in v])


def _compose(A, B):
    """``(R_a, l_a) * (R_b, l_b) = (R_a R_b, l_a + R_a l_b)``."""
    return A[0] * B[0], A[1] + A[0] * B[1]


def _hstack(blocks, rows):
    out = sp.zeros(rows, 0)
    for b in blocks:
        out = out.row_join(b)
    return out


def _constant_complement(M: sp.Matrix) -> sp.Matrix:
    """Orthonormal basis (columns) of the complement of the columns of a constant matrix."""
    n = M.shape[0]
    if M.shape[1] == 0:
        return sp.eye(n)
    basis = (M.T).nullspace()
    if not basis:
        return sp.zeros(n, 0)
    if all(x.is_Rational for v in basis for x in v):
        basis = sp.GramSchmidt(basis, orthonormal=True)
    else:  # float axes: orthonormalize numerically, keep Floats
        arr = np.array([[float(x) for x in v] for v in basis]).T
        qm, _ = np.linalg.qr(arr)
        basis = [sp.Matrix([_num(round(x, 17)) for x in qm[:, j]]) for j in range(qm.shape[1])]
    return _hstack(basis, n)


def _fraction_free_nullspace(M: sp.Matrix) -> sp.Matrix:
    vecs = []
    for v in (M.T).nullspace(simplify=True):
        v = v.applyfunc(sp.together)
        den = sp.lcm([sp.fraction(x)[1] for x in v])
        vecs.append((v * den).applyfunc(sp.cancel))
    return _hstack(vecs, M.shape[0])


# --------------------------------------------------------------------------------------------------
# the derivation
# --------------------------------------------------------------------------------------------------

def derive(spec: HingeSpec) -> dict:
    """All symbolic kernels of a bound hinge (see the module docstring); pure function of ``spec``."""
    nq, nu = spec.nq, spec.nu
    q = sp.Matrix(sp.symbols(f"q_0:{nq}", real=True)) if nq else sp.zeros(0, 1)
    u = sp.Matrix(sp.symbols(f"u_0:{nu}", real=True)) if nu else sp.zeros(0, 1)
    q_sub = [q[i] for i in spec.q_order]
    u_sub = [u[i] for i in spec.u_order]

    kins, iq, iu = [], 0, 0
    for sub in spec.subhinges:
        info = sub.info
        qk = q_sub[iq:iq + info.nq]
        if sub.ref is not None:          # the compound hinge's ref: the subhinge moves by Q - ref
            qk = [qk[0] - _num(sub.ref)]
        kin = _anchored(info.kinematics(qk, _vec(sub.axis), _num(sub.pitch)), sub.anchor)
        kins.append((sub, kin, list(range(iq, iq + info.nq)), list(range(iu, iu + info.nu))))
        iq, iu = iq + info.nq, iu + info.nu

    # transform X_op and the suffix transforms X_{p_k p_m} (pose of the pnode in subhinge k's pframe)
    m = len(kins)
    suffix = [None] * m
    acc = (sp.eye(3), sp.zeros(3, 1))
    for k in range(m - 1, -1, -1):
        suffix[k] = acc
        acc = _compose((kins[k][1].R, kins[k][1].l), acc)
    R_op, l_op = acc

    # coord map blocks S_k = phi^T(p_k, p_m) H_k and their time derivatives -crm(V_{k->m}) S_k
    S_blocks = [S.phi_T(*suffix[k]) * kins[k][1].H for k in range(m)]
    V_blocks = [S_blocks[k] * sp.Matrix(len(kins[k][3]), 1, [u_sub[i] for i in kins[k][3]]) for k in range(m)]
    Sdot_blocks, V_after = [None] * m, sp.zeros(6, 1)
    for k in range(m - 1, -1, -1):
        Sdot_blocks[k] = -S.crm(V_after) * S_blocks[k]
        V_after = V_after + V_blocks[k]
    bias = sp.zeros(6, 1)
    for k in range(m):
        for j in range(k + 1, m):
            bias += S.crm(V_blocks[k]) * V_blocks[j]

    H_sub, Hdot_sub = _hstack(S_blocks, 6), _hstack(Sdot_blocks, 6)
    N_sub = sp.zeros(nq, nu)
    for _, kin, qi, ui in kins:
        if qi:
            N_sub[qi[0]:qi[-1] + 1, ui[0]:ui[-1] + 1] = kin.N

    # hinge order (BUSHING lists rotations first)
    H, Hdot, N = sp.zeros(6, nu), sp.zeros(6, nu), sp.zeros(nq, nu)
    for j in range(nu):
        H[:, spec.u_order[j]] = H_sub[:, j]
        Hdot[:, spec.u_order[j]] = Hdot_sub[:, j]
    for i in range(nq):
        for j in range(nu):
            N[spec.q_order[i], spec.u_order[j]] = N_sub[i, j]

    if spec.reversed:
        return _reversed(spec, q, u, R_op, l_op, H, N, _ortho_complement(spec, kins, H), _sanitize(spec, q_sub))
    return _kernels(spec, q, u, R_op, l_op, H, N, Hdot, bias, _ortho_complement(spec, kins, H),
                    _sanitize(spec, q_sub))


def _kernels(spec, q, u, R, l, H, N, Hdot, bias, C, sanitize) -> dict:
    """The derivation's result (:data:`KERNELS` and the symbols) from X_op = (R, l), H*_p, N, its derivative,
    the bias, the ortho complement and the sanitize step."""
    return {
        "q": q, "u": u,
        "transform": S.transform4(R, l),
        "coord_map": H,
        "oframe_coord_map": sp.diag(R, R) * H,
        "qdot_map": N,
        "coord_map_dot": Hdot,
        "bias": bias,
        "pose_gradient": _pose_gradient(spec, R, l, H, N, q),
        "ortho_complement": C,
        "sanitize": sanitize,
    }


def _reversed(spec, q, u, R, l, H, N, C, sanitize):
    """The kernels of a reversed hinge (Simbody ``Direction::Reverse``) from the forward one's X = (R, l), H, N
    and ortho complement C: Q and U move the onode in the pnode, so

        X_op' = X^-1 = (R^T, -R^T l)
        H*_p' = -[[R, 0], [l~ R, R]] H            (the pnode's velocity relative to the onode, in the pnode)
        C'    = -phi(R, l) C                      (C'^T H' = C^T H = 0)

    N and the sanitize step are the forward hinge's; d/dt H*_p' and the bias by differentiation along
    Q_dot = N U (H' is no longer constant per subhinge); the pose gradient as for any hinge."""
    Rt = R.T
    A = sp.zeros(6, 6)
    A[:3, :3], A[3:, :3], A[3:, 3:] = -R, -S.skew(l) * R, -R
    Hr = A * H
    Hdot = sp.zeros(6, H.shape[1])
    qdot = N * u
    for i in range(q.shape[0]):
        Hdot += Hr.diff(q[i]) * qdot[i]
    phi = sp.zeros(6, 6)
    phi[:3, :3], phi[:3, 3:], phi[3:, 3:] = R, S.skew(l) * R, R
    return _kernels(spec, q, u, Rt, -Rt * l, Hr, N, Hdot, Hdot * u, -phi * C, sanitize)


def _anchored(kin, anchor):
    """A subhinge turned about the line through ``anchor`` instead of its oframe origin:
    ``T(p) X T(-p)``, so ``R`` is unchanged, ``l' = l + p - R p``, and the pframe coord map (still constant)
    is ``H' = [[I, 0], [p~, I]] H`` (the pframe moved by ``-p``)."""
    if anchor is None:
        return kin
    from .subhinges import SubhingeKinematics

    p = _vec(anchor)
    A = sp.eye(6)
    A[3:, :3] = S.skew(p)
    return SubhingeKinematics(kin.R, kin.l + p - kin.R * p, A * kin.H, kin.N)


def _common_anchor(spec):
    """The one anchor every anchored subhinge shares (None when none is anchored), or False when they differ.
    A subhinge without an anchor that rotates counts as anchored at the origin."""
    anchors = {s.anchor or (0.0, 0.0, 0.0) for s in spec.subhinges if s.info.rotation is not None}
    if not any(s.anchor for s in spec.subhinges):
        return None
    return anchors.pop() if len(anchors) == 1 else False


def _pose_gradient(spec, R_op, l_op, H, N, q):
    """``G = [J_r^-1(log R_op) H_w; (dl_op/dQ) N]``.

    When every rotating subhinge turns about its axis only (``SubhingeType.rotation == "axis"``: PIN, SCREW)
    and the axes are one common axis ``a``, ``log R_op`` is parallel to ``a`` and ``J_r^-1(log R) a = a``, so
    the rotation rows are exactly ``H_w`` for any angle (no 2 pi wrap issue).  Otherwise the rotation rows
    use :func:`spatial.rotation_jr_inv`.
    """
    rot = [s for s in spec.subhinges if s.info.rotation is not None]
    Hw = H[:3, :]
    single_axis = all(s.info.rotation == "axis" for s in rot) and all(
        np.linalg.norm(np.cross(rot[0].axis, s.axis)) < 1e-12 for s in rot)
    G_rot = Hw if single_axis else S.rotation_jr_inv(R_op) * Hw
    G_lin = l_op.jacobian(q) * N if q.shape[0] else sp.zeros(3, H.shape[1])
    return G_rot.col_join(G_lin)


def _ortho_complement(spec, kins, H):
    """Columns spanning ``{f : f^T H*_p = 0}`` (constraint wrenches ``[N; F]`` in the pnode).

    1. constant coord map: an orthonormal constant basis;
    2. pure translations (LINEAR, LINEAR3: ``SubhingeType.pure_translation``) followed by pure rotations
       (PIN, SPHERICAL, SPHERICAL_QUAT: ``pure_rotation``; at most 3 rotational and 3 translational
       directions): forces ``R_op^T n`` for
       ``n`` perpendicular to the translation directions (onode frame), moments perpendicular to the
       rotation axes (constant for one PIN, ``w_1 x w_2`` for two);
    3. otherwise the symbolic null space of ``H^T`` with denominators cleared.

    Rules 1–2 cover every named hinge type and have full rank wherever the coord map has; rule 3 (some
    CUSTOM sequences) may lose rank at isolated configurations.  Columns are not normalized.
    """
    nu = H.shape[1]
    if nu == 6:
        return sp.zeros(6, 0)
    if not H.free_symbols:
        return _constant_complement(H)
    common = _common_anchor(spec)
    if common:
        # every rotating subhinge turns about one point p: the hinge is T(p) X_plain T(-p), H = A H_plain with
        # A = [[I, 0], [p~, I]], so OC = A^-T OC_plain = [[I, p~], [0, I]] OC_plain (same rank everywhere)
        import dataclasses

        plain = dataclasses.replace(spec, subhinges=tuple(dataclasses.replace(s, anchor=None)
                                                          for s in spec.subhinges))
        P = sp.eye(6)
        P[3:, :3] = -S.skew(_vec(common))
        kins_plain = [(sub, _anchored(kin, None if sub.anchor is None else tuple(-x for x in sub.anchor)),
                       qi, ui) for (sub, kin, qi, ui) in kins]
        kins_plain = [(dataclasses.replace(sub, anchor=None), kin, qi, ui) for (sub, kin, qi, ui) in kins_plain]
        B = sp.eye(6)
        B[:3, 3:] = S.skew(_vec(common))
        return B * _ortho_complement(plain, kins_plain, P * H)
    if common is False:   # turns about different points: the structural rules below do not apply
        return _cofactor_complement(spec, H)

    moving = [sub.info for sub, *_ in kins if sub.info.nu > 0]
    n_trans = 0
    while n_trans < len(moving) and moving[n_trans].pure_translation:
        n_trans += 1
    rot_cols = [c for (sub, kin, _, ui) in kins if sub.info.pure_rotation for c in ui]
    n_rot = len(rot_cols)
    if all(t.pure_rotation for t in moving[n_trans:]) and n_rot <= 3:
        trans_dirs = [kin.H[3:, j] for (sub, kin, _, _) in kins if sub.info.pure_translation
                      for j in range(kin.H.shape[1])]
        T = _hstack(trans_dirs, 3)
        if T.rank() == T.shape[1] <= 3:
            R_rot = sp.eye(3)
            for _, kin, _, _ in kins:  # translations are R = I: this is R_op
                R_rot = R_rot * kin.R
            t_perp = _constant_complement(T)
            forces = (t_perp if T.shape[1] == 0 else R_rot.T * t_perp)
            # the rotational columns in hinge (U) order
            sub_to_hinge = {j: spec.u_order[j] for j in range(nu)}
            W = _hstack([H[:3, sub_to_hinge[c]] for c in rot_cols], 3)
            if n_rot == 0:
                moments = sp.eye(3)
            elif n_rot == 1:
                moments = _constant_complement(W)  # the last PIN's axis: constant in the pnode
            elif n_rot == 2:
                moments = W[:, 0].cross(W[:, 1])
            else:
                moments = sp.zeros(3, 0)
            return moments.col_join(sp.zeros(3, moments.shape[1])).row_join(
                sp.zeros(3, forces.shape[1]).col_join(forces))
    return _fraction_free_nullspace(H)


def _cofactor_complement(spec, H):
    """Columns ``c_j`` with ``c_j^T H = 0`` from cofactors: with ``K`` a constant complement of ``H`` at the
    reference pose, ``c_j`` is the generalized cross product of the five columns ``[H, K without column j]``
    (``c_i = (-1)^i det`` of them without row ``i``).  The ``c_j`` are independent wherever ``[H, K]`` is
    invertible (at the reference pose, and everywhere but isolated configurations).  The determinants are
    taken of symbols (Laplace's expansion along K's columns) and then the entries substituted, so no symbolic
    simplification runs."""
    nu = H.shape[1]
    q = sorted(H.free_symbols, key=lambda x: x.name)
    q_all = sp.Matrix(sp.symbols(f"q_0:{spec.nq}", real=True))
    ref = dict(zip(q_all, spec.neutral_q()))
    H0 = np.array(H.xreplace({k: v for k, v in ref.items() if k in q}), dtype=float) if q else np.array(H, float)
    if np.linalg.matrix_rank(H0, tol=1e-9) < nu:      # a singular reference pose: another fixed pose
        rng = np.random.default_rng(0)
        alt = dict(zip(q_all, spec.random_q(rng, 1.0)))
        H0 = np.array(H.xreplace(alt), dtype=float)
    u_, _, _ = np.linalg.svd(H0)
    K = sp.Matrix([[_num(round(x, 17)) for x in row] for row in u_[:, nu:]])
    hs = sp.Matrix(6, nu, sp.symbols(f"h_0:{6 * nu}"))
    # each determinant by Laplace's expansion along its constant columns: a sum over the row sets S of the
    # constants' minor (a number) times the symbols' complementary minor (nu x nu, a few terms), instead of a
    # 5 x 5 determinant of symbols and floats expanded (rodent.xml's three-PIN SERIALs: 4 s -> a tenth of that)
    from itertools import combinations

    n_k = 5 - nu                                          # constant columns in each determinant
    sign_cols = sum(range(nu, 5))
    minors = {}                                           # the symbols' minors, by their rows (shared)

    def h_minor(rows):
        if rows not in minors:
            minors[rows] = sp.Matrix([[hs[r, c] for c in range(nu)] for r in rows]).det(method="berkowitz")
        return minors[rows]

    cols = []
    for j in range(6 - nu):
        others = [i for i in range(6 - nu) if i != j]
        c = []
        for i in range(6):
            rows = [r for r in range(6) if r != i]
            terms = []
            for S in combinations(range(5), n_k):
                k_minor = sp.Matrix([[K[rows[p], o] for o in others] for p in S]).det(method="berkowitz") \
                    if n_k else sp.Integer(1)
                if k_minor == 0:
                    continue
                rest = tuple(rows[p] for p in range(5) if p not in S)
                terms.append((-1) ** (sum(S) + sign_cols) * k_minor * h_minor(rest))
            c.append((-1) ** i * sp.expand(sp.Add(*terms)))
        cols.append(sp.Matrix(c))
    return _hstack(cols, 6).xreplace(dict(zip(list(hs), list(H))))


def _sanitize(spec, q_sub):
    """Equivalent Q (hinge order): each subhinge's ``SubhingeType.sanitize`` of its own coordinates, the
    others unchanged; None when no subhinge has one."""
    if not spec.has_sanitize:
        return None
    out, iq = list(q_sub), 0
    for sub in spec.subhinges:
        n = sub.info.nq
        if sub.info.sanitize is not None:
            out[iq:iq + n] = list(sub.info.sanitize(q_sub[iq:iq + n]))
        iq += n
    return sp.Matrix(spec.to_hinge_order(out))


# --------------------------------------------------------------------------------------------------
# disk cache
# --------------------------------------------------------------------------------------------------

from ..paths import cache_dir  # noqa: E402  (re-exported: derivations live in cache_dir() / "derive")


def _source_fingerprint() -> str:
    """Hash of the modules a derivation depends on, so editing them invalidates the cache."""
    from ..paths import package_dir

    here = package_dir()
    files = [here / "symbolic" / "spatial.py", *sorted((here / "hinges").glob("*.py"))]
    h = hashlib.sha256()
    for f in files:
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


_FINGERPRINT = None
_MEMORY: dict = {}
stats = {"derived": 0, "disk_hits": 0, "memory_hits": 0}


def derivation_key(spec: HingeSpec) -> str:
    """Cache key of ``spec``'s derivation: a hash of ``spec.key()``, the symgen and sympy versions and the sources
    of symbolic/spatial.py and hinges/ (editing them re-derives)."""
    global _FINGERPRINT
    if _FINGERPRINT is None:
        _FINGERPRINT = _source_fingerprint()
    text = "\n".join([spec.key(), __version__, sp.__version__, _FINGERPRINT])
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def derived(spec: HingeSpec, use_cache: bool = True) -> dict:
    """``derive(spec)`` through the memory and disk caches (a warm cache does no symbolic work)."""
    key = derivation_key(spec)
    if use_cache and key in _MEMORY:
        stats["memory_hits"] += 1
        return _MEMORY[key]
    with progress.step("derive", spec.label()) as step:
        return _derived_from_disk(spec, key, use_cache, step)


def _derived_from_disk(spec: HingeSpec, key: str, use_cache: bool, step) -> dict:
    path = cache_dir() / "derive" / f"{key}.pkl"
    if use_cache and path.exists():
        try:
            with open(path, "rb") as fh:
                data = pickle.load(fh)
            stats["disk_hits"] += 1
            _MEMORY[key] = data
            step.hit()
            return data
        except Exception:  # truncated or from an incompatible sympy: re-derive and overwrite
            pass
    data = derive(spec)
    stats["derived"] += 1
    if use_cache:
        _MEMORY[key] = data
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{key}.", suffix=".tmp")
            with os.fdopen(fd, "wb") as fh:
                pickle.dump(data, fh, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, path)
        except OSError:
            pass  # a read-only cache is not an error: the derivation is still returned
    return data


def clear_memory_cache() -> None:
    """Forget the derivations held in this process's memory (the disk cache is left as it is)."""
    _MEMORY.clear()


# --------------------------------------------------------------------------------------------------
# the user-facing hinge object
# --------------------------------------------------------------------------------------------------

VECTOR_KERNELS = frozenset({"bias", "sanitize"})


def _lambdify(args, M: sp.Matrix, vector: bool = False):
    """Vectorized numeric evaluator of a matrix: ``f(*arrays)`` with a leading batch axis (or none).
    ``vector``: a column matrix comes back as shape ``(n,)``."""
    shape = (M.shape[0],) if vector else M.shape
    flat_args = [x for a in args for x in a]
    fn = sp.lambdify(flat_args, list(M), modules=S.NUMERIC_MODULES, cse=True)

    def evaluate(*vals):
        vals = [np.asarray(v, dtype=float) for v in vals]
        batch = vals[0].shape[:-1] if vals else ()
        cols = [v[..., i] for v in vals for i in range(v.shape[-1])]
        with np.errstate(divide="ignore", invalid="ignore"):
            entries = fn(*cols) if cols else fn()
        flat = np.stack([np.broadcast_to(np.asarray(e, dtype=float), batch) for e in entries], axis=-1) \
            if entries else np.zeros(batch + (0,))
        return flat.reshape(batch + shape)

    return evaluate


class Hinge:
    """A hinge type with its parameters bound, and its derived equations.

    ``symgen.hinge("PIN", axis=(0, 1, 0))``.  The symbolic attributes are sympy matrices (they display
    as LaTeX in Jupyter) in the symbols :attr:`q` and :attr:`u`; :meth:`numeric` gives numpy evaluators.
    Special functions: ``c_k(s)`` are Stumpff functions (:class:`symgen.symbolic.spatial.stumpff`).
    """

    def __init__(self, spec: HingeSpec):
        self.spec = spec

    # ---- identity
    @property
    def hinge_type(self) -> str:
        """The hinge type's name (``"PIN"``, ``"GIMBAL"``, ...)."""
        return self.spec.hinge_type

    @property
    def hinge_type_string(self) -> str:
        """The hinge type's name, as :attr:`hinge_type` (Karana's ``hingeTypeString``)."""
        return self.spec.hinge_type

    @property
    def params(self):
        """Karana ``HingeParams(i2onode_q, j2pnode_q, axes)``."""
        return self.spec.params

    @property
    def subhinge_types(self) -> tuple:
        """The subhinge type names, onode -> pnode."""
        return self.spec.subhinge_types

    @property
    def n_subhinges(self) -> int:
        """Number of subhinges."""
        return len(self.spec.subhinges)

    @property
    def nq(self) -> int:
        """Number of generalized coordinates Q (the length of :attr:`q`)."""
        return self.spec.nq

    @property
    def nu(self) -> int:
        """Number of generalized speeds U, the degrees of freedom (the length of :attr:`u`)."""
        return self.spec.nu

    def __repr__(self):
        return f"<symgen.Hinge {self.spec.label()} nQ={self.nq} nU={self.nu} subhinges={list(self.subhinge_types)}>"

    def subhinge(self, i: int) -> "Subhinge":
        """Subhinge i (onode -> pnode order; Karana's per-subhinge ``CoordBase``): its type, its kernels as a
        one-subhinge :class:`Hinge` (``.hinge``: transform, coord map, ... in its own Q and U), and where its
        coordinates sit in this hinge's Q and U (``.q``, ``.u``: index lists, hinge order).  The hinge's
        transform is the product of its subhinges' in order (a reversed hinge: the inverse of that)."""
        subs = self.spec.subhinges
        if not -len(subs) <= i < len(subs):
            raise IndexError(f"{self.spec.label()} has {len(subs)} subhinges, no subhinge {i}")
        i %= len(subs)
        q0 = sum(s.info.nq for s in subs[:i])
        u0 = sum(s.info.nu for s in subs[:i])
        sub = subs[i]
        import dataclasses

        spec = dataclasses.replace(self.spec, hinge_type=f"{self.spec.hinge_type}_SUBHINGE{i}", subhinges=(sub,),
                                   q_order=tuple(range(sub.info.nq)), u_order=tuple(range(sub.info.nu)),
                                   bound=(), reversed=False)
        return Subhinge(sub.type, Hinge(spec), [self.spec.q_order[j] for j in range(q0, q0 + sub.info.nq)],
                        [self.spec.u_order[j] for j in range(u0, u0 + sub.info.nu)])

    # ---- symbolic
    @cached_property
    def _d(self) -> dict:
        return derived(self.spec)

    q = property(lambda self: self._d["q"], doc="Q symbols (column matrix, hinge order)")
    u = property(lambda self: self._d["u"], doc="U symbols (column matrix, hinge order)")
    transform = property(lambda self: self._d["transform"], doc="4x4 X_op(Q): pnode pose in the onode")
    coord_map = property(lambda self: self._d["coord_map"], doc="6 x nU pframe coord map H*_p(Q)")
    oframe_coord_map = property(lambda self: self._d["oframe_coord_map"], doc="6 x nU diag(R, R) H*_p")
    qdot_map = property(lambda self: self._d["qdot_map"], doc="nQ x nU N(Q): Q_dot = N U")
    coord_map_dot = property(lambda self: self._d["coord_map_dot"], doc="6 x nU d/dt H*_p (Q, U)")
    bias = property(lambda self: self._d["bias"], doc="6 x 1 H*_p_dot U (velocity-product term)")
    pose_gradient = property(lambda self: self._d["pose_gradient"], doc="6 x nU d[log R; l]/dQ N")
    ortho_complement = property(lambda self: self._d["ortho_complement"], doc="6 x (6-nU), OC^T H*_p = 0")
    sanitize_expr = property(lambda self: self._d["sanitize"], doc="nQ x 1 sanitized Q, or None")

    @property
    def has_sanitize(self) -> bool:
        """Whether some subhinge's Q needs sanitizing (then :attr:`sanitize_expr` is not None)."""
        return self.spec.has_sanitize

    def jacobian(self, offset=None) -> sp.Matrix:
        """6 x nU map from U to the velocity of a frame t rigidly attached to the pnode, relative to the
        onode, represented in t: ``phi^T(p, t) H*_p``.  ``offset`` is ``X_pt`` (4x4, or ``(R, l)``)."""
        return S.phi_T(*self._offset(offset)) * self.coord_map

    def jacobian_dot(self, offset=None) -> sp.Matrix:
        """Time derivative of :meth:`jacobian` along ``Q_dot = N U``: ``phi^T(p, t) H*_p_dot``."""
        return S.phi_T(*self._offset(offset)) * self.coord_map_dot

    @staticmethod
    def _offset(offset):
        if offset is None:
            return sp.eye(3), sp.zeros(3, 1)
        if isinstance(offset, tuple) and len(offset) == 2:
            return sp.Matrix(offset[0]), sp.Matrix(offset[1]).reshape(3, 1)
        T = sp.Matrix(offset)
        if T.shape != (4, 4):
            raise ValueError(f"jacobian offset must be a 4x4 transform or (R, l), got shape {T.shape}")
        return S.transform_parts(T)

    def equations(self) -> dict:
        """All derived expressions by name (a dict of sympy matrices)."""
        return {k: self._d[k] for k in KERNELS}

    def _repr_latex_(self):
        return (r"$\mathrm{%s}:\ X_{op} = %s,\quad H^*_p = %s$"
                % (self.hinge_type, sp.latex(self.transform), sp.latex(self.coord_map)))

    # ---- numeric
    def numeric(self, name: str):
        """numpy evaluator of a kernel: ``f(q)`` or ``f(q, u)`` (``NEEDS_U``); one state ``(nq,)`` or a
        batch ``(N, nq)``."""
        cache = self.__dict__.setdefault("_numeric", {})
        if name not in cache:
            if name == "sanitize":
                M = self.sanitize_expr if self.has_sanitize else self.q
            elif name in KERNELS:
                M = self._d[name]
            else:
                raise ValueError(f"{self.hinge_type}: unknown kernel {name!r} (known: {', '.join(KERNELS)})")
            args = [self.q, self.u] if name in NEEDS_U else [self.q]
            cache[name] = _lambdify(args, M, vector=name in VECTOR_KERNELS)
        return cache[name]

    def _check_q(self, q, name="q", n=None):
        arr = np.asarray(q, dtype=float)
        n = self.nq if n is None else n
        if arr.ndim not in (1, 2) or arr.shape[-1] != n:
            raise ValueError(f"{self.hinge_type}: {name} must have shape ({n},) or (N, {n}), got {arr.shape}")
        return arr

    def sanitize(self, q) -> np.ndarray:
        """Equivalent coordinates: SPHERICAL ``|r| <= pi`` (same rotation, U unchanged), quaternions
        renormalized; identity for hinges without such coordinates."""
        return self.numeric("sanitize")(self._check_q(q))

    def singular_values(self, q) -> np.ndarray:
        """Singular values of the pframe coord map at ``q`` (rank monitoring near gimbal lock)."""
        H = self.numeric("coord_map")(self._check_q(q))
        return np.linalg.svd(H, compute_uv=False)


@dataclass(frozen=True)
class Subhinge:
    """One subhinge of a :class:`Hinge` (:meth:`Hinge.subhinge`): ``type``, ``hinge`` (its kernels, a
    one-subhinge Hinge in its own Q and U), ``q`` and ``u`` (its coordinates' indices in the hinge's Q and U)."""

    type: str
    hinge: Hinge
    q: list
    u: list


def hinge(hinge_type: str, **params) -> Hinge:
    """A hinge type with bound parameters: ``hinge("GIMBAL")``, ``hinge("PIN", axis=(0, 1, 0))``,
    ``hinge("HELICAL", pitch=0.02)``, ``hinge("CUSTOM", subhinges=["LINEAR3", "SPHERICAL"])``,
    ``hinge("HOOKE", ij_q=(x, y, z, w))``."""
    return Hinge(bind(hinge_type, **params))


def derive_all(verbose: bool = False) -> float:
    """Derive every hinge type with default parameters; returns the wall time (for the logs)."""
    from . import HINGE_TYPES
    t0 = time.perf_counter()
    for name in HINGE_TYPES:
        t = time.perf_counter()
        hinge(name)._d
        if verbose:
            print(f"  {name:<14} {time.perf_counter() - t:6.2f} s")
    return time.perf_counter() - t0
