"""Build-time checks on a compiled model (numpy only).

Singular dynamics: ATBI needs ``D = S^T P S (+ armature)`` positive definite at every moving hinge, where
``P`` is the articulated inertia of the hinge's outboard subtree.  ``P`` never exceeds the subtree's rigid
composite inertia ``Ic`` (it is ``Ic`` with the inner hinges let free), so a hinge whose
``S^T Ic S + A`` is singular has a singular D in *every* motion: its subtree has no mass or no inertia in
the hinge's directions (a massless tip, a point mass on the axis).  :func:`singular_hinges` finds those
hinges at a few random configurations (a singularity of one configuration only, such as a mass that passes
the axis, is not structural and is left to the runtime's pivot check).

The check is linear in the bodies: per state, one pose pass (``poses``), six inverse-dynamics passes that
give every hinge's ``S`` at once (below), and one tip-to-base accumulation of the composite inertias
``Ic_k = M_k + sum_c phi(k, c) Ic_c phi(k, c)^T`` over the children c, batched over the states.

``S`` without the (n x n) Jacobians: inverse dynamics at rest without gravity gives the generalized force
of external wrenches alone, ``T_k = -S_k^T F_k`` with ``F_k = sum_{j in subtree(k)} phi(k, j) f_j`` the
wrench carried across hinge k (at body k's origin, body axes).  With ``f_k = e_r - sum_c phi(k, c) e_r``
at every body, ``F_k = e_r`` for every k, so one call reads row r of every ``S_k^T``.
"""
from __future__ import annotations

import numpy as np

from ..numeric import np_phi

#: D counts as singular below this fraction of the model's largest body inertia (rounding of zeros)
SINGULAR_RTOL = 1e-12


def _skew(v):
    """(..., 3) -> (..., 3, 3) cross-product matrices."""
    z = np.zeros(v.shape[:-1])
    x, y, w = v[..., 0], v[..., 1], v[..., 2]
    return np.stack([np.stack([z, -w, y], -1), np.stack([w, z, -x], -1), np.stack([-y, x, z], -1)], -2)


def spatial_inertias(bodies) -> np.ndarray:
    """(nb, 6, 6) spatial inertias about the body origins, body axes (DESIGN.md section 2)."""
    m = np.array([float(b["mass"]) for b in bodies])[:, None, None]
    cx = _skew(np.array([b["com"] for b in bodies], float).reshape(-1, 3))
    J = np.array([b["inertia"] for b in bodies], float).reshape(-1, 3, 3)
    out = np.empty((len(bodies), 6, 6))
    out[:, :3, :3] = J - m * cx @ cx
    out[:, :3, 3:] = m * cx
    out[:, 3:, :3] = -m * cx
    out[:, 3:, 3:] = m * np.eye(3)
    for k, b in enumerate(bodies):          # a flexible body: its nodes too, undeformed (particles)
        for nd in b.get("nodes", ()):
            dx = _skew(np.asarray(nd["pos"], float))
            out[k] += nd["mass"] * np.block([[-dx @ dx, dx], [-dx, np.eye(3)]])
    return out


def phi(R, l) -> np.ndarray:
    """(..., 6, 6) phi(A, B) = [[R, l~ R], [0, R]] of X_AB = (R, l), batched (:func:`symgen.numeric.np_phi`)."""
    return np_phi(R, l)


def _children(bodies) -> list:
    """Each body's children (indices, ascending), from the manifest's bodies."""
    index = {b["name"]: k for k, b in enumerate(bodies)}
    out = [[] for _ in bodies]
    for k, b in enumerate(bodies):
        if b["parent"] in index:
            out[index[b["parent"]]].append(k)
    return out


def subtree(k: int, children: list) -> list:
    """Body k and its outboard bodies, preorder with the children in descending index order."""
    out, stack = [], [k]
    while stack:
        j = stack.pop()
        out.append(j)
        stack.extend(children[j])      # ascending: the last child comes off the stack first
    return out


def hinge_maps(mb, Q) -> np.ndarray:
    """(N, 6, nU): column block u0:u1 is body k's hinge map ``S_k`` in body axes (U -> the body's spatial
    velocity relative to its parent), from six inverse-dynamics calls (module docstring); and the
    (N, nb, 6, 6) ``phi(parent, k)`` it used, (N, nb) valid where the parent is a body."""
    bodies = mb.manifest["bodies"]
    nb, n = len(bodies), Q.shape[0]
    index = {b["name"]: k for k, b in enumerate(bodies)}
    parent = np.array([index.get(b["parent"], -1) for b in bodies])
    R, p = mb.binding.poses(Q)
    has = parent >= 0
    Phi = np.zeros((n, nb, 6, 6))
    if has.any():
        kp, kc = parent[has], np.nonzero(has)[0]
        RpT = np.swapaxes(R[:, kp], -1, -2)
        Phi[:, kc] = phi(RpT @ R[:, kc], (RpT @ (p[:, kc] - p[:, kp])[..., None])[..., 0])
    W = np.broadcast_to(np.eye(6), (n, nb, 6, 6)).copy()       # f_k for the six patterns (columns r)
    if has.any():
        np.subtract.at(W, (slice(None), parent[has]), Phi[:, has])
    # states x patterns: f_ext[(i, r)] = W[i, :, :, r]
    F = np.ascontiguousarray(np.moveaxis(W, 3, 1)).reshape(n * 6, nb, 6)
    Qr = np.repeat(Q, 6, axis=0)
    Z = np.zeros((n * 6, mb.nu))
    T = mb.inverse_dynamics(Qr, Z, Z, f_ext=F, gravity=np.zeros(3), tree=True)
    return -T.reshape(n, 6, mb.nu), Phi, parent


def singular_hinges(mb, n_states: int = 3, seed: int = 0) -> list:
    """``[(hinge, body, subtree bodies)]`` of the moving hinges whose D is singular at every one of
    ``n_states`` random configurations (see the module docstring)."""
    man = mb.manifest
    bodies = man["bodies"]
    nb = len(bodies)
    if not nb or not mb.nu:
        return []
    M = spatial_inertias(bodies)
    scale = float(np.abs(M).max()) or 1.0
    rng = np.random.default_rng(seed)
    Q = np.ascontiguousarray(mb.sanitize(rng.uniform(-2.0, 2.0, (n_states, mb.nq))))
    S, Phi, parent = hinge_maps(mb, Q)
    # composite inertias, tip to base (children have larger indices than their parents)
    Ic = np.broadcast_to(M, (n_states, nb, 6, 6)).copy()
    for k in range(nb - 1, -1, -1):
        j = parent[k]
        if j >= 0:
            F = Phi[:, k]
            Ic[:, j] += F @ Ic[:, k] @ np.swapaxes(F, -1, -2)
    found, children = [], _children(bodies)
    for k, b in enumerate(bodies):
        h = man["hinges"][b["hinge"]]
        u0, u1 = h["u"]
        if u1 == u0:
            continue
        Sk = S[:, :, u0:u1]
        D = np.swapaxes(Sk, -1, -2) @ Ic[:, k] @ Sk + np.diag(h.get("armature") or [0.0] * (u1 - u0))
        if np.all(np.linalg.eigvalsh((D + np.swapaxes(D, -1, -2)) / 2)[:, 0] <= SINGULAR_RTOL * scale):
            found.append((b["hinge"], b["name"], [bodies[j]["name"] for j in subtree(k, children)]))
    return found


#: what the singular hinges of one build share, said once in their grouped warning (symgen.diagnostics)
SINGULAR_ISSUE = ("the outboard subtree has no mass or inertia in the hinge's directions, so D is singular and forward "
                  "dynamics cannot be solved; give each armature (symgen.build(..., armature={hinge: value}), the "
                  "model file's hinge 'armature', --armature HINGE=VALUE) or lock it (lock=[hinge], --lock HINGE)")


def _tree(sub) -> str:
    return ", ".join(repr(s) for s in sub[:6]) + (f" and {len(sub) - 6} more" if len(sub) > 6 else "")


def singular_message(found: list) -> list:
    """One warning per singular hinge, naming it, its subtree and the two remedies: ``[(text, hinge, detail)]``,
    ``detail`` what the hinge's name is followed by when the build's singular hinges are named in one warning
    (with :data:`SINGULAR_ISSUE`, symgen.pipeline.package: a ``SingularHingeWarning``)."""
    out = []
    for hinge, body, sub in found:
        tree = _tree(sub)
        out.append((
            f"hinge '{hinge}' (body '{body}'): its outboard subtree ({tree}) has no mass or inertia in the "
            f"hinge's directions, so D is singular and forward dynamics cannot be solved; give it armature "
            f"(symgen.build(..., armature={{'{hinge}': value}}), the model file's hinge 'armature', "
            f"--armature {hinge}=VALUE) or lock it (lock=['{hinge}'], --lock {hinge})",
            hinge, f"body '{body}', subtree {tree}"))
    return out


#: D counts as ill-conditioned below this fraction of the model's largest body inertia: forward dynamics there
#: answers a unit T with accelerations of about 1 / (ILL_RTOL * scale), beyond what the inputs' rounding allows
ILL_RTOL = 1e-12


def ill_conditioned_hinges(mb, skip=(), n_states: int = 3, seed: int = 0) -> list:
    """``[(hinge, body, subtree bodies, D_min, where)]`` of the moving hinges (not in ``skip``: those already
    found structurally singular) whose articulated D = H^T P H (+ armature), from the ATBI factorization
    itself (``atbi_matrices``), is singular to working precision relative to the model's largest inertia
    (:data:`ILL_RTOL`) at the neutral configuration or at one of ``n_states`` random ones: a configuration
    singularity such as iCub's neck at zero, where the head's inertia about the neck yaw axis vanishes.
    ``where``: ``"the neutral configuration"`` or ``"a random configuration"``.  Linear in the bodies.  Not run
    on a model with flexible bodies (its ``atbi_matrices`` is not available)."""
    man = mb.manifest
    bodies = man["bodies"]
    nb = len(bodies)
    if not nb or not mb.nu or man.get("modes"):         # flexible bodies: no atbi_matrices to read D from
        return []
    scale = float(np.abs(spatial_inertias(bodies)).max()) or 1.0
    rng = np.random.default_rng(seed)
    states = [("the neutral configuration", mb.neutral_q())]
    states += [("a random configuration", q) for q in mb.sanitize(rng.uniform(-2.0, 2.0, (n_states, mb.nq)))]
    b, B = mb.binding, mb.layout.mats
    found, children = {}, _children(bodies)
    for where, q in states:
        Q = np.ascontiguousarray(q, dtype=np.float64).reshape(1, -1)
        U = np.zeros((1, mb.nu))
        out, status = b.call_batch("atbi_matrices", Q, U, b.p(1, U, None, None), B.size * nb)
        bad = {}
        if status:                         # the first body whose D is not positive definite (tip to base)
            bad[int(status) % (nb + 1) - 1] = 0.0
        else:
            blk = out.reshape(nb, B.size)
            for k, x in enumerate(bodies):
                nh = mb.layout.nuh[k]
                if nh:
                    D = blk[k, B["D"]:B["D"] + nh * nh].reshape(nh, nh)
                    dmin = float(np.linalg.eigvalsh((D + D.T) / 2)[0])
                    if dmin <= ILL_RTOL * scale:
                        bad[k] = dmin
        for k, dmin in bad.items():
            hinge = bodies[k]["hinge"]
            if hinge not in skip and hinge not in found:
                found[hinge] = (hinge, bodies[k]["name"], [bodies[j]["name"] for j in subtree(k, children)],
                                dmin, where)
    return list(found.values())


#: what the ill-conditioned hinges of one build share, said once in their grouped warning
ILL_ISSUE = ("D singular to working precision against the model's inertias: the outboard subtree has next to no "
             "inertia in the hinge's directions there, so forward dynamics near that configuration answers a unit T "
             "with accelerations of order 1/D; give each armature (symgen.build(..., armature={hinge: value}), "
             "--armature HINGE=VALUE) or lock it (lock=[hinge], --lock HINGE)")


def ill_conditioned_message(found: list) -> list:
    """One warning per ill-conditioned hinge: where, how badly, its subtree and the remedies: ``[(text, hinge,
    detail)]`` as :func:`singular_message` (with :data:`ILL_ISSUE`: an ``IllConditionedWarning``)."""
    out = []
    for hinge, body, sub, dmin, where in found:
        tree = _tree(sub)
        out.append((
            f"hinge '{hinge}' (body '{body}'): at {where} D = {dmin:.1e}, singular to working precision "
            f"against the model's inertias: its outboard subtree ({tree}) has next to no inertia in the hinge's "
            f"directions there, so forward dynamics near that configuration answers a unit T with "
            f"accelerations of order 1/D; give it armature (symgen.build(..., armature={{'{hinge}': value}}), "
            f"--armature {hinge}=VALUE) or lock it (lock=['{hinge}'], --lock {hinge})",
            hinge, f"body '{body}', D = {dmin:.1e} at {where}, subtree {tree}"))
    return out
