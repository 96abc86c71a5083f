"""The two forms of the model dynamics, generated from the one algorithm in ``symgen.soa``:

* the straight-line form (every body traced into one function) that ``forward_dynamics``,
  ``inverse_dynamics`` and ``mass_matrix`` run for models up to ``soa``'s size limits, and
* the loop form (``symgen.loopform``: the same per-body steps traced once per body kind, called by C loops
  over the bodies) that large models run, exported as ``sg_<model>_*_loop``.

They must agree to 1e-12 on every test model (a regression check: one algorithm, two traces), and the loop
form must agree with Pinocchio's ``aba``, ``rnea`` and ``crba`` (the oracle) to 1e-9 relative, as the
straight-line form does in tests/test_model_pinocchio.py.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import symgen
from model_factory import random_tree_dict, random_urdf, tree_model

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "models"
TOL = 1e-12


class LoopForm:
    """A built model whose forward/inverse dynamics and mass matrix run the loop form (one state)."""

    def __init__(self, mb):
        self.mb = mb
        lib, ffi = mb._lib, mb._ffi
        self._fn = {k: getattr(lib, f"sg_{mb.name}_{k}_loop")
                    for k in ("forward_dynamics", "inverse_dynamics", "mass_matrix")}
        self._buf = lambda a: ffi.from_buffer("double[]", np.ascontiguousarray(a, dtype=float), require_writable=False)

    def __getattr__(self, name):
        return getattr(self.mb, name)

    def _p(self, middle, f_ext=None):
        mb = self.mb
        f = np.zeros((mb.nb, 6)) if f_ext is None else f_ext
        return np.concatenate([mb.gravity, middle, f.ravel()])

    def _run(self, kernel, q, u, p, size):
        out = np.zeros(max(size, 1))
        buf = self.mb._ffi.from_buffer("double[]", out, require_writable=True)
        status = self._fn[kernel](self._buf(q if len(q) else [0.0]), self._buf(u if len(u) else [0.0]), self._buf(p), buf)
        assert not status
        return out[:size]

    def forward_dynamics(self, q, u, T, f_ext=None):
        return self._run("forward_dynamics", q, u, self._p(T, f_ext), self.mb.nu)

    def inverse_dynamics(self, q, u, udot, f_ext=None):
        return self._run("inverse_dynamics", q, u, self._p(udot, f_ext), self.mb.nu)

    def mass_matrix(self, q):
        nu = self.mb.nu
        return self._run("mass_matrix", q, np.zeros(nu), self._p(np.zeros(nu)), nu * nu).reshape(nu, nu)


def _yaml(tmp, d) -> str:
    import yaml

    path = tmp / f"{d['name']}.yaml"
    path.write_text(yaml.safe_dump(d))
    return str(path)


MODELS = ([(f.name, False) for f in sorted(EXAMPLES.glob("*.yaml"))]
          + [(f.name, fb) for f in sorted(EXAMPLES.glob("*.urdf")) for fb in (False, True)]
          + [("random-tree-3", False), ("random-tree-7", False), ("random-urdf-5", True), ("armature-tree", False)])


@pytest.fixture(scope="module", params=MODELS, ids=[f"{m}{'-floating' if fb else ''}" for m, fb in MODELS])
def model(request, tmp_path_factory):
    name, floating = request.param
    tmp = tmp_path_factory.mktemp("loopform")
    if name.startswith("random-tree-"):  # the trees test_dynamics builds (one compile each per session)
        from symgen.package import build_model

        return build_model(tree_model(int(name.rsplit("-", 1)[1])))
    if name == "armature-tree":      # armature on every hinge that moves (loop form: armature read at run time)
        from symgen.hinges import bind
        from symgen.model import load_model

        d = random_tree_dict(5, name="armature_tree")
        path = _yaml(tmp, d)
        bodies = load_model(path).bodies   # the moving hinges, read without building the model
        arm = {b.hinge_name: 0.01 * (1 + i) for i, b in enumerate(bodies)
               if bind(b.hinge_type, **b.hinge_kwargs()).nu}
        return symgen.build(path, armature=arm)
    if name.startswith("random-urdf-"):
        path = tmp / f"{name}.urdf"
        path.write_text(random_urdf(int(name.rsplit("-", 1)[1]), 9))
        return symgen.build(str(path), floating_base=floating)
    return symgen.build(str(EXAMPLES / name), floating_base=floating)


def _rel(a, b):
    return float(np.max(np.abs(a - b)) / max(1.0, float(np.max(np.abs(b))))) if np.size(b) else 0.0


def test_loop_form_agrees_with_straight_line(model):
    """FD, ID (with external forces) and M of both forms at random states, to 1e-12 relative."""
    mb, lf = model, LoopForm(model)
    rng = np.random.default_rng(7)
    for _ in range(4):
        q = mb.sanitize(rng.uniform(-2, 2, mb.nq)) if mb.nq else np.zeros(0)
        u, T, udot = rng.normal(size=mb.nu), rng.normal(size=mb.nu), rng.normal(size=mb.nu)
        f = rng.normal(size=(mb.nb, 6))
        assert _rel(lf.forward_dynamics(q, u, T, f), mb.forward_dynamics(q, u, T, f_ext=f, tree=True)) < TOL
        assert _rel(lf.inverse_dynamics(q, u, udot, f), mb.inverse_dynamics(q, u, udot, f_ext=f)) < TOL
        assert _rel(lf.mass_matrix(q), mb.mass_matrix(q)) < TOL


def test_loop_form_identities(model):
    """Independent of the straight-line form: M Udot = T - C with C = ID(q, u, 0) (ATBI against Newton-Euler
    and the composite-body M, all loop form), M symmetric."""
    mb, lf = model, LoopForm(model)
    rng = np.random.default_rng(3)
    q = mb.sanitize(rng.uniform(-2, 2, mb.nq)) if mb.nq else np.zeros(0)
    u, T = rng.normal(size=mb.nu), rng.normal(size=mb.nu)
    M = lf.mass_matrix(q)
    udot = lf.forward_dynamics(q, u, T)
    C = lf.inverse_dynamics(q, u, np.zeros(mb.nu))
    assert _rel(M @ udot + C, T) < 1e-9
    assert _rel(M, M.T) < 1e-14


@pytest.mark.parametrize("robot,floating", [("arm7", False), ("quadruped", True), ("rand11", True)])
def test_loop_form_agrees_with_pinocchio(robot, floating, tmp_path):
    pin = pytest.importorskip("pinocchio")
    from pin_maps import compare_with_pinocchio

    if robot.startswith("rand"):
        path = tmp_path / f"{robot}.urdf"
        path.write_text(random_urdf(int(robot[4:]), 10))
    else:
        path = EXAMPLES / f"{robot}.urdf"
    mb = symgen.build(str(path), floating_base=floating)
    pm = (pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer()) if floating
          else pin.buildModelFromUrdf(str(path)))
    pm.gravity.linear[:] = mb.gravity
    err = compare_with_pinocchio(LoopForm(mb), pm, floating, np.random.default_rng(5), n_states=4, frames=False)
    assert max(err.values()) < 1e-9, err
