"""The runtime's classes keep their private members to their own module.

Static, with ``ast``: the private members of every class defined under ``symgen/runtime/`` are collected
(single-underscore methods and class attributes, and the ``self._x`` / ``cls._x`` attributes they assign);
then every module of ``symgen/``, ``tests/`` and ``benchmarks/`` is parsed, and an attribute access
``x._name`` whose ``x`` is not ``self`` / ``cls`` and whose ``_name`` is such a member of a class of
*another* module is a finding.  The sibling rooms (loops, integrate, f2f, parameters, checks), the pipeline,
the sweeps, the tests and the benchmarks reach the compiled module through the binding's public API
(``mb.binding``, :class:`symgen.runtime.binding.ModelBinding`), not through the model's insides.

Types are not inferred: a name counts wherever it is used on a foreign object (a false finding would have to
be renamed, or listed in ALLOWED with a reason; none is).  ``getattr(x, "_name")`` is not seen.
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROTECTED = ROOT / "symgen" / "runtime"
SCANNED = (ROOT / "symgen", ROOT / "tests", ROOT / "benchmarks")
#: (file relative to ROOT, attribute) pairs allowed to cross; empty
ALLOWED: set = set()


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _targets(node):
    """Names bound by an assignment target (tuples unpacked)."""
    if isinstance(node, (ast.Tuple, ast.List)):
        for e in node.elts:
            yield from _targets(e)
    elif isinstance(node, ast.Name):
        yield node.id


def private_members(tree) -> set:
    """The private names a module's classes define: methods, class-level assignments, and the attributes
    assigned through ``self`` / ``cls`` anywhere in the class."""
    out = set()
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        for node in cls.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out.add(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                for t in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                    out.update(_targets(t))
        for node in ast.walk(cls):
            if (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
                    and isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                out.add(node.attr)
    return {n for n in out if _private(n)}


def foreign_accesses(protected: dict, files) -> list:
    """``[(file, line, "x._name")]``: accesses to a name of ``protected`` ({name: {files whose classes define
    it}}) on something other than self / cls, from a file that does not define it."""
    found = []
    for path in files:
        tree = ast.parse(Path(path).read_text(), filename=str(path))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Attribute) and node.attr in protected):
                continue
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                continue
            if Path(path) in protected[node.attr]:
                continue
            found.append((Path(path), node.lineno, f"{ast.unparse(node.value)}.{node.attr}"))
    return found


def protected_names(package: Path) -> dict:
    out = {}
    for path in sorted(package.rglob("*.py")):
        for name in private_members(ast.parse(path.read_text(), filename=str(path))):
            out.setdefault(name, set()).add(path)
    return out


def _files():
    return [p for d in SCANNED for p in sorted(d.rglob("*.py"))]


def test_no_module_reaches_into_a_runtime_class():
    protected = protected_names(PROTECTED)
    # the collector sees the runtime's own insides (so the check below has something to guard)
    assert {"_hinge", "_hk", "_one", "_frame_list", "_g_buf", "_calls", "_fb", "_names", "_errors"} <= set(protected)
    found = [(p.relative_to(ROOT), line, expr) for p, line, expr in foreign_accesses(protected, _files())
             if (str(p.relative_to(ROOT)), expr.rpartition(".")[2]) not in ALLOWED]
    assert not found, "private members of symgen/runtime classes used from another module:\n" + "\n".join(
        f"  {p}:{line}: {expr}" for p, line, expr in found)


# what the runtime looked like before the binding: the rooms reached into the model (planted, so the check is
# shown to fail on it)
_PLANTED = {
    "runtime/model.py": (
        "class MultibodyModel:\n"
        "    def __init__(self, module):\n"
        "        self._lib, self._ffi = module.lib, module.ffi\n"
        "        self._dummy = None\n"
        "    _shape = (3,)\n"
        "    def _states(self, q, u=None):\n"
        "        return self._buf(q)\n"
        "    def _buf(self, a):\n"
        "        return a\n"
        "    def twin(self, other):\n"
        "        return other._lib is self._lib        # another instance, same module: allowed\n"),
    "runtime/loops.py": (
        "def constraint_jacobian(mb, q):\n"
        "    single, Q, U = mb._states(q)\n"
        "    return getattr(mb._lib, 'f')(mb._buf(Q), mb._dummy, mb._shape)\n"
        "class LoopConstraint:\n"
        "    def __init__(self, mb):\n"
        "        self._mb = mb\n"
        "    def q(self):\n"
        "        return self._mb.name                  # its own member: allowed\n"),
    "sweeps.py": "def f(mb, parser):\n    return parser._actions, mb.binding.lib\n",
}


def test_the_check_finds_a_planted_reach(tmp_path):
    for rel, text in _PLANTED.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    protected = protected_names(tmp_path / "runtime")
    assert set(protected) == {"_lib", "_ffi", "_dummy", "_shape", "_states", "_buf", "_mb"}
    found = foreign_accesses(protected, sorted(tmp_path.rglob("*.py")))
    assert sorted((p.relative_to(tmp_path).as_posix(), line, expr) for p, line, expr in found) == [
        ("runtime/loops.py", 2, "mb._states"), ("runtime/loops.py", 3, "mb._buf"),
        ("runtime/loops.py", 3, "mb._dummy"), ("runtime/loops.py", 3, "mb._lib"),
        ("runtime/loops.py", 3, "mb._shape")]
