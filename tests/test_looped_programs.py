"""The looped programs (symgen.ir.program: loops over the bodies and over M's sparsity as records) are target-
neutral: this file's interpreter, used only here, runs the records in Python, and what it computes equals the
compiled C's.

The program is forward dynamics' derivatives from inverse dynamics' (``dUdot = -M^-1 dRNEA``): it calls the
model's compiled ``forward_dynamics`` and ``id_derivatives`` (its Invoke records, run here through cffi), then
its solve (a program of its own, interpreted here too), which factors M = L^T L with L of M's tree sparsity
(Featherstone's LTL factorization: ancestor walks over ``lam``) and solves for the three blocks of the output
over the places where the rows are not zero.  Oracles: the same module's
``fd_derivatives`` in C, which for these straight-line models is a different algorithm (forward-mode tangents
of the traced ATBI, symgen.ir.dual), and numpy's inverse of the mass matrix for the M^-1 block.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import symgen
from symgen.ir import program as P
from symgen.model import load_model
from symgen.pipeline.sources import model_programs

ROOT = Path(__file__).resolve().parents[1]
MODELS = [("arm7.urdf", False), ("quadruped.urdf", True)]


_ARITH = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b, "/": lambda a, b: a / b}


class Interpreter:
    """Runs a :class:`symgen.ir.program.Program` on Python lists (doubles) and ints; ``arrays``: the
    parameters (name -> list or int), ``calls``: Invoke's functions by name (Python callables on those lists)."""

    def __init__(self, arrays: dict, calls: dict):
        self.env, self.calls, self.ptr = dict(arrays), calls, {}

    def index(self, x):
        x = P.ix(x)
        if isinstance(x, int):
            return x
        if isinstance(x, P.Var):
            return self.env[x.name]
        if isinstance(x, P.Lookup):
            return self.env[x.table][self.index(x.index)]
        if isinstance(x, P.Sum):
            return sum(self.index(t) for t in x.terms)
        if isinstance(x, P.Prod):
            return self.index(x.a) * self.index(x.b)
        if isinstance(x, P.Wide):
            return self.index(x.x)
        if isinstance(x, P.Select):
            return self.index(x.a) if self.cond(x.cond) else self.index(x.b)
        raise TypeError(x)

    def cond(self, c):
        a, b = self.index(c.a), self.index(c.b)
        return {"<": a < b, "<=": a <= b, "==": a == b, "!=": a != b, ">=": a >= b, ">": a > b}[c.op]

    def where(self, name, i):
        """(the list, the entry) of entry i of an array or a pointer (array, offset)."""
        if name in self.ptr:
            base, off = self.ptr[name]
            return self.env[base], off + i
        return self.env[name], i

    def value(self, x):
        if isinstance(x, P.Elem):
            arr, i = self.where(x.array, self.index(x.index))
            return arr[i]
        if isinstance(x, P.Scalar):
            return self.env[x.name]
        if isinstance(x, P.Num):
            return float(x.value)
        if isinstance(x, P.Neg):
            return -self.value(x.a)
        if isinstance(x, P.Fn):
            return getattr(math, x.name)(self.value(x.a))
        if isinstance(x, P.Bin):
            return _ARITH[x.op](self.value(x.a), self.value(x.b))
        raise TypeError(x)

    def run(self, prog: P.Program):
        try:
            self.block(prog.body)
        except _Return as r:
            return r.value
        return None

    def block(self, body):
        for s in body:
            self.stmt(s)

    def stmt(self, s):
        if isinstance(s, P.Locals):
            for name, n in s.arrays:
                self.env[name] = [0.0] * max(int(n), 1)
            for name, values in s.tables:
                self.env[name] = list(values)
            for name, n in s.ints:
                self.env[name] = [0] * max(int(n), 1)
        elif isinstance(s, P.Comment):
            pass
        elif isinstance(s, P.Loop):
            lo, hi = self.index(s.start), self.index(s.stop)
            for v in (range(hi - 1, lo - 1, -1) if s.down else range(lo, hi)):
                self.env[s.var] = v
                self.block(s.body)
        elif isinstance(s, P.Ancestors):
            v = self.index(s.of) if s.inclusive else self.env[s.parent][self.index(s.of)]
            while v >= 0:
                self.env[s.var] = v
                self.block(s.body)
                v = self.env[s.parent][v]
        elif isinstance(s, P.Block):
            self.block(s.body)
        elif isinstance(s, P.If):
            self.block(s.then if self.cond(s.cond) else s.orelse)
        elif isinstance(s, P.Let):
            self.env[s.name] = self.index(s.value)
        elif isinstance(s, P.SetInt):
            self.env[s.array][self.index(s.index)] = self.index(s.value)
        elif isinstance(s, P.Set):
            arr, i = self.where(s.target.array, self.index(s.target.index))
            v = self.value(s.value)
            arr[i] = _ARITH[s.op[0]](arr[i], v) if s.op != "=" else v
        elif isinstance(s, P.Def):
            self.env[s.name] = self.value(s.value)
        elif isinstance(s, (P.Bind, P.Point)):
            base, off = self.where(s.array, self.index(s.offset))
            self.ptr[s.name] = (next(k for k, v in self.env.items() if v is base), off)
        elif isinstance(s, P.Zero):
            for i in range(self.index(s.n)):
                arr, j = self.where(s.array, self.index(s.offset) + i)
                arr[j] = 0.0
        elif isinstance(s, P.Copy):
            for i in range(self.index(s.n)):
                src, j = self.where(s.src, self.index(s.src_offset) + i)
                dst, k = self.where(s.dst, self.index(s.dst_offset) + i)
                dst[k] = src[j]
        elif isinstance(s, P.Check):
            if not self.value(s.value) > 0.0:
                raise _Return(s.status)
        elif isinstance(s, P.Invoke):
            args = [self.env[a] if isinstance(a, str) else a for a in s.args]
            status = self.calls[s.function](*args)
            if s.check and status:
                raise _Return(status + self.index(s.status_base) if s.on_status is None else self.index(s.on_status))
        elif isinstance(s, P.Return):
            raise _Return(s.value)
        else:
            raise NotImplementedError(type(s).__name__)


class _Return(Exception):
    def __init__(self, value):
        self.value = value


def _c_call(b, fn, sizes):
    """A compiled one-state function on Python lists: the arguments copied into numpy buffers and back."""
    def call(*args):
        bufs = [np.array(a, dtype=float) if isinstance(a, list) else a for a in args]
        status = getattr(b.lib, fn)(*[b.buf(x) if isinstance(x, np.ndarray) else x for x in bufs])
        for a, x in zip(args, bufs):
            if isinstance(a, list):
                a[:] = x.tolist()
        return status
    return call


@pytest.mark.parametrize("path,floating", MODELS, ids=[m for m, _ in MODELS])
def test_the_looped_fd_derivatives_program_interpreted_equals_the_c(path, floating):
    model = load_model(ROOT / "examples" / "models" / path, floating_base=floating)
    mb = symgen.build(ROOT / "examples" / "models" / path, floating_base=floating)
    programs = model_programs(model)["looped"]
    prog, solve = programs["fd_derivatives"], programs["fd_derivatives_solve"]
    assert any(isinstance(s, P.Ancestors) for s in solve.walk()), "the factorization walks M's sparsity"
    b = mb.derivative_binding()
    nm, nu, nq = b.name, mb.nu, mb.nq
    rng = np.random.default_rng(11)
    for trial, tangent in ((0, 1), (1, 1), (2, 0)):   # the last along Q itself (nQ columns of dUdot/dQ)
        q = mb.sanitize(rng.uniform(-1.5, 1.5, nq))
        u, tau = rng.normal(size=nu), rng.normal(size=nu)
        p = np.zeros(b.layout.params.size)
        p[:3] = mb.gravity
        p[b.layout.params["tau"]:b.layout.params["tau"] + nu] = tau
        size = nu * ((nu if tangent else nq) + 2 * nu)    # dUdot/dQ (nU x nU, or nU x nQ), dUdot/dU, M^-1
        out = [0.0] * size
        calls = {f"sg_{nm}_forward_dynamics": _c_call(b, f"sg_{nm}_forward_dynamics", None),
                 f"sg_{nm}_id_derivatives": _c_call(b, f"sg_{nm}_id_derivatives", None),
                 f"sg_{nm}_fd_derivatives_solve":           # interpreted too: the LTL factorization and the solves
                 lambda tangent, out: Interpreter({"tangent": tangent, "out": out}, {}).run(solve)}
        status = Interpreter({"q": q.tolist(), "u": u.tolist(), "p": p.tolist(), "out": out, "tangent": tangent},
                             calls).run(prog)
        assert status == 0
        c_out = np.empty(size)
        assert getattr(b.lib, f"sg_{nm}_fd_derivatives")(b.buf(q), b.buf(u), b.buf(p), tangent, b.buf(c_out)) == 0
        got = np.array(out)
        rel = np.max(np.abs(got - c_out)) / max(1.0, np.max(np.abs(c_out)))
        assert rel <= 1e-10, f"interpreted LTL path and the C's FD derivatives differ by {rel:.1e}"
        Minv = got[-nu * nu:].reshape(nu, nu)
        M = mb.mass_matrix(q)
        assert np.max(np.abs(Minv - np.linalg.inv(M))) <= 1e-10 * max(1.0, np.max(np.abs(np.linalg.inv(M))))
