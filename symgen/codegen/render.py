"""jinja2 environment (StrictUndefined): the only module that knows jinja2.

Templates are thin: they loop over a spec object built here and print what :mod:`symgen.codegen.emit` produced.
"""
from __future__ import annotations

import math
import re
from pathlib import Path

import jinja2

from . import emit, kernels as kernel_c
from ..ir import program as P
from .printer import c_lines
from .. import progress
from ..symbolic.spatial import _SERIES_LIMIT, _SERIES_TERMS

MAX_STUMPFF_ORDER = 20


from ..paths import cache_dir, templates_dir  # noqa: E402,F401  (templates_dir re-exported)


def environment(path: Path | None = None) -> jinja2.Environment:
    """The templates' environment: their compiled Python kept in the cache directory (``jinja/``, jinja2's
    bytecode cache, keyed by each template's name and source, written atomically), so that only the first build
    on a machine compiles them (0.4 s of a cold build)."""
    jdir = cache_dir() / "jinja"
    jdir.mkdir(parents=True, exist_ok=True)
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(path or templates_dir())),
                              undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                              trim_blocks=True, lstrip_blocks=True, autoescape=False,
                              bytecode_cache=jinja2.FileSystemBytecodeCache(str(jdir)))


def batch_program(k: kernel_c.CKernel, nq: int, nu: int) -> P.Program:
    """The body of a hinge kernel's batch, ``<kernel>_batch(n, q, u, p, out)``: the one-state kernel for states
    0..n-1, each of q, u, p it reads and out advanced by its stride (p by ``k.p_stride``; one it does not read
    passed on as given); a kernel with a status returns the first failing state i as i + 1, else 0."""
    i = P.Wide(P.Var("i"))

    def arg(name, stride, reads=True):
        return P.At(name, P.mul(i, stride)) if reads and stride else name
    call = P.Invoke(k.c_name, (arg("q", nq, "q" in k.inputs), arg("u", nu, "u" in k.inputs),
                               arg("p", k.p_stride, "p" in k.inputs), arg("out", k.out_size)),
                    check=k.returns_status, on_status=P.add("i", 1))
    return P.Program([P.Loop("i", 0, P.Var("n"), [call]), *([P.Return(0)] if k.returns_status else [])])


#: helpers that need others printed before them
HELPER_NEEDS = {"sincos_n": ("sincos",)}


def helper_files(names, template_path: Path | None = None) -> list:
    """The template files of C helpers, in print order: ``helpers/<name>.c`` (plain C) or, where the helper is
    printed with model numbers, ``helpers/<name>.c.jinja``; a helper's needs come first, each once."""
    tdir = Path(template_path) if template_path else templates_dir()
    order = []
    for name in names:
        for n in (*HELPER_NEEDS.get(name, ()), name):
            if n not in order:
                order.append(n)
    return [f"helpers/{n}.c" if (tdir / "helpers" / f"{n}.c").exists() else f"helpers/{n}.c.jinja"
            for n in order]


def hinge_spec_object(h, kernels: list, slug: str) -> dict:
    """Everything the hinge templates print, as plain data."""
    helpers = sorted(set().union(*(k.helpers for k in kernels if not k.guard)))
    # helpers only the guarded (derivative) kernels call: printed under their guard, so that a module compiled
    # without those kernels has no unused helper
    guarded = sorted(set().union(*(k.helpers for k in kernels if k.guard)) - set(helpers))
    ks = []
    for k in kernels:
        shape = "x".join(str(d) for d in k.out_shape)
        ks.append({"name": k.name, "c_name": k.c_name, "ret": "int" if k.returns_status else "void",
                   "doc": k.doc, "lines": k.lines, "casts": kernel_c.void_unused(("q", "u", "p"), k.lines), "flops": k.flops, "shape_text": shape,
                   "batch_lines": c_lines(batch_program(k, h.nq, h.nu)), "guard": k.guard})
    return {
        "banner": {"title": f"symgen hinge kernels: {slug}", **kernel_c.banner_info(h)},
        "guard": f"SG_{slug.upper()}_H",
        "header_name": f"{slug}.h",
        "kernels": ks,
        "helpers": helpers,
        "guarded_helpers": guarded,
        "inv_fact": [repr(1.0 / math.factorial(n)) for n in range(MAX_STUMPFF_ORDER + 2 * _SERIES_TERMS + 2)],
        "series_terms": _SERIES_TERMS,
        "series_limit": repr(float(_SERIES_LIMIT)),
        "max_order": MAX_STUMPFF_ORDER,
    }


def render_hinge(h, slug: str | None = None, kernels: list | None = None, template_path: Path | None = None):
    """(header text, source text, kernels) of one hinge spec."""
    slug = slug or kernel_c.spec_slug(h)
    kernels = kernels if kernels is not None else kernel_c.emit_hinge(h, slug)
    for k in kernels:
        for line in k.lines:
            for part in line.split("sg_stumpff(")[1:]:
                if int(part.split(",")[0]) > MAX_STUMPFF_ORDER:
                    raise ValueError(f"{h.spec.label()}: Stumpff order above {MAX_STUMPFF_ORDER} in {k.name}")
    env = environment(template_path)
    spec = hinge_spec_object(h, kernels, slug)
    spec["helpers"] = helper_files(spec["helpers"], template_path)
    spec["guarded_helpers"] = [f for f in helper_files(spec["guarded_helpers"], template_path)
                               if f not in spec["helpers"]]
    with progress.step("render", f"{slug}.c"):
        return env.get_template("hinge.h.jinja").render(**spec), env.get_template("hinge.c.jinja").render(**spec), kernels


def render_model(model, layout: dict, slugs: dict, name: str, template_path: Path | None = None, loops=(),
                 form: str = "auto", derivatives: bool = False):
    """(header text, source text, parts, forms, part_opt, form reasons) of a model's translation unit; ``parts``: the
    ``SG_PART`` values that symgen's build compiles it with, in parallel, longest first (``[0]``: one unit); ``forms``:
    which form each dynamics entry point takes (``form``: see :func:`symgen.codegen.emit.emit_model`), form reasons:
    why (symgen.codegen.schedule); ``part_opt``: the parts compiled at a lower optimization level."""
    import sympy

    from .. import __version__

    with progress.step("emit", f"model {name}"):
        pieces = emit.emit_model(model, layout, slugs, name, loops, form, derivatives)
    table = [f"{k:3d} {b.name:<20} parent {b.parent:<20} hinge {b.hinge_name} ({b.hinge_type})"
             for k, b in enumerate(model.bodies)]
    spec = {"name": name, "guard": f"SG_MODEL_{name.upper()}_H", "symgen_version": __version__,
            "sympy_version": sympy.__version__, "source": Path(model.source).name if model.source else "<memory>",
            "hinge_sources": sorted({f"{s}.c" for s in slugs.values()} | {f"{d['slug']}.c" for d in loops}), "body_table": table, **pieces}
    spec["model_helpers"] = helper_files(pieces["model_helpers"], template_path)
    env = environment(template_path)
    with progress.step("render", f"{name}.c"):
        header, source = env.get_template("model.h.jinja").render(**spec), env.get_template("model.c.jinja").render(**spec)
    # the parts symgen.codegen.emit made and part 0 (the rest of the file), longest first by their lines in the file
    lines = part_sizes(source)
    size = {k: lines.get(k, 0) + pieces["part_lines"].get(k, 0) for k in {0, *pieces["made_parts"]}}
    return (header, source, sorted(size, key=lambda k: (-size[k], k)), pieces["forms"], pieces.get("part_opt", {}),
            pieces["form_reasons"])


def part_sizes(source: str) -> dict:
    """{part: lines} of a model's source: the lines inside the preprocessor blocks whose condition names
    ``SG_PART_IS(k)`` (a block naming several counts for each; the nearest such block encloses a line).  The
    build compiles the parts longest first, two at a time on two cores: Talos's forward dynamics (8,900 lines,
    6.4 s of gcc) was third in line when part 0 was weighed as the rest of the file."""
    sizes, stack = {}, []
    for line in source.splitlines():
        t = line.lstrip()
        if t.startswith("#if"):
            stack.append({int(k) for k in re.findall(r"SG_PART_IS\((\d+)\)", t)})
        elif t.startswith("#endif"):
            if stack:
                stack.pop()
        else:
            for k in next((p for p in reversed(stack) if p), ()):
                sizes[k] = sizes.get(k, 0) + 1
    return sizes
