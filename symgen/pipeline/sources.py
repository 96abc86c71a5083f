"""The sources stage of the build pipeline (model -> sources -> compile -> package): hinge specs and models
to C sources.

Derivation (symgen.hinges.derive), emission (symgen.codegen.kernels, symgen.codegen.emit, symgen.algorithms.soa) and rendering (symgen.codegen.render) meet here and
leave as ``(files, manifest)``: ``{file name: C text}`` plus the JSON-able description the runtime loads a
module with.  Each kind of source has its own disk cache, keyed by what produced it:

* a hinge spec's kernels (:func:`hinge_sources`): ``<cache>/emit/<key>.json``, key = the derivation key plus
  a hash of kernels.py, emit.py, render.py, printer.py and the templates;
* a model's translation unit and manifest (:func:`cached_model_sources`): ``<cache>/model-sources/<key>.json``,
  key = the model's content, its hinges' bound specs, every symgen source and template, the sympy version and
  symgen.algorithms.soa's form limits.

The compile stage (symgen.pipeline.compile) turns the files into a module; :func:`compile_hinge`,
:func:`compile_hinges` and :func:`build_hinge_library` run both stages for hinge kernels, symgen.pipeline.package does
so for models.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from .. import progress
from .compile import build_module, ext_suffix, stats
from ..paths import cache_dir, package_dir

# --------------------------------------------------------------------------------------------------
# hinge kernels
# --------------------------------------------------------------------------------------------------

def _render_fingerprint(template_path=None) -> str:
    """Hash of what turns equations into C: kernels.py (the hinge kernels' printer), emit.py, render.py, printer.py
    and the templates."""
    from ..paths import templates_dir

    here = package_dir() / "codegen"
    tdir = Path(template_path) if template_path else templates_dir()
    h = hashlib.sha256()
    for f in [*(here / m for m in ("kernels.py", "emit.py", "render.py", "printer.py")),
              *sorted(f for f in tdir.rglob("*") if f.is_file())]:
        h.update(f.name.encode() + f.read_bytes())
    return h.hexdigest()[:16]


def hinge_sources(h, slug: str | None = None, template_path=None):
    """(files, manifest) of one hinge spec: ``{slug}.c``, ``{slug}.h`` and the kernel table.

    Cached on disk next to the derivations (key: derivation key + emit/render/template hash), so a warm
    build does no sympy work."""
    path = _hinge_sources_path(h, slug, template_path)

    def make():
        from ..codegen import kernels as kernel_c, render

        s = slug or kernel_c.spec_slug(h)
        header, source, kernels = render.render_hinge(h, s, template_path=template_path)
        manifest = {"slug": s, "label": h.spec.label(), "nq": h.nq, "nu": h.nu,
                    "kernels": {k.name: {"c_name": k.c_name, "inputs": list(k.inputs), "out_shape": list(k.out_shape),
                                         "flops": k.flops, "status": k.returns_status} for k in kernels
                                if not k.internal},
                    "structure": kernel_c.kernel_structure(h)}
        return {f"{s}.c": source, f"{s}.h": header}, manifest

    return _json_cached(path, make, "emit", h.spec.label())


def _hinge_sources_path(h, slug: str | None = None, template_path=None) -> Path:
    """Where :func:`hinge_sources` caches a hinge spec's sources."""
    from ..hinges.derive import derivation_key

    # the label too: it is printed in the C (as the user spelled the parameters: PIN() and PIN(axis=(0, 0, 1)) have
    # one derivation but two labels), so that the same model always gets the same C and module hash
    key = hashlib.sha256(f"{derivation_key(h.spec)}|{slug}|{h.spec.label()}|{_render_fingerprint(template_path)}"
                         .encode()).hexdigest()[:24]
    return cache_dir() / "emit" / f"{key}.json"


def _derive_one(hinge_type: str, kwargs: dict) -> None:
    """A worker of :func:`_derive_in_parallel`: one hinge spec derived and emitted into the cache."""
    from ..hinges.derive import hinge

    progress._REPORT.set(None)            # the parent's listener is not this process's
    hinge_sources(hinge(hinge_type, **kwargs))


def _derive_in_parallel(model) -> None:
    """Derive and emit the model's hinge specs that are not cached yet in worker processes, one per core (sympy
    work: rodent.xml's 38 specs take 29 s one after the other), so that :func:`_hinge_layout` then reads them all
    from the cache.  Only on a fork platform, with two specs or more to do, and when this process runs no other
    thread (a notebook's kernel does: forking it is unsafe, and it derives one spec at a time as before).  A
    worker's failure is not reported here: the spec is derived again in this process, which raises its error."""
    import multiprocessing
    import os
    import threading
    from concurrent.futures import ProcessPoolExecutor

    from ..hinges.derive import hinge

    cores = os.cpu_count() or 1
    if cores < 2 or threading.active_count() > 1 or "fork" not in multiprocessing.get_all_start_methods():
        return
    todo, seen = [], set()
    for b in model.bodies:
        kwargs = b.hinge_kwargs()
        h = hinge(b.hinge_type, **kwargs)
        if h.spec.key() in seen:
            continue
        seen.add(h.spec.key())
        if not _hinge_sources_path(h).exists():
            todo.append((h.nu, b.hinge_type, kwargs))
    if len(todo) < 2:
        return
    todo.sort(key=lambda t: -t[0])        # the multi-U specs (the slowest to derive) first
    workers = min(cores, len(todo))
    with progress.step("derive", f"{len(todo)} hinge specs in {workers} processes"), \
            ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork")) as ex:
        for fut in [ex.submit(_derive_one, t, kw) for _, t, kw in todo]:
            try:
                fut.result()
            except Exception:      # noqa: BLE001  (derived again, and reported, by the caller)
                pass


def kernel_c(h, kernel: str) -> tuple:
    """``(C text, operation count)`` of one generated kernel of a hinge spec: the comment line above it and
    the function definition, as in ``<slug>.c``."""
    files, manifest = hinge_sources(h)
    info = manifest["kernels"].get(kernel)
    if info is None:
        raise ValueError(f"{h.spec.label()}: no generated kernel {kernel!r} (has: {', '.join(manifest['kernels'])})")
    lines = files[f"{manifest['slug']}.c"].splitlines()
    start = next(i for i, ln in enumerate(lines) if f" {info['c_name']}(" in ln and not ln.endswith(";"))
    start -= lines[start - 1].startswith("/*")
    stop = lines.index("}", start)
    return "\n".join(lines[start:stop + 1]), info["flops"]


def _json_cached(path: Path, make, stage: str, label: str):
    """``(files, manifest)`` from a JSON cache file, or ``make()`` written there atomically (reported to
    symgen.progress as one ``stage`` step, a cache hit or not)."""
    with progress.step(stage, label) as step:
        if path.exists():
            try:
                data = json.loads(path.read_text())
                step.hit()
                return data["files"], data["manifest"]
            except (OSError, ValueError, KeyError):
                pass
        files, manifest = make()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
            with os.fdopen(fd, "w") as fh:
                json.dump({"files": files, "manifest": manifest}, fh)
            os.replace(tmp, path)
        except OSError:
            pass  # a read-only cache is not an error
        return files, manifest


def compile_hinge(h, template_path=None):
    """Generate, compile (through the cache) and load the C kernels of one hinge spec.

    Returns a :class:`symgen.runtime.HingeKernels` with numpy methods ``transform(q)``, ``coord_map(q)``,
    ``oframe_coord_map(q)``, ``qdot_map(q)``, ``coord_map_dot(q, u)``, ``bias(q, u)``, ``pose_gradient(q)``,
    ``ortho_complement(q)``, ``atbi(q, P)`` and ``sanitize(q)`` where the hinge has one.
    """
    from ..runtime import HingeKernels

    files, manifest = hinge_sources(h, template_path=template_path)
    mod, name, path = build_module(manifest["slug"], files, f"hinge {h.spec.label()}")
    return HingeKernels(mod, manifest, module_name=name, path=path)


def compile_hinges(hinges, base: str = "kernels") -> list:
    """Compile several hinge specs into one module (one compiler run); returns their HingeKernels in order."""
    from ..runtime import HingeKernels

    files, manifests = {}, []
    for h in hinges:
        f, m = hinge_sources(h)
        files.update(f)
        manifests.append(m)
    mod, name, path = build_module(base, files, f"{len(manifests)} hinge specs")
    return [HingeKernels(mod, m, module_name=name, path=path) for m in manifests]


def build_hinge_library(out: Path, progress=print) -> dict:
    """Generate every hinge type's kernels into ``out`` (``<slug>.c``, ``<slug>.h``), compile them into one
    cffi module (through the cache), copy it next to them and write ``manifest.json``.  Returns the manifest."""
    from ..hinges.derive import hinge
    from ..hinges import HINGE_TYPES

    out = Path(out)
    t0 = time.perf_counter()
    files, manifests = {}, {}
    for i, name in enumerate(HINGE_TYPES, 1):
        t = time.perf_counter()
        f, m = hinge_sources(hinge(name))
        files.update(f)
        manifests[name] = m
        progress(f"[{i:2d}/{len(HINGE_TYPES)}] {name:<14} generated {sum(len(v) for v in f.values()) / 1024:6.1f} kB "
                 f"in {time.perf_counter() - t:5.2f} s")
    t = time.perf_counter()
    compiles = stats["compiles"]
    mod, modname, so = build_module("hinges", files, "hinge library")
    progress(f"compiled {modname} in {time.perf_counter() - t:.2f} s"
             + (" (cache hit)" if stats["compiles"] == compiles else ""))
    manifest = {"module": modname, "so": so.name, "hinges": manifests}
    staging = Path(tempfile.mkdtemp(prefix=".hinges.", dir=out.parent if out.parent.exists() else None))
    try:
        for fname, text in files.items():
            (staging / fname).write_text(text)
        shutil.copy2(so, staging / so.name)
        (staging / "manifest.json").write_text(json.dumps(manifest, indent=1))
        out.mkdir(parents=True, exist_ok=True)
        for old in out.glob("hinges_*" + ext_suffix()):
            if old.name != so.name:
                old.unlink()
        for f in staging.iterdir():
            os.replace(f, out / f.name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    progress(f"wrote {out} ({len(HINGE_TYPES)} hinge types, {len(files)} files) in {time.perf_counter() - t0:.2f} s")
    return manifest


# --------------------------------------------------------------------------------------------------
# models
# --------------------------------------------------------------------------------------------------

def model_identifier(name: str) -> str:
    """A model name usable as a C prefix and a Python package name."""
    import re

    ident = re.sub(r"\W", "_", name).strip("_") or "model"
    return ident if not ident[0].isdigit() else f"m_{ident}"


def model_programs(model) -> dict:
    """The typed programs of a model's straight-line entry points (:func:`symgen.codegen.emit.traced_programs`: the
    IR the C printer prints; the tests print it a second way), with the model's hinge layout (``layout``: Q and U
    of each body) as :func:`model_sources` computes it, and its looped programs (``looped``)."""
    from ..codegen.emit import traced_programs

    _, slugs, layout, _, _ = _hinge_layout(model)
    return {**traced_programs(model, layout, slugs, name=model_identifier(model.name)), "hinge_layout": layout}


def _hinge_layout(model):
    """(kernel files, slugs, layout, kernel metadata by slug, Hinge by body) of a model's hinges: each spec derived
    and emitted once; layout: Q and U of each body (``q``, ``u``, ``nq``, ``nu``, the subhinges, the kernel
    structure, and a flexible body's ``modes`` after its hinge's)."""
    from ..hinges.derive import hinge

    files, slugs, layout, specs, objects, kernel_sets = {}, {}, {}, {}, {}, {}
    qo = uo = 0
    _derive_in_parallel(model)
    with progress.bar("derive", len(model.bodies), "hinge kernels") as bar:
        for b in model.bodies:
            h = objects[b.name] = hinge(b.hinge_type, **b.hinge_kwargs())
            if h.spec.key() not in kernel_sets:
                kernel_sets[h.spec.key()] = hinge_sources(h)
            f, m = kernel_sets[h.spec.key()]
            files.update(f)
            slugs[b.name] = m["slug"]
            specs[m["slug"]] = m
            layout[b.name] = {"q": (qo, qo + h.nq), "u": (uo, uo + h.nu), "nq": h.nq, "nu": h.nu,
                              "subhinges": list(h.subhinge_types), "structure": m["structure"],
                              "has_sanitize": h.has_sanitize}
            qo, uo = qo + h.nq, uo + h.nu
            if b.n_modes:                          # a flexible body's modal coordinates follow its hinge's
                layout[b.name]["modes"] = {"n": b.n_modes, "q": (qo, qo + b.n_modes), "u": (uo, uo + b.n_modes)}
                qo, uo = qo + b.n_modes, uo + b.n_modes
            bar.update(1)
    return files, slugs, layout, specs, objects


def model_sources(model, form: str = "auto", derivatives: bool = False):
    """(files, manifest) of a model: its translation unit plus the kernels of every hinge spec it uses.
    ``form``: ``"auto"`` (each dynamics entry point in the form symgen.codegen.schedule's cost model chooses:
    straight-line or per-kind) or ``"per_kind"`` (the per-kind form for all); ``manifest["forms"]`` says which,
    ``manifest["form_reasons"]`` why.
    ``derivatives``: the translation unit also holds the derivative functions (symgen.codegen.derivatives)."""
    from ..codegen.lanes import lane_width
    from ..codegen.render import render_model

    name = model_identifier(model.name)
    files, slugs, layout, specs, objects = _hinge_layout(model)
    hinges, modes = {}, {}
    for b in model.bodies:
        h, (qo, q1), (uo, u1) = objects[b.name], layout[b.name]["q"], layout[b.name]["u"]
        hinges[b.hinge_name] = {"body": b.name, "type": b.hinge_type, "slug": slugs[b.name],
                                "label": h.spec.label(), "q": [qo, q1], "u": [uo, u1],
                                "subhinges": list(h.subhinge_types), "neutral_q": h.spec.neutral_q(),
                                "default_q": list(b.q0) or list(h.spec.neutral_q()),
                                "armature": list(b.armature) or [0.0] * h.nu}
        if b.default_transform is not None:
            hinges[b.hinge_name]["default_transform"] = b.default_transform.matrix.tolist()
        if b.n_modes:
            (mq, _), (mu, _) = layout[b.name]["modes"]["q"], layout[b.name]["modes"]["u"]
            for k, md in enumerate(b.flex.modes):
                modes[f"{b.name}.mode{k}"] = {"body": b.name, "index": k, "q": [mq + k, mq + k + 1],
                                              "u": [mu + k, mu + k + 1], "frequency": md.frequency,
                                              "damping": md.damping, "modal_mass": b.flex.modal_mass(k),
                                              "stiffness": b.flex.stiffness(k)}
    loops, loop_manifest = _loop_specs(model, files, specs)
    header, source, parts, forms, part_opt, form_reasons = render_model(model, layout, slugs, name, loops=loops, form=form,
                                                          derivatives=derivatives)
    files[f"{name}.h"], files[f"{name}.c"] = header, source
    frames = {"newtonian": {"body": -1, "R": np.eye(3).tolist(), "p": [0.0, 0.0, 0.0]}}
    index = {b.name: i for i, b in enumerate(model.bodies)}
    for b in model.bodies:
        frames[b.name] = {"body": index[b.name], "R": np.eye(3).tolist(), "p": [0.0, 0.0, 0.0]}
    for f in model.frames:
        frames[f.name] = {"body": index.get(f.body, -1), "R": [list(r) for r in f.pose.R], "p": list(f.pose.xyz)}
    for b in model.bodies:                 # a flexible body's nodes (undeformed place; they move with the modes)
        for nd in (b.flex.nodes if b.n_modes else ()):
            frames[nd.name] = {"body": index[b.name], "R": np.eye(3).tolist(), "p": list(nd.pos), "node": True}
    ends = lambda key: max([0] + [L[key][1] for L in layout.values()]  # noqa: E731
                           + [L["modes"][key][1] for L in layout.values() if "modes" in L])
    manifest = {"name": name, "model": model.name, "source": str(model.source), "nq": ends("q"), "nu": ends("u"),
                "nb": len(model.bodies), "gravity": list(model.gravity),
                "bodies": [{"name": b.name, "parent": b.parent, "hinge": b.hinge_name, "mass": b.mass,
                            "com": list(b.com), "inertia": [list(r) for r in b.inertia], **_flex_manifest(b)}
                           for b in model.bodies],
                "frames": frames, "hinges": hinges, "hinge_specs": specs, "modes": modes,
                "loops": loop_manifest, "parts": parts, "part_opt": {str(k): v for k, v in part_opt.items()},
                "forms": forms, "form_reasons": form_reasons, "lane_width": lane_width(),
                "parameters": _parameters_manifest(model, layout),
                "warnings": list(model.warnings)}
    if model.mujoco is not None:
        manifest["mujoco"] = dict(model.mujoco)
    return files, manifest


def _flex_manifest(b) -> dict:
    """A flexible body's modes and nodes in the manifest (none for a rigid body): what the runtime's node frames
    and ``symgen info`` read.  ``shape``: per node, its translation per unit of each mode (3 x n_modes)."""
    if not b.n_modes:
        return {}
    return {"modes": b.n_modes, "nodes": [
        {"name": n.name, "pos": list(n.pos), "mass": n.mass,
         "shape": [[md.shape[i][r] for md in b.flex.modes] for r in range(3)]} for i, n in enumerate(b.flex.nodes)]}


def _parameters_manifest(model, layout) -> dict:
    """A parametric build's parameter names and theta blocks (symgen.model.parameters), for the runtime."""
    from ..model.parameters import resolve

    return {"names": list(dict.fromkeys(model.parameters)),
            "blocks": resolve(model, [layout[b.name]["nu"] for b in model.bodies])}


def _loop_specs(model, files, hinge_specs):
    """Per loop constraint: what symgen.algorithms.loops traces (cut hinge spec, node poses on their bodies turned by
    the hinge's i2onode / j2pnode parameters, kernel structure) and its manifest entry; the cut hinge's
    kernels join ``files``."""
    from ..hinges.derive import hinge
    from ..model import Pose
    from ..model.load import place_nodes

    frame_of = {b.name: (b.name, Pose()) for b in model.bodies}
    frame_of["newtonian"] = ("newtonian", Pose())          # a loop node on the ground (no body: -1 below)
    frame_of.update({f.name: (f.body, f.pose) for f in model.frames})
    specs, manifest = [], []
    for lc in model.loops:
        h = hinge(lc.hinge_type, **lc.hinge_kwargs())
        f, m = hinge_sources(h)
        files.update(f)
        hinge_specs[m["slug"]] = m
        (A, S), (B, T) = frame_of[lc.source], frame_of[lc.target]
        S, T = place_nodes(S, T, h.spec.params)
        st = m["structure"]
        specs.append({"name": lc.name, "source_body": A, "target_body": B,
                      "AS_R": [float(x) for x in np.asarray(S.R, float).ravel()], "AS_l": [float(x) for x in S.xyz],
                      "BT_R": [float(x) for x in np.asarray(T.R, float).ravel()], "BT_l": [float(x) for x in T.xyz],
                      "slug": m["slug"], "nq": h.nq, "nu": h.nu, "neutral_q": [float(x) for x in h.spec.neutral_q()],
                      "has_sanitize": h.has_sanitize, "X_const": st["transform"], "H_const": st["coord_map"],
                      "Hd_const": st["coord_map_dot"], "OC_const": st["ortho_complement"]})
        manifest.append({"name": lc.name, "source": lc.source, "target": lc.target, "hinge": lc.hinge_type,
                         "hinge_params": lc.hinge_kwargs(), "slug": m["slug"], "label": h.spec.label(),
                         "source_body": A, "target_body": B, "nq": h.nq, "nu": h.nu, "n_res": 6 - h.nu,
                         "neutral_q": [float(x) for x in h.spec.neutral_q()],
                         "source_pose": specs[-1]["AS_R"] + specs[-1]["AS_l"],
                         "target_pose": specs[-1]["BT_R"] + specs[-1]["BT_l"]})
    return specs, manifest


def _package_fingerprint() -> str:
    """Hash of every symgen source and template plus the sympy version (read without importing sympy)."""
    from importlib import metadata

    from ..paths import templates_dir

    here = package_dir()
    h = hashlib.sha256(metadata.version("sympy").encode())
    for f in sorted(here.rglob("*.py")) + sorted(f for f in templates_dir().rglob("*") if f.is_file()):
        h.update(str(f.relative_to(here)).encode() + f.read_bytes())
    return h.hexdigest()[:16]


def cached_model_sources(model, form: str = "auto", derivatives: bool = False):
    """:func:`model_sources` through a disk cache keyed by the model's content and the package sources,
    so a warm build of an unchanged model does no sympy or jinja2 work.  The key includes each hinge's bound
    spec (with its subhinge types' fingerprints), so a hinge type registered at run time is keyed by its
    definition, not only its name."""
    import dataclasses

    from ..algorithms import soa
    from ..codegen import schedule
    from ..codegen.lanes import lane_width
    from ..hinges import bind

    specs = [bind(b.hinge_type, **b.hinge_kwargs()).key() for b in model.bodies]
    specs += [bind(lc.hinge_type, **lc.hinge_kwargs()).key() for lc in model.loops]
    text = json.dumps([dataclasses.asdict(model), specs], sort_keys=True, default=str)
    limits = (f"|{schedule.CRBA_UNROLL_LIMIT}|{schedule.CRBA_LOOPED_FROM}|{schedule.STRAIGHT_LINE_LIMIT}"  # forms
              f"|{soa.SPLIT_MIN_LINES}|{soa.LANE_SPLIT_MIN_LINES}|{soa.POSES_STRAIGHT_LIMIT}|{soa.JAC_STEPS_LIMIT}"
              f"|S{soa.SEGMENT_LINES}|{soa.LANE_SEGMENT_LINES}|W{lane_width()}"            # the segments, the lane width printed into the C
              f"|L{schedule.FD_DERIVATIVES_LTL_FROM}")                                     # the FD derivatives' form
    key = hashlib.sha256((text + _package_fingerprint() + limits + f"|{form}|{derivatives}").encode()).hexdigest()[:24]
    return _json_cached(cache_dir() / "model-sources" / f"{key}.json", lambda: model_sources(model, form, derivatives),
                        "sources", f"model {model.name}" + ("" if form == "auto" else f" ({form} form)")
                        + (" with derivatives" if derivatives else ""))
