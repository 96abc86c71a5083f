"""Rollouts of an MJCF model: symgen's ``mb.rollout`` beside ``mujoco.rollout``, cases per second.

    python benchmarks/mjcf_rollout.py [MODEL.xml ...] [--cases N] [--steps K] [--threads T]

Both integrate the same model with RK4 (MuJoCo's ``mjINT_RK4``; symgen's classical RK4) with everything that is
not tree dynamics turned off in MuJoCo (contacts, constraints, limits, springs, dampers, friction loss,
actuation, gravity compensation, fluid), from the same random states, one thread each by default.  Prints the
wall time of each and the largest difference of the final states (they agree to ~1e-12 a step,
tests/test_mjcf.py).  The default models are the hand-written files in tests/data/mjcf/.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def main(argv=None) -> int:
    import mujoco
    from mujoco import rollout

    import symgen
    from test_mjcf import mj_rollout, random_qpos, tree_only

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("models", nargs="*", default=[str(ROOT / "tests" / "data" / "mjcf" / f)
                                                  for f in ("arm_defaults.xml", "two_free.xml")])
    ap.add_argument("--cases", type=int, default=1000)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--threads", type=int, default=1, help="MuJoCo's rollout threads (symgen: one C call)")
    args = ap.parse_args(argv)
    print(f"| model | nq | nv | cases x steps | symgen mb.rollout | mujoco.rollout | cases/s symgen | cases/s MuJoCo "
          f"| max diff |\n|---|---|---|---|---|---|---|---|---|")
    for path in args.models:
        mb = symgen.build(path)
        m = tree_only(mujoco.MjModel.from_xml_path(path))
        rng = np.random.default_rng(0)
        qpos = np.array([random_qpos(m, rng) for _ in range(args.cases)])
        qvel = rng.normal(size=(args.cases, m.nv))
        q0, u0 = mb.from_mujoco(qpos, qvel)
        dt = m.opt.timestep
        mb.rollout(q0[:2], u0[:2], dt, 2)
        mj_rollout(m, qpos[:2], qvel[:2], 2)
        t = time.perf_counter()
        r = mb.rollout(q0, u0, dt, args.steps, every=args.steps)
        t_sg = time.perf_counter() - t
        # MuJoCo: the initial states built outside the timing
        m.opt.integrator = mujoco.mjtIntegrator.mjINT_RK4
        spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
        datas = [mujoco.MjData(m) for _ in range(args.threads)]
        init = np.zeros((args.cases, mujoco.mj_stateSize(m, spec)))
        for i in range(args.cases):
            datas[0].qpos[:], datas[0].qvel[:], datas[0].time = qpos[i], qvel[i], 0.0
            mujoco.mj_getState(m, datas[0], init[i], spec)
        t = time.perf_counter()
        state, _ = rollout.rollout(m, datas if args.threads > 1 else datas[0], init, nstep=args.steps)
        t_mj = time.perf_counter() - t
        qs, us = mb.to_mujoco(r["q"][:, -1], r["u"][:, -1])
        diff = max(np.abs(qs - state[:, -1, 1:1 + m.nq]).max(), np.abs(us - state[:, -1, 1 + m.nq:1 + m.nq + m.nv]).max())
        print(f"| {Path(path).name} | {m.nq} | {m.nv} | {args.cases} x {args.steps} | {t_sg * 1e3:.1f} ms | "
              f"{t_mj * 1e3:.1f} ms | {args.cases / t_sg:,.0f} | {args.cases / t_mj:,.0f} | {diff:.1e} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
