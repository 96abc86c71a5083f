"""Every URDF of ``example-robot-data`` through symgen and Pinocchio: does it build, does it agree, how fast.

    python benchmarks/corpus.py [--robots SUBSTRING ...] [--states 5] [--calls 2000] [--jobs 1]
                                [--armature 1e-3] [--json corpus.json] [--markdown]

For every URDF that the package ships (``pip install example-robot-data``; the files are under its
``cmeel.prefix/share/example-robot-data/robots/``), fixed and floating base:

1. Pinocchio loads it (``pin.buildModelFromUrdf``, with ``pin.JointModelFreeFlyer()`` for the floating base).
   A file Pinocchio refuses is listed as such and not counted.  A floating variant whose free-flyer
   dynamics Pinocchio itself cannot compute finitely (``pin.aba`` at its neutral configuration not finite,
   with the armature of step 3 given) is listed as ``n/a`` and not counted.
2. symgen builds it in a subprocess with an **empty cache** (``SYMGEN_CACHE_DIR`` fresh: sympy derivation,
   emission, gcc — the cold build a new user sees), then once more (warm: cached sources, module import).
3. At ``--states`` random states (Q uniform in [-2, 2] then sanitized, U, Udot, T standard normal): forward
   dynamics (``pin.aba``), inverse dynamics (``pin.rnea``), mass matrix (``pin.crba``) and the pose of every
   link (``framesForwardKinematics``).  The error is the largest ``|symgen - pin| / max(1, |pin|_max)``
   over states and entries, after the coordinate maps of ``tests/pin_maps.py`` (continuous joints
   ``(cos, sin)``, the free-flyer's body-frame linear velocity).  Agreement means ≤ 1e-9.
4. One forward-dynamics call from Python (µs, median of 5 rounds of ``--calls`` calls) against ``pin.aba``.
5. With ``--derivatives``, on a fixed base: ``mb.forward_dynamics_derivatives`` and
   ``mb.inverse_dynamics_derivatives`` (their first call compiles the derivative functions; the seconds are the
   "deriv s" column) against ``pin.computeABADerivatives`` / ``pin.computeRNEADerivatives`` at ``--states``
   states (the largest relative error of the six matrices, "deriv err"; agreement ≤ 1e-9, as for the values).
   A model whose derivatives are not generated (over ``DERIVATIVE_MAX_LINES``) is "not generated", counted apart;
   a model whose dynamics take the per-kind form has per-kind derivatives.

A model whose build names a hinge with a singular D (a massless moving tip) is rebuilt with ``--armature``
on the named hinges (``symgen.build(..., armature=...)``) and compared with Pinocchio given the same
``model.armature``; the table says so.  Mimic joints stay independent coordinates in both (Pinocchio's
default); the table counts them.

Each variant runs in its own process (a crash or a hang is one row, not the end of the run); ``--jobs 2``
runs two at once (timings then share the cores).  The table is printed at the end; ``--markdown`` prints it
as Markdown (for the README), ``--json`` keeps every row.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOL = 1e-9


def robots_dir() -> Path:
    """``share/example-robot-data/robots`` of the installed package (found without importing it)."""
    import sysconfig

    for base in {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"], *sys.path}:
        d = Path(base) / "cmeel.prefix" / "share" / "example-robot-data" / "robots"
        if d.is_dir():
            return d
    raise SystemExit("corpus: example-robot-data is not installed (pip install example-robot-data)")


def corpus(filters=()) -> list:
    d = robots_dir()
    files = sorted(d.rglob("*.urdf"), key=lambda p: p.stem)
    if filters:
        files = [f for f in files if any(s in str(f.relative_to(d)) for s in filters)]
    return files


# ------------------------------------------------------------------------------------------------
# one variant (runs in a child process)
# ------------------------------------------------------------------------------------------------

def _rel_err(a, b) -> float:
    import numpy as np

    a, b = np.asarray(a, float), np.asarray(b, float)
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        return float("inf")
    return float(np.max(np.abs(a - b)) / max(1.0, float(np.max(np.abs(b))) if b.size else 1.0)) if a.size else 0.0


def _time_calls(fn, calls: int, rounds: int = 5) -> float:
    fn()
    best = []
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        best.append((time.perf_counter() - t) / calls * 1e6)
    return statistics.median(best)


def run_one(path: str, floating: bool, n_states: int, calls: int, armature_value: float,
            derivatives: bool = False) -> dict:
    import numpy as np
    import pinocchio as pin

    sys.path.insert(0, str(ROOT / "tests"))
    from pin_maps import compare_with_pinocchio, set_armature, to_pin_q

    row = {"robot": Path(path).stem, "path": path, "floating": floating, "status": "", "detail": ""}
    text = Path(path).read_text(errors="replace")
    row["mimic"] = text.count("<mimic")
    try:
        pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if floating else pin.buildModelFromUrdf(path)
    except Exception as e:  # Pinocchio's own refusal: not counted
        row.update(status="pin refuses", detail=str(e).splitlines()[0].replace(path, Path(path).name)[:120])
        return row
    row["nv"] = pm.nv
    pd = pm.createData()

    import symgen
    from symgen.model import ModelError, load_model

    opts = {}
    try:
        model = load_model(path, floating_base=floating)
    except ModelError as e:
        if "accept_indefinite_inertia" not in str(e):
            row.update(status="load error", detail=str(e)[:200])
            return row
        opts["accept_indefinite_inertia"] = True      # as Pinocchio: loaded, with a warning
        row["indefinite"] = str(e).split(": field")[0].split(": ")[-1]
        model = load_model(path, floating_base=floating, **opts)
    row["warnings"] = len(model.warnings)
    t = time.perf_counter()
    try:
        mb = symgen.build(path, floating_base=floating, **opts)
    except Exception as e:
        row.update(status="build error", detail=f"{type(e).__name__}: {str(e)[:300]}")
        return row
    row["cold_s"] = time.perf_counter() - t
    armature = None
    if mb.singular_hinges:      # named by the build: rebuild with armature on them, and give Pinocchio the same
        armature = {h: armature_value for h in mb.singular_hinges}
        row["armature"] = sorted(armature)
        opts["armature"] = armature
        try:
            mb = symgen.build(path, floating_base=floating, **opts)
        except Exception as e:
            row.update(status="build error", detail=f"with armature: {type(e).__name__}: {str(e)[:300]}")
            return row
    row["warm_s"] = _warm_build_seconds(path, floating, opts)
    row["c_kB"] = sum(len(v) for k, v in _sources(path, floating, opts).items() if k.endswith((".c", ".h"))) / 1024
    if armature:
        set_armature(pm, armature)
    if floating:     # with the same armature: a floating base Pinocchio itself cannot solve is not counted
        a = pin.aba(pm, pd, pin.neutral(pm), np.zeros(pm.nv), np.zeros(pm.nv))
        if not np.all(np.isfinite(a)):
            row.update(status="n/a", detail="Pinocchio's own free-flyer aba is not finite at its neutral configuration")
            return row
    try:
        err = compare_with_pinocchio(mb, pm, floating, np.random.default_rng(0), n_states)
    except Exception as e:
        row.update(status="run error", detail=f"{type(e).__name__}: {str(e)[:300]}")
        return row
    row["err"] = err
    row["max_err"] = max(err.values())
    rng = np.random.default_rng(1)
    q = mb.sanitize(rng.uniform(-2.0, 2.0, mb.nq))
    u, T_ = rng.normal(size=mb.nu), rng.normal(size=mb.nu)
    qp, v, tau = to_pin_q(mb, pm, q), rng.normal(size=pm.nv), rng.normal(size=pm.nv)
    row["fd_us"] = _time_calls(lambda: mb.forward_dynamics(q, u, T_), calls)
    row["aba_us"] = _time_calls(lambda: pin.aba(pm, pd, qp, v, tau), calls)
    row["status"] = "agrees" if row["max_err"] <= TOL else "disagrees"
    if derivatives and not floating:
        row.update(_derivatives_against_pinocchio(mb, pm, n_states))
    return row


def _derivatives_against_pinocchio(mb, pm, n_states) -> dict:
    """deriv_s (the first call, which compiles them), deriv_err (largest relative error of dUdot/dQ, dUdot/dU,
    M^-1, dT/dQ, dT/dU, M against Pinocchio's, over the states), or deriv_status "not generated"."""
    import numpy as np
    import pinocchio as pin

    from pin_maps import to_pin_q, u_map

    pd = pm.createData()
    rng = np.random.default_rng(2)
    sym = lambda A: np.triu(A) + np.triu(A, 1).T  # noqa: E731  (Pinocchio fills the upper triangle)
    rel = lambda a, b: float(np.max(np.abs(a - b), initial=0.0)  # noqa: E731  (a model without U: 0 x 0)
                             / max(1.0, float(np.max(np.abs(b), initial=0.0))))
    err, t = 0.0, time.perf_counter()
    for i in range(n_states):
        q = mb.sanitize(rng.uniform(-2.0, 2.0, mb.nq))
        qp, P = to_pin_q(mb, pm, q), u_map(mb, pm, q, False)
        v, a, tau = rng.normal(size=pm.nv), rng.normal(size=pm.nv), rng.normal(size=pm.nv)
        try:
            fd = mb.forward_dynamics_derivatives(q, P @ v, P @ tau)
        except NotImplementedError as e:
            return {"deriv_status": "not generated", "deriv_detail": str(e)[:160]}
        if i == 0:
            deriv_s = time.perf_counter() - t
        pin.computeABADerivatives(pm, pd, qp, v, tau)
        err = max(err, *(rel(P.T @ x @ P, y) for x, y in zip(fd, (pd.ddq_dq, pd.ddq_dv, sym(pd.Minv)))))
        idd = mb.inverse_dynamics_derivatives(q, P @ v, P @ a)
        pin.computeRNEADerivatives(pm, pd, qp, v, a)
        err = max(err, *(rel(P.T @ x @ P, y) for x, y in zip(idd, (pd.dtau_dq, pd.dtau_dv, sym(pd.M)))))
    return {"deriv_status": "agrees" if err <= TOL else "disagrees", "deriv_err": err, "deriv_s": deriv_s}


_WARM = """
import sys, time, json
t = time.perf_counter()
import symgen
symgen.build(sys.argv[1], floating_base=sys.argv[2] == "1", **json.loads(sys.argv[3]))
print(time.perf_counter() - t)
"""


def _warm_build_seconds(path, floating, opts) -> float:
    """A warm build as a user sees it on the next run: a new process, the same cache."""
    res = subprocess.run([sys.executable, "-c", _WARM, path, "1" if floating else "0", json.dumps(opts)],
                         capture_output=True, text=True, check=True)
    return float(res.stdout.split()[-1])


def _sources(path, floating, opts) -> dict:
    from symgen.model import load_model
    from symgen.pipeline.sources import cached_model_sources

    return cached_model_sources(load_model(path, floating_base=floating, **opts))[0]


def _child(args) -> int:
    try:
        row = run_one(args.one, args.floating, args.states, args.calls, args.armature, args.derivatives)
    except Exception as e:
        row = {"robot": Path(args.one).stem, "path": args.one, "floating": args.floating, "status": "crash",
               "detail": f"{type(e).__name__}: {e}\n{traceback.format_exc()[-600:]}"}
    print("CORPUS-ROW " + json.dumps(row))
    return 0


# ------------------------------------------------------------------------------------------------
# driver
# ------------------------------------------------------------------------------------------------

def run_variant(path: Path, floating: bool, args) -> dict:
    with tempfile.TemporaryDirectory(prefix="symgen-corpus-") as cache:
        env = dict(os.environ, SYMGEN_CACHE_DIR=cache)
        cmd = [sys.executable, __file__, "--one", str(path), "--states", str(args.states), "--calls", str(args.calls),
               "--armature", str(args.armature)] + (["--floating"] if floating else []) + \
            (["--derivatives"] if args.derivatives else [])
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=args.timeout)
        except subprocess.TimeoutExpired:
            return {"robot": path.stem, "path": str(path), "floating": floating, "status": "timeout",
                    "detail": f"more than {args.timeout} s"}
    for line in res.stdout.splitlines():
        if line.startswith("CORPUS-ROW "):
            row = json.loads(line[len("CORPUS-ROW "):])
            row["detail"] = row.get("detail", "").replace(str(path), path.name)
            return row
    return {"robot": path.stem, "path": str(path), "floating": floating, "status": "crash",
            "detail": (res.stderr or res.stdout).strip()[-400:]}


def _fmt(x, spec):
    return "-" if x is None else format(x, spec)


def table(rows, markdown=False) -> str:
    head = ["robot", "base", "nv", "status", "cold s", "warm s", "C kB", "max err", "FD µs", "aba µs", "ratio",
            "mimic", "notes"]
    derivs = any("deriv_status" in r for r in rows)
    if derivs:
        head[-1:-1] = ["deriv err", "deriv s"]
    lines = []
    for r in rows:
        notes = []
        if r.get("armature"):
            notes.append("armature on " + ", ".join(r["armature"]))
        if r.get("indefinite"):
            notes.append(f"indefinite inertia of {r['indefinite']} accepted (accept_indefinite_inertia)")
        if r["status"] not in ("agrees",) and r.get("detail"):
            notes.append(r["detail"].replace("\n", " ")[:110])
        ratio = r["fd_us"] / r["aba_us"] if r.get("fd_us") and r.get("aba_us") else None
        lines.append([r["robot"], "floating" if r["floating"] else "fixed", str(r.get("nv", "-")), r["status"],
                      _fmt(r.get("cold_s"), ".1f"), _fmt(r.get("warm_s"), ".2f"), _fmt(r.get("c_kB"), ".0f"),
                      _fmt(r.get("max_err"), ".1e"), _fmt(r.get("fd_us"), ".2f"), _fmt(r.get("aba_us"), ".2f"),
                      _fmt(ratio, ".2f"), f"{r.get('mimic', 0)} (independent)" if r.get("mimic") else "",
                      "; ".join(notes)])
        if derivs:
            d = r.get("deriv_status")
            lines[-1][-1:-1] = [_fmt(r.get("deriv_err"), ".1e") if d in ("agrees", "disagrees") else (d or "-"),
                                _fmt(r.get("deriv_s"), ".1f")]
    if markdown:
        out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        out += ["| " + " | ".join(c.replace("|", "/") for c in ln) + " |" for ln in lines]
        return "\n".join(out)
    widths = [max(len(h), *(len(ln[i]) for ln in lines)) if lines else len(h) for i, h in enumerate(head)]
    fmt = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    return "\n".join([fmt(head), fmt(["-" * w for w in widths])] + [fmt(ln) for ln in lines])


def summary(rows) -> str:
    counted = [r for r in rows if r["status"] not in ("pin refuses", "n/a")]
    ok = [r for r in counted if r["status"] == "agrees"]
    cold = [r["cold_s"] for r in rows if r.get("cold_s") is not None]
    warm = [r["warm_s"] for r in rows if r.get("warm_s") is not None]
    ratios = [r["fd_us"] / r["aba_us"] for r in ok if r.get("fd_us") and r.get("aba_us")]
    files = {r["path"] for r in rows}
    pin_ok = {r["path"] for r in rows if r["status"] != "pin refuses"}
    s = [f"{len(files)} URDFs, {len(pin_ok)} loaded by Pinocchio; {len(ok)} of {len(counted)} variants "
         f"(fixed + floating base) build and agree with Pinocchio to {TOL:g} (FD, ID, M, link poses)"]
    na = [r for r in rows if r["status"] == "n/a"]
    if na:
        s.append(f"{len(na)} floating variants n/a (Pinocchio's own free-flyer dynamics are not finite)")
    if cold:
        s.append(f"cold build max {max(cold):.1f} s, median {statistics.median(cold):.1f} s; warm max {max(warm):.2f} s")
    if ratios:
        s.append(f"one FD call from Python / pin.aba: median {statistics.median(ratios):.2f}, max {max(ratios):.2f}")
    dr = [r for r in rows if r.get("deriv_status")]
    if dr:
        agree = [r for r in dr if r["deriv_status"] == "agrees"]
        s.append(f"derivatives (fixed base): {len(agree)} of {len(dr)} agree with computeABADerivatives / "
                 f"computeRNEADerivatives to {TOL:g}; not generated: "
                 f"{sum(r['deriv_status'] == 'not generated' for r in dr)}; disagree: "
                 f"{', '.join(r['robot'] for r in dr if r['deriv_status'] == 'disagrees') or 'none'}")
    bad = [r for r in counted if r["status"] != "agrees"]
    for r in bad:
        s.append(f"  NOT OK {r['robot']} ({'floating' if r['floating'] else 'fixed'}): {r['status']}: "
                 f"{r.get('detail', '')[:160]}")
    return "\n".join(s)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--robots", nargs="*", default=(), help="only URDFs whose path contains one of these")
    ap.add_argument("--base", choices=("fixed", "floating", "both"), default="both")
    ap.add_argument("--states", type=int, default=5, help="random states compared per variant (default 5)")
    ap.add_argument("--calls", type=int, default=2000, help="FD calls per timing round (default 2000)")
    ap.add_argument("--armature", type=float, default=1e-3,
                    help="armature given to hinges the build names as singular (default 1e-3)")
    ap.add_argument("--jobs", type=int, default=1, help="variants at once (default 1: timings uncontended)")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per variant (default 900)")
    ap.add_argument("--json", help="write every row here")
    ap.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    ap.add_argument("--shard", metavar="I/N", help="run only every N-th variant, starting at the I-th (0-based), "
                    "to split a run over machines or processes; --merge joins their --json files")
    ap.add_argument("--merge", nargs="+", metavar="JSON", help="print the table of earlier --json runs, joined")
    ap.add_argument("--derivatives", action="store_true",
                    help="fixed bases: also the FD and ID derivatives against Pinocchio's (compiles them: slower)")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--floating", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        return _child(args)
    if args.merge:
        merged = {(r["path"], r["floating"]): r for f in args.merge for r in json.loads(Path(f).read_text())}
        rows = list(merged.values())      # a later file's row replaces an earlier one's
        rows.sort(key=lambda r: (Path(r["path"]).stem, r["path"], r["floating"]))
        return _finish(rows, args, 0.0)
    files = corpus(args.robots)
    if not files:
        raise SystemExit("corpus: no URDF matches --robots")
    bases = {"fixed": (False,), "floating": (True,), "both": (False, True)}[args.base]
    jobs = [(f, fb) for f in files for fb in bases]
    if args.shard:
        i, n = (int(x) for x in args.shard.split("/"))
        jobs = jobs[i::n]
    t0 = time.perf_counter()
    rows = []

    def work(job):
        r = run_variant(job[0], job[1], args)
        rows.append(r)
        print(f"[{len(rows):3d}/{len(jobs)}] {r['robot']:<34} {'floating' if r['floating'] else 'fixed':<8} "
              f"{r['status']:<12} {_fmt(r.get('cold_s'), '6.1f')} s  err {_fmt(r.get('max_err'), '.1e')}  "
              f"{(r.get('detail') or '')[:90]}", flush=True)
        return r

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as ex:
        list(ex.map(work, jobs))
    order = {j: i for i, j in enumerate((str(f), fb) for f, fb in jobs)}
    rows.sort(key=lambda r: order[(r["path"], r["floating"])])
    return _finish(rows, args, t0)


def _finish(rows, args, t0) -> int:
    print()
    print(table(rows, markdown=args.markdown))
    print()
    print(summary(rows))
    if t0:
        print(f"(total {time.perf_counter() - t0:.0f} s)")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    counted = [r for r in rows if r["status"] not in ("pin refuses", "n/a")]
    return 0 if all(r["status"] == "agrees" for r in counted) else 1


if __name__ == "__main__":
    sys.exit(main())
