"""Forward-mode derivatives of a traced algorithm: the same per-body steps run on dual numbers.

A :class:`DualTape` has the interface of :class:`symgen.ir.tape.Tape` that the algorithms use (``input``, ``dot``,
``mul``, ``add``, ``neg``, ``div``, ``call``, ``name``, ``store``, ``check_positive``, ``comment``, ``ret``), and
records on one underlying :class:`~symgen.ir.tape.Tape` both the value of every operation and its tangent
(the derivative along the directions the caller seeds): for ``x = a * b`` it records ``a * b`` and
``da * b + a * db``.  A value whose tangent is zero stays a plain traced value (or float), so constants and
everything upstream of the seeds fold as before and cost nothing twice.

The tangents read *lane* inputs (the seeds: one vector of directions per input, ``sq[i]``, ``su[i]``, ...), so
every tangent is a vector of directions while every value is one scalar; :meth:`symgen.ir.tape.Tape.split_lines`
prints the scalars once and the tangents per block of directions.  ``store(target, x)`` writes x's tangent: a
derivative function's outputs are derivatives.
"""
from __future__ import annotations

from .tape import Arithmetic, Val


class Dual(Arithmetic):
    """A traced value with a nonzero tangent: ``v`` (value), ``d`` (tangent; a lane value); ``tape``: the
    :class:`DualTape` (Python's operators act through it)."""

    __slots__ = ("tape", "v", "d")

    def __init__(self, tape, v, d):
        self.tape, self.v, self.d = tape, v, d


def _parts(x):
    """(value, tangent) of a Dual, a traced value or a float."""
    return (x.v, x.d) if isinstance(x, Dual) else (x, 0.0)


class DualTape:
    """Tape-compatible recorder of values and tangents (see the module docstring).  ``tangent_of(text, T)``:
    the tangent of the input ``text`` (``u[2]``, ``X3[5]``), a traced lane value built on ``T``, or 0.0."""

    def __init__(self, tape, tangent_of):
        self.T, self._tangent_of = tape, tangent_of
        self._inputs = {}

    def _make(self, v, d):
        return v if isinstance(d, float) and d == 0.0 else Dual(self, v, d)

    def input(self, text: str, array: str | None = None):
        x = self._inputs.get(text)
        if x is None:
            x = self._inputs[text] = self._make(self.T.input(text, array), self._tangent_of(text, self.T))
        return x

    def dot(self, pairs, init=0.0):
        pairs = list(pairs)
        vals, tans = [], []
        for a, b in pairs:
            av, ad = _parts(a)
            bv, bd = _parts(b)
            vals.append((av, bv))
            tans += [(ad, bv), (av, bd)]
        iv, idt = _parts(init)
        return self._make(self.T.dot(vals, iv), self.T.dot(tans, idt))

    def add(self, a, b):
        return self.dot([(1.0, a), (1.0, b)])

    def mul(self, a, b):
        return self.dot([(a, b)])

    def neg(self, a):
        av, ad = _parts(a)
        return self._make(self.T.neg(av), self.T.neg(ad))

    def div(self, a, b):
        av, ad = _parts(a)
        bv, bd = _parts(b)
        v = self.T.div(av, bv)
        d = self.T.div(self.T.dot([(1.0, ad), (-1.0, self.T.mul(v, bd))]), bv)  # (da - (a/b) db) / b
        return self._make(v, d)

    def call(self, fn: str, a):
        av, ad = _parts(a)
        v = self.T.call(fn, av)
        if isinstance(ad, float) and ad == 0.0:
            return v
        slope = {"sqrt": lambda: self.T.div(0.5, v), "sin": lambda: self.T.call("cos", av),
                 "cos": lambda: self.T.neg(self.T.call("sin", av)), "exp": lambda: v}
        if fn not in slope:
            raise NotImplementedError(f"no derivative of {fn}() in symgen.ir.dual")
        return Dual(self, v, self.T.mul(slope[fn](), ad))

    def name(self, value, hint: str):
        if isinstance(value, Dual):
            return Dual(self, self.T.name(value.v, hint), self.T.name(value.d, "d" + hint))
        return self.T.name(value, hint)

    def store(self, target: str, value) -> None:
        """``target`` = the tangent of ``value`` (0.0 where it has none)."""
        self.T.store(target, _parts(value)[1])

    def check_positive(self, value, status, why: str) -> None:
        self.T.check_positive(_parts(value)[0], status, why)

    def comment(self, text: str) -> None:
        self.T.comment(text)

    def ret(self, value) -> None:
        self.T.ret(value)


def tangent(x):
    """The tangent of a traced value (0.0 for a value without one, or a constant)."""
    return _parts(x)[1]


def is_traced(x) -> bool:
    """A runtime value (traced, with or without a tangent), not a constant."""
    return isinstance(x, (Val, Dual))
