"""ATBI forward dynamics, Newton-Euler inverse dynamics, mass matrix (layers 4-5).

Oracles: Pinocchio (aba, rnea, crba) on URDF robots, fixed and floating base, with and without gravity,
to 1e-9 relative; sympy.physics.mechanics (KanesMethod) on a 3-body 3-D chain to 1e-10; identities on random
trees mixing every hinge type (1e-9 relative: they involve solves with M); energy and momentum of RK4
simulations (relative drift < 1e-6).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import symgen
from helpers import assert_close
from model_factory import COVERAGE_TREES, STATIC_URDF, build_coverage_tree, coverage_tree, random_urdf
from pin_maps import to_pin_q, u_map
from symgen.model import model_from_dict
from symgen.pipeline.package import build_model

ROOT = Path(__file__).resolve().parents[1]
pin = pytest.importorskip("pinocchio")


# ------------------------------------------------------------------------------------------------
# Pinocchio
# ------------------------------------------------------------------------------------------------

#: arm7 and the random URDF trees of tests/conftest.py's urdf_robots (the robots test_model_pinocchio checks the
#: kinematics of: one build each per session), fixed and floating, and the floating humanoid
ROBOTS = [(r, fb) for r in ("arm7", "rand11", "rand12") for fb in (False, True)] + [("humanoid", True)]


@pytest.fixture(scope="module", params=ROBOTS, ids=[f"{r}-{'floating' if fb else 'fixed'}" for r, fb in ROBOTS])
def robot(request, urdf_robots):
    name, floating = request.param
    path = str(urdf_robots / f"{name}.urdf") if name != "humanoid" else str(ROOT / "examples" / "models" / "humanoid.urdf")
    mb = symgen.build(path, floating_base=floating)
    pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if floating else pin.buildModelFromUrdf(path)
    return mb, pm, floating


@pytest.mark.parametrize("gravity", [True, False], ids=["gravity", "no-gravity"])
def test_dynamics_match_pinocchio(robot, gravity):
    mb, pm, floating = robot
    pd = pm.createData()
    pm.gravity.linear = np.array([0, 0, -9.81]) if gravity else np.zeros(3)
    g = None if gravity else np.zeros(3)
    rng = np.random.default_rng(7)
    for _ in range(20):
        q = mb.sanitize(rng.uniform(-2.5, 2.5, mb.nq))
        qp = to_pin_q(mb, pm, q)
        v, a, tau = rng.normal(size=pm.nv), rng.normal(size=pm.nv), rng.normal(size=pm.nv)
        T = u_map(mb, pm, q, floating)
        u = T @ v
        # d/dt (T v) = T a + T_dot v, T_dot only in the free-flyer block: R [w]x v_lin
        udot = T @ a
        if floating:
            s = mb.u_slice("root_joint").start
            udot[s:s + 3] += mb.frame_pose(q, mb.body_names[0])[:3, :3] @ np.cross(v[3:6], v[:3])
        # inverse dynamics: power balance T_symgen . u = tau_pin . v  ->  tau_pin = T^T T_symgen
        assert_close(T.T @ mb.inverse_dynamics(q, u, udot, gravity=g), pin.rnea(pm, pd, qp, v, a), 1e-9, "rnea")
        # forward dynamics with the matching generalized force
        Tsym = np.linalg.solve(T.T, tau)
        a_pin = pin.aba(pm, pd, qp, v, tau)
        ud = mb.forward_dynamics(q, u, Tsym, gravity=g)
        expected = T @ a_pin
        if floating:
            expected[s:s + 3] += mb.frame_pose(q, mb.body_names[0])[:3, :3] @ np.cross(v[3:6], v[:3])
        assert_close(ud, expected, 1e-9, "aba")
        Mp = pin.crba(pm, pd, qp)
        Mp = np.triu(Mp) + np.triu(Mp, 1).T
        assert_close(T.T @ mb.mass_matrix(q) @ T, Mp, 1e-9, "crba")


# ------------------------------------------------------------------------------------------------
# identities on random trees with every hinge type
# ------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module", params=COVERAGE_TREES)
def tree(request):
    """The random trees of model_factory.COVERAGE_TREES, each built once per session: every hinge type in one tree
    (the all_hinges example) and in two small trees with armature on every moving hinge."""
    mb = build_coverage_tree(request.param)
    mb.tree_name = request.param
    return mb


def _armature(mb) -> np.ndarray:
    """The rotor inertia of each U (zeros where the model has none)."""
    a = np.zeros(mb.nu)
    for h in mb.manifest["hinges"].values():
        a[h["u"][0]:h["u"][1]] = h["armature"]
    return a


def _state(mb, rng):
    return mb.sanitize(rng.normal(size=mb.nq)), rng.normal(size=mb.nu)


def test_forward_is_minv_of_t_minus_c(tree):
    rng = np.random.default_rng(0)
    for _ in range(5):
        q, u = _state(tree, rng)
        T = rng.normal(size=tree.nu)
        C = tree.inverse_dynamics(q, u, np.zeros(tree.nu))
        M = tree.mass_matrix(q)
        assert_close(tree.forward_dynamics(q, u, T), np.linalg.solve(M, T - C), 1e-9, "Udot = M^-1 (T - C)")
        ud = tree.forward_dynamics(q, u, T)
        assert_close(tree.inverse_dynamics(q, u, ud), T, 1e-9, "ID(FD(T)) = T")
        assert_close(M, M.T, 1e-12, "M symmetric")
        assert np.linalg.eigvalsh(M).min() > 0
        v = rng.normal(size=tree.nu)
        assert_close(tree.minv_times(q, v), np.linalg.solve(M, v), 1e-9, "minv_times")


def _body_energy_momentum(mb, q, u):
    """Sum of body kinetic energies, linear and angular momentum (about the world origin), from each
    body's frame velocity and its mass properties -- independent of the spatial-inertia code."""
    ke, P, L = 0.0, np.zeros(3), np.zeros(3)
    for b in mb.manifest["bodies"]:
        X = mb.frame_pose(q, b["name"])
        V = mb.frame_velocity(q, u, b["name"])
        R, w, v = X[:3, :3], V[:3], V[3:]
        c, m, J = np.array(b["com"]), b["mass"], np.array(b["inertia"])
        vc = v + np.cross(w, c)
        ke += 0.5 * m * vc @ vc + 0.5 * w @ J @ w
        P += m * R @ vc
        L += np.cross(X[:3, 3] + R @ c, m * R @ vc) + R @ J @ w
    return ke, P, L


def test_kinetic_energy_is_half_utmu(tree):
    """1/2 U^T M U = the bodies' kinetic energy (plus the rotors' 1/2 armature U^2 where there is armature)."""
    rng = np.random.default_rng(1)
    arm = _armature(tree)
    for _ in range(5):
        q, u = _state(tree, rng)
        assert_close(0.5 * u @ tree.mass_matrix(q) @ u, _body_energy_momentum(tree, q, u)[0] + 0.5 * arm @ (u * u),
                     1e-10, "KE")


def test_external_forces_equal_jacobian_transpose(tree):
    """forward_dynamics with f_ext on frames == forward_dynamics with T + sum J_f^T f."""
    rng = np.random.default_rng(2)
    frames = [f for f in tree.frame_names if f != "newtonian"]
    for _ in range(3):
        q, u = _state(tree, rng)
        T = rng.normal(size=tree.nu)
        chosen = rng.choice(frames, 3, replace=False)
        f_ext = {str(f): rng.normal(size=6) for f in chosen}
        T2 = T + sum(tree.jacobian(q, f).T @ w for f, w in f_ext.items())
        assert_close(tree.forward_dynamics(q, u, T, f_ext=f_ext), tree.forward_dynamics(q, u, T2), 1e-9, "f_ext")
        assert_close(tree.inverse_dynamics(q, u, np.zeros(tree.nu), f_ext=f_ext),
                     tree.inverse_dynamics(q, u, np.zeros(tree.nu)) - (T2 - T), 1e-9, "ID f_ext")


def test_atbi_matrices(tree):
    """D = H^T P H (+ the hinge's armature on the diagonal), G = P H D^-1, tauper = I - G H^T for every body
    (H: hinge map in the body frame, recovered as the body-frame Jacobian columns of that hinge)."""
    rng = np.random.default_rng(3)
    q, _ = _state(tree, rng)
    arm = _armature(tree)
    for b in tree.manifest["bodies"]:
        mats = tree.atbi_matrices(q, b["name"])
        H = tree.jacobian(q, b["name"])[:, tree.u_slice(b["hinge"])]
        P = mats["P"]
        assert_close(P, P.T, 1e-12, "P symmetric")
        D = H.T @ P @ H + np.diag(arm[tree.u_slice(b["hinge"])])
        assert_close(mats["D"], D, 1e-10, f"D {b['name']}")
        if H.shape[1]:
            assert_close(mats["Dinv"], np.linalg.inv(D), 1e-9, "Dinv")
            assert_close(mats["G"], P @ H @ np.linalg.inv(D), 1e-9, "G")
        assert_close(mats["tauper"], np.eye(6) - mats["G"] @ H.T, 1e-10, "tauper")
        assert_close(mats["H"], H, 1e-10, f"H {b['name']}")
        # psi = phi(X_pb) tauper, X_pb = (R, l) the body's pose in its parent's frame (from the frame poses):
        # phi = [[R, l~ R], [0, R]], the force transform from the body frame to the parent's
        Xp = np.eye(4) if b["parent"] == "newtonian" else tree.frame_pose(q, b["parent"])
        X = np.linalg.solve(Xp, tree.frame_pose(q, b["name"]))
        R, l = X[:3, :3], X[:3, 3]
        lx = np.array([[0.0, -l[2], l[1]], [l[2], 0.0, -l[0]], [-l[1], l[0], 0.0]])
        phi = np.block([[R, lx @ R], [np.zeros((3, 3)), R]])
        assert_close(mats["psi"], phi @ mats["tauper"], 1e-10, f"psi {b['name']}")
    # the arguments out of order: the error names the body argument, not numpy's truth value of an array
    with pytest.raises(KeyError, match="atbi_matrices: no body named array"):
        tree.atbi_matrices(tree.manifest["bodies"][0]["name"], q)


def _upsilon_is_j_minv_jt(mb, rng, frames=None):
    """mb.upsilon(q, f) = J M^-1 J^T (J: the frame's Jacobian, M: the mass matrix; 1e-10), one state and a batch."""
    q = mb.sanitize(rng.normal(size=mb.nq))
    Minv = np.linalg.inv(mb.mass_matrix(q))
    for f in frames or mb.frame_names:
        J = mb.jacobian(q, f)
        assert_close(mb.upsilon(q, f), J @ Minv @ J.T, 1e-10, f"{mb.name}: Upsilon of {f}")
    Q = mb.sanitize(rng.normal(size=(2, mb.nq)))
    f = mb.frame_names[-1]
    assert_close(mb.upsilon(Q, f)[1], mb.upsilon(Q[1], f), 1e-14, "batch")


def test_upsilon_on_random_trees(tree):
    _upsilon_is_j_minv_jt(tree, np.random.default_rng(21))


def test_upsilon_on_robots(robot):
    _upsilon_is_j_minv_jt(robot[0], np.random.default_rng(22))


@pytest.mark.parametrize("path", [p for p in sorted((ROOT / "examples" / "models").glob("*.*"))
                                  if "flex:" not in p.read_text()], ids=lambda p: p.name)
def test_upsilon_on_every_example_model(path):
    """Every bundled model (the tree's Upsilon for those with loops, against the tree's M); the humanoid and the
    quadruped with their floating base, as the other tests build them (one compile per session).  Not the
    models with flexible bodies: upsilon refuses them (test_flexible.py)."""
    mb = symgen.build(path, floating_base=path.stem in ("humanoid", "quadruped"))
    _upsilon_is_j_minv_jt(mb, np.random.default_rng(23), mb.frame_names[-3:])


def test_batched_dynamics_equal_single(tree):
    rng = np.random.default_rng(4)
    Q = np.array([_state(tree, rng)[0] for _ in range(3)])
    U, T = rng.normal(size=(3, tree.nu)), rng.normal(size=(3, tree.nu))
    FD, ID, M = tree.forward_dynamics(Q, U, T), tree.inverse_dynamics(Q, U, T), tree.mass_matrix(Q)
    for i in range(3):
        np.testing.assert_array_equal(FD[i], tree.forward_dynamics(Q[i], U[i], T[i]))
        np.testing.assert_array_equal(ID[i], tree.inverse_dynamics(Q[i], U[i], T[i]))
        np.testing.assert_array_equal(M[i], tree.mass_matrix(Q[i]))


@pytest.mark.parametrize("tree", ["hinges1"], indirect=True)  # one tree: test_per_kind_form has all of them
def test_per_kind_form_for_large_models_equals_straight_line(tree, monkeypatch):
    """Above symgen.codegen.schedule's size limits the dynamics take the per-kind form (symgen.codegen.perkind) instead
    of straight-line code; both forms give the same numbers: the same equations in another order, so ID and M to
    1e-12 relative, FD to 1e-10 (it solves with the random trees' ill-conditioned D's: 2e-12 observed)."""
    from symgen.codegen import schedule
    from symgen.pipeline.sources import cached_model_sources

    monkeypatch.setattr(schedule, "STRAIGHT_LINE_LIMIT", 0)
    monkeypatch.setattr(schedule, "CRBA_UNROLL_LIMIT", 0)
    model = coverage_tree(tree.tree_name)
    files, manifest = cached_model_sources(model)
    c = files[f"{manifest['name']}.c"]
    name = manifest["name"]
    assert set(manifest["forms"].values()) == {"per_kind"}
    assert f"return sg_{name}_fd_per_kind(q, u, p, out, 0);" in c.split(f"int sg_{name}_forward_dynamics(")[1]
    for fn in (f"void sg_{name}_inverse_dynamics(", f"void sg_{name}_mass_matrix("):   # the drivers themselves
        assert f"sg_{name}_kind[k]" in c.split(fn)[1].split("\n}\n")[0], fn
    per_kind = build_model(model)
    rng = np.random.default_rng(9)
    for _ in range(5):
        q, u = _state(tree, rng)
        T = rng.normal(size=tree.nu)
        assert_close(per_kind.forward_dynamics(q, u, T), tree.forward_dynamics(q, u, T), 1e-10, "FD per-kind")
        assert_close(per_kind.inverse_dynamics(q, u, T), tree.inverse_dynamics(q, u, T), 1e-12, "ID per-kind")
        assert_close(per_kind.mass_matrix(q), tree.mass_matrix(q), 1e-12, "M per-kind")


def test_preallocated_outputs_and_fast_path(tree):
    """out= is filled and returned; the single-state fast path (C-contiguous float64 vectors) agrees bitwise
    with the general path (lists, strided views, batches of one); gravity edits reach both."""
    rng = np.random.default_rng(5)
    q, u = _state(tree, rng)
    T = rng.normal(size=tree.nu)
    for fn, args in ((tree.forward_dynamics, (q, u, T)), (tree.inverse_dynamics, (q, u, T))):
        ref = fn(*args)
        o = np.full(tree.nu, np.nan)
        assert fn(*args, out=o) is o
        np.testing.assert_array_equal(o, ref)
        np.testing.assert_array_equal(fn(*(list(a) for a in args)), ref)                       # general path
        np.testing.assert_array_equal(fn(*(np.repeat(a, 2)[::2] for a in args)), ref)          # strided views
        ob = np.full((1, tree.nu), np.nan)
        assert fn(*(a[None] for a in args), out=ob) is ob
        np.testing.assert_array_equal(ob[0], ref)
        for bad in (np.empty(tree.nu + 1), np.empty(tree.nu, np.float32), np.empty((2, tree.nu))[:, 0]):
            with pytest.raises(ValueError, match="out="):
                fn(*args, out=bad)
    M = tree.mass_matrix(q)
    o = np.empty((tree.nu, tree.nu))
    assert tree.mass_matrix(q, out=o) is o
    np.testing.assert_array_equal(o, M)
    np.testing.assert_array_equal(tree.mass_matrix(list(q)), M)
    with pytest.raises(ValueError, match="out="):
        tree.mass_matrix(q, out=np.empty(tree.nu * tree.nu))
    g0 = tree.gravity.copy()
    try:
        tree.gravity[2] = -1.5                                   # in place
        np.testing.assert_array_equal(tree.forward_dynamics(q, u, T), tree.forward_dynamics(q, u, T, gravity=[*g0[:2], -1.5]))
        tree.gravity = [0.3, 0.0, -2.0]                          # replaced
        np.testing.assert_array_equal(tree.inverse_dynamics(q, u, T), tree.inverse_dynamics(q[None], u[None], T[None])[0])
        np.testing.assert_array_equal(tree.forward_dynamics(q, u, T), tree.forward_dynamics(q, u, T, gravity=[0.3, 0, -2]))
        with pytest.raises(ValueError, match="gravity"):
            tree.gravity = [0.0, 9.81]
    finally:
        tree.gravity = g0


@pytest.mark.parametrize("looped", [False, True])
def test_non_positive_definite_d_names_the_body(tmp_path, monkeypatch, looped):
    """A massless body on a continuous joint, hanging from a fixed-joint link (l3, fused into l1 by
    soa.fuse_static): its D = 0 is named by the model's body, unrolled (a constant D, refused at build time) and
    looped (the per-kind steps over the fused tree, at run time: one state and a lane batch)."""
    urdf = random_urdf(5, 4).replace("</robot>", """  <link name="ghost"/>
  <joint name="jghost" type="continuous"><parent link="l3"/><child link="ghost"/><axis xyz="0 0 1"/></joint>
</robot>""")
    p = tmp_path / "ghost.urdf"
    p.write_text(urdf)
    if looped:
        from symgen.codegen import schedule

        monkeypatch.setattr(schedule, "STRAIGHT_LINE_LIMIT", 0)   # the refusal's two lines are over it
    mb = symgen.build(p)
    assert mb.forms["forward_dynamics"] == ("per_kind" if looped else "straight")
    assert mb.singular_hinges == ("jghost",)      # named at build time too
    n = 2 * mb.lane_width + 1 if looped else 1
    for q in (mb.neutral_q(), np.tile(mb.neutral_q(), (n, 1))):
        with pytest.raises(np.linalg.LinAlgError, match="body 'ghost' \\(hinge 'jghost'\\) is not positive definite"):
            mb.forward_dynamics(q, np.zeros(q.shape), np.zeros(q.shape))


# ------------------------------------------------------------------------------------------------
# sympy.physics.mechanics
# ------------------------------------------------------------------------------------------------

KANE_MODEL = {
    "name": "kane3", "gravity": [0, 0, -9.81],
    "bodies": [
        {"name": "A", "parent": "newtonian", "mass": 2.0, "com": [0.1, 0.05, -0.2],
         "inertia": [[0.30, 0.02, 0.01], [0.02, 0.25, 0.03], [0.01, 0.03, 0.20]],
         "hinge": {"type": "PIN", "name": "qA", "axis": [0, 0, 1]}},
        {"name": "B", "parent": "A", "mass": 1.5, "com": [0.2, 0.0, 0.1],
         "inertia": [[0.10, 0.0, 0.02], [0.0, 0.12, 0.0], [0.02, 0.0, 0.08]],
         "hinge": {"type": "SLIDER", "name": "qB", "axis": [1, 0, 0]}, "onode": {"xyz": [0.3, 0, 0]}},
        {"name": "C", "parent": "B", "mass": 0.8, "com": [0.0, 0.1, 0.25],
         "inertia": [[0.05, 0.01, 0.0], [0.01, 0.06, 0.005], [0.0, 0.005, 0.04]],
         "hinge": {"type": "UJOINT", "name": "qC", "axes": [[1, 0, 0], [0, 1, 0]]}, "onode": {"xyz": [0, 0.2, 0.1]}},
    ],
}


def test_mass_matrix_and_forcing_match_kanes_method():
    import sympy as sp
    from sympy.physics.mechanics import KanesMethod, Point, ReferenceFrame, RigidBody, dynamicsymbols, inertia

    q1, q2, q3, q4 = dynamicsymbols("q1:5")
    u1, u2, u3, u4 = dynamicsymbols("u1:5")
    N = ReferenceFrame("N")
    A = N.orientnew("A", "Axis", (q1, N.z))
    C1 = A.orientnew("C1", "Axis", (q3, A.x))
    C = C1.orientnew("C", "Axis", (q4, C1.y))
    O = Point("O")
    O.set_vel(N, 0)
    Bo = O.locatenew("Bo", (sp.Rational(3, 10) + q2) * A.x)
    Co = Bo.locatenew("Co", sp.Rational(2, 10) * A.y + sp.Rational(1, 10) * A.z)
    A.set_ang_vel(N, u1 * N.z)
    C1.set_ang_vel(A, u3 * A.x)
    C.set_ang_vel(C1, u4 * C1.y)
    bodies, loads = [], []
    for spec, frame, origin in zip(KANE_MODEL["bodies"], (A, A, C), (O, Bo, Co)):
        cx, cy, cz = (sp.nsimplify(x) for x in spec["com"])
        cm = origin.locatenew(spec["name"] + "cm", cx * frame.x + cy * frame.y + cz * frame.z)
        J = spec["inertia"]
        I = inertia(frame, J[0][0], J[1][1], J[2][2], J[0][1], J[1][2], J[0][2])
        m = spec["mass"]
        bodies.append(RigidBody(spec["name"], cm, frame, m, (I, cm)))
        loads.append((cm, -m * 9.81 * N.z))
    # mass-centre velocities by differentiating their positions in N
    for b in bodies:
        b.masscenter.set_vel(N, b.masscenter.pos_from(O).dt(N).subs({q1.diff(): u1, q2.diff(): u2, q3.diff(): u3,
                                                                      q4.diff(): u4}))
    kd = [q1.diff() - u1, q2.diff() - u2, q3.diff() - u3, q4.diff() - u4]
    km = KanesMethod(N, q_ind=[q1, q2, q3, q4], u_ind=[u1, u2, u3, u4], kd_eqs=kd)
    km.kanes_equations(bodies, loads)
    MM = sp.lambdify([q1, q2, q3, q4, u1, u2, u3, u4], km.mass_matrix)
    FF = sp.lambdify([q1, q2, q3, q4, u1, u2, u3, u4], km.forcing)
    mb = build_model(model_from_dict(KANE_MODEL, "<kane3>"))
    rng = np.random.default_rng(5)
    for _ in range(10):
        q, u = rng.uniform(-2, 2, 4), rng.normal(size=4)
        assert_close(mb.mass_matrix(q), np.array(MM(*q, *u), float), 1e-10, "Kane mass matrix")
        assert_close(-mb.inverse_dynamics(q, u, np.zeros(4)), np.array(FF(*q, *u), float).ravel(), 1e-10, "forcing")


# ------------------------------------------------------------------------------------------------
# conservation in simulation
# ------------------------------------------------------------------------------------------------

def test_free_floating_spacecraft_conserves_energy_and_momentum():
    """No gravity, no forces, 10 s of RK4 at dt = 1e-3: relative drift of energy and momentum < 1e-6."""
    mb = symgen.build(ROOT / "examples" / "models" / "spacecraft.yaml")
    assert np.allclose(mb.gravity, 0)
    rng = np.random.default_rng(6)
    q0 = mb.neutral_q()
    q0[mb.q_slice("instrument_gimbal")] = [0.2, 0.3, -0.1]
    u0 = 0.2 * rng.normal(size=mb.nu)
    t, Q, U = mb.simulate(q0, u0, (0.0, 10.0), 1e-3)
    e0, p0, l0 = _body_energy_momentum(mb, Q[0], U[0])
    e1, p1, l1 = _body_energy_momentum(mb, Q[-1], U[-1])
    assert len(t) == 10001
    assert abs(e1 - e0) < 1e-6 * e0
    assert np.linalg.norm(p1 - p0) < 1e-6 * np.linalg.norm(p0)
    assert np.linalg.norm(l1 - l0) < 1e-6 * np.linalg.norm(l0)


def test_gravity_pendulum_conserves_energy():
    mb = symgen.build(ROOT / "examples" / "models" / "double_pendulum.yaml")
    q0, u0 = np.array([1.0, -0.5]), np.array([0.0, 0.3])

    def energy(q, u):
        ke = 0.5 * u @ mb.mass_matrix(q) @ u
        pe = 0.0
        for b in mb.manifest["bodies"]:
            X = mb.frame_pose(q, b["name"])
            pe -= b["mass"] * mb.gravity @ (X[:3, 3] + X[:3, :3] @ np.array(b["com"]))
        return ke + pe

    t, Q, U = mb.simulate(q0, u0, (0.0, 10.0), 1e-3)
    E = [energy(Q[i], U[i]) for i in range(0, len(t), 1000)]
    assert max(abs(e - E[0]) for e in E) < 1e-6 * abs(E[0])


@pytest.mark.parametrize("kind", ["GIMBAL", "BUSHING"])
def test_gimbal_lock_is_named_as_a_coordinate_singularity(kind):
    """At the middle angle +-90 degrees the coord map of GIMBAL and BUSHING loses rank (issue 25, item 4): the
    error says so, on the one-state fast path, a batch and minv_times; a massless tip still gets the mass
    message."""
    from symgen.model import model_from_dict

    d = {"name": f"lock_{kind.lower()}", "bodies": [{"name": "a", "parent": "newtonian", "mass": 1.0,
                                                     "inertia": [0.01, 0.02, 0.03, 0, 0, 0], "hinge": {"type": kind}}]}
    mb = build_model(model_from_dict(d))
    q = mb.neutral_q()
    q[mb.q_slice("a")][1 if kind == "GIMBAL" else 1] = np.pi / 2
    H = mb.hinge_kernels("a").coord_map(q[mb.q_slice("a")])
    assert np.linalg.matrix_rank(H, tol=1e-10) < H.shape[1]          # the closed form: rank lost at 90 degrees
    for call in (lambda: mb.forward_dynamics(q, np.zeros(mb.nu), np.ones(mb.nu)),
                 lambda: mb.forward_dynamics(q[None], np.zeros((1, mb.nu)), np.ones((1, mb.nu))),
                 lambda: mb.minv_times(q, np.ones(mb.nu))):
        with pytest.raises(np.linalg.LinAlgError, match="coordinate singularity.*gimbal lock"):
            call()
    q[mb.q_slice("a")][1] = 0.3
    assert np.all(np.isfinite(mb.forward_dynamics(q, np.zeros(mb.nu), np.ones(mb.nu))))


def _chain(name, hinges):
    """A chain of bodies with offset nodes: a PIN, then one body per hinge dict of ``hinges``."""
    inertia = lambda m: {"mass": m, "com": [0.05, -0.02, 0.1], "inertia": [0.02, 0.03, 0.04, 0.001, 0, 0.002]}  # noqa: E731
    bodies = [{"name": "a", "parent": "newtonian", **inertia(2.0), "hinge": {"type": "PIN", "axis": [0, 1, 0]}}]
    for i, h in enumerate(hinges):
        bodies.append({"name": "bcd"[i], "parent": "abc"[i], **inertia(1.0 / (i + 1)), "hinge": h,
                       "onode": {"xyz": [0.1, 0.2 * i, 0.3], "rpy": [0.2, -0.1, 0.3 * i]},
                       "pnode": {"xyz": [0.0, 0.05, -0.1], "rpy": [0.1 * i, 0.0, 0.0]}})
    return {"name": name, "bodies": bodies}


def test_reversed_mobilizers_are_the_mechanism_written_forward():
    """Simbody's Direction::Reverse (issue 25, item 4), one chain each way: a reversed PIN about a and a reversed
    SLIDER along s are the forward PIN about -a and SLIDER along -s (same Q, U, T), and a reversed BALL_QUAT at q
    is the forward one at the conjugate q* with U* = -R(q) U, T* = -R(q) T and Udot* = -R(q) Udot; frame poses
    1e-12, FD, ID and M 1e-10."""
    from symgen.model import model_from_dict

    a, s = [0.6, 0.0, 0.8], [0.0, 0.6, 0.8]
    rev = build_model(model_from_dict(_chain("rev_chain", [{"type": "PIN", "axis": a, "reverse": True},
                                                           {"type": "SLIDER", "axis": s, "reverse": True},
                                                           {"type": "BALL_QUAT", "reverse": True}])))
    fwd = build_model(model_from_dict(_chain("fwd_chain", [{"type": "PIN", "axis": [-x for x in a]},
                                                           {"type": "SLIDER", "axis": [-x for x in s]},
                                                           {"type": "BALL_QUAT"}])))
    k = rev.hinge_kernels("d")
    rng = np.random.default_rng(31)
    for _ in range(3):
        q = rev.sanitize(rng.normal(size=rev.nq))
        u, x = rng.normal(size=rev.nu), rng.normal(size=rev.nu)
        qd, ud_ = q[rev.q_slice("d")], rev.u_slice("d")
        R = np.linalg.inv(k.transform(qd))[:3, :3]                 # the forward hinge's R(q)
        qs, us, xs = q.copy(), u.copy(), x.copy()
        qs[rev.q_slice("d")] = [-qd[0], -qd[1], -qd[2], qd[3]]     # conjugate quaternion (x, y, z, w)
        us[ud_], xs[ud_] = -R @ u[ud_], -R @ x[ud_]
        for f in rev.frame_names:
            assert_close(rev.frame_pose(q, f), fwd.frame_pose(qs, f), 1e-12, f"pose {f}")
        back = lambda y: np.concatenate([y[:ud_.start], -R.T @ y[ud_], y[ud_.stop:]])  # noqa: E731
        assert_close(rev.forward_dynamics(q, u, x), back(fwd.forward_dynamics(qs, us, xs)), 1e-10, "FD")
        assert_close(rev.inverse_dynamics(q, u, x), back(fwd.inverse_dynamics(qs, us, xs)), 1e-10, "ID")
        Tm = np.eye(rev.nu)
        Tm[ud_, ud_] = -R                                          # U* = Tm U
        assert_close(rev.mass_matrix(q), Tm.T @ fwd.mass_matrix(qs) @ Tm, 1e-10, "M")

def _sv(m):
    return np.r_[m.angular, m.linear]


def test_atbi_filter_vectors_against_pinocchio(robot):
    """The filter vectors at every hinge, against Pinocchio's Newton-Euler (``rnea`` with f_ext at the FD
    accelerations): the force across the hinge is ``f = P+ alpha+ + z+`` (Jain; P+ = tauper P, alpha+ =
    phi^T alpha(parent), gravity as the newtonian's acceleration: Pinocchio's ``a_gf``), ``Udot = nu -
    G^T alpha+``; and the identities ``z = z+ - G eps``, ``eps = T - H^T z``, ``nu = D^-1 eps`` (1e-10
    relative); a batch equals its states (1e-14)."""
    mb, pm, floating = robot
    pm.gravity.linear = np.asarray(mb.gravity, float)        # the fixture's model is shared: other tests set it
    pd = pm.createData()
    rng = np.random.default_rng(31)
    q = mb.sanitize(rng.uniform(-2.0, 2.0, mb.nq))
    v, T, F = rng.normal(size=pm.nv), rng.normal(size=mb.nu), rng.normal(size=(mb.nb, 6))
    body_of = {b["hinge"]: b["name"] for b in mb.manifest["bodies"]}
    index = {n: k for k, n in enumerate(mb.body_names)}
    jointed = [index[body_of[pm.names[j]]] for j in range(1, pm.njoints)]
    F[[k for k in range(mb.nb) if k not in jointed]] = 0.0     # Pinocchio merges the welded bodies: no force there
    Tm = u_map(mb, pm, q, floating)
    u = Tm @ v
    udot = mb.forward_dynamics(q, u, T, f_ext=F)
    corr = np.zeros(mb.nu)                  # u = T v: udot = T a + T_dot v (T_dot: the free flyer's R [w]x)
    if floating:
        s = mb.u_slice("root_joint").start
        corr[s:s + 3] = mb.frame_pose(q, mb.body_names[0])[:3, :3] @ np.cross(v[3:6], v[:3])
    a = np.linalg.solve(Tm, udot - corr)
    fext = [pin.Force.Zero() for _ in range(pm.njoints)]
    for j in range(1, pm.njoints):
        fext[j] = pin.Force(F[index[body_of[pm.names[j]]], 3:], F[index[body_of[pm.names[j]]], :3])
    pin.rnea(pm, pd, to_pin_q(mb, pm, q), v, a, fext)
    for j in range(1, pm.njoints):
        body, su = body_of[pm.names[j]], mb.u_slice(pm.names[j])
        fv, m = mb.atbi_filter_vectors(q, u, T, body, f_ext=F), mb.atbi_matrices(q, body)
        ap = _sv(pd.liMi[j].actInv(pd.a_gf[pm.parents[j]]))
        f = _sv(pd.f[j])
        assert_close(m["tauper"] @ m["P"] @ ap + fv["zplus"], f, 1e-10, f"{body}: f = P+ alpha+ + z+")
        assert_close(fv["nu"] - m["G"].T @ ap, udot[su], 1e-10, f"{body}: Udot = nu - G^T alpha+")
        assert_close(fv["z"], fv["zplus"] - m["G"] @ fv["eps"], 1e-10, f"{body}: z = z+ - G eps")
        assert_close(fv["eps"], T[su] - m["H"].T @ fv["z"], 1e-10, f"{body}: eps = T - H^T z")
        assert_close(fv["nu"], m["Dinv"] @ fv["eps"], 1e-10, f"{body}: nu = D^-1 eps")
    Q = np.stack([q, mb.sanitize(rng.uniform(-2.0, 2.0, mb.nq))])
    U, TT = np.stack([u, -u]), np.stack([T, 2 * T])
    fb = mb.atbi_filter_vectors(Q, U, TT, body)
    for i in range(2):
        one = mb.atbi_filter_vectors(Q[i], U[i], TT[i], body)
        for k in one:
            assert_close(fb[k][i], one[k], 1e-14, f"batch {k}")


def test_atbi_filter_vectors_on_random_trees(tree):
    """Every hinge type: ``Udot = nu - G^T alpha+`` with alpha+ = phi^T(parent, body) alpha(parent), the parent's
    acceleration from its Jacobian (J Udot + Jdot U, plus gravity as [0; -R^T g]); and the identities
    z = z+ - G eps, eps = T - H^T z, nu = D^-1 eps (1e-10 relative)."""
    rng = np.random.default_rng(32)
    q, u = _state(tree, rng)
    T, F = rng.normal(size=tree.nu), rng.normal(size=(tree.nb, 6))
    g = np.array([0.3, -0.2, -9.81])
    udot = tree.forward_dynamics(q, u, T, f_ext=F, gravity=g)
    for b in tree.manifest["bodies"]:
        body, su = b["name"], tree.u_slice(b["hinge"])
        fv = tree.atbi_filter_vectors(q, u, T, body, f_ext=F, gravity=g)
        m = tree.atbi_matrices(q, body)
        X = tree.frame_pose(q, body)
        if b["parent"] == "newtonian":
            alpha_p = np.r_[np.zeros(3), -g]
        else:
            Xp = tree.frame_pose(q, b["parent"])
            alpha_p = tree.jacobian(q, b["parent"]) @ udot + tree.jacobian_dot(q, u, b["parent"]) @ u
            alpha_p[3:] -= Xp[:3, :3].T @ g
            X = np.linalg.solve(Xp, X)
        R, l = X[:3, :3], X[:3, 3]
        ap = np.r_[R.T @ alpha_p[:3], R.T @ (alpha_p[3:] + np.cross(alpha_p[:3], l))]
        assert_close(fv["nu"] - m["G"].T @ ap, udot[su], 1e-10, f"{body}: Udot = nu - G^T alpha+")
        assert_close(fv["z"], fv["zplus"] - m["G"] @ fv["eps"], 1e-10, f"{body}: z = z+ - G eps")
        assert_close(fv["eps"], T[su] - m["H"].T @ fv["z"], 1e-10, f"{body}: eps = T - H^T z")
        assert_close(fv["nu"], m["Dinv"] @ fv["eps"], 1e-10, f"{body}: nu = D^-1 eps")


# ------------------------------------------------------------------------------------------------
# static bodies fused into their moving ancestor (symgen.algorithms.soa.fuse_static; the robot: model_factory)
# ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fused_robot(tmp_path_factory):
    path = tmp_path_factory.mktemp("fused") / "fused.urdf"
    path.write_text(STATIC_URDF)
    return path, symgen.build(str(path), floating_base=True)


def test_static_subtrees_are_fused_out_of_the_dynamics(fused_robot):
    """The tree FD, ID and M run over has the static bodies (fixed joints: a leaf on the base, a chain of two on
    link1, a force-torque link between link1 and link2, a tool on link2) fused into their moving ancestors: three
    bodies of eight, each host's rigid inertia the sum of its own and the moved static ones' (the total mass kept),
    link2 hanging from link1 with its onode moved by the force-torque link's pose (its pose in link1 at q = 0 is
    the kinematics', which the fusing does not touch)."""
    from symgen.algorithms import soa
    from symgen.codegen.emit import body_infos
    from symgen.model import load_model
    from symgen.pipeline.sources import _hinge_layout, cached_model_sources

    path, mb = fused_robot
    model = load_model(str(path), floating_base=True)
    _, slugs, layout, _, _ = _hinge_layout(model)
    bodies = body_infos(model, layout, slugs, {b.name: i for i, b in enumerate(model.bodies)})
    fused, adds = soa.fuse_static(bodies)
    assert [b.name for b in fused] == ["base", "link1", "link2"]
    index = {b.name: b.k for b in bodies}
    assert [b.parent for b in fused] == [-1, 0, 1] and [b.tag for b in fused] == [str(index[b.name]) for b in fused]
    names = {j: sorted(bodies[k].name for k, _, _ in a) for j, a in adds.items()}
    assert names == {0: ["imu"], 1: ["ft", "sensor", "sensor_tip"], 2: ["tool"]}
    q0 = mb.neutral_q()
    X1, X2 = mb.frame_pose(q0, "link1"), mb.frame_pose(q0, "link2")
    link2 = fused[2]
    X12 = np.eye(4)
    X12[:3, :3], X12[:3, 3] = np.reshape(link2.on_R, (3, 3)) @ np.reshape(link2.pinv_R, (3, 3)), \
        np.reshape(link2.on_R, (3, 3)) @ link2.pinv_l + link2.on_l
    assert_close(X12, np.linalg.inv(X1) @ X2, 1e-12, "link2's moved onode: its pose in link1 at q = 0")
    assert abs(sum(b.M[3][3] for b in fused) - sum(b.M[3][3] for b in bodies)) < 1e-14
    files, manifest = cached_model_sources(model)
    fd = files["fused.c"].split("int sg_fused_forward_dynamics(")[1].split("\n}\n")[0]
    import re

    for b in bodies:      # the spatial velocities FD computes: the hosts' only
        assert bool(re.search(rf"\bV{b.k}_\d", fd)) == (b.name in ("base", "link1", "link2")), b.name
    assert mb.forms["forward_dynamics"] == "straight"


def _check_the_fused_robot(mb, per_kind, path, seed, n):
    """FD, ID and M against Pinocchio (which merges fixed joints itself) to 1e-9; then at n random states, ID and
    FD with an external wrench f on every body against the kinematics' Jacobians (code the fusing does not touch):
    ID(q, u, udot, f) = ID(q, u, udot, 0) - sum_k J_k^T f_k, M Udot = T - C(f) (1e-10 relative), and FD, ID and M
    against ``per_kind`` (the per-kind form over every body, 1e-12).  Returns the states, (q, u, T, f) each."""
    pin = pytest.importorskip("pinocchio")
    from pin_maps import compare_with_pinocchio

    pm = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer())
    pm.gravity.linear[:] = mb.gravity
    err = compare_with_pinocchio(mb, pm, True, np.random.default_rng(seed), n_states=4, frames=False)
    assert max(err.values()) < 1e-9, err
    rng, states = np.random.default_rng(seed + 16), []
    for _ in range(n):
        q = mb.sanitize(rng.uniform(-2, 2, mb.nq))
        u, udot, T = rng.normal(size=mb.nu), rng.normal(size=mb.nu), rng.normal(size=mb.nu)
        f = rng.normal(size=(mb.nb, 6))
        gen = sum(mb.jacobian(q, name).T @ f[k] for k, name in enumerate(mb.body_names))
        assert_close(mb.inverse_dynamics(q, u, udot, f_ext=f), mb.inverse_dynamics(q, u, udot) - gen, 1e-10,
                     "ID with f_ext on every body")
        C = mb.inverse_dynamics(q, u, np.zeros(mb.nu), f_ext=f)
        assert_close(mb.forward_dynamics(q, u, T, f_ext=f), np.linalg.solve(mb.mass_matrix(q), T - C), 1e-10,
                     "FD with f_ext on every body")
        for verb, args in (("forward_dynamics", (q, u, T)), ("inverse_dynamics", (q, u, udot))):
            assert_close(getattr(mb, verb)(*args, f_ext=f), getattr(per_kind, verb)(*args, f_ext=f), 1e-12, verb)
        assert_close(mb.mass_matrix(q), per_kind.mass_matrix(q), 1e-12, "M")
        states.append((q, u, T, f))
    return states


def test_fused_dynamics_match_pinocchio_and_external_forces_on_static_bodies(fused_robot):
    """FD, ID and M of the fused tree against Pinocchio (which merges fixed joints itself) to 1e-9, and an
    external wrench on every body, the static ones included, against the kinematics' Jacobians (code the fusing
    does not touch): ID(q, u, udot, f) = ID(q, u, udot, 0) - sum_k J_k^T f_k, and FD solves M Udot = T - C(f)
    (1e-10 relative); the per-kind form (every body kept) agrees to 1e-12."""
    path, mb = fused_robot
    _check_the_fused_robot(mb, symgen.build(str(path), floating_base=True, form="per_kind"), path, 5, 4)


def test_the_looped_schedule_runs_over_the_fused_tree(fused_robot, monkeypatch):
    """With the cost model's limits lowered (every entry point looped, as a big robot's are), FD, ID and M run
    their per-kind steps over the fused tree (tables of their own, sg_fused_dyn_..., three bodies), gathering each
    body's f_ext and its static bodies' moved into it: they agree with Pinocchio (1e-9), with an external wrench
    on every body against the kinematics' Jacobians (1e-10, as above), with the per-kind form over every body
    (1e-12), and each lane of a batch of 2W + 3 states equals the one-state call bit for bit.  atbi_matrices
    keeps every body's matrices (the tree without fusing: the per-kind form's)."""
    from symgen.codegen import schedule
    from symgen.codegen.lanes import lane_width
    from symgen.model import load_model
    from symgen.pipeline.sources import cached_model_sources

    path, _ = fused_robot
    per_kind = symgen.build(str(path), floating_base=True, form="per_kind")
    monkeypatch.setattr(schedule, "STRAIGHT_LINE_LIMIT", 10)
    monkeypatch.setattr(schedule, "CRBA_UNROLL_LIMIT", 0)
    mb = symgen.build(str(path), floating_base=True)
    assert set(mb.forms.values()) == {"per_kind"}
    text = cached_model_sources(load_model(str(path), floating_base=True))[0]["fused.c"]
    assert "static const int sg_fused_dyn_parent[3] = { -1, 0, 1 };" in text
    assert "sg_fused_dyn_velocities[sg_fused_dyn_kind[k]]" in text
    for q, u, T, f in _check_the_fused_robot(mb, per_kind, path, 6, 3):
        for name in mb.body_names:          # the static bodies' too
            for field, m in mb.atbi_matrices(q, name).items():
                assert_close(m, per_kind.atbi_matrices(q, name)[field], 1e-12, f"{name}: {field}")
            fv, ref = mb.atbi_filter_vectors(q, u, T, name, f_ext=f), per_kind.atbi_filter_vectors(q, u, T, name, f_ext=f)
            for field in fv:
                assert_close(fv[field], ref[field], 1e-12, f"{name}: {field}")
    n, rng = 2 * lane_width() + 3, np.random.default_rng(22)
    Q = mb.sanitize(rng.uniform(-2, 2, (n, mb.nq)))
    U, X, F = rng.normal(size=(n, mb.nu)), rng.normal(size=(n, mb.nu)), rng.normal(size=(n, mb.nb, 6))
    fd, id_, M = mb.forward_dynamics(Q, U, X, f_ext=F), mb.inverse_dynamics(Q, U, X, f_ext=F), mb.mass_matrix(Q)
    for i in range(n):
        assert np.array_equal(fd[i], mb.forward_dynamics(Q[i], U[i], X[i], f_ext=F[i])), i
        assert np.array_equal(id_[i], mb.inverse_dynamics(Q[i], U[i], X[i], f_ext=F[i])), i
        assert np.array_equal(M[i], mb.mass_matrix(Q[i])), i
