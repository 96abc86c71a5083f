"""Straight-line C from an algorithm run once on symbolic scalars (the model dynamics' emit stage).

A :class:`Tape` records an algorithm written in plain Python arithmetic on :class:`Val` objects and on
floats.  Floats are the model's constants (inertias, fixed transforms, the structural zeros and ones of a
hinge's transform and coord map): every operation with them is folded while tracing, so ``0 * x``
disappears, ``1 * x`` is ``x``, a PIN about z touches one column.  What remains is one ``const double``
per operation, with common subexpressions shared and dead values dropped, in program order::

    tape = Tape()
    q0 = tape.input("q[0]")
    c, s = tape.call("cos", q0), tape.call("sin", q0)
    tape.store("out[0]", c * 2.0 + s * 0.0)       # -> out[0] = 2.0 * t0;  (s is never computed)
    lines = tape.lines()

Values that the algorithm names (``tape.name(v, "D3")``) keep that name in the C, so the generated code
can be read next to the equations.
"""
from __future__ import annotations

import math
import re


class Arithmetic:
    """Python's arithmetic operators on a traced value, each the method of its tape (``self.tape``) that folds
    constants: shared by :class:`Val` and :class:`symgen.ir.dual.Dual`."""

    __slots__ = ()

    def __add__(self, o):
        return self.tape.add(self, o)

    def __radd__(self, o):
        return self.tape.add(o, self)

    def __sub__(self, o):
        return self.tape.add(self, self.tape.neg(o))

    def __rsub__(self, o):
        return self.tape.add(o, self.tape.neg(self))

    def __mul__(self, o):
        return self.tape.mul(self, o)

    def __rmul__(self, o):
        return self.tape.mul(o, self)

    def __truediv__(self, o):
        return self.tape.div(self, o)

    def __rtruediv__(self, o):
        return self.tape.div(o, self)

    def __neg__(self):
        return self.tape.neg(self)


class Val(Arithmetic):
    """A runtime scalar: an input (``q[3]``, ``X2[5]``: ``ref`` = (array, index)) or one traced operation, ``op``,
    a typed expression (no text; the printers write it in their language):

    * ``("dot", terms, const)``: ``const + sum(coef * f1 * f2 ...)``, ``terms`` a tuple of ``(coef, factors)``;
    * ``("neg", x)``, ``("div", a, b)`` (``a`` a Val or a float), ``("call", fn, x)`` (a function of ``math``),
      ``("copy", x)`` (the same value under a second name)."""

    __slots__ = ("tape", "op", "deps", "hint", "name", "is_input", "array", "ref", "live", "key", "negates", "used")

    def __init__(self, tape, op, deps, is_input=False, name=None, array=None):
        self.tape, self.op, self.deps = tape, op, deps
        self.is_input, self.name, self.array, self.hint, self.live = is_input, name, array, None, False
        self.ref = _entry(name) if is_input else None
        self.negates = None   # the value this one is the negative of (-(-x) is x, not a new statement)
        self.used = False     # some statement already reads it (then a name for a new role is an alias)


class Ptr:
    """A typed argument of :meth:`Tape.invoke`: the address of entry ``offset`` of an array, printed with its offset
    even when it is 0 (``out + 0``)."""

    __slots__ = ("array", "offset")

    def __init__(self, array: str, offset: int):
        self.array, self.offset = _identifier(array), int(offset)

    def __repr__(self):
        return f"Ptr({self.array!r}, {self.offset})"


def _entry(text: str):
    """(array, index) of an array entry's text ``A[i]``, else None (an input named otherwise)."""
    m = re.fullmatch(r"(\w+)\[(\d+)\]", text)
    return (m.group(1), int(m.group(2))) if m else None


def _key(x):
    return id(x) if isinstance(x, Val) else x


def op_key(op) -> tuple:
    """A typed expression as a hashable key (values by identity): two operations with one key are one value."""
    if op[0] == "dot":
        return ("dot", tuple((c, tuple(id(f) for f in fs)) for c, fs in op[1]), op[2])
    return tuple(_key(x) for x in op)


def op_args(op) -> list:
    """The values a typed expression reads."""
    if op[0] == "dot":
        return [f for _, fs in op[1] for f in fs]
    return [x for x in op[1:] if isinstance(x, Val)]


def c_expr(op, ref) -> str:
    """A typed expression in C (``ref(v)``: how a value is written): the one place where an operation becomes text."""
    kind = op[0]
    if kind == "dot":
        text = []
        for c, vals in op[1]:
            mag = abs(c)
            factors = ([] if mag == 1.0 else [_const(mag)]) + [ref(v) for v in vals]
            if text:
                text.append(f" {'-' if c < 0 else '+'} ")
            elif c < 0:
                text.append("-")
            text.append(" * ".join(factors))
        if op[2] != 0.0:
            text.append(f" {'-' if op[2] < 0 else '+'} {_const(abs(op[2]))}")
        return "".join(text)
    if kind == "neg":
        return "-" + ref(op[1])
    if kind == "div":
        return f"{ref(op[1]) if isinstance(op[1], Val) else _const(op[1])} / {ref(op[2])}"
    if kind == "call":
        return f"{op[1]}({ref(op[2])})"
    if kind == "copy":
        return ref(op[1])
    raise ValueError(f"unknown operation {kind!r}")


def _identifier(name) -> str:
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_]\w*", name):
        raise ValueError(f"{name!r} is not an identifier")
    return name


def _const(x) -> str:
    x = float(x)
    if not math.isfinite(x):
        raise ValueError(f"non-finite constant {x!r} in traced code")
    text = repr(x)
    return text if any(ch in text for ch in ".e") else text + ".0"


class Tape:
    """Recorder of one straight-line C function body (see the module docstring)."""

    def __init__(self, temp_prefix: str = "t"):
        self._prefix = temp_prefix
        self._stmts = []      # ("def", Val) | ("effect", parts, deps)
        self._memo = {}
        self._inputs = {}

    # ---- leaves
    def input(self, text: str, array: str | None = None) -> Val:
        v = self._inputs.get(text)
        if v is None:
            v = self._inputs[text] = Val(self, (), (), is_input=True, name=text, array=array)
        return v

    def _def(self, op: tuple) -> Val:
        key = op_key(op)
        v = self._memo.get(key)
        if v is None:
            v = Val(self, op, tuple(op_args(op)))
            for d in v.deps:
                d.used = True
            self._memo[key] = v
            self._stmts.append(("def", v))
        return v

    # ---- operations (floats fold)
    def add(self, a, b):
        return self.dot([(1.0, a), (1.0, b)])

    def neg(self, a):
        if not isinstance(a, Val):
            return -float(a)
        return self.dot([(-1.0, a)])

    def mul(self, a, b):
        return self.dot([(a, b)])

    def div(self, a, b):
        if not isinstance(b, Val):
            return self.mul(a, 1.0 / float(b))
        if not isinstance(a, Val):
            if a == 0.0:
                return 0.0
            return self._def(("div", float(a), b))
        return self._def(("div", a, b))

    def call(self, fn: str, a):
        if not isinstance(a, Val):
            return float(getattr(math, fn)(a))
        return self._def(("call", _identifier(fn), a))

    def dot(self, pairs, init=0.0):
        """``init + sum(a * b)`` as one statement: zero terms dropped, constants gathered, ``+-1`` factors
        turned into signs.  Returns a float when everything folds."""
        if isinstance(init, Val):
            pairs, init = list(pairs) + [(1.0, init)], 0.0
        const = float(init)
        terms = []  # (coef, [vals])
        for a, b in pairs:
            av, bv = isinstance(a, Val), isinstance(b, Val)
            if not av and not bv:
                const += float(a) * float(b)
                continue
            if (not av and a == 0.0) or (not bv and b == 0.0):
                continue
            if av and bv:
                terms.append((1.0, [a, b]))
            else:
                c, v = (float(b), a) if av else (float(a), b)
                terms.append((c, [v]))
        if not terms:
            return const
        if len(terms) == 1 and const == 0.0 and terms[0][0] == 1.0 and len(terms[0][1]) == 1:
            return terms[0][1][0]
        if len(terms) == 1 and const == 0.0 and terms[0][0] == -1.0 and len(terms[0][1]) == 1:
            x = terms[0][1][0]
            if x.negates is not None:                  # -(-y) = y
                return x.negates
            v = self._def(("neg", x))
            v.negates = x
            return v
        return self._def(("dot", tuple((c, tuple(vals)) for c, vals in terms), const))

    # ---- effects and names
    # Statements are typed, so each printer (:meth:`lines`, :meth:`lane_lines`) says in its own words what they
    # do: ("def", v), ("store", target, value), ("add", target, value) (``+=``), ("store_int", target, local),
    # ("check", value, status, why), ("fill", array, n, why), ("locals", arrays, ints, comment),
    # ("invoke", function, args, result), ("invoke_if", values, invoke, fill), ("return", value), ("effect", parts)
    # (C written by a code-generation caller), ("comment", text).
    def store(self, target: str, value) -> None:
        """``target = value`` (a float is written as a literal); ``target`` names an array entry, ``out[3]``."""
        if isinstance(value, Val):
            value.used = True
        self._stmts.append(("store", target, value))

    def check_positive(self, value, status, why: str) -> None:
        """Stop with ``status`` (an integer, or the name of one) unless ``value > 0`` (a pivot of a
        factorization)."""
        value.used = True
        self._stmts.append(("check", value, status, why))

    def fill_zeros(self, array: str, n: int, why: str) -> None:
        """``array[0:n] = 0``, one loop (the stores that follow overwrite the entries that are not zero)."""
        self._stmts.append(("fill", array, n, why))

    def local_arrays(self, arrays, comment: str | None = None, ints=()) -> None:
        """Scratch locals of the function, declared here (before the statements that use them): ``arrays``, a
        list of ``(name, size)`` arrays of doubles; ``ints``, a list of ``(name, size)`` integers, an array or,
        with size None, one integer (the result of an :meth:`invoke`)."""
        arrays = tuple((_identifier(a), int(n)) for a, n in arrays)
        ints = tuple((_identifier(a), None if n is None else int(n)) for a, n in ints)
        if not arrays and not ints:
            raise ValueError("local_arrays declares nothing")
        self._stmts.append(("locals", arrays, ints, comment))

    def invoke(self, function: str, args, result: str | None = None) -> None:
        """A call of a routine (a helper, a hinge kernel, another of the model's functions) for what it writes
        into arrays.  ``args``, each typed: a ``str`` is an identifier (an array, a table, a function passed by
        name, an integer local), a :class:`Ptr` an array entry's address, an ``int`` an integer, a ``float`` a
        double, ``None`` a null pointer.  ``result``: an integer local (see :meth:`local_arrays`) that gets the
        routine's return value."""
        self._stmts.append(self._invoke(function, args, result))

    def invoke_if_nonzero(self, values, function: str, args, zeros: tuple) -> None:
        """:meth:`invoke` when one of ``values`` (traced inputs, gains say) is not zero; else
        ``zeros = (array, n)``: ``array[0:n] = 0`` (what the call would have written)."""
        values = tuple(values)
        if not values or not all(isinstance(v, Val) for v in values):
            raise ValueError("invoke_if_nonzero needs traced values to test")
        for v in values:
            v.used = True
        array, n = zeros
        self._stmts.append(("invoke_if", values, self._invoke(function, args, None),
                            ("fill", _identifier(array), int(n), None)))

    @staticmethod
    def _invoke(function, args, result):
        for a in args:
            if isinstance(a, str):
                _identifier(a)
            elif not (a is None or isinstance(a, (Ptr, int, float))) or isinstance(a, bool):
                raise TypeError(f"argument {a!r} of {function!r} is not an identifier, Ptr, int, float or None")
        return ("invoke", _identifier(function), tuple(args), None if result is None else _identifier(result))

    def accumulate(self, target: str, value) -> None:
        """``target += value`` (a parent's sum of its children's pushes: P+, z+, f); ``target`` names an array entry."""
        if isinstance(value, Val):
            value.used = True
        self._stmts.append(("add", target, value))

    def store_int(self, target: str, local: str) -> None:
        """``target = local`` as a double; ``local`` names an integer local (a rank an :meth:`invoke` returned)."""
        self._stmts.append(("store_int", target, _identifier(local)))

    def ret(self, value) -> None:
        """The function's result (0: success)."""
        self._stmts.append(("return", value))

    def begin_if_array(self, array: str, why: str | None = None) -> None:
        """The statements up to :meth:`end_if` run only where ``array`` is not a null pointer (an optional output:
        the frame walk step's Jacobian columns, which frame_pose does not ask for); the values first defined
        there are read there only."""
        self._stmts.append(("if_array", _identifier(array), why))

    def end_if(self) -> None:
        """The end of :meth:`begin_if_array`'s block."""
        self._stmts.append(("end_if",))

    def effect(self, parts: tuple) -> None:
        """A statement written in C by a code-generation caller, kept in program order; Vals in ``parts`` are
        printed by name."""
        parts = tuple(p if isinstance(p, (Val, str)) else _const(p) for p in parts)
        for p in parts:
            if isinstance(p, Val):
                p.used = True
        self._stmts.append(("effect", parts))

    def comment(self, text: str) -> None:
        self._stmts.append(("comment", text))

    def name(self, value, hint: str):
        """Give a traced value a readable C name (inputs, constants and named values keep theirs).  A value
        that another statement already reads plays another role there (a rotation entry that is also an
        inertia entry): it gets a copy under the new name, one name per role."""
        if isinstance(value, Val) and not value.is_input and value.hint is None:
            if value.used:
                key = ("name", id(value), hint)          # the same copy when the same value is named again
                copy = self._memo.get(key)
                if copy is not None:
                    return copy
                value = self._memo[key] = Val(self, ("copy", value), (value,))
                value.deps[0].used = True
                self._stmts.append(("def", value))
            value.hint = hint
        return value

    # ---- output
    def _reads(self, s) -> list:
        """The values a statement that is not a definition reads."""
        if s[0] == "effect":
            return [p for p in s[1] if isinstance(p, Val)]
        if s[0] in ("store", "add", "check", "return"):
            return [x for x in s[1:3] if isinstance(x, Val)]
        if s[0] == "invoke_if":
            return list(s[1])
        return []

    def _mark_live(self):
        stack = [d for s in self._stmts if s[0] != "def" for d in self._reads(s)]
        while stack:
            v = stack.pop()
            if v.live:
                continue
            v.live = True
            stack.extend(v.deps)

    def live_arrays(self) -> set:
        """Names of the input arrays (``array=`` of :meth:`input`) the live code reads."""
        self._mark_live()
        return {v.array for v in self._inputs.values() if v.live and v.array}

    def lines(self) -> list:
        """The C statements; temporaries are ``const double``, dead ones are dropped."""
        self._mark_live()
        used, n = set(), 0
        for s in self._stmts:
            if s[0] == "def" and s[1].live:
                v = s[1]
                if v.hint and v.hint not in used:
                    v.name = v.hint
                else:
                    v.name = f"{self._prefix}{n}"
                    n += 1
                used.add(v.name)
        return [ln for _, lines in self._statement_lines() for ln in lines]

    def _statement_lines(self) -> list:
        """``(statement, its C lines)`` for each statement :meth:`lines` prints, in order (names as it gives them)."""
        def text(parts):
            return "".join(p.name if isinstance(p, Val) else p for p in parts)

        def name(v):
            return v.name

        def value(x):
            return x.name if isinstance(x, Val) else _const(x)

        def fill(s, i="i"):
            why = f"  /* {s[3]} */" if s[3] is not None else ""
            return f"{{ int {i}; for ({i} = 0; {i} < {s[2]}; ++{i}) {s[1]}[{i}] = 0.0; }}{why}"

        res, depth = [], 0
        for s in self._printed():
            out = _Indented("    " * depth)
            res.append((s, out))
            kind = s[0]
            if kind in _FRAMING:
                depth = _framing(s, out, depth, {})
            elif kind == "def":
                out.append(f"const double {s[1].name} = {c_expr(s[1].op, name)};")
            elif kind == "store":
                out.append(f"{s[1]} = {value(s[2])};")
            elif kind == "add":
                out.append(f"{s[1]} += {value(s[2])};")
            elif kind == "store_int":
                out.append(f"{s[1]} = (double){s[2]};")
            elif kind == "check":
                out.append(f"if (!({value(s[1])} > 0.0)) return {s[2]};  /* {s[3]} */")
            elif kind == "fill":
                out.append(fill(s))
            elif kind == "locals":
                decl = [f"{ctype} {', '.join(a if n is None else f'{a}[{n}]' for a, n in group)};"
                        for ctype, group in (("double", s[1]), ("int", s[2])) if group]
                out.append("  ".join(decl + ([f"/* {s[3]} */"] if s[3] is not None else [])))
            elif kind == "invoke":
                out.append(_invoke_text(s))
            elif kind == "invoke_if":                    # the zero fill of the else branch counts with i_
                out.append(f"if ({' || '.join(f'{value(v)} != 0.0' for v in s[1])}) {_invoke_text(s[2])}")
                out.append(f"else {fill(s[3], 'i_')}")
            elif kind == "return":
                out.append(f"return {s[1] if isinstance(s[1], (int, str)) else value(s[1])};")
            else:
                out.append(text(s[1]))
        return res

    #: the statements a segment (:meth:`segments`) holds on its own: no local arrays, calls or written C, whose
    #: arrays and control would span segments
    SEGMENT_KINDS = frozenset(("def", "store", "add", "check", "return", "comment"))

    def segments(self, k: int) -> dict | None:
        """The statements of :meth:`lines` cut into ``k`` consecutive segments of about as many definitions each, to
        be printed as ``k`` functions called one after the other: a straight-line function of thousands of
        statements compiles in much more than twice the time of each of its halves (gcc's register allocation
        grows faster than the function: Talos's FD, 7,140 lines, 13.9 s against 9.3 s for two halves, measured
        under the same load).  Returns ``{"segments": [...], "slots": {name: index}}``: each segment's ``lines``, the
        values it reads that an earlier segment defines (``carry_in``, names) and those it defines that a later one
        reads (``carry_out``), the arrays its inputs read (``arrays``); ``slots`` numbers the carried values (the
        caller's array between segments).  None when ``k < 2`` or the tape holds a statement a segment cannot hold
        on its own (:data:`SEGMENT_KINDS`)."""
        if k < 2:
            return None
        self.lines()                                        # names the live temporaries
        cut = self._cut(self._statement_lines(), k)
        if cut is not None:
            cut.pop("values")
        return cut

    def _cut(self, stmts, k: int) -> dict | None:
        """:meth:`segments` of printed ``(statement, lines)`` pairs; also ``values``: the carried values."""
        if any(st[0] not in self.SEGMENT_KINDS for st, _ in stmts):
            return None
        n_defs = sum(1 for st, _ in stmts if st[0] == "def")
        where, seg_of, j, seen = {}, [], 0, 0
        for i, (st, _) in enumerate(stmts):
            # a new segment starts at a statement (not after a comment, which belongs to what follows it)
            if j < k - 1 and seen >= n_defs * (j + 1) / k and (i == 0 or stmts[i - 1][0][0] != "comment"):
                j += 1
            seg_of.append(j)
            if st[0] == "def":
                where[id(st[1])] = j
                seen += 1
        segs = [{"lines": [], "carry_in": [], "carry_out": [], "arrays": set()} for _ in range(j + 1)]
        carried = {}                                          # name -> (value, defining segment, reading segments)
        for (st, lines), j in zip(stmts, seg_of):
            seg = segs[j]
            seg["lines"] += lines
            reads = op_args(st[1].op) if st[0] == "def" else self._reads(st)
            for v in reads:
                if v.is_input:
                    if v.ref is not None:
                        seg["arrays"].add(v.ref[0])
                elif where[id(v)] < j:
                    d = carried.setdefault(v.name, (v, where[id(v)], set()))
                    d[2].add(j)
        slots = {}
        for name, (v, d, readers) in carried.items():
            slots[name] = len(slots)
            segs[d]["carry_out"].append(name)
            for j in sorted(readers):
                segs[j]["carry_in"].append(name)
        return {"segments": segs, "slots": slots, "values": [v for v, _, _ in carried.values()]}

    def statements(self) -> list:
        """The live statements in program order, each a typed record (the comment above the statement kinds),
        temporaries named as :meth:`lines` names them: what a printer for another target reads (the tests'
        numpy printer).  A definition's value is ``v.op`` (:class:`Val`), an input's ``v.ref`` = (array,
        index)."""
        self.lines()
        return list(self._printed())

    def _printed(self):
        """The statements a printer prints, in program order: dead definitions dropped, a comment only when a
        statement follows it."""
        pending = None
        for s in self._stmts:
            if s[0] == "comment":
                pending = s
            elif s[0] != "def" or s[1].live:
                if pending is not None:
                    yield pending
                    pending = None
                yield s

    def count(self) -> int:
        """Live traced operations (statements), after folding and sharing."""
        self._mark_live()
        return sum(1 for s in self._stmts if s[0] == "def" and s[1].live)


    # ---- the lane form: the same statements for W states at once
    def lane_lines(self, vector: str = "sg_vd", width: str = "SG_W", arrays: dict | None = None,
                   rows: dict | None = None, scalars=(), batch: dict | None = None) -> list:
        """The statements of :meth:`lines` for W (``width``) states at once: every temporary is a ``vector`` (a C
        type of W doubles, ``__attribute__((vector_size))``, on which the compiler's +, -, *, / act lane by lane), so
        each lane computes the same operations in the same order as :meth:`lines`.  An input ``A[i]`` is read
        from the vector array ``A'[i]`` (``arrays`` renames A to A', e.g. ``{"u": "u_l"}``); a store
        ``out[i] = v;`` writes ``out'[i]``, or, for an array in ``rows`` (array -> row length), lane l's entry i of
        that array's row-major rows, ``out[l * row + i]`` (no vector array to copy out afterwards).  The inputs of
        the arrays in ``scalars`` are one double for every lane (a body's constants in the looped schedule); a
        value that reads only them and constants is a ``double`` too (C's vector extensions take a scalar operand
        as a vector of copies), stored into every lane of its target.  A store or ``+=`` target may index its
        array with an expression (``out[(uo + 1) * 7 + uo]``).  A pivot check (``if (!(d > 0.0)) return k;``)
        records, per lane l, the first body whose D is not positive definite in ``st[l]`` (the caller declares
        ``int st[W]`` zeroed, and ``l``) and goes on; ``return 0;`` is left to the caller.  Names are those of
        :meth:`lines`.  With ``batch`` (array -> row length: the function's own q, u, p, SG_W rows of doubles), the
        locals and routine calls of :meth:`local_arrays`, :meth:`invoke`, :meth:`invoke_if_nonzero` and
        :meth:`store_int` run one lane at a time (:meth:`_lane_invoke`: the local arrays of doubles are vector
        arrays, each call reads and writes lane l's copy of them, an integer result is one per lane).  Raises
        :class:`LaneError` for a statement it cannot print per lane (a call of a lane value, those statements
        without ``batch``, another effect)."""
        return [ln for _, lines in self._lane_statement_lines(vector, width, arrays, rows, scalars, batch)[0]
                for ln in lines]

    def _lane_statement_lines(self, vector, width, arrays, rows, scalars, batch=None) -> tuple:
        """``([(statement, its lane lines)], is_scalar)``: each statement :meth:`lane_lines` prints, in order, and
        whether a value is a double (not a vector) there."""
        arrays, rows, scalars = arrays or {}, rows or {}, set(scalars)
        local = {}          # the local arrays of doubles (vector arrays on lanes): name -> size
        ints = {}           # the integer locals: name -> size (None: one integer, one per lane on lanes)
        written = set()     # the local arrays some statement wrote so far (a call reads lane l's copy of those)
        self.lines()                                      # names the live temporaries
        loop = f"for (l = 0; l < {width}; ++l)"
        scalar = {}

        def is_scalar(v):
            if not isinstance(v, Val):
                return True
            got = scalar.get(id(v))
            if got is None:
                got = scalar[id(v)] = (v.ref is not None and v.ref[0] in scalars) if v.is_input else \
                    all(is_scalar(d) for d in v.deps)
            return got

        def entry(text):
            m = re.fullmatch(r"(\w+)\[(.+)\]", text)
            if m is None:
                raise LaneError(f"{text!r} is not an array entry")
            return f"{arrays.get(m.group(1), m.group(1))}[{m.group(2)}]"

        def ref(v):
            return (v.name if v.ref[0] in scalars else entry(v.name)) if v.is_input else v.name

        def every_lane(x):
            """A scalar (a double or a float) as what lane l of a target takes."""
            return ref(x) if isinstance(x, Val) else _const(x)

        res, depth = [], 0
        for s in self._printed():
            out = _Indented("    " * depth)
            res.append((s, out))
            kind = s[0]
            if kind in _FRAMING:
                depth = _framing(s, out, depth, arrays)
            elif kind == "def":
                if is_scalar(s[1]):
                    out.append(f"const double {s[1].name} = {c_expr(s[1].op, ref)};")
                    continue
                if s[1].op[0] == "call":
                    raise LaneError(f"call {s[1].op[1]!r}")
                out.append(f"const {vector} {s[1].name} = {c_expr(s[1].op, ref)};")
            elif kind in ("locals", "invoke", "invoke_if", "store_int") and batch is not None:
                out.extend(self._lane_invoke(s, vector, width, arrays, rows, batch, local, ints, written, ref,
                                             is_scalar))
            elif kind in ("store", "add"):                # a scalar one lane by lane
                tgt, value = s[1], s[2]
                m = re.fullmatch(r"(\w+)\[(.+)\]", tgt)
                if m:
                    written.add(m.group(1))
                op = "=" if kind == "store" else "+="
                if m and m.group(1) in rows:
                    lane = every_lane(value) if is_scalar(value) else f"{ref(value)}[l]"
                    out.append(f"{loop} {m.group(1)}[(long)l * {rows[m.group(1)]} + {m.group(2)}] {op} {lane};")
                elif not is_scalar(value):
                    out.append(f"{entry(tgt)} {op} {ref(value)};")
                else:
                    out.append(f"{loop} {entry(tgt)}[l] {op} {every_lane(value)};")
            elif kind == "return":
                if s[1] != 0:
                    raise LaneError(f"return {s[1]!r}")
            elif kind == "check":
                lane = ref(s[1]) if is_scalar(s[1]) else f"{ref(s[1])}[l]"
                out.append(f"{loop} if (!st[l] && !({lane} > 0.0)) st[l] = {s[2]};  /* {s[3]} */")
            elif kind == "fill":
                arr, n = s[1], s[2]
                written.add(arr)
                if arr in rows:
                    out.append(f"{{ int i; {loop} for (i = 0; i < {n}; ++i) {arr}[(long)l * {rows[arr]} + i] = 0.0; }}"
                               f"  /* {s[3]} */")
                else:
                    out.append(f"{{ int i; for (i = 0; i < {n}; ++i) {loop} {arrays.get(arr, arr)}[i][l] = 0.0; }}"
                               f"  /* {s[3]} */")
            else:
                raise LaneError(f"statement {s!r} has no lane form")
        return res, is_scalar

    @staticmethod
    def _lane_invoke(s, vector, width, arrays, rows, batch, local, ints, written, ref, is_scalar) -> list:
        """The lane lines of a ("locals" | "invoke" | "invoke_if" | "store_int") statement, one lane at a time: a local
        array of doubles is a ``vector`` array; a call copies lane l of each local array it takes (those written
        before) into a double array ``<name>_1``, calls the routine with those, the function's rows of ``batch``'s
        arrays (``q + (long)l * nq``) and its other arguments as :meth:`lines` prints them, and copies the arrays
        back into lane l; an integer result is ``<name>[l]``, an integer array scratch shared by the lanes."""
        loop = f"for (l = 0; l < {width}; ++l)"
        kind = s[0]
        if kind == "locals":
            local.update(s[1])
            ints.update(s[2])
            decl = ([f"{vector} {', '.join(f'{a}[{n}]' for a, n in s[1])};"] if s[1] else []) + \
                ([f"int {', '.join(f'{a}[{width}]' if n is None else f'{a}[{n}]' for a, n in s[2])};"] if s[2] else [])
            return ["  ".join(decl + ([f"/* {s[3]} */"] if s[3] is not None else []))]
        if kind == "store_int":
            m = re.fullmatch(r"(\w+)\[(.+)\]", s[1])
            if m is None or ints.get(s[2], 0) is not None:
                raise LaneError(f"store_int {s!r}")
            arr, i = m.group(1), m.group(2)
            target = f"{arr}[(long)l * {rows[arr]} + {i}]" if arr in rows else f"{arrays.get(arr, arr)}[{i}][l]"
            return [f"{loop} {target} = (double){s[2]}[l];"]
        call, test, fill = (s, None, None) if kind == "invoke" else (s[2], s[1], s[3])
        _, function, args, result = call

        def pointer(name, offset=None):
            if name in local:
                text = f"{name}_1"
            elif name in batch:
                text = f"{name} + (long)l * {batch[name]}"
            else:
                raise LaneError(f"argument {name!r} of {function!r} has no lane form")
            return text if offset in (None, 0) else f"{text} + {offset}"
        texts, took = [], []
        for a in args:
            if isinstance(a, Ptr):
                texts.append(pointer(a.array, a.offset))
                took.append(a.array)
            elif isinstance(a, str) and (a in local or a in batch):
                texts.append(pointer(a))
                took.append(a)
            elif isinstance(a, str) and a in ints and ints[a] is None:
                texts.append(f"{a}[l]")
            elif isinstance(a, str) and a in ints:        # an integer array: one call's scratch, shared by the lanes
                if a in written:
                    raise LaneError(f"integer array {a!r} passed to a second call ({function!r}): its lanes would mix")
                written.add(a)
                texts.append(a)
            elif a is None:
                texts.append("0")
            elif isinstance(a, float):
                texts.append(_const(a))
            else:
                texts.append(str(a))
        copies = [a for a in dict.fromkeys(took) if a in local]
        body = [f"double {', '.join(f'{a}_1[{local[a]}]' for a in copies)};"] if copies else []
        body += [f"for (i_ = 0; i_ < {local[a]}; ++i_) {a}_1[i_] = {a}[i_][l];" for a in copies if a in written]
        text = f"{function}({', '.join(texts)});"
        body.append(text if result is None else f"{result}[l] = {text}")
        body += [f"for (i_ = 0; i_ < {local[a]}; ++i_) {a}[i_][l] = {a}_1[i_];" for a in copies]
        written.update(copies)
        if test is not None:                # invoke_if_nonzero: the call where a value is not zero in lane l
            cond = " || ".join(f"{ref(v) if is_scalar(v) else f'{ref(v)}[l]'} != 0.0" for v in test)
            arr, n = fill[1], fill[2]
            written.add(arr)
            zero = f"for (i_ = 0; i_ < {n}; ++i_) {arr}[i_][l] = 0.0;" if arr in local else None
            if zero is None:
                raise LaneError(f"the zero fill of {function!r}'s {arr!r} has no lane form")
            body = [f"if ({cond}) {{"] + ["    " + x for x in body] + ["} else {", f"    {zero}", "}"]
        counter = ["    int i_;"] if any("i_" in x for x in body) else []
        return [f"{loop} {{  /* {function} one lane at a time */", *counter, *["    " + x for x in body], "}"]

    def lane_segments(self, k: int, vector: str = "sg_vd", width: str = "SG_W", arrays: dict | None = None,
                      rows: dict | None = None, scalars=()) -> dict | None:
        """:meth:`segments` of :meth:`lane_lines` (the same arguments): the segments' lines are lane statements, and
        ``scalar`` names the carried values that are doubles (the others are vectors)."""
        if k < 2:
            return None
        stmts, is_scalar = self._lane_statement_lines(vector, width, arrays, rows, scalars)
        cut = self._cut(stmts, k)
        if cut is not None:
            cut["scalar"] = {v.name for v in cut.pop("values") if is_scalar(v)}
        return cut

    # ---- the split form: scalar values once, lane values (a vector of directions) per block
    def split_lines(self, lane_arrays: dict, vector: str = "sg_dv", width: str = "SG_DW", rows: dict | None = None,
                    vectors=(), zero: str = "sg_dv_zero", states: str | None = None, arrays: dict | None = None):
        """The statements of :meth:`lines` in parts, for a function whose inputs in ``lane_arrays`` are vectors
        (``vector``, ``width`` lanes) and the rest scalars (symgen.ir.dual: values and their tangents).
        ``lane_arrays``: {array: group}; a value is a lane value of group g when it reads an array of g (a value
        that reads two groups is an error), and a store belongs to its row array's group (``rows``' arrays are
        keys of ``lane_arrays`` too).  Returns ``(scalar, {group: lane statements})``: the scalar statements
        (values, pivot checks), printed once, then each group's lane statements (its tangents and stores),
        printed once per block of that group's directions; a lane statement may read scalars (C's vector
        extensions take a scalar operand as a vector of copies).  A store to an array in ``rows`` writes lane
        l's row: ``out[l * row + i]``; a store to an array in ``vectors`` writes the vector (a constant c as
        ``zero + c``, ``zero`` naming a vector of zeros).  ``return`` statements are left to the caller.

        ``states``: the scalars are vectors of that type too, one *state* per lane (the lane-batch form of the
        derivatives: values of SG_W states at once, then each direction's tangents for those states; every
        temporary, scalar or lane, is then the same vector type): inputs are read from the vector arrays that
        ``arrays`` renames them to (``{"q": "q_l"}``), as :meth:`lane_lines` does, and a pivot check records the
        first failing body per state in ``st[l]`` and goes on.  Raises :class:`LaneError` for a statement that has
        no place in any part, or a store or check in the wrong one."""
        rows, arrays = rows or {}, arrays or {}
        self.lines()                                      # names the live temporaries
        group = {}

        def group_of(v):
            """v's group, or None for a scalar."""
            if not isinstance(v, Val):
                return None
            if id(v) not in group:
                if v.is_input:
                    got = lane_arrays.get(v.array)
                else:
                    got = None
                    for d in v.deps:
                        g = group_of(d)
                        if g is not None and got is not None and g != got:
                            raise LaneError(f"{v.name} reads the lanes of two groups ({got!r}, {g!r})")
                        got = g if g is not None else got
                group[id(v)] = got
            return group[id(v)]

        def ref(p):
            return (_renamed_entry(p.name, arrays) or p.name) if p.is_input and arrays else p.name

        def value(x):
            return ref(x) if isinstance(x, Val) else _const(x)

        scalar, lanes, pending = [], {}, None
        scalar_type = states or "double"
        loop = f"for (l = 0; l < {width}; ++l)"
        for s in self._printed():
            kind = s[0]
            if kind == "comment":
                pending = f"/* {s[1]} */"
                continue
            if kind == "def":
                g = group_of(s[1])
                part = scalar if g is None else lanes.setdefault(g, [])
                line = f"const {scalar_type if g is None else vector} {s[1].name} = {c_expr(s[1].op, ref)};"
            elif kind == "store":
                m = re.fullmatch(r"(\w+)\[(\d+)\]", s[1])
                if not (m and (m.group(1) in rows or m.group(1) in vectors)):
                    raise LaneError(f"store to {s[1]!r}: not a row or vector array")
                g = lane_arrays[m.group(1)]
                if group_of(s[2]) not in (None, g):
                    raise LaneError(f"store to {s[1]!r} of another group's value")
                part = lanes.setdefault(g, [])
                if m.group(1) in vectors:
                    v = ref(s[2]) if group_of(s[2]) is not None or (states and isinstance(s[2], Val)) \
                        else f"{zero} + {value(s[2])}"
                    line = f"{s[1]} = {v};"
                else:
                    v = f"{s[2].name}[l]" if group_of(s[2]) is not None else value(s[2])
                    line = f"{loop} {m.group(1)}[l * {rows[m.group(1)]} + {m.group(2)}] = {v};"
            elif kind == "check":
                if group_of(s[1]) is not None:
                    raise LaneError("a pivot check on a lane value")
                part = scalar
                line = f"if (!({value(s[1])} > 0.0)) return {s[2]};  /* {s[3]} */" if not states else \
                    f"{loop} if (!st[l] && !({value(s[1])}[l] > 0.0)) st[l] = {s[2]};  /* {s[3]} */"
            elif kind == "return":
                continue
            else:
                raise LaneError(f"statement {s!r} has no split form")
            if pending is not None:
                part.append(pending)
                pending = None
            part.append(line)
        return scalar, lanes

    def live_inputs(self) -> list:
        """The C text of the inputs the live code reads (``X3[5]``, ``u[2]``), in the order they were made."""
        self._mark_live()
        return [name for name, v in self._inputs.items() if v.live]


#: the statements both printings print alike: a comment, and the optional-output block's opening and end
_FRAMING = frozenset(("comment", "if_array", "end_if"))


def _framing(s, out, depth: int, arrays: dict) -> int:
    """Print a :data:`_FRAMING` statement into ``out`` (the block's array renamed by ``arrays``, as the lane form
    renames it); returns the block depth after it."""
    if s[0] == "comment":
        out.append(f"/* {s[1]} */")
    elif s[0] == "if_array":
        out.append(f"if ({arrays.get(s[1], s[1])}) {{" + (f"  /* {s[2]} */" if s[2] else ""))
        return depth + 1
    else:
        out.prefix = "    " * (depth - 1)
        out.append("}")
        return depth - 1
    return depth


class _Indented(list):
    """A statement's printed lines, each with the indentation of the block (:meth:`Tape.begin_if_array`) it is in."""

    def __init__(self, prefix: str = ""):
        super().__init__()
        self.prefix = prefix

    def append(self, line: str) -> None:
        super().append(self.prefix + line)


def _renamed_entry(text: str, arrays: dict) -> str | None:
    """An input's array entry ``A[i]`` with A renamed by ``arrays`` (``{"q": "q_l"}``), or None for another text."""
    m = re.fullmatch(r"(\w+)\[(\d+)\]", text)
    return f"{arrays.get(m.group(1), m.group(1))}[{m.group(2)}]" if m else None


def _invoke_text(s) -> str:
    """C of an ("invoke", function, args, result) statement."""
    def arg(a):
        if a is None:
            return "0"
        if isinstance(a, Ptr):
            return f"{a.array} + {a.offset}"
        if isinstance(a, float):
            return _const(a)
        return str(a)
    call = f"{s[1]}({', '.join(arg(a) for a in s[2])});"
    return call if s[3] is None else f"{s[3]} = {call}"


class LaneError(ValueError):
    """A traced statement that :meth:`Tape.lane_lines` cannot print for several states at once."""
