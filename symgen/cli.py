"""``python -m symgen``: the command line (build | info | show | hinges | bench | sweep | docs).

Exit status: 0 success; 1 the model or the build failed (missing or malformed model file, bad model content,
a compile error, an internal error); 2 usage (bad arguments, unknown hinge type or kernel).  Every error is one
paragraph on stderr starting ``symgen: error:`` that says what to fix; ``--verbose`` adds the traceback of an
internal error.  Progress goes to stderr (``--quiet`` silences it), results to stdout.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

DEFAULT_OUT = Path("generated")
STAGE_ORDER = ("load", "derive", "emit", "render", "compile", "install")


class UsageError(ValueError):
    """Bad command-line arguments (exit status 2)."""


class UI:
    """Where the command line writes: progress and warnings on stderr (``--quiet`` keeps warnings only),
    per-item detail with ``--verbose``, results on stdout; progress bars from tqdm when it is installed
    and stderr is a terminal."""

    def __init__(self, quiet: bool = False, verbose: bool = False):
        self.quiet, self.verbose = quiet, verbose and not quiet

    def out(self, text: str = "") -> None:
        print(text, flush=True)

    def progress(self, text: str) -> None:
        if not self.quiet:
            print(text, file=sys.stderr, flush=True)

    def detail(self, text: str) -> None:
        if self.verbose:
            print(text, file=sys.stderr, flush=True)

    def warn(self, text: str) -> None:
        print(f"warning: {text}", file=sys.stderr, flush=True)

    def report(self):
        """A symgen.progress.BuildReport that prints each step with --verbose and shows bars on a terminal."""
        from .progress import BuildReport

        def on_step(stage, label, seconds, hit):
            self.detail(f"  {stage:<8} {label:<44} {seconds:7.2f} s{'  (cache hit)' if hit else ''}")
        return BuildReport(on_step=on_step, make_bar=self._bar)

    def _bar(self, stage, total, label):
        if self.quiet or not sys.stderr.isatty():
            return None
        try:
            from tqdm import tqdm
        except ImportError:  # optional: pip install "symgen[progress]"
            return None
        return tqdm(total=total, desc=f"{stage:<9}{label}", unit="step", leave=False, file=sys.stderr)


UNITS = {"derive": ("hinge spec", "hinge specs"), "render": ("C file", "C files"),
         "emit": ("kernel set or model recursion", "kernel sets and model recursions"),
         "compile": ("module", "modules")}


def _stage_line(report, name: str, what: str | None = None) -> str:
    """One pipeline stage: what it did (``what`` overrides), its cache hits and its exclusive time."""
    st = report.stages
    s, src = st[name], st.get("sources")
    sources_hit = src is not None and src.items and src.hits == src.items
    secs = s.seconds + (src.seconds if name == "emit" and src is not None else 0.0)
    if what is None:
        if name in ("derive", "emit", "render") and sources_hit:
            what = "cached (model sources)"
        elif name == "derive" and not s.items:
            what = "not needed (hinge kernels from cache)"
        elif not s.items:
            what = "nothing to do"
        else:
            what = f"{s.items} {UNITS.get(name, ('step', 'steps'))[s.items != 1]}" + (
                ", all from cache" if s.hits == s.items else f", {s.hits} from cache" if s.hits else "")
    return f"{name:<9} {what:<62} {secs:6.2f} s"


def _hinge_from_args(args):
    from .hinges.derive import hinge

    params = {}
    if args.axis is not None:
        params["axis"] = tuple(args.axis)
    if args.axes is not None:
        params["axes"] = [tuple(float(x) for x in a.split(",")) for a in args.axes]
    if args.pitch is not None:
        params["pitch"] = args.pitch
    if args.ij_q is not None:
        params["ij_q"] = tuple(args.ij_q)
    if args.subhinges is not None:
        params["subhinges"] = args.subhinges
    return hinge(args.hinge, **params)


def cmd_hinges(args, ui) -> int:
    from .hinges import HINGE_TYPE_TABLE, HINGE_TYPES, hinge_table_markdown

    if args.markdown:
        print(hinge_table_markdown())
        return 0
    from .hinges.derive import hinge
    from .codegen.kernels import C_KERNELS
    from .pipeline.sources import hinge_sources

    cols = [*C_KERNELS, "sanitize", "atbi"]
    short = {"transform": "X", "coord_map": "H", "oframe_coord_map": "Ho", "qdot_map": "N", "coord_map_dot": "Hdot",
             "bias": "bias", "pose_gradient": "G", "ortho_complement": "OC", "sanitize": "san", "atbi": "atbi"}
    print("operations per kernel after CSE: " + ", ".join(f"{short[c]} = {c}" for c in cols))
    print(f"{'hinge type':<14} {'nQ':>3} {'nU':>3}  {'subhinges':<31}" + "".join(f"{short[c]:>6}" for c in cols))
    for name in HINGE_TYPES:
        spec = HINGE_TYPE_TABLE[name].bind()
        flops = {k: v["flops"] for k, v in hinge_sources(hinge(name))[1]["kernels"].items()}
        print(f"{name:<14} {spec.nq:>3} {spec.nu:>3}  {' -> '.join(spec.subhinge_types):<31}"
              + "".join(f"{flops[c]:>6}" if c in flops else f"{'-':>6}" for c in cols))
    return 0


def cmd_show(args, ui) -> int:
    import sympy as sp

    from .hinges.derive import KERNELS

    h = _hinge_from_args(args)
    if args.c and args.kernel:
        from .pipeline.sources import kernel_c

        for k in args.kernel:
            text, flops = kernel_c(h, k)
            print(f"/* {h.spec.label()} {k}: {flops} operations after CSE */\n{text}\n")
        return 0
    if args.c:
        from .pipeline.sources import hinge_sources

        files, _ = hinge_sources(h)
        for fname in sorted(files, key=lambda f: not f.endswith(".h")):
            print(f"/* ---- {fname} ---- */\n{files[fname]}")
        return 0
    kernels = args.kernel or list(KERNELS)
    for k in kernels:
        if k not in KERNELS:
            raise UsageError(f"unknown kernel {k!r} (known: {', '.join(KERNELS)})")
    print(f"# {h.spec.label()}: nQ = {h.nq}, nU = {h.nu}, subhinges {' -> '.join(h.subhinge_types)}")
    print(f"# Q = {list(h.q)}, U = {list(h.u)}; c_k(s) are Stumpff functions (see symgen.symbolic.spatial)")
    for k in kernels:
        M = getattr(h, k)
        print(f"\n{k} ({M.shape[0]}x{M.shape[1]}):")
        print(sp.latex(M) if args.latex else sp.pretty(M, wrap_line=False, use_unicode=True))
    if h.has_sanitize:
        print("\nsanitize:")
        print(sp.latex(h.sanitize_expr) if args.latex else sp.pretty(h.sanitize_expr, wrap_line=False))
    return 0


def _build_hinges(out: Path, ui) -> int:
    """Generate and compile the C kernel library of every hinge type into OUT/hinges/, and write the
    equations as a readable document next to it."""
    from .pipeline.sources import build_hinge_library

    t0 = time.perf_counter()
    _write_equations(out, ui)
    build_hinge_library(out / "hinges", progress=ui.progress)
    ui.out(f"built the hinge library -> {out / 'hinges'} in {time.perf_counter() - t0:.2f} s")
    return 0


def _write_equations(out: Path, ui) -> None:
    """Write the derived equations of every hinge type as a readable document (cached by derivation key)."""
    import hashlib

    from .hinges.derive import cache_dir, derivation_key, hinge
    from .hinges import HINGE_TYPES, bind

    t0 = time.perf_counter()
    key = hashlib.sha256("|".join(derivation_key(bind(n)) for n in HINGE_TYPES).encode()).hexdigest()[:24]
    cached = cache_dir() / "equations" / f"{key}.md"
    if cached.exists():
        text = cached.read_text()
    else:
        import sympy as sp

        from .hinges.derive import KERNELS

        parts = ["# symgen hinge equations\n", "Generated by `python -m symgen build hinges`; Stumpff functions "
                 "`c_k(s)`, `s` = squared rotation angle.\n"]
        for name in HINGE_TYPES:
            h = hinge(name)
            parts.append(f"\n## {name}\n\nQ = {list(h.q)}, U = {list(h.u)}, subhinges {' → '.join(h.subhinge_types)}\n")
            for k in KERNELS:
                parts.append(f"\n`{k}`:\n\n$$ {sp.latex(getattr(h, k))} $$\n")
        text = "".join(parts)
        _atomic_write(cached, text)
    path = out / "hinges" / "EQUATIONS.md"
    _atomic_write(path, text)
    ui.progress(f"derived {len(HINGE_TYPES)} hinge types, wrote {path} in {time.perf_counter() - t0:.2f} s")


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    tmp.replace(path)


def bundled_example() -> Path:
    """The model ``python -m symgen build`` builds when no MODEL is given: the 7-dof arm URDF."""
    from importlib import resources

    return Path(str(resources.files("symgen.examples"))) / "models" / "arm7.urdf"


def _armature_arg(items):
    """``["HINGE=VALUE", ...]`` -> ``{hinge: value}`` (a value may be a comma list, one per hinge U)."""
    out = {}
    for item in items or ():
        name, sep, value = item.partition("=")
        try:
            vals = [float(v) for v in value.split(",")]
        except ValueError:
            vals = None
        if not sep or not name or not vals:
            raise UsageError(f"--armature {item!r}: expected HINGE=VALUE (or HINGE=V1,V2,... one per U)")
        out[name] = vals[0] if len(vals) == 1 else vals
    return out or None




def _model_path(target) -> Path:
    path = bundled_example() if target is None else Path(target)
    if path.suffix.lower() not in (".yaml", ".yml", ".json", ".urdf", ".xml", ".mjcf"):
        raise UsageError(f"don't know how to build {str(target)!r}: give a model file (.yaml, .yml, .json, "
                         ".urdf, or MJCF .xml), or 'hinges' for the hinge kernel library")
    return path


def _load(args, ui):
    """Read the model file named by ``args.target`` (with the loading options), timing it."""
    from .diagnostics import collecting, grouped
    from .model import load_model

    path = _model_path(args.target)
    t = time.perf_counter()
    with collecting():              # printed here, one line per group, not warned
        model = load_model(path, floating_base=args.floating_base, balance_inertia=args.balance_inertia,
                           accept_indefinite_inertia=args.accept_indefinite_inertia,
                           armature=_armature_arg(args.armature), lock=args.lock or None,
                           loops_from_equality=getattr(args, "loops_from_equality", False))
    if args.parameter:
        import dataclasses

        model = dataclasses.replace(model, parameters=list(args.parameter))
    for _, text in grouped(model.warnings):
        ui.warn(f"{path}: {text}")
    return path, model, time.perf_counter() - t


def cmd_build(args, ui) -> int:
    if args.target == "hinges":
        return _build_hinges(Path(args.out), ui)
    from .diagnostics import collecting
    from .pipeline.package import build_model
    from .progress import listening, step

    t0 = time.perf_counter()
    report = ui.report()
    out = Path(args.out)

    def stage_done(stage: str, **facts) -> None:
        """symgen.pipeline.package's stages, as data (build_model's ``stages=``): print ours from the report."""
        if stage == "generate":
            for name in ("derive", "emit", "render"):
                ui.progress(_stage_line(report, name))
        elif stage == "compile":
            c = report.stages["compile"]
            ui.progress(_stage_line(report, "compile", f"{model.name}: {facts['module']}"
                                    + (" (cache hit)" if c.hits == c.items else "")))
        elif stage == "install":
            ui.progress(_stage_line(report, "install", str(facts["target"])))
        elif stage == "warning":
            ui.warn(facts["text"])

    with listening(report):
        with step("load", str(args.target or "bundled example")):
            path, model, _ = _load(args, ui)
        loops = f", {len(model.loops)} loops" if model.loops else ""
        flex = [b for b in model.bodies if b.flex]
        flex_text = (f", {_plural(len(flex), 'flexible body', 'flexible bodies')} ("
                     f"{_plural(sum(b.n_modes for b in flex), 'mode')}, {_plural(sum(len(b.flex.nodes) for b in flex), 'node')})"
                     if flex else "")
        ui.progress(_stage_line(report, "load", f"{path.name}: {len(model.bodies)} bodies, "
                                                f"{len(model.frames)} extra frames{flex_text}{loops}"))
        with collecting():          # the build's warnings reach stage_done, one per group
            mb = build_model(model, out=out, stages=stage_done, form=args.form, derivatives=args.derivatives)
    ui.out(f"built {mb.name}: nQ = {mb.nq}, nU = {mb.nu}, {mb.nb} bodies, {len(mb.frame_names)} frames{loops} "
           f"-> {out / mb.name} (import {out.name}.{mb.name}) in {time.perf_counter() - t0:.2f} s")
    return 0


def _flex_lines(b, qo, uo) -> list:
    """A flexible body's modes (Q/U slot, frequency, damping ratio, modal mass) and nodes (frames: position, mass)."""
    F = b.flex
    out = [f"flexible: {_plural(len(F.modes), 'mode')}, {_plural(len(F.nodes), 'node')} "
           f"({sum(n.mass for n in F.nodes):g} kg on the nodes)"]
    for k, md in enumerate(F.modes):
        out.append(f"  mode '{b.name}.mode{k}'  Q[{qo + k}] U[{uo + k}]  {md.frequency:g} Hz  damping {md.damping:g}  "
                   f"modal mass {F.modal_mass(k):.4g}")
    for n in F.nodes:
        out.append(f"  node '{n.name}'  at ({', '.join(f'{x:g}' for x in n.pos)})  mass {n.mass:g}")
    return out


def cmd_info(args, ui) -> int:
    """Bodies as a tree (hinge, Q/U slices, mass), frames on their bodies, loops, sizes; no build."""
    from .hinges import bind
    from .model import NEWTONIAN

    path, model, _ = _load(args, ui)
    children: dict = {}
    for b in model.bodies:
        children.setdefault(b.parent, []).append(b)
    frames: dict = {}
    for f in model.frames:
        frames.setdefault(f.body, []).append(f.name)
    qo = uo = 0
    rows: dict = {}
    subrows: dict = {}
    for b in model.bodies:
        spec = bind(b.hinge_type, **b.hinge_kwargs())
        compound = spec.hinge_type == "SERIAL"   # the compound hinge: one line per subhinge below
        label = f"{spec.hinge_type}({len(spec.subhinges)} subhinges)" if compound else spec.label()
        rows[b.name] = (f"hinge {b.hinge_name!r} {label}  Q[{qo}:{qo + spec.nq}] U[{uo}:{uo + spec.nu}]"
                        f"  mass {b.mass:g}")
        if compound:
            subrows[b.name] = _subhinge_lines(spec, b.hinge_kwargs(), qo, uo)
        qo, uo = qo + spec.nq, uo + spec.nu
        if b.flex:                       # a flexible body: its modes (Q and U after its hinge's) and its nodes
            subrows[b.name] = subrows.get(b.name, []) + _flex_lines(b, qo, uo)
            qo, uo = qo + b.n_modes, uo + b.n_modes
    loops = [(lc, bind(lc.hinge_type, **lc.hinge_kwargs())) for lc in model.loops]
    n_c = sum(6 - s.nu for _, s in loops)
    n_nodes = sum(len(b.flex.nodes) for b in model.bodies if b.flex)
    ui.out(f"{model.name} ({path}): {len(model.bodies)} bodies, nQ = {qo}, nU = {uo}, "
           f"{len(model.bodies) + len(model.frames) + 1} frames"
           + (f" and {_plural(n_nodes, 'flexible-body node')}" if n_nodes else "") + f", {_plural(len(loops), 'loop')}"
           + (f" ({_plural(n_c, 'constraint row')}; their rank, and so the degrees of freedom, is found at run "
              "time)" if loops else ""))
    ui.out(NEWTONIAN + (f"  frames: {', '.join(frames[NEWTONIAN])}" if frames.get(NEWTONIAN) else ""))

    def walk(parent, prefix):
        kids = children.get(parent, [])
        for i, b in enumerate(kids):
            last = i == len(kids) - 1
            extra = f"  frames: {', '.join(frames[b.name])}" if frames.get(b.name) else ""
            ui.out(f"{prefix}{'└── ' if last else '├── '}{b.name}  {rows[b.name]}{extra}")
            for line in subrows.get(b.name, ()):
                ui.out(f"{prefix}{'    ' if last else '│   '}{'│   ' if children.get(b.name) else '    '}  {line}")
            walk(b.name, prefix + ("    " if last else "│   "))
    walk(NEWTONIAN, "")
    for lc, spec in loops:
        ui.out(f"loop {lc.name!r}: {lc.source} -> {lc.target}, cut hinge {spec.label()} "
               f"({_plural(6 - spec.nu, 'constraint row')})")
    return 0


def _subhinge_lines(spec, kwargs, qo, uo) -> list:
    """One line per subhinge of a compound hinge: its type (and joint name), axis, anchor, ref, pitch, Q/U."""
    names = [j.get("name") for j in kwargs.get("joints", ())] if spec.hinge_type == "SERIAL" else []
    fmt = lambda v: "(" + ", ".join(f"{x:g}" for x in v) + ")"  # noqa: E731
    out = []
    for k, s in enumerate(spec.subhinges):
        n_q, n_u = s.info.nq, s.info.nu
        q0 = sum(x.info.nq for x in spec.subhinges[:k])
        u0 = sum(x.info.nu for x in spec.subhinges[:k])
        parts = [f"{k}: {s.type}" + (f" {names[k]!r}" if k < len(names) and names[k] else "")]
        if s.axis is not None:
            parts.append(f"axis {fmt(s.axis)}")
        if s.anchor is not None:
            parts.append(f"anchor {fmt(s.anchor)}")
        if s.ref is not None:
            parts.append(f"ref {s.ref:g}")
        if s.pitch is not None:
            parts.append(f"pitch {s.pitch:g}")
        if spec.q_order == tuple(range(spec.nq)):
            parts.append(f"Q[{qo + q0}:{qo + q0 + n_q}] U[{uo + u0}:{uo + u0 + n_u}]")
        out.append("  ".join(parts))
    return out


def _plural(n: int, noun: str, plural: str | None = None) -> str:
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def cmd_bench(args, ui) -> int:
    """Quick timing of forward dynamics, inverse dynamics and the mass matrix: one Python call, and per
    state in one batched C call; Pinocchio beside it for a URDF when Pinocchio is installed."""
    import timeit

    import numpy as np

    from .diagnostics import collecting, grouped
    from .pipeline.package import build_model
    from .progress import listening

    path, model, _ = _load(args, ui)
    with listening(ui.report()), collecting() as found:
        mb = build_model(model, out=None, progress=ui.detail, form=args.form)
    for _, text in grouped(found):
        ui.warn(text)
    rng = np.random.default_rng(0)
    n = args.n
    Q = mb.sanitize(mb.default_q() + 0.3 * rng.standard_normal((n, mb.nq)))
    U, T = rng.standard_normal((n, mb.nu)), rng.standard_normal((n, mb.nu))
    q, u, tau = Q[0], U[0], T[0]
    udot = mb.forward_dynamics(q, u, tau)

    def best(fn, number):
        return min(timeit.repeat(fn, number=number, repeat=5)) / number * 1e6

    rows = [("forward dynamics", best(lambda: mb.forward_dynamics(q, u, tau), args.calls),
             best(lambda: mb.forward_dynamics(Q, U, T), 3) / n),
            ("inverse dynamics", best(lambda: mb.inverse_dynamics(q, u, udot), args.calls),
             best(lambda: mb.inverse_dynamics(Q, U, T), 3) / n),
            ("mass matrix", best(lambda: mb.mass_matrix(q), args.calls), best(lambda: mb.mass_matrix(Q), 3) / n)]
    peer = _pinocchio_times(path, args, ui) if not args.no_pinocchio else None
    ui.out(f"{mb.name}: nQ = {mb.nq}, nU = {mb.nu}, {mb.nb} bodies{', loops: TA forward dynamics' if mb.loops else ''}"
           f"; best of 5, µs")
    head = f"{'':<18}{'symgen Python call':>20}{'symgen C per state':>20}"
    if peer:
        head += f"{'Pinocchio Python call':>23}"
    ui.out(head)
    for (name, one, per), p in zip(rows, peer or [None] * 3):
        ui.out(f"{name:<18}{one:>20.2f}{per:>20.3f}" + (f"{p:>23.2f}" if p is not None else ""))
    if peer is None and not args.no_pinocchio:
        ui.out("(Pinocchio: not timed — " + ("install pin" if path.suffix.lower() == ".urdf"
                                             else "Pinocchio reads URDF; this model is not one") + ")")
    return 0


def _pinocchio_times(path: Path, args, ui):
    """[aba, rnea, crba] µs per Python call on the same URDF (random states; not compared, only timed)."""
    if path.suffix.lower() != ".urdf":
        return None
    try:
        import pinocchio as pin
    except ImportError:
        return None
    import timeit

    import numpy as np

    try:
        model = (pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer()) if args.floating_base
                 else pin.buildModelFromUrdf(str(path)))
    except Exception as e:  # Pinocchio refuses a file we accept: say so, time ours anyway
        ui.warn(f"Pinocchio could not load {path}: {e}")
        return None
    data = model.createData()
    q = pin.randomConfiguration(model, -np.ones(model.nq), np.ones(model.nq))
    v, tau = np.random.default_rng(1).standard_normal((2, model.nv))

    def best(fn):
        return min(timeit.repeat(fn, number=args.calls, repeat=5)) / args.calls * 1e6
    return [best(lambda: pin.aba(model, data, q, v, tau)), best(lambda: pin.rnea(model, data, q, v, tau)),
            best(lambda: pin.crba(model, data, q))]


def cmd_sweep(args, ui) -> int:
    """Roll out every case of a cases file (a table or a dispersion spec) in this process, on a local Dask
    cluster (--workers) or on a running one (--scheduler), into a Zarr store (--out) that a rerun resumes."""
    from .progress import listening
    from .sweeps import SweepError, sweep, sweep_summary

    if args.workers is not None and args.workers < 1:
        raise UsageError(f"--workers must be positive, got {args.workers}")
    if args.chunk_size is not None and args.chunk_size < 1:
        raise UsageError(f"--chunk-size must be positive, got {args.chunk_size}")
    outputs = tuple(x.strip() for x in args.outputs.split(","))
    if not outputs or not set(outputs) <= {"q", "u"} or len(set(outputs)) != len(outputs):
        raise UsageError(f"--outputs {args.outputs!r}: give q,u or q or u")
    t0 = time.perf_counter()
    path, model, _ = _load(args, ui)
    client = cluster = None
    if args.scheduler or args.workers:
        try:
            import logging

            from distributed import Client, LocalCluster
        except ImportError:
            raise SweepError("--scheduler and --workers run the sweep on Dask, which is not installed: "
                             "pip install \"symgen[sweep]\" (or drop the option to run in this process)") from None
        if args.scheduler:
            ui.progress(f"sweep     connecting to the Dask scheduler at {args.scheduler}")
            try:
                client = Client(args.scheduler, timeout="20s")
            except OSError as e:
                raise SweepError(f"cannot reach the Dask scheduler at {args.scheduler}: {e}; check the address "
                                 "(e.g. tcp://host:8786) and that dask-scheduler runs there") from None
        else:
            cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                                   dashboard_address=None, silence_logs=logging.ERROR)
            client = Client(cluster)
    state = {"bar": None}

    def on_event(e):
        if e["event"] == "start":
            where = (f"on {e['workers']} Dask worker thread{'s' if e['workers'] != 1 else ''}" if client is not None
                     else "in this process")
            resumed = f"; {e['skipped']} already done in the store, resuming" if e["skipped"] else ""
            ui.progress(f"sweep     {_plural(e['cases'], 'case')} in {_plural(e['chunks'], 'chunk')} of "
                        f"{e['chunk_size']} {where}{resumed}")
            state["bar"] = ui._bar("sweep", e["todo"], "chunks") if e["todo"] > 1 else None
        elif state["bar"] is not None:
            state["bar"].update(1)
        else:
            lo, hi = e["rows"]
            ui.progress(f"  chunk {e['done']}/{e['todo']}: cases {lo}..{hi - 1} in {e['seconds']:.2f} s on "
                        f"{e['worker']}" + (f", {hi - lo - e['n_ok']} failed" if e["n_ok"] < hi - lo else ""))

    try:
        with listening(ui.report()):
            res = sweep(model, args.cases, args.dt, args.n_steps, every=args.every, client=client, store=args.out,
                        method=args.method, chunk_size=args.chunk_size, outputs=outputs,
                        overwrite=args.overwrite, progress=on_event)
    except KeyboardInterrupt:
        ui.warn(f"interrupted: the chunks finished are in {args.out}; rerun the same command to resume")
        raise
    finally:
        if state["bar"] is not None:
            state["bar"].close()
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()
    info = res["info"]
    n, n_ok = len(res["case"]), int(res["ok"].sum())
    ui.out(f"swept {_plural(n, 'case')} of {info['model_name']} ({info['n_steps']} steps of {info['dt']:g} s, "
           f"{info['method']}, {len(res['t'])} rows each): {n_ok} ok" + (f", {n - n_ok} failed" if n_ok < n else "")
           + f"; {len(info['computed'])} chunks computed, {len(info['skipped'])} skipped -> {args.out} in "
           f"{time.perf_counter() - t0:.2f} s" + (f" ({info['cases_per_s']:.0f} cases/s)" if info["computed"] else ""))
    if args.summary and n_ok:
        for name in info["outputs"]:
            s = sweep_summary(res, output=name)
            ui.out(f"{name} at t = {s['t']:g} over {s['n_ok']} cases: " + ", ".join(
                f"{p}%" for p in s["percentiles"]))
            for j, k in enumerate(s["index"]):
                ui.out(f"  {name}[{k}]  " + "  ".join(f"{v:12.6g}" for v in s["values"][:, j]))
    return 0


#: what ``python -m symgen docs`` needs (the ``docs`` extra): import name -> distribution name
DOCS_REQUIRES = {"sphinx": "sphinx", "myst_nb": "myst-nb", "furo": "furo", "sphinx-mathjax-offline":
                 "sphinx-mathjax-offline", "interrogate": "interrogate", "ipykernel": "ipykernel",
                 "matplotlib": "matplotlib"}


def docs_source() -> Path:
    """The Sphinx source folder of a source checkout: ``docs/`` next to the ``symgen`` package."""
    return Path(__file__).resolve().parents[1] / "docs"


def cmd_docs(args, ui) -> int:
    """``python -m symgen docs``: build the documentation site with Sphinx, fresh and with warnings as errors."""
    import importlib.util
    import os

    missing = [dist for mod, dist in DOCS_REQUIRES.items() if importlib.util.find_spec(mod) is None]
    if missing:
        return _fail(f"the docs extra is not installed (missing: {', '.join(missing)}): install symgen[docs], "
                     'e.g. pip install -e ".[docs]" from the checkout', 1)
    src = Path(args.source) if args.source else docs_source()
    if not (src / "conf.py").is_file():
        raise UsageError(f"no Sphinx sources at {src} (no conf.py): 'symgen docs' builds the docs/ folder of a "
                         "source checkout; pass --source DIR")
    out = Path(args.out) if args.out else src / "_build" / "html"
    # the notebooks' kernels inherit this: their figures become PNG outputs on the pages, drawn off screen
    os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    from sphinx.cmd.build import build_main

    # -E -a: a fresh build, so every warning of every page is reported; -W --keep-going: warnings are errors,
    # all of them listed
    argv = ["-b", "html", "-E", "-a", "-W", "--keep-going", "-d", str(out / ".doctrees"), str(src), str(out)]
    if ui.quiet:
        argv.insert(0, "-q")
    ui.progress(f"docs: building {src} -> {out} (Sphinx; the notebooks are executed)")
    t0 = time.perf_counter()
    status = build_main(argv)
    if status:
        raise OSError(f"the documentation build failed (warnings are errors; see the messages above) after "
                      f"{time.perf_counter() - t0:.1f} s")
    index = out / "index.html"
    ui.out(f"docs: {index} ({time.perf_counter() - t0:.1f} s)")
    if args.open:
        import webbrowser

        webbrowser.open(index.resolve().as_uri())
    return 0


EXIT_STATUS = "exit status: 0 success, 1 model or build error, 2 usage error."


def _add_output_flags(p) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument("-q", "--quiet", action="store_true", help="print only results, warnings and errors")
    g.add_argument("-v", "--verbose", action="store_true",
                   help="print every step (each hinge spec derived, emitted, rendered, compiled) with its time "
                        "and cache hit, and the traceback of an internal error")


def _add_model_options(p) -> None:
    p.add_argument("--floating-base", action="store_true",
                   help="put a FULL6DOF hinge between newtonian and the root body (URDF root link)")
    p.add_argument("--armature", action="append", metavar="HINGE=VALUE",
                   help="rotor inertia added to a hinge's D and M diagonal (Pinocchio model.armature, MuJoCo "
                        "joint/armature); VALUE or V1,V2,... per U; repeatable")
    p.add_argument("--lock", action="append", metavar="HINGE",
                   help="weld a hinge at its neutral coordinates (removes its Q and U); repeatable")
    p.add_argument("--balance-inertia", action="store_true",
                   help="replace inertias that violate the triangle inequality by isotropic ones (MuJoCo's "
                        "balanceinertia; default: keep them, with a warning)")
    p.add_argument("--accept-indefinite-inertia", action="store_true",
                   help="load a link whose inertia has a clearly negative principal moment, with a warning "
                        "(Pinocchio does; default: an error)")
    p.add_argument("--loops-from-equality", action="store_true",
                   help="MJCF: turn each connect / weld equality between two bodies into a closed-chain loop (a BALL / "
                        "LOCKED cut joint) instead of listing it as not imported")
    p.add_argument("--parameter", action="append", metavar="NAME",
                   help="keep NAME as a runtime input of the dynamics instead of a folded literal (a parametric "
                        "build): BODY.mass, BODY.com, BODY.inertia, HINGE.armature or gravity; repeatable")


def _add_form_option(p) -> None:
    p.add_argument("--form", choices=("auto", "per_kind"), default="auto",
                   help="the form of the dynamics: auto (per entry point, straight-line code or the per-kind form's C "
                        "loops over the bodies, as symgen.codegen.schedule's cost model chooses: mb.forms and "
                        "manifest.json's form_reasons say which and why) or per_kind (C loops for every model)")


def make_parser() -> argparse.ArgumentParser:
    fmt = argparse.RawDescriptionHelpFormatter
    p = argparse.ArgumentParser(
        prog="python -m symgen", formatter_class=fmt,
        description="Derive hinge kinematics symbolically, generate C99 kernels and whole-model dynamics, "
                    "compile and load them.",
        epilog="Run 'python -m symgen COMMAND --help' for a command's options.\n" + EXIT_STATUS)
    p.add_argument("--version", action="version", version=f"symgen {__import__('symgen').__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    pb = sub.add_parser("build", help="generate and compile a model (or the hinge library)", formatter_class=fmt,
                        description="Build MODEL (.yaml, .yml, .json, .urdf or MJCF .xml; default: the bundled 7-dof arm "
                                    "URDF) into OUT/<model>/: C sources, compiled module, manifest.json and an "
                                    "__init__.py, so 'import generated.<model>' works from the folder holding OUT. "
                                    "MODEL 'hinges' generates the C kernels of every hinge type into OUT/hinges/ "
                                    "with EQUATIONS.md. Each stage (load, derive, emit, render, compile, install) "
                                    "prints its time and cache hits on stderr; compiles and derivations go through "
                                    "the cache ($SYMGEN_CACHE_DIR).",
                        epilog=EXIT_STATUS)
    pb.add_argument("target", nargs="?", default=None, metavar="MODEL",
                    help="model file, or 'hinges' (default: the bundled arm7.urdf)")
    pb.add_argument("--out", default=str(DEFAULT_OUT), help="output folder (default: ./generated)")
    _add_model_options(pb)
    _add_form_option(pb)
    pb.add_argument("--derivatives", action="store_true",
                    help="also compile the derivative functions (forward_dynamics_derivatives, "
                         "inverse_dynamics_derivatives, step_derivatives) into the module; without it the package "
                         "has their C but not their machine code, and symgen.build compiles them on first use")
    _add_output_flags(pb)
    pb.set_defaults(func=cmd_build)

    pi = sub.add_parser("info", help="describe a model: bodies as a tree, hinges, frames, flexible bodies' modes and nodes, sizes, loops",
                        description="Read MODEL (no build) and print its bodies as a tree from newtonian, each with "
                                    "its hinge, Q/U slices and mass, the extra frames on each body, nQ/nU, and the "
                                    "loop constraints.", epilog=EXIT_STATUS)
    pi.add_argument("target", metavar="MODEL", help="model file (.yaml, .yml, .json, .urdf, MJCF .xml)")
    _add_model_options(pi)
    _add_output_flags(pi)
    pi.set_defaults(func=cmd_info)

    ps = sub.add_parser("show", help="print a hinge's derived equations (or its C)",
                        description="Print the derived equations of one hinge type with bound parameters "
                                    "(pretty text, or LaTeX with --latex), or its generated C with --c.",
                        epilog=EXIT_STATUS)
    ps.add_argument("hinge", help="hinge type, e.g. GIMBAL (see 'hinges')")
    ps.add_argument("--latex", action="store_true", help="print LaTeX instead of pretty text")
    ps.add_argument("--c", action="store_true",
                    help="print the generated C source instead of the equations (with --kernel: only those "
                         "kernels' functions, with their operation counts)")
    ps.add_argument("--kernel", action="append", help="only this kernel (repeatable), e.g. coord_map")
    ps.add_argument("--axis", nargs=3, type=float, metavar=("X", "Y", "Z"), help="unit axis of a one-axis hinge")
    ps.add_argument("--axes", nargs="+", metavar="X,Y,Z", help="unit axes of a multi-axis hinge, e.g. 1,0,0 0,1,0")
    ps.add_argument("--pitch", type=float, help="pitch of HELICAL / SCREW (length per radian)")
    ps.add_argument("--ij-q", nargs=4, type=float, metavar=("X", "Y", "Z", "W"),
                    help="HOOKE / PERPENDICULAR / PARALLEL: outboard orientation in the inboard frame")
    ps.add_argument("--subhinges", nargs="+", metavar="TYPE", help="CUSTOM: subhinge types, onode -> pnode")
    ps.set_defaults(func=cmd_show)

    ph = sub.add_parser("hinges", help="list the hinge types with operation counts",
                        description="List every hinge type: nQ, nU, subhinges and the operation count of each "
                                    "generated kernel.", epilog=EXIT_STATUS)
    ph.add_argument("--markdown", action="store_true", help="print the README's markdown table")
    ph.set_defaults(func=cmd_hinges)

    pn = sub.add_parser("bench", help="quick timing of forward/inverse dynamics and the mass matrix",
                        description="Build MODEL through the cache (nothing written to ./generated) and time "
                                    "forward dynamics, inverse dynamics and the mass matrix: one Python call "
                                    "(best of 5) and per state in one batched C call; for a URDF, Pinocchio's "
                                    "aba / rnea / crba Python calls beside them when Pinocchio is installed "
                                    "(timed, not compared). For careful numbers see benchmarks/.",
                        epilog=EXIT_STATUS)
    pn.add_argument("target", metavar="MODEL", help="model file (.yaml, .yml, .json, .urdf, MJCF .xml)")
    pn.add_argument("--n", type=int, default=1000, help="states in the batched call (default: 1000)")
    pn.add_argument("--calls", type=int, default=2000, help="single calls per timing round (default: 2000)")
    pn.add_argument("--no-pinocchio", action="store_true", help="do not time Pinocchio")
    _add_model_options(pn)
    _add_form_option(pn)
    _add_output_flags(pn)
    pn.set_defaults(func=cmd_bench)

    pw = sub.add_parser("sweep", help="roll out many cases (a table or a dispersion spec) into a Zarr store",
                        formatter_class=fmt,
                        description="Roll out every case of CASES (a YAML/JSON file: a table q0: [[...], ...], "
                                    "u0, T, params: {name: [...]}, or a dispersion spec n, seed, q0: {mean, std} "
                                    "or {low, high}, u0, T, params: {name: {mean, std}}; the model is built with "
                                    "the parameters the cases vary; "
                                    "it may also set dt, n_steps, every, method, chunk_size) with MODEL, in chunks "
                                    "of --chunk-size cases: in this process, on a local Dask cluster of --workers "
                                    "processes, or on a running one at --scheduler. Every chunk writes its rows of "
                                    "the Zarr store --out, then marks itself done; rerunning the same command "
                                    "resumes an interrupted sweep (chunks done are skipped). Needs zarr, and "
                                    "dask[distributed] for a cluster: pip install \"symgen[sweep]\".",
                        epilog=EXIT_STATUS)
    pw.add_argument("target", metavar="MODEL", help="model file (.yaml, .yml, .json, .urdf, MJCF .xml)")
    pw.add_argument("cases", metavar="CASES", help="cases file (.yaml, .yml, .json): a table or a dispersion spec")
    pw.add_argument("--out", required=True, help="the Zarr store the results go to (a directory, e.g. results.zarr)")
    where = pw.add_mutually_exclusive_group()
    where.add_argument("--scheduler", metavar="ADDRESS", help="run on the Dask cluster at ADDRESS (tcp://host:8786)")
    where.add_argument("--workers", type=int, metavar="N",
                       help="run on a local Dask cluster of N worker processes (default: in this process)")
    pw.add_argument("--dt", type=float, help="time step, s (default: the cases file's dt)")
    pw.add_argument("--n-steps", type=int, help="steps per case (default: the cases file's n_steps)")
    pw.add_argument("--every", type=int, help="keep every k-th step (default: the cases file's, else 1)")
    pw.add_argument("--method", choices=("rk4", "euler"), help="integrator (default: the cases file's, else rk4)")
    pw.add_argument("--chunk-size", type=int, metavar="N",
                    help="cases per chunk (one task, one Zarr chunk; default: about 8 MB of outputs, at least 4 "
                         "chunks per worker)")
    pw.add_argument("--outputs", default="q,u", metavar="LIST", help="what to keep: q,u (default), q or u")
    pw.add_argument("--overwrite", action="store_true",
                    help="start over when --out holds another sweep (default: refuse; the same sweep resumes)")
    pw.add_argument("--summary", action="store_true", help="print percentiles of the final state over the cases")
    _add_model_options(pw)
    _add_output_flags(pw)
    pw.set_defaults(func=cmd_sweep)

    pd = sub.add_parser("docs", help="build the documentation site (Sphinx) into OUT",
                        description="Build the documentation site of this source checkout (docs/: the pages, the "
                                    "API reference from the docstrings, the hinge catalogue generated from the "
                                    "registry, the example notebooks executed) into OUT, from scratch, with "
                                    "warnings as errors: a broken cross-reference, a notebook cell that raises or "
                                    "too few docstrings fail it. Needs the docs extra: pip install -e \".[docs]\".",
                        epilog=EXIT_STATUS)
    pd.add_argument("--out", default=None, help="output folder (default: docs/_build/html)")
    pd.add_argument("--open", action="store_true", help="open the built site in a web browser")
    pd.add_argument("--source", default=None, metavar="DIR", help="the Sphinx source folder (default: docs/)")
    _add_output_flags(pd)
    pd.set_defaults(func=cmd_docs)
    return p


def _usage_errors(args) -> tuple:
    """The exceptions that mean 'bad arguments' for this command: a hinge named on the command line."""
    return (ValueError, KeyError) if args.command in ("show", "hinges") else ()


def main(argv=None) -> int:
    parser = make_parser()
    args = parser.parse_args(argv)  # argparse: usage errors exit 2
    if args.command in ("bench",) and (args.n < 1 or args.calls < 1):
        parser.error("--n and --calls must be positive")
    ui = UI(getattr(args, "quiet", False), getattr(args, "verbose", False))
    from .pipeline.compile import BuildError

    try:
        return args.func(args, ui)
    except UsageError as e:
        return _fail(e, 2)
    except _usage_errors(args) as e:
        return _fail(e, 2)
    except BuildError as e:
        return _fail(f"{e}\nThe model loaded but its C did not compile: check that the C compiler works "
                     "(set CC to a C99 compiler, e.g. CC=gcc) and rerun; if it does, this is a bug in "
                     "symgen's generated C, please report it with the model file.", 1)
    except (ValueError, KeyError, OSError) as e:  # ModelError is a ValueError
        return _fail(e, 1)
    except BrokenPipeError:  # output piped into head & co.
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        print("symgen: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # a bug: say so in one paragraph, the traceback with --verbose
        if ui.verbose:
            import traceback

            traceback.print_exc()
        return _fail(f"internal error ({type(e).__name__}: {e}). This is a bug in symgen: please report it with "
                     "the command line and the model file; rerun with --verbose for the traceback.", 1)


def _fail(e, status: int) -> int:
    """Print an error as one paragraph (no blank lines, no traceback) and return the exit status."""
    text = (e.args[0] if isinstance(e, KeyError) and e.args else str(e)).strip()
    lines = [ln.rstrip() for ln in text.splitlines() if ln.strip()]
    print("symgen: error: " + "\n  ".join(lines or ["(no message)"]), file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
