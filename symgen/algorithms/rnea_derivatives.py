"""The derivatives of Newton-Euler inverse dynamics by the analytic recursions (Carpentier and Mansard, RSS 2018),
written once as per-body steps on a :class:`~symgen.ir.tape.Tape`, in world axes.

Forward-mode derivatives (:mod:`symgen.codegen.derivatives`) push every direction through its body's whole
subtree.  Here a direction of hinge j moves j's subtree as one rigid body, and in world axes that motion is a
cross product with one twist, the same for every body of the subtree; so the subtree enters through sums that
one tip-to-base pass builds for all directions at once (the composite inertia ``IC`` and the composite
``BC``), and a direction costs O(its depth) instead of O(its subtree).

World axes: a motion vector m of body b (body axes, about its origin, ``[angular; linear]``) is
``X0 m = [R0 w; R0 v + l0 x R0 w]`` with ``X_0b = (R0, l0)``; a force is ``phi(0, b) f``; an inertia
``phi I phi^T``.  ``V``, ``A`` (spatial acceleration, gravity as the newtonian frame's ``[0; -g]``), ``f``
(``I A + V x* I V - f_ext``) and ``F`` (the subtree's sum of f) of each body, ``H`` (its hinge's columns) and
``Hdot = V x H + X0 Hd``.  ``B(c) = I (c x V) + c x* (I V) + V x* (I c)`` is linear in the motion vector c;
with ``K = V x* I`` it is ``(K + K^T) c + c x* (I V)`` (``(V x* I)^T = -I V x``), so the subtree's sum ``BC``
needs the sums of ``S = K + K^T`` (nine numbers for a rigid body: :func:`_s_parts`) and ``hC`` of the momenta
I V only.  Inertias stay rigid, (m, h, J).

Directions (the tangent convention of :mod:`symgen.runtime.derivatives`: column k of hinge j moves Q as U = e_k
does, so X_pj moves by its body-frame twist ``H_j e_k``; ``dH``, ``dHd``: the derivatives of hinge j's body-axes
H and Hd along it, from the hinges' derivative kernels, zero for PIN and SLIDER):

* along Q, column k of j (xi = H_jk):  ``c = dH u_j - xi x V_parent``,
  ``e = -xi x A_parent - c x V_parent + dH Udot_j + V_j x (dH u_j) + dHd u_j``; then for i in j's subtree
  ``dT_i = H_i^T (IC_i e + BC_i c)`` (plus ``dH^T F_j`` at i = j), and for each ancestor i of j
  ``dT_i = H_i^T (xi x* F_j + IC_j e + BC_j c)``;
* of U, column k of j (eta = H_jk):  ``c = eta``, ``e = (V_j + V_parent) x eta + X0 Hd_j e_k + dHd/du_k u_j``,
  the same two rules without the ``xi x*`` and ``dH`` terms;
* of Udot: ``M_ij = H_i^T IC_i H_j`` for i in j's subtree, mirrored, plus the armature on the diagonal.

Every body of the subtree moves with the twist, so df_l = xi x* f_l + I_l e + B_l(c) there (Jacobi's identity
takes care of the rest); the sum over the subtree gives the rules above, and ``(xi x H)^T F + H^T (xi x* F) = 0``
removes the rotation from the subtree's own rows.  Rigid bodies only (the caller keeps the forward mode for
flexible ones).
"""
from __future__ import annotations

from .soa import (_accumulate, _colsum, _cross, _dot, compose, crf, crm, gravity_acceleration, joint, n_of, phi, phiT,
                  rigid_apply, rigid_parts, rigid_phi)


def to_world(T, R0, l0, m):
    """A motion vector in body axes about the body origin, in world axes about the world origin."""
    w = [_dot(T, R0[3 * i:3 * i + 3], m[:3]) for i in range(3)]
    v = [_dot(T, R0[3 * i:3 * i + 3], m[3:]) for i in range(3)]
    return w + [T.dot([(1.0, v[0]), (l0[1], w[2]), (-1.0, T.mul(l0[2], w[1]))]),
                T.dot([(1.0, v[1]), (l0[2], w[0]), (-1.0, T.mul(l0[0], w[2]))]),
                T.dot([(1.0, v[2]), (l0[0], w[1]), (-1.0, T.mul(l0[1], w[0]))])]


def _add(T, *vs):
    return [T.dot([(1.0, v[i]) for v in vs]) for i in range(6)]


def _sub(T, a, b):
    return [T.dot([(1.0, x), (-1.0, y)]) for x, y in zip(a, b)]


def _unit(k):
    return [1.0 if i == k else 0.0 for i in range(6)]


def world_step(T, b, parent, u, udot, f_ext, g0):
    """Base to tip at body b, in world axes: its pose X_0b, H and X0 Hd, V, A, the inertia (m, h, J) about the
    world origin, the momentum I V, f and S = K + K^T, K = V x* I (:func:`_s_parts`).  ``parent``: the parent's
    dict (None at a root: the newtonian frame, at rest, accelerating at g0 = [0; -g])."""
    R, l, Hb, Hdb = joint(T, b)
    R0, l0 = (R, l) if parent is None else compose(T, parent["R0"], parent["l0"], R, l)
    H = [to_world(T, R0, l0, h) for h in Hb]
    XHd = [to_world(T, R0, l0, h) for h in Hdb]
    Hu = _colsum(T, H, u)
    Vp, Ap = (parent["V"], parent["A"]) if parent else ([0.0] * 6, g0)
    V = [T.name(x, f"V{b.tag}_{i}") for i, x in enumerate(_add(T, Vp, Hu))]
    Hdu = _add(T, crm(T, V, Hu), _colsum(T, XHd, u))
    A = [T.name(x, f"A{b.tag}_{i}") for i, x in enumerate(_add(T, Ap, _colsum(T, H, udot), Hdu))]
    m, hb, Jb = rigid_parts(b.M)
    h, J = rigid_phi(T, R0, l0, m, hb, Jb)
    I = (m, h, J)
    mom = rigid_apply(T, *I, V)
    fw = phi(T, R0, l0, f_ext)
    f = [T.dot([(1.0, x), (1.0, y), (-1.0, z)]) for x, y, z in zip(rigid_apply(T, *I, A), crf(T, V, mom), fw)]
    return {"R0": R0, "l0": l0, "H": H, "XHd": XHd, "V": V, "A": A, "I": I, "mom": mom, "f": f, "S": _s_parts(T, I, V),
            "Vp": Vp, "Ap": Ap, "u": u, "udot": udot}


def _s_parts(T, I, V):
    """S = V x* I - I V x (= K + K^T, K = V x* I) of a rigid inertia (m, h, J) moving at V = (w, v), kept as its
    nine numbers: S = [[A, s~], [-s~, 0]] with A = w~ J - J w~ - (v~ h~ + h~ v~) (symmetric; v~ h~ + h~ v~ =
    h v^T + v h^T - 2 (v . h) 1) and s = w x h + m v.  Returns (A as a 3 x 3 list of rows, s)."""
    m, h, J = I
    w, v = V[:3], V[3:]
    wJ = [_cross(T, w, [J[0][j], J[1][j], J[2][j]]) for j in range(3)]          # columns of w~ J
    vh = _dot(T, v, h)
    A = [[None] * 3 for _ in range(3)]
    for i in range(3):
        for j in range(i, 3):
            pairs = [(1.0, wJ[j][i]), (1.0, wJ[i][j]), (-1.0, T.mul(h[i], v[j])), (-1.0, T.mul(v[i], h[j]))]
            A[i][j] = A[j][i] = T.dot(pairs + ([(2.0, vh)] if i == j else []))
    return A, [T.dot([(1.0, x), (m, y)]) for x, y in zip(_cross(T, w, h), v)]


def _s_apply(T, S, c):
    """S c = [A c_w + s x c_v; -s x c_w] (:func:`_s_parts`)."""
    A, sv = S
    top = _cross(T, sv, c[3:])
    return ([T.dot([(A[i][j], c[j]) for j in range(3)], top[i]) for i in range(3)] +
            [T.neg(x) for x in _cross(T, sv, c[:3])])


def _rigid_sum(T, I, kids):
    """(m, h, J) of a body plus its children's composites: the subtree's, all in world axes about its origin."""
    m = T.dot([(1.0, c[0]) for c in kids], I[0])
    h = [T.dot([(1.0, c[1][i]) for c in kids], I[1][i]) for i in range(3)]
    J = [[None] * 3 for _ in range(3)]
    for i in range(3):
        for j in range(i, 3):
            J[i][j] = J[j][i] = T.dot([(1.0, c[2][i][j]) for c in kids], I[2][i][j])
    return m, h, J


def _own_world(T, b, w, raw):
    """A hinge's H or Hd derivative as its kernel writes it (``raw``: 6 x nU row-major, pnode frame) turned like
    H itself (phi^T(pnode, b), :func:`symgen.algorithms.soa.joint`), then into world axes: its columns."""
    return [to_world(T, w["R0"], w["l0"], phiT(T, b.pinv_R, b.pinv_l, [raw[i * b.nu + c] for i in range(6)]))
            for c in range(b.nu)]


def subtree_sums(T, b, w, kids) -> None:
    """Tip to base at body b: its subtree's sums, its own (``w``: :func:`world_step`'s, or, where the children have
    already added theirs in, the sums so far) plus its children's (``kids``: their dicts): ``IC`` (rigid, world
    axes), ``SC`` (:func:`_s_parts`' nine numbers), ``hC`` (the momentum), ``F``; kept in w."""
    w["IC"] = _rigid_sum(T, w["I"], [c["IC"] for c in kids])
    w["SC"] = ([[T.dot([(1.0, c["SC"][0][i][j]) for c in kids], w["S"][0][i][j]) for j in range(3)] for i in range(3)],
               [T.dot([(1.0, c["SC"][1][i]) for c in kids], w["S"][1][i]) for i in range(3)])
    w["hC"] = _accumulate(T, w["mom"], [c["hC"] for c in kids])
    w["F"] = [T.name(x, f"F{b.tag}_{i}") for i, x in enumerate(_accumulate(T, w["f"], [c["F"] for c in kids]))]


def column_sums(T, w) -> None:
    """Each column h of the body's H (world axes): ``hI`` = (IC h)^T = h^T IC and ``hB`` = h^T BC (BC c = SC c + c x*
    hC), kept in w: a direction's row at this body is ``hI . e + hB . c`` (:func:`subtree_row`)."""
    w["hI"] = [rigid_apply(T, *w["IC"], h) for h in w["H"]]
    w["hB"] = [[T.add(x, _dot(T, h, crf(T, _unit(k), w["hC"]))) for k, x in enumerate(_s_apply(T, w["SC"], h))]
               for h in w["H"]]


def direction(T, b, w, k, wrt, own_tangent):
    """Column k of body b's hinge, along Q (``wrt`` "q") or of U ("u"): ``(c, e, dF, dH)``, the subtree's twist
    rate and acceleration change, the change of the force b's hinge carries, what the ancestors' rows read
    (``dT_i = H_i^T dF``), and b's own H's derivative along it (zero columns along U).  ``w``: b's dict after
    :func:`column_sums`; ``own_tangent`` as :func:`rnea_derivatives`'."""
    z, ub, udb = w["H"][k], w["u"], w["udot"]
    dH = _own_world(T, b, w, own_tangent(T, b, "H", wrt, k)) if wrt == "q" else [[0.0] * 6 for _ in range(b.nu)]
    dHd = _own_world(T, b, w, own_tangent(T, b, "Hd", wrt, k))
    if wrt == "q":
        dHu = _colsum(T, dH, ub)
        c = _sub(T, dHu, crm(T, z, w["Vp"]))
        e = _add(T, [T.neg(x) for x in crm(T, z, w["Ap"])], [T.neg(x) for x in crm(T, c, w["Vp"])],
                 _colsum(T, dH, udb), crm(T, w["V"], dHu), _colsum(T, dHd, ub))
    else:
        c = z
        e = _add(T, crm(T, _add(T, w["V"], w["Vp"]), z), w["XHd"][k], _colsum(T, dHd, ub))
    G = _add(T, rigid_apply(T, *w["IC"], e), _s_apply(T, w["SC"], c), crf(T, c, w["hC"]))
    dF = _add(T, crf(T, z, w["F"]), G) if wrt == "q" else G
    return c, e, dF, dH


def subtree_row(T, wd, kk, c, e):
    """A direction's row at column kk of a body d of its subtree (``wd``: d's dict after :func:`column_sums`):
    ``H_d^T (IC_d e + BC_d c)``."""
    return T.dot([(1.0, _dot(T, wd["hI"][kk], e)), (1.0, _dot(T, wd["hB"][kk], c))])


def own_row(T, w, kk, c, e, dH, wrt):
    """The row at column kk of body b's own hinge of a direction of that hinge (``w``: b's dict):
    :func:`subtree_row` plus, along Q, ``dH^T F``."""
    x = subtree_row(T, w, kk, c, e)
    return T.add(x, _dot(T, dH[kk], w["F"])) if wrt == "q" else x


def mass_entry(T, b, wd, kk, h, diagonal: int | None = None):
    """M's entry at column kk of body d (``wd``: its dict after :func:`column_sums`) and the column ``h`` (world
    axes) of b's hinge, d in b's subtree: ``hI_d . h``, plus b's armature of column ``diagonal`` on the diagonal."""
    x = _dot(T, wd["hI"][kk], h)
    return x if diagonal is None else T.add(x, b.arm(diagonal))


def rnea_derivatives(T, bodies, n_u: int, io, own_tangent) -> None:
    """Store ``out = [dT/dQ (tangent, nU x nU), dT/dU (nU x nU), M (nU x nU)]``, row-major, of Newton-Euler
    inverse dynamics T(Q, U, Udot) (``io``: :class:`symgen.algorithms.soa.ArrayIO`; p's middle is Udot).
    ``own_tangent(T, b, arr, wrt, k)``: body b's hinge kernel output ``arr`` ("H" or "Hd", 6 x nU row-major, in
    the pnode frame as the kernel writes it) differentiated along its own direction k (``wrt`` "q": the tangent
    of U = e_k; "u": U_k), a list of traced values or floats (zero where the kernel does not depend on it)."""
    u, udot, g0 = io.u(T), io.tau(T), gravity_acceleration(T, io.gravity(T))
    n = n_of(bodies)
    children = {b.k: [] for b in bodies}
    for b in bodies:
        if not b.root:
            children[b.parent].append(b.k)
    T.comment("base to tip, world axes: X_0b, H, V, A (gravity as the newtonian frame's [0; -g]), I = (m, h, J), "
              "f = I A + V x* I V - f_ext, S = V x* I - I V x")
    W = {}
    for b in bodies:
        par = W[b.parent] if not b.root else None
        W[b.k] = world_step(T, b, par, u[b.u0:b.u0 + b.nu], udot[b.u0:b.u0 + b.nu], io.f_ext(T, b.k), g0)
    T.comment("tip to base: the subtree's sums IC = sum I, SC = sum (K + K^T), hC = sum I V, F = sum f "
              "(BC c = SC c + c x* hC); each column's H^T IC, H^T BC")
    for b in reversed(bodies):
        subtree_sums(T, b, W[b.k], [W[c] for c in children[b.k]])
        if b.nu:
            column_sums(T, W[b.k])
    nu = n_u
    T.fill_zeros("out", 3 * nu * nu, "dT/dQ, dT/dU, M: zero where a direction does not reach")

    def ancestors(b):
        out, k = [], b.parent
        while k >= 0:
            out.append(bodies[k])
            k = bodies[k].parent
        return out

    def subtree(b):
        out, stack = [], [b.k]
        while stack:
            k = stack.pop()
            out.append(bodies[k])
            stack += children[k]
        return sorted(out, key=lambda x: x.k)

    for b in bodies:
        if not b.nu:
            continue
        w = W[b.k]
        sub, anc = subtree(b), ancestors(b)
        for k in range(b.nu):
            col = b.u0 + k
            for wrt in ("q", "u"):
                T.comment(f"{'along Q' if wrt == 'q' else 'of U'}, direction {col} ('{b.name}')")
                c, e, dF, dH = direction(T, b, w, k, wrt, own_tangent)
                block = 0 if wrt == "q" else nu * nu
                for a in anc:
                    for kk, h in enumerate(W[a.k]["H"]):
                        T.store(f"out[{block + (a.u0 + kk) * nu + col}]", _dot(T, h, dF))
                for d in sub:
                    for kk in range(d.nu):
                        x = own_row(T, w, kk, c, e, dH, wrt) if d is b else subtree_row(T, W[d.k], kk, c, e)
                        T.store(f"out[{block + (d.u0 + kk) * nu + col}]", x)
            T.comment(f"M, column {col} ('{b.name}') and its row")
            for d in sub:
                for kk in range(d.nu):
                    row = d.u0 + kk
                    if d is b and kk < k:
                        continue
                    x = mass_entry(T, b, W[d.k], kk, w["H"][k], k if d is b and kk == k else None)
                    T.store(f"out[{2 * nu * nu + row * nu + col}]", x)
                    if row != col:
                        T.store(f"out[{2 * nu * nu + col * nu + row}]", x)
