"""Derived expressions work with sympy's own tools (issue 12, item 5).

Every symbolic attribute of every hinge type goes through ``sympy.lambdify`` (default modules, "numpy",
"math", "mpmath"; with the ``stumpff._imp_`` hook and, ``use_imps=False``, through the printed code),
``sympy.pycode`` (executed), ``sympy.ccode`` (compiled with the system C compiler and called through ctypes)
and ``sympy.latex``, and is compared with ``h.numeric`` at random states, at the neutral state (rotation
exactly 0, where the Stumpff functions sit on their removable singularity) and at a 1e-9 rotation.
Tolerance 1e-12 of the data scale (both sides evaluate the same expression; differences are rounding).

The printed Stumpff code itself is checked against 40-digit mpmath on both sides of the series/closed-form
switch, at and near 0, for negative arguments, for warnings and for nan.
"""
from __future__ import annotations

import ctypes
import math
import shutil
import subprocess
import warnings

import mpmath
import numpy as np
import pytest
import sympy as sp
from scipy.spatial.transform import Rotation
from sympy.printing.numpy import NumPyPrinter
from sympy.printing.pycode import MpmathPrinter

import symgen
from helpers import assert_close, case_id, get_hinge, neutral_q, random_q
from symgen.hinges import derive
from symgen.symbolic.spatial import stumpff

RTOL = 1e-12

CASES = [(t, {}) for t in symgen.HINGE_TYPES] + [
    ("PIN", {"axis": (0.6, 0.0, 0.8)}),
    ("HELICAL", {"axis": (0, 1, 0), "pitch": 0.05}),
    ("CUSTOM", {"subhinges": ["SPHERICAL", "LINEAR"]}),
    ("CUSTOM", {"subhinges": ["SCREW", "PIN"], "pitch": 0.2}),
]
CASE_IDS = [case_id(c) for c in CASES]
ATTRS = (*derive.KERNELS, "sanitize", "jacobian", "jacobian_dot")
#: (modules, use_imps): every module through stumpff._imp_, and the printed code of each printer family
#: (default modules print with SciPyPrinter, whose stumpff code is NumPyPrinter's)
LAMBDIFY_VARIANTS = [(m, True) for m in (None, "numpy", "math", "mpmath")] + [(m, False) for m in
                                                                               (None, "math", "mpmath")]
#: as printed, ccode repeats a stumpff argument in each branch (C has no expression-level binding); above
#: this many characters a function is only compiled after sympy.cse (gcc needs minutes for a few MB)
RAW_C_LIMIT = 60_000

# a constant frame offset X_pt for jacobian / jacobian_dot
_OFF_R = Rotation.from_rotvec([0.3, -0.5, 0.2]).as_matrix()
_OFF_L = np.array([0.1, -0.2, 0.3])


def _np_phi_T(R, l):
    lx = np.array([[0, -l[2], l[1]], [l[2], 0, -l[0]], [-l[1], l[0], 0]])
    return np.block([[R, lx @ R], [np.zeros((3, 3)), R]]).T


def _expr(h, attr) -> sp.Matrix:
    if attr == "sanitize":
        return h.sanitize_expr if h.has_sanitize else h.q
    if attr in ("jacobian", "jacobian_dot"):
        off = (sp.Matrix(_OFF_R.tolist()), sp.Matrix(_OFF_L.tolist()))
        return getattr(h, attr)(off)
    return getattr(h, attr)


def _reference(h, attr):
    """``f(q, u)`` from ``h.numeric`` (the jacobians as phi^T(p, t) times the numeric coord maps)."""
    if attr in ("jacobian", "jacobian_dot"):
        f = h.numeric("coord_map" if attr == "jacobian" else "coord_map_dot")
        P = _np_phi_T(_OFF_R, _OFF_L)
        return lambda q, u: P @ (f(q) if attr == "jacobian" else f(q, u))
    f = h.numeric(attr)
    return (lambda q, u: f(q, u)) if attr in derive.NEEDS_U else (lambda q, u: f(q))


def _large_angle_q(h):
    """Every rotation by 2.6 rad (s = 6.76: the closed-form side of the series switch at s = 4)."""
    axis = np.array([0.48, -0.6, 0.64])
    parts = {"PIN": [2.6], "SCREW": [-2.6], "LINEAR": [0.7], "LINEAR3": [0.3, -0.4, 0.5],
             "SPHERICAL": list(2.6 * axis), "SPHERICAL_QUAT": list(np.r_[np.sin(1.3) * axis, np.cos(1.3)])}
    q_sub = [x for s in h.spec.subhinges for x in parts.get(s.type, [])]
    q = np.empty(len(q_sub))
    for j, i in enumerate(h.spec.q_order):
        q[i] = q_sub[j]
    return q


def _states(h):
    """Two random states, one with every rotation at 2.6 rad (past the series switch), the neutral state
    (rotation exactly 0) and a 1e-9 perturbation of it."""
    rng = np.random.default_rng(12)
    out = [(random_q(h, rng, a), rng.normal(size=h.nu)) for a in (2.5, 3.0)]
    out.append((_large_angle_q(h), rng.normal(size=h.nu)))
    out.append((neutral_q(h), rng.normal(size=h.nu)))
    out.append((neutral_q(h) + 1e-9 * rng.normal(size=h.nq), rng.normal(size=h.nu)))
    return out


def _as_array(value, shape):
    return np.array(value, dtype=float).reshape(shape)


@pytest.fixture(params=CASES, ids=CASE_IDS, scope="module")
def case(request):
    return request.param


@pytest.fixture(params=ATTRS)
def attr(request):
    return request.param


def _check_states(h, attr, fn, what, shape):
    ref = _reference(h, attr)
    for q, u in _states(h):
        assert_close(fn(q, u), _as_array(ref(q, u), shape), RTOL, f"{h.hinge_type} {attr} {what} at q={q}")


# ----------------------------------------------------------------------------------------------
# lambdify
# ----------------------------------------------------------------------------------------------

def test_lambdify_every_module(case, attr):
    h = get_hinge(case)
    M = _expr(h, attr)
    args = [*h.q, *h.u]
    for module, use_imps in LAMBDIFY_VARIANTS:
        target = M.tolist() if module in ("math", "mpmath") else M   # their printers have no Matrix
        kw = {} if module is None else {"modules": module}
        f = sp.lambdify(args, target, use_imps=use_imps, **kw)
        conv = mpmath.mpf if module == "mpmath" else float

        def fn(q, u, f=f, conv=conv):
            with warnings.catch_warnings():
                # stumpff code never warns; sympy's numpy select() of the sanitize Piecewise (no stumpff
                # in it) evaluates its unused |r| > pi branch, dividing by |r| = 0 at the neutral state
                warnings.simplefilter("ignore" if attr == "sanitize" else "error", RuntimeWarning)
                return _as_array(f(*[conv(x) for x in (*q, *u)]), M.shape)

        _check_states(h, attr, fn, f"lambdify(modules={module!r}, use_imps={use_imps})", M.shape)


# ----------------------------------------------------------------------------------------------
# pycode
# ----------------------------------------------------------------------------------------------

def test_pycode_executes(case, attr):
    h = get_hinge(case)
    M = _expr(h, attr)
    names = [str(s) for s in (*h.q, *h.u)]
    body = [sp.pycode(e) for e in M]
    src = "def f(%s):\n    return [%s]\n" % (", ".join(names), ",\n        ".join(body))
    assert "stumpff" not in src and "Not supported" not in src
    ns = {"math": math}
    exec(compile(src, f"<pycode {case_id(case)} {attr}>", "exec"), ns)
    _check_states(h, attr, lambda q, u: _as_array(ns["f"](*map(float, (*q, *u))), M.shape), "pycode", M.shape)


# ----------------------------------------------------------------------------------------------
# ccode: all expressions in one C file, compiled once; once as printed, once after sympy.cse
# ----------------------------------------------------------------------------------------------

def _c_function(name, h, M, use_cse):
    lines = ["void %s(const double *q, const double *u, double *out)" % name, "{"]
    lines += ["    const double %s = q[%d];" % (s, i) for i, s in enumerate(h.q)]
    lines += ["    const double %s = u[%d];" % (s, i) for i, s in enumerate(h.u)]
    lines += ["    (void)%s;" % s for s in ("q", "u", "out", *h.q, *h.u)]
    exprs = list(M)
    if use_cse:
        temps, exprs = sp.cse(exprs, symbols=sp.numbered_symbols("x"))
        lines += ["    const double %s = %s;" % (t, sp.ccode(e)) for t, e in temps]
    lines += ["    out[%d] = %s;" % (i, sp.ccode(e)) for i, e in enumerate(exprs)]
    return "\n".join(lines + ["}", ""])


@pytest.fixture(scope="module")
def c_library(tmp_path_factory):
    """One shared library with a C function per (case, attribute, as printed / after cse)."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    src = ["#define _DEFAULT_SOURCE  /* M_PI, which sympy.ccode prints for pi */", "#include <math.h>", ""]
    names = {}
    for case in CASES:
        h = get_hinge(case)
        for attr in ATTRS:
            M = _expr(h, attr)
            for use_cse in (False, True):
                name = "f%d" % len(names)
                text = _c_function(name, h, M, use_cse)
                assert "stumpff" not in text and "Not supported" not in text, text[:2000]
                if len(text) > RAW_C_LIMIT:
                    name = "%d characters" % len(text)
                else:
                    src.append(text)
                names[(case_id(case), attr, use_cse)] = (name, M.shape)
    d = tmp_path_factory.mktemp("ccode")
    (d / "printed.c").write_text("\n".join(src))
    subprocess.run([cc, "-std=c99", "-O0", "-Wall", "-Wextra", "-pedantic", "-Werror", "-shared", "-fPIC",
                    "-o", str(d / "printed.so"), str(d / "printed.c"), "-lm"], check=True)
    return ctypes.CDLL(str(d / "printed.so")), names


@pytest.mark.parametrize("use_cse", [False, True], ids=["printed", "cse"])
def test_ccode_compiles_and_agrees(case, attr, use_cse, c_library):
    lib, names = c_library
    h = get_hinge(case)
    name, shape = names[(case_id(case), attr, use_cse)]
    if not name.startswith("f"):
        pytest.skip(f"ccode as printed is {name} (> RAW_C_LIMIT): compiled after sympy.cse only")
    fn = getattr(lib, name)
    P = ctypes.POINTER(ctypes.c_double)

    def call(q, u):
        q, u = np.ascontiguousarray(q, float), np.ascontiguousarray(u, float)
        out = np.full(int(np.prod(shape)), np.nan)
        fn(q.ctypes.data_as(P), u.ctypes.data_as(P), out.ctypes.data_as(P))
        return out.reshape(shape)

    _check_states(h, attr, call, "ccode" + (" after cse" if use_cse else ""), shape)


# ----------------------------------------------------------------------------------------------
# latex
# ----------------------------------------------------------------------------------------------

def test_latex(case, attr):
    h = get_hinge(case)
    M = _expr(h, attr)
    tex = sp.latex(M)
    assert "stumpff" not in tex
    if M.has(stumpff):
        assert r"c_{" in tex


# ----------------------------------------------------------------------------------------------
# the printed Stumpff code itself
# ----------------------------------------------------------------------------------------------

_X = sp.Symbol("x", real=True)
_S_GRID = [0.0, 1e-300, 1e-16, 1e-9, 1e-3, 0.5, 2.0, 3.999, 4.0, 4.001, 9.0, 30.0, 100.0]
_S_GRID = _S_GRID + [-s for s in _S_GRID[1:]]
_ORDERS = range(0, 9)


def _exact(k, s):
    return float(stumpff(k, sp.Float(s, 60)).evalf(40))


def _check_grid(k, f, what, rtol=1e-13):
    for s in _S_GRID:
        exact, got = _exact(k, s), float(f(s))
        scale = max(abs(exact), 1.0 / math.factorial(k))
        assert abs(got - exact) <= rtol * scale, f"c_{k}({s!r}) {what}: {got!r} vs {exact!r}"


@pytest.mark.parametrize("k", _ORDERS)
def test_printed_stumpff_python_numpy_mpmath(k):
    e = stumpff(k, _X)
    py = eval("lambda x: " + sp.pycode(e), {"math": math})
    _check_grid(k, py, "pycode")
    npf = eval("lambda x: " + NumPyPrinter().doprint(e), {"numpy": np})
    with np.errstate(divide="raise", invalid="raise", over="raise"):  # no branch divides by 0 or overflows
        vals = npf(np.array(_S_GRID))
        _check_grid(k, lambda s: vals[_S_GRID.index(s)], "NumPyPrinter")
    assert np.isnan(npf(np.array([np.nan]))[0])
    mpf = eval("lambda x: " + MpmathPrinter().doprint(e), {"mpmath": mpmath})
    _check_grid(k, lambda s: mpf(mpmath.mpf(s)), "MpmathPrinter")


def test_printed_stumpff_c():
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    import tempfile
    from pathlib import Path

    src = ["#include <math.h>"] + ["double c%d(double x) { return %s; }" % (k, sp.ccode(stumpff(k, _X)))
                                   for k in _ORDERS]
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "s.c").write_text("\n".join(src) + "\n")
        subprocess.run([cc, "-std=c99", "-Wall", "-Wextra", "-pedantic", "-Werror", "-shared", "-fPIC",
                        "-o", str(Path(d) / "s.so"), str(Path(d) / "s.c"), "-lm"], check=True)
        lib = ctypes.CDLL(str(Path(d) / "s.so"))
        for k in _ORDERS:
            f = getattr(lib, "c%d" % k)
            f.restype, f.argtypes = ctypes.c_double, [ctypes.c_double]
            _check_grid(k, f, "ccode")


def test_lambdify_mpmath_keeps_working_precision():
    f = sp.lambdify(_X, stumpff(3, _X), "mpmath")
    with mpmath.workdps(40):
        for s in ("1e-12", "0.7", "25"):
            got, exact = f(mpmath.mpf(s)), stumpff(3, sp.Float(s, 60)).evalf(45)
            assert abs(got - mpmath.mpf(str(exact))) < mpmath.mpf("1e-38") * abs(got)


def test_printer_rules_win():
    """symgen's C emitter keeps sg_stumpff; user_functions names a function; lambdify to sympy stays
    symbolic; the twin agrees with stumpff_np."""
    from symgen.codegen.kernels import SgCPrinter

    e = stumpff(2, _X**2)
    assert SgCPrinter({}).doprint(e) == "sg_stumpff(2, (x*x))"
    assert sp.ccode(e, user_functions={"stumpff": "my_stumpff"}) == "my_stumpff(2, pow(x, 2))"
    assert sp.pycode(e, user_functions={"stumpff": "my_stumpff"}) == "my_stumpff(2, x**2)"
    assert sp.lambdify(_X, e, "sympy")(_X) == e
    assert sp.lambdify(_X, e)(0.0) == 0.5
    assert sp.lambdify(_X, stumpff(1, _X))(np.array([0.0, 1e-12])).tolist() == [1.0, 1.0 - 1e-12 / 6]
