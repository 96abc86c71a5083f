"""Build progress: per-stage times, item counts and cache hits, for whoever listens (the command line).

The pipeline stages call :func:`step` around their work (``derive`` a hinge spec, ``emit`` its kernels or a
model's recursions, ``render`` a template, ``compile`` a module) and :func:`bar` around a long loop.  With
nobody listening both cost one context-variable lookup.  A listener is a :class:`BuildReport`, installed with
:func:`listening`; stage times are *exclusive* (a ``render`` step that runs an ``emit`` step inside it is
charged only for its own time), so the stages of one build add up to its wall time.

Standard library only: the runtime may import this module.
"""
from __future__ import annotations

import contextlib
import contextvars
import time
from dataclasses import dataclass

STAGES = ("load", "derive", "emit", "render", "compile", "install")

_REPORT: contextvars.ContextVar = contextvars.ContextVar("symgen_build_report", default=None)


@dataclass
class Stage:
    seconds: float = 0.0
    items: int = 0
    hits: int = 0

    def summary(self) -> str:
        """``"3 items, 2 cache hits"``-style text (empty when the stage ran nothing)."""
        if not self.items:
            return ""
        if self.hits == self.items:
            return f"{self.items} cached" if self.items > 1 else "cached"
        return f"{self.items}, {self.hits} cached" if self.hits else f"{self.items}"


class BuildReport:
    """What one build did, stage by stage.  ``on_step(stage, label, seconds, hit)`` is called after every
    step (verbose output); ``make_bar(stage, total, label)`` returns a progress bar object with ``update(n)``
    and ``close()``, or None (no bar)."""

    def __init__(self, on_step=None, make_bar=None):
        self.stages = {s: Stage() for s in STAGES}
        self.on_step, self.make_bar = on_step, make_bar
        self._stack: list = []  # [stage, started, nested seconds]

    def record(self, stage: str, seconds: float, hit: bool = False, label: str = "") -> None:
        s = self.stages.setdefault(stage, Stage())
        s.seconds += seconds
        s.items += 1
        s.hits += bool(hit)
        if self.on_step:
            self.on_step(stage, label, seconds, hit)


class _Step:
    """Handle of a running step: ``s.hit()`` marks it a cache hit."""
    cached = False

    def hit(self, cached: bool = True) -> None:
        self.cached = bool(cached)


@contextlib.contextmanager
def step(stage: str, label: str = ""):
    """Time one unit of work of ``stage`` (exclusive of steps nested inside it)."""
    report = _REPORT.get()
    handle = _Step()
    if report is None:
        yield handle
        return
    frame = [time.perf_counter(), 0.0]
    report._stack.append(frame)
    try:
        yield handle
    finally:
        report._stack.pop()
        total = time.perf_counter() - frame[0]
        if report._stack:
            report._stack[-1][1] += total
        report.record(stage, total - frame[1], handle.cached, label)


class _NoBar:
    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


@contextlib.contextmanager
def bar(stage: str, total: int, label: str = ""):
    """A progress bar over ``total`` items of a long stage (a no-op object when nobody shows bars)."""
    report = _REPORT.get()
    b = report.make_bar(stage, total, label) if report is not None and report.make_bar and total > 1 else None
    b = b or _NoBar()
    try:
        yield b
    finally:
        b.close()


def current():
    """The listening :class:`BuildReport`, or None."""
    return _REPORT.get()


@contextlib.contextmanager
def listening(report: BuildReport):
    """Send the progress of the pipeline stages run inside this block to ``report``."""
    token = _REPORT.set(report)
    try:
        yield report
    finally:
        _REPORT.reset(token)
