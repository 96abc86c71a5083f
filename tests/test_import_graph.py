"""symgen's import graph (DESIGN.md §1: one direction; the runtime imports neither sympy nor jinja2).

Static: every module under ``symgen/`` is parsed with ``ast`` and every ``import`` / ``from ... import``
statement is an edge, wherever it is (module level, functions, methods), relative or absolute.  Rules:

* ``from pkg import name`` is an edge to the module ``pkg.name`` when that file exists, else to ``pkg``.
* Importing ``a.b.c`` also runs the packages ``a`` and ``a.b``: those are edges too, except packages that
  contain the importing module (they are already in ``sys.modules`` when it runs, so importing them does
  not run them again; counting them would make every ``from . import x`` in a package a false cycle).
* Imports under ``if TYPE_CHECKING:`` never run: they are not edges.
* ``importlib.import_module(...)`` calls are not edges.  ``symgen/__init__.py`` uses them, in its module
  ``__getattr__`` and in ``symgen.build``, to load the public names lazily (``symgen.hinge``, the build
  pipeline, ...); they run only when a user asks for such a name, never while a symgen module imports
  another.  A string is not parsed.

Dynamic: a fresh interpreter imports ``symgen.runtime``, loads a built model, exercises every room of the
runtime (model calls, ``simulate``, ``fit_q``/``fit_u``, ``f2f`` with its numerical-difference twins) and
reports whether ``sympy`` or ``jinja2`` entered ``sys.modules``.
"""
from __future__ import annotations

import ast
import re
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "symgen"
FORBIDDEN_IN_RUNTIME = ("sympy", "jinja2")


def _modules(package: Path) -> dict:
    """{dotted name: (path, is_package)} of every module under a package directory."""
    out = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts.pop()
        out[".".join(parts)] = (path, is_pkg)
    return out


def _is_type_checking(test) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _import_nodes(node):
    """Every Import / ImportFrom below ``node``, skipping ``if TYPE_CHECKING:`` bodies (their ``else`` runs)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            for sub in child.orelse:
                yield from _import_nodes_of(sub)
            continue
        yield from _import_nodes_of(child)


def _import_nodes_of(node):
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        yield node
    yield from _import_nodes(node)


def _targets(modules: dict, module: str, is_pkg: bool, node) -> list:
    """Absolute dotted names a statement imports (a module, or a package plus the names taken from it)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if node.level:
        package = module if is_pkg else module.rpartition(".")[0]
        parts = package.split(".")
        if node.level > len(parts):
            raise AssertionError(f"{module}: relative import beyond the top-level package")
        base = ".".join(parts[:len(parts) - (node.level - 1)])
        base = f"{base}.{node.module}" if node.module else base
    else:
        base = node.module
    return [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]


def _resolve(modules: dict, top: str, name: str):
    """The module of the package a dotted name refers to (itself, or its longest known prefix); None for a
    name outside the package."""
    if name != top and not name.startswith(top + "."):
        return None
    while name not in modules and "." in name:
        name = name.rpartition(".")[0]
    return name


def _ancestors(name: str) -> list:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _graph(package: Path):
    """(edges {module: {modules of the package it imports}}, external {module: {top-level names of other
    packages it imports}}, unresolved [(module, name)]: names in the package that are no module)."""
    modules = _modules(package)
    top = package.name
    edges, external, unresolved = {}, {}, []
    for module, (path, is_pkg) in modules.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        own = set(_ancestors(module)) | {module}
        deps, ext = set(), set()
        for node in _import_nodes(tree):
            for target in _targets(modules, module, is_pkg, node):
                hit = _resolve(modules, top, target)
                if hit is None:
                    ext.add(target.split(".")[0])
                    continue
                if hit != target:
                    unresolved.append((module, target))
                deps.update(m for m in [*_ancestors(hit), hit] if m not in own)
        edges[module], external[module] = deps, ext
    return edges, external, unresolved


EDGES, EXTERNAL, UNRESOLVED = _graph(PACKAGE)


def _cycles(edges) -> list:
    """Strongly connected components with more than one module, each as a sorted list (Tarjan's algorithm;
    a module never has an edge to itself, see _graph)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sorted(out)


def _a_cycle(comp, edges) -> str:
    """A shortest closed path through a strongly connected component's first module: 'a -> b -> a'."""
    inside, start = set(comp), comp[0]
    prev, frontier = {}, [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(edges[v] & inside):
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(prev[path[-1]])
                    return " -> ".join([start, *reversed(path[:-1]), start])
                if w not in prev:
                    prev[w] = v
                    nxt.append(w)
        frontier = nxt
    raise AssertionError(f"{comp} is not a cycle")


def _closure(start: list, edges) -> set:
    todo, seen = list(start), set(start)
    while todo:
        for w in edges[todo.pop()]:
            if w not in seen:
                seen.add(w)
                todo.append(w)
    return seen


# ---- the walker itself, on a package made for it
_FAKE = {
    "__init__.py": "def __getattr__(name):\n    import importlib\n    return importlib.import_module('.a', __name__)\n",
    "a.py": "from . import b\nfrom .sub import c as _c\nimport numpy\n",
    "b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import a\nelse:\n    import json\n",
    "sub/__init__.py": "from .c import x\n",
    "sub/c.py": "x = 1\ndef f():\n    from ..b import TYPE_CHECKING\n    from . import d\n    import sympy.core\n",
    "sub/d.py": "from fake.sub import c\nfrom .. import missing_name\nfrom ..nowhere import y\n",
}


def test_walker_on_a_made_up_package(tmp_path):
    for rel, text in _FAKE.items():
        (tmp_path / "fake" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "fake" / rel).write_text(text)
    edges, external, unresolved = _graph(tmp_path / "fake")
    # importlib.import_module in a function is no edge
    assert edges["fake"] == set()
    # `from . import b` is the module b; importing fake.sub.c runs fake/sub/__init__.py too
    assert edges["fake.a"] == {"fake.b", "fake.sub", "fake.sub.c"} and external["fake.a"] == {"numpy"}
    # under `if TYPE_CHECKING:` no edge; its `else:` counts
    assert edges["fake.b"] == set() and external["fake.b"] == {"typing", "json"}
    assert edges["fake.sub"] == {"fake.sub.c"}
    # imports inside a function count; `from ..b import NAME` is fake.b; `from . import d` the module d
    assert edges["fake.sub.c"] == {"fake.b", "fake.sub.d"} and external["fake.sub.c"] == {"sympy"}
    # the importer's own packages (fake, fake.sub) are no edges; `from .. import missing_name` takes a name of
    # fake (fine to the walker); `from ..nowhere import y` names no module
    assert edges["fake.sub.d"] == {"fake.sub.c"}
    assert unresolved == [("fake.sub.d", "fake.nowhere")]
    assert _cycles(edges) == [["fake.sub.c", "fake.sub.d"]]
    assert _a_cycle(["fake.sub.c", "fake.sub.d"], edges) == "fake.sub.c -> fake.sub.d -> fake.sub.c"
    assert _closure(["fake.a"], edges) == {"fake.a", "fake.b", "fake.sub", "fake.sub.c", "fake.sub.d"}


def test_every_symgen_import_names_a_module_or_a_name_of_one():
    assert not UNRESOLVED, f"imports of symgen names that are no module: {UNRESOLVED}"


def test_model_loaders_import_one_way():
    """The URDF reader and the YAML/JSON reader share symgen.model.validate; urdf does not import load."""
    assert "symgen.model.validate" in EDGES["symgen.model.urdf"]
    assert "symgen.model.load" not in EDGES["symgen.model.urdf"]
    assert {"symgen.model.urdf", "symgen.model.validate"} <= EDGES["symgen.model.load"]
    assert EDGES["symgen.model.validate"] <= {"symgen.model.spec"}


def test_runtime_rooms_import_one_way():
    """runtime.model -> binding, integrate, fit, f2f, loops; none of those imports runtime.model (they get the
    model, and through it its binding, as an argument).  The binding imports only the ABI, the foundation's
    numpy math and runtime.parameters."""
    for room in ("symgen.runtime.integrate", "symgen.runtime.fit", "symgen.runtime.f2f"):
        assert EDGES[room] <= {"symgen.numeric"}, (room, EDGES[room])
    assert EDGES["symgen.runtime.binding"] <= {"symgen.abi", "symgen.abi.layout", "symgen.numeric",
                                               "symgen.runtime.parameters"}, EDGES["symgen.runtime.binding"]
    inside = [m for m in EDGES if m.startswith("symgen.runtime.") and m != "symgen.runtime.model"]
    assert "symgen.runtime.binding" in inside and not [m for m in inside if "symgen.runtime.model" in EDGES[m]]


#: the rooms of symgen/, lowest first (ARCHITECTURE.md): a module imports only modules of its own room or of a
#: room before it.  ``symgen`` itself is the package's __init__ (``__version__``; the public names load lazily
#: through importlib, which is no edge).
LAYERS = (("symgen", "symgen.paths", "symgen.progress", "symgen.numeric",    # foundation: no sympy, no jinja2
           "symgen.diagnostics"),
          ("symgen.symbolic",),      # sympy spatial algebra
          ("symgen.hinges",),        # the hinge registry and each hinge's derived equations
          ("symgen.model",),         # model files -> Model
          ("symgen.abi",),           # the arrays C and Python exchange (ModelLayout)
          ("symgen.runtime",),       # a built model in numpy
          ("symgen.ir",),            # the tape: traced statements and their printers
          ("symgen.algorithms",),    # SOA recursions and closed chains, traced on the tape
          ("symgen.codegen",),       # kernels, the model's C, the per-kind form, templates
          ("symgen.pipeline",),      # sources -> compile -> package
          ("symgen.sweeps",),
          ("symgen.cli",),
          ("symgen.__main__",))


def _room(module: str):
    """(layer index, room) of a module: the longest room name that is it or contains it."""
    best = None
    for i, rooms in enumerate(LAYERS):
        for room in rooms:
            if (module == room or module.startswith(room + ".")) and (best is None or len(room) > len(best[1])):
                best = (i, room)
    return best


def test_every_module_has_a_room_and_imports_run_down_the_layers():
    """Every module of symgen/ belongs to one room of LAYERS, and imports only its own room or earlier rooms:
    the generator never calls back into a stage after it, and the runtime sits below everything that writes C."""
    homeless = [m for m in EDGES if m != "symgen" and _room(m)[1] == "symgen"]
    assert not homeless, f"modules in no room of LAYERS: {homeless}"
    upward = sorted((m, d) for m in EDGES for d in EDGES[m]
                    if _room(d)[1] != _room(m)[1] and _room(d)[0] >= _room(m)[0])
    assert not upward, f"imports that run up (or across) the layers: {upward}"
    # the rule can fail: the C printer importing the pipeline would be an upward arrow
    fake = dict(EDGES, **{"symgen.codegen.emit": EDGES["symgen.codegen.emit"] | {"symgen.pipeline.compile"}})
    assert any(_room(d)[0] > _room(m)[0] for m in fake for d in fake[m])


def test_no_import_cycles_among_symgen_modules():
    cycles = _cycles(EDGES)
    assert not cycles, "import cycles:\n" + "\n".join(_a_cycle(c, EDGES) for c in cycles)


BUILD_STAGES = ("symgen.pipeline.sources", "symgen.pipeline.compile", "symgen.pipeline.package")


def test_build_pipeline_imports_one_way():
    """model -> sources -> compile -> package: each stage imports only earlier ones.  The compile stage
    knows only files (no hinge, model, runtime or other stage); the sources stage does not import the
    package stage; the model readers import no build stage; only the CLI and the sweeps (which drive the
    pipeline: one build driver, the package stage's build_model and module_of_sources) import the package stage.  ``symgen.build`` reaches it through importlib.  Every
    stage may report to symgen.progress, which imports nothing of symgen."""
    assert EDGES["symgen.progress"] == set()
    assert EDGES["symgen.pipeline.compile"] <= {"symgen.paths", "symgen.progress"}, EDGES["symgen.pipeline.compile"]
    assert "symgen.pipeline.compile" in EDGES["symgen.pipeline.sources"] and "symgen.pipeline.package" not in EDGES["symgen.pipeline.sources"]
    assert {"symgen.pipeline.sources", "symgen.pipeline.compile", "symgen.model"} <= EDGES["symgen.pipeline.package"]
    for m in EDGES:
        if m == "symgen.model" or m.startswith("symgen.model."):
            assert not EDGES[m] & set(BUILD_STAGES), (m, EDGES[m] & set(BUILD_STAGES))
    assert {m for m in EDGES if "symgen.pipeline.package" in EDGES[m]} <= {"symgen.cli", "symgen.sweeps"}
    assert {m for m in EDGES if "cffi" in EXTERNAL[m]} == {"symgen.pipeline.compile"}


def test_symgen_build_is_a_plain_function():
    """``symgen.build`` is a function defined in symgen/__init__.py, not a module made callable: there is
    no module symgen.build to shadow it, and importing the stages leaves it in place."""
    import importlib
    import inspect

    import symgen

    assert "symgen.build" not in _modules(PACKAGE) and not (PACKAGE / "build").exists()
    for stage in BUILD_STAGES:
        importlib.import_module(stage)
    assert inspect.isfunction(symgen.build) and symgen.build.__module__ == "symgen"
    assert list(inspect.signature(symgen.build).parameters) == ["path", "floating_base", "out", "progress",
                                                                 "options"]
    assert "armature=" in symgen.build.__doc__ and "lock=" in symgen.build.__doc__


def test_runtime_imports_neither_sympy_nor_jinja2_statically():
    runtime = [m for m in EDGES if m == "symgen.runtime" or m.startswith("symgen.runtime.")]
    reach = _closure(runtime + _ancestors("symgen.runtime"), EDGES)
    bad = {m: sorted(EXTERNAL[m] & set(FORBIDDEN_IN_RUNTIME)) for m in sorted(reach)
           if EXTERNAL[m] & set(FORBIDDEN_IN_RUNTIME)}
    assert not bad, f"symgen.runtime reaches {sorted(reach)}; these import {FORBIDDEN_IN_RUNTIME}: {bad}"
    # the runtime imports only the ABI (symgen.abi: the one ModelLayout the generator and the runtime read) and
    # the foundation's numpy math (symgen.numeric)
    assert reach <= {"symgen", "symgen.abi", "symgen.abi.layout", "symgen.numeric"} | set(runtime), \
        f"the runtime reaches symgen modules outside it: {sorted(reach)}"


# ---- dynamic: a built model in a fresh interpreter
@pytest.fixture(scope="module")
def built_model(tmp_path_factory):
    import symgen

    out = tmp_path_factory.mktemp("import-graph-model")
    mb = symgen.build(str(ROOT / "examples" / "models" / "double_pendulum.yaml"), out=out)
    return out / mb.name


_SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    import symgen.runtime
    from symgen.runtime import load_built

    mb = load_built(sys.argv[1])
    q, u = mb.neutral_q() + 0.1, np.full(mb.nu, 0.2)
    frame, hinge = mb.frame_names[-1], mb.hinge_names[0]
    mb.frame_pose(q, frame), mb.frame_poses(q), mb.jacobian(q, frame), mb.frame_velocity(q, u, frame)
    mb.mass_matrix(q), mb.forward_dynamics(q, u, np.zeros(mb.nu)), mb.inverse_dynamics(q, u, np.zeros(mb.nu))
    mb.simulate(q, u, (0.0, 0.01), 0.005)
    mb.fit_q(hinge, mb.hinge_kernels(hinge).transform(q[mb.q_slice(hinge)])), mb.fit_u(hinge, np.zeros(6))
    f = mb.f2f("newtonian", frame)
    f.rel_sp_vel(q, u), f.rel_sp_vel_num_diff(q, u), f.pose_gradient(q), f.pose_gradient_num_diff(q)
    print(json.dumps({m: m in sys.modules for m in ("sympy", "jinja2")}))
""")


def test_runtime_loads_a_built_model_without_sympy_or_jinja2(built_model):
    out = subprocess.run([sys.executable, "-c", _SCRIPT, str(built_model)], cwd=ROOT, capture_output=True,
                         text=True)
    assert out.returncode == 0, out.stderr
    loaded = json.loads(out.stdout.strip().splitlines()[-1])
    assert loaded == {"sympy": False, "jinja2": False}, f"imported by the runtime: {loaded}"


# ---- C text lives in the code-generation layer ------------------------------------------------------------

#: the modules that write C: the tape's printers, the kernel and model emitters, the per-kind form's drivers,
#: the template layer, the ABI's #defines, the C toolchain
CODEGEN = {"symgen.ir", "symgen.codegen", "symgen.abi", "symgen.pipeline.compile"}


#: the modules of the code-generation layer that print C: the printers (the tape's, symgen.ir.tape; the looped
#: programs' and records', symgen.codegen.printer; the hinge kernels' sympy -> C, symgen.codegen.kernels) and the
#: toolchain's generated include (symgen.pipeline.compile).  The rest of that layer holds none: the looped
#: programs' IR (symgen.ir.program), the cost model, the entry-point records (symgen.codegen.plan), the template
#: layer's glue (symgen.codegen.render), the model emitter (symgen.codegen.emit), the per-kind form
#: (symgen.codegen.perkind) and the forward-mode derivatives' drivers (symgen.codegen.derivatives)
PRINTERS = {"symgen.ir.tape", "symgen.codegen.printer", "symgen.codegen.kernels", "symgen.pipeline.compile"}


def _writes_c(name: str) -> bool:
    """A module of the code-generation layer: one of CODEGEN's rooms or modules, or inside one."""
    return any(name == c or name.startswith(c + ".") for c in CODEGEN)
_C_TEXT = [re.compile(p) for p in (r"\bdouble\s*\*?\s*[A-Za-z_]\w*\s*[\[=;,)]",   # a C declaration
                                    r"[\w\])]\s*;\s*(/\*.*\*/)?\s*$",                # a statement's end
                                    r"\breturn\s+[\w(]+[^.]*;",                    # a C return
                                    r"\bfor\s*\(\s*\w+\s*=", r"#include\b")]


def _strings(tree):
    """Every string constant of a module but docstrings (f-strings' literal parts included)."""
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    for n in ast.walk(tree):
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs:
            yield n.lineno, n.value


def _c_text(path: Path) -> list:
    return [(line, s) for line, s in _strings(ast.parse(path.read_text()))
            if any(p.search(part) for p in _C_TEXT for part in s.splitlines() or [s])]


def test_no_c_text_outside_the_code_generation_layer():
    """No string of a module outside the code-generation layer is C (a declaration, a statement, a return, a
    for loop, an include): the algorithms (symgen.algorithms.soa, the hinge and model layers, the runtime, ...) trace
    on the tape or compute, and the printers write C."""
    found = {name: _c_text(path) for name, (path, _) in _modules(PACKAGE).items()
             if not _writes_c(name)}
    assert not {k: v for k, v in found.items() if v}, found
    # the check finds C where there is some (so it cannot pass by matching nothing): the printer of the looped
    # programs, the hinge kernels' printer, the tape's printers (declarations, routine calls, returns)
    assert _c_text(PACKAGE / "codegen" / "printer.py") and _c_text(PACKAGE / "codegen" / "kernels.py") and _c_text(PACKAGE / "ir" / "tape.py")


def test_no_c_text_in_the_code_generation_layer_but_its_printers():
    """Inside the code-generation layer too, only the printers (PRINTERS) hold C: the looped programs
    (symgen.ir.program: loops, steps, fills and copies as records) and the cost model have none, and the printer
    of the looped programs has some (the check can fail)."""
    found = {name: _c_text(path) for name, (path, _) in _modules(PACKAGE).items()
             if _writes_c(name) and name not in PRINTERS}
    assert {"symgen.ir.program", "symgen.codegen.schedule", "symgen.codegen.derivatives",
            "symgen.codegen.perkind", "symgen.codegen.emit"} <= set(found)
    assert not {k: v for k, v in found.items() if v}, found
    assert _c_text(PACKAGE / "codegen" / "printer.py")
