"""Derivatives of forward and inverse dynamics: :mod:`symgen.algorithms.soa`'s ATBI and Newton-Euler traced once
more on dual numbers (:mod:`symgen.ir.dual`), printed as one C function each (``templates/model.c.jinja``).

The function computes the values once (scalars) and the tangents for blocks of SG_DW directions at a time (one
vector of directions per traced value).  The directions, in order: Q (``tangent``: the motion of Q that U = e_j
produces, ``Qdot = N(Q) e_j``, nU of them; else each coordinate Q_i, nQ of them), U (nU), and T for forward
dynamics or Udot for inverse dynamics (nU).  The hinge kernels' outputs take their tangents from the hinges'
derivative kernels (:data:`symgen.codegen.emit.DERIVATIVE_KERNELS`): ``dX = sum_i dX/dQ_i dQ_i``.

``out`` = [d/dQ (nU x nQdir), d/dU (nU x nU), d/dT or d/dUdot (nU x nU)], each row-major: for forward
dynamics dUdot/dQ, dUdot/dU and M^-1; for inverse dynamics dT/dQ, dT/dU and M.
"""
from __future__ import annotations

import re

#: derivative functions longer than this (scalar and lane statements) are not generated: the model's derivative
#: calls raise, naming the limit (the straight-line form's compile time grows with its length)
DERIVATIVE_MAX_LINES = 40000

#: the tangent inputs: one vector of directions per Q, U and T (or Udot) entry
SEED_ARRAYS = ("sq", "su", "sT")

_KERNEL_OF = {"X": "transform", "H": "coord_map", "Hd": "coord_map_dot"}


class _BlockIO:
    """:class:`symgen.algorithms.soa.ArrayIO` writing the block's rows: ``blk[i]`` (lane l: ``blk[l * nU + i]``)."""

    def __init__(self, io):
        self._io = io

    def __getattr__(self, k):
        return getattr(self._io, k)

    @staticmethod
    def out(i):
        return f"blk[{i}]"


def _tangents(bodies, L, layout):
    """``tangent_of(text, T)`` for :class:`symgen.ir.dual.DualTape`: the tangent of each input of the traced
    dynamics, from the seeds and the hinges' derivative kernels (whose constant entries fold)."""
    by_tag = {str(b.k): b for b in bodies}
    tau0 = L.params["tau"]

    def tangent_of(text, T):
        m = re.fullmatch(r"(\w+?)(\d*)\[(\d+)\]", text)
        arr, tag, i = m.group(1), m.group(2), int(m.group(3))
        if arr == "u" and not tag:
            return T.input(f"su[{i}]", array="su")
        if arr == "p" and not tag:
            return T.input(f"sT[{i - tau0}]", array="sT") if tau0 <= i < tau0 + L.nu else 0.0
        if arr not in _KERNEL_OF or tag not in by_tag:
            return 0.0
        b = by_tag[tag]
        st, q0 = layout[b.name]["structure"], layout[b.name]["q"][0]
        base = _KERNEL_OF[arr]
        size = 16 if arr == "X" else 6 * b.nu
        own = {"X": (b.X_const, b.X_alias), "H": (b.H_const, b.H_alias), "Hd": (b.Hd_const, b.Hd_alias)}[arr]

        def value(j):
            """Entry j of the body's kernel output as the values read it (a constant, an alias, the array entry)."""
            c, a = own[0][j], own[1][j] if own[1] else None
            if c is not None:
                return c
            if a is not None:
                v = value(a[0])
                return v if a[1] > 0 else T.neg(v)
            return T.input(f"{arr}{tag}[{j}]", array=f"{arr}{tag}")

        pairs = []
        for wrt, seed, start, n in (("q", "sq", q0, layout[b.name]["nq"]), ("u", "su", b.u0, b.nu)):
            kernel = f"{base}_d{wrt}"
            consts, alias = st.get(kernel), st.get(f"{kernel}_alias")
            if consts is None:
                continue
            for j in range(n):
                c, a = consts[j * size + i], alias[j * size + i] if alias else None
                if c == 0.0:
                    continue
                if c is not None:
                    entry = c
                elif a is not None:                   # the derivative is an entry of the kernel itself (PIN: -sin)
                    entry = value(a[0]) if a[1] > 0 else T.neg(value(a[0]))
                else:
                    entry = T.input(f"d{wrt}{arr}{tag}[{j * size + i}]", array=f"d{wrt}{arr}{tag}")
                pairs.append((entry, T.input(f"{seed}[{start + j}]", array=seed)))
        return T.dot(pairs)

    return tangent_of


def _derivative_kernel_arrays(T, bodies, layout):
    """(body, array, kernel, size) of each derivative kernel output the live code reads."""
    read = set()
    for text in T.live_inputs():
        m = re.fullmatch(r"(d[qu](?:X|H|Hd)\d+)\[\d+\]", text)
        if m:
            read.add(m.group(1))
    for b in bodies:
        nq = layout[b.name]["nq"]
        for wrt, n in (("q", nq), ("u", b.nu)):
            for arr, base in _KERNEL_OF.items():
                name = f"d{wrt}{arr}{b.k}"
                if name in read:
                    yield b, name, f"{base}_d{wrt}", n * (16 if arr == "X" else 6 * b.nu)


def emit_derivatives(kind, bodies, L, layout, slugs, calls_factory, kernel_arrays, trace_bodies):
    """The body of ``sg_<m>_<kind>_derivatives(q, u, p, tangent, out)`` (kind ``"fd"`` or ``"id"``) as C lines,
    or None when the traced function is longer than :data:`DERIVATIVE_MAX_LINES` or D is a constant that is not
    positive definite.  ``calls_factory()``: a new hinge-kernel call printer (symgen.codegen.emit._HingeCalls);
    ``kernel_arrays(T, bodies)``: the value kernels the live code reads; ``trace_bodies(T, bodies)``: the bodies
    as the trace sees them (a parametric build's inertias from p)."""
    from ..algorithms import soa
    from ..ir.dual import DualTape
    from ..ir.tape import Tape

    T = Tape()
    D = DualTape(T, _tangents(bodies, L, layout))
    fn = {"fd": soa.atbi_derivatives, "id": soa.rnea}[kind]
    try:
        fn(D, trace_bodies(D, bodies), L.nu, _BlockIO(soa.ArrayIO(L)))
    except soa.NotPositiveDefinite:
        return None
    scalar, lanes = T.split_lines(SEED_ARRAYS, rows={"blk": L.nu})
    if len(scalar) + len(lanes) > DERIVATIVE_MAX_LINES:
        return None
    nu, nq = L.nu, sum(layout[b.name]["nq"] for b in bodies)
    calls = calls_factory()
    head = []
    for b, arr, kernel, size, _ in kernel_arrays(T, bodies):
        head += [f"double {arr}[{size}];  /* '{b.name}' */", calls(b.name, kernel, arr)]
    for b, arr, kernel, size in _derivative_kernel_arrays(T, bodies, layout):
        head += [f"double {arr}[{size}];  /* '{b.name}' */", calls(b.name, kernel, arr)]
    # the tangent seeds of Q: N(Q) e_j of the hinge that owns U_j
    live = T.live_arrays()                               # the seeds the tangents read (a model without U: none)
    moving = [b for b in bodies if layout[b.name]["nq"] and b.nu] if "sq" in live else []
    seeds = []
    for b in moving:
        bq, bnq = layout[b.name]["q"][0], layout[b.name]["nq"]
        head += [f"double N{b.k}[{bnq * b.nu}];  /* '{b.name}': Qdot = N U */", calls(b.name, "qdot_map", f"N{b.k}")]
        seeds.append(f"if (d >= {b.u0} && d < {b.u0 + b.nu}) "
                     f"for (i = 0; i < {bnq}; ++i) sq[{bq} + i][l] = N{b.k}[i * {b.nu} + d - {b.u0}];")
    sizes = {"sq": nq, "su": nu, "sT": nu}
    used = [a for a in SEED_ARRAYS if a in live]
    fill = {"sq": ["        if (d < ndq) {", "            if (!tangent) sq[d][l] = 1.0;",
                   *(["            else {"] + [f"                {s}" for s in seeds] + ["            }"] if seeds else []),
                   "        }"],
            "su": [f"        if (d >= ndq && d < ndq + {nu}) su[d - ndq][l] = 1.0;"],
            "sT": [f"        if (d >= ndq + {nu} && d < ndq + {2 * nu}) sT[d - ndq - {nu}][l] = 1.0;"]}
    lines = calls.head() + head + scalar + [
        f"ndq = tangent ? {nu} : {nq};",
        f"for (d0 = 0; d0 < ndq + {2 * nu}; d0 += SG_DW) {{",
        *([f"    sg_dv {', '.join(f'{a}[{sizes[a]}]' for a in used)};  /* the seeds: one direction per lane */"]
          if used else []),
        f"    double blk[SG_DW * {max(nu, 1)}];  /* lane l: the derivative of the outputs along direction d0 + l */",
        *[f"    for (i = 0; i < {sizes[a]}; ++i) {a}[i] = sg_dv_zero;" for a in used],
        *(["    for (l = 0; l < SG_DW; ++l) {", "        const int d = d0 + l;"]
          + [x for a in used for x in fill[a]] + ["    }"] if used else []),
        *[f"    {x}" for x in lanes],
        f"    for (l = 0; l < SG_DW && d0 + l < ndq + {2 * nu}; ++l) sg_deriv_scatter({nu}, ndq, d0 + l, blk + l * {max(nu, 1)}, out);",
        "}",
        "return 0;"]
    decl = ["int i, l, d0, ndq;" if used else "int l, d0, ndq;"] + (["const sg_dv sg_dv_zero = {0.0};"] if used else [])
    unused = [f"(void){x};" for x in ("q", "u", "p") if not any(re.search(rf"\b{x}\b", ln) for ln in lines)]
    return decl + unused + lines
