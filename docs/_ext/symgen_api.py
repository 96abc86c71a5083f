"""The API reference's helpers.

* ``symgen-exports`` directive: a list of a module's ``__all__`` (``symgen``, ``symgen.runtime``), each name linked
  to the object's documentation and followed by its docstring's first sentence; so the list follows the code.
* Re-exported spellings resolve: every object is documented once, under the module that defines it
  (``symgen.runtime.model.MultibodyModel``); a reference to another spelling of the same object
  (``symgen.MultibodyModel.forward_dynamics``, ``symgen.runtime.MultibodyModel``, ``symgen.hinge``) is resolved to
  it by importing both and comparing the objects.
* References into the internal layers (modules not in ``symgen_api_modules``: ``symgen.codegen``,
  ``symgen.pipeline``, ...) and into other libraries (numpy, sympy) are checked by importing the target: an
  existing object is printed as code, without a link; a target that does not exist stays a broken reference (a
  warning, an error under ``-W``).  A reference into a documented module must reach a documented object.
* Docstring coverage of the documented public API, measured by interrogate: after reading, every object the API
  pages document (its module in ``symgen_api_modules``) is looked up among interrogate's results for its source
  file; below ``symgen_docstring_threshold`` percent the build warns (fails under ``-W``) and names the objects
  without a docstring.  A method whose docstring is assigned in the class body (``f.__doc__ = g.__doc__``, the
  model's thin delegations) counts as documented: interrogate reads the source and does not see such an
  assignment.
"""
from __future__ import annotations

import ast
import functools
import importlib
import json
import inspect
import re
import textwrap
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import Directive
from sphinx import addnodes
from sphinx.util import logging

logger = logging.getLogger(__name__)

#: the modules the API pages document in full (automodule); references into them must resolve
API_MODULES = (
    "symgen", "symgen.hinges", "symgen.hinges.derive", "symgen.model", "symgen.runtime", "symgen.runtime.model",
    "symgen.runtime.f2f", "symgen.runtime.loops", "symgen.runtime.integrate", "symgen.runtime.fit",
    "symgen.runtime.hinge_kernels", "symgen.runtime.binding", "symgen.sweeps", "symgen.diagnostics",
)
_ABBREV = {"np": "numpy", "sp": "sympy"}
_SCALARS = (int, float, complex, str, bytes, bool, type(None), tuple)


# ---------------------------------------------------------------------------------------------- importing names
@functools.lru_cache(maxsize=None)
def _module(name: str):
    """The module ``name``, or None when it is not one (cached: most names tried are not modules)."""
    try:
        return importlib.import_module(name)
    except Exception:
        return None


def import_name(name: str):
    """The object a dotted name spells (``symgen.MultibodyModel.forward_dynamics``), or raise ImportError."""
    parts = name.split(".")
    if parts[0] in _ABBREV:
        parts[0] = _ABBREV[parts[0]]
    for i in range(len(parts), 0, -1):
        obj = _module(".".join(parts[:i]))
        if obj is None:
            continue
        try:
            for attr in parts[i:]:
                obj = inspect.getattr_static(obj, attr) if inspect.isclass(obj) else getattr(obj, attr)
        except AttributeError:
            break
        return obj
    raise ImportError(name)


def defining_module(name: str, obj) -> str:
    """The module that defines ``obj`` (reached as ``name``): ``__module__`` of a class, function or method
    (through a property's getter), else the module the name starts with."""
    target = obj
    if isinstance(target, (staticmethod, classmethod)):
        target = target.__func__
    if isinstance(target, property):
        target = target.fget
    mod = getattr(target, "__module__", None)
    if isinstance(mod, str) and not inspect.ismodule(obj):
        return mod
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        if _module(".".join(parts[:i])) is not None:
            return ".".join(parts[:i])
    return parts[0]


def _documented_index(env) -> dict:
    """id of each documented object -> its documented name (cached on the environment per build)."""
    cache = getattr(env, "_symgen_api_index", None)
    objects = env.get_domain("py").objects
    if cache is not None and cache[0] == len(objects):
        return cache[1]
    index = {}
    for fullname, entry in objects.items():
        if getattr(entry, "aliased", False):
            continue
        try:
            obj = import_name(fullname)
        except ImportError:
            continue
        if not isinstance(obj, _SCALARS):
            index.setdefault(id(obj), fullname)
    env._symgen_api_index = (len(objects), index)
    return index


def _candidates(target: str, node) -> list:
    """The absolute names a reference may mean: as written, in its class, in its module, next to its module."""
    target = target.lstrip(".~")
    mod, cls = node.get("py:module"), node.get("py:class")
    out = [target]
    if mod and cls:
        out.append(f"{mod}.{cls}.{target}")
    if mod:
        out.append(f"{mod}.{target}")
        if "." in mod:
            out.append(f"{mod.rsplit('.', 1)[0]}.{target}")
    return out


_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


@functools.lru_cache(maxsize=None)
def _self_attributes(owner: str) -> frozenset:
    """Names assigned as ``self.<name> = ...`` in the source of the class ``owner`` (empty if not a class)."""
    try:
        cls = import_name(owner)
        if not inspect.isclass(cls):
            return frozenset()
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (ImportError, TypeError, OSError, SyntaxError):
        return frozenset()
    return frozenset(n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store)
                     and isinstance(n.value, ast.Name) and n.value.id == "self")


def _instance_attribute(name: str) -> bool:
    """Whether ``name`` is ``Class.attr`` with ``self.attr = ...`` in the class's source (an instance attribute
    autodoc cannot list)."""
    owner, _, attr = name.rpartition(".")
    return bool(owner) and attr in _self_attributes(owner)


def _missing_reference(app, env, node, contnode):
    if node.get("refdomain") != "py":
        return None
    domain = env.get_domain("py")
    target = node["reftarget"]
    if not _IDENTIFIER.match(target.lstrip(".~")):
        return contnode                # an annotation autodoc could not parse ('Callable[..., X]'): code, no link
    documented = _documented_index(env)

    def resolve(name):
        return domain.resolve_xref(env, node.get("refdoc", ""), app.builder, node["reftype"], name, node, contnode)

    for name in _candidates(target, node):
        try:
            obj = import_name(name)
        except ImportError:
            if _instance_attribute(name):
                return contnode        # exists on every instance: code, no link
            continue
        if not isinstance(obj, _SCALARS) and id(obj) in documented:
            return resolve(documented[id(obj)])
        module = defining_module(name, obj)
        if not module.startswith("symgen") or module not in API_MODULES:
            return contnode            # exists, in another library or an internal layer: code, no link
        return None                    # a documented module's undocumented object: a broken reference
    # written relative to a module that does not import it (``MultibodyModel.f2f`` in f2f.py): one documented
    # object whose name ends so
    suffix = "." + target.lstrip(".~")
    matches = [n for n, e in domain.objects.items() if n.endswith(suffix) and not getattr(e, "aliased", False)]
    if len(matches) == 1:
        return resolve(matches[0])
    return None


# ---------------------------------------------------------------------------------------------- docstrings
_ABS = re.compile(r"(?<![\\|`\w])\|([^|`\s](?:[^|`\n]{0,40}?[^|`\s])?)\|(?![|_\w])")


def _plain_bars(app, what, name, obj, options, lines):
    """The docstrings write ``|r|`` for an absolute value, which reStructuredText reads as a substitution: escape
    the bars of such inline pairs (lines that are not table rows)."""
    for i, line in enumerate(lines):
        if "|" in line and not line.lstrip().startswith(("|", "+")):
            lines[i] = _ABS.sub(r"\\|\1\\|", line)


# ---------------------------------------------------------------------------------------------- exports list
def _first_sentence(obj) -> str:
    doc = inspect.getdoc(obj) or ""
    para = " ".join(doc.split("\n\n")[0].split())
    end = para.find(". ")
    return para if end < 0 else para[:end + 1]


_INLINE = re.compile(r"``(.+?)``|:[\w:]+:`~?(.+?)`|`(.+?)`")


def _inline(text: str) -> list:
    """A docstring sentence as text and code nodes: ````x````, ``:role:`x``` and ```x``` become code."""
    out, pos = [], 0
    for m in _INLINE.finditer(text):
        if m.start() > pos:
            out.append(nodes.Text(text[pos:m.start()]))
        code = next(g for g in m.groups() if g is not None)
        out.append(nodes.literal(code, code))
        pos = m.end()
    if pos < len(text):
        out.append(nodes.Text(text[pos:]))
    return out


class ExportsDirective(Directive):
    """``symgen-exports MODULE``: the names in ``MODULE.__all__``, each linked, with its first sentence."""

    required_arguments = 1

    def run(self):
        modname = self.arguments[0]
        module = importlib.import_module(modname)
        items = nodes.bullet_list()
        docname = self.state.document.settings.env.docname
        for name in module.__all__:
            obj = getattr(module, name)
            ref = addnodes.pending_xref("", refdomain="py", reftype="obj", reftarget=f"{modname}.{name}",
                                        refexplicit=False, refwarn=True, refdoc=docname)
            ref += nodes.literal(f"{modname}.{name}", f"{modname}.{name}", classes=["xref", "py", "py-obj"])
            para = nodes.paragraph("", "", ref)
            summary = _first_sentence(obj) if not isinstance(obj, _SCALARS) else f"{obj!r}"
            if summary:
                para += nodes.Text(": ")
                para += [nodes.Text(summary)] if isinstance(obj, _SCALARS) else _inline(summary)
            items += nodes.list_item("", para)
        return [items]


def _data_comment(name: str, obj) -> list:
    """The ``#:`` comment of the module-level data ``obj`` in the symgen module that assigns it, or []."""
    import sys

    from sphinx.pycode import ModuleAnalyzer

    for modname, module in sorted(sys.modules.items()):
        if not modname.startswith("symgen") or getattr(module, name, None) is not obj:
            continue
        try:
            docs = ModuleAnalyzer.for_module(modname).find_attr_docs()
        except Exception:
            continue
        if ("", name) in docs:
            return [ln for ln in docs[("", name)]]
    return []


class ModuleDataDirective(Directive):
    """``symgen-module-data MODULE``: a ``py:data`` entry for each name in ``MODULE.__all__`` that is data (not a
    class, function or module) without a ``#:`` comment in MODULE's source (automodule documents only data with
    one: ``SUBHINGE_TYPES`` is imported into ``symgen.hinges`` from the module that fills it).  Its text is the
    ``#:`` comment where the data is assigned."""

    required_arguments = 1

    def run(self):
        from docutils.statemachine import StringList
        from sphinx.pycode import ModuleAnalyzer

        modname = self.arguments[0]
        module = importlib.import_module(modname)
        commented = {name for (ns, name) in ModuleAnalyzer.for_module(modname).find_attr_docs() if ns == ""}
        lines = []
        for name in module.__all__:
            obj = getattr(module, name)
            if name in commented or inspect.isclass(obj) or inspect.isroutine(obj) or inspect.ismodule(obj):
                continue
            lines += [f".. py:data:: {name}", f"   :module: {modname}", f"   :type: {type(obj).__name__}", ""]
            lines += [f"   {ln}" for ln in _data_comment(name, obj)] + [""]
        if not lines:
            return []
        container = nodes.container()
        text = ["```{eval-rst}", *lines, "```"]
        self.state.nested_parse(StringList(text, source=f"<symgen-module-data {modname}>"), self.content_offset,
                                container)
        return container.children


# ---------------------------------------------------------------------------------------------- docstring coverage
def _doc_assigned(tree) -> set:
    """Qualified names ``Class.method`` / ``function`` whose docstring is assigned (``name.__doc__ = ...``) in the
    scope that defines them."""
    out = set()

    def visit(body, prefix):
        for stmt in body:
            if isinstance(stmt, ast.ClassDef):
                visit(stmt.body, f"{prefix}{stmt.name}.")
            elif isinstance(stmt, ast.Assign):
                for t in stmt.targets:
                    if isinstance(t, ast.Attribute) and t.attr == "__doc__" and isinstance(t.value, ast.Name):
                        out.add(prefix + t.value.id)
    visit(tree.body, "")
    return out


def _repo_relative(path: str) -> str:
    import symgen

    root = Path(symgen.__file__).resolve().parents[1]
    p = Path(path).resolve()
    return str(p.relative_to(root)) if p.is_relative_to(root) else p.name


def _qualname(node) -> str:
    """``Class.method`` of an interrogate node (its own name for a module)."""
    if node.node_type == "Module":
        return node.name
    names = []
    while node is not None and node.node_type != "Module":
        names.append(node.name)
        node = node.parent
    return ".".join(reversed(names))


def docstring_coverage(env) -> dict:
    """interrogate's verdict on every object the API pages document: ``{"total", "covered", "percent",
    "missing": [names], "raw_percent": percent without the __doc__ assignments, "files": [...]}``."""
    from interrogate import config, coverage

    wanted = {}                                   # (file, qualified name in file) -> documented name
    modules = set()
    for fullname, entry in env.get_domain("py").objects.items():
        if getattr(entry, "aliased", False) or entry.objtype not in (
                "module", "class", "exception", "function", "method", "classmethod", "staticmethod", "property"):
            continue
        try:
            obj = import_name(fullname)
        except ImportError:
            continue
        if entry.objtype == "module":
            modules.add(fullname)
            continue
        mod = defining_module(fullname, obj)
        if not mod.startswith("symgen"):
            continue
        target = obj.fget if isinstance(obj, property) else getattr(obj, "__func__", obj)
        qual = getattr(target, "__qualname__", None)
        try:
            path = str(Path(inspect.getsourcefile(importlib.import_module(mod))).resolve())
        except TypeError:
            continue
        if qual:
            wanted[(path, qual)] = fullname
    for mod in modules:
        path = str(Path(inspect.getsourcefile(importlib.import_module(mod))).resolve())
        wanted[(path, Path(path).name)] = mod
    files = sorted({p for p, _ in wanted})
    conf = config.InterrogateConfig(ignore_init_method=True, ignore_magic=True, ignore_private=True,
                                    ignore_semiprivate=True, ignore_nested_functions=True, ignore_property_setters=True,
                                    fail_under=0)
    results = coverage.InterrogateCoverage(paths=files, conf=conf).get_coverage()
    total = covered = raw = 0
    missing = []
    for fr in results.file_results:
        path = str(Path(fr.filename).resolve())
        assigned = _doc_assigned(ast.parse(Path(path).read_text(encoding="utf-8")))
        for n in fr.nodes:
            key = (path, _qualname(n))
            if key not in wanted:
                continue
            total += 1
            raw += bool(n.covered)
            if n.covered or key[1] in assigned:
                covered += 1
            else:
                missing.append(f"{wanted[key]} ({_repo_relative(path)}:{n.lineno})")
    pct = 100.0 * covered / total if total else 100.0
    return {"total": total, "covered": covered, "percent": pct, "raw_percent": 100.0 * raw / total if total else 100.0,
            "missing": sorted(missing), "files": [_repo_relative(f) for f in files]}


def _check_coverage(app, env):
    res = docstring_coverage(env)
    threshold = float(app.config.symgen_docstring_threshold)
    env.symgen_docstring_coverage = res
    out = Path(app.outdir) / "_symgen" / "docstring-coverage.json"     # for tests/test_docs.py and the curious
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({**res, "threshold": threshold}, indent=1), encoding="utf-8")
    msg = (f"docstring coverage of the documented public API (interrogate): {res['percent']:.1f}% "
           f"({res['covered']} of {res['total']}; {res['raw_percent']:.1f}% without counting "
           f"'f.__doc__ = ...' assignments), threshold {threshold:g}%")
    if res["percent"] < threshold:
        logger.warning(msg + "; without a docstring:\n  " + "\n  ".join(res["missing"]), type="symgen",
                       subtype="docstrings")
    else:
        logger.info(msg + (("; without a docstring: " + ", ".join(res["missing"])) if res["missing"] else ""))


def setup(app):
    app.add_config_value("symgen_docstring_threshold", 95, "env", types=frozenset({float, int}))
    app.add_directive("symgen-exports", ExportsDirective)
    app.add_directive("symgen-module-data", ModuleDataDirective)
    app.connect("missing-reference", _missing_reference)
    app.connect("autodoc-process-docstring", _plain_bars)
    app.connect("env-check-consistency", _check_coverage)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
