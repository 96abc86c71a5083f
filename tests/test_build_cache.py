"""The build cache: hits compile nothing, content changes give new modules, concurrent builds compile
once, interrupted builds leave nothing a later run picks up, compiler trouble reads clearly."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import symgen
import symgen.pipeline.compile as compile_stage
import symgen.pipeline.sources as sources_stage
from conftest import TIMINGS
from symgen.pipeline.compile import BuildError

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SYMGEN_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _compiles(cache: Path) -> list:
    log = cache / "compile.log"
    return [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []


def test_second_build_is_a_hit(fresh_cache, monkeypatch):
    h = symgen.hinge("PIN", axis=(0, 1, 0))
    k1 = symgen.compile_hinge(h)
    assert len(_compiles(fresh_cache)) == 1

    def no_compiler(*a, **kw):
        raise AssertionError("the compiler was called on a cache hit")

    monkeypatch.setattr(compile_stage, "_compile_into", no_compiler)
    t = time.perf_counter()
    k2 = symgen.compile_hinge(h)
    TIMINGS["compile_hinge cache hit (in process)"] = time.perf_counter() - t
    assert k2.module_name == k1.module_name and len(_compiles(fresh_cache)) == 1
    np.testing.assert_array_equal(k2.transform(np.array([0.7])), k1.transform(np.array([0.7])))


def test_changed_template_gives_a_new_module(fresh_cache, tmp_path):
    h = symgen.hinge("SLIDER", axis=(1, 0, 0))
    k1 = symgen.compile_hinge(h)
    tdir = tmp_path / "templates"
    from symgen.codegen.render import templates_dir

    shutil.copytree(templates_dir(), tdir)
    src = (tdir / "hinge.c.jinja").read_text()
    (tdir / "hinge.c.jinja").write_text(src.replace(" * Inputs:", " * (edited template)\n * Inputs:"))
    k2 = sources_stage.compile_hinge(h, template_path=tdir)
    assert k2.module_name != k1.module_name
    assert len(_compiles(fresh_cache)) == 2
    np.testing.assert_array_equal(k2.transform(np.array([0.3])), k1.transform(np.array([0.3])))


_BUILD_SCRIPT = textwrap.dedent("""
    import sys, numpy as np, symgen
    k = symgen.compile_hinge(symgen.hinge("UJOINT", axes=[(0, 0, 1), (0, 1, 0)]))
    print(k.module_name, repr(float(k.transform(np.array([0.1, 0.2]))[0, 0])))
""")


def _spawn(cache: Path):
    env = dict(os.environ, SYMGEN_CACHE_DIR=str(cache))
    return subprocess.Popen([sys.executable, "-c", _BUILD_SCRIPT], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_two_concurrent_processes_compile_once(fresh_cache):
    procs = [_spawn(fresh_cache), _spawn(fresh_cache)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    assert outs[0][0] == outs[1][0]  # same module, same numbers
    assert len(_compiles(fresh_cache)) == 1


def test_interrupted_build_is_recovered(fresh_cache):
    p = _spawn(fresh_cache)
    tmp = fresh_cache / "tmp"
    deadline = time.time() + 120
    while time.time() < deadline and not (tmp.exists() and list(tmp.glob("*/src/*.c"))):
        time.sleep(0.005)
    assert tmp.exists() and any(tmp.iterdir()), "the build never started"
    time.sleep(0.05)  # the sources are written: inside the compilers now (they run for several tenths of a second)
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=30)
    assert not list((fresh_cache / "modules").glob("*")), "a killed build left a module behind"
    q = _spawn(fresh_cache)  # the lock is free again and the build completes
    out, err = q.communicate(timeout=300)
    assert q.returncode == 0, err
    assert len(_compiles(fresh_cache)) == 1


def test_compile_error_is_one_readable_message(fresh_cache):
    files = {"bad.h": "/* SG_CDEF_BEGIN */\nvoid sg_bad(double *out);\n/* SG_CDEF_END */\n",
             "bad.c": '#include "bad.h"\nvoid sg_bad(double *out)\n{\n    out[0] = undeclared_thing;\n}\n'}
    with pytest.raises(BuildError) as exc:
        compile_stage.build_module("bad", files, "hinge BAD(axis=?)")
    msg = str(exc.value)
    assert msg.startswith("hinge BAD(axis=?): bad.c does not compile")
    assert "undeclared_thing" in msg and "error" in msg and len(msg.splitlines()) < 12
    assert not list((fresh_cache / "modules").glob("*"))


def test_missing_compiler_is_reported(fresh_cache, monkeypatch):
    monkeypatch.setattr(compile_stage.shutil, "which", lambda name: None)
    with pytest.raises(BuildError, match="no C compiler found"):
        symgen.compile_hinge(symgen.hinge("PIN", axis=(1, 0, 0)))


def test_build_hinges_cli_cold_and_warm(tmp_path):
    """`python -m symgen build hinges` with a cold compile cache, then again (times printed, not asserted); the
    output loads with sympy and jinja2 unavailable.  The fresh cache starts with the session's derivations and
    hinge C (the sympy work, which every test shares and the session's ``isolated_cache`` does from empty), so the
    first run generates nothing symbolic again and compiles everything."""
    cache = tmp_path / "cache"
    for shared in ("derive", "emit"):
        src = Path(os.environ["SYMGEN_CACHE_DIR"]) / shared
        if src.is_dir():
            shutil.copytree(src, cache / shared)
    env = dict(os.environ, SYMGEN_CACHE_DIR=str(cache))
    times = []
    for _ in range(2):
        t = time.perf_counter()
        out = subprocess.run([sys.executable, "-m", "symgen", "build", "hinges", "--out", str(tmp_path / "gen")],
                             cwd=ROOT, env=env, capture_output=True, text=True)
        times.append(time.perf_counter() - t)
        assert out.returncode == 0, out.stderr
    TIMINGS["python -m symgen build hinges, cold compile cache"] = times[0]
    TIMINGS["python -m symgen build hinges, warm cache"] = times[1]
    assert "(cache hit)" in out.stderr and f"[{len(symgen.HINGE_TYPES)}/{len(symgen.HINGE_TYPES)}]" in out.stderr
    assert out.stdout.startswith("built the hinge library")  # progress on stderr, the result on stdout
    gen = tmp_path / "gen" / "hinges"
    doc = (gen / "EQUATIONS.md").read_text()
    assert not list(gen.glob("*.tmp")) and not list(gen.glob(".*.tmp"))
    for name in symgen.HINGE_TYPES:
        assert f"## {name}\n" in doc
        assert (gen / f"{name.lower()}.c").exists() and (gen / f"{name.lower()}.h").exists()
    script = textwrap.dedent(f"""
        import sys
        sys.modules["sympy"] = None; sys.modules["jinja2"] = None   # importing either now fails
        import numpy as np
        from symgen.runtime import load_hinge_library
        lib = load_hinge_library({str(gen)!r})
        print(lib["PIN"].transform(np.array([0.5]))[0, 0], len(lib))
    """)
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    val, n = out.stdout.split()
    assert abs(float(val) - np.cos(0.5)) < 1e-16 and int(n) == len(symgen.HINGE_TYPES)


@pytest.mark.parametrize("body, warning", [
    ("static void unused(void) {}\nint f(void) { return 0; }\n", "unused-function"),
    ("int f(int x) { if (x) return 1; }\n", "return-type"),
    ("int f(void) { int z; return z; }\n", "uninitialized"),
    ("int f(void) { int a[0]; (void)a; return 0; }\n", "pedantic"),
])
def test_the_strict_check_stops_early_but_misses_no_warning(tmp_path, body, warning):
    """symgen.pipeline.compile.strict_check stops after the middle end (STRICT_STOP) and still reports what a full
    -O0 compile with the strict flags reports: an unused static function, a missing return, an uninitialized
    value, a pedantic error."""
    from symgen.pipeline.compile import BuildError, strict_check

    (tmp_path / "w.c").write_text(body)
    with pytest.raises(BuildError, match=warning):
        strict_check(tmp_path / "w.c", "test")
    (tmp_path / "ok.c").write_text("int f(int x) { return x; }\n")
    strict_check(tmp_path / "ok.c", "test")


@pytest.mark.parametrize("level", ["0", "3"])
@pytest.mark.parametrize("body, warning", [
    ("static void unused(void) {}\nint f(void) { return 0; }\n", "unused-function"),
    ("int f(int x) { if (x) return 1; return 0; }\nint g(int x) { if (x) return 1; }\n", "return-type"),
    ("int f(void) { int a[0]; (void)a; return 0; }\n", "pedantic"),
])
def test_a_module_with_a_warning_does_not_build_at_any_level(tmp_path, monkeypatch, level, body, warning):
    """build_module refuses C with a strict-flag warning whether it checks in a run of its own (-O3) or in the
    objects' own compiler runs (-O0, symgen.pipeline.compile.one_run_checks), and builds the same file
    without it."""
    from symgen.pipeline.compile import BuildError, build_module, one_run_checks, opt_flags

    monkeypatch.setenv("SYMGEN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("SYMGEN_OPT", level)
    assert one_run_checks(opt_flags()) == (level == "0")
    header = "/* SG_CDEF_BEGIN */\nint f(int x);\n/* SG_CDEF_END */\n"
    with pytest.raises(BuildError, match=warning):
        build_module(f"w{level}", {"w.c": body, "w.h": header.replace("int x", "void" if "f(void)" in body
                                                                         else "int x")}, "test")
    ok, _, _ = build_module(f"ok{level}", {"ok.c": "int f(int x) { return 2 * x; }\n", "ok.h": header}, "test")
    assert ok.lib.f(21) == 42


def test_hinge_sources_do_not_depend_on_which_spelling_was_cached_first(tmp_path, monkeypatch):
    """PIN(), PIN(axis=(0, 0, 1)) and PIN(axis=(0.0, 0.0, 1.0)) share one derivation; each hinge's C carries its
    own label, whichever spelling reached the cache first (else one model's C, and its module hash, would depend
    on the cache's history)."""
    monkeypatch.setenv("SYMGEN_CACHE_DIR", str(tmp_path / "cache"))
    from symgen.pipeline.sources import hinge_sources

    spellings = [symgen.hinge("PIN"), symgen.hinge("PIN", axis=(0, 0, 1)), symgen.hinge("PIN", axis=(0.0, 0.0, 1.0))]
    first = [hinge_sources(h, "pin")[0]["pin.c"] for h in spellings]
    second = [hinge_sources(h, "pin")[0]["pin.c"] for h in reversed(spellings)][::-1]
    assert first == second
    for h, c in zip(spellings, first):
        assert h.spec.label() in c


@pytest.mark.parametrize("form", ["auto", "per_kind"])
def test_the_derivative_module_reuses_the_value_modules_parts(tmp_path, form):
    """A model's derivative module (compiled on the first derivative call) takes the value module's objects from the
    cache: every part the value module compiles preprocesses (the compiler's ``-E -P``, the objects' cache key) to
    the same text from both modules' sources, each with its module's defines (but the small glue part, which
    holds the derivatives' stubs and batches).  arm7 straight-line (FD, ID, M, their
    lanes) and in the per-kind form (the looped lanes)."""
    from symgen.abi.layout import ALL_DERIVATIVE_PARTS, DERIVATIVE_GLUE_PART
    from symgen.model import load_model
    from symgen.pipeline.compile import compiler

    model = load_model(ROOT / "examples" / "models" / "arm7.urdf")
    texts = {}
    for derivatives in (False, True):
        files, manifest = sources_stage.cached_model_sources(model, form, derivatives)
        d = tmp_path / ("der" if derivatives else "val")
        d.mkdir()
        for name, text in files.items():
            (d / name).write_text(text)
        texts[derivatives] = (d, manifest)
    d_val, manifest = texts[False]
    # the glue part (the derivatives' stubs and batches) is the one value part that differs, and it is small
    value_parts = [k for k in manifest["parts"] if k not in ALL_DERIVATIVE_PARTS and k != DERIVATIVE_GLUE_PART]
    assert 0 in value_parts and len(value_parts) >= 2, value_parts
    for k in value_parts:
        pre = {}
        for derivatives, (d, m) in texts.items():
            cmd = [*compiler(), "-std=c99", "-E", "-P", f"-DSG_PART={k}", f"-I{d}", str(d / f"{m['name']}.c")]
            if not derivatives:
                cmd.insert(-1, "-DSG_NO_DERIVATIVES")
            pre[derivatives] = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        assert pre[False] == pre[True], f"part {k} differs between the modules with and without the derivatives"


def test_the_analytic_id_derivatives_compile_at_o2(tmp_path, monkeypatch):
    """A parametric build's analytic ID derivatives (straight-line: their inertias come from p) compile at -O2 where
    the module takes -O3 (one state and lanes): the manifest caps their parts (``part_opt``), package's compile
    options give them ``-O2`` after the module's flags (the last -O wins), in the derivative module only; no part
    is capped at another level, nor in a build without parameters (its recursions are looped, small); a module
    built with part flags runs.  (Talos: the same bits and speed at -O2, in half the compile time: CHANGELOG.)"""
    import dataclasses

    from symgen.abi.layout import DERIVATIVE_LANE_PARTS, DERIVATIVE_PARTS, MATS_PART
    from symgen.model import load_model
    from symgen.pipeline.compile import build_module, module_key
    from symgen.pipeline.package import _compile_options

    model = load_model(ROOT / "examples" / "models" / "arm7.urdf")
    # (the part of atbi_matrices and upsilon alone, MATS_PART, is capped at -O1 in every build of arm7)
    mats = {MATS_PART: 1}
    assert {int(k): v for k, v in sources_stage.cached_model_sources(model, "auto", True)[1]["part_opt"].items()} == mats
    model = dataclasses.replace(model, parameters=["link7.mass", "link3.inertia"])
    manifest = sources_stage.cached_model_sources(model, "auto", True)[1]
    capped = {DERIVATIVE_PARTS["id"], DERIVATIVE_LANE_PARTS["id"]}
    assert {int(k): v for k, v in manifest["part_opt"].items()} == {**{k: 2 for k in capped}, **mats}
    for level, want in (("3", {k: ("-O2",) for k in capped}), ("2", {}), ("0", {})):
        monkeypatch.setenv("SYMGEN_OPT", level)
        flags, parts, part_flags = _compile_options(manifest, True)
        low = {MATS_PART: ("-O1",)} if level == "3" else {}
        assert part_flags == {**want, **low} and f"-O{level}" in flags and capped <= set(parts), level
        assert _compile_options(manifest, False)[2] == low           # the value module has no derivative part
    monkeypatch.setenv("SYMGEN_OPT", "3")
    monkeypatch.setenv("SYMGEN_CACHE_DIR", str(tmp_path / "cache"))
    header = "/* SG_CDEF_BEGIN */\nint f(int x);\nint g(int x);\n/* SG_CDEF_END */\n"
    body = ("#if !defined(SG_PART) || SG_PART == 0\nint f(int x) { return 2 * x; }\n#endif\n"
            "#if !defined(SG_PART) || SG_PART == 1\nint g(int x) { return 3 * x; }\n#endif\n")
    files = {"m.c": body, "m.h": header}
    assert module_key("m", files, parts=[0, 1]) != module_key("m", files, parts=[0, 1], part_flags={1: ("-O2",)})
    seen, run = [], subprocess.run

    def recording(cmd, *a, **kw):
        seen.append(list(cmd))
        return run(cmd, *a, **kw)
    monkeypatch.setattr(compile_stage.subprocess, "run", recording)
    mod, _, _ = build_module("m", files, "test", parts=[0, 1], part_flags={1: ("-O2",)})
    assert (mod.lib.f(7), mod.lib.g(7)) == (14, 21)
    objects = {c[c.index("-o") + 1].rsplit("/", 1)[-1]: c for c in seen if "-c" in c and "-E" not in c}
    levels = {o: [a for a in c if a.startswith("-O")] for o, c in objects.items() if ".part" in o}
    assert levels == {"m.part0.o": ["-O3"], "m.part1.o": ["-O3", "-O2"]}, levels


def test_the_parts_compile_longest_first_by_their_lines(tmp_path):
    """The build compiles a model's parts longest first (two at a time on two cores): the manifest's order follows
    each part's own lines, which here the C preprocessor counts (``-E -P -DSG_PART=k``: the lines the part adds to
    the file's common head, the lines of part 15, the smallest, taken as that head); Talos's forward dynamics
    part once came third behind a part 0 weighed as the rest of the file."""
    from symgen.model import load_model
    from symgen.pipeline.compile import compiler

    model = load_model(ROOT / "examples" / "models" / "humanoid.urdf", floating_base=True)
    files, manifest = sources_stage.cached_model_sources(model, "auto", False)
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    own = {}
    for k in manifest["parts"]:
        cmd = [*compiler(), "-std=c99", "-E", "-P", f"-DSG_PART={k}", "-DSG_NO_DERIVATIVES", f"-I{tmp_path}",
               str(tmp_path / f"{manifest['name']}.c")]
        own[k] = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.count("\n")
    head = min(own.values())
    big = [k for k in manifest["parts"] if own[k] - head > 200]          # the parts that matter for the order
    assert len(big) >= 3, own
    # no part comes before one more than 10 % longer (the two counts differ by comments and blank lines)
    for i, a in enumerate(big):
        for b in big[i + 1:]:
            assert own[a] - head >= 0.9 * (own[b] - head), (manifest["parts"], own)


def test_a_warm_build_imports_neither_sympy_nor_jinja2(tmp_path):
    """A warm build (the model's sources and module cached) does no symbolic or template work, so it imports
    neither sympy nor jinja2 (0.45 s of imports): the source cache's key reads only light modules (the size
    limits live in symgen.algorithms.soa).  A cold build first, then a second process builds the same model."""
    env = dict(os.environ, SYMGEN_CACHE_DIR=str(tmp_path / "cache"))
    script = textwrap.dedent(f"""
        import sys
        import symgen
        symgen.build({str(ROOT / "examples" / "models" / "double_pendulum.yaml")!r})
        print("sympy" in sys.modules, "jinja2" in sys.modules)
    """)
    runs = [subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True)
            for _ in range(2)]
    assert all(r.returncode == 0 for r in runs), [r.stderr for r in runs]
    assert runs[0].stdout.split() == ["True", "True"]          # the cold build derives and renders
    assert runs[1].stdout.split() == ["False", "False"], runs[1].stdout
