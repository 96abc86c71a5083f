"""The closed-chain example mechanisms of examples/models/ (fourbar, slider_crank, spatial_chain, delta_robot).

Each model is built once, assembled by ``mb.project`` from the configuration guess given in its YAML header
(the actuated hinges held), and given random velocities in the null space of ``mb.constraint_jacobian`` and
random generalized forces T = M z (z ~ N(0, 1): every coordinate accelerates O(1) whatever its inertia, e.g.
the spatial chain's coupler spin, 1e-5 kg m^2).  Checks:

(a) the TA forward dynamics (``mb.ta_forward_dynamics`` and the one-state ``mb.forward_dynamics``) equals a
    dense KKT solve ``[M G^T; G 0] [udot; -lam] = [T - C; -gamma]`` with M = ``mb.mass_matrix``, C the cut
    tree's ``mb.inverse_dynamics(q, u, 0)`` and (G, gamma) = ``mb.constraint_jacobian`` (redundant rows, as a
    planar PIN cut's, reduced to an independent set by SVD: the least-squares reading of the singular KKT);
(b) the constrained acceleration errors after TA vanish (below 1e-10);
(c) ``project`` leaves closed loops and consistent velocities (pose and velocity errors);
(d) where the mechanism has as many actuators as degrees of freedom: the closed-chain inverse dynamics
    (``actuated=`` the actuated hinges) fed back to ``forward_dynamics`` reproduces udot.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import symgen

MODELS = Path(__file__).resolve().parents[1] / "examples" / "models"

#: example -> (actuated hinges, configuration guess by hinge: the YAML headers' values)
EXAMPLES = {
    "fourbar": (["crank"], {"crank": 0.5, "rocker": 1.5, "coupler": -0.3}),
    "slider_crank": (["crank"], {"crank": 0.6, "slider": 0.4, "rod": -0.7}),
    "spatial_chain": (["crank"], {"crank": 0.5, "rocker": 1.0, "coupler": [0.0, 0.15, -0.2, 0.97]}),
    "delta_robot": (["arm1", "arm2", "arm3"],
                    {"arm1": 0.3, "arm2": 0.6, "arm3": 0.45, "platform": [0.0, 0.0, -0.45, 0.0, 0.0, 0.0, 1.0],
                     **{f"rod{i}{s}": [1.9, 0.0] for i in (1, 2, 3) for s in "ab"}}),
}
#: degrees of freedom of each closed mechanism (nU - rank G)
DOF = {"fourbar": 1, "slider_crank": 1, "spatial_chain": 2, "delta_robot": 3}
N_STATES = 3


def rel(a, b) -> float:
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.max(np.abs(a - b)) / max(1.0, float(np.max(np.abs(b)))))


def reduced(G, gamma, rtol=1e-10):
    """Independent rows spanning G's row space (SVD), with gamma mapped alike; also the rank and the part of
    gamma on the dependent rows (zero when the redundant constraints are consistent)."""
    U, s, Vt = np.linalg.svd(G)
    r = int(np.sum(s > rtol * s[0]))
    return s[:r, None] * Vt[:r], U[:, :r].T @ gamma, r, U[:, r:].T @ gamma


class Example:
    def __init__(self, name):
        self.name = name
        self.actuated, guess = EXAMPLES[name]
        self.mb = mb = symgen.build(str(MODELS / f"{name}.yaml"))
        q = mb.neutral_q()
        for h, v in guess.items():
            q[mb.q_slice(h)] = v
        self.q_guess = q
        self.q, u0 = mb.project(q, fixed=self.actuated)
        rng = np.random.default_rng(sum(map(ord, name)))
        G, _ = mb.constraint_jacobian(self.q)
        _, s, Vt = np.linalg.svd(G)
        r = int(np.sum(s > 1e-10 * s[0]))
        self.rank, N = r, Vt[r:].T                      # orthonormal null space of G
        M = mb.mass_matrix(self.q)
        self.states = [(N @ rng.normal(size=N.shape[1]), M @ rng.normal(size=mb.nu)) for _ in range(N_STATES)]
        self.u_random = rng.normal(size=mb.nu)


@pytest.fixture(scope="module")
def examples():
    built = {}

    def get(name):
        if name not in built:
            built[name] = Example(name)
        return built[name]
    return get


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_project_closes_loops(examples, name):
    """(c) project from the header's guess: the actuated hinges held, every loop closed (pose error below
    1e-12), and both a null-space velocity and project's velocity consistent (velocity errors below 1e-12)."""
    ex = examples(name)
    mb, q = ex.mb, ex.q
    for h in ex.actuated:
        assert np.array_equal(q[mb.q_slice(h)], ex.q_guess[mb.q_slice(h)])
    for n in mb.loop_names:
        c = mb.loop(n)
        assert np.max(np.abs(c.pose_error(q))) < 1e-12, (n, c.pose_error(q))
        assert np.max(np.abs(c.residuals(q)["pose"])) < 1e-12
    assert ex.rank == mb.nu - DOF[name], f"rank {ex.rank}"
    _, u = mb.project(q, ex.u_random, fixed=ex.actuated)
    for h in ex.actuated:
        assert np.array_equal(u[mb.u_slice(h)], ex.u_random[mb.u_slice(h)])
    for uu in [u] + [s[0] for s in ex.states]:
        for n in mb.loop_names:
            c = mb.loop(n)
            assert np.max(np.abs(c.vel_error(q, uu))) < 1e-12, (n, c.vel_error(q, uu))
            assert np.max(np.abs(c.residuals(q, uu)["vel"])) < 1e-12


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_ta_matches_dense_kkt(examples, name):
    """(a) TA udot against the dense KKT solve, and (b) the constrained acceleration errors after TA."""
    ex = examples(name)
    mb, q = ex.mb, ex.q
    M = mb.mass_matrix(q)
    for u, T in ex.states:
        res = mb.ta_forward_dynamics(q, u, T)
        udot = res["udot"]
        assert int(res["rank"]) == ex.rank
        assert rel(mb.forward_dynamics(q, u, T), udot) < 1e-13
        C = mb.inverse_dynamics(q, u, np.zeros(mb.nu))          # the cut tree's bias forces (gravity included)
        G, gamma = mb.constraint_jacobian(q, u)
        Gr, gr, r, g_dep = reduced(G, gamma)
        assert r == ex.rank
        assert np.max(np.abs(g_dep), initial=0.0) < 1e-10 * max(1.0, np.max(np.abs(gamma)))
        K = np.block([[M, Gr.T], [Gr, np.zeros((r, r))]])
        x = np.linalg.solve(K, np.r_[T - C, -gr])
        assert rel(udot, x[:mb.nu]) < 1e-9, f"TA vs KKT: {rel(udot, x[:mb.nu]):.3g}"
        for n in mb.loop_names:
            acc = mb.loop(n).residuals(q, u, udot)["accel"]
            assert np.max(np.abs(acc)) < 1e-10, (n, acc)
        assert np.max(np.abs(G @ udot + gamma)) < 1e-10


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_closed_inverse_dynamics_round_trip(examples, name):
    """(d) T_act = inverse_dynamics(actuated=...) of the TA motion; forward_dynamics(T_act) gives udot back."""
    ex = examples(name)
    mb, q = ex.mb, ex.q
    n_act = sum(mb.u_slice(h).stop - mb.u_slice(h).start for h in ex.actuated)
    if n_act != mb.nu - ex.rank:
        pytest.skip(f"{name}: {n_act} actuated U for {mb.nu - ex.rank} degrees of freedom")
    for u, T in ex.states:
        udot = mb.forward_dynamics(q, u, T)
        T_act, lam = mb.inverse_dynamics(q, u, udot, actuated=ex.actuated)
        off = np.ones(mb.nu, bool)
        for h in ex.actuated:
            off[mb.u_slice(h)] = False
        assert not np.any(T_act[off])
        assert set(lam) == set(mb.loop_names)
        back = mb.forward_dynamics(q, u, T_act)
        assert rel(back, udot) < 1e-9, f"ID -> FD: {rel(back, udot):.3g}"
