"""The two forms of each dynamics entry point side by side: every robot built as the cost model chooses
(symgen.codegen.schedule, ``form="auto"``) and with every entry point looped (``form="per_kind"``), and the
batched FD, ID and M of both timed interleaved, round by round, so that the VM's drift falls on both alike.
What the table in symgen/codegen/schedule.py's docstring comes from.

    python benchmarks/forms.py --robots arm7 ur5 panda solo12:floating humanoid:floating talos:floating
    python benchmarks/forms.py --robots path/to/humanoid_CMU.xml:floating --n 400

A robot is what the other scripts take (bench_common.parse_robot) or a path to any model file symgen reads (an
MJCF ``.xml``, a YAML model), with ``:floating`` for a URDF's floating base.  Build times are those of this run
(a cold build only with an empty ``SYMGEN_CACHE_DIR``).
"""
from __future__ import annotations

import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import parse_robot, robot_parser, states  # noqa: E402

VERBS = (("FD", "forward_dynamics"), ("ID", "inverse_dynamics"), ("M", "mass_matrix"))


def _model(spec: str):
    name, sep, mode = spec.rpartition(":")
    if not sep or mode != "floating":
        name, mode = spec, ""
    p = Path(name)
    if p.exists() and p.suffix != ".urdf":
        return p.resolve(), False                  # MJCF and YAML models say their own base
    return parse_robot(spec)


def _batch(mb, verb, Q, U, T):
    """A function timing one batched call of ``verb`` on the states (µs per state)."""
    call = {"forward_dynamics": lambda: mb.forward_dynamics(Q, U, T),
            "inverse_dynamics": lambda: mb.inverse_dynamics(Q, U, T),
            "mass_matrix": lambda: mb.mass_matrix(Q)}[verb]
    call()

    def run():
        t = time.perf_counter()
        call()
        return (time.perf_counter() - t) / len(Q) * 1e6
    return run


def main(argv=None) -> int:
    import symgen

    ap = robot_parser(__doc__, "states per batch (default 400)")
    ap.set_defaults(n=400)
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    print(f"{'robot':28s} {'nU':>4s} {'forms (auto)':14s} {'build auto / per_kind s':>24s}   "
          + "   ".join(f"{k} auto / per_kind µs" for k, _ in VERBS))
    with tempfile.TemporaryDirectory() as out:
        for spec in args.robots:
            path, floating = _model(spec)
            built, secs = {}, {}
            for form in ("auto", "per_kind"):
                t = time.perf_counter()
                built[form] = symgen.build(str(path), floating_base=floating, form=form, out=f"{out}/{form}")
                secs[form] = time.perf_counter() - t
            auto, looped = built["auto"], built["per_kind"]
            Q, U, T = states(auto, args.n)
            cells = []
            for _, verb in VERBS:
                fa, fb = _batch(auto, verb, Q, U, T), _batch(looped, verb, Q, U, T)
                ta, tb = [], []
                for _ in range(args.rounds):
                    ta.append(fa())
                    tb.append(fb())
                cells.append(f"{np.median(ta):8.2f} / {np.median(tb):8.2f}")
            forms = "".join(v[0] for v in auto.forms.values())     # s: straight-line, p: per-kind
            print(f"{spec:28s} {auto.nu:4d} {forms:14s} {secs['auto']:10.1f} / {secs['per_kind']:10.1f}   "
                  + "   ".join(cells), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
