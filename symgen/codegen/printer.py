"""The C printer of looped programs (:mod:`symgen.ir.program`): one description of a driver, printed for one
state (every array of doubles) or for SG_W states at once (lanes: every array of ``sg_vd`` vectors, the steps
the lane tables' functions, a step's status recorded per lane by the step itself).

:func:`c_lines` returns the statements of the function body the templates wrap; its integer locals (the loop
variables, ``i`` for the fills and copies, ``s`` for a step's status) are declared first, but for those the
caller names in ``declared`` (the lane functions' wrapper declares ``i`` and ``l``)."""
from __future__ import annotations

import re
import textwrap

from ..ir import program as P

_ELEMENT = {False: "double", True: "sg_vd"}
_PREC = {"+": 1, "-": 1, "*": 2, "/": 2}


def index(x) -> str:
    """An index expression in C."""
    x = P.ix(x)
    if isinstance(x, int):
        return str(x)
    if isinstance(x, P.Var):
        return x.name
    if isinstance(x, P.Lookup):
        return f"{x.table}[{index(x.index)}]"
    if isinstance(x, P.Call):
        return f"{x.function}({', '.join(_arg(a) for a in x.args)})"
    if isinstance(x, P.Wide):
        inner = index(x.x)
        return f"(long){inner}" if isinstance(P.ix(x.x), (int, P.Var, P.Lookup)) else f"(long)({inner})"
    if isinstance(x, P.Sum):
        text = index(x.terms[0])
        for t in x.terms[1:]:
            if isinstance(t, int) and t < 0:
                text += f" - {-t}"
            elif isinstance(t, P.Prod) and t.a == -1:
                text += f" - {index(t.b)}"
            else:
                text += f" + {index(t)}"
        return text
    if isinstance(x, P.Select):
        return f"({condition(x.cond)} ? {index(x.a)} : {index(x.b)})"
    if isinstance(x, P.Prod):
        def factor(f):
            return f"({index(f)})" if isinstance(f, P.Sum) else index(f)
        return f"{factor(x.a)} * {factor(x.b)}"
    raise TypeError(f"{x!r} is not an index expression")


def condition(c) -> str:
    """A condition (:class:`~symgen.ir.program.Cmp`, ``And``, ``Or``) in C."""
    if isinstance(c, P.And):
        return " && ".join(_paren(x) for x in c.conds)
    if isinstance(c, P.Or):
        return " || ".join(_paren(x) for x in c.conds)
    return f"{index(c.a)} {c.op} {index(c.b)}"


def _paren(c) -> str:
    return f"({condition(c)})" if isinstance(c, (P.And, P.Or)) else condition(c)


def expr(x, zero: str = "zero") -> str:
    """A double expression in C (``zero``: the name of the vector of zeros)."""
    if isinstance(x, P.Elem):
        return f"{x.array}[{index(x.index)}]" + ("" if x.lane is None else f"[{index(x.lane)}]")
    if isinstance(x, P.Zeros):
        return zero
    if isinstance(x, P.Printed):
        return x.text
    if isinstance(x, P.Scalar):
        return x.name
    if isinstance(x, P.Num):
        return _const(x.value)
    if isinstance(x, P.Neg):
        return f"-{_operand(x.a, zero)}"
    if isinstance(x, P.Fn):
        return f"{x.name}({expr(x.a, zero)})"
    if isinstance(x, P.Bin):             # parentheses where C's precedence and left-to-right order need them
        prec = _PREC[x.op]
        left, right = expr(x.a, zero), expr(x.b, zero)
        if isinstance(x.a, P.Bin) and _PREC[x.a.op] < prec or _compound(x.a):
            left = f"({left})"
        if isinstance(x.b, P.Bin) and _PREC[x.b.op] <= prec or _compound(x.b):
            right = f"({right})"
        return f"{left} {x.op} {right}"
    raise TypeError(f"{x!r} is not a double expression")


def _compound(x) -> bool:
    """Another printer's expression that is more than a name or an entry (parenthesized as an operand)."""
    return isinstance(x, P.Printed) and re.fullmatch(r"[\w\[\]]+", x.text) is None


def _operand(x, zero: str = "zero") -> str:
    return f"({expr(x, zero)})" if isinstance(x, P.Bin) else expr(x, zero)


def _const(x) -> str:
    text = repr(float(x))
    return text if any(ch in text for ch in ".e") else text + ".0"


def _arg(a) -> str:
    if a is None:
        return "0"
    if isinstance(a, str):
        return P._ident(a)
    if isinstance(a, P.At):
        if a.row is not None:
            return _at(f"{P._ident(a.array)}[{index(a.row)}]", a.offset)
        return _at(a.array, a.offset)
    if isinstance(a, P.Doubles):
        return f"(double *){P._ident(a.array)}"
    return index(a)


def _at(array: str, offset) -> str:
    off = index(offset)
    return array if off == "0" else f"{array} + {off}"


def _plus(offset, i: str = "i") -> str:
    off = index(offset)
    return i if off == "0" else f"{off} + {i}"


def c_lines(prog: P.Program, lanes: bool = False, declared=(), vector: str | None = None, zero: str = "zero",
            ints=(), unused=(), returns: bool = False) -> list:
    """The C statements of ``prog`` (one state, or ``lanes``: SG_W states); ``vector``: the C type of the arrays
    of :attr:`symgen.ir.program.Locals.vectors` (a program with its directions on lanes); ``zero``: the name of
    its vector of zeros (:class:`~symgen.ir.program.Zeros`; None: a compound literal); ``ints``: integer locals to declare besides the loop
    variables where the body reads them (those :class:`~symgen.ir.program.Traced` statements use); ``unused``:
    the function's parameters, each cast to void where the body does not read it; ``returns``: the body's
    :class:`~symgen.ir.program.Return` statements are printed on lanes too (a lane program's are not: the function
    that wraps it returns the lanes' statuses)."""
    elem = _ELEMENT[lanes]
    if zero is None:                      # no named vector of zeros: a compound literal of the element type
        zero = f"({elem}){{0}}"
    ctx = (lanes, elem, vector, zero, returns)
    out = []
    body = [ln for s in prog.body if not isinstance(s, P.Locals) for ln in _stmt(s, ctx)]
    words = set(re.findall(r"\b\w+\b", "\n".join(body)))
    ints = [v for v in ints if v in words] + prog.loop_vars()
    stmts = list(prog.walk())
    if any(isinstance(s, (P.Zero, P.Copy)) for s in stmts):
        ints.append("i")
    # "s": a checked call's status (a batch's call that returns its own result, on_status, needs none)
    if not lanes and any(s.check and (isinstance(s, P.Step) or s.on_status is None)
                         for s in stmts if isinstance(s, (P.Step, P.Invoke))):
        ints.append("s")
    ints = [v for v in dict.fromkeys(ints) if v not in declared]
    for s in prog.body:
        if isinstance(s, P.Locals):
            out += _locals(s, ctx, top=True)
    if ints:
        out.append(f"int {', '.join(ints)};")
    if lanes and any(isinstance(s, P.Zero) for s in stmts):
        out.append("const sg_vd sg_vd_zero = {0.0};")
    void = [f"(void){a};" for a in unused if a not in words]
    return out + ([" ".join(void)] if void else []) + body


def _ctype(elem: str, ctx) -> str:
    lanes, element, vector, _, _ = ctx
    return {"element": element, "double": "double", "vector": vector, "int": "int"}[elem]


def _param(prm: P.Param, ctx) -> str:
    if not prm.pointer:
        return f"{_ctype(prm.elem, ctx)} {prm.name}"
    return f"{'const ' if prm.const else ''}{_ctype(prm.elem, ctx)} *{prm.name}"


def _target(target) -> str:
    if target is None:
        return ""
    if target == "lanes":
        return "SG_LANE_TARGET "
    return f'__attribute__((target("{target}"))) '


def c_function(fn: P.Function, lanes: bool = False, vector: str | None = None) -> list:
    """A :class:`~symgen.ir.program.Function` in C (its doc comment, signature and body; ``lanes`` and ``vector``
    as :func:`c_lines` takes them)."""
    ctx = (lanes, _ELEMENT[lanes], vector, "zero", False)
    params = ", ".join(_param(x, ctx) for x in fn.params)
    head = f"{_target(fn.target)}{'static ' if fn.static else ''}{fn.returns} {fn.name}({params})"
    if fn.body is None:
        return [f"{head};"]
    body = c_lines(P.Program(list(fn.body)), lanes, vector=vector, ints=fn.ints,
                   unused=[x.name for x in fn.params], returns=fn.returns == "int")
    return ([*_comment(fn.doc)] if fn.doc else []) + [head, "{", *("    " + ln for ln in body), "}"]


def c_function_table(tbl: P.FunctionTable, lanes: bool = False, vector: str | None = None) -> list:
    """A :class:`~symgen.ir.program.FunctionTable` in C: a constant array of function pointers."""
    ctx = (lanes, _ELEMENT[lanes], vector, "zero", False)
    params = ", ".join(_param(x, ctx) for x in tbl.params)
    return [f"static {tbl.returns} (*const {tbl.name}[{len(tbl.functions)}])({params}) = {{",
            "    " + ", ".join(tbl.functions), "};"]


def _arrays(arrays) -> str:
    """``a[n], b[m]``: arrays' declarators (a size an int, at least 1, or an index expression of constants)."""
    return ", ".join(f"{a}[{max(int(n), 1) if isinstance(n, int) else index(n)}]" for a, n in arrays)


def _locals(s: P.Locals, ctx, top: bool = False) -> list:
    """The declarations of a :class:`~symgen.ir.program.Locals` (its comment on the first of them)."""
    _, elem, vector, zero, _ = ctx
    decls = []
    if s.arrays or s.pointers:
        decls.append(f"{elem} {', '.join(([_arrays(s.arrays)] if s.arrays else []) + [f'*{p}' for p in s.pointers])};")
    if s.vectors:
        decls.append(f"{vector} {_arrays(s.vectors)};")
    if s.doubles:
        decls.append(f"double {_arrays(s.doubles)};")
    if decls and s.comment:
        decls[0] += f"  /* {s.comment} */"
    out = decls
    if s.zero or (top and s.vectors):
        out.append(f"const {vector} {zero} = ({vector}){{0}};")
    if s.ints:
        out.append(f"int {', '.join(f'{name}[{max(int(n), 1)}]' for name, n in s.ints)};")
    for name, values in s.tables:
        out.append(f"static const int {name}[{max(len(values), 1)}] = {{{', '.join(map(str, values)) or '0'}}};")
    for name, values in s.dtables:
        out.append(f"static const double {name}[{max(len(values), 1)}] = "
                   f"{{{', '.join(_const(v) for v in values) or '0.0'}}};")
    return out


def _comment(text: str, width: int = 110) -> list:
    """A comment, on one line or wrapped into a block of lines."""
    if len(text) + 6 <= width:
        return [f"/* {text} */"]
    lines = textwrap.wrap(text, width - 3)
    return [f"/* {lines[0]}"] + [f" * {ln}" for ln in lines[1:-1]] + [f" * {lines[-1]} */"]


def _block(body, ctx) -> list:
    lines = [ln for s in body for ln in _stmt(s, ctx)]
    if len(lines) == 1:
        return lines
    return ["{"] + ["    " + ln for ln in lines] + ["}"]


def _nest(head: str, body, ctx) -> list:
    if len(body) == 1 and isinstance(body[0], P.Block):     # a loop's body is a scope already
        body = body[0].body
    inner = _block(body, ctx)
    if len(inner) == 1:
        return [f"{head} {inner[0]}"]
    return [f"{head} {{"] + inner[1:-1] + ["}"]


def _stmt(s, ctx) -> list:
    lanes, elem, _, zero, returns = ctx
    if isinstance(s, P.Comment):
        return _comment(s.text)
    if isinstance(s, P.Loop):
        v = s.var
        if s.step != 1 and s.down:
            raise ValueError("a downward loop has step 1")
        inc = f"++{v}" if s.step == 1 else f"{v} += {index(s.step)}"
        head = (f"for ({v} = {index(P.add(s.stop, -1))}; {v} >= {index(s.start)}; --{v})" if s.down else
                f"for ({v} = {index(s.start)}; {v} < {index(s.stop)}; {inc})")
        return _nest(head, s.body, ctx)
    if isinstance(s, P.Ancestors):
        v = s.var
        first = index(s.of) if s.inclusive else f"{s.parent}[{index(s.of)}]"
        return _nest(f"for ({v} = {first}; {v} >= 0; {v} = {s.parent}[{v}])", s.body, ctx)
    if isinstance(s, P.Block):
        lines = [ln for x in s.body for ln in _stmt(x, ctx)]
        return ["{"] + ["    " + ln for ln in lines] + ["}"]
    if isinstance(s, P.If):
        then = _block(s.then, ctx)
        out = [f"if ({condition(s.cond)}) {then[0]}"] + then[1:]
        if s.orelse:
            chained = len(s.orelse) == 1 and isinstance(s.orelse[0], P.If)      # else if
            other = _stmt(s.orelse[0], ctx) if chained else _block(s.orelse, ctx)
            out += [f"else {other[0]}"] + other[1:]
        return out
    if isinstance(s, P.Locals):                          # a nested block's own locals
        return _locals(s, ctx)
    if isinstance(s, P.View):
        ctype = f"{'const ' if s.const else ''}{_ctype(s.elem, ctx)}"
        at = f"{s.array}[{index(s.row)}]" if s.row is not None else _at(s.array, s.offset)
        if s.when is not None:
            other = "0" if s.other is None else _at(*s.other)
            at = f"{condition(s.when)} ? {at} : {other}"
        return [f"{ctype} *{s.name} = {at};"]
    if isinstance(s, P.Traced):
        return list(s.lines)
    if isinstance(s, P.Switch):
        out = [f"switch ({index(s.value)}) {{"]
        for value, body in list(s.cases) + [("default", s.default)]:
            lines = [ln for x in body for ln in _stmt(x, ctx)] + ["break;"]
            out += ["default:" if value == "default" else f"case {int(value)}:"] + ["    " + ln for ln in lines]
        return out + ["}"]
    if isinstance(s, P.Set):
        return [f"{expr(s.target, zero)} {s.op} {expr(s.value, zero)};"]
    if isinstance(s, P.Def):
        return [f"const {_ctype(s.elem, ctx)} {s.name} = {expr(s.value, zero)};"]
    if isinstance(s, P.Bind):
        return [f"{elem} *restrict {s.name} = {_at(s.array, s.offset)};"]
    if isinstance(s, P.SetInt):
        return [f"{s.array}[{index(s.index)}] = {index(s.value)};"]
    if isinstance(s, P.Spill):
        return [f"__builtin_memcpy({_at(s.array, s.offset)}, &{expr(s.src)}, sizeof {expr(s.src)});"]
    if isinstance(s, P.Let):
        return [f"{s.name} = {index(s.value)};"]
    if isinstance(s, P.Check):
        why = f"  /* {s.why} */" if s.why else ""
        return [f"if (!({expr(s.value, zero)} > 0.0)) return {int(s.status)};{why}"]
    if isinstance(s, P.Invoke):
        call = f"{P._ident(s.function)}({', '.join(_arg(a) for a in s.args)})"
        if s.check and not lanes and s.on_status is not None:
            return [f"if ({call} != 0) return {index(s.on_status)};"]
        base = index(s.status_base)
        status = "s" if base == "0" else f"{base} + s"
        return [f"if ((s = {call}) != 0) return {status};"] if s.check and not lanes else [f"{call};"]
    if isinstance(s, P.Step):
        args = ", ".join([index(s.body)] + [_arg(a) for a in s.args])
        call = f"{s.table}[{s.kinds}[{index(s.body)}]]({args})"
        if s.check and not lanes:
            return [f"if ((s = {call}) != 0) return s;"]
        return [f"{call};"]
    if isinstance(s, P.Zero):
        why = f"  /* {s.why} */" if s.why else ""
        if lanes and not s.doubles:  # whole vectors (a store of each lane's double is 8 stores, and slower)
            return [f"for (i = 0; i < {index(s.n)}; ++i) {s.array}[{_plus(s.offset)}] = sg_vd_zero;{why}"]
        return [f"for (i = 0; i < {index(s.n)}; ++i) {s.array}[{_plus(s.offset)}] = 0.0;{why}"]
    if isinstance(s, P.Copy):
        return [f"for (i = 0; i < {index(s.n)}; ++i) {s.dst}[{_plus(s.dst_offset)}] = {s.src}[{_plus(s.src_offset)}];"]
    if isinstance(s, P.Scatter):
        if lanes and s.rows is not None:            # into each lane's row of doubles
            targets = " = ".join(f"{a}[(long)l * {index(s.rows)} + {index(i)}]" for a, i in s.targets)
            return [f"for (l = 0; l < SG_W; ++l) {targets} = {s.source[0]}[{index(s.source[1])}][l];"]
        targets = " = ".join(f"{a}[{index(i)}]" for a, i in s.targets)
        return [f"{targets} = {s.source[0]}[{index(s.source[1])}];"]
    if isinstance(s, P.Point):
        return [f"{s.name} = {_at(s.array, s.offset)};"]
    if isinstance(s, P.Swap):
        return [f"{{ {elem} *t_ = {s.a}; {s.a} = {s.b}; {s.b} = t_; }}"]
    if isinstance(s, P.Return):
        return [] if lanes and not returns else [f"return {index(s.value)};"]
    raise TypeError(f"{s!r} is not a statement of a looped program")


# ---- the batched entry points' records (symgen.codegen.plan) ----------------------------------------------------
def c_param(name: str, ctype: str = "double", const: bool = True) -> str:
    """A parameter: a pointer to doubles (``const`` for an input), else a ``ctype`` value."""
    return f"{'const ' if const else ''}double *{name}" if ctype == "double" else f"{ctype} {name}"


def c_state_arg(name: str, stride: int, i: str = "i") -> str:
    """A batch's argument for its state ``i``: ``name`` advanced by ``stride`` doubles a state (0: shared)."""
    return f"{name} + (long){i} * {stride}" if stride else name


def c_args(args) -> str:
    """An argument list; None: a null pointer."""
    return ", ".join("0" if a is None else a for a in args)
