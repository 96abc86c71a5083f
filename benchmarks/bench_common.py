"""Shared by the benchmark scripts: robot names, random states, and loading the sibling scripts by path.

A robot is a URDF path, a name in examples/models/ or an example-robot-data name (``ERD``: ``ur5``, ``panda``,
``solo12``, ``talos``, ``tiago_dual``), optionally with ``:floating`` for a floating base (``arm6``,
``quadruped:floating``, ``talos:floating``, ``path/to/robot.urdf:floating``).
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
DEFAULT_ROBOTS = ["arm6", "arm7", "quadruped:floating", "humanoid:floating"]
#: the big robots users bring (example-robot-data, pip): Talos (38 DOF with its floating base), tiago_dual (101)
BIG_ROBOTS = ["talos:floating", "tiago_dual:floating"]
#: example-robot-data's robots by a short name: their URDF under the package's robots/ folder
ERD = {"ur5": "ur_description/urdf/ur5_robot.urdf", "panda": "panda_description/urdf/panda.urdf",
       "solo12": "solo_description/robots/solo12.urdf", "talos": "talos_data/robots/talos_reduced.urdf",
       "tiago_dual": "tiago_description/robots/tiago_dual.urdf"}


def erd_path(name: str) -> Path:
    """The example-robot-data URDF of a short name in :data:`ERD` (the cmeel prefix of the pip package)."""
    for base in {sysconfig.get_paths()["data"], sysconfig.get_paths()["purelib"]}:
        p = Path(base) / "cmeel.prefix" / "share" / "example-robot-data" / "robots" / ERD[name]
        if p.exists():
            return p
    raise SystemExit(f"benchmarks: {name} needs example-robot-data (pip install example-robot-data)")
#: fresh copies of each C benchmark program per robot (see run_copies)
COPIES = 5


def parse_robot(spec: str) -> tuple[Path, bool]:
    """(model path, floating base) of a robot spec ``name[:floating]``: a bundled or ``example-robot-data``
    name, or the path of a URDF or an MJCF ``.xml`` (an MJCF file says its own base; ``:floating`` is for URDFs)."""
    name, sep, mode = spec.rpartition(":")
    if not sep or mode != "floating":
        name, mode = spec, ""
    p = Path(name)
    if p.suffix in (".urdf", ".xml") and p.exists():
        return p.resolve(), mode == "floating"
    cand = ROOT / "examples" / "models" / f"{name}.urdf"
    if cand.exists():
        return cand, mode == "floating"
    if name in ERD:
        return erd_path(name), mode == "floating"
    raise SystemExit(f"benchmarks: no robot {name!r} (give a .urdf or MJCF .xml path or a name in examples/models/)")


def slug(spec: str) -> str:
    """A file-name / C-identifier-safe name of a robot spec (``quadruped:floating`` -> ``quadruped_floating``)."""
    path, floating = parse_robot(spec)
    s = re.sub(r"\W", "_", path.stem)
    return (s if s[:1].isalpha() else f"r_{s}") + ("_floating" if floating else "")


def states(mb, n: int, seed: int = 0):
    """The benchmark states (Q, U, T): Q uniform in [-2, 2] then sanitized, U and T standard normal, drawn in
    this order from ``default_rng(seed)``.  vs_pinocchio.py draws Q, V, TAU in the same order and maps them
    through Pinocchio's joint order (and, for a floating base, rotates the base velocity), so for arm6 and
    arm7 its states are exactly these."""
    import numpy as np

    rng = np.random.default_rng(seed)
    Q = mb.sanitize(rng.uniform(-2.0, 2.0, (n, mb.nq)))
    U = rng.normal(size=(n, mb.nu))
    T = rng.normal(size=(n, mb.nu))
    return np.ascontiguousarray(Q), U, T


def median(xs) -> float:
    return statistics.median(xs)


def load_script(relpath: str, name: str):
    """Import a benchmark script by its path under benchmarks/ (they are scripts, not a package)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, BENCH / relpath)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def run_copies(cmd: list, copies: int = COPIES, libs=(), what: str = "benchmark") -> dict:
    """Run a plain-C benchmark program (``cmd[0]``, printing ``<kernel> <median> <min>`` lines in µs)
    ``copies`` times, each from a fresh copy of its file (and of the shared libraries ``libs``, which the
    copy finds first through LD_LIBRARY_PATH).  On the benchmark VM the same binary measured up to 25% apart
    from one copy of its file to another (the physical pages its code lands on); each copy samples that.
    Returns ``{kernel: median over copies, kernel_min: lowest, kernel_spread: [lowest, highest] copy
    median}``."""
    runs = []
    for _ in range(copies):
        with tempfile.TemporaryDirectory(prefix="symgen-bench-") as tmp:
            exe = Path(tmp) / Path(cmd[0]).name
            shutil.copy2(cmd[0], exe)
            for lib in libs:
                shutil.copy2(lib, Path(tmp) / Path(lib).name)
            env = dict(os.environ)
            if libs:
                env["LD_LIBRARY_PATH"] = os.pathsep.join([tmp] + [x for x in [env.get("LD_LIBRARY_PATH")] if x])
            res = subprocess.run([str(exe), *map(str, cmd[1:])], capture_output=True, text=True, env=env)
        if res.returncode:
            raise RuntimeError(f"{what}: {cmd[0]} failed ({res.returncode}): {res.stderr.strip()}")
        runs.append({k: (float(med), float(lo)) for k, med, lo in (line.split() for line in res.stdout.splitlines())})
    out = {}
    for k in runs[0]:
        meds = [r[k][0] for r in runs]
        out[k], out[f"{k}_min"] = median(meds), min(r[k][1] for r in runs)
        out[f"{k}_spread"] = [min(meds), max(meds)]
    return out


def robot_parser(doc: str, n_help: str = "states (default 10000)") -> argparse.ArgumentParser:
    """The options every benchmark script shares: --robots, --n, --rounds, --json (description: the first
    paragraph of the script's docstring)."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--robots", nargs="+", default=DEFAULT_ROBOTS,
                    help="URDF paths, names in examples/models/ or example-robot-data names (" + ", ".join(ERD)
                    + "), with ':floating' for a floating base; 'big' adds " + " ".join(BIG_ROBOTS))
    ap.add_argument("--n", type=int, default=10000, help=n_help)
    ap.add_argument("--rounds", type=int, default=7, help="rounds (median; default 7)")
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--copies", type=int, default=COPIES,
                    help=f"fresh copies of a C benchmark program per robot, median over them (default {COPIES})")
    return ap


def report(results: dict, json_path, table=None) -> int:
    """Print ``table(results)`` and write ``--json`` when there are results (none: a section skipped)."""
    if results:
        if table is not None:
            print("\n" + table(results))
        if json_path:
            Path(json_path).write_text(json.dumps(results, indent=1))
    return 0
