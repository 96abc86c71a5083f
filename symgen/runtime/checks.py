"""Build-time checks on a compiled model (numpy only).

Singular dynamics: ATBI needs ``D = S^T P S (+ armature)`` positive definite at every moving hinge, where
``P`` is the articulated inertia of the hinge's outboard subtree.  ``P`` never exceeds the subtree's rigid
composite inertia ``Ic`` (it is ``Ic`` with the inner hinges let free), so a hinge whose
``S^T Ic S + A`` is singular has a singular D in *every* motion: its subtree has no mass or no inertia in
the hinge's directions (a massless tip, a point mass on the axis).  :func:`singular_hinges` finds those
hinges at a few random configurations (a singularity of one configuration only, such as a mass that passes
the axis, is not structural and is left to the runtime's pivot check).
"""
from __future__ import annotations

import numpy as np

#: D counts as singular below this fraction of the model's largest body inertia (rounding of zeros)
SINGULAR_RTOL = 1e-12


def _spatial_inertia(m, c, J):
    c = np.asarray(c, float)
    cx = np.array([[0, -c[2], c[1]], [c[2], 0, -c[0]], [-c[1], c[0], 0]])
    return np.block([[np.asarray(J, float) - m * cx @ cx, m * cx], [-m * cx, m * np.eye(3)]])


def _phi(R, l):
    lx = np.array([[0, -l[2], l[1]], [l[2], 0, -l[0]], [-l[1], l[0], 0]])
    return np.block([[R, lx @ R], [np.zeros((3, 3)), R]])


def singular_hinges(mb, n_states: int = 3, seed: int = 0) -> list:
    """``[(hinge, body, subtree bodies)]`` of the moving hinges whose D is singular at every one of
    ``n_states`` random configurations (see the module docstring)."""
    man = mb.manifest
    bodies = man["bodies"]
    nb = len(bodies)
    if not nb or not mb.nu:
        return []
    index = {b["name"]: k for k, b in enumerate(bodies)}
    parent = [index.get(b["parent"], -1) for b in bodies]
    subtree = [[k] for k in range(nb)]
    for k in reversed(range(nb)):
        if parent[k] >= 0:
            subtree[parent[k]] += subtree[k]
    M = [_spatial_inertia(b["mass"], b["com"], b["inertia"]) for b in bodies]
    scale = max(float(np.abs(Mk).max()) for Mk in M) or 1.0
    rng = np.random.default_rng(seed)
    Q = mb.sanitize(rng.uniform(-2.0, 2.0, (n_states, mb.nq)))
    R, p, J, _ = mb._bodies(Q, np.zeros((n_states, mb.nu)))
    found = []
    for k, b in enumerate(bodies):
        h = man["hinges"][b["hinge"]]
        u0, u1 = h["u"]
        if u1 == u0:
            continue
        arm = np.diag(h.get("armature") or [0.0] * (u1 - u0))
        singular = True
        for i in range(n_states):
            Ic = np.zeros((6, 6))
            for j in subtree[k]:
                Rkj = R[i, k].T @ R[i, j]
                lkj = R[i, k].T @ (p[i, j] - p[i, k])
                F = _phi(Rkj, lkj)
                Ic += F @ M[j] @ F.T
            S = J[i, k][:, u0:u1]            # the hinge's own columns of the body Jacobian: S in body axes
            D = S.T @ Ic @ S + arm
            if np.linalg.eigvalsh((D + D.T) / 2)[0] > SINGULAR_RTOL * scale:
                singular = False
                break
        if singular:
            found.append((b["hinge"], b["name"], [bodies[j]["name"] for j in subtree[k]]))
    return found


def singular_message(found: list) -> list:
    """One warning per singular hinge, naming it, its subtree and the two remedies."""
    out = []
    for hinge, body, sub in found:
        tree = ", ".join(repr(s) for s in sub[:6]) + (f" and {len(sub) - 6} more" if len(sub) > 6 else "")
        out.append(f"hinge '{hinge}' (body '{body}'): its outboard subtree ({tree}) has no mass or inertia in the "
                   f"hinge's directions, so D is singular and forward dynamics cannot be solved; give it armature "
                   f"(symgen.build(..., armature={{'{hinge}': value}}), the model file's hinge 'armature', "
                   f"--armature {hinge}=VALUE) or lock it (lock=['{hinge}'], --lock {hinge})")
    return out
