"""Random closed-chain models for tests: a random tree whose loops are closed, by construction, at a
reference configuration (the target frame is placed where the source frame is at ``q_ref``)."""
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
    tree = tmp_path / f"{doc['name']}_tree.yaml"
    tree.write_text(yaml.safe_dump(doc))
    mb = symgen.build(tree)
    q_ref = mb.sanitize(rng.uniform(-1.2, 1.2, mb.nq))
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
        XS = mb.frame_pose(q_ref, a) @ _mat(src)
        XT = np.linalg.solve(mb.frame_pose(q_ref, b), XS)
        bodies[names.index(b)]["frames"].append({"name": f"t{j}", "xyz": XT[:3, 3].tolist(), "rpy": _rpy(XT[:3, :3])})
        loops.append({"name": f"loop{j}", "source": f"s{j}", "target": f"t{j}", "hinge": cut})
    doc["loops"] = loops
    path = tmp_path / f"{doc['name']}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return doc, q_ref, path


def _mat(pose):
    from symgen.model import rpy_matrix

    X = np.eye(4)
    X[:3, :3] = rpy_matrix(pose["rpy"])
    X[:3, 3] = pose["xyz"]
    return X
