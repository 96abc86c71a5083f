"""The printer's records (symgen.codegen.plan): a batched entry point is one CBatch, printed by one loop of the
template.  What each batch computes is checked against the one-state calls in test_model_build, test_lanes and
test_closed_chains; here: the records print the C they say, and a model's batches are exactly its records."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from symgen.codegen.plan import CArg, CBatch, CLanes

ROOT = Path(__file__).resolve().parents[1]


def test_a_batch_record_prints_its_parameters_and_per_state_call():
    b = CBatch("frame_velocity", (CArg("q", 7), CArg("u", 7), CArg("f", ctype="int"), CArg("out", 6, const=False)))
    assert b.name("m") == "sg_m_frame_velocity_batch" and b.scalar("m") == "sg_m_frame_velocity"
    assert b.ret == "void"
    assert b.params == "const double *q, const double *u, int f, double *out"
    assert b.call == "q + (long)i * 7, u + (long)i * 7, f, out + (long)i * 6"
    shared = CBatch("poses", (CArg("q", 3), CArg("u"), CArg("p"), CArg("out", 24, const=False)), status=0)
    assert shared.call == "q + (long)i * 3, u, p, out + (long)i * 24"
    fd = CBatch("forward_dynamics", (CArg("q", 2),), status=3, lanes=CLanes("fd", CArg("p", 40), 2, "return"))
    assert fd.ret == "int" and fd.lanes.kind == "fd"
    # a lane block's call: its first state's rows, a null pointer for what it does not take, the batch's own args
    assert fd.lanes.call(2, 2) == "q + (long)i * 2, u + (long)i * 2, p + (long)i * 40, out + (long)i * 2"
    fj = CLanes("fj", None, 42, after_p=("f",), u=False)
    assert fj.call(7, 7) == "q + (long)i * 7, 0, 0, f, out + (long)i * 42"
    with pytest.raises(ValueError, match="stop must be one of"):
        CLanes("fd", None, 2, "continue")


def test_generated_batches_are_the_records(tmp_path):
    """Every _batch function the model's C defines is printed from a record, with the record's signature in the
    header, and the one-state function it loops over is defined in the same file."""
    from symgen.model import load_model
    from symgen.pipeline.sources import model_sources

    files, manifest = model_sources(load_model(ROOT / "examples" / "models" / "fourbar.yaml"))
    name = manifest["name"]
    source, header = files[f"{name}.c"], files[f"{name}.h"]
    defined = re.findall(rf"^(?:int|void) (sg_{name}_\w+_batch)\(int n, ([^)]*)\)\n\{{", source, re.M)
    declared = dict(re.findall(rf"^(?:int|void) (sg_{name}_\w+_batch)\(int n, ([^)]*)\);", header, re.M))
    assert len(defined) == 23 and dict(defined) == declared          # fourbar has loops: 20 + 3 batches
    for fn, _ in defined:
        scalar = fn[:-len("_batch")]
        assert re.search(rf"^(?:static )?(?:int|void) {scalar}\(", source, re.M), scalar
