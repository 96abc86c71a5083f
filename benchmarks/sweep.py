"""Parameter sweeps: cases per second for 10⁴ one-second simulations, symgen against mujoco.rollout and a
Python loop over Pinocchio.

    pip install -e ".[bench,sweep]"         # MuJoCo, Pinocchio; dask for the symgen.sweep rows
    python benchmarks/sweep.py [--cases 10000] [--pin-cases 100] [--models arm7 quadruped:floating]
                               [--no-dask] [--quick] [--out benchmarks/sweep_latest.md] [--json results.json]

A case is one simulation of one second: dt = 1e-3, classical RK4, 1000 steps, zero joint torque, gravity,
from a random initial state, keeping only the final state.  The models are ``examples/models/arm7.urdf``
(fixed base, 7 DOF) and ``examples/models/quadruped.urdf`` with a floating base (``symgen.build(path,
floating_base=True)``; 19 Q, 18 U).  The initial states are ``bench_common.states(mb, N)`` (Q uniform in
[-2, 2] then sanitized, U standard normal), the same for every engine, mapped to its coordinates.

Rows (after a warm-up on a few cases; cases/s = cases / wall seconds).  The cases are split into ``--rounds``
blocks (default 5) and every engine runs block 1, then every engine block 2, and so on, so that the drift of
a shared machine hits every row alike; the time of a row is the sum over its blocks, and the table also
gives the lowest and highest cases/s of a single block:

* ``symgen rollout``      ``mb.rollout(Q, U, dt, 1000, every=1000)``: every case in one C call.
* ``symgen rollout, 2 threads``  the cases split in two halves, one ``mb.rollout`` per Python thread
  (the C call releases the GIL).  Checked bit for bit against the one call.
* ``symgen.sweep, in process, threads=2``  ``symgen.sweep(mb, {"q0": Q, "u0": U}, dt, 1000, every=1000,
  threads=2)``: the same split done by symgen.sweep (its own chunk size), no cluster.
* ``symgen.sweep, dask``  ``symgen.sweep(mb, cases, dt, 1000, every=1000, client=client)`` on a
  ``dask.distributed.LocalCluster`` of 2 worker processes with 1 thread each (cluster start-up and a warm-up
  sweep are not timed).  ``n/a`` when this checkout has no ``symgen.sweep`` or dask is not installed.  The
  row's note says how many chunks each worker computed (dask's task stream), e.g. ``chunks per worker 4/4``.
* ``mujoco.rollout``      MuJoCo's own batch rollout (``mujoco.rollout``, C++), nthread 1 (on the calling
  thread) and nthread 2 (``rollout.Rollout(nthread=2)``, one MjData per thread).  The model is the one
  ``mujoco_peer.py`` compiles from the URDF (visuals stripped, a free joint on the floating root, contacts and
  constraints disabled (joint limits included), symgen's gravity), with ``opt.integrator = mjINT_RK4`` and
  ``opt.timestep = 1e-3``; it has no armature, damping or friction loss (checked).  mujoco.rollout writes the
  full physics state after every step (there is no option to keep only the last), so the cases run in chunks
  of ``--mj-chunk`` into one reused output buffer, and the final row of each is kept.
* ``Python loop, pin.aba``  a plain Python loop per case and step: four ``pin.aba`` calls, RK4 on the
  velocity, ``pin.integrate`` for q (MuJoCo's scheme: each stage's q is ``integrate(q0, h v_stage)``, the new
  q ``integrate(q0, dt/6 (v1 + 2 v2 + 2 v3 + v4))``); on the first ``--pin-cases`` cases, scaled to cases/s.
* ``Python loop, mb.forward_dynamics``  the same kind of loop over symgen's own C forward dynamics
  (``symgen.runtime.integrate.simulate_python``: one ``mb.qdot`` and one ``mb.forward_dynamics`` call per
  RK4 stage, the reference ``mb.rollout`` is tested against), on the same cases: what moving the loop into C
  buys, with the dynamics held fixed.

Columns: cases/s; per core (cases/s over the threads or workers used); the per-core ratio to
``mujoco.rollout`` with nthread 1 of the same model; the ratio of cases/s to the Python loop's.

Agreement (printed and written below the table): the final q and u of each engine mapped back to symgen's
coordinates (MuJoCo: qpos quaternion ``w x y z`` -> symgen ``x y z w``, its free-joint velocity is symgen's
``[ṗ in the world; ω in the body]``; Pinocchio: continuous joints (cos, sin) -> angle, ``u = T v`` with
``T = diag(R_base, I)``; arm7's continuous joint7 compared modulo 2 pi), max abs difference from
``mb.rollout``'s over every case compared.  Three more rows put them in scale: MuJoCo after a single step
(the same scheme agrees to round-off; over 1000 steps the arm's chaotic motion amplifies round-off), the
Python loop over Pinocchio and symgen both at dt/10 on 10 cases (a difference that falls 100x comes from a
2nd-order difference between the schemes: ``pin.integrate`` moves a free flyer along a screw (SE(3)
exponential of the averaged body twist) while MuJoCo and symgen integrate the position with the world
velocity and the quaternion separately), and symgen's dt = 1e-3 result against symgen at dt = 1e-4 on the
first 100 cases (the discretization error).

The machine's load average is written next to the table: this is a shared 2-core VM, and the 2-thread and
2-worker rows assume both cores are free.

``--quick``: a smoke run (40 cases, 3 Pinocchio cases) that writes the table only where ``--out`` says.
From Python: ``run(models, cases, pin_cases, ...) -> {"rows": [...], "agreement": {...}, ...}``.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent / "tests"))
from bench_common import load_script, parse_robot, states  # noqa: E402

DT = 1e-3
STEPS = 1000
DEFAULT_MODELS = ["arm7", "quadruped:floating"]
ORDER = ["symgen rollout, 1 thread", "symgen rollout, 2 Python threads", "symgen.sweep, in process, threads=2",
         "symgen.sweep, dask 2 workers", "mujoco.rollout, nthread 1", "mujoco.rollout, nthread 2",
         "Python loop, pin.aba + RK4", "Python loop, mb.forward_dynamics + RK4"]


# ----------------------------------------------------------------------------------------------- symgen

def symgen_rollout(mb, Q, U, dt, steps):
    """Final (q, u) of every case from one ``mb.rollout`` call."""
    r = mb.rollout(Q, U, dt, steps, every=steps)
    if not r["ok"].all():
        raise RuntimeError(f"sweep: {mb.name}: rollout failed on {int((~r['ok']).sum())} cases")
    return r["q"][:, -1], r["u"][:, -1]


def symgen_threads(mb, Q, U, dt, steps, nthread=2):
    """The cases split in ``nthread`` contiguous parts, one ``mb.rollout`` per Python thread."""
    parts = np.array_split(np.arange(len(Q)), nthread)
    with ThreadPoolExecutor(nthread) as ex:
        res = list(ex.map(lambda ix: symgen_rollout(mb, Q[ix], U[ix], dt, steps), parts))
    return np.concatenate([q for q, _ in res]), np.concatenate([u for _, u in res])


def sweep_function():
    """``symgen.sweep`` (the function) or a reason string why it is unavailable."""
    try:
        import dask.distributed  # noqa: F401
    except ImportError:
        return "dask.distributed is not installed"
    try:
        import symgen
        sw = getattr(symgen, "sweep", None)
        if sw is None:
            import importlib
            sw = importlib.import_module("symgen.sweep")
    except ImportError:
        return "this checkout has no symgen.sweep"
    if not callable(sw):
        sw = getattr(sw, "sweep", None)
    return sw if callable(sw) else "this checkout has no symgen.sweep function"


def sweep_final(result, n, nq, nu):
    """Final (q, u), (n, nq) and (n, nu), from what ``symgen.sweep`` returns (a dict like ``mb.rollout``'s,
    an object with ``q``/``u`` attributes, or a store to read back)."""
    if hasattr(result, "result") and callable(result.result):   # a future
        result = result.result()
    get = (lambda k: result[k]) if isinstance(result, dict) else (lambda k: getattr(result, k))
    q, u = np.asarray(get("q")), np.asarray(get("u"))
    if q.ndim == 3:
        q, u = q[:, -1], u[:, -1]
    if q.shape != (n, nq) or u.shape != (n, nu):
        raise RuntimeError(f"sweep: unexpected symgen.sweep output shapes {q.shape}, {u.shape}")
    return q, u


def sweep_cases(Q, U):
    return {"q0": Q, "u0": U}


# ----------------------------------------------------------------------------------------------- MuJoCo

class MujocoSide:
    """The MuJoCo model of mujoco_peer.py with RK4 at dt, its coordinate maps and initial states."""

    def __init__(self, mujoco, path, floating, mb, dt):
        mp = load_script("mujoco_peer.py", "mujoco_peer")
        self.mujoco = mujoco
        _, m = mp.mujoco_model(mujoco, path, floating, mb)
        m.opt.integrator = mujoco.mjtIntegrator.mjINT_RK4
        m.opt.timestep = dt
        self.m = m
        self.note = mp.inertia_note(mujoco, m, mb)
        if m.nv and max(np.abs(m.dof_armature).max(), np.abs(m.dof_damping).max(),
                        np.abs(m.dof_frictionloss).max()) > 0:   # symgen's models have none of them
            m.dof_armature[:] = 0.0
            m.dof_damping[:] = 0.0
            m.dof_frictionloss[:] = 0.0
            self.note += " (zeroed)"
        self.qperm, self.uperm = mp.coordinate_maps(mujoco, m, mb)
        self.spec = mujoco.mjtState.mjSTATE_FULLPHYSICS.value
        self.nstate = mujoco.mj_stateSize(m, self.spec)

    def initial_states(self, Q, U):
        mj, m = self.mujoco, self.m
        d = mj.MjData(m)
        x0 = np.empty((len(Q), self.nstate))
        for i in range(len(Q)):
            mj.mj_resetData(m, d)
            d.qpos[:], d.qvel[:] = Q[i, self.qperm], U[i, self.uperm]
            mj.mj_getState(m, d, x0[i], self.spec)
        return x0

    def run(self, x0, steps, nthread, chunk):
        """Final (qpos, qvel) in MuJoCo's coordinates; ``chunk`` cases per rollout call into one reused
        (chunk, steps, nstate) buffer (mujoco.rollout keeps every step)."""
        from mujoco import rollout

        mj, m, n = self.mujoco, self.m, len(x0)
        nq, nv = m.nq, m.nv
        buf = np.empty((min(chunk, n), steps, self.nstate))
        qpos, qvel = np.empty((n, nq)), np.empty((n, nv))
        datas = [mj.MjData(m) for _ in range(max(nthread, 1))]
        pool = rollout.Rollout(nthread=nthread) if nthread > 1 else None
        try:
            for s in range(0, n, chunk):
                k = min(chunk, n - s)
                out = buf[:k]
                if pool is None:
                    rollout.rollout(m, datas[0], x0[s:s + k], nstep=steps, state=out)
                else:
                    pool.rollout(m, datas, x0[s:s + k], nstep=steps, state=out)
                qpos[s:s + k], qvel[s:s + k] = out[:, -1, 1:1 + nq], out[:, -1, 1 + nq:1 + nq + nv]
        finally:
            if pool is not None:
                pool.close()
        return qpos, qvel

    def to_symgen(self, qpos, qvel):
        q, u = np.empty_like(qpos), np.empty_like(qvel)
        q[:, self.qperm], u[:, self.uperm] = qpos, qvel
        return q, u


# ----------------------------------------------------------------------------------------------- Pinocchio

class PinSide:
    """Pinocchio's model of the URDF and the symgen <-> Pinocchio state maps of tests/pin_maps.py."""

    def __init__(self, pin, path, floating, mb):
        from pin_maps import set_armature  # noqa: F401  (symgen's models here have no armature)

        self.pin, self.mb, self.floating = pin, mb, floating
        self.pm = (pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer()) if floating
                   else pin.buildModelFromUrdf(str(path)))
        self.pm.gravity = pin.Motion(np.asarray(mb.gravity, float), np.zeros(3))
        self.pd = self.pm.createData()

    def from_symgen(self, q, u):
        from pin_maps import to_pin_q, u_map

        return to_pin_q(self.mb, self.pm, q), np.linalg.solve(u_map(self.mb, self.pm, q, self.floating), u)

    def angle_rows(self):
        """symgen Q indices of Pinocchio's continuous joints (stored as cos, sin: equal up to 2 pi)."""
        pm, out = self.pm, []
        for j in range(1, pm.njoints):
            if pm.joints[j].nq == 2 and pm.joints[j].nv == 1:
                out.append(self.mb.q_slice(pm.names[j]).start)
        return out

    def to_symgen(self, qp, v):
        from pin_maps import u_map

        mb, pm = self.mb, self.pm
        q = np.empty(mb.nq)
        for j in range(1, pm.njoints):
            jm, sl = pm.joints[j], mb.q_slice(pm.names[j])
            if jm.nq == 2 and jm.nv == 1:
                q[sl] = np.arctan2(qp[jm.idx_q + 1], qp[jm.idx_q])
            else:
                q[sl] = qp[jm.idx_q:jm.idx_q + jm.nq]
        return q, u_map(mb, pm, q, self.floating) @ v

    def rk4(self, qp, v, dt, steps):
        """The Python loop: RK4 over ``pin.aba`` with zero torque, q advanced by ``pin.integrate``."""
        pin, pm, pd = self.pin, self.pm, self.pd
        aba, integrate = pin.aba, pin.integrate
        tau = np.zeros(pm.nv)
        h2, h6 = dt / 2, dt / 6
        for _ in range(steps):
            a1 = aba(pm, pd, qp, v, tau)
            v2 = v + h2 * a1
            a2 = aba(pm, pd, integrate(pm, qp, h2 * v), v2, tau)
            v3 = v + h2 * a2
            a3 = aba(pm, pd, integrate(pm, qp, h2 * v2), v3, tau)
            v4 = v + dt * a3
            a4 = aba(pm, pd, integrate(pm, qp, dt * v3), v4, tau)
            qp = integrate(pm, qp, h6 * (v + 2 * v2 + 2 * v3 + v4))
            v = v + h6 * (a1 + 2 * a2 + 2 * a3 + a4)
        return qp, v


# ----------------------------------------------------------------------------------------------- the run

def _timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def _maxdiff(a, b) -> float:
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b)))) if np.size(a) else 0.0


class Engine:
    """One row: ``fn(ix) -> (q, u)`` final states in symgen's coordinates for the cases ``ix``; its time and
    results accumulate over the rounds."""

    def __init__(self, name, cores, fn, subset=None, note=None):
        self.name, self.cores, self.fn, self.subset, self.note = name, cores, fn, subset, note
        self.seconds, self.cases, self.rounds, self.q, self.u = 0.0, 0, [], [], []

    def run(self, ix):
        if len(ix) == 0:
            return
        s, (q, u) = _timed(lambda: self.fn(ix))
        self.seconds += s
        self.cases += len(ix)
        self.rounds.append(len(ix) / s)
        self.q.append(q)
        self.u.append(u)

    def finals(self):
        return np.concatenate(self.q), np.concatenate(self.u)


def bench_model(spec, n, pin_cases, dt, steps, mj_chunk, client, client_note=None, rounds=5,
                verbose=True) -> dict:
    import symgen

    path, floating = parse_robot(spec)
    mb = symgen.build(path, floating_base=floating)
    Q, U, _ = states(mb, n)
    agree, notes, engines, missing = {}, [], [], []
    say = (lambda s: print(f"  {s}", flush=True)) if verbose else (lambda s: None)
    say(f"{spec}: nQ={mb.nq} nU={mb.nu}, {n} cases of {steps} RK4 steps (dt {dt:g}), {rounds} interleaved rounds")
    warm = np.arange(min(4, n))

    # symgen in-process
    engines.append(Engine("symgen rollout, 1 thread", 1, lambda ix: symgen_rollout(mb, Q[ix], U[ix], dt, steps)))
    engines.append(Engine("symgen rollout, 2 Python threads", 2,
                          lambda ix: symgen_threads(mb, Q[ix], U[ix], dt, steps, 2)))

    # symgen.sweep: in this process with 2 threads, and on the dask cluster
    sw = sweep_function()

    def sweep_engine(**kw):
        return lambda ix: sweep_final(sw(mb, sweep_cases(Q[ix], U[ix]), dt, steps, every=steps, **kw),
                                      len(ix), mb.nq, mb.nu)

    if isinstance(sw, str):
        missing.append(("symgen.sweep, in process, threads=2", 2, f"n/a: {sw}"))
    else:
        engines.append(Engine("symgen.sweep, in process, threads=2", 2, sweep_engine(threads=2)))
    if client is None or isinstance(sw, str):
        why = sw if isinstance(sw, str) else (client_note or "skipped (--no-dask)")
        missing.append(("symgen.sweep, dask 2 workers", 2, f"n/a: {why}"))
        notes.append(f"symgen.sweep on dask: n/a ({why})")
    else:
        per_worker: dict = {}
        plain = sweep_engine(client=client)

        def on_dask(ix):
            # which worker ran each chunk (dask's task stream): the row's note, since chunks that all land on
            # one worker leave the other core idle
            from dask.distributed import get_task_stream

            with get_task_stream(client) as ts:
                out = plain(ix)
            for d in ts.data:
                key = d.get("key")
                key = key if isinstance(key, str) else str(key[0] if isinstance(key, tuple) else key)
                if "chunk" in key and any(x.get("action") == "compute" for x in d.get("startstops", ())):
                    per_worker[d["worker"]] = per_worker.get(d["worker"], 0) + 1
            return out

        dask_engine = Engine("symgen.sweep, dask 2 workers", 2, on_dask)
        engines.append(dask_engine)

    # MuJoCo
    try:
        import mujoco
    except ImportError:
        mujoco = None
        notes.append("mujoco is not installed: no mujoco.rollout rows")
    if mujoco is not None:
        side = MujocoSide(mujoco, path, floating, mb, dt)
        x0 = side.initial_states(Q, U)
        for nth in (1, 2):
            engines.append(Engine(f"mujoco.rollout, nthread {nth}", nth,
                                  lambda ix, nth=nth: side.to_symgen(*side.run(x0[ix], steps, nth, mj_chunk))))
        notes.append(f"MuJoCo {mujoco.__version__} model: {side.note}; {side.nstate} numbers of state written "
                     f"per step")

    # Python loops, on the first pin_cases cases
    k = min(pin_cases, n)
    try:
        import pinocchio as pin
    except ImportError:
        pin = None
        notes.append("pinocchio is not installed: no Python-loop row")
    if pin is not None and k > 0:
        ps = PinSide(pin, path, floating, mb)

        def pin_loop(ix):
            back = [ps.to_symgen(*ps.rk4(*ps.from_symgen(Q[i], U[i]), dt, steps)) for i in ix]
            return np.array([b[0] for b in back]), np.array([b[1] for b in back])

        engines.append(Engine("Python loop, pin.aba + RK4", 1, pin_loop, subset=k, note=f"{k} cases, scaled"))
    if k > 0:
        from symgen.runtime.integrate import simulate_python

        def sym_loop(ix):
            tr = [simulate_python(mb, Q[i], U[i], (0.0, steps * dt), dt) for i in ix]
            return np.array([t.Q[-1] for t in tr]), np.array([t.U[-1] for t in tr])

        engines.append(Engine("Python loop, mb.forward_dynamics + RK4", 1, sym_loop, subset=k,
                              note=f"{k} cases, scaled; simulate_python"))

    # warm-up (a sweep's first call on a cluster also loads the model on the workers), then the rounds:
    # every engine on its share of the cases in turn, so that the drift of a shared machine hits all alike
    for e in engines:
        e.fn(warm[:min(len(warm), e.subset or n)])
    if client is not None and not isinstance(sw, str):
        per_worker.clear()          # the warm-up's chunks
    for r in range(rounds):
        for e in engines:
            m = e.subset or n
            e.run(np.array_split(np.arange(m), rounds)[r])
    if client is not None and not isinstance(sw, str):
        dask_engine.note = "chunks per worker " + "/".join(str(v) for v in sorted(per_worker.values(), reverse=True))
    rows = []
    for e in engines:
        rows.append({"engine": e.name, "model": spec, "cases": e.cases, "seconds": e.seconds, "cores": e.cores,
                     "cases_per_s": e.cases / e.seconds, "per_core": e.cases / e.seconds / e.cores,
                     "rounds": e.rounds, "note": e.note})
        say(f"{e.name:40} {e.cases / e.seconds:10.1f} cases/s  ({e.seconds:.2f} s; rounds "
            f"{min(e.rounds):.1f}-{max(e.rounds):.1f})" + (f"  [{e.note}]" if e.note else ""))
    for name, cores, why in missing:
        rows.append({"engine": name, "model": spec, "cases": n, "seconds": None, "cores": cores,
                     "cases_per_s": None, "per_core": None, "rounds": [], "note": why})
        say(f"{name:40} n/a  [{why}]")

    rows.sort(key=lambda r: ORDER.index(r["engine"]) if r["engine"] in ORDER else len(ORDER))

    # agreement with the one-call rollout
    ref = engines[0].finals()
    wrap = ps.angle_rows() if (pin is not None and k > 0) else []
    for e in engines[1:]:
        q, u = e.finals()
        m = len(q)
        dq = q - ref[0][:m]
        if e.name.startswith("Python loop, pin"):
            dq[:, wrap] = (dq[:, wrap] + np.pi) % (2 * np.pi) - np.pi     # continuous joints: modulo 2 pi
        agree[e.name] = {"cases": m, "q": float(np.abs(dq).max()), "u": _maxdiff(u, ref[1][:m])}
    # the same scheme to round-off?  MuJoCo after one step, on every case
    if mujoco is not None:
        r1 = mb.rollout(Q, U, dt, 1)
        q1, u1 = side.to_symgen(*side.run(x0, 1, 1, mj_chunk))
        agree["mujoco.rollout, after 1 step"] = {"cases": n, "q": _maxdiff(q1, r1["q"][:, -1]),
                                                 "u": _maxdiff(u1, r1["u"][:, -1])}
    # the order of Pinocchio's loop: both at dt/10 on a few cases (the difference falls 100x for a 2nd-order
    # difference between the schemes, 10^4x for 4th order)
    if pin is not None and k > 0:
        k10 = min(10, k)
        r10 = mb.rollout(Q[:k10], U[:k10], dt / 10, steps * 10, every=steps * 10)
        back = [ps.to_symgen(*ps.rk4(*ps.from_symgen(Q[i], U[i]), dt / 10, steps * 10)) for i in range(k10)]
        dq = np.array([b[0] for b in back]) - r10["q"][:, -1]
        dq[:, wrap] = (dq[:, wrap] + np.pi) % (2 * np.pi) - np.pi
        agree["Python loop, pin.aba + RK4, both at dt/10"] = {
            "cases": k10, "q": float(np.abs(dq).max()), "u": _maxdiff(np.array([b[1] for b in back]), r10["u"][:, -1])}
    # the scale of the discretization error: symgen at dt/10 on the first cases
    k = max(k, min(100, n))
    r10 = mb.rollout(Q[:k], U[:k], dt / 10, steps * 10, every=steps * 10)
    agree[f"(scale) symgen at dt/10"] = {"cases": k, "q": _maxdiff(ref[0][:k], r10["q"][:, -1]),
                                         "u": _maxdiff(ref[1][:k], r10["u"][:, -1])}
    for key, v in agree.items():
        say(f"agreement {key:45} ({v['cases']} cases) max |dq| {v['q']:.1e}  max |du| {v['u']:.1e}")
    return {"model": spec, "nq": mb.nq, "nu": mb.nu, "rows": rows, "agreement": agree, "notes": notes}


def start_client(workers=2):
    """A 2-worker LocalCluster client (processes, 1 thread each), or a reason string."""
    sw = sweep_function()
    if isinstance(sw, str):
        return sw
    from dask.distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0")
    return Client(cluster)


def run(models=None, cases=10000, pin_cases=100, dt=DT, steps=STEPS, mj_chunk=100, dask=True, rounds=5,
        verbose=True) -> dict:
    models = list(models or DEFAULT_MODELS)
    load0 = os.getloadavg()
    client, client_note = None, None
    if not dask:
        client_note = "skipped (--no-dask)"
    else:
        t = time.perf_counter()
        c = start_client()
        if isinstance(c, str):
            client_note = c
        else:
            client, client_note = c, f"LocalCluster of 2 worker processes started in {time.perf_counter() - t:.1f} s"
    try:
        results = [bench_model(m, cases, pin_cases, dt, steps, mj_chunk, client, client_note, rounds, verbose)
                   for m in models]
    finally:
        if client is not None:
            cluster = client.cluster
            client.close()
            cluster.close()
    return {"models": results, "cases": cases, "pin_cases": pin_cases, "dt": dt, "steps": steps, "rounds": rounds,
            "loadavg_before": load0, "loadavg_after": os.getloadavg(), "dask": client_note,
            "machine": f"{platform.machine()} {platform.processor() or ''}".strip(), "cpus": os.cpu_count(),
            "python": platform.python_version(), "versions": _versions()}


def _versions() -> dict:
    out = {}
    for name, mod in (("mujoco", "mujoco"), ("pinocchio", "pinocchio"), ("dask", "dask"), ("numpy", "numpy")):
        try:
            out[name] = __import__(mod).__version__
        except ImportError:
            pass
    return out


def _fmt(x, digits=1):
    if x is None:
        return "n/a"
    return f"{x:,.{digits}f}" if x < 1e4 else f"{x:,.0f}"


def _ratio(x) -> str:
    return f"{x:.2f}x" if x < 10 else f"{x:,.0f}x"


def table(res: dict) -> str:
    lines = ["| engine | model | cases/s | per core | per core vs mujoco.rollout (nthread 1) | vs Python loop (pin.aba) "
             "| cases/s per round (min-max) |",
             "|---|---|---|---|---|---|---|"]
    for mr in res["models"]:
        rows = mr["rows"]
        mj = next((r for r in rows if r["engine"] == "mujoco.rollout, nthread 1" and r["per_core"]), None)
        py = next((r for r in rows if r["engine"].startswith("Python loop, pin") and r["cases_per_s"]), None)
        for r in rows:
            vs_mj = _ratio(r["per_core"] / mj["per_core"]) if (mj and r["per_core"]) else "n/a"
            vs_py = _ratio(r["cases_per_s"] / py["cases_per_s"]) if (py and r["cases_per_s"]) else "n/a"
            name = r["engine"] + (f" ({r['note']})" if r["note"] else "")
            spread = f"{_fmt(min(r['rounds']))}-{_fmt(max(r['rounds']))}" if r["rounds"] else "n/a"
            lines.append(f"| {name} | {r['model']} | {_fmt(r['cases_per_s'])} | {_fmt(r['per_core'])} | {vs_mj} | {vs_py} "
                         f"| {spread} |")
    return "\n".join(lines)


def agreement(res: dict) -> str:
    lines = ["Final states against symgen's one-call rollout, in symgen's coordinates (max abs difference over the "
             "cases compared):", "",
             "| model | engine | cases | max abs diff q | max abs diff u |", "|---|---|---|---|---|"]
    for mr in res["models"]:
        for k, v in mr["agreement"].items():
            lines.append(f"| {mr['model']} | {k} | {v['cases']} | {v['q']:.1e} | {v['u']:.1e} |")
    lines.append("")
    for mr in res["models"]:
        lines += [f"- {mr['model']}: {n}" for n in mr["notes"]]
    return "\n".join(lines)


def document(res: dict, argv) -> str:
    v = res["versions"]
    return (f"# Parameter sweeps: cases/s for one-second simulations\n\n"
            f"`{' '.join(['python benchmarks/sweep.py', *argv])}`" +
            f" ({res['cases']} cases per model, dt = {res['dt']:g}, {res['steps']} RK4 steps, final state only; "
            f"the Python loop on {res['pin_cases']} cases, scaled).  {res['machine']}, {res['cpus']} CPUs (shared), "
            f"Python {res['python']}, " + ", ".join(f"{k} {x}" for k, x in v.items()) + ".  "
            f"Load average before {res['loadavg_before'][0]:.2f}, after {res['loadavg_after'][0]:.2f} (1 min).  "
            f"dask: {res['dask']}.  See the script's docstring for the rows and columns.\n\n"
            + table(res) + "\n\n" + agreement(res) + "\n")


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=10000, help="cases per model (default 10000)")
    ap.add_argument("--pin-cases", type=int, default=100, help="cases of the Python loop (default 100)")
    ap.add_argument("--models", nargs="+", default=DEFAULT_MODELS)
    ap.add_argument("--steps", type=int, default=STEPS, help=f"RK4 steps per case (default {STEPS})")
    ap.add_argument("--dt", type=float, default=DT, help=f"step (default {DT:g})")
    ap.add_argument("--mj-chunk", type=int, default=100, help="cases per mujoco.rollout call (default 100)")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds the cases are split into (default 5)")
    ap.add_argument("--no-dask", action="store_true", help="skip the symgen.sweep row")
    ap.add_argument("--quick", action="store_true", help="smoke run: 40 cases, 3 Python-loop cases, no file "
                                                          "written unless --out is given")
    ap.add_argument("--out", help="markdown file (default benchmarks/sweep_latest.md; none with --quick)")
    ap.add_argument("--json", help="also write the results here")
    args = ap.parse_args(argv)
    if args.quick:
        args.cases, args.pin_cases, args.rounds = min(args.cases, 40), min(args.pin_cases, 3), 1
    out = args.out or (None if args.quick else str(BENCH / "sweep_latest.md"))
    res = run(args.models, args.cases, args.pin_cases, args.dt, args.steps, args.mj_chunk, dask=not args.no_dask,
              rounds=max(1, args.rounds))
    text = document(res, argv)
    print("\n" + table(res) + "\n\n" + agreement(res))
    if out:
        Path(out).write_text(text)
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1, default=float))
    return 0


if __name__ == "__main__":
    sys.exit(main())
