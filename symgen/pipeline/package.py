"""The last stage of the build pipeline (model -> sources -> compile -> package): a model's sources and
module to a loaded model and, optionally, an importable package on disk.

:func:`build_model` takes the model's ``(files, manifest)`` from symgen.pipeline.sources, the module from
symgen.pipeline.compile, loads it as a :class:`symgen.runtime.MultibodyModel`, names the singular hinges and, with
``out``, installs ``out/<name>/`` (sources, module, manifest.json, __init__.py) atomically.  :func:`build`
adds the first step, reading the model file (symgen.model); it is the function behind ``symgen.build``.
This stage has no cache of its own: its inputs come from the two cached stages.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from ..abi.layout import ALL_DERIVATIVE_PARTS
from ..diagnostics import (DefaultTransformWarning, Diagnostic, IllConditionedWarning, SingularHingeWarning, collecting,
                           emit, grouped)
from ..progress import step
from .compile import BuildError, opt_flags, build_extension, build_module, extension_path, module_key, stats
from .sources import cached_model_sources
from ..paths import package_dir


def _fastcall_build():
    """``(source, include dirs, key)`` of the runtime's extension, as :func:`build_extension` takes them."""
    import sysconfig

    import numpy

    return ((package_dir() / "runtime" / "fastcall.c").read_text(),
            [sysconfig.get_paths()["include"], numpy.get_include()], ("numpy", numpy.__version__))


def fastcall_cached() -> bool:
    """Whether the compile cache holds the runtime's extension for this platform."""
    source, include_dirs, key = _fastcall_build()
    return extension_path("sg_fastcall", source, include_dirs, key).exists()


def fastcall_module(say=lambda s: None):
    """The runtime's one-state extension (symgen/runtime/fastcall.c), compiled on first use into the
    compile cache (then a cache hit); None, with a note, where it cannot be built (the runtime's Python
    paths serve the calls)."""
    source, include_dirs, key = _fastcall_build()
    try:
        mod, _, _ = build_extension("sg_fastcall", source, "symgen runtime fastcall.c", include_dirs=include_dirs,
                                    key=key)
    except BuildError as e:
        say(f"note      one-state calls take the Python path: {e}")
        return None
    return mod


def _fastcall_in_background():
    """Start compiling the runtime's extension (:func:`fastcall_module`) in a process of its own when the cache
    lacks it, on the core that the generation of a model's sources leaves idle (arm7's cold build: 0.3 s
    sooner); returns ``finish(say)``: the module, once that process is done (:func:`fastcall_module` again: a
    cache hit, or its own compile and notes if the other process failed).  A process, not a thread: the
    generation forks its derivation workers, which it does only with no other thread running."""
    import subprocess
    import sys

    for done in [p for p in _BACKGROUND if p.poll() is not None]:       # those of builds that failed meanwhile
        _BACKGROUND.remove(done)
    proc = None
    if not fastcall_cached():
        proc = subprocess.Popen([sys.executable, "-c", "from symgen.pipeline.package import fastcall_module; "
                                 "fastcall_module()"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, cwd=str(package_dir().parent))
        _BACKGROUND.append(proc)

    def finish(say):
        if proc is not None:
            proc.wait()
            _BACKGROUND.remove(proc)
        return fastcall_module(say)
    return finish


#: the extension's compiles started by :func:`_fastcall_in_background` and not waited for yet (a build that
#: raised leaves its own running: it finishes into the cache)
_BACKGROUND: list = []


def _compile_options(manifest: dict, derivatives: bool):
    """(flags, parts, part flags) of a model's module: without ``derivatives`` the derivative parts are left out and
    the module is compiled with -DSG_NO_DERIVATIVES (their functions return -2: compiled on first use).  A part
    the manifest caps (``part_opt``, symgen.codegen.emit: the analytic ID derivatives, as fast at -O2 and compiled
    in half the time) takes that level where the module's is -O3."""
    parts = manifest.get("parts")
    flags = opt_flags()
    if not derivatives:
        flags, parts = flags + ("-DSG_NO_DERIVATIVES",), [k for k in parts if k not in ALL_DERIVATIVE_PARTS] if parts else parts
    cap = {int(k): (f"-O{v}",) for k, v in (manifest.get("part_opt") or {}).items()} if "-O3" in flags else {}
    return flags, parts, {k: v for k, v in cap.items() if k in (parts or ())}


def module_of_sources(files: dict, manifest: dict, label: str, derivatives: bool = False):
    """``(module, manifest)`` of a model's sources: compiled through symgen.pipeline.compile's cache (nothing when
    this platform built them before) and imported; the manifest gains the module's name and file, and
    ``derivatives``: whether the derivative functions are compiled in (else the model compiles a second
    module with them on the first derivative call).  What :func:`build_model` and a sweep's workers
    (symgen.sweeps) run; needs neither sympy nor jinja2."""
    name = manifest["name"]
    flags, parts, part_flags = _compile_options(manifest, derivatives)
    mod, modname, so = build_module(name, files, label, flags=flags, compile_only=[f"{name}.c"], parts=parts,
                                    part_flags=part_flags)
    return mod, dict(manifest, module=modname, so=so.name, derivatives=bool(derivatives)), so


def module_name_of(files: dict, manifest: dict, derivatives: bool = False) -> str:
    """The module name :func:`module_of_sources` gives these sources (the compile cache's key)."""
    name = manifest["name"]
    flags, parts, part_flags = _compile_options(manifest, derivatives)
    return module_key(name, files, flags=flags, compile_only=[f"{name}.c"], parts=parts, part_flags=part_flags)


def build_model(model, out=None, progress=None, form: str = "auto", stages=None, derivatives: bool = False):
    """Generate, compile (through the cache) and load a model.  With ``out``, also write
    ``out/<name>/`` as an importable package (sources, module, manifest.json, __init__.py).  ``form``: which
    form the dynamics take (:func:`symgen.build`).  ``derivatives``: compile the derivative functions into the
    module now (else the returned model compiles them on its first derivative call).  ``progress(text)`` receives one line per stage;
    ``stages(stage, **facts)`` the same as data, for callers that print their own lines (the CLI): ``generate``
    (files, kb, seconds), ``compile`` (module, seconds, hit), ``warning`` (text, category: one per group of the
    build's own warnings, :func:`symgen.diagnostics.grouped`), ``install`` (target, seconds).

    The build's own warnings (a default_transform out of reach, singular and ill-conditioned hinges; looked for
    at every build, a cache hit included) join ``mb.warnings``, one string each, and are warned as Python
    warnings, grouped (:mod:`symgen.diagnostics`), once the outputs are complete: a warning made an error
    (``warnings.simplefilter("error")``) leaves the caches and ``out/<name>/`` whole."""
    from ..runtime import MultibodyModel
    from ..algorithms.soa import FORMS
    from ..runtime.checks import (ILL_ISSUE, SINGULAR_ISSUE, ill_conditioned_hinges, ill_conditioned_message,
                                  singular_hinges, singular_message)

    if form not in FORMS:
        raise ValueError(f"symgen.build: form must be one of {', '.join(map(repr, FORMS))}, not {form!r}")
    say = progress or (lambda s: None)

    def done(stage, line, **facts):
        say(line)
        if stages is not None:
            stages(stage, **facts)

    # the runtime's extension (compiled once per cache) compiles while this process generates the model's sources
    fast_job = _fastcall_in_background()
    t = time.perf_counter()
    files, manifest = cached_model_sources(model, form, derivatives)
    kb, seconds = sum(len(v) for v in files.values()) / 1024, time.perf_counter() - t
    done("generate", f"generate  {len(files)} files, {kb:.1f} kB of C in {seconds:.2f} s",
         files=len(files), kb=kb, seconds=seconds)
    t = time.perf_counter()
    compiles = stats["compiles"]
    label = f"model {model.name} ({model.source})"
    mod, manifest, so = module_of_sources(files, manifest, label, derivatives)
    hit, seconds = stats["compiles"] == compiles, time.perf_counter() - t
    done("compile", f"compile   {manifest['module']} in {seconds:.2f} s" + (" (cache hit)" if hit else ""),
         module=manifest["module"], seconds=seconds, hit=hit)
    loaded = MultibodyModel(mod, manifest)
    found = _default_transforms(loaded, manifest)
    singular = singular_hinges(loaded)
    manifest["singular_hinges"] = [h for h, _, _ in singular]
    ill = ill_conditioned_hinges(loaded, skip=manifest["singular_hinges"])
    manifest["ill_conditioned_hinges"] = [h for h, *_ in ill]
    for category, issue, messages in ((SingularHingeWarning, SINGULAR_ISSUE, singular_message(singular)),
                                      (IllConditionedWarning, ILL_ISSUE, ill_conditioned_message(ill))):
        found += [Diagnostic(text, category, ("hinge", hinge), issue, detail, name_all=True)
                  for text, hinge, detail in messages]
    manifest["warnings"] = manifest["warnings"] + found
    for category, text in grouped(found):
        done("warning", f"warning   {text}", text=text, category=category)
    fast = fast_job(say)
    path = so
    if out is not None:
        t = time.perf_counter()
        target = Path(out) / manifest["name"]
        with step("install", str(target)):
            _install_package(target, files, so, manifest, fast)
        path = target / so.name
        seconds = time.perf_counter() - t
        done("install", f"install   {target} in {seconds:.2f} s", target=target, seconds=seconds)
    def with_derivatives():
        """The module with the derivative and centroidal functions: generated and compiled on the first call of
        one (both through their caches)."""
        say(f"compile   {model.name}'s derivative and centroidal functions (on first use)")
        dfiles, dmanifest = cached_model_sources(model, form, derivatives=True)
        return module_of_sources(dfiles, dmanifest, label + " with derivatives", derivatives=True)[0]
    mb = MultibodyModel(mod, manifest, path=path, fastcall=fast, derivatives=None if derivatives else with_derivatives)
    emit(found)                      # last: everything is built and installed (a warning made an error may raise)
    return mb


def _default_transforms(mb, manifest) -> list:
    """Each hinge's ``default_transform`` (Simbody ``setDefaultTransform``) as its default Q, by ``fit_q``, into
    the manifest (what ``mb.default_q()`` reads); a warning for one the hinge cannot reach exactly."""
    import numpy as np

    warnings = []
    for name, h in manifest["hinges"].items():
        X = h.get("default_transform")
        if X is None:
            continue
        q = mb.fit_q(name, np.array(X))
        got = mb.hinge_kernels(name).transform(q)
        h["default_q"] = [float(x) for x in q]
        err = float(np.abs(got - np.array(X)).max())
        if err > 1e-9:
            issue = "default_transform out of the hinge's reach; its default Q is the least-squares best fit"
            warnings.append(Diagnostic(
                f"hinge '{name}': default_transform is out of the hinge's reach (its {h['type']} moves in "
                f"{len(h['neutral_q'])} coordinates); its default Q is the least-squares best fit (off by {err:.2g})",
                DefaultTransformWarning, ("hinge", name), issue, detail=f"{h['type']}, off by {err:.2g}"))
    return warnings


_PACKAGE_INIT = '''"""symgen model package {name!r} (generated; do not edit).

    import generated.{name} as m
    m.model.frame_pose(q, "frame")      # or m.frame_pose(...): every MultibodyModel method
"""
from pathlib import Path as _Path

from symgen.runtime import load_built as _load

model = _load(_Path(__file__).parent)


def __getattr__(name):
    return getattr(model, name)
'''


def _install_package(target: Path, files: dict, so: Path, manifest: dict, fast=None) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        for fname, text in files.items():
            (staging / fname).write_text(text)
        shutil.copy2(so, staging / so.name)
        if fast is not None:                # the one-state extension travels with the package
            fso = Path(fast.__file__)
            shutil.copy2(fso, staging / fso.name)
            manifest = dict(manifest, fastcall={"module": fast.__name__, "so": fso.name})
        (staging / "manifest.json").write_text(json.dumps(manifest, indent=1))
        (staging / "__init__.py").write_text(_PACKAGE_INIT.format(name=manifest["name"]))
        if target.exists():
            old = target.with_name(f".{target.name}.old.{os.getpid()}")
            os.replace(target, old)
            os.replace(staging, target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def build(path, floating_base: bool = False, out=None, progress=None, *, armature=None, lock=None,
          balance_inertia: bool = False, accept_indefinite_inertia: bool = False, parameters=None, form: str = "auto",
          loops_from_equality: bool = False, derivatives: bool = False):
    """What :func:`symgen.build` runs (its docstring documents every option): read the model file with
    :func:`symgen.model.load_model`, then :func:`build_model`.  The file's warnings and the build's are warned
    together, grouped (:mod:`symgen.diagnostics`), when the build is complete (a Model object's own warnings
    were warned when it was loaded); a build that fails raises its error, not a warning made an error."""
    import dataclasses

    from ..model import Model, load_model

    if isinstance(path, Model):
        if floating_base or armature or lock or balance_inertia or accept_indefinite_inertia or loops_from_equality:
            raise ValueError("symgen.build: a Model object is built as it is; loading options apply to files")
    found: list = []
    try:
        with collecting() as found:
            if isinstance(path, Model):
                model = path
            else:
                model = load_model(path, floating_base=floating_base, armature=armature, lock=lock,
                                   balance_inertia=balance_inertia,
                                   accept_indefinite_inertia=accept_indefinite_inertia,
                                   loops_from_equality=loops_from_equality)
            if parameters:
                if isinstance(parameters, str):
                    parameters = [parameters]
                model = dataclasses.replace(model, parameters=list(parameters))
            mb = build_model(model, out=out, progress=progress, form=form, derivatives=derivatives)
    except Exception:
        try:
            emit(found)               # what the file said may explain the failure
        except Warning:               # a warning made an error: the build's own error is the one to raise
            pass
        raise
    emit(found)
    return mb
