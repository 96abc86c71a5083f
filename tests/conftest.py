import os
import time

import pytest

TIMINGS: dict = {}


@pytest.fixture(scope="session", autouse=True)
def isolated_cache(tmp_path_factory):
    """Each test session derives into its own empty cache (so the cold timing is real)."""
    d = tmp_path_factory.mktemp("symgen-cache")
    old = os.environ.get("SYMGEN_CACHE_DIR")
    os.environ["SYMGEN_CACHE_DIR"] = str(d)
    from symgen.hinges import derive

    derive.clear_memory_cache()
    t0 = time.perf_counter()
    derive.derive_all()
    TIMINGS["derive every hinge type, cold cache"] = time.perf_counter() - t0
    yield d
    if old is None:
        os.environ.pop("SYMGEN_CACHE_DIR", None)
    else:
        os.environ["SYMGEN_CACHE_DIR"] = old


def pytest_terminal_summary(terminalreporter):
    if TIMINGS:
        terminalreporter.section("symgen timings (printed, not asserted)")
        for k, v in TIMINGS.items():
            terminalreporter.write_line(f"{k}: {v:.2f} s")
