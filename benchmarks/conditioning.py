"""Which ``example-robot-data`` URDFs have singular or ill-conditioned forward dynamics, in Pinocchio and in
symgen's build-time warnings (issue 25, item 5).

    python benchmarks/conditioning.py [--robots SUBSTRING ...] [--json conditioning.json]

For every URDF Pinocchio loads (fixed base): the largest acceleration Pinocchio's ``aba`` gives for a unit
generalized force (each column of ``T = e_j``, ``U = 0``, gravity's part subtracted) at the neutral
configuration and at three random ones; ``ill`` when it exceeds 1e12 or is not finite.  Then ``symgen.build``
of the same file (with ``accept_indefinite_inertia=True`` where its inertias need it, as Pinocchio loads them):
the hinges it names as structurally singular (``mb.singular_hinges``) and as singular to
working precision at a configuration (``mb.ill_conditioned_hinges``).  A row agrees when symgen warns exactly
where Pinocchio is ill.  Nothing is asserted; the table is the evidence.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from corpus import corpus, robots_dir  # noqa: E402


def pinocchio_worst(path) -> float | None:
    """The largest |Udot| for a unit T at the neutral and three random configurations (inf: not finite)."""
    import pinocchio as pin

    try:
        m = pin.buildModelFromUrdf(str(path))
    except Exception:                      # noqa: BLE001 - a file Pinocchio refuses is not counted
        return None
    if m.nv == 0:
        return None
    d, rng = m.createData(), np.random.default_rng(0)
    states = [pin.neutral(m)]
    for _ in range(3):
        q = pin.neutral(m)
        for j in range(1, m.njoints):
            i, n = m.idx_qs[j], m.nqs[j]
            if n == 1:
                q[i] = rng.uniform(-2.0, 2.0)
        states.append(q)
    worst = 0.0
    with np.errstate(all="ignore"):
        for q in states:
            v = np.zeros(m.nv)
            a0 = pin.aba(m, d, q, v, np.zeros(m.nv))
            for j in range(m.nv):
                a = pin.aba(m, d, q, v, np.eye(m.nv)[j]) - a0
                worst = max(worst, float(np.abs(a).max())) if np.all(np.isfinite(a)) else np.inf
    return worst


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robots", nargs="*", default=(), help="only URDFs whose path contains one of these")
    ap.add_argument("--json", help="write the rows here")
    args = ap.parse_args()
    import warnings

    import symgen

    rows, base = [], robots_dir()
    for path in corpus(args.robots):
        worst = pinocchio_worst(path)
        if worst is None:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                try:
                    mb = symgen.build(str(path))
                except ValueError as e:      # an indefinite inertia: loaded as Pinocchio loads it, as corpus.py does
                    if "accept_indefinite_inertia" not in str(e):
                        raise
                    mb = symgen.build(str(path), accept_indefinite_inertia=True)
                sing, ill = list(mb.singular_hinges), list(mb.ill_conditioned_hinges)
            except Exception as e:          # noqa: BLE001 - one row per file
                sing, ill = [f"build failed: {type(e).__name__}"], []
        pin_ill = not worst < 1e12
        warned = bool(sing or ill)
        rows.append({"urdf": str(path.relative_to(base)), "pin_max_accel": worst, "pin_ill": pin_ill,
                     "singular": sing, "ill_conditioned": ill, "agree": pin_ill == warned})
        r = rows[-1]
        print(f"{r['urdf']:62s} pin {worst:9.2e} {'ILL' if pin_ill else '   '}  symgen singular={sing} "
              f"ill={ill}  {'ok' if r['agree'] else 'DISAGREE'}", flush=True)
    n_ok = sum(r["agree"] for r in rows)
    print(f"\n{n_ok} of {len(rows)} agree; Pinocchio ill: {sum(r['pin_ill'] for r in rows)}; "
          f"symgen warns: {sum(bool(r['singular'] or r['ill_conditioned']) for r in rows)}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
