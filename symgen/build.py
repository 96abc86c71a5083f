"""cffi compile, content-hash cache, lock, atomic install, import: the only module that knows cffi.

A module is named ``<base>_<sha256[:16]>`` of (sources, compiler and its version, flags, cffi version,
Python ABI).  It is built under a per-module file lock in a private temp dir, checked first with the
strict flags ``-std=c99 -Wall -Wextra -Werror -pedantic`` (so a compiler error surfaces as one
readable :class:`BuildError` naming the hinge/model, the file and the compiler's first error lines),
compiled by cffi (out-of-line API mode), and moved into ``<cache>/modules/`` with ``os.replace``.
A cache hit compiles nothing; a killed build leaves only its temp dir, never a module.
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import numpy as np

from .paths import cache_dir

STRICT_FLAGS = ("-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic")
#: optimization flags of every module; SYMGEN_MARCH_NATIVE=1 adds -march=native (then the module only runs
#: on machines like the one that built it; the flag is part of the module's content hash)
OPT_FLAGS = ("-O3",) + (("-march=native",) if os.environ.get("SYMGEN_MARCH_NATIVE") == "1" else ())
CDEF_BEGIN, CDEF_END = "/* SG_CDEF_BEGIN */", "/* SG_CDEF_END */"

stats = {"compiles": 0, "hits": 0}


class BuildError(RuntimeError):
    """A build that could not produce a module (no compiler, compile error, ...)."""


def compiler() -> list:
    """The C compiler command: ``$CC``, else Python's configured compiler, else cc / gcc / clang."""
    for cand in (os.environ.get("CC"), sysconfig.get_config_var("CC"), "cc", "gcc", "clang"):
        if not cand:
            continue
        cmd = shlex.split(cand)
        if shutil.which(cmd[0]):
            return cmd
    raise BuildError("no C compiler found (looked at $CC, Python's CC, cc, gcc, clang); install gcc or set CC")


_CC_VERSION: dict = {}


def compiler_version(cmd) -> str:
    key = tuple(cmd)
    if key not in _CC_VERSION:
        try:
            out = subprocess.run([*cmd, "--version"], capture_output=True, text=True, timeout=30)
            _CC_VERSION[key] = (out.stdout or out.stderr).splitlines()[0] if (out.stdout or out.stderr) else ""
        except (OSError, subprocess.SubprocessError):
            _CC_VERSION[key] = ""
    return _CC_VERSION[key]


def modules_dir() -> Path:
    return cache_dir() / "modules"


def ext_suffix() -> str:
    return sysconfig.get_config_var("EXT_SUFFIX") or ".so"


def module_name(base: str, files: dict, flags=OPT_FLAGS) -> str:
    import cffi

    h = hashlib.sha256()
    for fname in sorted(files):
        h.update(fname.encode() + b"\0" + files[fname].encode() + b"\0")
    cc = compiler()
    for part in (" ".join(cc), compiler_version(cc), " ".join(flags), cffi.__version__, ext_suffix(),
                 sys.implementation.cache_tag or ""):
        h.update(part.encode() + b"\0")
    return f"{base}_{h.hexdigest()[:16]}"


def cdef_of(header_text: str) -> str:
    """The declarations between the header's ``SG_CDEF`` markers (the header is the ABI's one source)."""
    try:
        start = header_text.index(CDEF_BEGIN) + len(CDEF_BEGIN)
        return header_text[start:header_text.index(CDEF_END)]
    except ValueError:
        raise BuildError("generated header has no SG_CDEF_BEGIN/END markers") from None


def _first_error_lines(text: str, n: int = 8) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    errs = [i for i, ln in enumerate(lines) if "error" in ln]
    start = errs[0] if errs else 0
    return "\n".join(lines[max(0, start - 1):start + n])


def strict_check(path: Path, label: str, cc=None) -> None:
    """Compile one C file with the strict flags (a full compile without optimization: -fsyntax-only would
    miss warnings such as unused functions); BuildError on failure."""
    cc = cc or compiler()
    cmd = [*cc, *STRICT_FLAGS, "-c", str(path), "-o", os.devnull]
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=path.parent)
    if out.returncode != 0:
        raise BuildError(f"{label}: {path.name} does not compile with {' '.join(STRICT_FLAGS)}:\n"
                         f"{_first_error_lines(out.stderr)}")


@contextlib.contextmanager
def _captured_fds():
    """Capture what setuptools and the compiler print on fd 1 and 2 (returned as a list of one str)."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    log: list = []
    with tempfile.TemporaryFile(mode="w+b") as fh:
        os.dup2(fh.fileno(), 1)
        os.dup2(fh.fileno(), 2)
        try:
            yield log
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
            fh.seek(0)
            log.append(fh.read().decode(errors="replace"))


def _import(name: str, path: Path):
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    sys.modules[name] = mod
    return mod


def _clean_stale_tmp(tmp_root: Path, older_than_s: float = 3600.0) -> None:
    now = time.time()
    for d in tmp_root.glob("*"):
        try:
            if now - d.stat().st_mtime > older_than_s:
                shutil.rmtree(d, ignore_errors=True)
        except OSError:
            pass


def build_module(base: str, files: dict, label: str, flags=OPT_FLAGS, lock_timeout: float = 600.0,
                 compile_only=None, parts=None):
    """Compile ``files`` ({name: text}; ``.c`` sources and ``.h`` headers) into a cffi module named by
    content hash and import it.  ``compile_only`` names the ``.c`` files that are translation units (the
    others are included by them); default: every ``.c``.  ``parts``: compile each of them once per
    ``-DSG_PART=k`` (a model's long functions, templates/model.c.jinja), in parallel.
    Returns ``(module, name, path)``."""
    from filelock import FileLock, Timeout

    name = module_name(base, files, tuple(flags) + tuple(sorted(compile_only or ()))
                       + tuple(f"SG_PART={k}" for k in (parts or ())))
    target = modules_dir() / (name + ext_suffix())
    if target.exists():
        stats["hits"] += 1
        return _import(name, target), name, target
    root = cache_dir()
    for sub in ("modules", "locks", "tmp"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    try:
        with FileLock(str(root / "locks" / f"{name}.lock"), timeout=lock_timeout):
            if target.exists():  # another process built it while we waited
                stats["hits"] += 1
                return _import(name, target), name, target
            _clean_stale_tmp(root / "tmp")
            work = Path(tempfile.mkdtemp(prefix=f"{name}.", dir=root / "tmp"))
            try:
                _compile_into(work, name, files, label, flags, target, compile_only, parts)
            finally:
                shutil.rmtree(work, ignore_errors=True)
    except Timeout:
        raise BuildError(f"{label}: timed out after {lock_timeout:.0f} s waiting for another build of {name}") from None
    return _import(name, target), name, target


def _compile_objects(src: Path, c_files: list, label: str, flags, cc, parts) -> list:
    """Strict-check every translation unit and compile it to an object (``-DSG_PART=k`` once per part when
    there are several), as parallel compiler processes, one per core.  Returns the object paths."""
    from concurrent.futures import ThreadPoolExecutor

    split = parts and len(parts) > 1
    # a part holds only some of the file's functions: the helpers the others use are unused there
    quiet = ("-Wno-unused-function", "-Wno-unused-variable", "-Wno-unused-const-variable")
    jobs = [(f, k) for f in c_files for k in (sorted(parts, key=lambda k: (k == 0, k)) if split else [None])]

    def compile_one(job):
        f, k = job
        obj = src / (f"{Path(f).stem}.o" if k is None else f"{Path(f).stem}.part{k}.o")
        cmd = [*cc, *flags, "-std=c99", "-fPIC", "-c", str(src / f), "-o", str(obj), f"-I{src}"]
        if k is not None:
            cmd += [f"-DSG_PART={k}", *quiet]
        out = subprocess.run(cmd, capture_output=True, text=True, cwd=src)
        if out.returncode != 0:
            raise BuildError(f"{label}: {f} does not compile:\n{_first_error_lines(out.stderr)}")
        return obj

    def strict(f):
        strict_check(src / f, label, cc)

    with ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as ex:
        objects = [ex.submit(compile_one, j) for j in jobs]
        checks = [ex.submit(strict, f) for f in c_files]
        for fut in checks + objects:
            fut.result()
    return [fut.result() for fut in objects]


def _compile_into(work: Path, name: str, files: dict, label: str, flags, target: Path, compile_only=None,
                  parts=None) -> None:
    import cffi

    src = work / "src"
    src.mkdir()
    for fname, text in files.items():
        (src / fname).write_text(text)
    cc = compiler()
    c_files = sorted(compile_only or (f for f in files if f.endswith(".c")))
    headers = sorted(f for f in files if f.endswith(".h"))
    objects = _compile_objects(src, c_files, label, flags, cc, parts)
    ffi = cffi.FFI()
    ffi.cdef("\n".join(cdef_of(files[h]) for h in headers))
    ffi.set_source(name, "\n".join(f'#include "{h}"' for h in headers),
                   extra_objects=[str(o) for o in objects], include_dirs=[str(src)],
                   extra_compile_args=list(flags))
    env_cc = os.environ.get("CC")
    os.environ["CC"] = " ".join(cc)
    try:
        with _captured_fds() as log:
            built = ffi.compile(tmpdir=str(work / "build"), verbose=False)
    except Exception as e:  # setuptools' CompileError/LinkError, cffi's VerificationError, ...
        raise BuildError(f"{label}: compiling the cffi module failed ({type(e).__name__}):\n"
                         f"{_first_error_lines(log[0] if log else str(e))}") from None
    finally:
        if env_cc is None:
            os.environ.pop("CC", None)
        else:
            os.environ["CC"] = env_cc
    stats["compiles"] += 1
    with open(cache_dir() / "compile.log", "a") as fh:  # one line per real compile (for tests and audits)
        fh.write(json.dumps({"module": name, "pid": os.getpid(), "time": time.time()}) + "\n")
    os.replace(built, target)


# --------------------------------------------------------------------------------------------------
# hinge kernels
# --------------------------------------------------------------------------------------------------

def _render_fingerprint(template_path=None) -> str:
    """Hash of what turns equations into C: emit.py, render.py and the templates."""
    from .paths import templates_dir

    here = Path(__file__).parent
    tdir = Path(template_path) if template_path else templates_dir()
    h = hashlib.sha256()
    for f in [here / "emit.py", here / "render.py", *sorted(tdir.rglob("*.jinja"))]:
        h.update(f.name.encode() + f.read_bytes())
    return h.hexdigest()[:16]


def hinge_sources(h, slug: str | None = None, template_path=None):
    """(files, manifest) of one hinge spec: ``{slug}.c``, ``{slug}.h`` and the kernel table.

    Cached on disk next to the derivations (key: derivation key + emit/render/template hash), so a warm
    build does no sympy work."""
    from .derive import derivation_key

    key = hashlib.sha256(f"{derivation_key(h.spec)}|{slug}|{_render_fingerprint(template_path)}".encode()).hexdigest()[:24]
    def make():
        from . import emit, render

        s = slug or emit.spec_slug(h)
        header, source, kernels = render.render_hinge(h, s, template_path=template_path)
        manifest = {"slug": s, "label": h.spec.label(), "nq": h.nq, "nu": h.nu,
                    "kernels": {k.name: {"c_name": k.c_name, "inputs": list(k.inputs), "out_shape": list(k.out_shape),
                                         "flops": k.flops, "status": k.returns_status} for k in kernels
                                if not k.internal},
                    "structure": emit.kernel_structure(h)}
        return {f"{s}.c": source, f"{s}.h": header}, manifest

    return _json_cached(cache_dir() / "emit" / f"{key}.json", make)


def _json_cached(path: Path, make):
    """``(files, manifest)`` from a JSON cache file, or ``make()`` written there atomically."""
    if path.exists():
        try:
            data = json.loads(path.read_text())
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
    from .runtime import HingeKernels

    files, manifest = hinge_sources(h, template_path=template_path)
    mod, name, path = build_module(manifest["slug"], files, f"hinge {h.spec.label()}")
    return HingeKernels(mod, manifest, module_name=name, path=path)


def compile_hinges(hinges, base: str = "kernels") -> list:
    """Compile several hinge specs into one module (one compiler run); returns their HingeKernels in order."""
    from .runtime import HingeKernels

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
    from .derive import hinge
    from .hinges import HINGE_TYPES

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


def model_sources(model, progress=None):
    """(files, manifest) of a model: its translation unit plus the kernels of every hinge spec it uses."""
    from .derive import hinge
    from .render import render_model

    name = model_identifier(model.name)
    files, slugs, layout, hinges, specs = {}, {}, {}, {}, {}
    qo = uo = 0
    for b in model.bodies:
        h = hinge(b.hinge_type, **b.hinge_kwargs())
        f, m = hinge_sources(h)
        files.update(f)
        slugs[b.name] = m["slug"]
        specs[m["slug"]] = m
        layout[b.name] = {"q": (qo, qo + h.nq), "u": (uo, uo + h.nu), "nq": h.nq, "nu": h.nu,
                          "subhinges": list(h.subhinge_types), "structure": m["structure"],
                          "has_sanitize": h.has_sanitize}
        hinges[b.hinge_name] = {"body": b.name, "type": b.hinge_type, "slug": m["slug"], "label": h.spec.label(),
                                "q": [qo, qo + h.nq], "u": [uo, uo + h.nu], "subhinges": list(h.subhinge_types),
                                "neutral_q": _neutral(h), "armature": list(b.armature) or [0.0] * h.nu}
        qo, uo = qo + h.nq, uo + h.nu
    header, source, parts = render_model(model, layout, slugs, name)
    files[f"{name}.h"], files[f"{name}.c"] = header, source
    frames = {"newtonian": {"body": -1, "R": np.eye(3).tolist(), "p": [0.0, 0.0, 0.0]}}
    index = {b.name: i for i, b in enumerate(model.bodies)}
    for b in model.bodies:
        frames[b.name] = {"body": index[b.name], "R": np.eye(3).tolist(), "p": [0.0, 0.0, 0.0]}
    for f in model.frames:
        frames[f.name] = {"body": index[f.body], "R": [list(r) for r in f.pose.R], "p": list(f.pose.xyz)}
    manifest = {"name": name, "model": model.name, "source": str(model.source), "nq": qo, "nu": uo,
                "nb": len(model.bodies), "gravity": list(model.gravity),
                "bodies": [{"name": b.name, "parent": b.parent, "hinge": b.hinge_name, "mass": b.mass,
                            "com": list(b.com), "inertia": [list(r) for r in b.inertia]} for b in model.bodies],
                "frames": frames, "hinges": hinges, "hinge_specs": specs,
                "loops": [{"name": lc.name, "source": lc.source, "target": lc.target, "hinge": lc.hinge_type}
                          for lc in model.loops], "parts": parts,
                "warnings": list(model.warnings)}
    return files, manifest


def _neutral(h) -> list:
    """The hinge's neutral Q (the registry's ``SubhingeType.neutral_q`` of each subhinge, hinge order)."""
    return h.spec.neutral_q()


def _package_fingerprint() -> str:
    """Hash of every symgen source and template plus the sympy version (read without importing sympy)."""
    from importlib import metadata

    from .paths import templates_dir

    here = Path(__file__).parent
    h = hashlib.sha256(metadata.version("sympy").encode())
    for f in sorted(here.rglob("*.py")) + sorted(templates_dir().rglob("*.jinja")):
        h.update(str(f.relative_to(f.parents[1])).encode() + f.read_bytes())
    return h.hexdigest()[:16]


def cached_model_sources(model):
    """:func:`model_sources` through a disk cache keyed by the model's content and the package sources,
    so a warm build of an unchanged model does no sympy or jinja2 work.  The key includes each hinge's bound
    spec (with its subhinge types' fingerprints), so a hinge type registered at run time is keyed by its
    definition, not only its name."""
    import dataclasses

    from . import soa
    from .hinges import bind

    specs = [bind(b.hinge_type, **b.hinge_kwargs()).key() for b in model.bodies]
    text = json.dumps([dataclasses.asdict(model), specs], sort_keys=True, default=str)
    limits = (f"|{soa.CRBA_UNROLL_LIMIT}|{soa.STRAIGHT_LINE_LIMIT}|{soa.AVX2_COPY_MIN_LINES}"  # form choices
              f"|{soa.AVX2_COPY_MAX_LINES}|{soa.SPLIT_MIN_LINES}|{soa.POSES_STRAIGHT_LIMIT}|{soa.JAC_STEPS_LIMIT}")
    key = hashlib.sha256((text + _package_fingerprint() + limits).encode()).hexdigest()[:24]
    return _json_cached(cache_dir() / "model-sources" / f"{key}.json", lambda: model_sources(model))


def build_model(model, out=None, progress=None):
    """Generate, compile (through the cache) and load a model.  With ``out``, also write
    ``out/<name>/`` as an importable package (sources, module, manifest.json, __init__.py)."""
    from .runtime import MultibodyModel
    from .runtime.checks import singular_hinges, singular_message

    say = progress or (lambda s: None)
    t = time.perf_counter()
    files, manifest = cached_model_sources(model)
    manifest = dict(manifest)
    say(f"generate  {len(files)} files, {sum(len(v) for v in files.values()) / 1024:.1f} kB of C "
        f"in {time.perf_counter() - t:.2f} s")
    t = time.perf_counter()
    compiles = stats["compiles"]
    mod, name, so = build_module(manifest["name"], files, f"model {model.name} ({model.source})",
                                 compile_only=[f"{manifest['name']}.c"], parts=manifest.get("parts"))
    say(f"compile   {name} in {time.perf_counter() - t:.2f} s" + (" (cache hit)" if stats["compiles"] == compiles else ""))
    manifest["module"], manifest["so"] = name, so.name
    singular = singular_hinges(MultibodyModel(mod, manifest))
    manifest["singular_hinges"] = [h for h, _, _ in singular]
    messages = singular_message(singular)
    manifest["warnings"] = manifest["warnings"] + messages
    for w in messages:
        say(f"warning   {w}")
    path = so
    if out is not None:
        t = time.perf_counter()
        target = Path(out) / manifest["name"]
        _install_package(target, files, so, manifest)
        path = target / so.name
        say(f"install   {target} in {time.perf_counter() - t:.2f} s")
    return MultibodyModel(mod, manifest, path=path)


_PACKAGE_INIT = '''"""symgen model package {name!r} (generated; do not edit).

    import generated.{name} as m
    m.model.frame_pose(q, "frame")      # or m.frame_pose(...): every MultibodyModel method
"""
from pathlib import Path as _Path

from symgen.runtime import load_model as _load

model = _load(_Path(__file__).parent)


def __getattr__(name):
    return getattr(model, name)
'''


def _install_package(target: Path, files: dict, so: Path, manifest: dict) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        for fname, text in files.items():
            (staging / fname).write_text(text)
        shutil.copy2(so, staging / so.name)
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
          balance_inertia: bool = False, accept_indefinite_inertia: bool = False):
    """Load a YAML/JSON/URDF model, generate and compile its C (through the cache) and return the loaded
    :class:`symgen.runtime.MultibodyModel`.  With ``out``, also write ``out/<model>/`` as a package.

    ``armature={hinge: value}`` (a number, or one per hinge U) adds rotor inertia to the hinge's D, M and
    inverse dynamics as Pinocchio's ``model.armature`` and MuJoCo's ``joint/armature`` do; ``lock=[hinge, ...]``
    (or ``{hinge: q}``) welds hinges at their neutral (or given) coordinates; ``balance_inertia`` and
    ``accept_indefinite_inertia``: see :func:`symgen.model.load_model`.  A moving hinge whose outboard
    subtree has no mass or inertia in its directions is named in ``mb.singular_hinges`` and ``mb.warnings``
    (and printed through ``progress``).  Also reachable as ``symgen.build(...)``."""
    from .model import load_model

    model = load_model(path, floating_base=floating_base, armature=armature, lock=lock,
                       balance_inertia=balance_inertia, accept_indefinite_inertia=accept_indefinite_inertia)
    return build_model(model, out=out, progress=progress)


class _CallableModule(type(sys)):
    def __call__(self, path, floating_base: bool = False, out=None, progress=None, **options):
        return build(path, floating_base=floating_base, out=out, progress=progress, **options)


sys.modules[__name__].__class__ = _CallableModule
