"""Closed chains a new user writes (issue 25, item 3), against Pinocchio:

* ``ground``: a loop from a frame fixed on the newtonian (top-level ``frames:``) to a body (BALL), and one from a
  body to the ``newtonian`` frame itself (PIN);
* ``branches``: two LOCKED cuts between two branches hanging from the newtonian (only zero-dof cut joints: the
  model whose C did not compile under -Werror);
* ``shared``: three loops on one body (BALL, BALL to the two other branch's bodies, PIN to a ground frame);
* ``generic``: a UJOINT cut between branches and a CUSTOM [PIN, LINEAR] cut to a ground frame.

The first three: ``mb.forward_dynamics`` (TA) against ``pin.constraintDynamics`` (checked by
tests/pin_closed.py against the loops' acceleration constraints and a dense KKT / null-space solve) at 1e-9.
Pinocchio has no UJOINT / CUSTOM contact: for ``generic`` the cut joint is built in Pinocchio as a chain of
massless joints welded to the target, its rows reduced onto the real coordinates
(:func:`pin_closed.generic_cut_rows`; checked here against ``constraintDynamics`` on a PIN cut), and the
accelerations come from the KKT system with Pinocchio's M, nonlinear effects and those rows.

Cut-joint actuation (``actuated=[..., loop]``): the cut joint's generalized force, applied back as node forces
(``sp_external_force_from_t``) with the actuated hinges' T through TA forward dynamics, reproduces Udot.

Runtime: four symgen builds (one per mechanism, module fixtures, small mechanisms).
"""
from __future__ import annotations

import numpy as np
import pytest
import yaml

pin = pytest.importorskip("pinocchio")

import symgen  # noqa: E402
from pin_closed import (all_cut_rows, consistent_velocity, constraint_models, dense_constrained_fd,  # noqa: E402
                        from_pin_accel, from_pin_tau, generic_cut_rows, mechanism, null_space, pin_constrained_fd,
                        pinocchio_model, to_pin_q, u_matrix, rel, write_yaml)
from symgen.model import ModelError  # noqa: E402
from symgen.model.load import model_from_dict  # noqa: E402

TWO_BRANCHES = [("a1", "newtonian", "BALL_QUAT"), ("a2", "a1", "PIN"), ("a3", "a2", "BALL_QUAT"),
                ("c1", "newtonian", "PIN"), ("c2", "c1", "BALL_QUAT"), ("c3", "c2", "SLIDER")]
CUSTOM = {"type": "CUSTOM", "subhinges": ["PIN", "LINEAR"], "axes": [[0, 0, 1], [1, 0, 0]]}
#: PIN / SLIDER chains (no ball-ball pairs, whose idle spins no hinge but the balls drives) where a mechanism's
#: cut joint is actuated
PIN_CHAIN = [("a1", "newtonian", "PIN"), ("a2", "a1", "SLIDER"), ("a3", "a2", "PIN"), ("a4", "a3", "PIN")]
MECHANISMS = {
    "ground": (1, PIN_CHAIN + [("c1", "newtonian", "PIN"), ("c2", "c1", "PIN"), ("c3", "c2", "BALL_QUAT"),
                               ("c4", "c3", "PIN")],
               [("g1", "ground", "a4", "BALL"), ("g2", "c4", "newtonian", "PIN")]),
    "branches": (2, [("a1", "newtonian", "BALL_QUAT"), ("a2", "a1", "BALL_QUAT"), ("a3", "a2", "BALL_QUAT"),
                     ("c1", "newtonian", "BALL_QUAT"), ("c2", "c1", "PIN"), ("c3", "c2", "BALL_QUAT"),
                     ("c4", "c1", "SLIDER")],
                 [("w1", "a3", "c3", "LOCKED"), ("w2", "c4", "a2", "LOCKED")]),
    "shared": (3, TWO_BRANCHES + [("d1", "newtonian", "PIN")],
               [("s1", "a3", "c3", "BALL"), ("s2", "a2", "c3", "BALL"), ("s3", "ground", "c3", "PIN")]),
    "generic": (4, PIN_CHAIN + [("c1", "newtonian", "PIN"), ("c2", "c1", "PIN"), ("c3", "c2", "SLIDER"),
                                ("d1", "newtonian", "PIN"), ("d2", "d1", "BALL_QUAT"), ("d3", "d2", "PIN")],
                [("u1", "a4", "c3", "UJOINT"), ("u2", "ground", "d3", CUSTOM)]),
}
#: per mechanism: hinges actuated with one loop's cut joint, as many U as the mechanism has degrees of freedom
#: and spanning them
ACTUATION = {"ground": (["h_a1"], "g2"), "generic": (["h_a1", "h_d1"], "u1")}
N_STATES = 2


class Mechanism:
    def __init__(self, key, directory):
        seed, bodies, loops = MECHANISMS[key]
        self.key = key
        self.doc, self.q = mechanism(seed, bodies, loops, f"robust_{key}")
        self.path = write_yaml(self.doc, directory)
        self.pm, self.maps = pinocchio_model(self.doc)
        self.qp = to_pin_q(self.maps, self.q)
        self.generic = any(not isinstance(lc["hinge"], str) or lc["hinge"] == "UJOINT" for lc in self.doc["loops"])
        self.cms = None if self.generic else constraint_models(self.pm, self.doc)
        self.J, _ = all_cut_rows(self.pm, self.doc, self.qp)
        self.rank = null_space(self.J)[1]
        self.mb = symgen.build(str(self.path))

    def states(self, seed):
        """(v_pin, tau_pin) with the loops closed at velocity level (null space of all the cuts' rows)."""
        rng = np.random.default_rng(seed)
        N, _ = null_space(self.J)
        return [(N @ rng.normal(size=N.shape[1]), rng.normal(size=self.pm.nv)) for _ in range(N_STATES)]

    def pin_accel(self, v, tau):
        """Pinocchio's constrained accelerations: constraintDynamics, or (UJOINT / CUSTOM cuts) the KKT solve
        with Pinocchio's M, nonlinear effects and the virtual-chain rows."""
        if self.cms is not None:
            return pin_constrained_fd(self.pm, self.cms, self.qp, v, tau, doc=self.doc)
        J, gamma = all_cut_rows(self.pm, self.doc, self.qp, v)
        a_kkt, a_null = dense_constrained_fd(self.pm, self.qp, v, tau, J, gamma)
        assert a_kkt is not None and rel(a_kkt, a_null) < 1e-10
        return a_kkt


@pytest.fixture(scope="module")
def mechanisms(tmp_path_factory):
    d = tmp_path_factory.mktemp("robust")
    built = {}

    def get(key):
        if key not in built:
            built[key] = Mechanism(key, d)
        return built[key]
    return get


@pytest.mark.parametrize("key", list(MECHANISMS))
def test_closed_chains_match_pinocchio(mechanisms, key):
    """TA forward dynamics = Pinocchio's constrained accelerations (1e-9 relative); the loops are closed at
    q_ref in symgen's own loop errors, TA's rank is the rows' rank."""
    m = mechanisms(key)
    mb, maps, q = m.mb, m.maps, m.q
    for c in mb.loops:
        assert np.max(np.abs(c.residuals(q)["pose"]), initial=0.0) < 1e-10, c
    worst = 0.0
    for v, tau in m.states(10 + len(key)):
        a_pin = m.pin_accel(v, tau)
        u = u_matrix(maps, q) @ v
        T = from_pin_tau(maps, q, tau)
        res = mb.ta_forward_dynamics(q, u, T)
        assert res["rank"] == m.rank
        worst = max(worst, rel(res["udot"], from_pin_accel(maps, q, v, a_pin)))
    assert worst < 1e-9, f"{key}: TA forward dynamics differ from Pinocchio's by {worst:.3g}"


def test_locked_cuts_only_compile_clean(mechanisms):
    """Only zero-dof cut joints: the cut joint's fit and least squares are never called, and their static C
    helpers are left out (the model compiled under -std=c99 -Wall -Wextra -Werror -pedantic to get here)."""
    from symgen.model import load_model
    from symgen.pipeline.sources import cached_model_sources

    m = mechanisms("branches")
    assert all(c.nu == 0 for c in m.mb.loops)
    files, _ = cached_model_sources(load_model(m.path))          # the sources the build compiled (cached)
    text = files[f"{m.mb.name}.c"]
    assert "#define SG_LOOP_NO_CUT_FIT_Q" in text and "#define SG_LOOP_NO_LSTSQ6" in text


def test_virtual_chain_oracle_agrees_with_constraint_dynamics(mechanisms):
    """The oracle of the UJOINT / CUSTOM cuts, on a PIN cut (one massless revolute joint welded to the target)
    and a BALL cut (point contact): the KKT accelerations with its rows are constraintDynamics' (Pinocchio only)."""
    m = mechanisms("ground")
    pin_loop = next(lc for lc in m.doc["loops"] if lc["hinge"] == "PIN")
    ball = {**m.doc, "loops": [lc for lc in m.doc["loops"] if lc["hinge"] == "BALL"]}
    for v, tau in m.states(7):
        Gp, gp = generic_cut_rows(m.pm, m.doc, m.qp, v, loops=[pin_loop])
        assert Gp.shape[0] == 5 and null_space(Gp)[1] == 5
        k = all_cut_rows(m.pm, ball, m.qp, v)
        J, gamma = np.vstack([k[0], Gp]), np.r_[k[1], gp]
        a_kkt, _ = dense_constrained_fd(m.pm, m.qp, v, tau, J, gamma)
        a_pin = pin_constrained_fd(m.pm, m.cms, m.qp, v, tau, doc=m.doc)
        assert a_kkt is not None and rel(a_kkt, a_pin) < 1e-9


@pytest.mark.parametrize("key", list(ACTUATION))
def test_cut_joint_actuation_round_trip(mechanisms, key):
    """A motion from TA forward dynamics with random T; inverse dynamics with the cut joint of one loop
    and a few hinges actuated (as many U as degrees of freedom) returns T on those hinges and the cut
    joint's generalized force; the hinges' T plus the cut joint's force as node forces
    (``sp_external_force_from_t``) through TA forward dynamics give Udot back (1e-9)."""
    m = mechanisms(key)
    mb, maps, q = m.mb, m.maps, m.q
    hinges, loop = ACTUATION[key]
    c = mb.loop(loop)
    n_act = sum(mb.u_slice(h).stop - mb.u_slice(h).start for h in hinges) + c.nu
    assert n_act == mb.nu - m.rank
    for v, tau in m.states(3):
        u = u_matrix(maps, q) @ v
        udot = mb.forward_dynamics(q, u, from_pin_tau(maps, q, tau))
        res = mb.inverse_dynamics(q, u, udot, actuated=hinges + [loop])
        T, lam = res
        assert set(res.cut) == {loop} and res.cut[loop].shape == (c.nu,) and set(lam) == set(mb.loop_names)
        off = np.ones(mb.nu, dtype=bool)
        for h in hinges:
            off[mb.u_slice(h)] = False
        assert not np.any(T[off])
        F = c.sp_external_force_from_t(res.cut[loop], q=q, as_f_ext=True)
        back = mb.forward_dynamics(q, u, T, f_ext=F)
        assert rel(back, udot) < 1e-9, f"{key}: {rel(back, udot):.3g}"


def test_ground_nodes_in_model_files():
    """``newtonian`` and the top-level ``frames:`` (fixed on the newtonian) are loop nodes; both ends on the
    newtonian constrain nothing; an unknown node names what is allowed."""
    body = {"name": "b", "parent": "newtonian", "mass": 1.0, "inertia": [1, 1, 1, 0, 0, 0],
            "hinge": {"type": "PIN"}, "frames": [{"name": "tip", "xyz": [1, 0, 0]}]}
    doc = {"name": "g", "bodies": [body], "frames": [{"name": "anchor", "xyz": [1, 0, 0], "rpy": [0, 0, 0.3]}],
           "loops": [{"name": "l1", "source": "anchor", "target": "tip", "hinge": "BALL"},
                     {"name": "l2", "source": "b", "target": "newtonian", "hinge": "PIN"}]}
    m = model_from_dict(yaml.safe_load(yaml.safe_dump(doc)))
    assert [(f.name, f.body) for f in m.frames] == [("tip", "b"), ("anchor", "newtonian")]
    assert [(lc.source, lc.target) for lc in m.loops] == [("anchor", "tip"), ("b", "newtonian")]
    bad = {**doc, "loops": [{"name": "l", "source": "anchor", "target": "newtonian", "hinge": "BALL"}]}
    with pytest.raises(ModelError, match="same body 'newtonian'"):
        model_from_dict(bad)
    bad = {**doc, "loops": [{"name": "l", "source": "nowhere", "target": "tip", "hinge": "BALL"}]}
    with pytest.raises(ModelError, match="unknown frame 'nowhere'.*'newtonian' or a frame fixed on it"):
        model_from_dict(bad)
    bad = {**doc, "frames": [{"name": "tip"}]}
    with pytest.raises(ModelError, match="duplicate frame name 'tip'"):
        model_from_dict(bad)


def test_ground_frame_queries(mechanisms):
    """A frame fixed on the newtonian: its pose is its placement, it has no Jacobian columns, no velocity, and
    an external force on it is refused (it acts on nothing)."""
    m = mechanisms("ground")
    mb = m.mb
    X = np.eye(4)
    g = next(f for f in m.doc["frames"] if f["name"] == "g1_src")
    from pin_closed import pose_matrix
    X = pose_matrix(g)
    u = np.random.default_rng(0).normal(size=mb.nu)
    assert rel(mb.frame_pose(m.q, "g1_src"), X) < 1e-14
    assert not np.any(mb.jacobian(m.q, "g1_src")) and not np.any(mb.frame_velocity(m.q, u, "g1_src"))
    rel_T = mb.f2f("g1_src", "g1_tgt").rel_transform(m.q)
    assert rel(rel_T, np.eye(4)) < 1e-10
    with pytest.raises(ValueError, match="acts on nothing"):
        mb.forward_dynamics(m.q, u, np.zeros(mb.nu), f_ext={"g1_src": np.ones(6)}, tree=True)


@pytest.mark.parametrize("key", ["ground", "branches", "shared"])
def test_interbody_forces_match_pinocchio_multipliers(mechanisms, key):
    """``mb.interbody_forces`` (Karana's getInterBodyForceTAFwdDyn: at the source node, source axes, the sign of
    a force on the target) against constraintDynamics' ``lambda_c``: Pinocchio's contact force acts on frame 1
    (the source; LOCAL axes of the source frame, [F; N] order), so the force on the target is ``-lambda``; a PIN
    cut's two points (the origin and one unit along the source's z) sum to the wrench at the origin.
    ``node="target"`` is the same wrench moved to the target frame."""
    from pin_closed import PROX

    m = mechanisms(key)
    mb, maps, q = m.mb, m.maps, m.q
    for v, tau in m.states(21):
        pd = m.pm.createData()
        cds = [cm.createData() for cm in m.cms]
        pin.initConstraintDynamics(m.pm, pd, m.cms, cds)
        pin.constraintDynamics(m.pm, pd, m.qp, v, tau, m.cms, cds, pin.ProximalSettings(*PROX))
        lam, o, want = np.array(pd.lambda_c), 0, {}
        for lc in m.doc["loops"]:
            if lc["hinge"] == "BALL":
                N, F, o = np.zeros(3), -lam[o:o + 3], o + 3
            elif lc["hinge"] == "LOCKED":
                F, N, o = -lam[o:o + 3], -lam[o + 3:o + 6], o + 6
            else:                                                # PIN: two points on the source's z axis
                l1, l2, o = lam[o:o + 3], lam[o + 3:o + 6], o + 6
                F, N = -(l1 + l2), np.cross([0.0, 0.0, 1.0], -l2)
            want[lc["name"]] = np.r_[N, F]
        assert o == lam.size
        u = u_matrix(maps, q) @ v
        T = from_pin_tau(maps, q, tau)
        got, tgt = mb.interbody_forces(q, u, T), mb.interbody_forces(q, u, T, node="target")
        for name, f in want.items():
            assert rel(got[name], f) < 1e-9, (key, name, got[name], f)
            X = np.linalg.solve(mb.frame_pose(q, mb.loop(name).source), mb.frame_pose(q, mb.loop(name).target))
            R, l = X[:3, :3], X[:3, 3]                            # f_S = phi(S, T) f_T
            fT = tgt[name]
            assert rel(np.r_[R @ fT[:3] + np.cross(l, R @ fT[3:]), R @ fT[3:]], got[name]) < 1e-12
