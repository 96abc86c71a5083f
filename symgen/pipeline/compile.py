"""The compile stage of the build pipeline (model -> sources -> compile -> package): C files to a cffi module.

cffi compile, content-hash cache, lock, atomic install, import: the only module that knows cffi.  It knows
nothing of hinges or models: its input is ``{file name: text}`` plus a label for messages, its output the
imported module and its path.

A module is named ``<base>_<sha256[:16]>`` of (sources, compiler and its version, flags, cffi version,
Python ABI): that name is this stage's cache key.  It is built under a per-module file lock in a private
temp dir, checked first with the strict flags ``-std=c99 -Wall -Wextra -Werror -pedantic`` (so a compiler
error surfaces as one readable :class:`BuildError` naming the hinge/model, the file and the compiler's first
error lines), compiled with the cffi wrapper (cffi's out-of-line API mode: ``ffi.emit_c_code``) as parallel
compiler processes, linked, and moved into ``<cache>/modules/`` with ``os.replace``.  A cache hit compiles nothing; a killed build leaves only its temp dir, never a module.
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import io
import json
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from pathlib import Path

from .. import progress
from ..paths import cache_dir

STRICT_FLAGS = ("-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic")
#: optimization flags of every module; SYMGEN_MARCH_NATIVE=1 adds -march=native (then the module only runs
#: on machines like the one that built it; the flag is part of the module's content hash).  Functions start on
#: a cache line.  The long straight-line functions' speed depends on the code's layout in ways this does not
#: fully remove: the floating humanoid's one-state mass matrix measured 1.07 or 1.35 µs as an unrelated helper
#: (sg_sincos) shrank, and 1.01 with the shrunk helper and this flag (benchmarks/vs_pinocchio.py watches it).
#: SYMGEN_OPT=0|1|2|3|s sets the optimization level (default 3; part of the module's content hash like every flag):
#: ``0`` compiles a big model's long functions 10-20 times faster (Talos's forward dynamics: 0.7 s instead of 12 s)
#: into code several times slower, the same numbers bit for bit (C99 without -ffast-math: IEEE arithmetic in the
#: order written, no FMA contraction, at every level; tests/test_opt_levels.py checks it).  For quick iterations
#: and test suites (symgen's own runs at 0), not for speed.
OPT_LEVELS = ("0", "1", "2", "3", "s")


def opt_flags() -> tuple:
    """The optimization flags of every module, as the environment sets them now (``SYMGEN_OPT``,
    ``SYMGEN_MARCH_NATIVE``)."""
    level = os.environ.get("SYMGEN_OPT", "3").strip() or "3"
    if level not in OPT_LEVELS:
        raise BuildError(f"SYMGEN_OPT={level!r}: the optimization level is one of {', '.join(OPT_LEVELS)}")
    return (f"-O{level}", "-falign-functions=64") + (("-march=native",) if os.environ.get("SYMGEN_MARCH_NATIVE") == "1"
                                                       else ())


class BuildError(RuntimeError):
    """A build that could not produce a module (no compiler, compile error, ...)."""


#: the default optimization flags (SYMGEN_OPT and SYMGEN_MARCH_NATIVE unset)
OPT_FLAGS = ("-O3", "-falign-functions=64")
CDEF_BEGIN, CDEF_END = "/* SG_CDEF_BEGIN */", "/* SG_CDEF_END */"

stats = {"compiles": 0, "hits": 0}



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


def module_name(base: str, files: dict, flags=None) -> str:
    import cffi

    flags = opt_flags() if flags is None else flags
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


#: the strict check stops after the compiler's middle end where it can: with -flto, GCC and clang write the
#: intermediate code instead of machine code, after every warning -O0 gives (unused functions, return type,
#: uninitialized values: the call graph has run) at a third of the CPU time (humanoid: 0.47 s instead of 1.3 s);
#: -fsyntax-only would stop before the call graph and miss them.  Compilers without -flto get a full -O0 compile.
STRICT_STOP = ("-flto",)


def strict_check(path: Path, label: str, cc=None, defines=()) -> None:
    """Compile one C file with the strict flags (:data:`STRICT_STOP`) and ``defines`` (the ``-D`` options the
    module is compiled with); BuildError on failure."""
    cc = cc or compiler()
    cmd = [*cc, *STRICT_FLAGS, *defines, "-c", str(path), "-o", os.devnull]
    out = subprocess.run([*cc, *STRICT_STOP, *cmd[len(cc):]], capture_output=True, text=True, cwd=path.parent)
    if out.returncode != 0 and any(flag in out.stderr for flag in STRICT_STOP):   # the compiler refuses -flto
        out = subprocess.run(cmd, capture_output=True, text=True, cwd=path.parent)
    if out.returncode != 0:
        raise BuildError(f"{label}: {path.name} does not compile with {' '.join(STRICT_FLAGS)}:\n"
                         f"{_first_error_lines(out.stderr)}")


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


def module_key(base: str, files: dict, flags=None, compile_only=None, parts=None, part_flags=None) -> str:
    """The content-hash module name :func:`build_module` gives these files with these options (``flags``: default
    :func:`opt_flags`)."""
    flags = opt_flags() if flags is None else flags
    return module_name(base, files, tuple(flags) + tuple(sorted(compile_only or ()))
                       + tuple(f"SG_PART={k}" for k in (parts or ()))
                       + tuple(f"SG_PART={k}: {' '.join(v)}" for k, v in sorted((part_flags or {}).items())))


def build_module(base: str, files: dict, label: str, flags=None, lock_timeout: float = 600.0,
                 compile_only=None, parts=None, part_flags=None):
    """Compile ``files`` ({name: text}; ``.c`` sources and ``.h`` headers) into a cffi module named by
    content hash and import it.  ``compile_only`` names the ``.c`` files that are translation units (the
    others are included by them); default: every ``.c``.  ``parts``: compile each of them once per
    ``-DSG_PART=k`` (a model's long functions, templates/model.c.jinja), in parallel; ``part_flags``: {part:
    flags that follow ``flags`` on its command line} (``-O2``: the last -O wins).  Returns ``(module, name, path)``."""
    flags = opt_flags() if flags is None else flags
    name = module_key(base, files, flags, compile_only, parts, part_flags)
    with progress.step("compile", name) as step:
        return _built_module(name, files, label, flags, lock_timeout, compile_only, parts, step, part_flags)


def _built_module(name, files, label, flags, lock_timeout, compile_only, parts, step, part_flags=None):
    return _cached(name, label, lock_timeout, step, lambda work, target: _compile_into(
        work, name, files, label, flags, target, compile_only, parts, part_flags))


def _cached(name, label, lock_timeout, step, compile_into):
    """The module ``name`` from the cache, else ``compile_into(work dir, target)`` under the module's lock
    (another process may have built it meanwhile), then imported."""
    from filelock import FileLock, Timeout

    target = modules_dir() / (name + ext_suffix())
    if target.exists():
        stats["hits"] += 1
        step.hit()
        return _import(name, target), name, target
    root = cache_dir()
    for sub in ("modules", "locks", "tmp"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    try:
        with FileLock(str(root / "locks" / f"{name}.lock"), timeout=lock_timeout):
            if target.exists():  # another process built it while we waited
                stats["hits"] += 1
                step.hit()
                return _import(name, target), name, target
            _clean_stale_tmp(root / "tmp")
            work = Path(tempfile.mkdtemp(prefix=f"{name}.", dir=root / "tmp"))
            try:
                compile_into(work, target)
            finally:
                shutil.rmtree(work, ignore_errors=True)
    except Timeout:
        raise BuildError(f"{label}: timed out after {lock_timeout:.0f} s waiting for another build of {name}") from None
    return _import(name, target), name, target


#: optimization of the cffi wrapper (argument conversion glue; one-state calls take runtime/fastcall.c instead):
#: -O0.  arm7's wrapper compiles in 0.53 s at -O0 against 0.94 s at -O1 (a core's time out of a cold build's
#: 2-3 s; all_hinges', 1.4 MB of glue, 3.5 s against 8.4 s), and a batched call through it costs the same,
#: 0.6-0.8 us either way (measured interleaved, n = 1)
WRAPPER_FLAGS = ("-O0",)


def _python_includes() -> list:
    paths = sysconfig.get_paths()
    return [f"-I{d}" for d in dict.fromkeys((paths["include"], paths["platinclude"]))]


def _link_command(cc) -> list:
    """``cc`` with the flags that make a Python extension module (Python's LDSHARED, our compiler first)."""
    ldshared = shlex.split(sysconfig.get_config_var("LDSHARED") or "")
    extra = [a for a in ldshared[1:] if a.startswith("-") and not a.startswith(("-L", "-l", "-Wl,-rpath"))]
    if "-shared" not in extra and "-bundle" not in extra:
        extra = ["-shared"] + extra
    return [*cc, *extra]


def _object_key(cmd, src: Path) -> str | None:
    """The cache key of one object: the translation unit as the compiler sees it (``-E -P``: every include
    expanded, this part's ``#if``s resolved), the command without its paths and the compiler's version; None
    when the preprocessor fails (the compile then reports the error)."""
    pre = [a for a in cmd if a not in ("-c",)]
    out_at = pre.index("-o")
    pre = pre[:out_at] + pre[out_at + 2:] + ["-E", "-P"]
    res = subprocess.run(pre, capture_output=True, cwd=src)
    if res.returncode != 0:
        return None
    h = hashlib.sha256(res.stdout)
    # the -D options act through the preprocessed text; the rest (optimization, warnings) and the compiler count
    h.update(json.dumps([a for a in cmd if not a.startswith(("-I", "-o", "-D", str(src)))]
                        + [compiler_version(cmd[:1])]).encode())
    return h.hexdigest()[:32]


def _object_from_cache(key, obj: Path) -> bool:
    """Copy the cached object of ``key`` (:func:`_object_key`) into ``obj``; False on a miss (or no key).  A
    derivative module shares its value parts with the value module; a rebuild shares its unchanged parts."""
    hit = cache_dir() / "objects" / f"{key}.o" if key else None
    if hit is None or not hit.exists():
        return False
    shutil.copyfile(hit, obj)
    return True


def _object_to_cache(key, obj: Path) -> None:
    """Store a freshly compiled object under its key (written aside, then renamed: readers never see half)."""
    if not key:
        return
    d = cache_dir() / "objects"
    d.mkdir(parents=True, exist_ok=True)
    tmp = d / f".{key}.{os.getpid()}.{threading.get_ident()}.tmp"
    shutil.copyfile(obj, tmp)
    os.replace(tmp, d / f"{key}.o")


def one_run_checks(flags) -> bool:
    """Whether a module compiled with ``flags`` checks and compiles each file in one compiler run: at -O0
    (``SYMGEN_OPT=0``: test suites, quick iterations).  Each file is then one translation unit compiled with the
    strict flags, which give at -O0 the warnings :func:`strict_check` gives (it stops after the same middle
    end); the parts (``-DSG_PART=k``) are not used.  At -O0 a compile costs little per line, so the parts'
    repeated parsing of the whole file and the separate check cost more CPU than their parallelism saves:
    all_hinges with derivatives, 27 s of CPU as one run against 46 s (a check of 9 s, 17 parts of 1-9 s);
    arm7, 1.0 s against 2.1 s.  Above -O0 the parts win (a long function's optimization dominates) and the
    check is a third of an -O0 compile."""
    return "-O0" in flags


def _compile_objects(src: Path, c_files: list, label: str, flags, cc, parts, wrapper: Path, part_flags=None) -> list:
    """Strict-check every translation unit and compile it to an object (``-DSG_PART=k`` once per part when
    there are several), and the cffi wrapper ``wrapper``, as parallel compiler processes, one per core.
    At -O0 (:func:`one_run_checks`) one compiler run per file does both, without parts.
    Returns the object paths (the wrapper's last)."""
    from concurrent.futures import ThreadPoolExecutor, as_completed

    checked = one_run_checks(flags)
    split = parts and len(parts) > 1 and not checked
    # a part holds only some of the file's functions: the helpers the others use are unused there
    quiet = ("-Wno-unused-function", "-Wno-unused-variable", "-Wno-unused-const-variable")
    jobs = [(f, k) for f in c_files for k in (parts if split else [None])]      # in the given order: longest first

    def run(cmd, what, strict_flags=()):
        out = subprocess.run(cmd, capture_output=True, text=True, cwd=src)
        if out.returncode != 0:
            with_flags = f" with {' '.join(strict_flags)}" if strict_flags else ""
            raise BuildError(f"{label}: {what} does not compile{with_flags}:\n{_first_error_lines(out.stderr)}")

    def compile_one(job):
        f, k = job
        obj = src / (f"{Path(f).stem}.o" if k is None else f"{Path(f).stem}.part{k}.o")
        own = (part_flags or {}).get(k, ()) if k is not None else ()
        cmd = [*cc, *flags, *own, *(STRICT_FLAGS if checked else ("-std=c99",)), "-fPIC", "-c", str(src / f), "-o",
               str(obj), f"-I{src}"]
        if k is not None:
            cmd += [f"-DSG_PART={k}", *quiet]
        key = _object_key(cmd, src)
        if not _object_from_cache(key, obj):
            run(cmd, f, STRICT_FLAGS if checked else ())
            _object_to_cache(key, obj)
        return obj

    def compile_wrapper():
        obj = wrapper.with_suffix(".o")
        run([*cc, *WRAPPER_FLAGS, "-fPIC", "-DNDEBUG", "-c", str(wrapper), "-o", str(obj), f"-I{src}",
             *_python_includes()], f"the cffi wrapper {wrapper.name}")
        return obj

    def strict(f):
        strict_check(src / f, label, cc, [x for x in flags if x.startswith("-D")])

    with ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as ex, \
            progress.bar("compile", len(jobs) + (0 if checked else len(c_files)) + 1, "compiling") as bar:
        # the strict checks first (a big model's takes as long as a part: last, it would run alone; at -O0 they are
        # the objects' own compiler runs), then the parts longest first, the wrapper
        checks = [] if checked else [ex.submit(strict, f) for f in c_files]
        objects = [ex.submit(compile_one, j) for j in jobs] + [ex.submit(compile_wrapper)]
        for fut in as_completed(checks + objects):
            bar.update(1)
    for fut in checks + objects:     # the first error in that order: the strict check's, a source's, the wrapper's
        fut.result()
    return [fut.result() for fut in objects]


def _compile_into(work: Path, name: str, files: dict, label: str, flags, target: Path, compile_only=None,
                  parts=None, part_flags=None) -> None:
    """The sources, the cffi wrapper (``ffi.emit_c_code``: cffi's out-of-line API mode) and the objects,
    compiled in parallel, linked into ``target`` (no setuptools: one compiler process per object)."""
    import cffi

    t0 = time.perf_counter()
    src = work / "src"
    src.mkdir()
    for fname, text in files.items():
        (src / fname).write_text(text)
    cc = compiler()
    c_files = sorted(compile_only or (f for f in files if f.endswith(".c")))
    headers = sorted(f for f in files if f.endswith(".h"))
    ffi = cffi.FFI()
    ffi.cdef("\n".join(cdef_of(files[h]) for h in headers))
    ffi.set_source(name, "\n".join(f'#include "{h}"' for h in headers))
    wrapper = work / f"{name}.c"
    with contextlib.redirect_stdout(io.StringIO()):   # cffi says "generating <file>"
        ffi.emit_c_code(str(wrapper))
    objects = _compile_objects(src, c_files, label, flags, cc, parts, wrapper, part_flags)
    built = work / (name + ext_suffix())
    out = subprocess.run([*_link_command(cc), *map(str, objects), "-o", str(built)], capture_output=True, text=True)
    if out.returncode != 0:
        raise BuildError(f"{label}: linking the module failed:\n{_first_error_lines(out.stderr)}")
    stats["compiles"] += 1
    with open(cache_dir() / "compile.log", "a") as fh:  # one line per real compile (for tests and audits)
        fh.write(json.dumps({"module": name, "pid": os.getpid(), "time": time.time(), "label": label,
                             "seconds": round(time.perf_counter() - t0, 2)}) + "\n")
    os.replace(built, target)


def _extension_name(base: str, source: str, include_dirs, key, flags) -> str:
    """``<base>_<sha256[:16]>`` of what :func:`build_extension` compiles."""
    h = hashlib.sha256(source.encode() + b"\0")
    cc = compiler()
    for part in (" ".join(cc), compiler_version(cc), " ".join(flags), *include_dirs, *map(str, key), ext_suffix(),
                 sys.implementation.cache_tag or ""):
        h.update(part.encode() + b"\0")
    return f"{base}_{h.hexdigest()[:16]}"


def extension_path(base: str, source: str, include_dirs=(), key=(), flags=None) -> Path:
    """Where the compile cache keeps :func:`build_extension`'s module for these arguments (it may not exist)."""
    flags = opt_flags() if flags is None else flags
    return modules_dir() / (_extension_name(base, source, include_dirs, key, flags) + ext_suffix())


def build_extension(base: str, source: str, label: str, include_dirs=(), key=(), flags=None,
                    lock_timeout: float = 600.0):
    """Compile one hand-written C file (``source``, its text) into a plain CPython extension module, cached
    and locked as :func:`build_module`'s modules are (no cffi, no setuptools): named
    ``<base>_<sha256[:16]>`` of (source, compiler and version, flags, include dirs, ``key`` (e.g. numpy's
    version for its C API), Python ABI); checked with the strict flags (``include_dirs`` as system headers,
    whose own warnings are not the file's), compiled with ``flags``, imported.  The file defines its init
    function from ``SG_FASTCALL_NAME`` / ``SG_FASTCALL_INIT``.  Returns ``(module, name, path)``."""
    flags = opt_flags() if flags is None else flags
    cc = compiler()
    name = _extension_name(base, source, include_dirs, key, flags)

    def compile_into(work: Path, target: Path) -> None:
        src = work / f"{base}.c"
        src.write_text(source)
        defs = [f'-DSG_FASTCALL_NAME="{name}"', f"-DSG_FASTCALL_INIT=PyInit_{name}"]
        inc = [x for d in include_dirs for x in ("-isystem", str(d))]
        for used, cmd in ((STRICT_FLAGS, [*cc, *STRICT_FLAGS, *defs, *inc, "-c", str(src), "-o", os.devnull]),
                          (flags, [*_link_command(cc), *flags, "-std=c99", "-fPIC", *defs, *inc, str(src), "-o",
                                   str(work / target.name)])):
            out = subprocess.run(cmd, capture_output=True, text=True, cwd=work)
            if out.returncode != 0:
                raise BuildError(f"{label}: {src.name} does not compile with {' '.join(used)}:\n"
                                 f"{_first_error_lines(out.stderr)}")
        stats["compiles"] += 1
        with open(cache_dir() / "compile.log", "a") as fh:
            fh.write(json.dumps({"module": name, "pid": os.getpid(), "time": time.time()}) + "\n")
        os.replace(work / target.name, target)

    # a stage of its own: a model's "compile" stage counts the model's modules; this one is built once per
    # cache (every later build is a hit), whatever the model
    with progress.step("extension", name) as step:
        return _cached(name, label, lock_timeout, step, compile_into)
