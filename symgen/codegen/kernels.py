"""The hinge kernels' C: sympy -> C statements for each kernel of a hinge spec, and the calls a model's functions
make to them (one state, or on lane vectors of SG_W states).  A printer, as :mod:`symgen.ir.tape` and
:mod:`symgen.codegen.printer` are: it turns sympy expressions into C text.

For one kernel (a matrix of expressions in a hinge's symbols) :func:`emit_statements` produces the body of a C
function with the fixed signature ``(const double *q, const double *u, const double *p, double *out)``:

1. trig hoisting: each ``sin(a)`` / ``cos(a)`` becomes a named constant computed once
   (``s_q0 = sin(q[0])``); a sine and cosine of the same angle come from one ``sg_sincos`` call (one
   shared range reduction, ``templates/helpers/sincos.c``);
2. one joint common-subexpression pass (``sympy.cse``) over all outputs of the kernel;
3. zeros and constants folded: an output that is a number is written as a literal;
4. printing with :class:`SgCPrinter` (C99, ``q_i -> q[i]``, ``u_i -> u[i]``, ``P_ij -> p[6 i + j]``,
   ``x**2 -> x*x``, ``pi`` as a literal, Stumpff functions -> ``sg_stumpff(k, s)``, Piecewise -> ``?:``).

The operation count reported per kernel is ``sympy.count_ops`` of what is left after CSE (each
``sin``, ``sqrt``, ``sg_stumpff`` call counts as one operation).  :class:`HingeCalls` prints a model function's
calls of the kernels (their sines and cosines computed up front, in one loop); :func:`lane_kernel_lines` a
kernel's statements on lane vectors, :func:`lane_kernel_head` a lane function's kernels.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

import sympy as sp
from sympy.printing.c import C99CodePrinter

from ..hinges.derive import NEEDS_U, NEEDS_U_DQ, Hinge
from ..symbolic.spatial import stumpff


#: kernels emitted for every hinge spec, in header order (atbi and sanitize are added where they apply)
C_KERNELS = ("transform", "coord_map", "oframe_coord_map", "qdot_map", "coord_map_dot", "bias", "pose_gradient",
             "ortho_complement")


#: the kernels a model calls with its hinges' sines and cosines computed up front, in one vectorized loop
#: (``sg_<slug>_<kernel>_sc``, see :func:`hinge_trig_args`)
TRIG_KERNELS = ("transform", "coord_map", "coord_map_dot")


class SgCPrinter(C99CodePrinter):
    """C99 printer with symgen's array slots and helpers."""

    def __init__(self, slots: dict, settings=None):
        super().__init__(settings or {})
        self._slots = slots

    def _print_Symbol(self, expr):
        return self._slots.get(expr, super()._print_Symbol(expr))

    def _print_NumberSymbol(self, expr):
        return self._print(sp.Float(expr.evalf(20), 17))

    _print_Pi = _print_NumberSymbol
    _print_Exp1 = _print_NumberSymbol

    def _print_Pow(self, expr):
        b, e = expr.as_base_exp()
        if e.is_Integer and 2 <= int(e) <= 4 and b.is_Symbol:   # x*x: cheap and exact
            return "(%s)" % "*".join([self._print(b)] * int(e))
        if e.is_Integer and 2 <= int(e) <= 4:                    # a compound base is evaluated once
            return "pow(%s, %d)" % (self._print(b), int(e))
        if e.is_Integer and -4 <= int(e) <= -1:
            return "(1.0/%s)" % self._print(b ** (-e))
        if e == sp.Rational(-1, 2):                           # a unit quaternion's 1/|q|: not libm's pow
            return "(1.0/sqrt(%s))" % self._print(b)
        return super()._print_Pow(expr)

    def _print_Piecewise(self, expr):
        if expr.args[-1].cond != True:  # noqa: E712  (sympy's true)
            raise ValueError("Piecewise without a default branch cannot be printed")
        out = self._print(expr.args[-1].expr)
        for e, c in reversed(expr.args[:-1]):
            out = "((%s) ? (%s) : (%s))" % (self._print(c), self._print(e), out)
        return out

    def _print_stumpff(self, expr):
        return "sg_stumpff(%d, %s)" % (int(expr.args[0]), self._print(expr.args[1]))

    def _print_Function(self, expr):
        if isinstance(expr, stumpff):
            return self._print_stumpff(expr)
        return super()._print_Function(expr)


@dataclass
class CKernel:
    """One emitted kernel: what the templates print."""

    name: str
    c_name: str
    inputs: tuple            # which of q, u, p the kernel reads
    out_shape: tuple
    lines: list              # body statements (no braces)
    flops: int
    helpers: set = field(default_factory=set)
    returns_status: bool = False
    doc: str = ""
    p_stride: int = 36       # doubles of p per state in the _batch variant
    internal: bool = False   # called by model code only: not in the hinge manifest's kernel table
    guard: str | None = None # compiled only where this macro is not defined, nor SG_NO_DERIVATIVES (the derivative
    #                          kernels: SG_NO_DERIVATIVE_KERNELS, which a model's part 0 defines: it calls none)

    @property
    def out_size(self) -> int:
        n = 1
        for d in self.out_shape:
            n *= d
        return n


def spec_slug(h: Hinge) -> str:
    """C name of a hinge spec: the type in lower case, plus a hash of the parameters when they are not
    the type's defaults (``pin``, ``pin_1f3a9c0d``)."""
    from ..hinges import bind

    base = h.hinge_type.lower()
    if h.spec.key() == bind(h.hinge_type).key():
        return base
    return f"{base}_{hashlib.sha256(h.spec.key().encode()).hexdigest()[:8]}"


def _slots(h: Hinge, p_syms=None) -> dict:
    slots = {s: f"q[{i}]" for i, s in enumerate(h.q)}
    slots.update({s: f"u[{i}]" for i, s in enumerate(h.u)})
    if p_syms is not None:
        slots.update({s: f"p[{i}]" for s, i in p_syms.items()})
    return slots


def _hoist_trig(exprs):
    """Replace every sin(a) / cos(a) by a symbol; returns (definitions, new exprs)."""
    found = {}
    for e in exprs:
        for f in e.atoms(sp.sin, sp.cos):
            found.setdefault(f.args[0], set()).add(type(f))
    defs, repl = [], {}
    for k, arg in enumerate(sorted(found, key=sp.default_sort_key)):
        tag = str(arg).replace("_", "") if arg.is_Symbol else str(k)
        for fn, prefix in ((sp.sin, "s"), (sp.cos, "c")):
            if fn in found[arg]:
                sym = sp.Symbol(f"{prefix}_{tag}", real=True)
                defs.append((sym, fn(arg)))
                repl[fn(arg)] = sym
    return defs, [e.xreplace(repl) for e in exprs]


def _flops(exprs) -> int:
    return int(sum(sp.count_ops(e) for e in exprs))


def emit_statements(exprs, slots, out_name="out", out_offset=0, temp_prefix="t", trig_index=None):
    """C lines computing ``out[out_offset + i] = exprs[i]`` with trig hoisting and joint CSE.
    ``trig_index`` ({argument: k}): the sines and cosines are given, ``sin a_k = p[2 k]``,
    ``cos a_k = p[2 k + 1]``, instead of computed.  Returns (lines, flops, helpers)."""
    exprs = [sp.sympify(e) for e in exprs]
    if not exprs:
        return [f"(void){out_name};  /* empty output */"], 0, set()
    trig_defs, hoisted = _hoist_trig(exprs)
    if trig_index is not None:
        slots = dict(slots)
        for sym, value in trig_defs:
            slots[sym] = f"p[{2 * trig_index[value.args[0]] + (1 if isinstance(value, sp.cos) else 0)}]"
        trig_defs = []
    nonconst = [i for i, e in enumerate(hoisted) if not e.is_number]
    repl, reduced = sp.cse([hoisted[i] for i in nonconst],
                           symbols=sp.numbered_symbols(temp_prefix, real=True), order="none")
    printer = SgCPrinter(slots)
    lines, helpers = [], set()
    pairs = {}                                   # arg -> {sin: sym, cos: sym}
    for sym, value in trig_defs:
        pairs.setdefault(value.args[0], {})[type(value)] = sym
    for arg, fs in pairs.items():
        if len(fs) == 2:                         # both: one shared range reduction (helpers/sincos)
            s_, c_ = fs[sp.sin], fs[sp.cos]
            lines.append(f"double {s_.name}, {c_.name};")
            lines.append(f"sg_sincos({printer.doprint(arg)}, &{s_.name}, &{c_.name});")
            helpers.add("sincos")
        else:
            for fn, sym in fs.items():
                lines.append(f"const double {sym.name} = {printer.doprint(fn(arg))};")
    for sym, value in repl:
        lines.append(f"const double {sym.name} = {printer.doprint(value)};")
    values = dict(zip(nonconst, reduced))
    for i, e in enumerate(hoisted):
        v = values.get(i, e)
        text = printer.doprint(sp.Float(v, 17) if v.is_number and not v.is_Integer else v)
        if v.is_Integer:
            text = f"{int(v)}.0"
        lines.append(f"{out_name}[{out_offset + i}] = {text};")
    body_exprs = [v for _, v in trig_defs] + [v for _, v in repl] + list(values.values())
    if any(e.has(stumpff) for e in body_exprs):
        helpers.add("stumpff")
    return lines, _flops(body_exprs), helpers


_DOCS = {
    "transform": "4x4 X_op(Q), row-major: pnode pose in the onode",
    "coord_map": "6 x nU pframe coord map H*_p(Q)",
    "oframe_coord_map": "6 x nU oframe coord map diag(R_op, R_op) H*_p",
    "qdot_map": "nQ x nU qdot map N(Q): Qdot = N U",
    "coord_map_dot": "6 x nU time derivative of H*_p along Qdot = N U",
    "bias": "6 bias term H*_p_dot U",
    "pose_gradient": "6 x nU pose gradient d[log R_op; l_op]/dQ N",
    "ortho_complement": "6 x (6 - nU) ortho complement of H*_p",
    "transform_dq": "nQ x 16: row i = d X_op / d Q_i (row-major 4x4)",
    "coord_map_dq": "nQ x 6 nU: row i = d H*_p / d Q_i",
    "coord_map_dot_dq": "nQ x 6 nU: row i = d (coord map derivative) / d Q_i",
    "coord_map_dot_du": "nU x 6 nU: row i = d (coord map derivative) / d U_i",
    "qdot_dq": "nQ x nQ: row i = d (N U) / d Q_i",
    "sanitize": "nQ equivalent coordinates (|r| <= pi for SPHERICAL, unit quaternions)",
    "atbi": "ATBI hinge step: p = P (6x6 articulated inertia at the pnode, symmetric, row-major); "
            "out = [D (nU x nU), Dinv (nU x nU), G (6 x nU), P+ (6x6)] with D = H P H*, G = P H* Dinv, "
            "P+ = P - G H P; returns 0, or -1 when D is not positive definite",
}


def emit_hinge(h: Hinge, slug: str | None = None) -> list:
    """Every C kernel of a hinge spec (see :data:`C_KERNELS`, plus ``sanitize`` and ``atbi``)."""
    slug = slug or spec_slug(h)
    out = []
    for name in C_KERNELS:
        M = getattr(h, name)
        inputs = ("q", "u") if name in NEEDS_U else ("q",)
        lines, flops, helpers = emit_statements(list(M), _slots(h))
        shape = (M.shape[0],) if name == "bias" else tuple(M.shape)
        out.append(CKernel(name, f"sg_{slug}_{name}", inputs, shape, lines, flops, helpers,
                           doc=_DOCS[name]))
    args = hinge_trig_args(h)
    if args:
        index = {a: k for k, a in enumerate(args)}
        printer = SgCPrinter(_slots(h))
        given = ", ".join(printer.doprint(a) for a in args)
        for name in TRIG_KERNELS:
            M = getattr(h, name)
            lines, flops, helpers = emit_statements(list(M), _slots(h), trig_index=index)
            inputs = ("q", "u", "p") if name in NEEDS_U else ("q", "p")
            out.append(CKernel(f"{name}_sc", f"sg_{slug}_{name}_sc", inputs, tuple(M.shape), lines, flops, helpers,
                               doc=f"{_DOCS[name]}; given p = (sin a, cos a) for each a in ({given})",
                               p_stride=2 * len(args), internal=True))
    for name, M in derivative_kernels(h).items():
        lines, flops, helpers = emit_statements(M, _slots(h))
        rows = h.nu if name.endswith("_du") else h.nq
        out.append(CKernel(name, f"sg_{slug}_{name}", ("q", "u") if name in NEEDS_U_DQ else ("q",),
                           (rows, len(M) // rows), lines, flops, helpers, doc=_DOCS[name], internal=True,
                           guard=None if name == "qdot_dq" else "SG_NO_DERIVATIVE_KERNELS"))
    if h.has_sanitize:
        lines, flops, helpers = emit_statements(list(h.sanitize_expr), _slots(h))
        out.append(CKernel("sanitize", f"sg_{slug}_sanitize", ("q",), (h.nq,), lines, flops,
                           helpers, doc=_DOCS["sanitize"]))
    out.append(_emit_atbi(h, slug))
    return out


#: the derivative kernels (what forward-mode derivatives of the dynamics read): kernel -> (kernel it
#: differentiates, with respect to Q or U)
DERIVATIVE_KERNELS = {"transform_dq": ("transform", "q"), "coord_map_dq": ("coord_map", "q"),
                      "coord_map_dot_dq": ("coord_map_dot", "q"), "coord_map_dot_du": ("coord_map_dot", "u")}


def derivative_kernels(h: Hinge) -> dict:
    """Every derivative kernel of a hinge (:data:`DERIVATIVE_KERNELS`) as a flat list of expressions, row i the
    derivative of every entry of the kernel with respect to Q_i (or U_i); those without a row are left out."""
    out = {}
    for name, (base, wrt) in DERIVATIVE_KERNELS.items():
        syms = h.q if wrt == "q" else h.u
        if len(syms) and getattr(h, base).shape[1]:
            M = list(getattr(h, base))
            out[name] = [sp.diff(e, s) for s in syms for e in M]
    if h.nq and h.nu:
        qdot = list(h.qdot_map * sp.Matrix(h.u))
        out["qdot_dq"] = [sp.diff(e, s) for s in h.q for e in qdot]
    return out


def lane_trig_args(h: Hinge, q: str) -> list:
    """The hinge's :func:`hinge_trig_args` printed for lane l of the lane vectors ``q`` of its Q (``q[i][l]``)."""
    printer = SgCPrinter({s_: f"{q}[{i}][l]" for i, s_ in enumerate(h.q)})
    return [printer.doprint(a) for a in hinge_trig_args(h)]


def hinge_trig_args(h: Hinge) -> list:
    """The arguments a of every sin(a) / cos(a) in the hinge's :data:`TRIG_KERNELS`, in a fixed order: a model
    computes their sines and cosines together, up front (``sg_sincos_n``), and calls the ``_sc`` kernels.
    Empty when there are none, or when one depends on more than Q."""
    found = set()
    for name in TRIG_KERNELS:
        for e in getattr(h, name):
            found |= {f.args[0] for f in sp.sympify(e).atoms(sp.sin, sp.cos)}
    if any(not a.free_symbols <= set(h.q) for a in found):
        return []
    return sorted(found, key=sp.default_sort_key)


def _emit_atbi(h: Hinge, slug: str) -> CKernel:
    """D = H P H* and P H* from the symbolic (sparse) coord map; the small Cholesky, G and P+ in the
    ``sg_atbi_finish`` helper."""
    nu = h.nu
    P = sp.zeros(6, 6)
    p_syms = {}
    for i in range(6):
        for j in range(i, 6):
            s = sp.Symbol(f"P_{i}{j}", real=True)
            P[i, j] = P[j, i] = s
            p_syms[s] = 6 * i + j
    inputs = ("q", "p")
    shape = (nu * nu * 2 + 6 * nu + 36,)
    if nu == 0:
        lines = ["int i;", "for (i = 0; i < 36; ++i) out[i] = p[i];  /* P+ = P */", "return 0;"]
        return CKernel("atbi", f"sg_{slug}_atbi", inputs, shape, lines, 0, set(), True, _DOCS["atbi"])
    H = h.coord_map
    PH = P * H
    D = H.T * PH
    exprs = list(D) + list(PH)
    body, flops, helpers = emit_statements(exprs, _slots(h, p_syms), out_name="w")
    lines = [f"double w[{nu * nu + 6 * nu}];  /* D (nU x nU), then P H* (6 x nU) */"] + body
    lines.append(f"return sg_atbi_finish({nu}, w, w + {nu * nu}, p, out);")
    # Cholesky n^3/3, Dinv n^3, G 6 n^2, P+ 36 n (multiply-adds counted twice)
    flops += nu ** 3 // 3 * 2 + 2 * nu ** 3 + 12 * nu * nu + 72 * nu
    return CKernel("atbi", f"sg_{slug}_atbi", inputs, shape, lines, flops, helpers | {"atbi_finish"}, True,
                   _DOCS["atbi"])


def banner_info(h: Hinge) -> dict:
    import sympy

    from .. import __version__

    return {"symgen_version": __version__, "sympy_version": sympy.__version__, "label": h.spec.label(),
            "nq": h.nq, "nu": h.nu, "subhinges": " -> ".join(h.subhinge_types),
            "q_meaning": ", ".join(f"q[{i}]" for i in range(h.nq)) or "none"}


def void_unused(params, lines) -> str:
    """``(void)x;`` for each parameter the lines never mention (C99 with -Wextra warns of unused ones)."""
    text = "\n".join(lines)
    return " ".join(f"(void){x};" for x in params if not re.search(rf"\b{x}\b", text))


def c_identifier_ok(name: str) -> bool:
    return re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) is not None


class HingeCalls:
    """The hinge kernel calls of one model function.  The sines and cosines that a call's ``_sc`` kernel takes
    are gathered here and computed up front, in one ``sg_sincos_n`` loop: :meth:`head` goes before the calls."""

    def __init__(self, layout: dict, slugs: dict):
        self._layout, self._slugs = layout, slugs
        self._angles, self._offset = [], {}

    def __call__(self, body: str, kernel: str, out: str) -> str:
        """``out`` = the kernel of the named body's hinge."""
        L, slug = self._layout[body], self._slugs[body]
        q0, u0 = L["q"][0], L["u"][0]
        args = L["structure"]["trig_args"] if kernel in TRIG_KERNELS else None
        if not args:
            return f"sg_{slug}_{kernel}(q + {q0}, u + {u0}, 0, {out});"
        if body not in self._offset:
            self._offset[body] = len(self._angles)
            shift = lambda m: f"q[{q0 + int(m.group(1))}]"  # noqa: E731
            self._angles += [(re.sub(r"\bq\[(\d+)\]", shift, a), body) for a in args]
        return f"sg_{slug}_{kernel}_sc(q + {q0}, u + {u0}, sc + {2 * self._offset[body]}, {out});"

    def head(self) -> list:
        n = len(self._angles)
        if not n:
            return []
        return ([f"double ang[{n}], sc[{2 * n}];  /* the hinges' angles; sc = (sin, cos) of each */"]
                + [f"ang[{i}] = {a};  /* '{name}' */" for i, (a, name) in enumerate(self._angles)]
                + [f"sg_sincos_n({n}, ang, sc);"])


def kernel_structure(h: Hinge) -> dict:
    """Which entries of a hinge's transform, coord map and coord map derivative are constants (row-major;
    a float, or None where the entry depends on Q or U): what the model tracer folds."""
    def consts(M):
        return [float(e) if e.is_number else None for e in M]

    def aliases(M):
        """[j, +1 / -1] where entry i is entry j (j < i) or its negative, else None: for a PIN about y,
        X[10] is X[0] (cos) and X[8] is -X[2] (sin), which the tracer needs to see one rotation angle."""
        out, seen = [], {}
        for i, e in enumerate(M):
            hit = None
            if not e.is_number:
                if e in seen:
                    hit = [seen[e], 1]
                elif -e in seen:
                    hit = [seen[-e], -1]
                else:
                    seen[e] = i
            out.append(hit)
        return out

    printer = SgCPrinter(_slots(h))
    derivs = {}
    for k, exprs in derivative_kernels(h).items():
        derivs[k] = consts(exprs)
        if k in DERIVATIVE_KERNELS:       # [j, +1 / -1] where the derivative is entry j of the kernel (or minus it)
            index = {}
            for j, e in enumerate(getattr(h, DERIVATIVE_KERNELS[k][0])):
                if not e.is_number:
                    index.setdefault(e, j)
            derivs[f"{k}_alias"] = [None if e.is_number else [index[e], 1] if e in index else
                                    [index[-e], -1] if -e in index else None for e in exprs]
    return {**derivs, "transform": consts(h.transform), "coord_map": consts(h.coord_map),
            "qdot_map": consts(h.qdot_map),
            "ortho_complement": consts(h.ortho_complement),
            "trig_args": [printer.doprint(a) for a in hinge_trig_args(h)],
            "coord_map_dot": consts(h.coord_map_dot), "transform_alias": aliases(h.transform),
            "coord_map_alias": aliases(h.coord_map), "coord_map_dot_alias": aliases(h.coord_map_dot)}


def lane_kernel_lines(h, kernel: str, live: list, arr: str, q0: int, u0: int, trig0: int, memo=None,
                      names=None) -> list | None:
    """A hinge kernel's live entries printed on lane vectors (``sg_vd``): the kernel's own statements
    (:func:`emit_statements`, the same CSE and order as its scalar C, so the same operations per lane) with Q and
    U read from ``q_l`` / ``u_l`` and the sines and cosines of its angles from ``s_l`` / ``c_l`` (from
    ``trig0`` on), written into the lane array ``arr``.  None when a statement calls a function (a square root,
    a Stumpff series, libm): that kernel is called one lane at a time.  A derivative kernel
    (:data:`DERIVATIVE_KERNELS`) is differentiated once per hinge (``memo``, a dict)."""
    if kernel in DERIVATIVE_KERNELS:
        memo = {} if memo is None else memo
        if ("derivatives", id(h)) not in memo:
            memo[("derivatives", id(h))] = (h, derivative_kernels(h))
        M = memo[("derivatives", id(h))][1][kernel]
    else:
        M = getattr(h, kernel)
    args = hinge_trig_args(h) if kernel in TRIG_KERNELS else []
    # the kernel's statements once per (hinge, kernel, entries) for every body that has it (memo): printed with
    # placeholders (Q and U from 0, temporaries SGK_t<i>), then moved to this body's offsets and array by name
    key = ("statements", id(h), kernel, tuple(live))
    if memo is None or key not in memo:
        slots = {s_: f"q_l[{i}]" for i, s_ in enumerate(h.q)}
        slots.update({s_: f"u_l[{i}]" for i, s_ in enumerate(h.u)})
        got = emit_statements([M[i] for i in live], slots, out_name="OUT", temp_prefix="SGK_t",
                              trig_index={a: k for k, a in enumerate(args)} if args else None)
        if memo is not None:
            memo[key] = got
    else:
        got = memo[key]
    raw, _, helpers = got
    if helpers:
        return None
    names = names or {"q": "q_l", "u": "u_l"}        # the lane arrays of Q and U the statements read
    moved = lambda m: f"{names[m.group(1)]}[{(q0 if m.group(1) == 'q' else u0) + int(m.group(2))}]"  # noqa: E731
    lines = [re.sub(r"\bSGK_t", f"{arr}_t", re.sub(r"\b([qu])_l\[(\d+)\]", moved, line)) for line in raw]

    def trig(m):
        k = int(m.group(1))
        return f"{'c' if k % 2 else 's'}_l[{trig0 + k // 2}]"
    out = []
    for line in lines:
        line = re.sub(r"\bp\[(\d+)\]", trig, line)
        if re.search(r"\w\(", line):
            return None
        line = re.sub(r"^OUT\[(\d+)\]", lambda m: f"{arr}[{live[int(m.group(1))]}]", line)
        line = re.sub(r"^(\w+\[\d+\]) = ([-+.\deE]+);$", r"\1 = (sg_vd){0.0} + \2;", line)  # a constant, in every lane
        out.append(line.replace("const double ", "const sg_vd "))
    return out


def lane_kernel_head(items, bodies, nu, layout, slugs, strides, size, hinges=None, kernels=None, pool=None):
    """The start of a lane function: the hinge kernels' outputs it reads (``items``: (body, array, kernel, size,
    entries read)) as lane arrays ``sg_vd <array>[size]``, each kernel on lane vectors where :func:`lane_kernel_lines`
    prints it from ``hinges`` {body: Hinge} (``kernels``: a dict that keeps them for the other lane functions
    of the model, which read the same kernels), else per lane (the scalar kernel into ``k_out``, then its
    entries).  ``strides``: the rows of q, u and p; ``size``: {array: entries read} of the function's inputs,
    grown here to the whole of Q and U where a lane kernel reads them.  Returns ``(head lines, per-lane calls,
    whether one takes sines and cosines, the angles)``; with ``pool`` (the name of an array of vectors) the
    kernels' arrays are pointers into it, one after the other, and a fifth item ``({array: offset}, the pool's
    size)`` follows (a segmented lane function's segments read them there)."""
    calls, kernels = HingeCalls(layout, slugs), {} if kernels is None else kernels
    per_lane, decls, vector = [], [], []
    offsets, w = {}, 0
    for b, arr, kernel, n, live in items:
        if pool is None:
            decls.append(f"sg_vd {arr}[{n}];  /* '{b.name}' */")
        else:
            offsets[arr] = w
            decls.append(f"sg_vd *{arr} = {pool}{f' + {w}' if w else ''};  /* '{b.name}' */")
            w += n
        call = calls(b.name, kernel, "k_out")            # registers the hinge's angles (sg_sincos_split_lanes)
        Lb = layout[b.name]
        key = (b.name, kernel, tuple(live), calls._offset.get(b.name, 0))
        if key not in kernels:
            kernels[key] = None if hinges is None else lane_kernel_lines(hinges[b.name], kernel, live, arr, Lb["q"][0],
                                                                    Lb["u"][0], key[3], kernels)
        lane = kernels[key]
        if lane is not None:
            vector += [f"/* '{b.name}': {kernel}, on lane vectors */"] + lane
            for a, n_a in (("q", strides["q"]), ("u", nu)):   # the lane arrays of Q and U, whole, if read
                if any(f"{a}_l[" in line for line in lane):
                    size[a] = n_a
        else:
            per_lane.append(call + "  " + " ".join(f"{arr}[{i}][l] = k_out[{i}];" for i in live))
    angles = calls._angles
    head = []
    if angles:
        n = len(angles)
        head += [f"double ang[{n} * SG_W];  /* each hinge angle's lanes, one after the other */",
                 f"sg_vd s_l[{n}], c_l[{n}];  /* sin and cos of each angle, in lanes */",
                 "for (l = 0; l < SG_W; ++l) {",
                 f"    const double *q_r = q + (long)l * {strides['q']};  /* state l's row */",
                 *[f"    ang[{i} * SG_W + l] = {_row_q(a)};  /* '{name}' */" for i, (a, name) in enumerate(angles)],
                 "}",
                 f"sg_sincos_split_lanes({n} * SG_W, ang, (double *)s_l, (double *)c_l);"]
    head += decls + vector
    sc_calls = any("sc +" in c for c in per_lane)        # a per-lane call takes its sines and cosines
    if per_lane:
        k_size = max([16] + [n for _, _, _, n, _ in items])
        head += [
            "for (l = 0; l < SG_W; ++l) {  /* the other hinge kernels, one lane at a time, into the lane arrays */",
            f"    const double *q_r = q + (long)l * {strides['q']}, *u_r = u + (long)l * {nu};",
            *([f"    double sc_r[{2 * len(angles)}];", f"    for (i = 0; i < {len(angles)}; ++i) "
               "{ sc_r[2 * i] = s_l[i][l]; sc_r[2 * i + 1] = c_l[i][l]; }"] if sc_calls else []),
            f"    double k_out[{k_size}];",
            *["    " + re.sub(r"\(q \+ (\d+), u \+ (\d+), (sc \+|0)", _lane_args, c) for c in per_lane],
            "}"]
    return (head, per_lane, sc_calls, angles) + (() if pool is None else ((offsets, w),))


def _row_q(text: str) -> str:
    return re.sub(r"\bq\[", "q_r[", text)


def _lane_args(m) -> str:
    """A hinge kernel call's arguments for lane l: state l's rows of q and u, its sines and cosines."""
    return f"(q_r + {m.group(1)}, u_r + {m.group(2)}, " + ("sc_r +" if m.group(3) == "sc +" else "0")
