"""The hinge catalogue: one page per registered hinge type, generated from the registry.

Before Sphinx reads the sources (``builder-inited``) this writes ``hinges/index.md`` and ``hinges/<TYPE>.md`` for
every name in :data:`symgen.HINGE_TYPES` (never a hand list: a type registered with ``register_hinge_type``
gets its page), from the same objects that generate the C:

* the derived sympy matrices of ``symgen.hinge(TYPE)`` (default parameters) as LaTeX (``sympy.latex``): the
  coordinate map H*_p(Q), the Jacobian of a frame at an offset l from the pnode, the pose gradient G, the
  transform X_op(Q) and the Q-dot map N(Q); a long expression is shown after common-subexpression elimination
  (``sympy.cse``), as the C computes it;
* the Q/U layout: nQ, nU, each subhinge with its axis and its coordinates' places in Q and U;
* operation counts: ``sympy.count_ops`` of each derived expression and the operations of each generated C kernel
  after CSE (the counts ``python -m symgen hinges`` prints);
* the generated C: ``symgen.pipeline.sources.hinge_sources``, the files ``python -m symgen show TYPE --c``
  prints (the hinge.c / hinge.h templates rendered).

Pages are rewritten only when their text changes, so an incremental build rereads only what moved.  The
derivations and the rendered C come from symgen's cache (``$SYMGEN_CACHE_DIR``).
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

#: above this many characters of LaTeX an expression is shown as its common subexpressions, then the matrix
CSE_ABOVE = 3000

#: (attribute, heading, symbol, what it is) in page order
SECTIONS = (
    ("coord_map", "Coordinate map", r"H^*_p(Q)",
     "maps the hinge speeds U to the pnode's spatial velocity relative to the onode, in the pnode frame "
     "(6 × nU, spatial vectors [angular; linear])"),
    ("jacobian", "Jacobian", r"J_t(Q) = \phi^T(p, t)\, H^*_p(Q)",
     "maps U to the velocity of a frame t fixed to the pnode at the offset l = (l_x, l_y, l_z) from the pnode "
     "origin, in t (``h.jacobian((R, l))``, here with R = I)"),
    ("pose_gradient", "Pose gradient", r"G(Q) = \frac{\partial [\log R;\ l]}{\partial Q}\, N(Q)",
     "the derivative of the pnode pose (rotation vector and position) along the speeds U (6 × nU)"),
    ("transform", "Transform", r"X_{op}(Q)", "the pnode pose in the onode frame (4 × 4 homogeneous transform)"),
    ("qdot_map", "Q-dot map", r"N(Q)", r"maps the speeds to the coordinate rates, $\dot Q = N(Q)\, U$ (nQ × nU)"),
)

#: the C kernels in the operation-count table, with the derived expression each one prints
C_KERNELS = (("transform", "transform"), ("coord_map", "coord_map"), ("oframe_coord_map", "oframe_coord_map"),
             ("qdot_map", "qdot_map"), ("coord_map_dot", "coord_map_dot"), ("bias", "bias"),
             ("pose_gradient", "pose_gradient"), ("ortho_complement", "ortho_complement"),
             ("sanitize", "sanitize_expr"), ("atbi", None))


def label(name: str) -> str:
    """The MyST label of a hinge type's page: ``hinge-gimbal`` (``{ref}`hinge-gimbal```)."""
    return f"hinge-{name.lower()}"


def _axis(v) -> str:
    if v is None:
        return "–"
    named = {(1.0, 0.0, 0.0): "x", (0.0, 1.0, 0.0): "y", (0.0, 0.0, 1.0): "z"}
    t = tuple(float(x) for x in v)
    return named.get(t, "(" + ", ".join(f"{x:.4g}" for x in t) + ")")


def _math(name_tex: str, M) -> str:
    """A display-math block of ``name_tex = M``; long expressions as their common subexpressions first."""
    import sympy as sp

    tex = sp.latex(M)
    if len(tex) <= CSE_ABOVE:
        return f"```{{math}}\n{name_tex} = {tex}\n```\n"
    subs, (reduced,) = sp.cse(M, symbols=sp.numbered_symbols("x"))
    rows = [f"{sp.latex(s)} &= {sp.latex(e)}" for s, e in subs]
    rows.append(f"{name_tex} &= {sp.latex(reduced)}")
    body = " \\\\\n".join(rows)
    return (f"Shown after common-subexpression elimination ({len(subs)} subexpressions $x_i$; the full expression "
            f"has {sp.count_ops(M)} operations):\n\n```{{math}}\n\\begin{{aligned}}\n{body}\n\\end{{aligned}}\n```\n")


def hinge_page(name: str) -> str:
    """The MyST text of one hinge type's page."""
    import sympy as sp

    from symgen.hinges import HINGE_TYPE_TABLE
    from symgen.hinges.derive import hinge
    from symgen.pipeline.sources import hinge_sources

    ht = HINGE_TYPE_TABLE[name]
    h = hinge(name)
    spec = h.spec
    files, manifest = hinge_sources(h)
    q = ", ".join(f"${sp.latex(s)}$" for s in h.q) or "–"
    u = ", ".join(f"${sp.latex(s)}$" for s in h.u) or "–"
    out = [f"({label(name)})=", f"# {name}", "",
           f"{ht.summary[:1].upper()}{ht.summary[1:]}.  Default parameters: `symgen.hinge(\"{name}\")` "
           f"(`{spec.label()}`); the page is generated from the hinge registry by `docs/_ext/hinge_catalogue.py`, "
           f"from the sympy objects that generate the C.", "",
           "## Q/U layout", "",
           "| nQ | nU | subhinges (onode → pnode) | Q | U |", "|---|---|---|---|---|",
           f"| {h.nq} | {h.nu} | {' → '.join(h.subhinge_types) or '–'} | {q} | {u} |", ""]
    if h.n_subhinges:
        out += ["| subhinge | type | axis | pitch | its Q in the hinge's Q | its U in the hinge's U |",
                "|---|---|---|---|---|---|"]
        for i, sub in enumerate(spec.subhinges):
            s = h.subhinge(i)
            out.append(f"| {i} | {sub.type} | {_axis(sub.axis)} | {'–' if sub.pitch is None else f'{sub.pitch:g}'} | "
                       f"{', '.join(map(str, s.q)) or '–'} | {', '.join(map(str, s.u)) or '–'} |")
        out.append("")
    if h.has_sanitize:
        out += ["The coordinates have a `sanitize` kernel (an equivalent Q: rotation vectors wrapped, quaternions "
                "renormalized).", ""]
    l = sp.Matrix(sp.symbols("l_x l_y l_z", real=True))
    for attr, heading, symbol, what in SECTIONS:
        M = h.jacobian((sp.eye(3), l)) if attr == "jacobian" else getattr(h, attr)
        out += [f"## {heading}", "", f"{what[:1].upper()}{what[1:]}:", "", _math(symbol, M)]
    out += ["## Operation counts", "",
            "`count_ops`: operations of the derived sympy expression (`sympy.count_ops`); C: operations in the "
            "generated kernel after common-subexpression elimination and trigonometric hoisting "
            "(as `python -m symgen hinges` prints).", "",
            "| kernel | count_ops | C |", "|---|---|---|"]
    kernels = manifest["kernels"]
    for kernel, attr in C_KERNELS:
        if kernel not in kernels:
            continue
        expr = getattr(h, attr) if attr else None
        ops = "–" if expr is None else str(sp.count_ops(expr))
        out.append(f"| `{kernel}` | {ops} | {kernels[kernel]['flops']} |")
    out += ["", "## Generated C", "",
            f"What `python -m symgen show {name} --c` prints: the header and the source of the hinge's C kernels "
            "(C99, `symgen/codegen/templates/hinge.*.jinja`).", ""]
    for fname in sorted(files, key=lambda f: not f.endswith(".h")):
        out += [f"```{{code-block}} c", f":caption: {fname}", "", files[fname].rstrip("\n"), "```", ""]
    return "\n".join(out)


def index_page(names) -> str:
    """The catalogue's index: a table of every hinge type and a toctree of their pages."""
    from symgen.hinges import HINGE_TYPE_TABLE

    rows = []
    for name in names:
        spec = HINGE_TYPE_TABLE[name].bind()
        rows.append(f"| {{doc}}`{name}` | {spec.nq} | {spec.nu} | {' → '.join(spec.subhinge_types) or '–'} | "
                    f"{HINGE_TYPE_TABLE[name].summary} |")
    return "\n".join([
        "(hinge-catalogue)=", "# Hinge catalogue", "",
        "One page per registered hinge type, generated from the hinge registry (`symgen.HINGE_TYPES`) by "
        "`docs/_ext/hinge_catalogue.py`: each page shows the derived sympy expressions as LaTeX, the Q/U layout, "
        "operation counts and the generated C kernel, all from the objects `python -m symgen show` prints.", "",
        "| hinge type | nQ | nU | subhinges (onode → pnode) | motion |", "|---|---|---|---|---|", *rows, "",
        "```{toctree}", ":hidden:", "", *names, "```", ""])


def _write_if_changed(path: Path, text: str) -> bool:
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return False
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)
    return True


def write_catalogue(outdir: Path) -> list:
    """Write ``index.md`` and one page per registered hinge type into ``outdir``; remove pages of types no longer
    registered.  Returns the hinge type names."""
    from symgen.hinges import HINGE_TYPES

    names = list(HINGE_TYPES)
    outdir.mkdir(parents=True, exist_ok=True)
    pages = {"index.md": index_page(names), **{f"{n}.md": hinge_page(n) for n in names}}
    for fname, text in pages.items():
        _write_if_changed(outdir / fname, text)
    for stale in outdir.glob("*.md"):
        if stale.name not in pages:
            stale.unlink()
    return names


def _on_builder_inited(app) -> None:
    from sphinx.util import logging

    names = write_catalogue(Path(app.srcdir) / "hinges")
    logging.getLogger(__name__).info(f"hinge catalogue: {len(names)} hinge types")


def setup(app):
    app.connect("builder-inited", _on_builder_inited)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
