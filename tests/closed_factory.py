"""Random closed-chain models for tests: a random tree whose loops are closed, by construction, at a
reference configuration (the target frame is placed where the source frame is at ``q_ref``).

The placement needs the tree's frame poses at ``q_ref``: :func:`tree_poses` composes them in numpy from the
hinges' own transforms (``Hinge.numeric("transform")``, the lambdified derivation) and the bodies' node poses,
so the tree is not compiled just for that; the tests check that the built closed model's loops are closed at
``q_ref`` (its compiled kinematics agree)."""
from __future__ import annotations

import numpy as np
import yaml

import symgen
from model_factory import _inertia, _pose


def _rpy(R):
    """URDF roll-pitch-yaw of a rotation matrix (R = Rz(y) Ry(p) Rx(r))."""
    p = np.arcsin(-np.clip(R[2, 0], -1, 1))
    return [float(np.arctan2(R[2, 1], R[2, 2])), float(p), float(np.arctan2(R[1, 0], R[0, 0]))]


def random_closed_chain(tmp_path, seed: int, cut_types, floating: bool = False, n_bodies: int = 6,
                        hinge_types=("PIN", "SLIDER", "BALL", "UJOINT")):
    """(model, q_ref, path): a random tree of ``n_bodies`` plus one loop per entry of ``cut_types`` (a type
    name or a hinge dict), closed at q_ref.  Loops join bodies in different branches or two bodies apart."""
    rng = np.random.default_rng(seed)
    bodies, names = [], []
    for i in range(n_bodies):
        m = float(rng.uniform(0.5, 3.0))
        if i == 0 and floating:
            t = "FULL6DOF"
        else:
            t = hinge_types[int(rng.integers(len(hinge_types)))]
        hinge = {"type": t, "name": f"h{i}"}
        if t in ("PIN", "SLIDER"):
            v = rng.normal(size=3)
            hinge["axis"] = (v / np.linalg.norm(v)).tolist()
        parent = "newtonian" if i == 0 else names[int(rng.integers(max(0, i - 3), i))]
        if i == 1 and not floating:
            parent = "newtonian"
        bodies.append({"name": f"b{i}", "parent": parent, "mass": m, "com": rng.uniform(-0.2, 0.2, 3).tolist(),
                       "inertia": _inertia(rng, m), "hinge": hinge, "onode": _pose(rng), "pnode": _pose(rng, 0.2),
                       "frames": []})
        names.append(f"b{i}")
    doc = {"name": f"closed{seed}{'f' if floating else ''}", "gravity": [0.0, 0.0, -9.81], "bodies": bodies}
    nq, sanitize, pose = tree_poses(doc)
    q_ref = sanitize(rng.uniform(-1.2, 1.2, nq))
    parent = {b["name"]: b["parent"] for b in bodies}

    def ancestors(b):
        out = []
        while b != "newtonian":
            out.append(b)
            b = parent[b]
        return out
    loops = []
    for j, cut in enumerate(cut_types):
        while True:
            a, b = rng.choice(names, 2, replace=False)
            if a not in ancestors(b)[:2] and b not in ancestors(a)[:2]:
                break
        src = _pose(rng, 0.3)
        bodies[names.index(a)]["frames"].append({"name": f"s{j}", **src})
        XS = pose(q_ref, a) @ _mat(src)
        XT = np.linalg.solve(pose(q_ref, b), XS)
        bodies[names.index(b)]["frames"].append({"name": f"t{j}", "xyz": XT[:3, 3].tolist(), "rpy": _rpy(XT[:3, :3])})
        loops.append({"name": f"loop{j}", "source": f"s{j}", "target": f"t{j}", "hinge": cut})
    doc["loops"] = loops
    path = tmp_path / f"{doc['name']}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return doc, q_ref, path


def tree_poses(doc):
    """``(nq, sanitize, pose)`` of a tree document: its number of coordinates, ``sanitize(q)`` and
    ``pose(q, body)`` (4x4 world pose of the body frame), in symgen's Q order (the loader's body order).  A body
    frame is ``onode * X_hinge(q) * pnode^-1`` in its parent's body frame."""
    from symgen.model import model_from_dict

    model = model_from_dict(doc)
    hinges, slices, n = {}, {}, 0
    for b in model.bodies:
        h = symgen.hinge(b.hinge_type, **b.hinge_kwargs())
        hinges[b.name], slices[b.name] = h, slice(n, n + h.nq)
        n += h.nq

    def sanitize(q):
        q = np.array(q, float)
        for name, h in hinges.items():
            q[slices[name]] = h.sanitize(q[slices[name]])
        return q

    def pose(q, body):
        W = {"newtonian": np.eye(4)}
        for b in model.bodies:
            X = hinges[b.name].numeric("transform")(np.asarray(q, float)[slices[b.name]])
            W[b.name] = W[b.parent] @ b.onode.matrix @ X @ np.linalg.inv(b.pnode.matrix)
        return W[body]
    return n, sanitize, pose


def _mat(pose):
    from symgen.model import rpy_matrix

    X = np.eye(4)
    X[:3, :3] = rpy_matrix(pose["rpy"])
    X[:3, 3] = pose["xyz"]
    return X
