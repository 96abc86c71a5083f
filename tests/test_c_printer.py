"""The C printer of looped programs (symgen.codegen.printer): what it prints means what the records say.

Oracles: Python's own parser for the arithmetic (C and Python give + - * / the same precedence and both group
left to right, so a printed expression evaluated by Python must equal the record tree evaluated node by node,
bit for bit), and the C compiler for a whole program with the constructs the forward-mode derivatives' drivers
(symgen.codegen.derivatives) are made of: nested blocks with their own locals, a loop stepping by a constant
expression, statements a tape printed placed as they are, and the parameters a body does not read cast to void.
"""
from __future__ import annotations

import random
import shutil
import subprocess

import pytest

from symgen.codegen.printer import c_lines, expr
from symgen.ir import program as P

_OPS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b, "/": lambda a, b: a / b}


def _tree(rng, depth):
    if depth == 0 or rng.random() < 0.2:
        return P.Num(rng.choice([0.1, 0.7, 1.3, 2.9, 3.7, 5.3, 11.0]) * rng.choice([1, -1]))
    return P.Bin(rng.choice("+-*/"), _tree(rng, depth - 1), _tree(rng, depth - 1))


def _value(x):
    return x.value if isinstance(x, P.Num) else _OPS[x.op](_value(x.a), _value(x.b))


def test_printed_arithmetic_groups_as_the_records_do():
    """300 random trees of + - * / (depth up to 6): the printed text, parsed by Python, computes the tree's own
    value exactly; and the printer leaves out the parentheses that C's rules make redundant."""
    rng = random.Random(7)
    checked = 0
    while checked < 300:
        t = _tree(rng, 6)
        try:
            want = _value(t)
        except ZeroDivisionError:                # a tree that divides by an exact zero: draw another
            continue
        text = expr(t)
        assert eval(text) == want, text          # same bits: the same operations in the same order
        checked += 1
    a, b, c = P.Num(1.0), P.Num(2.0), P.Num(3.0)
    assert expr(P.Bin("+", P.Bin("+", a, b), c)) == "1.0 + 2.0 + 3.0"
    assert expr(P.Bin("+", a, P.Bin("+", b, c))) == "1.0 + (2.0 + 3.0)"
    assert expr(P.Bin("+", P.Bin("*", a, b), P.Bin("*", b, c))) == "1.0 * 2.0 + 2.0 * 3.0"
    assert expr(P.Bin("*", P.Bin("-", a, b), c)) == "(1.0 - 2.0) * 3.0"
    assert expr(P.Bin("-", a, P.Bin("-", b, c))) == "1.0 - (2.0 - 3.0)"


def _program():
    """out[d] = sum over the blocks of SG_DW directions of a traced statement's values, in a nested block."""
    s, i = P.Var("s"), P.Var("i")
    return P.Program([
        P.Locals(arrays=(("acc", 1),)),
        P.Set(P.Elem("acc", 0), P.Num(0.0)),
        P.Block([
            P.Comment("a block with its own locals: " + "a long comment that the printer wraps " * 4),
            P.Locals(tables=(("dirs", [3, 1, 2, 0, 4]),), arrays=(("r", 5),)),
            P.Loop("s", 0, 5, [
                P.Traced(["r[s] = 2.0 * (double)s;  /* a traced statement */"]),
                P.Loop("i", 0, P.Var("SG_DW"), [P.If(P.Cmp(P.add(s, i), "<", 5), [
                    P.Set(P.Elem("out", P.Lookup("dirs", P.add(s, i))), P.Elem("r", s))])]),
                P.Set(P.Elem("acc", 0), P.Elem("r", s), "+="),
            ], step=P.Var("SG_DW")),
        ]),
        P.Set(P.Elem("out", 5), P.Elem("acc", 0)),
        P.Return(0)])


def test_nested_locals_steps_traced_lines_and_unused_parameters():
    lines = c_lines(_program(), unused=("q", "out"))
    text = "\n".join(lines)
    assert "(void)q;" in lines and "(void)out;" not in lines           # q is never read, out is
    assert "for (s = 0; s < 5; s += SG_DW) {" in text
    assert "r[s] = 2.0 * (double)s;  /* a traced statement */" in lines or \
        any(ln.strip() == "r[s] = 2.0 * (double)s;  /* a traced statement */" for ln in lines)
    block = lines.index("{")                                            # the nested block's locals open it
    assert lines[block + 1].strip().startswith("/* a block with its own locals")
    assert any(ln.strip().startswith("static const int dirs[5]") for ln in lines[block:])
    assert all(len(ln) <= 118 for ln in lines), max(lines, key=len)     # the long comment is wrapped


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
def test_the_printed_program_compiles_strictly_and_computes_what_it_says(tmp_path):
    """cc -std=c99 -Wall -Wextra -Werror -pedantic accepts it, and with SG_DW 2 and 3 it computes what the records
    say (worked by hand below): the loop steps by the macro's value."""
    body = "\n    ".join(c_lines(_program(), unused=("q",)))
    src = tmp_path / "p.c"
    src.write_text(f"""#include <stdio.h>
static int f(const double *q, double *out)
{{
    {body}
}}
int main(void)
{{
    double out[6] = {{-1, -1, -1, -1, -1, -1}};
    int i;
    f(0, out);
    for (i = 0; i < 6; ++i) printf("%g ", out[i]);
    return 0;
}}
""")
    # by hand: r[s] = 2 s at s = 0, W, 2W, ...; out[dirs[s + i]] = r[s] for i < W; out[5] = the sum of those r[s]
    for width, expect in ((2, "4 0 4 0 8 12 "), (3, "6 0 0 0 6 6 ")):
        exe = tmp_path / f"p{width}"
        subprocess.run(["cc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", f"-DSG_DW={width}",
                        str(src), "-o", str(exe)], check=True, capture_output=True, text=True)
        assert subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout == expect
