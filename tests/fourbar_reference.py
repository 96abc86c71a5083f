"""An independent reference (oracle) for the planar four-bar of ``examples/models/fourbar.yaml``.

Nothing here uses symgen: the equations come from ``sympy.physics.mechanics.KanesMethod`` with holonomic
constraints, the numbers from the YAML (read with pyyaml), and the integration from scipy.

Coordinates (symgen's PIN hinges, U = Qdot):

* ``q1`` -- crank angle: the crank's x axis from world x (crank pivot A = crank onode in newtonian);
* ``q2`` -- coupler angle RELATIVE to the crank (coupler pivot B = coupler onode on the crank);
* ``q3`` -- rocker angle: the rocker's x axis from world x (rocker pivot D = rocker onode in newtonian).

Loop closure (two scalar holonomic constraints in the plane): the coupler's ``coupler_tip`` frame origin
coincides with the rocker's ``rocker_tip`` frame origin.  Each body's frame origin sits at its pivot, ``com``
is in body axes and ``inertia`` [Ixx, Iyy, Izz] is about the CoM in body axes (3 or 6 numbers or 3x3; only Izz enters the plane).

Public functions::

    load_fourbar(path=DEFAULT_PATH)                        -> dict of parameters
    assemble(params, q1)                                   -> (q1, q2, q3)
    consistent_speeds(params, q, q1dot)                    -> (u1, u2, u3)
    constraint_residual(params, q)                         -> (2,) tip_coupler - tip_rocker, world x/y
    velocity_residual(params, q, u)                        -> (2,) its time derivative
    simulate_reference(params, q0, u0, t_eval)             -> (Q, U), each (len(t_eval), 3)
    energy(params, q, u)                                   -> kinetic + gravitational potential

The symbolic derivation keeps every parameter a symbol, so it is done (and lambdified) once per process
(``functools.lru_cache``) whatever the parameter values.  ``python tests/fourbar_reference.py`` runs
``_self_check()``: energy, constraint drift, and a cross-check against a plain-numpy Lagrange-multiplier DAE
in maximal coordinates.
"""
from __future__ import annotations

import functools
import math
from pathlib import Path

import numpy as np
import yaml

DEFAULT_PATH = Path(__file__).resolve().parent.parent / "examples" / "models" / "fourbar.yaml"

#: the parameter vector's order (every one a sympy symbol in the derivation)
PARAM_NAMES = (
    "gx", "gy",
    "m1", "c1x", "c1y", "I1",          # crank: mass, CoM (body frame), Izz about the CoM
    "m2", "c2x", "c2y", "I2",          # coupler
    "m3", "c3x", "c3y", "I3",          # rocker
    "ax", "ay",                        # crank pivot A in newtonian
    "bx", "by",                        # coupler pivot B in the crank frame
    "dx", "dy",                        # rocker pivot D in newtonian
    "px", "py",                        # loop point on the coupler, coupler frame
    "rx", "ry",                        # loop point on the rocker, rocker frame
)

_BODIES = ("crank", "coupler", "rocker")
_PARENTS = {"crank": "newtonian", "coupler": "crank", "rocker": "newtonian"}


# ----------------------------------------------------------------------------------------------- loading
def _xyz(v, where):
    a = np.asarray(v, dtype=float).reshape(-1)
    if a.shape != (3,):
        raise ValueError(f"{where}: expected 3 numbers, got {v!r}")
    return a


def _node_xyz(node, where):
    """The xyz of a node that must not turn (this oracle knows only pure offsets)."""
    if node is None:
        return np.zeros(3)
    rpy = np.asarray(node.get("rpy", [0, 0, 0]), float)
    quat = np.asarray(node.get("quat", [0, 0, 0, 1]), float)
    if np.any(rpy != 0) or not (np.allclose(quat, [0, 0, 0, 1]) or np.allclose(quat, [0, 0, 0, -1])):
        raise ValueError(f"{where}: the four-bar reference supports untilted nodes only (xyz)")
    return _xyz(node.get("xyz", [0, 0, 0]), where)


def _izz(v, where) -> float:
    """Izz about the CoM from [Ixx, Iyy, Izz], [Ixx, Iyy, Izz, Ixy, Ixz, Iyz] or a 3x3 matrix.  Only Izz
    enters a motion about z (Ixz, Iyz load the hinges out of the plane, never the planar motion)."""
    a = np.asarray(v, dtype=float)
    if a.shape in ((3,), (6,)):
        return float(a[2])
    if a.shape == (3, 3):
        return float(a[2, 2])
    raise ValueError(f"{where}: expected [Ixx, Iyy, Izz], 6 numbers or a 3x3 matrix, got {v!r}")


def load_fourbar(path=DEFAULT_PATH) -> dict:
    """Read the four-bar's numbers from the YAML.

    Returns a dict with every name of :data:`PARAM_NAMES` (floats), plus ``"name"``, ``"gravity"`` (3,)
    and ``"vector"`` (the parameters in :data:`PARAM_NAMES` order, a tuple -- hashable).  The topology this
    oracle is written for (crank and rocker on newtonian, coupler on crank, PIN hinges about z, the loop
    from a coupler frame to a rocker frame) is checked, so a changed model fails loudly here.
    """
    with open(path) as fh:
        doc = yaml.safe_load(fh)
    bodies = {b["name"]: b for b in doc["bodies"]}
    if set(bodies) != set(_BODIES):
        raise ValueError(f"{path}: expected bodies {_BODIES}, got {sorted(bodies)}")
    frames = {}
    for name in _BODIES:
        b = bodies[name]
        if b["parent"] != _PARENTS[name]:
            raise ValueError(f"{path}: {name}'s parent is {b['parent']!r}, expected {_PARENTS[name]!r}")
        h = b["hinge"]
        if h["type"] != "PIN" or not np.allclose(_xyz(h.get("axis", [0, 0, 1]), name), [0, 0, 1]):
            raise ValueError(f"{path}: {name}'s hinge must be a PIN about z")
        if b.get("pnode") is not None:
            raise ValueError(f"{path}: {name}: the four-bar reference does not support a pnode")
        for f in b.get("frames", []) or []:
            frames[f["name"]] = (name, _node_xyz(f, f"{name} frame {f['name']}"))
    if len(doc.get("loops", [])) != 1:
        raise ValueError(f"{path}: expected exactly one loop")
    loop = doc["loops"][0]
    if loop["hinge"]["type"] != "PIN":
        raise ValueError(f"{path}: the loop hinge must be a PIN")
    src_body, p = frames[loop["source"]]
    tgt_body, r = frames[loop["target"]]
    if (src_body, tgt_body) != ("coupler", "rocker"):
        raise ValueError(f"{path}: the loop must join a coupler frame to a rocker frame")

    g = _xyz(doc["gravity"], "gravity")
    if g[2] != 0.0:
        raise ValueError(f"{path}: gravity must lie in the x-y plane")
    P = {"name": doc.get("name", "fourbar"), "gravity": g, "gx": g[0], "gy": g[1]}
    for i, name in enumerate(_BODIES, start=1):
        b = bodies[name]
        com = _xyz(b["com"], f"{name} com")
        P[f"m{i}"] = float(b["mass"])
        P[f"c{i}x"], P[f"c{i}y"] = float(com[0]), float(com[1])
        P[f"I{i}"] = _izz(b["inertia"], f"{path}: {name} inertia")
    A = _node_xyz(bodies["crank"].get("onode"), "crank onode")
    B = _node_xyz(bodies["coupler"].get("onode"), "coupler onode")
    D = _node_xyz(bodies["rocker"].get("onode"), "rocker onode")
    for key, v in (("a", A), ("b", B), ("d", D), ("p", p), ("r", r)):
        P[key + "x"], P[key + "y"] = float(v[0]), float(v[1])
    P["vector"] = tuple(float(P[k]) for k in PARAM_NAMES)
    return P


def _pvec(params) -> tuple:
    return tuple(float(params[k]) for k in PARAM_NAMES)


# --------------------------------------------------------------------------------------------- geometry
def _rot(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s], [s, c]])


def _points(params, q):
    """World (x, y) of the pivots A, B, D and of the two loop points (coupler side, rocker side)."""
    P = params
    q1, q2, q3 = (float(v) for v in q)
    A = np.array([P["ax"], P["ay"]])
    B = A + _rot(q1) @ [P["bx"], P["by"]]
    D = np.array([P["dx"], P["dy"]])
    Cc = B + _rot(q1 + q2) @ [P["px"], P["py"]]
    Cr = D + _rot(q3) @ [P["rx"], P["ry"]]
    return A, B, D, Cc, Cr


def constraint_residual(params, q) -> np.ndarray:
    """(2,): world position of the coupler's loop point minus the rocker's (zero when closed)."""
    _, _, _, Cc, Cr = _points(params, q)
    return Cc - Cr


def velocity_residual(params, q, u) -> np.ndarray:
    """(2,): world velocity of the coupler's loop point minus the rocker's (zero when consistent)."""
    return np.asarray(_derived()["phi_q"](*q, *_pvec(params)), float) @ np.asarray(u, float)


def assemble(params, q1):
    """The closed configuration (q1, q2, q3) for crank angle ``q1``, on the branch whose loop point lies
    above the x axis (y > 0) -- for this model, the loop point to the LEFT of the directed line B -> D,
    which is the branch continuous through the y > 0 solution at q1 = 0.  Closed-form circle intersection,
    then Newton on (q2, q3) until the residual is below 1e-14 (ValueError when the loop cannot close).
    """
    P = params
    q1 = float(q1)
    _, B, D, _, _ = _points(P, (q1, 0.0, 0.0))
    Lc = math.hypot(P["px"], P["py"])           # |B C| fixed in the coupler
    Lr = math.hypot(P["rx"], P["ry"])           # |D C| fixed in the rocker
    BD = D - B
    d = float(np.hypot(*BD))
    if not (abs(Lc - Lr) < d < Lc + Lr):
        raise ValueError(f"the loop cannot close at q1 = {q1}: |BD| = {d}, links {Lc}, {Lr}")
    a = (d * d + Lc * Lc - Lr * Lr) / (2 * d)
    h = math.sqrt(max(Lc * Lc - a * a, 0.0))
    e = BD / d
    n = np.array([-e[1], e[0]])                 # left normal of B -> D
    C = B + a * e + h * n
    q2 = math.atan2(C[1] - B[1], C[0] - B[0]) - math.atan2(P["py"], P["px"]) - q1
    q3 = math.atan2(C[1] - D[1], C[0] - D[0]) - math.atan2(P["ry"], P["rx"])
    q2 = math.remainder(q2, 2 * math.pi)
    q3 = math.remainder(q3, 2 * math.pi)
    phi_q = _derived()["phi_q"]
    pv = _pvec(P)
    for _ in range(20):                         # Newton polish on the dependent angles
        res = constraint_residual(P, (q1, q2, q3))
        if np.max(np.abs(res)) < 1e-14:
            break
        J = np.asarray(phi_q(q1, q2, q3, *pv), float)[:, 1:]
        dq = np.linalg.solve(J, -res)
        q2, q3 = q2 + dq[0], q3 + dq[1]
    res = constraint_residual(P, (q1, q2, q3))
    if np.max(np.abs(res)) >= 1e-14:
        raise ValueError(f"assemble: residual {res} did not reach 1e-14")
    return q1, q2, q3


def consistent_speeds(params, q, q1dot):
    """(u1, u2, u3) with u1 = q1dot and (u2, u3) solving the velocity constraints Phi_q u = 0."""
    J = np.asarray(_derived()["phi_q"](*q, *_pvec(params)), float)
    u1 = float(q1dot)
    u23 = np.linalg.solve(J[:, 1:], -J[:, 0] * u1)
    return u1, float(u23[0]), float(u23[1])


# -------------------------------------------------------------------------------------- sympy: Kane
@functools.lru_cache(maxsize=None)
def _derived():
    """Kane's equations with q2, q3 (u2, u3) dependent, every parameter a symbol; lambdified once.

    Returns a dict of numeric functions, each taking (q1, q2, q3, [u1, u2, u3,] *params):
    ``mass`` (3x3) and ``forcing`` (3,) of Kane's ``mass_matrix`` / ``forcing`` (the one dynamic equation
    plus the two differentiated velocity constraints, over all three udot), ``energy``, ``phi`` (2,) and
    ``phi_q`` (2x3), plus the sympy objects under ``"kane"`` and ``"symbols"``.
    """
    import sympy as sm
    import sympy.physics.mechanics as me
    from sympy.core.function import AppliedUndef

    t = me.dynamicsymbols._t
    q = me.dynamicsymbols("q1:4")
    u = me.dynamicsymbols("u1:4")
    p = sm.symbols(" ".join(PARAM_NAMES), real=True)
    S = dict(zip(PARAM_NAMES, p))

    N = me.ReferenceFrame("N")
    F1 = me.ReferenceFrame("F1")  # crank
    F2 = me.ReferenceFrame("F2")  # coupler
    F3 = me.ReferenceFrame("F3")  # rocker
    F1.orient_axis(N, N.z, q[0])
    F1.set_ang_vel(N, u[0] * N.z)
    F2.orient_axis(F1, F1.z, q[1])
    F2.set_ang_vel(F1, u[1] * F1.z)
    F3.orient_axis(N, N.z, q[2])
    F3.set_ang_vel(N, u[2] * N.z)

    O = me.Point("O")
    O.set_vel(N, 0)
    A = O.locatenew("A", S["ax"] * N.x + S["ay"] * N.y)
    A.set_vel(N, 0)
    D = O.locatenew("D", S["dx"] * N.x + S["dy"] * N.y)
    D.set_vel(N, 0)
    B = A.locatenew("B", S["bx"] * F1.x + S["by"] * F1.y)
    B.v2pt_theory(A, N, F1)

    G1 = A.locatenew("G1", S["c1x"] * F1.x + S["c1y"] * F1.y)
    G1.v2pt_theory(A, N, F1)
    G2 = B.locatenew("G2", S["c2x"] * F2.x + S["c2y"] * F2.y)
    G2.v2pt_theory(B, N, F2)
    G3 = D.locatenew("G3", S["c3x"] * F3.x + S["c3y"] * F3.y)
    G3.v2pt_theory(D, N, F3)
    Cc = B.locatenew("Cc", S["px"] * F2.x + S["py"] * F2.y)
    Cc.v2pt_theory(B, N, F2)
    Cr = D.locatenew("Cr", S["rx"] * F3.x + S["ry"] * F3.y)
    Cr.v2pt_theory(D, N, F3)

    bodies = []
    loads = []
    gvec = S["gx"] * N.x + S["gy"] * N.y
    potential = sm.S.Zero
    for i, (F, G) in enumerate(((F1, G1), (F2, G2), (F3, G3)), start=1):
        m, Izz = S[f"m{i}"], S[f"I{i}"]
        # Ixx, Iyy never enter a motion about z; keep them zero so nothing can depend on them
        body = me.RigidBody(f"B{i}", G, F, m, (me.inertia(F, 0, 0, Izz), G))
        bodies.append(body)
        loads.append((G, m * gvec))
        potential += -m * gvec.dot(G.pos_from(O))

    gap = Cc.pos_from(Cr)
    phi = sm.Matrix([gap.dot(N.x), gap.dot(N.y)])
    vgap = Cc.vel(N) - Cr.vel(N)
    vel_con = sm.Matrix([vgap.dot(N.x), vgap.dot(N.y)])
    kd = [q[i].diff(t) - u[i] for i in range(3)]

    kane = me.KanesMethod(
        N, q_ind=[q[0]], u_ind=[u[0]], kd_eqs=kd,
        q_dependent=[q[1], q[2]], configuration_constraints=list(phi),
        u_dependent=[u[1], u[2]], velocity_constraints=list(vel_con))
    kane.kanes_equations(bodies, loads)

    Qs = sm.symbols("Q1:4")
    Us = sm.symbols("U1:4")
    sub = dict(zip(q, Qs)) | dict(zip(u, Us))
    qd = [qi.diff(t) for qi in q]
    sub |= dict(zip(qd, Us))                     # PIN: qdot = u (should not appear anyway)

    def num(expr):
        return expr.xreplace(sub) if hasattr(expr, "xreplace") else expr

    mass = num(kane.mass_matrix)
    forcing = num(kane.forcing)
    kinetic = num(sum((b.kinetic_energy(N) for b in bodies), sm.S.Zero))
    pot = num(potential)
    phi_n = num(phi)
    phi_q = phi_n.jacobian(Qs)
    for name, e in (("mass", mass), ("forcing", forcing)):
        stray = e.atoms(AppliedUndef, sm.Derivative)
        if stray:
            raise RuntimeError(f"Kane's {name} still holds {stray}")
    # the velocity constraints must be Phi_q u (the holonomic ones, differentiated)
    diff = (num(vel_con) - phi_q * sm.Matrix(Us)).applyfunc(sm.expand_trig)
    assert all(sm.simplify(e) == 0 for e in diff), diff

    qa, qua = list(Qs), list(Qs) + list(Us)
    return {
        "mass": sm.lambdify(qua + list(p), mass, modules="numpy", cse=True),
        "forcing": sm.lambdify(qua + list(p), forcing, modules="numpy", cse=True),
        "kinetic": sm.lambdify(qua + list(p), kinetic, modules="numpy", cse=True),
        "potential": sm.lambdify(qa + list(p), pot, modules="numpy", cse=True),
        "phi": sm.lambdify(qa + list(p), phi_n, modules="numpy", cse=True),
        "phi_q": sm.lambdify(qa + list(p), phi_q, modules="numpy", cse=True),
        "kane": kane,
        "symbols": (q, u, p),
    }


def energy(params, q, u) -> float:
    """Kinetic + gravitational potential energy (potential zero at the world origin) at state (q, u),
    from the same sympy bodies that Kane's equations use."""
    d = _derived()
    pv = _pvec(params)
    return float(d["kinetic"](*q, *u, *pv)) + float(d["potential"](*q, *pv))


def _kane_rhs(params):
    d = _derived()
    mass, forcing = d["mass"], d["forcing"]
    pv = _pvec(params)

    def rhs(_t, x):
        q, u = x[:3], x[3:]
        M = np.asarray(mass(*q, *u, *pv), float)
        f = np.asarray(forcing(*q, *u, *pv), float).reshape(3)
        return np.concatenate((u, np.linalg.solve(M, f)))   # PIN: qdot = u

    return rhs


def simulate_reference(params, q0, u0, t_eval, *, rtol=1e-12, atol=1e-12):
    """Integrate the four-bar from (q0, u0) at time ``t_eval[0]`` to ``t_eval[-1]``.

    Kane's equations (q1 independent; q2, q3 and u2, u3 dependent through the configuration and velocity
    constraints) give udot for all three speeds (the dynamic equation plus the differentiated velocity
    constraints); the ODE state is all three q and all three u, so the dependent coordinates at each
    output come from the ODE itself (with constraint-consistent speeds), NOT re-solved from q1 -- their
    drift is what ``constraint_residual`` measures.  ``solve_ivp`` DOP853, rtol = atol = 1e-12 (default).

    ``q0`` is (q1, q2, q3) or a bare crank angle (then :func:`assemble`d); ``u0`` is (u1, u2, u3) or a bare
    crank rate (then :func:`consistent_speeds`).  A given full state must close the loop to 1e-10.

    Returns ``(Q, U)``, each an array (len(t_eval), 3) of (q1, q2, q3) and (u1, u2, u3).
    """
    from scipy.integrate import solve_ivp

    t_eval = np.asarray(t_eval, dtype=float)
    q0 = np.atleast_1d(np.asarray(q0, dtype=float))
    q0 = np.asarray(assemble(params, q0[0]) if q0.size == 1 else q0, float)
    u0 = np.atleast_1d(np.asarray(u0, dtype=float))
    u0 = np.asarray(consistent_speeds(params, q0, u0[0]) if u0.size == 1 else u0, float)
    if np.max(np.abs(constraint_residual(params, q0))) > 1e-10:
        raise ValueError(f"q0 = {q0} does not close the loop: residual {constraint_residual(params, q0)}")
    if np.max(np.abs(velocity_residual(params, q0, u0))) > 1e-10:
        raise ValueError(f"u0 = {u0} violates the velocity constraints: {velocity_residual(params, q0, u0)}")
    sol = solve_ivp(_kane_rhs(params), (t_eval[0], t_eval[-1]), np.concatenate((q0, u0)),
                    method="DOP853", t_eval=t_eval, rtol=rtol, atol=atol)
    if not sol.success:
        raise RuntimeError(f"solve_ivp failed: {sol.message}")
    return sol.y[:3].T.copy(), sol.y[3:].T.copy()


# ------------------------------------------------------------------ second method: plain numpy DAE
def _dae_maximal(params):
    """Maximal coordinates x = (x_i, y_i, th_i) of each body's CoM and absolute angle (i = crank, coupler,
    rocker).  Eight holonomic constraints: A on the crank, B shared by crank and coupler, D on the rocker,
    the loop point shared by coupler and rocker.  Index-3 DAE differentiated twice:
    [M G^T; G 0] [xdd; lam] = [F; -Gdot xd].  Pure numpy, no sympy."""
    P = params
    m = np.array([P["m1"], P["m2"], P["m3"]])
    Izz = np.array([P["I1"], P["I2"], P["I3"]])
    com = [np.array([P[f"c{i}x"], P[f"c{i}y"]]) for i in (1, 2, 3)]
    g = np.array([P["gx"], P["gy"]])
    Mdiag = np.concatenate([[mi, mi, Ii] for mi, Ii in zip(m, Izz)])
    F = np.concatenate([[mi * g[0], mi * g[1], 0.0] for mi in m])
    A = np.array([P["ax"], P["ay"]])
    D = np.array([P["dx"], P["dy"]])
    # (body, body-frame point) pairs that must coincide; body -1 = ground point
    pairs = [((0, np.zeros(2)), (-1, A)),
             ((0, np.array([P["bx"], P["by"]])), (1, np.zeros(2))),
             ((2, np.zeros(2)), (-1, D)),
             ((1, np.array([P["px"], P["py"]])), (2, np.array([P["rx"], P["ry"]])))]

    def point_terms(x, xd, b, s):
        """world point, its 2x9 Jacobian, and the velocity-product term (d/dt J) xd."""
        J = np.zeros((2, 9))
        if b < 0:
            return s.copy(), J, np.zeros(2)
        th, w = x[3 * b + 2], xd[3 * b + 2]
        R = _rot(th)
        r = R @ (s - com[b])
        J[:, 3 * b:3 * b + 2] = np.eye(2)
        J[:, 3 * b + 2] = [-r[1], r[0]]
        return x[3 * b:3 * b + 2] + r, J, -w * w * r

    def terms(x, xd):
        phi, G, gd = np.zeros(8), np.zeros((8, 9)), np.zeros(8)
        for k, ((b1, s1), (b2, s2)) in enumerate(pairs):
            p1, J1, a1 = point_terms(x, xd, b1, s1)
            p2, J2, a2 = point_terms(x, xd, b2, s2)
            phi[2 * k:2 * k + 2] = p1 - p2
            G[2 * k:2 * k + 2] = J1 - J2
            gd[2 * k:2 * k + 2] = a1 - a2
        return phi, G, gd

    def rhs(_t, X):
        x, xd = X[:9], X[9:]
        _, G, gd = terms(x, xd)
        K = np.zeros((17, 17))
        K[:9, :9] = np.diag(Mdiag)
        K[:9, 9:] = G.T
        K[9:, :9] = G
        sol = np.linalg.solve(K, np.concatenate((F, -gd)))
        return np.concatenate((xd, sol[:9]))

    def from_tree(q, u):
        """maximal state from (q, u) by plain forward kinematics"""
        th = np.array([q[0], q[0] + q[1], q[2]])
        w = np.array([u[0], u[0] + u[1], u[2]])
        piv = [A, A + _rot(q[0]) @ [P["bx"], P["by"]], D]
        pivv = [np.zeros(2), u[0] * np.array([-(piv[1] - A)[1], (piv[1] - A)[0]]), np.zeros(2)]
        x, xd = np.zeros(9), np.zeros(9)
        for b in range(3):
            r = _rot(th[b]) @ com[b]
            x[3 * b:3 * b + 3] = [*(piv[b] + r), th[b]]
            xd[3 * b:3 * b + 3] = [*(pivv[b] + w[b] * np.array([-r[1], r[0]])), w[b]]
        return x, xd

    def energy_max(x, xd):
        ke = 0.5 * np.sum(Mdiag * xd * xd)
        pe = -sum(m[b] * g @ x[3 * b:3 * b + 2] for b in range(3))
        return ke + pe

    return rhs, terms, from_tree, energy_max


def _self_check(verbose=True):
    """(a) energy, (b) constraint drift of the Kane reference, (c) Kane vs a numpy Lagrange-multiplier DAE,
    over 10 s released from rest at q1 = pi/3.  Returns the observed numbers (raises when out of bounds)."""
    import time

    from scipy.integrate import solve_ivp

    t0 = time.perf_counter()
    P = load_fourbar()
    _derived()
    t_derive = time.perf_counter() - t0

    t_eval = np.linspace(0.0, 10.0, 1001)
    q0 = assemble(P, math.pi / 3)
    u0 = consistent_speeds(P, q0, 0.0)
    t1 = time.perf_counter()
    Q, U = simulate_reference(P, q0, u0, t_eval)
    t_sim = time.perf_counter() - t1
    t2 = time.perf_counter()
    Q2, _ = simulate_reference(P, q0, u0, t_eval)         # cached derivation: pays only the integration
    t_sim2 = time.perf_counter() - t2

    E = np.array([energy(P, q, u) for q, u in zip(Q, U)])
    KEmax = max(energy(P, q, u) - energy(P, q, np.zeros(3)) for q, u in zip(Q, U))
    e_rel = float(np.max(np.abs(E - E[0])) / abs(E[0]))
    e_rel_ke = float(np.max(np.abs(E - E[0])) / KEmax)
    pos_res = float(max(np.max(np.abs(constraint_residual(P, q))) for q in Q))
    vel_res = float(max(np.max(np.abs(velocity_residual(P, q, u))) for q, u in zip(Q, U)))
    # re-solving q2, q3 from q1 must agree with the ODE's own dependent coordinates
    dep = float(max(np.max(np.abs(np.remainder(np.array(assemble(P, q[0]))[1:] - q[1:] + np.pi, 2 * np.pi)
                                  - np.pi)) for q in Q))
    # the assembled branch keeps the loop point above the x axis all the way round
    ymin = min(float(_points(P, assemble(P, a))[3][1]) for a in np.linspace(-np.pi, np.pi, 721))

    # (c) plain-numpy DAE in maximal coordinates
    t3 = time.perf_counter()
    rhs, terms, from_tree, energy_max = _dae_maximal(P)
    x0, xd0 = from_tree(q0, u0)
    sol = solve_ivp(rhs, (0.0, 10.0), np.concatenate((x0, xd0)), method="DOP853", t_eval=t_eval,
                    rtol=1e-12, atol=1e-12)
    t_dae = time.perf_counter() - t3
    assert sol.success, sol.message
    th1 = sol.y[2]
    dq1 = float(np.max(np.abs(th1 - Q[:, 0])))
    dq3 = float(np.max(np.abs(sol.y[8] - Q[:, 2])))
    dq2 = float(np.max(np.abs((sol.y[5] - sol.y[2]) - Q[:, 1])))
    dae_res = float(max(np.max(np.abs(terms(X[:9], X[9:])[0])) for X in sol.y.T))
    Ed = np.array([energy_max(X[:9], X[9:]) for X in sol.y.T])
    dae_e = float(np.max(np.abs(Ed - Ed[0])) / abs(Ed[0]))
    e_match = float(abs(Ed[0] - E[0]))

    out = {
        "q0": q0, "E0": float(E[0]), "q1 range": (float(Q[:, 0].min()), float(Q[:, 0].max())),
        "(a) energy rel |E-E0|/|E0|": e_rel, "(a) energy |E-E0|/max KE": e_rel_ke,
        "(b) max |position residual|": pos_res, "(b) max |velocity residual|": vel_res,
        "ODE q2,q3 vs re-assembled from q1 (mod 2pi)": dep, "assemble: min loop-point y over q1": ymin,
        "(c) max |q1 Kane - q1 DAE|": dq1, "(c) max |q2 diff|": dq2, "(c) max |q3 diff|": dq3,
        "DAE constraint residual": dae_res, "DAE energy rel": dae_e, "E0 Kane vs DAE": e_match,
        "derive+lambdify s": t_derive, "simulate (first) s": t_sim, "simulate (second) s": t_sim2,
        "DAE s": t_dae, "total s": time.perf_counter() - t0,
    }
    if verbose:
        for k, v in out.items():
            print(f"{k:46s} {v}")
    assert e_rel < 1e-9, e_rel
    assert pos_res < 1e-9, pos_res
    assert dq1 < 1e-8, dq1
    assert ymin > 0, ymin
    return out


if __name__ == "__main__":
    _self_check()
