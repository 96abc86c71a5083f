"""The IR is target-neutral: the typed programs the C printer prints (symgen.ir.tape: typed expressions,
statements as records) printed a second way, as numpy source (this file's printer, used only here), give what
the compiled C gives.

The programs of forward dynamics (ATBI), inverse dynamics (Newton-Euler), the mass matrix, the centroidal
momentum matrix and its rate, and inverse dynamics' derivatives along the tangent (the analytic recursions) (symgen.pipeline.sources.model_programs) on arm7 (fixed base) and the quadruped
(floating base) are printed as Python functions over numpy arrays, one state per array column; the hinge
kernels' outputs they read (transform, coord map and its derivative) come from ``sympy.lambdify`` of each hinge's
derived matrices, not from the C kernels.  Each output equals the C's (``mb.binding.call_batch``, the same p)
to 1e-13 relative.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import sympy

import symgen
from symgen.codegen.derivatives import derivative_kernel_arrays
from symgen.codegen.emit import kernel_arrays
from symgen.codegen.kernels import derivative_kernels
from symgen.model import load_model
from symgen.pipeline.sources import model_programs

ROOT = Path(__file__).resolve().parents[1]
MODELS = [("arm7.urdf", False), ("quadruped.urdf", True)]
#: program -> (C entry point, output size from (nU, nb))
ENTRIES = {"fd": ("forward_dynamics", lambda nu: nu), "id": ("inverse_dynamics", lambda nu: nu),
           "mm": ("mass_matrix", lambda nu: nu * nu), "cm": ("centroidal_momentum_matrix", lambda nu: 6 * nu + 9),
           "cd": ("centroidal_dynamics", lambda nu: 6),
           "idd": ("id_derivatives", lambda nu: 3 * nu * nu)}   # inverse dynamics' derivatives along the tangent
N = 5


def numpy_source(T, name="program") -> str:
    """The statements of a Tape as a Python function ``program(IN, OUT)``: IN and OUT map array names to numpy
    arrays of one row per entry and one column per state."""
    def ref(v):
        return f"IN[{v.ref[0]!r}][{v.ref[1]}]" if v.is_input else v.name

    def value(x):
        return ref(x) if hasattr(x, "op") else repr(float(x))

    def expr(op):
        kind = op[0]
        if kind == "dot":
            text = ""
            for c, factors in op[1]:
                term = " * ".join(([] if abs(c) == 1.0 else [repr(abs(c))]) + [ref(f) for f in factors])
                text += (" - " if c < 0 else " + ") + term if text else ("-" if c < 0 else "") + term
            return text + (f" {'-' if op[2] < 0 else '+'} {abs(op[2])!r}" if op[2] != 0.0 else "")
        if kind == "neg":
            return f"-{ref(op[1])}"
        if kind == "div":
            return f"{value(op[1])} / {ref(op[2])}"
        if kind == "call":
            return f"np.{op[1]}({ref(op[2])})"
        if kind == "copy":
            return ref(op[1])
        raise NotImplementedError(kind)

    lines = [f"def {name}(IN, OUT):"]
    for s in T.statements():
        kind = s[0]
        if kind == "comment":
            lines.append(f"    # {s[1]}")
        elif kind == "def":
            lines.append(f"    {s[1].name} = {expr(s[1].op)}")
        elif kind == "store":
            array, index = s[1].split("[")
            lines.append(f"    OUT[{array!r}][{index[:-1]}] = {value(s[2])}")
        elif kind == "check":
            lines.append(f"    assert np.all({value(s[1])} > 0.0), {s[3]!r}")
        elif kind == "fill":
            lines.append(f"    OUT[{s[1]!r}][:{s[2]}] = 0.0")
        elif kind == "return":
            lines.append("    pass")
        else:
            raise NotImplementedError(f"statement {kind!r}")
    return "\n".join(lines)


def _kernels(model, bodies, T, q, u, hinge_layout) -> dict:
    """The hinge kernel outputs T reads, from sympy.lambdify of each hinge's transform, coord map and its
    derivative (row-major, as the C kernels write them), and, for the derivatives' program, of the derivatives of
    those in Q and U and of Qdot = N(Q) U's map, for the states q (nQ, N) and u (nU, N)."""
    out = {}
    items = [(b, a, k, n) for b, a, k, n, _ in kernel_arrays(T, bodies)]
    items += list(derivative_kernel_arrays(T, bodies, hinge_layout))
    items += [(b, f"N{b.k}", "qdot_map", hinge_layout[b.name]["nq"] * b.nu) for b in bodies
              if any(t.startswith(f"N{b.k}[") for t in T.live_inputs())]
    for b, array, kernel, size in items:
        body = model.bodies[b.k]
        h = symgen.hinge(body.hinge_type, **body.hinge_kwargs())
        M = {"transform": h.transform, "coord_map": h.coord_map, "coord_map_dot": h.coord_map_dot,
             "qdot_map": h.qdot_map}.get(kernel)
        M = derivative_kernels(h)[kernel] if M is None else M    # the C kernels' d/dQ and d/dU, from sympy
        f = sympy.lambdify((list(h.q), list(h.u)), list(M), "numpy")
        vals = f(list(q[b.q0:b.q0 + h.nq]), list(u[b.u0:b.u0 + h.nu]))
        out[array] = np.array([np.broadcast_to(np.asarray(v, float), q.shape[1:]) for v in vals])
        assert out[array].shape[0] == size
    return out


@pytest.mark.parametrize("path,floating", MODELS, ids=[m for m, _ in MODELS])
def test_numpy_printing_equals_the_c(path, floating):
    model = load_model(ROOT / "examples" / "models" / path, floating_base=floating)
    mb = symgen.build(ROOT / "examples" / "models" / path, floating_base=floating)
    plan = model_programs(model)
    assert set(ENTRIES) <= set(plan["programs"]), "every program is straight-line on these models"
    rng = np.random.default_rng(5)
    Q = mb.sanitize(rng.uniform(-2, 2, (N, mb.nq)))
    U, P = rng.normal(size=(N, mb.nu)), rng.normal(size=(N, plan["layout"].params.size))
    for key, T in plan["programs"].items():
        entry, size = ENTRIES[key]
        namespace = {"np": np}
        exec(numpy_source(T), namespace)
        IN = {"q": Q.T, "u": U.T, "p": P.T, **_kernels(model, plan["bodies"], T, Q.T, U.T, plan["hinge_layout"])}
        OUT = {"out": np.zeros((size(mb.nu), N))}
        with np.errstate(all="raise"):
            namespace["program"](IN, OUT)
        if key == "idd":      # the C batch with tangent directions; its rows hold nU (nQ + 2 nU) doubles
            b = mb.derivative_binding()
            rows = np.empty((N, mb.nu * (mb.nq + 2 * mb.nu)))
            assert getattr(b.lib, f"sg_{b.name}_id_derivatives_batch")(
                N, b.buf(Q), b.buf(U), b.buf(np.ascontiguousarray(P)), 1, b.buf(rows)) == 0
            c = rows[:, :size(mb.nu)]
        else:
            c, _ = mb.derivative_binding().call_batch(entry, Q, U, P, size(mb.nu))   # the module with every function
        numpy_out = OUT["out"].T
        rel = np.max(np.abs(numpy_out - c)) / max(1.0, np.max(np.abs(c)))
        assert rel <= 1e-13, f"{key}: numpy and C differ by {rel:.1e}"
