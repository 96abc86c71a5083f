"""symgen.sweep: many rollouts in chunks, in this process or on a Dask cluster, into a Zarr store.

The oracle is ``mb.rollout`` of all the cases in one call: every way of running a sweep (chunks here, threads,
two worker processes, a worker killed mid-chunk, an interrupted run resumed, the command line) must give
exactly its arrays, bit for bit.  The workers are subprocesses of a LocalCluster: they inherit os.environ,
so they use this session's SYMGEN_CACHE_DIR.
"""
from __future__ import annotations

import logging
import os
import sys

import numpy as np
import pytest
import yaml
import zarr
from distributed import Client, LocalCluster

import symgen
import symgen.cli
from symgen.sweeps import SweepError, load_sweep, sample_cases, sweep_summary

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = os.path.join(ROOT, "examples", "models", "double_pendulum.yaml")
DT, N_STEPS, EVERY = 1e-3, 200, 10
KEYS = ("case", "t", "q", "u", "ok", "status")


@pytest.fixture(scope="module")
def mb():
    return symgen.build(MODEL)


@pytest.fixture(scope="module")
def cases(mb):
    """60 cases: random Q, U and a constant torque per case, plus a carried 'seed' column."""
    rng = np.random.default_rng(7)
    n = 60
    return {"q0": rng.uniform(-2, 2, (n, mb.nq)), "u0": rng.standard_normal((n, mb.nu)),
            "T": 0.5 * rng.standard_normal((n, mb.nu)), "seed": np.arange(100, 100 + n)}


@pytest.fixture(scope="module")
def reference(mb, cases):
    """The oracle: one rollout call of every case, with case ids 0..n-1."""
    r = mb.rollout(cases["q0"], cases["u0"], DT, N_STEPS, T=cases["T"], every=EVERY)
    return {**r, "case": np.arange(len(cases["q0"]))}


@pytest.fixture(scope="module")
def client():
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                           silence_logs=logging.ERROR)
    c = Client(cluster)
    yield c
    c.close()
    cluster.close()


def assert_same(res, ref):
    for k in KEYS:
        assert res[k].shape == ref[k].shape, k
        assert res[k].dtype.kind == np.asarray(ref[k]).dtype.kind, k
        assert np.array_equal(res[k], ref[k], equal_nan=res[k].dtype.kind == "f"), k


def test_in_process_equals_one_rollout(mb, cases, reference):
    """Chunks of 7 (the last one short), run one after the other or on 3 threads, are one rollout of all
    cases exactly; the model given as a file, a Model or the loaded MultibodyModel; inputs carried."""
    res = symgen.sweep(MODEL, cases, DT, N_STEPS, every=EVERY, chunk_size=7)
    assert_same(res, reference)
    assert res["info"]["n_chunks"] == 9 and res["info"]["computed"] == list(range(9))
    assert np.array_equal(res["inputs"]["seed"], cases["seed"]) and np.array_equal(res["inputs"]["T"], cases["T"])
    assert_same(symgen.sweep(mb, cases, DT, N_STEPS, every=EVERY, chunk_size=11, threads=3), reference)
    model = symgen.load_model(MODEL)
    only_q = symgen.sweep(model, cases, DT, N_STEPS, every=EVERY, outputs=("q",))
    assert "u" not in only_q and np.array_equal(only_q["q"], reference["q"])
    # the same model hash however the model is given
    assert res["info"]["model_hash"] == only_q["info"]["model_hash"] == \
        symgen.sweep(mb, cases, DT, N_STEPS, every=EVERY)["info"]["model_hash"]


def test_local_cluster_reproduces_in_process_bit_for_bit(client, cases, reference, tmp_path):
    """Two worker processes, a chunk per task, into a Zarr store: the store reads back as the in-process
    sweep; layout, attributes and chunking as documented; without a store the arrays come back directly."""
    store = tmp_path / "sweep.zarr"
    res = symgen.sweep(MODEL, cases, DT, N_STEPS, every=EVERY, client=client, store=store, chunk_size=8)
    assert_same(res, reference)
    assert_same(load_sweep(store), reference)
    g = zarr.open_group(str(store), mode="r")
    attrs = dict(g.attrs)
    assert {k: attrs[k] for k in ("dt", "n_steps", "every", "method", "chunk_size", "n_cases", "symgen_version")} \
        == {"dt": DT, "n_steps": N_STEPS, "every": EVERY, "method": "rk4", "chunk_size": 8, "n_cases": 60,
            "symgen_version": symgen.__version__}
    assert attrs["model_hash"] == res["info"]["model_hash"] and len(attrs["model_hash"]) == 16
    K = N_STEPS // EVERY + 1
    assert g["q"].shape == (60, K, 2) and g["q"].chunks == (8, K, 2) and g["done"].chunks == (1,)
    assert g["done"][:].all() and g["done"].shape == (8,)
    assert np.array_equal(g["inputs"]["seed"][:], cases["seed"])
    workers = {w for w in client.run(os.getpid).values()}
    assert len(workers) == 2
    assert_same(symgen.sweep(MODEL, cases, DT, N_STEPS, every=EVERY, client=client, chunk_size=13), reference)


def test_worker_killed_mid_sweep_every_case_once(client, cases, reference, tmp_path):
    """A worker process dies (os._exit) after writing chunk 3's rows and before its done flag: the scheduler
    runs the chunk again on a live worker; every chunk is done, every case id 0..n-1 is there once, and every
    row equals the in-process result."""
    flag = str(tmp_path / "killed")

    def die_once(chunk):
        import os

        if chunk == 3 and not os.path.exists(flag):
            with open(flag, "w") as fh:
                fh.write(str(os.getpid()))
            os._exit(1)

    before = set(client.run(os.getpid).values())
    store = tmp_path / "killed.zarr"
    res = symgen.sweep(MODEL, cases, DT, N_STEPS, every=EVERY, client=client, store=store, chunk_size=6,
                       _chunk_hook=die_once)
    dead = int(open(flag).read())
    assert dead in before and dead not in set(client.run(os.getpid).values())  # it really died
    assert res["done"].all() and res["info"]["computed"] == list(range(10))
    assert sorted(res["case"].tolist()) == list(range(60)) and len(set(res["case"].tolist())) == 60
    assert_same(res, reference)
    assert_same(load_sweep(store), reference)


def test_interrupted_sweep_resumes_only_missing_chunks(client, mb, cases, reference, tmp_path):
    """A sweep stopped by an error after chunk 3's rows were written (before its done flag) leaves chunks
    0-2 done; the same sweep rerun on the store (here on the cluster) computes exactly chunks 3..9 and ends
    equal to the full result.  A store of another sweep is refused, overwrite starts over."""
    store = tmp_path / "resume.zarr"

    def stop_at_3(chunk):
        if chunk == 3:
            raise RuntimeError("stopped at chunk 3")

    with pytest.raises(RuntimeError, match="stopped at chunk 3"):
        symgen.sweep(MODEL, cases, DT, N_STEPS, every=EVERY, store=store, chunk_size=6, _chunk_hook=stop_at_3)
    half = load_sweep(store)
    assert half["done"].tolist() == [True] * 3 + [False] * 7 and not half["info"]["complete"]
    assert np.array_equal(half["q"][:18], reference["q"][:18])
    events = []
    res = symgen.sweep(MODEL, cases, DT, N_STEPS, every=EVERY, client=client, store=store, progress=events.append)
    assert res["info"]["skipped"] == [0, 1, 2] and res["info"]["computed"] == list(range(3, 10))
    assert sorted(e["chunk"] for e in events if e["event"] == "chunk") == list(range(3, 10))
    assert res["info"]["chunk_size"] == 6  # taken from the store
    assert_same(res, reference)
    again = symgen.sweep(mb, cases, DT, N_STEPS, every=EVERY, store=store)
    assert again["info"]["computed"] == [] and again["info"]["complete"]
    assert_same(again, reference)

    with pytest.raises(SweepError, match=r"holds another sweep \(dt 0.001 there, 0.002 now\)"):
        symgen.sweep(MODEL, cases, 2e-3, N_STEPS, every=EVERY, store=store)
    other = {**cases, "q0": cases["q0"] + 1e-9}
    with pytest.raises(SweepError, match="cases_hash"):
        symgen.sweep(MODEL, other, DT, N_STEPS, every=EVERY, store=store)
    with pytest.raises(SweepError, match="chunk_size 6 there, 4 now"):
        symgen.sweep(MODEL, cases, DT, N_STEPS, every=EVERY, store=store, chunk_size=4)
    fresh = symgen.sweep(MODEL, other, DT, N_STEPS, every=EVERY, store=store, overwrite=True)
    assert fresh["info"]["skipped"] == [] and fresh["info"]["cases_hash"] != res["info"]["cases_hash"]
    foreign = tmp_path / "notes"
    foreign.mkdir()
    (foreign / "keep.txt").write_text("mine")
    with pytest.raises(SweepError, match="not a Zarr store"):
        symgen.sweep(MODEL, cases, DT, N_STEPS, store=foreign, overwrite=True)
    assert (foreign / "keep.txt").read_text() == "mine"


def test_dispersion_spec(mb, tmp_path):
    """A spec samples reproducibly with default_rng(seed) (q0, then u0, then T), from a dict or a YAML file;
    the mean of q0 defaults to neutral Q; the file may set the step; bad specs say what is wrong."""
    spec = {"n": 40, "seed": 3, "q0": {"mean": [0.3, -0.2], "std": [0.1, 0.0]}, "u0": {"low": -1, "high": [1, 2]},
            "T": [0.1, 0.0]}
    cols = sample_cases(spec, mb)
    rng = np.random.default_rng(3)
    q0 = np.array([0.3, -0.2]) + np.array([0.1, 0.0]) * rng.standard_normal((40, 2))
    u0 = rng.uniform([-1, -1], [1, 2], (40, 2))
    assert np.array_equal(cols["q0"], mb.sanitize(q0)) and np.array_equal(cols["u0"], u0)
    assert np.array_equal(cols["T"], np.tile([0.1, 0.0], (40, 1)))
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump({**spec, "dt": DT, "n_steps": 50}))
    res = symgen.sweep(MODEL, str(path), chunk_size=16)
    ref = mb.rollout(cols["q0"], cols["u0"], DT, 50, T=cols["T"])
    assert np.array_equal(res["q"], ref["q"]) and np.array_equal(res["u"], ref["u"])
    assert res["info"]["cases_spec"]["seed"] == 3
    assert np.array_equal(sample_cases({"n": 5}, mb)["q0"], np.tile(mb.neutral_q(), (5, 1)))
    for bad, match in (({"n": 5, "q0": {"mean": [1, 2, 3]}}, "q0.mean has 3 values, expected 2"),
                       ({"n": 5, "u0": {"low": 0}}, "needs low and high"),
                       ({"n": 0}, "positive integer"), ({"n": 5, "speed": 1}, "unknown keys"),
                       ({"n": 5, "q0": {"std": -1}}, "std must be >= 0")):
        with pytest.raises(SweepError, match=match):
            symgen.sweep(MODEL, bad, DT, 10)


def test_dispersion_sanitizes_quaternions():
    """A spinning top on a BALL_QUAT hinge: q0 drawn around neutral Q (0, 0, 0, 1) is normalized by
    mb.sanitize before the rollout, and the sweep of the spec is the rollout of the sampled table."""
    from symgen.model import model_from_dict

    model = model_from_dict({"name": "sweep_top", "bodies": [
        {"name": "top", "parent": "newtonian", "mass": 1.0, "com": [0, 0, 0.1], "inertia": [0.01, 0.02, 0.03, 0, 0, 0],
         "hinge": {"type": "BALL_QUAT", "name": "ball"}}]})
    top = symgen.build(model)
    spec = {"n": 20, "seed": 5, "q0": {"std": 0.3}, "u0": {"mean": [0, 0, 20], "std": 1.0}}
    cols = sample_cases(spec, top)
    rng = np.random.default_rng(5)
    raw = np.array([0, 0, 0, 1.0]) + 0.3 * rng.standard_normal((20, 4))
    assert np.allclose(cols["q0"], raw / np.linalg.norm(raw, axis=1, keepdims=True), rtol=0, atol=1e-15)
    res = symgen.sweep(model, spec, DT, 100, every=20)
    ref = top.rollout(cols["q0"], cols["u0"], DT, 100, every=20)
    assert np.array_equal(res["q"], ref["q"]) and np.allclose(np.linalg.norm(res["q"], axis=2), 1, atol=1e-12)


def test_parameter_sweep(client, mb, cases, reference, tmp_path):
    """Cases that vary a mass: the model file is built with that parameter (as symgen.build(...,
    parameters=[...]) builds it) and each chunk passes its cases' values to rollout; in process and on the
    cluster alike, equal to one rollout with per-case params; the nominal mass reproduces the folded build to
    1e-12.  Gravity per case needs no parametric build.  A built model without the parameter is refused."""
    n = len(cases["q0"])
    mass = np.linspace(0.5, 2.0, n)
    mass[0] = 1.0  # the model file's value
    table = {**cases, "params": {"link2.mass": mass}}
    res = symgen.sweep(MODEL, table, DT, N_STEPS, every=EVERY, chunk_size=9)
    mbp = symgen.build(MODEL, parameters=["link2.mass"])
    ref = mbp.rollout(cases["q0"], cases["u0"], DT, N_STEPS, T=cases["T"], every=EVERY, params={"link2.mass": mass})
    assert np.array_equal(res["q"], ref["q"]) and np.array_equal(res["u"], ref["u"])
    assert np.allclose(res["q"][0], reference["q"][0], rtol=0, atol=1e-12)
    assert not np.allclose(res["q"][1:], reference["q"][1:], atol=1e-3)  # the mass matters
    assert np.array_equal(res["inputs"]["params"]["link2.mass"], mass) and res["info"]["params"] == ["link2.mass"]
    store = tmp_path / "params.zarr"
    on_cluster = symgen.sweep(MODEL, table, DT, N_STEPS, every=EVERY, chunk_size=9, client=client, store=store)
    assert np.array_equal(on_cluster["q"], ref["q"])
    assert np.array_equal(load_sweep(store)["inputs"]["params"]["link2.mass"], mass)

    G = np.tile([0.0, 0.0, -9.81], (n, 1)) * np.linspace(0, 2, n)[:, None]
    g_res = symgen.sweep(mb, {**cases, "params": {"gravity": G}}, DT, N_STEPS, every=EVERY)
    g_ref = mb.rollout(cases["q0"], cases["u0"], DT, N_STEPS, T=cases["T"], every=EVERY, params={"gravity": G})
    assert np.array_equal(g_res["q"], g_ref["q"])

    spec = {"n": 12, "seed": 2, "params": {"link2.mass": {"std": 0.1}, "gravity": {"low": [0, 0, -10], "high": 0}}}
    cols = sample_cases(spec, mbp)
    rng = np.random.default_rng(2)
    assert np.array_equal(cols["params"]["gravity"], rng.uniform([0, 0, -10], 0, (12, 3)))  # names in sorted order
    assert np.array_equal(cols["params"]["link2.mass"], 1.0 + 0.1 * rng.standard_normal(12))  # mean: the file's
    with pytest.raises(SweepError, match="does not take at run time"):
        symgen.sweep(mb, table, DT, 10)
    with pytest.raises(SweepError, match=r"params 'link2.mass' has shape \(3,\)"):
        symgen.sweep(MODEL, {**cases, "params": {"link2.mass": [1.0, 2.0, 3.0]}}, DT, 10)


def test_bad_tables(mb):
    for bad, match in (({"u0": np.zeros((3, 2))}, "no q0"),
                       ({"q0": np.zeros((3, 3))}, r"q0 has shape \(3, 3\), expected \(n, 2\)"),
                       ({"q0": np.zeros((3, 2)), "u0": np.zeros((4, 2))}, r"u0 has shape \(4, 2\), expected \(3, 2\)"),
                       ({"q0": np.zeros((3, 2)), "T": np.zeros((3, 5, 2))}, "T per step has 5 steps"),
                       ({"q0": np.zeros((3, 2)), "label": ["a", "b", "c"]}, "column 'label' is not per case"),
                       ({"q0": np.zeros((3, 2)), "case": [1, 1, 2]}, "3 distinct integers")):
        with pytest.raises(SweepError, match=match):
            symgen.sweep(mb, bad, DT, 10)
    with pytest.raises(SweepError, match="give dt and n_steps"):
        symgen.sweep(mb, {"q0": np.zeros((3, 2))})
    with pytest.raises(SweepError, match="outputs"):
        symgen.sweep(mb, {"q0": np.zeros((3, 2))}, DT, 10, outputs=("q", "qdd"))


def test_summary(mb, cases, reference):
    res = symgen.sweep(mb, cases, DT, N_STEPS, every=EVERY)
    s = sweep_summary(res, output="u", index=[1])
    assert s["t"] == reference["t"][-1] and s["n_ok"] == 60 and s["index"].tolist() == [1]
    assert np.allclose(s["values"][:, 0], np.percentile(reference["u"][:, -1, 1], [5, 25, 50, 75, 95]), rtol=0,
                       atol=1e-15)


def test_cli_sweep(cases, reference, tmp_path, capsys, monkeypatch):
    """``python -m symgen sweep MODEL CASES.yaml --out STORE`` writes a store that reads back as the rollout
    (one line per chunk on stderr, a tqdm bar instead on a terminal); a rerun resumes (nothing to compute);
    bad cases are a one-paragraph error with exit status 1."""
    table = tmp_path / "cases.yaml"
    table.write_text(yaml.safe_dump({k: np.asarray(v).tolist() for k, v in cases.items()}
                                    | {"dt": DT, "n_steps": N_STEPS}))
    out = tmp_path / "cli.zarr"
    argv = ["sweep", MODEL, str(table), "--out", str(out), "--every", str(EVERY), "--chunk-size", "16"]
    assert symgen.cli.main(argv) == 0
    captured = capsys.readouterr()
    assert "swept 60 cases of double_pendulum" in captured.out and "4 chunks computed" in captured.out
    assert "chunk 4/4: cases 48..59" in captured.err
    assert_same(load_sweep(out), reference)
    assert symgen.cli.main(argv + ["-q"]) == 0
    captured = capsys.readouterr()
    assert "0 chunks computed, 4 skipped" in captured.out and captured.err == ""

    for text, match in (("u0: [[0, 0]]\n", "no q0"), ("q0: [[0, 0, 0]]\n", "q0 has shape (1, 3)"),
                        ("q0: [[0, 0], [1]]\n", "q0 is not a table of numbers"), ("- 1\n- 2\n", "expected a mapping")):
        bad = tmp_path / "bad.yaml"
        bad.write_text(text)
        assert symgen.cli.main(["sweep", MODEL, str(bad), "--out", str(tmp_path / "bad.zarr"), "--dt", "0.01",
                                "--n-steps", "10"]) == 1
        err = capsys.readouterr().err
        assert err.startswith("symgen: error: ") and match in err and "\n\n" not in err.strip(), err
        assert "Traceback" not in err
    assert symgen.cli.main(argv + ["--dt", "0.002"]) == 1
    assert "holds another sweep (dt 0.001 there, 0.002 now)" in capsys.readouterr().err
    assert symgen.cli.main(argv[:5] + ["--outputs", "q,v"]) == 2 and "--outputs" in capsys.readouterr().err

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert symgen.cli.main(argv[:4] + [str(tmp_path / "bar.zarr"), *argv[5:], "--outputs", "q"]) == 0
    err = capsys.readouterr().err
    assert "sweep    chunks:" in err and "chunk 1/" not in err
    assert np.array_equal(load_sweep(tmp_path / "bar.zarr")["q"], reference["q"])
