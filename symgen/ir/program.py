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
class Wide(IntExpr):
    """``x`` as a long integer: an address offset that may pass an int's range (a batch's state times its
    stride)."""
    x: object


@dataclass(frozen=True)
class Call(IntExpr):
    """The int another generated function returns (its status), called with ``args`` as :class:`Invoke`'s: a
    condition on a call's success."""
    function: str
    args: tuple

    def __post_init__(self):
        _ident(self.function)


@dataclass(frozen=True)
class Sum(IntExpr):
    """``terms[0] + terms[1] + ...`` (a constant term last)."""
    terms: tuple


@dataclass(frozen=True)
class Prod(IntExpr):
    """``a * b``."""
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
    """The sum of index expressions, constants gathered and nested sums flattened."""
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
    """The product of two index expressions, with zeros and ones folded."""
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


@dataclass(frozen=True)
class Cmp:
    """An integer comparison ``a op b`` (op one of ``<``, ``<=``, ``==``, ``!=``, ``>=``, ``>``; a condition)."""
    a: object
    op: str
    b: object

    def __post_init__(self):
        if self.op not in ("<", "<=", "==", "!=", ">=", ">"):
            raise ValueError(f"{self.op!r} is not a comparison")


@dataclass(frozen=True)
class And:
    """Every condition holds (evaluated in order, as C's ``&&``)."""
    conds: tuple


@dataclass(frozen=True)
class Or:
    """One of the conditions holds (evaluated in order, as C's ``||``)."""
    conds: tuple


@dataclass(frozen=True)
class Select(IntExpr):
    """``a`` where ``cond`` holds, else ``b`` (integers)."""
    cond: Cmp
    a: object
    b: object


# ---- double expressions: entries of the element arrays, named scalars, literals, arithmetic ------------

@dataclass(frozen=True)
class Elem:
    """Entry ``index`` of the element array (or pointer local) ``array``; ``lane``: the double in that lane of a
    vector entry (an array of :attr:`Locals.vectors`)."""
    array: str
    index: object
    lane: object = None


@dataclass(frozen=True)
class Printed:
    """An expression another printer wrote (a hinge's trigonometric argument, which sympy printed), as it is."""
    text: str


@dataclass(frozen=True)
class Doubles:
    """An argument of :class:`Invoke`: the vector array ``array`` as the doubles of its lanes, in order."""
    array: str


@dataclass(frozen=True)
class Zeros:
    """A vector of zeros (the value of a vector entry)."""


@dataclass(frozen=True)
class Scalar:
    """A named double (:class:`Def`)."""
    name: str


@dataclass(frozen=True)
class Num:
    """A double literal."""
    value: float


@dataclass(frozen=True)
class Bin:
    """``a op b`` for op one of ``+ - * /``."""
    op: str
    a: object
    b: object


@dataclass(frozen=True)
class Neg:
    """``-a``."""
    a: object


@dataclass(frozen=True)
class Fn:
    """A function of C's math library (``sqrt``) of one double."""
    name: str
    a: object


# ---- statements ------------------------------------------------------------------------------------------

@dataclass
class Loop:
    """``for var in range(start, stop, step)`` (``down``: from stop - 1 down to start), running ``body``; ``step``
    an int or an index expression of constants (``Var("SG_DW")``: a block of directions at a time)."""
    var: str
    start: object
    stop: object
    body: list
    down: bool = False
    step: object = 1


@dataclass
class Ancestors:
    """``var`` over the ancestors of ``of`` in the tree the table ``parent`` describes (-1 ends the path), nearest
    first: ``var = parent[of]; var >= 0; var = parent[var]`` (``inclusive``: from ``of`` itself)."""
    var: str
    of: object
    parent: str
    body: list
    inclusive: bool = False


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
    """``array[offset + i] = 0`` for ``i < n``.  ``doubles``: the array holds doubles in the lane printing too (the
    rows of the states' outputs, which a lane program writes directly: ``n`` counts them all)."""
    array: str
    offset: object
    n: object
    why: str | None = None
    doubles: bool = False


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
    """``targets[0] = targets[1] = ... = source`` where each is ``(array, index)``.  ``rows``: in the lane printing
    the targets are the states' rows of doubles, this long (lane l's entry i at ``l * rows + i``), the source a
    vector."""
    targets: tuple
    source: tuple
    rows: object = None


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
class Set:
    """``target op value`` for op one of ``=``, ``+=``, ``-=``, ``*=``, ``/=`` (``target`` an :class:`Elem`)."""
    target: Elem
    value: object
    op: str = "="


@dataclass
class Def:
    """A named double of the enclosing block, ``name = value`` (read as :class:`Scalar`); ``elem``: "element"
    (the printing's element type) or "double" (a double in every printing)."""
    name: str
    value: object
    elem: str = "element"


@dataclass
class Bind:
    """A pointer of the enclosing block to ``array[offset]`` that no other pointer of the block aliases
    (C's ``restrict``): the rows of a dense solve."""
    name: str
    array: str
    offset: object = 0


@dataclass
class Block:
    """A scope: its :class:`Def` and :class:`Bind` names live until its end."""
    body: list


@dataclass
class Let:
    """The integer local ``name`` = ``value``."""
    name: str
    value: object


@dataclass
class If:
    """``then`` where ``cond`` (a :class:`Cmp`) holds, else ``orelse``."""
    cond: Cmp
    then: list
    orelse: list = field(default_factory=list)


@dataclass
class Switch:
    """The statements of the case ``value`` takes: ``cases`` ((an int, statements), ...), else ``default``."""
    value: object
    cases: tuple
    default: list = field(default_factory=list)


@dataclass
class Check:
    """Stop with ``status`` (an int) unless ``value > 0`` (a pivot)."""
    value: object
    status: int
    why: str | None = None


@dataclass
class Invoke:
    """A call of another generated function for what it writes; ``args``: identifiers (arrays, pointers, integer
    locals), index expressions, :class:`At` or None (a null pointer).  ``check``: its nonzero status stops the
    program with it, plus ``status_base`` (an index expression: a lane's l (nb + 1), so that the status names the
    lane too), or with ``on_status`` (an index expression: a batch's state i + 1) where that is given."""
    function: str
    args: tuple
    check: bool = True
    status_base: object = 0
    on_status: object = None


@dataclass
class Traced:
    """Statements a tape printed (:meth:`symgen.ir.tape.Tape.lines`, ``split_lines``, the hinge kernels' calls),
    placed here as they are: the straight-line part of a looped program, whose loops and stores around it are
    this module's records."""
    lines: tuple

    def __post_init__(self):
        self.lines = tuple(self.lines)


@dataclass
class Comment:
    """A comment for the reader of the printed code."""
    text: str


@dataclass
class Return:
    """The program's result (an int, 0 for success, or an index expression: a status another function returns)."""
    value: object = 0


@dataclass
class SetInt:
    """Entry ``index`` of the integer local array ``array`` = ``value`` (an index expression; read back as
    :class:`Lookup`)."""
    array: str
    index: object
    value: object


@dataclass(frozen=True)
class At:
    """An argument of :class:`Invoke`: the address of ``array[offset]`` (``row``: of ``array[row][offset]``, in a
    table of constants' row)."""
    array: str
    offset: object
    row: object = None


@dataclass
class Spill:
    """The lanes of the vector entry ``src`` into the doubles ``array[offset]``, ``array[offset + 1]``, ... (one
    unaligned vector store)."""
    array: str
    offset: object
    src: Elem


@dataclass
class Locals:
    """Local arrays of the element type (``arrays``: (name, size), a size an int or an index expression of
    constants such as ``Var("SG_W") * n``), pointer locals to it (``pointers``), integer tables of constants
    (``tables``: (name, values)), tables of double constants (``dtables``: (name, values), doubles in the lane
    printing too) and integer arrays (``ints``: (name, size))."""
    arrays: tuple = ()
    pointers: tuple = ()
    tables: tuple = ()
    dtables: tuple = ()
    ints: tuple = ()
    comment: str | None = None
    vectors: tuple = ()      # arrays of the program's vector type (a program with directions on lanes)
    #: declare the vector of zeros (:class:`Zeros`) here: at a program's top level it is declared where the locals
    #: have vectors, in a nested block only where this says so
    zero: bool = False
    doubles: tuple = ()      # arrays of doubles in every printing (name, size)


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
            if isinstance(s, (Loop, Ancestors, Block)):
                stack.extend(reversed(s.body))
            elif isinstance(s, If):
                stack.extend(reversed(s.then + s.orelse))
            elif isinstance(s, Switch):
                stack.extend(reversed([x for _, body in s.cases for x in body] + list(s.default)))

    def loop_vars(self) -> list:
        """The integer locals the program's loops and :class:`Let` statements assign, in order."""
        seen = []
        for s in self.walk():
            v = s.var if isinstance(s, (Loop, Ancestors)) else s.name if isinstance(s, Let) else None
            if v is not None and v not in seen:
                seen.append(v)
        return seen


# ---- functions: the per-kind step functions and their tables by kind --------------------------------------

@dataclass(frozen=True)
class Param:
    """A parameter of a :class:`Function`: an int (``pointer`` False), or a pointer to ``elem``: "element" (the
    printing's element type: a double, or a vector of SG_W states on lanes), "double" (a double in every
    printing), "vector" (the printing's vector type of directions) or "int"; ``const``: read only."""
    name: str
    elem: str = "element"
    const: bool = False
    pointer: bool = True

    def __post_init__(self):
        _ident(self.name)
        if self.elem not in ("element", "double", "vector", "int"):
            raise ValueError(f"{self.elem!r} is not an element kind")


@dataclass
class View:
    """The pointer local ``name``, declared here: ``array + offset`` (``row``: ``array[row]``, a row of a table of
    constants), to ``elem`` as :class:`Param`'s, ``const`` for reading.  ``when`` (a condition) and ``other``
    (``(array, offset)``, or None: a null pointer): where ``when`` fails it points there instead."""
    name: str
    array: str
    offset: object = 0
    elem: str = "element"
    const: bool = False
    row: object = None
    when: object = None
    other: tuple | None = None

    def reads(self) -> set:
        """The identifiers it reads (its arrays; the tables of its indices are the model's)."""
        return {self.array} | ({self.other[0]} if self.other else set())


@dataclass
class Function:
    """A C function of the generated model: ``params`` (:class:`Param`), ``body`` (statements; a parameter it
    does not read is cast to void), returning ``returns`` ("int": the body ends in :class:`Return`, or "void");
    ``target``: None, "lanes" (the lane functions' instruction set) or an x86 target name ("avx512f");
    ``ints``: the integer locals its :class:`Traced` statements use (declared where they read them)."""
    name: str
    params: tuple
    body: list | None        # None: its prototype only (a function of another translation unit)
    doc: str = ""
    returns: str = "void"
    target: str | None = None
    static: bool = True
    ints: tuple = ()

    def __post_init__(self):
        _ident(self.name)


@dataclass
class FunctionTable:
    """``name[kind]``: a table of functions that all take ``params`` (the step functions of every body kind)."""
    name: str
    params: tuple
    functions: tuple
    returns: str = "void"
