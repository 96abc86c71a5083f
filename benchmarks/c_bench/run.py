"""symgen's generated C timed from a plain C main() (no Python in the loop): issue 6, way (c).

    python benchmarks/c_bench/run.py [--robots arm6 arm7 quadruped:floating humanoid:floating ...]
                                     [--n 10000] [--rounds 7] [--copies 5] [--json results.json]

A robot is a URDF path or a name in examples/models/; ``:floating`` gives it a floating base.

For each robot: symgen generates the model's C (``cached_model_sources``), this script writes it to
``benchmarks/c_bench/build/<robot>/src/`` (gitignored) and compiles the model's ``<name>.c`` (which
``#include``-s its hinge kernels) together with ``sg_bench.c`` into one executable, with
``cc -std=c99`` plus symgen's own ``OPT_FLAGS`` (``-O3``; ``SYMGEN_MARCH_NATIVE=1`` adds ``-march=native``).
The compiler is symgen's (``$CC``, else Python's, else cc/gcc/clang); a rebuild is skipped while the
sources and the command are unchanged.

The states are drawn in Python as in vs_pinocchio.py (``bench_common.states``: Q uniform in [-2, 2] then
sanitized, U and T standard normal, seed 0; T is also the Udot of inverse dynamics) and handed to the C
main as raw float64 files.  The main times, one call per state over the ``--n`` states, in ``--rounds``
interleaved rounds after a warm-up pass, and reports the median µs per state of:

* ``fd``    ``sg_<name>_forward_dynamics(q, u, p, out)``, p = [g, T, f_ext = 0]
* ``id``    ``sg_<name>_inverse_dynamics(q, u, p, out)``, p = [g, Udot, f_ext = 0]
* ``M``     ``sg_<name>_mass_matrix(q, u, p, out)`` (nU x nU)
* ``poses`` ``sg_<name>_poses(q, u, p, out)`` (12 per body)
* ``fd_batch``, ``id_batch``, ``M_batch``: ``sg_<name>_forward_dynamics_batch(N, Q, U, P, OUT)`` and the like,
  one call for the N states (P filled before the timing): the lane form where the model has one

The executable runs ``--copies`` times, each time from a fresh copy of its file, and each number is the
median over the copies, with ``*_spread`` the lowest and highest copy (``bench_common.run_copies``): on
the benchmark VM one and the same binary measured up to 25% apart from one copy of its file to another
(the physical pages its code lands on; the long straight-line functions are the most exposed).

Per call the timed loop also copies T_i (nU doubles) into p.  Before timing, the main writes its outputs
for state 0; they must equal the cffi module's ``forward_dynamics``, ``inverse_dynamics``,
``mass_matrix`` and poses for the same state to 1e-12 relative (max abs difference over max abs value),
else this script fails.  Without a C compiler it prints a message and exits 0.

From Python: ``run(robots, n, rounds, copies=5) -> {robot: {"fd", "id", "M", "poses" (median µs), "*_min",
"*_spread", "nq", "nu", "nb", "check" (largest relative deviation), "flags", "copies"}}`` ({} when
skipped).
"""
from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from bench_common import COPIES, DEFAULT_ROBOTS, parse_robot, report, robot_parser, run_copies, slug, states  # noqa: E402

BUILD = HERE / "build"
KERNELS = ("fd", "id", "M", "poses")
#: the _batch calls sg_bench also times (one call for the N states: the lane form where the model has one)
BATCHES = ("fd_batch", "id_batch", "M_batch")
CHECK_TOL = 1e-12


def _compiler():
    from symgen.pipeline.compile import BuildError, compiler

    try:
        return compiler()
    except BuildError:
        return None


def _compile(cc, src: Path, exe: Path, manifest: dict, header: str) -> list:
    from symgen.pipeline.compile import opt_flags

    name = manifest["name"]
    defs = [f"-DSG_NAME={name}", f'-DSG_HEADER="{name}.h"', f"-DSG_NQ={manifest['nq']}",
            f"-DSG_NU={manifest['nu']}", f"-DSG_NB={manifest['nb']}"]
    if re.search(rf"\bint\s+sg_{name}_forward_dynamics\s*\(", header):
        defs.append("-DSG_FD_INT")
    flags = ["-std=c99", *opt_flags()]
    cmd = [*cc, *flags, *defs, f"-I{src}", str(HERE / "sg_bench.c"), str(src / f"{name}.c"), "-o", str(exe), "-lm"]
    h = hashlib.sha256("\0".join(cmd).encode())
    for f in sorted(src.iterdir()):
        h.update(f.name.encode() + f.read_bytes())
    h.update((HERE / "sg_bench.c").read_bytes() + (HERE.parent / "bench_util.h").read_bytes())
    stamp = exe.with_suffix(".stamp")
    if exe.exists() and stamp.exists() and stamp.read_text() == h.hexdigest():
        return flags
    exe.unlink(missing_ok=True)
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode:
        raise RuntimeError(f"c_bench: compiling {name} failed:\n{' '.join(cmd)}\n{res.stderr[-4000:]}")
    stamp.write_text(h.hexdigest())
    return flags


def _rel(a, b) -> float:
    a, b = np.ravel(a), np.ravel(b)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300)) if b.size else 0.0


def bench_robot(spec: str, n: int, rounds: int, cc, copies: int = COPIES) -> dict:
    from symgen.model import load_model
    from symgen.pipeline.package import build_model
    from symgen.pipeline.sources import cached_model_sources

    path, floating = parse_robot(spec)
    model = load_model(path, floating_base=floating)
    files, manifest = cached_model_sources(model)
    mb = build_model(model)  # = symgen.build(path, floating_base=floating): the cffi module of the same sources
    name, nq, nu, nb = manifest["name"], manifest["nq"], manifest["nu"], manifest["nb"]

    d = BUILD / slug(spec)
    src = d / "src"
    shutil.rmtree(src, ignore_errors=True)
    src.mkdir(parents=True)
    for fname, text in files.items():
        (src / fname).write_text(text)
    exe = d / "sg_bench"
    flags = _compile(cc, src, exe, manifest, files[f"{name}.h"])

    Q, U, T = states(mb, n)
    for fname, a in (("q", Q), ("u", U), ("t", T), ("g", np.asarray(manifest["gravity"], float))):
        np.ascontiguousarray(a, dtype=np.float64).tofile(d / f"{fname}.bin")
    times = run_copies([exe, d, n, rounds], copies, what="c_bench")

    first = np.fromfile(d / "first.bin")
    R, p = mb.binding.poses(Q[:1])
    want = {"fd": mb.forward_dynamics(Q[0], U[0], T[0]), "id": mb.inverse_dynamics(Q[0], U[0], T[0]),
            "M": mb.mass_matrix(Q[0]), "poses": np.concatenate([R[0].reshape(nb, 9), p[0]], axis=1)}
    errs, at = {}, 0
    for k in KERNELS:
        size = want[k].size
        errs[k] = _rel(first[at:at + size], want[k])
        at += size
    if at != first.size or max(errs.values()) > CHECK_TOL:
        raise RuntimeError(f"c_bench: {spec}: the C main's state-0 outputs differ from symgen's Python call "
                           f"(relative deviations {errs}, {first.size} values for {at} expected; tol {CHECK_TOL})")

    return {"name": name, "nq": nq, "nu": nu, "nb": nb, "n": n, "rounds": rounds, "copies": copies,
            "flags": flags, "check": max(errs.values()), **times}


def run(robots=None, n: int = 10000, rounds: int = 7, verbose: bool = True, copies: int = COPIES) -> dict:
    """Time every robot's generated kernels from plain C; {robot spec: results} ({} without a compiler)."""
    robots = list(robots or DEFAULT_ROBOTS)
    cc = _compiler()
    if cc is None:
        print("c_bench: no C compiler found ($CC, Python's CC, cc, gcc, clang); skipped")
        return {}
    results = {}
    for spec in robots:
        results[spec] = r = bench_robot(spec, n, rounds, cc, copies)
        if verbose:
            print(f"c_bench {spec:22} nU={r['nu']:3d}  " + "  ".join(f"{k} {r[k]:7.3f}" for k in KERNELS + BATCHES)
                  + f"  us/state  (state-0 check {r['check']:.1e})", flush=True)
    return results


def table(results: dict) -> str:
    lines = [f"{'robot':22} {'nU':>4} " + " ".join(f"{k:>8}" for k in KERNELS) + "   (median us per state, plain C)"]
    for spec, r in results.items():
        lines.append(f"{spec:22} {r['nu']:4d} " + " ".join(f"{r[k]:8.3f}" for k in KERNELS))
    return "\n".join(lines)


def main(argv=None) -> int:
    args = robot_parser(__doc__).parse_args(argv)
    return report(run(args.robots, args.n, args.rounds, copies=args.copies), args.json, table)


if __name__ == "__main__":
    sys.exit(main())
