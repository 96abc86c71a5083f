"""Layer 3 and 6: every compiled C kernel against sympy.lambdify of the same expression, the hinge
identities on the compiled kernels, the ATBI hinge step against numpy, strict C99, a plain C main().

Tolerances: C vs lambdify 1e-12 relative (both evaluate the same expression; differences are rounding);
finite differences 1e-6 of the data scale; algebraic identities 1e-10.
"""
from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest

from helpers import CASES, assert_close, body_velocity, case_id, central_diff, get_hinge, log_pose, random_q, rotation_angle
from symgen.pipeline.compile import STRICT_FLAGS
from symgen.pipeline.sources import compile_hinges, hinge_sources

N_STATES = 20
Q_KERNELS = ("transform", "coord_map", "oframe_coord_map", "qdot_map", "pose_gradient", "ortho_complement")
QU_KERNELS = ("coord_map_dot", "bias")


@pytest.fixture(scope="session")
def compiled():
    """All cases in one module, compiled once per session."""
    hs = [get_hinge(c) for c in CASES]
    return dict(zip([case_id(c) for c in CASES], compile_hinges(hs, base="test_cases")))


@pytest.fixture(params=CASES, ids=[case_id(c) for c in CASES])
def pair(request, compiled):
    return get_hinge(request.param), compiled[case_id(request.param)]


def _batch(h, seed, n=N_STATES):
    rng = np.random.default_rng(seed)
    Q = np.array([random_q(h, rng) for _ in range(n)]).reshape(n, h.nq)
    return Q, rng.normal(size=(n, h.nu))


def test_c_equals_lambdify(pair):
    h, k = pair
    Q, U = _batch(h, 0)
    for name in Q_KERNELS:
        c, ref = getattr(k, name)(Q), h.numeric(name)(Q)
        assert_close(c, ref, 1e-12, name)
        for i in (0, N_STATES - 1):
            np.testing.assert_array_equal(getattr(k, name)(Q[i]), c[i])  # batched == unbatched
    for name in QU_KERNELS:
        c, ref = getattr(k, name)(Q, U), h.numeric(name)(Q, U)
        assert_close(c, ref, 1e-12, name)
        np.testing.assert_array_equal(getattr(k, name)(Q[3], U[3]), c[3])
    if h.has_sanitize:
        Qbig = Q * 3.0  # pushes rotation vectors past pi and quaternions off the unit sphere
        assert_close(k.sanitize(Qbig), h.sanitize(Qbig), 1e-12, "sanitize")


def test_kernels_given_sines_and_cosines(pair):
    """The *_sc variants that model code calls (the hinge's angles' sines and cosines computed up front, see
    symgen.codegen.kernels.hinge_trig_args) against the kernels that compute them, and against lambdify: 1e-12."""
    from symgen.codegen.kernels import TRIG_KERNELS, hinge_trig_args

    h, k = pair
    args = hinge_trig_args(h)
    assert len(k.manifest["structure"]["trig_args"]) == len(args)
    if not args:
        assert not any(hasattr(k.lib, f"sg_{k.manifest['slug']}_{n}_sc") for n in TRIG_KERNELS)
        return
    import sympy as sp

    Q, U = _batch(h, 5)
    angles = sp.lambdify([list(h.q)], args, "numpy")
    A = np.array([np.broadcast_to(np.asarray(angles(q), float), len(args)) for q in Q])
    P = np.ascontiguousarray(np.stack([np.sin(A), np.cos(A)], axis=2).reshape(len(Q), 2 * len(args)))
    for name in TRIG_KERNELS:
        want = getattr(k, name)(Q, U) if name in QU_KERNELS else getattr(k, name)(Q)
        got = np.empty_like(want)
        fn = getattr(k.lib, f"sg_{k.manifest['slug']}_{name}_sc_batch")
        fn(len(Q), k.ffi.from_buffer("double[]", Q), k.ffi.from_buffer("double[]", np.ascontiguousarray(U)),
           k.ffi.from_buffer("double[]", P), k.ffi.from_buffer("double[]", got, require_writable=True))
        assert_close(got, want, 1e-12, f"{name}_sc vs {name}")
        ref = h.numeric(name)(Q, U) if name in QU_KERNELS else h.numeric(name)(Q)
        assert_close(got, ref, 1e-12, f"{name}_sc vs lambdify")


def test_identities_on_compiled_kernels(pair):
    """The symbolic layer's identities, evaluated through the C kernels only."""
    h, k = pair
    rng = np.random.default_rng(1)
    done = 0
    while done < 5:
        q, u = random_q(h, rng, 2.0), rng.normal(size=h.nu)
        T = k.transform(q)
        if rotation_angle(T[:3, :3]) > np.pi - 0.3:
            continue
        N = k.qdot_map(q)
        H = k.coord_map(q)
        assert_close(H @ u, body_velocity(T, central_diff(k.transform, q, N @ u)), 1e-6, "H U = dT/dt")
        assert_close(k.bias(q, u), central_diff(k.coord_map, q, N @ u) @ u, 1e-6, "bias")
        assert_close(k.coord_map_dot(q, u) @ u, k.bias(q, u), 1e-12, "Hdot U = bias")
        fd = np.column_stack([central_diff(lambda x: log_pose(k.transform(x)), q, N[:, j]) for j in range(h.nu)]) \
            if h.nu else np.zeros((6, 0))
        assert_close(k.pose_gradient(q), fd, 1e-6, "pose gradient")
        OC = k.ortho_complement(q)
        assert_close(OC.T @ H, np.zeros((6 - h.nu, h.nu)), 1e-10, "OC^T H")
        R = T[:3, :3]
        assert_close(k.oframe_coord_map(q), np.block([[R, np.zeros((3, 3))], [np.zeros((3, 3)), R]]) @ H, 1e-12, "Ho")
        done += 1


def _spd(rng):
    A = rng.normal(size=(6, 6))
    return A @ A.T + 0.5 * np.eye(6)


def test_atbi_hinge_step(pair):
    """D = H^T P H, Dinv = D^-1, G = P H D^-1, P+ = P - G H^T P (numpy on the C coord map); batched."""
    h, k = pair
    rng = np.random.default_rng(2)
    Q, _ = _batch(h, 3, 4)
    P = np.array([_spd(rng) for _ in range(4)])
    res = k.atbi(Q, P)
    for i in range(4):
        H = k.coord_map(Q[i])
        D = H.T @ P[i] @ H
        assert_close(res["D"][i], D, 1e-12, "D")
        Dinv = np.linalg.inv(D) if h.nu else np.zeros((0, 0))
        assert_close(res["Dinv"][i], Dinv, 1e-10, "Dinv")
        G = P[i] @ H @ Dinv
        assert_close(res["G"][i], G, 1e-10, "G")
        assert_close(res["Pplus"][i], P[i] - G @ H.T @ P[i], 1e-10, "P+")
        assert_close(res["Pplus"][i] @ H, np.zeros((6, h.nu)), 1e-10, "P+ H = 0")
        one = k.atbi(Q[i], P[i])
        np.testing.assert_array_equal(one["Pplus"], res["Pplus"][i])
    if h.nu:
        with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
            k.atbi(Q[0], np.zeros((6, 6)))
        # in a batch, the status names the first state whose D fails (its batch function returns i + 1)
        bad = P.copy()
        bad[2] = bad[3] = 0.0
        with pytest.raises(np.linalg.LinAlgError, match=r"\(state 2 of the batch\)"):
            k.atbi(Q, bad)


def test_shapes_and_out(compiled):
    k = compiled["GIMBAL"]
    with pytest.raises(ValueError, match=r"q must have shape \(3,\) or \(N, 3\)"):
        k.transform(np.zeros(4))
    with pytest.raises(ValueError, match="q and u must both"):
        k.bias(np.zeros((2, 3)), np.zeros(3))
    with pytest.raises(ValueError, match="P must have shape"):
        k.atbi(np.zeros(3), np.eye(5))
    out = np.empty((5, 4, 4))
    assert k.transform(np.zeros((5, 3)), out=out) is out
    np.testing.assert_array_equal(out[2], np.eye(4))
    with pytest.raises(ValueError, match="out must be"):
        k.transform(np.zeros(3), out=np.empty((4, 3)))
    assert k.transform(np.zeros((0, 3))).shape == (0, 4, 4)


# ---------------------------------------------------------------------------------------------
# the generated C itself
# ---------------------------------------------------------------------------------------------

CC = shutil.which("gcc") or shutil.which("cc")


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    d = tmp_path_factory.mktemp("csrc")
    files = {}
    for c in CASES:
        files.update(hinge_sources(get_hinge(c))[0])
    for name, text in files.items():
        (d / name).write_text(text)
    return d, files


@pytest.mark.skipif(CC is None, reason="no C compiler")
def test_every_generated_c_file_is_strict_c99(sources):
    d, files = sources
    c_files = sorted(f for f in files if f.endswith(".c"))
    assert len(c_files) == len({case_id(c) for c in CASES}) or len(c_files) > 19
    for f in c_files:
        includes = re.findall(r"^\s*#\s*include\s*(.+)$", files[f], re.M)
        assert includes == ["<math.h>", f'"{f[:-2]}.h"'], (f, includes)
        out = subprocess.run([CC, *STRICT_FLAGS, "-c", f, "-o", "/dev/null"], cwd=d, capture_output=True, text=True)
        assert out.returncode == 0 and out.stderr == "", f"{f}:\n{out.stderr}"
    for f in (f for f in files if f.endswith(".h")):
        assert "SG_CDEF_BEGIN" in files[f] and "symgen" in files[f].splitlines()[1]


MAIN_C = r"""
#include <stdio.h>
#include "gimbal.h"
#include "ball.h"
int main(void)
{
    const double q[3] = {0.3, -1.1, 2.0};
    const double r[3] = {1e-9, 0.4, -0.2};
    const double u[3] = {0.5, -0.25, 1.5};
    double X[16], b[6], P[36], atbi[3 * 3 * 2 + 18 + 36];
    int i, status;
    for (i = 0; i < 36; ++i) P[i] = (i % 7 == 0) ? 2.0 : 0.1;  /* diagonal 2, off-diagonal 0.1: SPD */
    sg_gimbal_transform(q, NULL, NULL, X);
    sg_ball_bias(r, u, NULL, b);
    status = sg_gimbal_atbi(q, NULL, P, atbi);
    for (i = 0; i < 16; ++i) printf("%.17g\n", X[i]);
    for (i = 0; i < 6; ++i) printf("%.17g\n", b[i]);
    for (i = 0; i < 3 * 3 * 2 + 18 + 36; ++i) printf("%.17g\n", atbi[i]);
    printf("%d\n", status);
    return 0;
}
"""


@pytest.mark.skipif(CC is None, reason="no C compiler")
def test_plain_c_main_calls_kernels(sources, compiled):
    """The kernels build and run from a plain C program (no Python) and print what Python computes."""
    d, _ = sources
    (d / "main.c").write_text(MAIN_C)
    exe = d / "demo"
    build = subprocess.run([CC, *STRICT_FLAGS, "main.c", "gimbal.c", "ball.c", "-o", str(exe), "-lm"], cwd=d,
                           capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    run = subprocess.run([str(exe)], capture_output=True, text=True, check=True)
    vals = np.array([float(x) for x in run.stdout.split()])
    q, r, u = np.array([0.3, -1.1, 2.0]), np.array([1e-9, 0.4, -0.2]), np.array([0.5, -0.25, 1.5])
    P = np.where(np.arange(36) % 7 == 0, 2.0, 0.1).reshape(6, 6)
    np.testing.assert_array_equal(vals[:16], compiled["GIMBAL"].transform(q).ravel())
    assert_close(vals[:16], get_hinge(("GIMBAL", {})).numeric("transform")(q).ravel(), 1e-14, "X vs sympy")
    np.testing.assert_array_equal(vals[16:22], compiled["BALL"].bias(r, u))
    a = compiled["GIMBAL"].atbi(q, P)
    np.testing.assert_array_equal(vals[22:-1], np.concatenate([a[k].ravel() for k in ("D", "Dinv", "G", "Pplus")]))
    assert vals[-1] == 0


_SINCOS_DRIVERS = {   # many(n, x, s, c) over each helper
    "sincos": "void many(int n, const double *x, double *s, double *c) "
              "{ int i; for (i = 0; i < n; ++i) sg_sincos(x[i], s + i, c + i); }",
    "sincos_n": "void many(int n, const double *x, double *s, double *c) "
                "{ int i, k; double sc[2 * 1000]; for (i = 0; i < n; i += 1000) { int m = n - i < 1000 ? n - i : 1000; "
                "sg_sincos_n(m, x + i, sc); for (k = 0; k < m; ++k) { s[i + k] = sc[2 * k]; c[i + k] = sc[2 * k + 1]; } } }",
}


@pytest.mark.skipif(CC is None, reason="no C compiler")
@pytest.mark.parametrize("helper", sorted(_SINCOS_DRIVERS))
def test_sg_sincos_within_two_ulp_of_libm(tmp_path, helper):
    """The generated code's sine and cosine with one shared range reduction against the C library's sin and
    cos (Python's math module): helpers/sincos (one angle, in the hinge kernels) and helpers/sincos_n (a
    model's hinge angles in one vectorizable loop), built with -O3 as the modules are.  Within 2 ulp over
    random angles in [-1e5, 1e5] and [-10, 10], at and next to every multiple of pi/2 up to 1e5 (where the
    reduction cancels), and at 0, -0 (sin gives +0, a sign no kernel looks at), subnormals; inf, nan and
    |x| > 1e5 go to libm."""
    import math

    import cffi

    from symgen.codegen.render import environment, helper_files

    ffi = cffi.FFI()
    ffi.cdef("void many(int n, const double *x, double *s, double *c);")
    src = "".join(environment().get_template(f).render() for f in helper_files([helper]))
    name = f"_sg_{helper}_test"
    ffi.set_source(name, "#include <math.h>\n" + src + "\n" + _SINCOS_DRIVERS[helper] + "\n",
                   extra_compile_args=["-O3"])   # strictness: the files that include it are checked elsewhere
    lib_path = ffi.compile(tmpdir=str(tmp_path))
    import importlib.util
    spec = importlib.util.spec_from_file_location(name, lib_path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    rng = np.random.default_rng(11)
    k = np.arange(-63661.0, 63662.0) * (np.pi / 2)
    x = np.concatenate([rng.uniform(-1e5, 1e5, 100000), rng.uniform(-10.0, 10.0, 100000), k,
                        np.nextafter(k, np.inf), np.nextafter(k, -np.inf),
                        [0.0, -0.0, 5e-324, -1e-300, 1e-8, np.pi / 4, 1e5, -1e5]])
    s, c = np.empty_like(x), np.empty_like(x)
    mod.lib.many(len(x), mod.ffi.from_buffer("double[]", x), mod.ffi.from_buffer("double[]", s),
                 mod.ffi.from_buffer("double[]", c))
    for got, fn in ((s, math.sin), (c, math.cos)):
        ref = np.array([fn(v) for v in x])
        ulps = np.abs(got - ref) / np.spacing(np.abs(ref))
        assert ulps.max() <= 2.0, (fn.__name__, x[np.argmax(ulps)], ulps.max())
    assert s[len(x) - 7] == 0.0 and s[len(x) - 6] == 5e-324 and c[len(x) - 6] == 1.0   # sin(-0) is +0 here
    special = np.array([np.inf, -np.inf, np.nan, 1e300])
    s4, c4 = np.empty(4), np.empty(4)
    mod.lib.many(4, mod.ffi.from_buffer("double[]", special), mod.ffi.from_buffer("double[]", s4),
                 mod.ffi.from_buffer("double[]", c4))
    assert np.isnan(s4[:3]).all() and np.isnan(c4[:3]).all()
    assert s4[3] == math.sin(1e300) and c4[3] == math.cos(1e300)
