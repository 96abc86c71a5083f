"""symgen's warnings as Python warnings (the standard library only).

A build's warnings (an ignored URDF tag, an ill-conditioned hinge, ...) are kept as text in ``model.warnings``,
``mb.warnings`` and the manifest's ``"warnings"``, one string each, as before.  Each string a symgen module
writes is a :class:`Diagnostic`: a ``str`` that also carries its **category** (a subclass of
:class:`SymgenWarning`) and, for grouping, its **subject** (``("joint", "elbow")``) and **issue** (what is said
about the subject: ``"<dynamics> ignored (not modelled)"``).

:func:`emit` warns once per group (:func:`grouped`): the diagnostics of one category that say the same issue
about subjects of one kind become one Python warning naming the subjects, e.g. ``joint 'a', 'b', 'c' (3 joints):
<dynamics> ignored (not modelled)``.  The warning points at the first frame outside the ``symgen`` package (the
user's call), so ``pytest.warns(symgen.IllConditionedWarning)`` and ``warnings.simplefilter("error")`` work on
``symgen.build`` and ``symgen.load_model``.  Inside :func:`collecting` nothing is warned: the diagnostics are
handed to the caller, who reports them once (``symgen.build`` after its outputs are complete; the CLI as
``warning: ...`` lines).

Categories (filter on a base class to catch its subclasses)::

    SymgenWarning
    ├── IllConditionedWarning        a hinge whose D is singular to working precision somewhere
    │   └── SingularHingeWarning     ... everywhere (its subtree has no mass or inertia in its directions)
    ├── IgnoredElementWarning        URDF / MJCF elements, attributes and features not imported
    ├── ModelInputWarning            odd but usable input: a normalized axis, a massless link, a renamed body, ...
    │   ├── InertiaWarning           an inertia accepted though no rigid body has it, or replaced (balance_inertia)
    │   └── NonOrthogonalModesWarning   a flexible body's modes are not mass-orthogonal
    └── DefaultTransformWarning      a hinge's default_transform is out of its reach (least-squares default Q)
"""
from __future__ import annotations

import contextlib
import contextvars
import os
import re
import sys
import warnings


class SymgenWarning(UserWarning):
    """Base class of every warning symgen emits."""


class IllConditionedWarning(SymgenWarning):
    """A moving hinge whose articulated D is singular to working precision at some configuration (forward
    dynamics there answers a unit force with huge accelerations): give it armature or lock it."""


class SingularHingeWarning(IllConditionedWarning):
    """A moving hinge whose D is singular at every configuration: its outboard subtree has no mass or inertia in
    the hinge's directions, so forward dynamics cannot be solved.  The extreme case of
    :class:`IllConditionedWarning` (a filter on that catches this one too)."""


class IgnoredElementWarning(SymgenWarning):
    """Something in a URDF or MJCF file that is not imported: tags, attributes, simulator settings, features
    that are not tree dynamics."""


class ModelInputWarning(SymgenWarning):
    """Odd but usable model input, read with a change that is said: a normalized axis, a massless link, a
    renamed body or frame, a misplaced XML declaration, a locked hinge."""


class InertiaWarning(ModelInputWarning):
    """An inertia no rigid body has (negative principal moment, triangle inequality), accepted as the file says
    it, or replaced (``balance_inertia``)."""


class NonOrthogonalModesWarning(ModelInputWarning):
    """A flexible body's modes are not mass-orthogonal over its nodes: the dynamics use the full modal mass
    matrix, but the frequencies are not exactly the ones given."""


class DefaultTransformWarning(SymgenWarning):
    """A hinge's ``default_transform`` is out of the hinge's reach; its default Q is the least-squares fit."""


CATEGORIES = (SymgenWarning, IllConditionedWarning, SingularHingeWarning, IgnoredElementWarning, ModelInputWarning,
              InertiaWarning, NonOrthogonalModesWarning, DefaultTransformWarning)

#: a group names at most this many subjects (then "and N more"), unless its diagnostics ask to name them all
NAMES_SHOWN = 12

_PLURAL = {"body": "bodies"}
_SUBJECT = re.compile(r"^(link|joint|body|hinge|site|geom) '([^']*)': (.+)$", re.S)


class Diagnostic(str):
    """A warning's text with its category (a :class:`SymgenWarning` subclass) and what groups it: ``subject``
    ``(kind, name)`` or None, ``issue`` (the text a group of subjects shares), ``detail`` (this subject's own
    facts, shown after its name in a group) and ``name_all`` (a group names every subject)."""

    def __new__(cls, text, category=SymgenWarning, subject=None, issue=None, detail=None, name_all=False):
        self = super().__new__(cls, text)
        self.category, self.subject, self.issue = category, subject, issue if issue is not None else str(text)
        self.detail, self.name_all = detail, name_all
        return self

    def __reduce__(self):
        return (Diagnostic, (str(self), self.category, self.subject, self.issue, self.detail, self.name_all))


def about(kind: str, name: str, issue: str, category=SymgenWarning, detail=None, name_all=False) -> Diagnostic:
    """``"<kind> '<name>': <issue>"`` as a Diagnostic of ``category`` that groups with the same issue about other
    subjects of the same kind."""
    return Diagnostic(f"{kind} '{name}': {issue}", category, (kind, name), issue, detail, name_all)


def note(text: str, category=SymgenWarning) -> Diagnostic:
    """A diagnostic about no one subject (identical ones group: ``"<text> (6 times)"``)."""
    return Diagnostic(text, category)


def as_diagnostic(w, category=SymgenWarning) -> Diagnostic:
    """``w`` as a Diagnostic: itself if it is one, else a string of ``category`` (its subject read from a
    leading ``"<kind> '<name>': "``)."""
    if isinstance(w, Diagnostic):
        return w
    m = _SUBJECT.match(str(w))
    if m:
        return Diagnostic(str(w), category, (m.group(1), m.group(2)), m.group(3))
    return Diagnostic(str(w), category)


def tag(items, category) -> list:
    """``items`` with every plain string made a Diagnostic of ``category`` (the Diagnostics kept as they are):
    for the strings of a helper that writes plain text (symgen.model.inertia)."""
    return [as_diagnostic(w, category) for w in items]


def _plural(kind: str, n: int) -> str:
    return kind if n == 1 else _PLURAL.get(kind, kind + "s")


def grouped(items) -> list:
    """``[(category, text)]``, one per group of ``items`` (strings or Diagnostics), in the order of each group's
    first diagnostic.  A group is the diagnostics of one category with the same issue about subjects of one
    kind (or, without a subject, the same text); a group of one is its diagnostic's own text."""
    groups: dict = {}
    for w in items:
        d = as_diagnostic(w)
        key = (d.category, d.subject[0] if d.subject else None, d.issue)
        groups.setdefault(key, []).append(d)
    out = []
    for (category, kind, issue), ds in groups.items():
        if len(ds) == 1:
            out.append((category, str(ds[0])))
            continue
        if kind is None:
            out.append((category, f"{issue} ({len(ds)} times)"))
            continue
        names = list(dict.fromkeys(f"'{d.subject[1]}'" + (f" ({d.detail})" if d.detail else "") for d in ds))
        n = len(names)
        shown = names if any(d.name_all for d in ds) or n <= NAMES_SHOWN else names[:NAMES_SHOWN - 2]
        listed = ", ".join(shown) + (f" and {n - len(shown)} more" if len(shown) < n else "")
        out.append((category, f"{kind} {listed} ({n} {_plural(kind, n)}): {issue}" if n > 1
                    else f"{kind} {listed}: {issue}"))
    return out


_COLLECTOR: contextvars.ContextVar = contextvars.ContextVar("symgen_diagnostics", default=None)


@contextlib.contextmanager
def collecting():
    """Within: :func:`emit` warns nothing and appends its diagnostics to the yielded list instead (the caller
    reports them: once, when its own work is complete)."""
    found: list = []
    token = _COLLECTOR.set(found)
    try:
        yield found
    finally:
        _COLLECTOR.reset(token)


_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _user_stacklevel() -> int:
    """The stacklevel, for a ``warnings.warn`` in :func:`emit`, of the first frame outside the symgen package."""
    frame, level = sys._getframe(2), 2     # emit's caller (warn(stacklevel=1) in emit would point at emit)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level


def emit(items) -> None:
    """Warn each group of ``items`` (:func:`grouped`) as one Python warning of its category, pointing at the
    user's call; inside :func:`collecting`, hand them to its list instead."""
    items = [as_diagnostic(w) for w in items]
    sink = _COLLECTOR.get()
    if sink is not None:
        sink.extend(items)
        return
    for category, text in grouped(items):
        warnings.warn(text, category, stacklevel=_user_stacklevel())
