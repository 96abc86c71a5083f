"""Every example-robot-data URDF compiled by MuJoCo, read by symgen's MJCF path, compared with MuJoCo.

    python benchmarks/mjcf_corpus.py [--robots SUBSTRING ...] [--states 3] [--out results.json]

MuJoCo reads URDF.  Its meshes are ``package://`` paths it cannot resolve, so each file is read as text and
every ``<visual>`` and ``<collision>`` element is removed (geometry does not enter the dynamics: the URDF's
``<inertial>`` does; MuJoCo's URDF reader takes inertia from ``<inertial>``, never from geoms).  A
``<mujoco><compiler fusestatic="false" discardvisual="true"/></mujoco>`` element keeps fixed links as bodies
(welded, LOCKED in symgen).  When MuJoCo refuses a file because a moving body is massless, it is retried with
``boundmass="1e-6" boundinertia="1e-9"``, and one whose inertia violates the triangle inequality with
``balanceinertia="true"`` (the same compiled model goes to both sides; the row's ``note`` says so).

The compiled ``MjModel`` goes through :func:`symgen.model.mjcf.model_from_mjmodel` and is built; at random
``qpos``/``qvel``/``qfrc_applied`` (MuJoCo with contacts, limits, springs, dampers, friction loss, actuation
and gravity compensation off, tests/test_mjcf.py's ``tree_only``) it compares ``qacc`` and ``qfrc_bias``
(1e-8), ``mj_fullM`` and every body pose (1e-10), each relative to max(1, the largest entry).  Each robot is
built in this process, one after the other (a cold build compiles C: minutes for the whole corpus).
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import time
import traceback
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent / "tests"))

ACC, POSE = 1e-8, 1e-10
MUJOCO_EXT = '<mujoco><compiler fusestatic="false" discardvisual="true"{extra}/></mujoco>'


def strip_geometry(text: str) -> str:
    text = re.sub(r"<(visual|collision)\b.*?</\1\s*>", "", text, flags=re.S)
    return re.sub(r"<(visual|collision)\b[^>]*/>", "", text)


def compile_urdf(path: Path):
    import mujoco

    text = strip_geometry(path.read_text())
    text = re.sub(r"<mujoco>.*?</mujoco>", "", text, flags=re.S)
    extra, notes = "", []
    while True:
        doc = re.sub(r"(<robot\b[^>]*>)", lambda mt: mt.group(1) + MUJOCO_EXT.format(extra=extra), text, count=1)
        try:
            return mujoco.MjModel.from_xml_string(doc), "+".join(notes)
        except ValueError as e:
            msg = " ".join(str(e).split())
            if "mass and inertia" in msg and "boundmass" not in extra:
                extra += ' boundmass="1e-6" boundinertia="1e-9"'
                notes.append("boundmass/boundinertia")
            elif "A + B >= C" in msg and "balanceinertia" not in extra:
                extra += ' balanceinertia="true"'
                notes.append("balanceinertia")
            else:
                raise ValueError(msg) from None


def _rel(a, b) -> float:
    a, b = np.asarray(a, float), np.asarray(b, float)
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        return float("inf")
    return float(np.abs(a - b).max() / max(1.0, float(np.abs(b).max()))) if a.size else 0.0


def check(path: Path, n_states: int) -> dict:
    import mujoco

    import symgen
    from symgen.model.mjcf import model_from_mjmodel
    from test_mjcf import random_qpos, tree_only

    row = {"robot": path.stem}
    try:
        m, note = compile_urdf(path)
    except ValueError as e:
        row.update(status="MuJoCo refuses", detail=str(e)[:200])
        return row
    row["note"] = note
    tree_only(m)
    row.update(nq=int(m.nq), nv=int(m.nv), nbody=int(m.nbody))
    t = time.perf_counter()
    try:
        model = model_from_mjmodel(m, source=str(path), name=path.stem, accept_indefinite_inertia=True)
        mb = symgen.build(model)
    except Exception as e:  # noqa: BLE001 - reported per robot
        row.update(status="symgen fails", detail=f"{type(e).__name__}: {e}"[:300])
        return row
    row["build_s"] = round(time.perf_counter() - t, 1)
    rng = np.random.default_rng(0)
    err = {"qacc": 0.0, "bias": 0.0, "M": 0.0, "pose": 0.0}
    d = mujoco.MjData(m)
    M = np.zeros((m.nv, m.nv))
    for _ in range(n_states):
        qpos, qvel, tau = random_qpos(m, rng), rng.normal(size=m.nv), rng.normal(size=m.nv)
        d.qpos[:], d.qvel[:], d.qfrc_applied[:] = qpos, qvel, tau
        mujoco.mj_forward(m, d)
        mujoco.mj_fullM(m, d, M)
        q, u = mb.from_mujoco(qpos, qvel)
        err["M"] = max(err["M"], _rel(mb.mass_matrix(q), M))
        err["bias"] = max(err["bias"], _rel(mb.inverse_dynamics(q, u, np.zeros(m.nv)), d.qfrc_bias))
        err["qacc"] = max(err["qacc"], _rel(mb.forward_dynamics(q, u, tau), d.qacc))
        X = mb.frame_poses(q)
        for b in range(1, m.nbody):
            name = model.bodies[b - 1].name
            T = X[mb.frame_names.index(name)]
            err["pose"] = max(err["pose"], _rel(T[:3, 3], d.xpos[b]), _rel(T[:3, :3], d.xmat[b].reshape(3, 3)))
    row.update({k: float(f"{v:.2e}") for k, v in err.items()})
    ok = err["qacc"] < ACC and err["bias"] < ACC and err["M"] < POSE and err["pose"] < POSE
    row["status"] = "agrees" if ok else "differs"
    if mb.singular_hinges:
        row["singular_hinges"] = len(mb.singular_hinges)
    return row


def main(argv=None) -> int:
    from corpus import corpus

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--robots", nargs="*", default=())
    ap.add_argument("--states", type=int, default=3)
    ap.add_argument("--out", default=None, help="write the rows as JSON here too")
    args = ap.parse_args(argv)
    rows = []
    for path in corpus(args.robots):
        try:
            row = check(path, args.states)
        except Exception as e:  # noqa: BLE001
            row = {"robot": path.stem, "status": "error", "detail": f"{type(e).__name__}: {e}"[:300]}
            traceback.print_exc()
        rows.append(row)
        print(json.dumps(row), flush=True)
        if args.out:
            Path(args.out).write_text(json.dumps(rows, indent=1))
    counts = {}
    for r in rows:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    print(f"\n{len(rows)} URDF files: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
