"""mb.rollout: many trajectories integrated inside C (sg_<m>_rollout).

Oracles: the Python RK4 loop over the C forward dynamics (``simulate_python``, and a semi-implicit Euler and a
per-step-T RK4 loop written here), conservation of energy and momentum on the free-floating spacecraft (no
gravity), and a Python thread that keeps running while another thread is inside the C call (the GIL is
released)."""
from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pytest

import symgen
from symgen.runtime.integrate import simulate_python

MODELS = Path(__file__).resolve().parents[1] / "examples" / "models"


@pytest.fixture(scope="module")
def spacecraft():
    return symgen.build(MODELS / "spacecraft.yaml")


@pytest.fixture(scope="module")
def arm():
    return symgen.build(MODELS / "arm7.urdf")


def states(mb, n, seed=0, scale=0.5):
    rng = np.random.default_rng(seed)
    Q = mb.sanitize(mb.neutral_q() + scale * rng.standard_normal((n, mb.nq)))
    return Q, scale * rng.standard_normal((n, mb.nu))


def test_rollout_matches_python_rk4(spacecraft, arm):
    """Every case of one C call equals the Python RK4 loop from the same state to 1e-12 (quaternions of the
    spacecraft's FULL6DOF and BALL_QUAT hinges renormalized after every step on both sides)."""
    for mb, T in ((spacecraft, None), (arm, np.linspace(-1, 1, arm.nu))):
        Q0, U0 = states(mb, 3)
        out = mb.rollout(Q0, U0, 1e-3, 300, T=T)
        assert out["q"].shape == (3, 301, mb.nq) and out["u"].shape == (3, 301, mb.nu) and out["ok"].all()
        for c in range(3):
            ref = simulate_python(mb, Q0[c], U0[c], (0.0, 0.3), 1e-3, T=T)
            np.testing.assert_allclose(out["t"], ref.t, rtol=0, atol=1e-15)
            assert np.abs(out["q"][c] - ref.Q).max() <= 1e-12 * max(1.0, np.abs(ref.Q).max())
            assert np.abs(out["u"][c] - ref.U).max() <= 1e-12 * max(1.0, np.abs(ref.U).max())


def test_simulate_is_a_rollout(arm):
    Q0, U0 = states(arm, 1, seed=3)
    tr = arm.simulate(Q0[0], U0[0], (0.0, 0.2), 1e-3)
    out = arm.rollout(Q0[0], U0[0], 1e-3, 200)
    assert out["q"].shape == (1, 201, arm.nq)  # the case axis is always there, as MuJoCo's
    assert np.array_equal(tr.Q, out["q"][0]) and np.array_equal(tr.U, out["u"][0])


def test_rollout_every_and_per_step_torques(arm):
    """every=k keeps rows 0, k, 2k, ... of every=1; T per step (held over the step) matches an RK4 loop written
    here with the same zero-order hold, to 1e-12."""
    Q0, U0 = states(arm, 2, seed=1)
    n_steps, dt = 60, 2e-3
    T = np.random.default_rng(2).standard_normal((2, n_steps, arm.nu))
    full = arm.rollout(Q0, U0, dt, n_steps, T=T)
    every = arm.rollout(Q0, U0, dt, n_steps, T=T, every=7)
    assert every["q"].shape[1] == n_steps // 7 + 1
    assert np.array_equal(every["q"], full["q"][:, ::7][:, :n_steps // 7 + 1])
    np.testing.assert_allclose(every["t"], full["t"][::7][:n_steps // 7 + 1], rtol=0, atol=1e-15)
    for c in range(2):
        q, u = Q0[c].copy(), U0[c].copy()
        for k in range(n_steps):
            def f(q, u):
                return arm.qdot(q, u), arm.forward_dynamics(q, u, T[c, k])
            k1 = f(q, u)
            k2 = f(q + dt / 2 * k1[0], u + dt / 2 * k1[1])
            k3 = f(q + dt / 2 * k2[0], u + dt / 2 * k2[1])
            k4 = f(q + dt * k3[0], u + dt * k3[1])
            q = arm.sanitize(q + dt / 6 * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0]))
            u = u + dt / 6 * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1])
            assert np.abs(full["q"][c, k + 1] - q).max() <= 1e-12 and np.abs(full["u"][c, k + 1] - u).max() <= 1e-12


def test_rollout_semi_implicit_euler(spacecraft):
    """method="euler": U' = U + dt Udot(Q, U), Q' = sanitize(Q + dt N(Q) U'), written here in Python: 1e-12."""
    mb = spacecraft
    Q0, U0 = states(mb, 2, seed=4)
    dt, n_steps = 1e-3, 100
    out = mb.rollout(Q0, U0, dt, n_steps, method="euler")
    for c in range(2):
        q, u = Q0[c].copy(), U0[c].copy()
        for _ in range(n_steps):
            u = u + dt * mb.forward_dynamics(q, u, np.zeros(mb.nu))
            q = mb.sanitize(q + dt * mb.qdot(q, u))
        assert np.abs(out["q"][c, -1] - q).max() <= 1e-12 and np.abs(out["u"][c, -1] - u).max() <= 1e-12


def momentum_and_energy(mb, q, u):
    """Kinetic energy 1/2 u^T M u and the total linear and angular momentum about newtonian's origin, summed
    over the bodies from their velocities, poses and the YAML's mass properties (manifest copy)."""
    E = 0.5 * u @ mb.mass_matrix(q) @ u
    P, L = np.zeros(3), np.zeros(3)
    for b in mb.manifest["bodies"]:
        m, c, Ic = b["mass"], np.array(b["com"]), np.array(b["inertia"])
        X, V = mb.frame_pose(q, b["name"]), mb.frame_velocity(q, u, b["name"])
        R, w = X[:3, :3], V[:3]
        vc = R @ (V[3:] + np.cross(w, c))          # CoM velocity, newtonian axes
        pc = X[:3, 3] + R @ c
        P += m * vc
        L += np.cross(pc, m * vc) + R @ (Ic @ w)
    return E, P, L


def test_rollout_conserves_energy_and_momentum(spacecraft):
    """The spacecraft has no gravity and no forces: over 2 s of RK4 at dt = 1 ms, in each of 4 cases of one
    call, energy and both momenta stay within 1e-9 (relative to their initial size)."""
    mb = spacecraft
    assert not np.any(mb.gravity)
    Q0, U0 = states(mb, 4, seed=5, scale=0.3)
    out = mb.rollout(Q0, U0, 1e-3, 2000, every=500)
    for c in range(4):
        E0, P0, L0 = momentum_and_energy(mb, out["q"][c, 0], out["u"][c, 0])
        for row in range(1, out["q"].shape[1]):
            E, P, L = momentum_and_energy(mb, out["q"][c, row], out["u"][c, row])
            assert abs(E - E0) <= 1e-9 * E0
            assert np.abs(P - P0).max() <= 1e-9 * max(1.0, np.abs(P0).max())
            assert np.abs(L - L0).max() <= 1e-9 * max(1.0, np.abs(L0).max())


def test_rollout_releases_the_gil(arm):
    """While one thread is inside a long rollout, a Python loop in this thread keeps running; and two threads'
    rollouts give the same numbers as one call."""
    Q0, U0 = states(arm, 200, seed=6)
    t = time.perf_counter()
    arm.rollout(Q0[:20], U0[:20], 1e-3, 1000)
    per_case = (time.perf_counter() - t) / 20
    n = max(20, int(0.5 / per_case))               # about half a second in C
    Qn, Un = states(arm, n, seed=7)
    result = {}
    worker = threading.Thread(target=lambda: result.update(out=arm.rollout(Qn, Un, 1e-3, 1000)))
    t0 = last = time.perf_counter()
    gap = 0.0
    worker.start()
    while worker.is_alive():                       # the longest this thread went without running
        now = time.perf_counter()
        gap, last = max(gap, now - last), now
    duration = time.perf_counter() - t0
    worker.join()
    assert result["out"]["ok"].all()
    # with the GIL held during the call this loop would stand still for all of it (gap ~ duration)
    assert gap < 0.25 * duration, (gap, duration)
    halves = [None, None]

    def run(i):
        halves[i] = arm.rollout(Q0[100 * i:100 * (i + 1)], U0[100 * i:100 * (i + 1)], 1e-3, 200)
    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    whole = arm.rollout(Q0, U0, 1e-3, 200)
    assert np.array_equal(np.concatenate([h["q"] for h in halves]), whole["q"])


def test_rollout_with_loops_matches_python():
    """The four-bar, Baumgarte-stabilized: TA forward dynamics in every stage, C against Python: 1e-12."""
    mb = symgen.build(MODELS / "fourbar.yaml")
    q0, u0 = mb.project(np.array([0.6, 1.5, 0.2]), np.array([2.0, 0.0, 0.0]), fixed=["crank"])
    out = mb.rollout(q0, u0, 1e-3, 300, baumgarte=(20.0, 1.0))
    ref = simulate_python(mb, q0, u0, (0.0, 0.3), 1e-3, baumgarte=(20.0, 1.0))
    assert np.abs(out["q"][0] - ref.Q).max() <= 1e-12 and np.abs(out["u"][0] - ref.U).max() <= 1e-12


@pytest.mark.parametrize("kwargs,words", [
    ({"every": 0}, ["every >= 1"]), ({"n_steps": -1}, ["n_steps >= 0"]), ({"method": "leapfrog"}, ["rk4", "euler"]),
    ({"dt": 0.0}, ["dt > 0"]), ({"T": np.zeros(3)}, ["rollout T must be"]), ({"baumgarte": (1, 1)}, ["loop"]),
])
def test_rollout_bad_arguments(arm, kwargs, words):
    args = {"dt": 1e-3, "n_steps": 10, **kwargs}
    with pytest.raises(ValueError) as e:
        arm.rollout(arm.neutral_q(), np.zeros(arm.nu), **args)
    for w in words:
        assert w in str(e.value)
