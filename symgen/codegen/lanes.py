"""The lane width: how many states the lane form (``templates/helpers/lanes.c.jinja``) runs per call.

Chosen for the CPU that generates the model, since the generated module is compiled and cached there:
8 doubles where it has AVX-512 (one ZMM register), 4 where it has AVX2 (one YMM register), 2 elsewhere (SSE2,
the baseline of x86-64, and NEON on AArch64: one XMM / Q register).  ``SYMGEN_LANE_WIDTH=2|4|8`` forces a width
(the tests and ``benchmarks/vs_pinocchio.py --lane-width`` compare widths on one machine).  The width is printed
into the model's C (``#define SG_W``), so it is part of the module's content hash: a model generated at another
width is another module.  At run time each batch checks that the CPU has the width's ISA
(``__builtin_cpu_supports``) and otherwise goes one state at a time; ``mb.lane_width`` says which.

Measured on arm7's batched forward dynamics (µs per state, AVX-512 machine): W = 8 with AVX-512 0.092, W = 4 with
AVX2 0.13, W = 8 compiled for AVX2 about 0.17, one state at a time 0.32.
"""
from __future__ import annotations

import functools
import os
import platform
import subprocess

#: the widths the lane form is printed for
WIDTHS = (2, 4, 8)


def _x86_flags() -> set:
    """The CPU's feature flags: /proc/cpuinfo on Linux, sysctl on macOS; empty where neither answers."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    try:
        out = subprocess.run(["sysctl", "-n", "machdep.cpu.features", "machdep.cpu.leaf7_features"],
                             capture_output=True, text=True, timeout=10).stdout
        return {w.lower().replace(".", "_") for w in out.split()}
    except (OSError, subprocess.SubprocessError):
        return set()


@functools.lru_cache(maxsize=None)
def host_lane_width() -> int:
    """The widest lane width this CPU runs: 8 (AVX-512F), 4 (AVX2), else 2."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return 2
    flags = _x86_flags()
    if "avx512f" in flags:
        return 8
    if "avx2" in flags:
        return 4
    return 2


def lane_width() -> int:
    """The lane width of the models generated now: ``$SYMGEN_LANE_WIDTH`` if set (2, 4 or 8), else
    :func:`host_lane_width`."""
    env = os.environ.get("SYMGEN_LANE_WIDTH", "").strip()
    if not env:
        return host_lane_width()
    if env not in {str(w) for w in WIDTHS}:
        raise ValueError(f"SYMGEN_LANE_WIDTH={env!r}: the lane width is 2, 4 or 8 doubles")
    return int(env)
