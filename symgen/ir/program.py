"""Looped programs as typed records: the per-kind (looped) schedule's drivers, loops over the bodies as nodes.

The straight-line schedule is one :class:`symgen.ir.tape.Tape` per entry point.  The looped schedule is a
:class:`Program`: loops over the bodies (:class:`Loop`, :class:`Ancestors`) whose bodies call a per-kind step
(:class:`Step`: the step function of the body's kind, itself a traced tape) and move data between the arrays
(:class:`Zero`, :class:`Copy`, :class:`Scatter`, :class:`Point`, :class:`Swap`), with integer index
expressions that read the model's topology tables (:class:`Lookup`, ``parent[k]``).  Like devito's
``Iteration``, a loop is a node, not text: one description of a driver is printed for one state or for W
states at once (lanes) by :mod:`symgen.codegen.printer`, and for another target by whoever reads the records
(the tests' numpy printer).  Nothing here is C.

Index expressions are ``int``, :class:`Var` (a loop variable), :class:`Lookup` (an entry of an integer table:
``Lookup("parent", Var("k"))``), :class:`Sum` and :class:`Prod`; :func:`ix` builds them from Python (``ix(6) * k
+ c``).  Arrays and tables are named by identifiers; the program's parameters and locals say which arrays are
which (:class:`Locals`)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field


def _ident(name: str) -> str:
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_]\w*", name):
        raise ValueError(f"{name!r} is not an identifier")
    return name


class IntExpr:
    """An integer index expression; ``+`` and ``*`` with ints and other expressions build :class:`Sum` and
    :class:`Prod` (zeros and ones folded)."""

    __slots__ = ()

    def __add__(self, o):
        return add(self, o)

    def __radd__(self, o):
        return add(o, self)

    def __mul__(self, o):
        return mul(self, o)

    def __rmul__(self, o):
        return mul(o, self)


@dataclass(frozen=True)
class Var(IntExpr):
    """A loop variable (or an integer parameter)."""
    name: str

    def __post_init__(self):
        _ident(self.name)


@dataclass(frozen=True)
class Lookup(IntExpr):
    """Entry ``index`` of the integer table ``table`` (the model's topology: parent, kind, u0, nuh, ...)."""
    table: str
    index: object

    def __post_init__(self):
        _ident(self.table)


@dataclass(frozen=True)
class Sum(IntExpr):
    terms: tuple


@dataclass(frozen=True)
class Prod(IntExpr):
    a: object
    b: object


def ix(x):
    """An int or an index expression as an index expression (a ``str`` is a variable)."""
    if isinstance(x, bool):
        raise TypeError("a bool is not an index")
    if isinstance(x, (int, IntExpr)):
        return x
    if isinstance(x, str):
        return Var(x)
    raise TypeError(f"{x!r} is not an index expression")


def add(*xs):
    terms, const = [], 0
    for x in map(ix, xs):
        if isinstance(x, int):
            const += x
        elif isinstance(x, Sum):
            for t in x.terms:
                if isinstance(t, int):
                    const += t
                else:
                    terms.append(t)
        else:
            terms.append(x)
    if const:
        terms.append(const)
    if not terms:
        return 0
    return terms[0] if len(terms) == 1 else Sum(tuple(terms))


def mul(a, b):
    a, b = ix(a), ix(b)
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    if a == 0 or b == 0:
        return 0
    if a == 1:
        return b
    if b == 1:
        return a
    return Prod(a, b)


# ---- statements ------------------------------------------------------------------------------------------

@dataclass
class Loop:
    """``for var in range(start, stop)`` (``down``: from stop - 1 down to start), running ``body``."""
    var: str
    start: object
    stop: object
    body: list
    down: bool = False


@dataclass
class Ancestors:
    """``var`` over the ancestors of body ``of``, nearest first: ``var = parent[of]; var >= 0; var = parent[var]``."""
    var: str
    of: object
    parent: str
    body: list


@dataclass
class Step:
    """The step function of body ``body``'s kind: ``table[kinds[body]](body, *args)``.  ``args``: identifiers
    (arrays, pointer locals) or None (a null pointer).  ``check``: the step returns a status (0, or the body's
    D not positive definite) that stops the one-state program; the lane printing's steps record it per lane."""
    table: str
    kinds: str
    body: object
    args: tuple
    check: bool = False


@dataclass
class Zero:
    """``array[offset + i] = 0`` for ``i < n``."""
    array: str
    offset: object
    n: object
    why: str | None = None


@dataclass
class Copy:
    """``dst[dst_offset + i] = src[src_offset + i]`` for ``i < n``."""
    dst: str
    dst_offset: object
    src: str
    src_offset: object
    n: object


@dataclass
class Scatter:
    """``targets[0] = targets[1] = ... = source`` where each is ``(array, index)``."""
    targets: tuple
    source: tuple


@dataclass
class Point:
    """The pointer local ``name`` = address of ``array[offset]``."""
    name: str
    array: str
    offset: object = 0


@dataclass
class Swap:
    """Exchange two pointer locals."""
    a: str
    b: str


@dataclass
class Comment:
    text: str


@dataclass
class Return:
    """The program's result (an int: 0, success)."""
    value: int = 0


@dataclass
class Locals:
    """Local arrays of the element type (``arrays``: (name, size)), pointer locals to it (``pointers``) and
    integer tables of constants (``tables``: (name, values))."""
    arrays: tuple = ()
    pointers: tuple = ()
    tables: tuple = ()
    comment: str | None = None


@dataclass
class Program:
    """A looped entry point's body: statements over the element arrays its function receives and declares."""
    body: list = field(default_factory=list)
    doc: str | None = None

    def walk(self):
        """Every statement, nested ones included, in program order."""
        stack = list(reversed(self.body))
        while stack:
            s = stack.pop()
            yield s
            if isinstance(s, (Loop, Ancestors)):
                stack.extend(reversed(s.body))

    def loop_vars(self) -> list:
        seen = []
        for s in self.walk():
            if isinstance(s, (Loop, Ancestors)) and s.var not in seen:
                seen.append(s.var)
        return seen
