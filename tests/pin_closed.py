"""Pinocchio oracle for closed kinematic chains (loop constraints, "cut joints").

* :func:`random_closed_chain_dict` -- a random symgen model document (PIN / SLIDER / BALL_QUAT tree, optional
  FULL6DOF root) whose ``loops:`` are closed at a random configuration ``q_ref`` (returned with it);
* :func:`pinocchio_model` -- the same tree built by hand in Pinocchio (bodies added depth first) and the
  :class:`PinMaps` between symgen's Q/U order and conventions and Pinocchio's;
* :func:`to_pin_state`, :func:`from_pin_state`, :func:`to_pin_accel`, :func:`from_pin_accel`,
  :func:`to_pin_tau`, :func:`from_pin_tau`, :func:`u_matrix` -- the state maps;
* :func:`constraint_models` -- one ``pin.RigidConstraintModel`` per BALL / LOCKED cut, two per PIN cut;
* :func:`consistent_velocity` -- a random velocity in the null space of the constraint Jacobian;
* :func:`pin_constrained_fd` -- ``pin.constraintDynamics``, checked against the acceleration constraints and
  against a dense solve (KKT / null space) built from Pinocchio's M, nonlinear effects, J and drift.

Independent constraint kinematics (:func:`loop_kinematics`): every cut is written in world axes
(``LOCAL_WORLD_ALIGNED``) from Pinocchio's joint Jacobians and joint velocities / accelerations, without
Pinocchio's contact code: BALL keeps the two frame origins together (d2/dt2 (p_s - p_t) = classical
accelerations), LOCKED also the angular velocities (d/dt (w_s - w_t) = alpha_s - alpha_t in world axes), PIN is
two BALL points, at the frame origin and one unit along the source frame's z.

Conventions.  Spatial vectors are [angular; linear] in symgen, [linear; angular] in Pinocchio.  The symgen
body frame of a body is ``onode * X_hinge(q) * pnode^-1`` from its parent's body frame; Pinocchio's joint frame
is the hinge's pframe (``onode * X_hinge(q)`` from the parent's joint frame, whose own body frame sits at
``pnode^-1`` in it), so ``pnode^-1`` is folded into the body inertia and every frame placement, and a child's
joint placement is ``pnode_parent^-1 * onode``.  PIN = ``JointModelRevoluteUnaligned`` (q = angle), SLIDER =
``JointModelPrismaticUnaligned``, BALL_QUAT = ``JointModelSpherical`` (q = (x, y, z, w), u = w in the child
frame, identical), FULL6DOF = ``JointModelFreeFlyer`` (same q; symgen's U = [p_dot in the oframe; w in the
pframe], Pinocchio's v = [R^T p_dot; w] with R the hinge's rotation, so u = T v, T = diag(R, I, ...)).

Pinocchio 4.1 notes: ``initConstraintDynamics(model, data, cmodels, cdatas)`` takes the constraint datas too
(4 arguments; the docstring's argument names are shuffled); plain Python lists are accepted for both;
``getConstraintsJacobian`` (LOCAL) is ``B^T J`` with B the world rotations of each constraint's frame 1 and J
the world-axes Jacobian of (source - target); Baumgarte gains live in ``cm.m_baumgarte_parameters`` (Kp, Kd;
0 by default) and are set with ``cm.setBaumgarteCorrectorParameters``; after ``constraintDynamics``,
``ProximalSettings.iter`` / ``relative_residual`` report convergence (4-6 iterations for independent rows; with
dependent rows the relative residual stalls near 1e-8 and every ``max_iter`` iteration runs, the accelerations
being exact all the same), ``absolute_residual`` does not (it stays O(10) whatever the accuracy).
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

import pinocchio as pin

#: (nq, nu) of the hinge types used here
HINGE_SIZES = {"PIN": (1, 1), "SLIDER": (1, 1), "BALL_QUAT": (4, 3), "FULL6DOF": (7, 6)}
#: number of (independent) constraints of each cut-joint type
CUT_RANK = {"BALL": 3, "LOCKED": 6, "PIN": 5}
TREE_TYPES = ("PIN", "SLIDER", "BALL_QUAT")
NEWTONIAN = "newtonian"
PROX = (1e-12, 1e-6, 200)          # pin.ProximalSettings(accuracy, mu, max_iter)


# ----------------------------------------------------------------------------------------------- poses
def rel(a, b) -> float:
    """Largest difference relative to max(1, largest entry of b); inf where either has a non-finite entry."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        return float("inf")
    return float(np.max(np.abs(a - b)) / max(1.0, float(np.max(np.abs(b))))) if a.size else 0.0


def quat_matrix(q) -> np.ndarray:
    """Rotation of a quaternion (x, y, z, w) (normalized here)."""
    x, y, z, w = np.asarray(q, float) / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def matrix_quat(R) -> np.ndarray:
    """(x, y, z, w) of a rotation matrix (Pinocchio's conversion)."""
    c = pin.Quaternion(np.asarray(R, float)).coeffs()          # (x, y, z, w)
    return np.asarray(c, float) / np.linalg.norm(c)


def pose_matrix(d) -> np.ndarray:
    """4x4 of a document pose ``{xyz, rpy | quat}`` (None: identity).  rpy is URDF's Rz Ry Rx."""
    T = np.eye(4)
    if not d:
        return T
    if "quat" in d:
        T[:3, :3] = quat_matrix(d["quat"])
    else:
        T[:3, :3] = pin.rpy.rpyToMatrix(np.asarray(d.get("rpy", [0, 0, 0]), float))
    T[:3, 3] = d.get("xyz", [0, 0, 0])
    return T


def se3(T) -> pin.SE3:
    T = np.asarray(T, float)
    return pin.SE3(T[:3, :3].copy(), T[:3, 3].copy())


def inv(T) -> np.ndarray:
    Ti = np.eye(4)
    Ti[:3, :3] = T[:3, :3].T
    Ti[:3, 3] = -T[:3, :3].T @ T[:3, 3]
    return Ti


def hinge_transform(hinge: dict, q) -> np.ndarray:
    """X_op(q) of the hinge types used here (plain numpy)."""
    t, q, T = hinge["type"], np.asarray(q, float), np.eye(4)
    if t == "PIN":
        a = np.asarray(hinge.get("axis", (0, 0, 1)), float)
        a = a / np.linalg.norm(a)
        K = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
        T[:3, :3] = np.eye(3) + np.sin(q[0]) * K + (1 - np.cos(q[0])) * K @ K
    elif t == "SLIDER":
        a = np.asarray(hinge.get("axis", (0, 0, 1)), float)
        T[:3, 3] = q[0] * a / np.linalg.norm(a)
    elif t == "BALL_QUAT":
        T[:3, :3] = quat_matrix(q)
    elif t == "FULL6DOF":
        T[:3, :3], T[:3, 3] = quat_matrix(q[3:7]), q[:3]
    else:
        raise ValueError(f"hinge type {t} not supported here")
    return T


# --------------------------------------------------------------------------------------------- the tree
def _bodies(doc) -> dict:
    return {b["name"]: b for b in doc["bodies"]}


def symgen_order(doc) -> list:
    """Body names in symgen's Q/U order: parents before children in waves over the document order (the loader's
    ``_topological``; checked against ``mb.q_slice`` by the tests)."""
    remaining, placed, order = [b["name"] for b in doc["bodies"]], {NEWTONIAN}, []
    by = _bodies(doc)
    while remaining:
        ready = [n for n in remaining if by[n]["parent"] in placed]
        if not ready:
            raise ValueError("the bodies do not form a tree hanging from newtonian")
        for n in ready:
            order.append(n)
            placed.add(n)
        remaining = [n for n in remaining if n not in placed]
    return order


def depth_first_order(doc) -> list:
    """Body names depth first (children in document order), Pinocchio's required joint order."""
    by, out = _bodies(doc), []
    children = {}
    for b in doc["bodies"]:
        children.setdefault(b["parent"], []).append(b["name"])

    def visit(n):
        for c in children.get(n, []):
            out.append(c)
            visit(c)
    visit(NEWTONIAN)
    assert len(out) == len(by)
    return out


def _hinge_name(b) -> str:
    return b["hinge"].get("name", b["name"])


def _slices(doc) -> dict:
    """{body: (q slice, u slice)} in symgen's order."""
    by, out, iq, iu = _bodies(doc), {}, 0, 0
    for n in symgen_order(doc):
        nq, nu = HINGE_SIZES[by[n]["hinge"]["type"]]
        out[n] = (slice(iq, iq + nq), slice(iu, iu + nu))
        iq, iu = iq + nq, iu + nu
    return out


def world_poses(doc, q) -> dict:
    """{body or frame name: 4x4 world pose} at symgen coordinates q, plain numpy forward kinematics."""
    by, sl, W = _bodies(doc), _slices(doc), {NEWTONIAN: np.eye(4)}
    for f in doc.get("frames", []):                 # frames fixed on the newtonian
        W[f["name"]] = pose_matrix(f)
    for n in symgen_order(doc):
        b = by[n]
        W[n] = W[b["parent"]] @ pose_matrix(b.get("onode")) @ hinge_transform(b["hinge"], q[sl[n][0]]) \
            @ inv(pose_matrix(b.get("pnode")))
        for f in b.get("frames", []):
            W[f["name"]] = W[n] @ pose_matrix(f)
    return W


def _unit(rng) -> list:
    v = rng.normal(size=3)
    return (v / np.linalg.norm(v)).tolist()


def _inertia(rng, m):
    """A physically valid inertia about the CoM: principal moments of a random box, random orientation."""
    a, b, c = rng.uniform(0.05, 0.5, 3)
    moments = m / 12 * np.array([b * b + c * c, a * a + c * c, a * a + b * b])
    Q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    return (Q @ np.diag(moments) @ Q.T).tolist()


def _pose(rng, scale=0.4) -> dict:
    return {"xyz": rng.uniform(-scale, scale, 3).tolist(), "rpy": rng.uniform(-np.pi, np.pi, 3).tolist()}


def random_q(doc, rng) -> np.ndarray:
    """Random symgen coordinates: angles in (-2, 2), displacements in (-0.5, 0.5), random unit quaternions."""
    by, q = _bodies(doc), []
    for n in symgen_order(doc):
        t = by[n]["hinge"]["type"]
        if t == "PIN":
            q += [rng.uniform(-2, 2)]
        elif t == "SLIDER":
            q += [rng.uniform(-0.5, 0.5)]
        else:
            quat = rng.normal(size=4)
            quat = (quat / np.linalg.norm(quat)).tolist()
            q += (rng.uniform(-1, 1, 3).tolist() + quat) if t == "FULL6DOF" else quat
    return np.array(q, float)


def _path_bodies(by, a, b) -> list:
    """Bodies whose hinges lie on the tree path between bodies a and b (each side up to the common ancestor)."""
    def chain(n):
        out = [n]
        while n != NEWTONIAN:
            n = by[n]["parent"]
            out.append(n)
        return out
    ca, cb = chain(a), chain(b)
    common = next(n for n in ca if n in cb)
    return ca[:ca.index(common)] + cb[:cb.index(common)]


def random_closed_chain_dict(seed: int, floating: bool = False, n_bodies: int = 7, n_loops: int = 2,
                             cut_types=("BALL", "LOCKED"), independent: bool = True, max_tries: int = 30):
    """``(doc, q_ref)``: a random tree of ``n_bodies`` bodies (PIN and SLIDER with random unit axes, BALL_QUAT;
    a FULL6DOF root with ``floating``) with ``n_loops`` cut joints (types drawn from ``cut_types``, each type
    used when ``n_loops`` allows), closed at the random configuration ``q_ref`` (symgen coordinates).

    Each loop joins a random frame ``<loop>_src`` on body A to ``<loop>_tgt`` on body B, A and B different and
    not parent and child (a grandparent, a cousin, another branch from newtonian...), preferring pairs whose
    tree path has more degrees of freedom than the cut removes.  ``<loop>_tgt`` is the world pose of
    ``<loop>_src`` at ``q_ref`` expressed in B's body frame (written as xyz + quat), so every loop is closed
    at ``q_ref``.  With ``independent`` each loop's pair is redrawn (up to ``max_tries``) until the loops' rows
    are independent at ``q_ref`` (rank = the sum of the cuts' ranks, checked with Pinocchio's frame Jacobians)
    and the mechanism keeps at least one degree of freedom (the most independent try wins otherwise); PIN cuts
    still bring one dependent row each.  The document lists the bodies shuffled (the loader accepts any
    order)."""
    rng = np.random.default_rng(seed)
    for attempt in range(200):      # enough degrees of freedom for the cuts: redraw the hinge types if not
        kinds = list(TREE_TYPES) + list(rng.choice(TREE_TYPES, size=max(0, n_bodies - 1 - 3), p=[0.3, 0.2, 0.5]))
        kinds = kinds[:n_bodies - 1]
        rng.shuffle(kinds)
        kinds = (["FULL6DOF"] if floating else [str(rng.choice(TREE_TYPES))]) + [str(k) for k in kinds]
        cuts = [cut_types[k % len(cut_types)] for k in range(n_loops)]
        dof = sum(HINGE_SIZES[k][1] for k in kinds) - (6 if floating else 0)
        if dof >= sum(CUT_RANK[c] for c in cuts) + 2:
            break
    else:
        raise ValueError(f"{n_bodies} bodies cannot carry the cuts {cuts} (floating={floating}) with 2 degrees "
                         "of freedom to spare: add bodies or drop loops")
    rng.shuffle(cuts)
    bodies = []
    for i, t in enumerate(kinds):
        name = f"b{i}"
        if i == 0:
            parent = NEWTONIAN
        elif not floating and rng.uniform() < 0.15:
            parent = NEWTONIAN                                  # another root: loops through the ground
        else:
            parent = f"b{int(rng.integers(max(0, i - 3), i))}"  # mostly recent bodies: deep branches
        m = float(rng.uniform(0.5, 3.0))
        hinge = {"type": t, "name": "root_joint" if t == "FULL6DOF" else f"h{i}_{t.lower()}"}
        if t in ("PIN", "SLIDER"):
            hinge["axis"] = _unit(rng)
        bodies.append({"name": name, "parent": parent, "mass": m, "com": rng.uniform(-0.2, 0.2, 3).tolist(),
                       "inertia": _inertia(rng, m), "hinge": hinge, "onode": _pose(rng), "pnode": _pose(rng, 0.2),
                       "frames": [{"name": f"f{i}", **_pose(rng)}]})
    name = f"closed{seed}{'f' if floating else ''}"
    doc = {"name": name, "gravity": [0.0, 0.0, -9.81], "bodies": bodies}
    by = _bodies(doc)
    q_ref = random_q(doc, rng)
    W = world_poses(doc, q_ref)
    # candidate pairs: different, not parent-child
    names = [b["name"] for b in bodies]
    pairs = [(a, b) for a in names for b in names if a < b and by[a]["parent"] != b and by[b]["parent"] != a]
    used, loops, want = set(), [], 0
    for k, cut in enumerate(cuts):
        def dof_of(p):
            return sum(HINGE_SIZES[by[n]["hinge"]["type"]][1] for n in _path_bodies(by, *p))
        free = [p for p in pairs if p not in used] or pairs
        best = [p for p in free if dof_of(p) >= CUT_RANK[cut] + 1] or \
               [p for p in free if dof_of(p) >= CUT_RANK[cut]] or \
               sorted(free, key=dof_of)[-3:]
        order = [best[i] for i in rng.permutation(len(best))][:max(1, max_tries if independent else 1)]
        want += CUT_RANK[cut]
        lname, chosen = f"loop{k}", None
        for a, b in order:
            if rng.uniform() < 0.5:
                a, b = b, a
            src = {"name": f"{lname}_src", **_pose(rng, 0.3)}
            F = W[a] @ pose_matrix(src)                             # source frame in the world at q_ref
            X = inv(W[b]) @ F                                        # ... expressed in B's body frame
            tgt = {"name": f"{lname}_tgt", "xyz": X[:3, 3].tolist(), "quat": matrix_quat(X[:3, :3]).tolist()}
            trial = (a, b, src, tgt, {"name": lname, "source": src["name"], "target": tgt["name"], "hinge": cut})
            if not independent:
                chosen = trial
                break
            # the loops so far plus this one: independent rows, and the mechanism still moves?
            by[a]["frames"].append(src)
            by[b]["frames"].append(tgt)
            doc["loops"] = loops + [trial[4]]
            pm, maps = pinocchio_model(doc)
            J = loop_kinematics(pm, doc, to_pin_q(maps, q_ref))["J"]
            rank = null_space(J)[1]
            by[a]["frames"].pop()
            by[b]["frames"].pop()
            if chosen is None or rank > chosen[5]:
                chosen = trial + (rank,)
            if rank == want and pm.nv - rank >= 1:
                break
        a, b, src, tgt, loop = chosen[:5]
        used.add(tuple(sorted((a, b))))
        by[a]["frames"].append(src)
        by[b]["frames"].append(tgt)
        loops.append(loop)
    doc["loops"] = loops
    # shuffle the body list, then re-express q_ref in the shuffled document's symgen order
    old = _slices(doc)
    perm = rng.permutation(len(bodies))
    doc["bodies"] = [bodies[i] for i in perm]
    new = _slices(doc)
    q = np.zeros_like(q_ref)
    for n, (sq, _) in new.items():
        q[sq] = q_ref[old[n][0]]
    return doc, q


def write_yaml(doc, directory) -> Path:
    """``<directory>/<name>.yaml`` (``yaml.safe_dump``: floats round-trip exactly)."""
    import yaml

    p = Path(directory) / f"{doc['name']}.yaml"
    p.write_text(yaml.safe_dump(doc, sort_keys=False))
    return p


# ------------------------------------------------------------------------------------------- Pinocchio
@dataclasses.dataclass
class HingeMap:
    name: str           # hinge name (= Pinocchio joint name)
    body: str
    type: str
    q: slice            # symgen Q slice
    u: slice            # symgen U slice
    jid: int            # Pinocchio joint id
    pq: slice           # Pinocchio q slice
    pv: slice           # Pinocchio v slice


@dataclasses.dataclass
class PinMaps:
    hinges: list        # HingeMap, symgen order
    nq: int
    nu: int
    joint_of_body: dict  # body name -> Pinocchio joint id
    floating: HingeMap | None = None

    def hinge(self, name) -> HingeMap:
        return next(h for h in self.hinges if h.name == name)


def pinocchio_model(doc):
    """``(pm, maps)``: the document's tree in Pinocchio, joints added depth first; body frames (``BODY``) named
    like the bodies, the document's frames as ``OP_FRAME`` s; gravity as in the document."""
    by, sl = _bodies(doc), _slices(doc)
    pm = pin.Model()
    pm.name = str(doc.get("name", "model"))
    g = np.asarray(doc.get("gravity", [0.0, 0.0, -9.81]), float)
    pm.gravity = pin.Motion(np.r_[g, 0.0, 0.0, 0.0])
    jid_of, bframe_of = {NEWTONIAN: 0}, {NEWTONIAN: 0}
    # the newtonian and the frames fixed on it: frames of the universe joint (no Jacobian columns)
    pm.addFrame(pin.Frame(NEWTONIAN, 0, 0, pin.SE3.Identity(), pin.FrameType.OP_FRAME))
    for f in doc.get("frames", []):
        pm.addFrame(pin.Frame(f["name"], 0, 0, se3(pose_matrix(f)), pin.FrameType.OP_FRAME))
    for n in depth_first_order(doc):
        b = by[n]
        h, parent = b["hinge"], b["parent"]
        t = h["type"]
        if t == "PIN":
            a = np.asarray(h.get("axis", (0, 0, 1)), float)
            jm = pin.JointModelRevoluteUnaligned(a / np.linalg.norm(a))
        elif t == "SLIDER":
            a = np.asarray(h.get("axis", (0, 0, 1)), float)
            jm = pin.JointModelPrismaticUnaligned(a / np.linalg.norm(a))
        elif t == "BALL_QUAT":
            jm = pin.JointModelSpherical()
        elif t == "FULL6DOF":
            jm = pin.JointModelFreeFlyer()
        else:
            raise ValueError(t)
        # parent joint frame = parent's pframe; the parent's body frame sits at pnode_parent^-1 in it
        place = pose_matrix(b.get("onode"))
        if parent != NEWTONIAN:
            place = inv(pose_matrix(by[parent].get("pnode"))) @ place
        jid = pm.addJoint(jid_of[parent], jm, se3(place), _hinge_name(b))
        jid_of[n] = jid
        body_in_joint = se3(inv(pose_matrix(b.get("pnode"))))
        pm.appendBodyToJoint(jid, pin.Inertia(float(b["mass"]), np.asarray(b.get("com", [0, 0, 0]), float),
                                              np.asarray(b["inertia"], float)), body_in_joint)
        bframe_of[n] = pm.addBodyFrame(n, jid, body_in_joint, bframe_of[parent])
        for f in b.get("frames", []):
            pm.addFrame(pin.Frame(f["name"], jid, bframe_of[n], body_in_joint * se3(pose_matrix(f)),
                                  pin.FrameType.OP_FRAME))
    hinges, floating = [], None
    for n in symgen_order(doc):
        jm = pm.joints[jid_of[n]]
        hm = HingeMap(_hinge_name(by[n]), n, by[n]["hinge"]["type"], sl[n][0], sl[n][1], jid_of[n],
                      slice(jm.idx_q, jm.idx_q + jm.nq), slice(jm.idx_v, jm.idx_v + jm.nv))
        assert (jm.nq, jm.nv) == HINGE_SIZES[hm.type]
        hinges.append(hm)
        if hm.type == "FULL6DOF":
            floating = hm
    nq = sum(HINGE_SIZES[h.type][0] for h in hinges)
    nu = sum(HINGE_SIZES[h.type][1] for h in hinges)
    assert (nq, nu) == (pm.nq, pm.nv)
    return pm, PinMaps(hinges, nq, nu, {n: jid_of[n] for n in by}, floating)


# ------------------------------------------------------------------------------------------ state maps
def to_pin_q(maps: PinMaps, q) -> np.ndarray:
    qp = np.zeros(maps.nq)
    for h in maps.hinges:
        qp[h.pq] = q[h.q]
    return qp


def from_pin_q(maps: PinMaps, qp) -> np.ndarray:
    q = np.zeros(maps.nq)
    for h in maps.hinges:
        q[h.q] = qp[h.pq]
    return q


def u_matrix(maps: PinMaps, q) -> np.ndarray:
    """T (nu x nv) with u_symgen = T v_pin (q: symgen coordinates): a permutation, and R of the FULL6DOF hinge
    on its p_dot rows."""
    T = np.zeros((maps.nu, maps.nu))
    for h in maps.hinges:
        T[h.u, h.pv] = np.eye(h.u.stop - h.u.start)
    if maps.floating is not None:
        h = maps.floating
        T[h.u.start:h.u.start + 3, h.pv.start:h.pv.start + 3] = quat_matrix(q[h.q][3:7])
    return T


def _tdot_v(maps: PinMaps, q, v) -> np.ndarray:
    """T_dot v: R [w]x v_lin on the FULL6DOF p_dot rows (w, v_lin: Pinocchio's free-flyer velocity)."""
    out = np.zeros(maps.nu)
    if maps.floating is not None:
        h = maps.floating
        vf = v[h.pv]
        out[h.u.start:h.u.start + 3] = quat_matrix(q[h.q][3:7]) @ np.cross(vf[3:6], vf[:3])
    return out


def to_pin_state(maps: PinMaps, q, u):
    """``(q_pin, v_pin)`` from symgen's ``(q, u)``."""
    return to_pin_q(maps, q), np.linalg.solve(u_matrix(maps, q), u)


def from_pin_state(maps: PinMaps, qp, v):
    """``(q, u)`` from Pinocchio's ``(q_pin, v_pin)``."""
    q = from_pin_q(maps, qp)
    return q, u_matrix(maps, q) @ v


def from_pin_accel(maps: PinMaps, q, v, a) -> np.ndarray:
    """udot = d/dt (T v) = T a + T_dot v (q: symgen, v, a: Pinocchio)."""
    return u_matrix(maps, q) @ a + _tdot_v(maps, q, v)


def to_pin_accel(maps: PinMaps, q, u, udot) -> np.ndarray:
    """a_pin from symgen's (q, u, udot)."""
    T = u_matrix(maps, q)
    v = np.linalg.solve(T, u)
    return np.linalg.solve(T, udot - _tdot_v(maps, q, v))


def to_pin_tau(maps: PinMaps, q, tau_symgen) -> np.ndarray:
    """Power balance tau_sym . u = tau_pin . v: tau_pin = T^T tau_sym."""
    return u_matrix(maps, q).T @ tau_symgen


def from_pin_tau(maps: PinMaps, q, tau_pin) -> np.ndarray:
    return np.linalg.solve(u_matrix(maps, q).T, tau_pin)


# ----------------------------------------------------------------------------------------- constraints
def _cut_points(pm, doc):
    """Per loop: (name, cut type, [(joint1, placement1, joint2, placement2, kind 3/6)])."""
    out = []
    for lc in doc.get("loops", []):
        htype = (lc["hinge"]["type"] if isinstance(lc["hinge"], dict) else lc["hinge"]).upper()
        fs, ft = pm.frames[pm.getFrameId(lc["source"])], pm.frames[pm.getFrameId(lc["target"])]
        Ms, Mt = pin.SE3(fs.placement), pin.SE3(ft.placement)
        if htype == "BALL":
            pts = [(fs.parentJoint, Ms, ft.parentJoint, Mt, 3)]
        elif htype == "LOCKED":
            pts = [(fs.parentJoint, Ms, ft.parentJoint, Mt, 6)]
        elif htype == "PIN":      # the axis is the source frame's z: two points on it
            ez = pin.SE3(np.eye(3), np.array([0.0, 0.0, 1.0]))
            pts = [(fs.parentJoint, Ms, ft.parentJoint, Mt, 3), (fs.parentJoint, Ms * ez, ft.parentJoint, Mt * ez, 3)]
        else:
            raise ValueError(f"cut type {htype} not supported here")
        out.append((lc["name"], htype, pts))
    return out


def constraint_models(pm, doc) -> list:
    """``pin.RigidConstraintModel`` s of the document's loops (reference frame LOCAL, Baumgarte gains 0):
    CONTACT_3D per BALL, CONTACT_6D per LOCKED, two CONTACT_3D per PIN (the frame origin and one unit along the
    source frame's z; 6 rows of rank 5).  joint1 = the source frame's joint, joint2 = the target's."""
    cms = []
    for name, htype, pts in _cut_points(pm, doc):
        for k, (j1, M1, j2, M2, kind) in enumerate(pts):
            ct = pin.ContactType.CONTACT_3D if kind == 3 else pin.ContactType.CONTACT_6D
            cm = pin.RigidConstraintModel(ct, pm, j1, M1, j2, M2, pin.LOCAL)
            cm.name = name if len(pts) == 1 else f"{name}_{k}"
            bp = cm.m_baumgarte_parameters
            bp.Kp, bp.Kd = 0.0, 0.0
            cm.setBaumgarteCorrectorParameters(bp)
            cms.append(cm)
    return cms


def _point(pm, pd, j, M):
    """World pose, LOCAL_WORLD_ALIGNED Jacobian [lin; ang] (6 x nv), and LWA classical acceleration [lin; ang]
    of the frame M on joint j, from data after forwardKinematics(q, v, a) and computeJointJacobians(q)."""
    oM = pd.oMi[j] * M
    J = M.toActionMatrixInverse() @ pin.getJointJacobian(pm, pd, j, pin.LOCAL)     # frame-local
    vl, al = M.actInv(pd.v[j]), M.actInv(pd.a[j])
    acc = np.r_[al.linear + np.cross(vl.angular, vl.linear), al.angular]           # classical, local
    R = oM.rotation
    return oM, np.vstack([R @ J[:3], R @ J[3:]]), np.r_[R @ acc[:3], R @ acc[3:]]


def loop_kinematics(pm, doc, q_pin, v_pin=None, a_pin=None) -> dict:
    """The loops in world axes without Pinocchio's contact code: ``pos`` (per loop: translation gap and,
    LOCKED, rotation gap |log(R_s^T R_t)|; PIN: axis misalignment), ``J`` (rows x nv; translation rows of the
    source minus the target, LOCKED also angular rows) and ``acc`` = J a + gamma (the relative classical
    acceleration at a_pin; at a_pin = 0 it is the drift gamma)."""
    v = np.zeros(pm.nv) if v_pin is None else v_pin
    a = np.zeros(pm.nv) if a_pin is None else a_pin
    pd = pm.createData()
    pin.forwardKinematics(pm, pd, q_pin, v, a)
    pin.computeJointJacobians(pm, pd, q_pin)
    pos, Js, accs = {}, [], []
    for name, htype, pts in _cut_points(pm, doc):
        gaps = []
        for j1, M1, j2, M2, kind in pts:
            o1, J1, a1 = _point(pm, pd, j1, M1)
            o2, J2, a2 = _point(pm, pd, j2, M2)
            rows = slice(0, 6) if kind == 6 else slice(0, 3)
            Js.append((J1 - J2)[rows])
            accs.append((a1 - a2)[rows])
            gaps.append(np.linalg.norm(o1.translation - o2.translation))
            if kind == 6:
                gaps.append(np.linalg.norm(pin.log3(o1.rotation.T @ o2.rotation)))
            if htype == "PIN":
                gaps.append(1.0 - float(o1.rotation[:, 2] @ o2.rotation[:, 2]))
        pos[name] = max(gaps)
    J = np.vstack(Js) if Js else np.zeros((0, pm.nv))
    return {"pos": pos, "J": J, "acc": np.concatenate(accs) if accs else np.zeros(0)}


def pin_constraint_jacobian(pm, cmodels, q_pin) -> np.ndarray:
    """``pin.getConstraintsJacobian`` at q_pin (after initConstraintDynamics, computeAllTerms and each
    constraint's ``calc``)."""
    pd = pm.createData()
    cds = [cm.createData() for cm in cmodels]
    pin.initConstraintDynamics(pm, pd, cmodels, cds)
    pin.computeAllTerms(pm, pd, q_pin, np.zeros(pm.nv))
    for cm, cd in zip(cmodels, cds):
        cm.calc(pm, pd, cd)
    return np.array(pin.getConstraintsJacobian(pm, pd, cmodels, cds))


def source_rotations(pm, cmodels, q_pin) -> np.ndarray:
    """Block diagonal of the world rotations of each constraint's frame 1 (one 3x3 block per 3 rows):
    ``getConstraintsJacobian`` (LOCAL) = B^T J (world axes, source minus target)."""
    pd = pm.createData()
    pin.forwardKinematics(pm, pd, q_pin)
    blocks = []
    for cm in cmodels:
        R = (pd.oMi[cm.joint1_id] * cm.joint1_placement).rotation
        blocks += [R] * (1 if cm.type == pin.ContactType.CONTACT_3D else 2)
    out = np.zeros((3 * len(blocks), 3 * len(blocks)))
    for i, R in enumerate(blocks):
        out[3 * i:3 * i + 3, 3 * i:3 * i + 3] = R
    return out


def null_space(J, rtol=1e-10):
    """(orthonormal basis of the null space of J, rank of J) by SVD."""
    if J.shape[0] == 0:
        return np.eye(J.shape[1]), 0
    _, s, Vt = np.linalg.svd(J)
    rank = int(np.sum(s > rtol * max(1.0, s[0])))
    return Vt[rank:].T, rank


def consistent_velocity(pm, cmodels, q_pin, rng) -> np.ndarray:
    """Random v_pin with J v = 0 (J: Pinocchio's constraint Jacobian at q_pin; null space by SVD)."""
    N, _ = null_space(pin_constraint_jacobian(pm, cmodels, q_pin))
    return N @ rng.normal(size=N.shape[1])


def dense_constrained_fd(pm, q_pin, v_pin, tau_pin, J, gamma):
    """Accelerations from Pinocchio's M (crba) and nonlinear effects (rnea at a = 0, gravity included) with the
    constraints J a + gamma = 0: ``(a_kkt, a_null)``, the KKT solve (None when J has dependent rows) and the
    null-space solve (minimum of Gauss's function on the constraint manifold; valid for redundant rows)."""
    pd = pm.createData()
    M = pin.crba(pm, pd, q_pin)
    M = np.triu(M) + np.triu(M, 1).T
    h = pin.rnea(pm, pd, q_pin, v_pin, np.zeros(pm.nv))
    N, rank = null_space(J)
    a_kkt = None
    m = J.shape[0]
    if rank == m:
        K = np.block([[M, J.T], [J, np.zeros((m, m))]])
        a_kkt = np.linalg.solve(K, np.r_[tau_pin - h, -gamma])[:pm.nv]
    a0 = np.linalg.lstsq(J, -gamma, rcond=None)[0] if m else np.zeros(pm.nv)
    z = np.linalg.solve(N.T @ M @ N, N.T @ (tau_pin - h - M @ a0))
    return a_kkt, a0 + N @ z


def pin_constrained_fd(pm, cmodels, q_pin, v_pin, tau_pin, doc=None, check=True, tol=1e-9, report=None):
    """a_pin by ``pin.constraintDynamics`` (``ProximalSettings(1e-12, 1e-6, 200)``).

    With ``check`` (needs ``doc``): asserts that (1) a satisfies the loops' acceleration constraints of
    :func:`loop_kinematics` (world axes, Pinocchio's frame kinematics) and those of Pinocchio's own constraint
    Jacobian with the drift ``J a(0)``: |J a + gamma| <= tol * scale; (2) a agrees with the dense solves
    (KKT when the rows are independent, null space always) to tol relative.  ``report``: a dict that receives
    the numbers."""
    pd = pm.createData()
    cds = [cm.createData() for cm in cmodels]
    pin.initConstraintDynamics(pm, pd, cmodels, cds)
    prox = pin.ProximalSettings(*PROX)
    a = np.array(pin.constraintDynamics(pm, pd, q_pin, v_pin, tau_pin, cmodels, cds, prox))
    if not check:
        return a
    assert doc is not None, "pin_constrained_fd(check=True) needs the model document"
    k0 = loop_kinematics(pm, doc, q_pin, v_pin)            # J and gamma (a = 0), independent of contacts
    J, gamma = k0["J"], k0["acc"]
    scale = max(1.0, float(np.max(np.abs(a))), float(np.max(np.abs(gamma), initial=0.0)))
    res_world = float(np.max(np.abs(loop_kinematics(pm, doc, q_pin, v_pin, a)["acc"]), initial=0.0)) / scale
    # Pinocchio's own constraint Jacobian: LOCAL axes of each constraint's source frame (contact frame 1)
    Jp = pin_constraint_jacobian(pm, cmodels, q_pin)
    B = source_rotations(pm, cmodels, q_pin)
    jac_local = float(np.max(np.abs(Jp - B.T @ J), initial=0.0)) / max(1.0, float(np.max(np.abs(J), initial=0.0)))
    res_local = float(np.max(np.abs(Jp @ a + B.T @ gamma), initial=0.0)) / scale
    a_kkt, a_null = dense_constrained_fd(pm, q_pin, v_pin, tau_pin, J, gamma)
    den = max(1.0, float(np.max(np.abs(a_null))))
    err_null = float(np.max(np.abs(a - a_null))) / den
    err_kkt = None if a_kkt is None else float(np.max(np.abs(a - a_kkt))) / den
    if report is not None:
        report.update(residual=res_world, residual_local=res_local, jac_local=jac_local, err_null=err_null,
                      err_kkt=err_kkt, rank=null_space(J)[1], rows=J.shape[0], iters=prox.iter,
                      relative_residual=prox.relative_residual)
    assert res_world < tol, f"constraintDynamics violates the loop accelerations by {res_world:.3g}"
    assert res_local < tol, f"constraintDynamics violates Pinocchio's constraint rows by {res_local:.3g}"
    assert jac_local < 1e-12, f"getConstraintsJacobian and the loops' Jacobian differ ({jac_local:.3g})"
    assert err_null < tol, f"constraintDynamics and the null-space solve differ by {err_null:.3g}"
    assert err_kkt is None or err_kkt < tol, f"constraintDynamics and the KKT solve differ by {err_kkt:.3g}"
    return a


# ------------------------------------------------------------------ mechanisms a new user would write
#: rank of the cut types the generic oracle handles (a virtual chain of the cut's subhinges welded to the target)
GENERIC_RANK = {"UJOINT": 4, "CUSTOM": 4}
POINT_CUTS = ("BALL", "LOCKED", "PIN")


def _cut_type(lc) -> str:
    return (lc["hinge"]["type"] if isinstance(lc["hinge"], dict) else lc["hinge"]).upper()


def _cut_rank(lc) -> int:
    t = _cut_type(lc)
    if t == "CUSTOM":
        return 6 - len(lc["hinge"]["subhinges"])
    return CUT_RANK.get(t) or GENERIC_RANK[t]


def mechanism(seed: int, bodies, loops, name: str, tries: int = 40):
    """``(doc, q_ref)``: a mechanism of fixed topology with random geometry, closed at a random q_ref.

    ``bodies``: ``[(name, parent, hinge type)]`` (PIN / SLIDER get random unit axes); ``loops``:
    ``[(loop name, source side, target side, cut)]`` where a side is a body name, ``"newtonian"`` (the node is
    the newtonian frame itself) or ``"ground"`` (a new frame fixed on the newtonian, in the document's top-level
    ``frames:``).  A body side gets a random frame; the other side is placed where it is at q_ref (a newtonian
    side: the body side's frame is put at the world origin).  Geometry is redrawn until the loops' rows are
    independent at q_ref (rank = the sum of the cuts' ranks, Pinocchio's kinematics) and at least one degree of
    freedom is left."""
    for attempt in range(tries):
        rng = np.random.default_rng(1000 * seed + attempt)
        docb = []
        for n, parent, t in bodies:
            m = float(rng.uniform(0.5, 3.0))
            hinge = {"type": t, "name": f"h_{n}"}
            if t in ("PIN", "SLIDER"):
                hinge["axis"] = _unit(rng)
            docb.append({"name": n, "parent": parent, "mass": m, "com": rng.uniform(-0.2, 0.2, 3).tolist(),
                         "inertia": _inertia(rng, m), "hinge": hinge, "onode": _pose(rng), "pnode": _pose(rng, 0.2),
                         "frames": []})
        doc = {"name": name, "gravity": [0.0, 0.0, -9.81], "bodies": docb, "frames": [], "loops": []}
        by = _bodies(doc)
        q_ref = random_q(doc, rng)
        W = world_poses(doc, q_ref)
        for lname, a, b, cut in loops:
            sides = {}
            if NEWTONIAN in (a, b):
                F = np.eye(4)
            elif a in by:
                F = W[a] @ pose_matrix(_pose(rng, 0.3))
            elif b in by:
                F = W[b] @ pose_matrix(_pose(rng, 0.3))
            else:
                raise ValueError(f"loop {lname}: one side must be a body")
            for key, side in (("source", a), ("target", b)):
                fname = f"{lname}_{'src' if key == 'source' else 'tgt'}"
                if side == NEWTONIAN:
                    sides[key] = NEWTONIAN
                    continue
                if side == "ground":
                    X = F
                    doc["frames"].append({"name": fname, "xyz": X[:3, 3].tolist(),
                                          "quat": matrix_quat(X[:3, :3]).tolist()})
                else:
                    X = inv(W[side]) @ F
                    by[side]["frames"].append({"name": fname, "xyz": X[:3, 3].tolist(),
                                               "quat": matrix_quat(X[:3, :3]).tolist()})
                sides[key] = fname
            doc["loops"].append({"name": lname, **sides, "hinge": cut})
        pm, maps = pinocchio_model(doc)
        J, _ = all_cut_rows(pm, doc, to_pin_q(maps, q_ref))
        want = sum(_cut_rank(lc) for lc in doc["loops"])
        if null_space(J)[1] == want and pm.nv - want >= 1:
            return doc, q_ref
    raise ValueError(f"{name}: no geometry with independent loop rows in {tries} tries")


def _virtual_chain(lc):
    """The cut joint's subhinges as (kind, unit axis): UJOINT = PIN x then PIN y (DESIGN.md), CUSTOM as given."""
    t = _cut_type(lc)
    if t == "UJOINT":
        return [("PIN", (1.0, 0.0, 0.0)), ("PIN", (0.0, 1.0, 0.0))]
    if t == "CUSTOM":
        return list(zip(lc["hinge"]["subhinges"], [tuple(map(float, a)) for a in lc["hinge"]["axes"]]))
    if t == "PIN":
        return [("PIN", tuple(map(float, lc["hinge"].get("axis", (0, 0, 1))) if isinstance(lc["hinge"], dict)
                               else (0.0, 0.0, 1.0)))]
    raise ValueError(f"cut type {t} not supported by the virtual-chain oracle")


def augmented_model(pm, doc, loops):
    """``(pa, [(E frame id, T frame id, virtual v columns)])``: Pinocchio's model plus, per loop in ``loops``,
    a chain of massless joints (the cut joint's subhinges: RevoluteUnaligned / PrismaticUnaligned) from the
    source frame to a frame E; the cut joint is then a weld of E to the target (6 rows), its own coordinates
    the virtual joints'."""
    pa = pin.Model(pm)
    out = []
    for lc in loops:
        fs = pa.frames[pa.getFrameId(lc["source"])]
        parent, place, first = fs.parentJoint, pin.SE3(fs.placement), None
        for k, (kind, axis) in enumerate(_virtual_chain(lc)):
            a = np.asarray(axis, float) / np.linalg.norm(axis)
            jm = pin.JointModelRevoluteUnaligned(a) if kind == "PIN" else pin.JointModelPrismaticUnaligned(a)
            parent = pa.addJoint(parent, jm, place, f"{lc['name']}_virtual{k}")
            first = pa.joints[parent].idx_v if first is None else first
            place = pin.SE3.Identity()
        e = pa.addFrame(pin.Frame(f"{lc['name']}_E", parent, 0, pin.SE3.Identity(), pin.FrameType.OP_FRAME))
        out.append((e, pa.getFrameId(lc["target"]), slice(first, pa.joints[parent].idx_v + 1)))
    return pa, out


def _fit_virtual(pa, pd, qa, E, T, cols, nq_real, nv_real):
    """Gauss-Newton on the virtual joints' q (revolute / prismatic: one q per v, after the real ones) to weld
    E onto T."""
    qs = slice(nq_real + cols.start - nv_real, nq_real + cols.stop - nv_real)
    for _ in range(100):
        pin.framesForwardKinematics(pa, pd, qa)
        err = pin.log6(pd.oMf[E].actInv(pd.oMf[T])).vector
        if np.max(np.abs(err)) < 1e-15:
            break
        pin.computeJointJacobians(pa, pd, qa)
        J = pin.getFrameJacobian(pa, pd, E, pin.LOCAL)[:, cols]
        qa[qs] += np.linalg.lstsq(J, err, rcond=None)[0]
    return qa


def generic_cut_rows(pm, doc, q_pin, v_pin=None, loops=None):
    """``(G, gamma)`` of the cuts in ``loops`` (default: the UJOINT / CUSTOM loops of ``doc``) by the virtual
    chain: with the weld's relative Jacobian ``[Jr Jv]`` (E minus T, world axes, Pinocchio's frame Jacobians)
    and drift ``g`` (E's minus T's classical acceleration at a = 0 and the virtual joints' rates w with
    ``Jr v + Jv w = 0``), the rows on the real coordinates are ``N^T Jr`` and ``N^T g``, N the left null space of
    Jv (the virtual joints are massless and unactuated: the weld's force does no work on them)."""
    loops = [lc for lc in doc.get("loops", []) if _cut_type(lc) in GENERIC_RANK] if loops is None else loops
    if not loops:
        return np.zeros((0, pm.nv)), np.zeros(0)
    v = np.zeros(pm.nv) if v_pin is None else v_pin
    pa, welds = augmented_model(pm, doc, loops)
    pd = pa.createData()
    qa = np.r_[q_pin, np.zeros(pa.nq - pm.nq)]
    for E, T, cols in welds:
        qa = _fit_virtual(pa, pd, qa, E, T, cols, pm.nq, pm.nv)
    pin.framesForwardKinematics(pa, pd, qa)
    for E, T, _ in welds:
        assert np.max(np.abs(pin.log6(pd.oMf[E].actInv(pd.oMf[T])).vector)) < 1e-12, "the cut joint cannot reach"
    pin.computeJointJacobians(pa, pd, qa)
    Gs, gs, w = [], [], np.zeros(pa.nv - pm.nv)
    Jrel = {}
    for E, T, cols in welds:
        J = np.vstack([pin.getFrameJacobian(pa, pd, f, pin.LOCAL_WORLD_ALIGNED) for f in (E,)]) \
            - pin.getFrameJacobian(pa, pd, T, pin.LOCAL_WORLD_ALIGNED)
        Jrel[E] = J
        vc = slice(cols.start - pm.nv, cols.stop - pm.nv)
        w[vc] = -np.linalg.lstsq(J[:, cols], J[:, :pm.nv] @ v, rcond=None)[0]
    va = np.r_[v, w]
    pin.forwardKinematics(pa, pd, qa, va, np.zeros(pa.nv))
    pin.updateFramePlacements(pa, pd)
    for E, T, cols in welds:
        J = Jrel[E]
        assert np.max(np.abs(J @ va)) < 1e-11 * max(1.0, np.max(np.abs(va))), "the velocity opens the loop"
        acc = [pin.getFrameClassicalAcceleration(pa, pd, f, pin.LOCAL_WORLD_ALIGNED).vector for f in (E, T)]
        g = acc[0] - acc[1]
        U, s, _ = np.linalg.svd(J[:, cols])
        N = U[:, (cols.stop - cols.start):]
        Gs.append(N.T @ J[:, :pm.nv])
        gs.append(N.T @ g)
    return np.vstack(Gs), np.concatenate(gs)


def all_cut_rows(pm, doc, q_pin, v_pin=None):
    """``(J, gamma)`` of every loop: the point cuts (BALL / LOCKED / PIN) by :func:`loop_kinematics`, the others
    by :func:`generic_cut_rows`; ``J a + gamma = 0`` are the acceleration constraints."""
    point = {**doc, "loops": [lc for lc in doc.get("loops", []) if _cut_type(lc) in POINT_CUTS]}
    k = loop_kinematics(pm, point, q_pin, v_pin)
    G, g = generic_cut_rows(pm, doc, q_pin, v_pin)
    return np.vstack([k["J"], G]), np.r_[k["acc"], g]
