"""Sweeps: many rollouts of one model, in this process or on a Dask cluster, results in a Zarr store.

A consumer of the build pipeline, like symgen.pipeline.package (the runtime never imports it).  :func:`sweep` takes a
model and a table of cases (or a dispersion spec that samples one), splits the cases into chunks and runs
each chunk as one :meth:`~symgen.runtime.MultibodyModel.rollout` call:

* without a client, in this process (``threads=k`` runs k chunks at once: the C call releases the GIL);
* with a ``dask.distributed`` client, one task per chunk.  The tasks carry the model's generated *sources*
  (:class:`ModelSources`: the ``(files, manifest)`` of :func:`symgen.pipeline.sources.cached_model_sources`, compressed),
  never a binary: each worker process compiles or loads the module through its own content-hash cache
  (symgen.pipeline.compile) once and keeps it in a dict keyed by the sources' hash.

With ``store=`` (a directory, or a URL zarr understands) every chunk writes its own rows of a chunked Zarr
group, then sets its flag in ``done``; a rerun with the same store computes only the chunks whose flag is
unset, and refuses a store written for another model, other cases or other settings.  Dask and Zarr are
imported here only, and only when asked for (``pip install "symgen[sweep]"``).

Store layout (one Zarr group)::

    attrs   symgen_sweep (format), model_hash, model_name, symgen_version, dt, n_steps, every, method,
            n_cases, chunk_size, n_chunks, K, nq, nu, outputs, cases_hash, params, gravity, baumgarte,
            cases_spec
    t       (K,)            float64   time of each output row (row 0: the initial state)
    case    (n,)            int64     case ids, in the order of the input table
    q, u    (n, K, nq|nu)   float64   trajectories (the outputs asked for), chunks (chunk_size, K, nq|nu)
    ok      (n,)            bool      the case ran to the end (see rollout's ``ok``)
    status  (n,)            int32     forward dynamics' status of a failed case (0 when ok)
    done    (n_chunks,)     bool      chunk i's rows are written (one Zarr chunk per flag)
    inputs/ q0, u0, T, params/<name> and every extra column of the table, chunked like the outputs
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import threading
import time
import uuid
import zlib
from pathlib import Path

import numpy as np

STORE_FORMAT = 1
SETTINGS = ("dt", "n_steps", "every", "method", "chunk_size")  # scalars a cases file may set
SPEC_KEYS = ("n", "seed", "q0", "u0", "T", "params")
OUTPUTS = ("q", "u")
#: the settings a store is written for: a rerun that differs in one of them is refused
MUST_MATCH = ("model_hash", "dt", "n_steps", "every", "method", "n_cases", "cases_hash", "outputs", "gravity",
              "baumgarte")
#: default chunk: about this many bytes of outputs (the tasks' memory, the store's chunk files)
TARGET_CHUNK_BYTES = 8 << 20
#: with a cluster, at least this many chunks per worker thread (balance, and little lost with a worker)
CHUNKS_PER_THREAD = 4


class SweepError(ValueError):
    """Bad sweep input (cases, settings, store): the message says what to fix."""


# --------------------------------------------------------------------------------------------------
# the model: sources for the workers, the loaded module here
# --------------------------------------------------------------------------------------------------

def sources_hash(files: dict) -> str:
    """Hash of a model's generated C (file names and texts): the sweep's ``model_hash``, the same on every
    platform (the compiled module's name also hashes the compiler)."""
    h = hashlib.sha256()
    for name in sorted(files):
        h.update(name.encode() + b"\0" + files[name].encode() + b"\0")
    return h.hexdigest()[:16]


class ModelSources:
    """A model's generated sources as a sweep task carries them: ``name``, ``hash`` (:func:`sources_hash`)
    and the files and manifest as compressed JSON (a worker decompresses them only to build the module)."""

    def __init__(self, files: dict, manifest: dict):
        keep = {k: v for k, v in manifest.items() if k not in ("module", "so", "singular_hinges")}
        self.name, self.hash = manifest["name"], sources_hash(files)
        self._blob = zlib.compress(json.dumps({"files": files, "manifest": keep}).encode(), 6)

    def load(self) -> tuple:
        """The decompressed ``(files, manifest)``: ``{file name: text}`` and the manifest (without ``module``, ``so``,
        ``singular_hinges``)."""
        data = json.loads(zlib.decompress(self._blob))
        return data["files"], data["manifest"]

    def __repr__(self):
        return f"<ModelSources {self.name} {self.hash} ({len(self._blob) / 1024:.0f} kB compressed)>"


def model_from_sources(src: ModelSources):
    """Compile (through the content-hash cache of symgen.pipeline.compile: nothing when this platform built it before)
    and load the module of ``src``: what a worker runs, through the pipeline's own last stage
    (:func:`symgen.pipeline.package.module_of_sources`).  Needs neither sympy nor jinja2."""
    from .pipeline.package import module_of_sources
    from .runtime import MultibodyModel

    files, manifest = src.load()
    mod, manifest, so = module_of_sources(files, manifest, f"model {manifest.get('model', manifest['name'])} "
                                                           "(sweep worker)")
    return MultibodyModel(mod, manifest, path=so)


_WORKER_MODELS: dict = {}  # sources hash -> MultibodyModel, one per worker process
_WORKER_LOCK = threading.Lock()


def _worker_model(src):
    if not isinstance(src, ModelSources):  # in this process: the model itself
        return src
    with _WORKER_LOCK:
        mb = _WORKER_MODELS.get(src.hash)
        if mb is None:
            mb = _WORKER_MODELS[src.hash] = model_from_sources(src)
        return mb


def sources_of_built(mb):
    """``(files, manifest)`` of a loaded MultibodyModel, or None: from its ``generated/<model>/`` folder, else
    from the model-sources cache (the entry whose module name is the model's)."""
    from .paths import cache_dir
    from .pipeline.package import module_name_of

    path = Path(mb.path) if mb.path is not None else None
    folder = path if path is not None and path.is_dir() else path.parent if path is not None else None
    if folder is not None and (folder / "manifest.json").exists():
        try:
            manifest = json.loads((folder / "manifest.json").read_text())
            if manifest.get("module") == mb.manifest.get("module"):
                files = {f.name: f.read_text() for f in folder.iterdir() if f.suffix in (".c", ".h")}
                return files, manifest
        except (OSError, ValueError):
            pass
    entries = sorted((cache_dir() / "model-sources").glob("*.json"), key=lambda f: f.stat().st_mtime, reverse=True)
    for entry in entries:
        try:
            data = json.loads(entry.read_text())
            files, manifest = data["files"], data["manifest"]
        except (OSError, ValueError, KeyError):
            continue
        if manifest.get("name") == mb.name and module_name_of(files, manifest) == mb.manifest.get("module"):
            return files, manifest
    return None


def _resolve_model(model, options: dict, param_names=()):
    """``(mb, ModelSources or None)`` of a model file, a generated folder, a Model or a MultibodyModel.  A file
    or a Model is built with ``parameters=`` (an option) plus the parameters the cases vary (``param_names``;
    gravity needs none)."""
    import dataclasses

    from .runtime import MultibodyModel

    options = dict(options)
    parameters = options.pop("parameters", None) or []
    parameters = [parameters] if isinstance(parameters, str) else list(parameters)
    if isinstance(model, MultibodyModel):
        if options or parameters:
            raise SweepError(f"sweep: loading options ({', '.join(options)}) apply to model files, not to a "
                             "built model")
        found = sources_of_built(model)
        return model, (ModelSources(*found) if found else None)
    if isinstance(model, (str, os.PathLike)) and Path(model).is_dir():
        from .runtime import load_built

        return _resolve_model(load_built(model), {**options, **({"parameters": parameters} if parameters else {})})
    from .model import Model, load_model
    from .pipeline.sources import cached_model_sources

    if not isinstance(model, Model):
        if not isinstance(model, (str, os.PathLike)):
            raise SweepError(f"sweep: model must be a model file, a generated model folder, a symgen.model.Model "
                             f"or a MultibodyModel, not {type(model).__name__}")
        model = load_model(model, **options)
    elif options:
        raise SweepError(f"sweep: loading options ({', '.join(options)}) apply to model files, not to a Model")
    wanted = list(dict.fromkeys([*model.parameters, *parameters, *(n for n in param_names if n != "gravity")]))
    if wanted != list(model.parameters):
        model = dataclasses.replace(model, parameters=wanted)
    src = ModelSources(*cached_model_sources(model))
    return _worker_model(src), src  # loaded as the workers load it (symgen.pipeline.package's build_model, less its checks)


# --------------------------------------------------------------------------------------------------
# cases: a table, or a dispersion spec sampled into one
# --------------------------------------------------------------------------------------------------

def _read_cases(cases) -> tuple:
    """``(data dict, where)`` of a cases argument: a dict, or a YAML/JSON file holding one."""
    if isinstance(cases, (str, os.PathLike)):
        p = Path(cases)
        if not p.is_file():
            raise SweepError(f"{cases}: no such cases file")
        try:
            text = p.read_text()
            if p.suffix.lower() == ".json":
                data = json.loads(text)
            else:
                import yaml

                data = yaml.safe_load(text)
        except Exception as e:  # OSError, yaml.YAMLError, JSONDecodeError
            raise SweepError(f"{p}: cannot read the cases file: {' '.join(str(e).split())}") from None
        if not isinstance(data, dict):
            raise SweepError(f"{p}: expected a mapping: a table (q0: a list of rows, u0, T) or a dispersion "
                             f"spec (n, seed, q0: {{mean, std}}, ...), got {type(data).__name__}")
        return data, str(p)
    if isinstance(cases, dict):
        return cases, "cases"
    raise SweepError(f"sweep: cases must be a dict (a table or a dispersion spec) or a YAML/JSON file, not "
                     f"{type(cases).__name__}")


def _is_setting(key, value) -> bool:
    return key in SETTINGS and np.ndim(value) == 0


def _matrix(where, name, v, n, k, what) -> np.ndarray:
    """A table column as an (n, k) float array, or a SweepError that says which shape was expected."""
    try:
        A = np.asarray(v, dtype=np.float64)
    except (TypeError, ValueError):
        raise SweepError(f"{where}: {name} is not a table of numbers (expected {what})") from None
    if A.ndim != 2 or A.shape[1] != k or (n is not None and A.shape[0] != n):
        raise SweepError(f"{where}: {name} has shape {A.shape}, expected {what}")
    return A


def _table(data, where, mb) -> dict:
    """Columns of a cases table: q0 (n, nQ), u0 (n, nU) (default zeros), T (n, nU) or (n, n_steps, nU)
    (optional), case (n,) unique integers (default 0..n-1) and extra per-case numeric columns."""
    if "q0" not in data:
        raise SweepError(f"{where}: no q0. Give a table (q0: (n, {mb.nq}) rows, u0: (n, {mb.nu}) rows, optional "
                         f"T) or a dispersion spec (n: 100, seed: 0, q0: {{mean: [...], std: [...]}}, ...) for "
                         f"{mb.name} (nQ = {mb.nq}, nU = {mb.nu})")
    q0 = _matrix(where, "q0", data["q0"], None, mb.nq, f"(n, {mb.nq}): one row of nQ = {mb.nq} per case")
    n = q0.shape[0]
    if n == 0:
        raise SweepError(f"{where}: q0 has no rows: a sweep needs at least one case")
    cols = {"q0": q0}
    cols["u0"] = (np.zeros((n, mb.nu)) if data.get("u0") is None else
                  _matrix(where, "u0", data["u0"], n, mb.nu, f"({n}, {mb.nu}): one row of nU = {mb.nu} per case"))
    if data.get("T") is not None:
        try:
            T = np.asarray(data["T"], dtype=np.float64)
        except (TypeError, ValueError):
            raise SweepError(f"{where}: T is not a table of numbers") from None
        if not (T.ndim in (2, 3) and T.shape[0] == n and T.shape[-1] == mb.nu):
            raise SweepError(f"{where}: T has shape {T.shape}, expected ({n}, {mb.nu}) (constant per case) or "
                             f"({n}, n_steps, {mb.nu}) (per step)")
        cols["T"] = T
    if data.get("params") is not None:
        cols["params"] = _params_table(where, data["params"], n, mb)
    if data.get("case") is not None:
        case = np.asarray(data["case"])
        if case.shape != (n,) or case.dtype.kind not in "iu" or len(np.unique(case)) != n:
            raise SweepError(f"{where}: case must be {n} distinct integers (one id per row), got "
                             f"{case.dtype} {case.shape}")
        cols["case"] = case.astype(np.int64)
    for key, v in data.items():
        if key in ("q0", "u0", "T", "case", "params") or _is_setting(key, v):
            continue
        A = np.asarray(v)
        if A.ndim == 0 or A.shape[0] != n or A.dtype.kind not in "biuf":
            raise SweepError(f"{where}: column {key!r} is not per case: extra columns are carried into the "
                             f"results and must be numbers with one row per case ({n}), got {A.dtype} {A.shape}"
                             + (f"; the settings a cases file may hold are {', '.join(SETTINGS)}"
                                if A.ndim == 0 else ""))
        cols[key] = A
    return cols


def _nominal_params(mb) -> dict:
    """``{name: value}`` of what a case may vary through ``params``: the build's parameters, and gravity."""
    return {"gravity": np.array(mb.gravity, dtype=float), **getattr(mb, "parameters", {})}


def _param_names(where, params, mb) -> dict:
    if not isinstance(params, dict):
        raise SweepError(f"{where}: params must be a mapping {{parameter name: values}}, e.g. {{link1.mass: ...}}")
    nominal = _nominal_params(mb)
    for name in params:
        if name not in nominal:
            raise SweepError(f"{where}: params names {name!r}, which {mb.name} does not take at run time (it takes: "
                             f"{', '.join(nominal)}); give the model as a file or a Model so that the sweep builds "
                             f"it with its parameters, or build it with symgen.build(..., parameters=[{name!r}])")
    return nominal


def _params_table(where, params, n, mb) -> dict:
    """Per-case parameter values ``{name: (n, *shape)}`` (a parameter's own shape: one value for every case)."""
    nominal = _param_names(where, params, mb)
    out = {}
    for name, v in params.items():
        shape = np.shape(nominal[name])
        try:
            A = np.asarray(v, dtype=np.float64)
        except (TypeError, ValueError):
            raise SweepError(f"{where}: params {name!r} is not numbers") from None
        if A.shape == shape:
            A = np.broadcast_to(A, (n, *shape))
        if A.shape != (n, *shape):
            raise SweepError(f"{where}: params {name!r} has shape {A.shape}, expected {(n, *shape)} (one per case) "
                             f"or {shape} (the same for all)")
        out[name] = np.ascontiguousarray(A)
    return out


def _vector(where, name, v, k) -> np.ndarray:
    try:
        a = np.asarray(v, dtype=np.float64)
    except (TypeError, ValueError):
        raise SweepError(f"{where}: {name} must be a number or a list of {k} numbers") from None
    shape = k if isinstance(k, tuple) else (k,)
    if a.ndim == 0:
        return np.full(shape, float(a))
    if a.shape != shape:
        got, want = (a.size, shape[0]) if len(shape) == 1 else (f"shape {a.shape}", f"shape {shape}")
        raise SweepError(f"{where}: {name} has {got} values, expected {want} (or one for all)")
    return a


def _sample(where, name, d, n, k, default, rng) -> np.ndarray:
    """(n, k) values of one quantity of a dispersion spec (see :func:`sample_cases`)."""
    shape = k if isinstance(k, tuple) else (k,)
    if d is None:
        return np.tile(default, (n,) + (1,) * len(shape))
    if not isinstance(d, dict):
        return np.tile(_vector(where, name, d, k), (n,) + (1,) * len(shape))
    bad = set(d) - {"distribution", "mean", "std", "low", "high"}
    dist = d.get("distribution") or ("uniform" if ("low" in d or "high" in d) else "normal")
    if bad or dist not in ("normal", "uniform"):
        raise SweepError(f"{where}: {name} must be a list of values, {{mean, std}} (normal) or {{low, high}} "
                         f"(uniform)" + (f"; unknown keys {sorted(bad)}" if bad else f"; unknown distribution "
                                         f"{dist!r}"))
    if dist == "normal":
        mean = default if d.get("mean") is None else _vector(where, f"{name}.mean", d["mean"], k)
        std = _vector(where, f"{name}.std", d.get("std", 0.0), k)
        if np.any(std < 0):
            raise SweepError(f"{where}: {name}.std must be >= 0")
        return mean + std * rng.standard_normal((n, *shape))
    if "low" not in d or "high" not in d:
        raise SweepError(f"{where}: {name}: a uniform distribution needs low and high")
    lo, hi = _vector(where, f"{name}.low", d["low"], k), _vector(where, f"{name}.high", d["high"], k)
    if np.any(hi < lo):
        raise SweepError(f"{where}: {name}: high must be >= low")
    return rng.uniform(lo, hi, (n, *shape))


def sample_cases(spec: dict, mb, where: str = "cases") -> dict:
    """The table of a dispersion spec ``{"n": N, "seed": S, "q0": ..., "u0": ..., "T": ...}``.

    Each quantity is a list (the same value for every case; a number fills the row), ``{"mean": m, "std": s}``
    (normal; the mean defaults to neutral Q for q0 and zero otherwise) or ``{"low": a, "high": b}``
    (uniform); q0 omitted is neutral Q, u0 zero, T none.  One ``numpy.random.default_rng(seed)`` draws q0, then
    u0, then T (an (N, k) block each, only for the random ones), then the ``params`` in the order of their
    names (``{name: value or distribution}``, mean default the model file's value, shaped like the parameter),
    so a spec gives the same cases everywhere; q0 is then sanitized (quaternions normalized) with
    ``mb.sanitize``."""
    bad = set(spec) - set(SPEC_KEYS) - set(SETTINGS)
    if bad:
        raise SweepError(f"{where}: unknown keys {sorted(bad)} in a dispersion spec (known: "
                         f"{', '.join(SPEC_KEYS + SETTINGS)})")
    try:
        n = int(spec["n"])
        seed = None if spec.get("seed") is None else int(spec["seed"])
    except (TypeError, ValueError):
        raise SweepError(f"{where}: n and seed must be integers") from None
    if n < 1 or n != spec["n"]:
        raise SweepError(f"{where}: n must be a positive integer, got {spec['n']!r}")
    rng = np.random.default_rng(0 if seed is None else seed)
    q0 = mb.sanitize(_sample(where, "q0", spec.get("q0"), n, mb.nq, mb.neutral_q(), rng))
    u0 = _sample(where, "u0", spec.get("u0"), n, mb.nu, np.zeros(mb.nu), rng)
    cols = {"q0": np.ascontiguousarray(q0, dtype=np.float64), "u0": u0}
    if spec.get("T") is not None:
        cols["T"] = _sample(where, "T", spec["T"], n, mb.nu, np.zeros(mb.nu), rng)
    if spec.get("params") is not None:
        nominal = _param_names(where, spec["params"], mb)
        cols["params"] = {name: _sample(where, f"params {name}", spec["params"][name], n, np.shape(nominal[name]),
                                        np.asarray(nominal[name], dtype=float), rng)
                          for name in sorted(spec["params"])}
    return cols


def _jsonable(v):
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, np.ndarray):
        return _jsonable(v.tolist())
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, np.generic):
        return v.item()
    return v


def _flat(cols: dict, prefix: str = "") -> dict:
    """``{"q0": A, "params": {"link1.mass": B}}`` -> ``{"q0": A, "params/link1.mass": B}``."""
    out = {}
    for k, v in cols.items():
        out.update(_flat(v, f"{prefix}{k}/") if isinstance(v, dict) else {f"{prefix}{k}": v})
    return out


def _cases_hash(cols: dict, case: np.ndarray) -> str:
    h = hashlib.sha256(np.ascontiguousarray(case).tobytes())
    flat = _flat(cols)
    for k in sorted(flat):
        A = np.ascontiguousarray(flat[k])
        h.update(f"|{k}|{A.dtype.str}|{A.shape}|".encode() + A.tobytes())
    return h.hexdigest()[:16]


# --------------------------------------------------------------------------------------------------
# one chunk: the rollout, and its rows written to the store
# --------------------------------------------------------------------------------------------------

def _rollout_chunk(mb, job: dict, common: dict) -> dict:
    extra = {"params": job["params"]} if job.get("params") else {}  # (a build before parametric ones: no params=)
    return mb.rollout(job["q0"], job["u0"], common["dt"], common["n_steps"], T=job.get("T"),
                      every=common["every"], method=common["method"], gravity=common["gravity"],
                      baumgarte=common["baumgarte"], **extra)


def _write_chunk(group, job: dict, r: dict, outputs, hook=None) -> None:
    """The chunk's rows of every output, then (after ``hook``, a test's way in) its flag in ``done``."""
    lo, hi = job["rows"]
    for name in outputs:
        group[name][lo:hi] = r[name]
    group["ok"][lo:hi] = r["ok"]
    group["status"][lo:hi] = r["status"].astype(np.int32)
    if hook is not None:
        hook(job["chunk"])
    group["done"][job["chunk"]] = True


def _chunk_task(src, job: dict, common: dict, store, hook=None):
    """One chunk on a Dask worker: the module from ``src`` (built once per worker process), the rollout, and
    with a store the rows written there (the return is then a small summary, else the arrays too)."""
    t0 = time.perf_counter()
    mb = _worker_model(src)
    r = _rollout_chunk(mb, job, common)
    info = {"chunk": job["chunk"], "rows": job["rows"], "seconds": time.perf_counter() - t0,
            "worker": f"{os.uname().nodename}:{os.getpid()}", "n_ok": int(r["ok"].sum())}
    if store is None:
        info["result"] = {k: r[k] for k in (*common["outputs"], "ok", "status")}
    else:
        _write_chunk(_zarr().open_group(store, mode="r+"), job, r, common["outputs"], hook)
    return info


# --------------------------------------------------------------------------------------------------
# the store
# --------------------------------------------------------------------------------------------------

def _zarr():
    try:
        import zarr
    except ImportError:
        raise SweepError("writing a sweep to a store needs zarr: pip install \"symgen[sweep]\"") from None
    return zarr


def _create_array(group, name, data=None, *, shape=None, chunks, dtype, fill_value):
    """An array of the group (zarr 3's ``create_array``, zarr 2's ``create_dataset``), with ``data`` if given."""
    shape = np.shape(data) if data is not None else shape
    make = group.create_array if hasattr(group, "create_array") else group.create_dataset
    arr = make(name, shape=shape, chunks=chunks, dtype=dtype, fill_value=fill_value, overwrite=True)
    if data is not None and np.size(data):
        arr[...] = data
    return arr


def _store_path(store):
    """A store as workers elsewhere can open it: an absolute path (or a URL as given)."""
    store = os.fspath(store) if isinstance(store, os.PathLike) else store
    if isinstance(store, str) and "://" not in store:
        return os.path.abspath(store)
    return store


def _open_existing(store):
    """The sweep group at ``store``, None when nothing is there; SweepError when something else is."""
    zarr = _zarr()
    local = isinstance(store, str) and "://" not in store
    if local and (not os.path.exists(store) or (os.path.isdir(store) and not os.listdir(store))):
        return None
    try:
        g = zarr.open_group(store, mode="r+")
    except Exception:  # not a Zarr group (FileNotFoundError, zarr's errors)
        if not local:
            return None
        raise SweepError(f"{store}: exists and is not a Zarr store; give a new path for the results (a sweep "
                         "never deletes what it did not write)") from None
    if "symgen_sweep" not in dict(g.attrs):
        raise SweepError(f"{store}: is a Zarr store but not a symgen sweep; give a new path for the results (a "
                         "sweep never deletes what it did not write)")
    return g


def _check_store(g, meta: dict, store) -> None:
    old = dict(g.attrs)
    diff = [k for k in MUST_MATCH if _jsonable(old.get(k)) != _jsonable(meta.get(k))]
    if meta.get("chunk_size") != old.get("chunk_size"):
        diff.append("chunk_size")
    if diff:
        what = "; ".join(f"{k} {old.get(k)!r} there, {meta.get(k)!r} now" for k in diff)
        raise SweepError(f"{store}: holds another sweep ({what}). Resume it with the same model, cases and "
                         "settings, write to a new store, or start this one over with overwrite=True "
                         "(--overwrite)")


def _create_store(store, meta: dict, cols: dict, case, t):
    zarr = _zarr()
    g = zarr.open_group(store, mode="w")
    g.attrs.update({"symgen_sweep": STORE_FORMAT, "ready": False})
    n, cs, K = meta["n_cases"], meta["chunk_size"], meta["K"]
    _create_array(g, "t", t, chunks=(max(K, 1),), dtype="f8", fill_value=0.0)
    _create_array(g, "case", case, chunks=(cs,), dtype="i8", fill_value=-1)
    for name, k in (("q", meta["nq"]), ("u", meta["nu"])):
        if name in meta["outputs"]:
            _create_array(g, name, shape=(n, K, k), chunks=(cs, max(K, 1), max(k, 1)), dtype="f8",
                          fill_value=np.nan)
    _create_array(g, "ok", shape=(n,), chunks=(cs,), dtype="bool", fill_value=False)
    _create_array(g, "status", shape=(n,), chunks=(cs,), dtype="i4", fill_value=0)
    _create_array(g, "done", shape=(meta["n_chunks"],), chunks=(1,), dtype="bool", fill_value=False)
    inputs = g.require_group("inputs")
    for name, A in _flat({k: v for k, v in cols.items() if k != "case"}).items():
        where, _, leaf = name.rpartition("/")
        _create_array(inputs.require_group(where) if where else inputs, leaf, A,
                      chunks=(cs, *(max(s, 1) for s in A.shape[1:])), dtype=A.dtype.str,
                      fill_value=0 if A.dtype.kind != "b" else False)
    g.attrs.update({**_jsonable(meta), "ready": True})
    return g


def load_sweep(store, outputs=None) -> dict:
    """A sweep store read back into memory: ``{"case", "t", "q", "u", "ok", "status", "done", "inputs": {...},
    "info": {attrs}}`` (the outputs it holds, or ``outputs``).  Rows of chunks not done are NaN."""
    zarr = _zarr()
    store = _store_path(store)
    try:
        g = zarr.open_group(store, mode="r")
    except Exception:
        raise SweepError(f"{store}: not a Zarr store") from None
    attrs = dict(g.attrs)
    if "symgen_sweep" not in attrs:
        raise SweepError(f"{store}: not a symgen sweep store")
    outputs = tuple(attrs.get("outputs", OUTPUTS)) if outputs is None else tuple(outputs)
    res = {"case": g["case"][:], "t": g["t"][:]}
    for name in outputs:
        res[name] = g[name][:]
    res["ok"], res["status"], res["done"] = g["ok"][:], g["status"][:], g["done"][:]
    res["inputs"] = _read_group(g["inputs"])
    res["info"] = {**attrs, "complete": bool(res["done"].all()), "store": str(store)}
    return res


def _read_group(g) -> dict:
    out = {name: g[name][:] for name in sorted(g.array_keys())}
    out.update({name: _read_group(g[name]) for name in sorted(g.group_keys())})
    return out


# --------------------------------------------------------------------------------------------------
# the sweep
# --------------------------------------------------------------------------------------------------

def _settings(data: dict, **given) -> dict:
    """Arguments given win over the cases file's settings; then the defaults."""
    out = {}
    for key, default in (("dt", None), ("n_steps", None), ("every", 1), ("method", "rk4"), ("chunk_size", None)):
        v = given.get(key)
        out[key] = v if v is not None else data.get(key, default) if _is_setting(key, data.get(key)) else default
    if out["dt"] is None or out["n_steps"] is None:
        raise SweepError("sweep: give dt and n_steps (arguments, --dt/--n-steps, or dt: and n_steps: in the cases "
                         "file)")
    try:
        dt, n_steps, every = float(out["dt"]), int(out["n_steps"]), int(out["every"])
    except (TypeError, ValueError):
        raise SweepError(f"sweep: dt must be a number and n_steps, every integers, got {out['dt']!r}, "
                         f"{out['n_steps']!r}, {out['every']!r}") from None
    if not (math.isfinite(dt) and dt > 0) or n_steps < 0 or every < 1 or n_steps != out["n_steps"]:
        raise SweepError(f"sweep: needs a finite dt > 0, an integer n_steps >= 0 and every >= 1, got dt = "
                         f"{out['dt']!r}, n_steps = {out['n_steps']!r}, every = {out['every']!r}")
    from .runtime.integrate import METHODS

    if out["method"] not in METHODS:
        raise SweepError(f"sweep: method must be one of {', '.join(METHODS)}, got {out['method']!r}")
    cs = out["chunk_size"]
    if cs is not None and (int(cs) != cs or cs < 1):
        raise SweepError(f"sweep: chunk_size must be a positive integer, got {cs!r}")
    return {"dt": dt, "n_steps": n_steps, "every": every, "method": out["method"],
            "chunk_size": None if cs is None else int(cs)}


def _default_chunk(n: int, per_case_bytes: int, threads: int) -> int:
    cs = max(1, TARGET_CHUNK_BYTES // max(per_case_bytes, 1))
    if threads > 1:
        cs = min(cs, math.ceil(n / (CHUNKS_PER_THREAD * threads)))
    return max(1, min(n, cs))


def sweep(model, cases, dt=None, n_steps=None, every=None, client=None, store=None, *, method=None,
          chunk_size=None, outputs=("q", "u"), threads: int = 1, gravity=None, baumgarte=None,
          overwrite: bool = False, progress=None, _chunk_hook=None, **model_options) -> dict:
    """Roll out every case of ``cases`` with ``model`` (the same step ``dt``, ``n_steps``, ``every``, ``method``
    as :meth:`~symgen.runtime.MultibodyModel.rollout`), in chunks of ``chunk_size`` cases.

    ``model``: a model file (with the loading options of :func:`symgen.build`, ``parameters=`` included, as
    keywords), a generated model folder, a :class:`symgen.model.Model` or a loaded MultibodyModel.  ``cases``:
    a table ``{"q0": (n, nQ), "u0": (n, nU), "T": (n, nU) or (n, n_steps, nU), "params": {name: (n, ...)},
    "case": (n,) ids}`` (u0, T, params, case optional; any other per-case numeric column, e.g. ``seed``, is
    carried into ``res["inputs"]`` and the store), a dispersion spec ``{"n": 1000, "seed": 0, "q0": {"mean":
    [...], "std": [...]}, "u0": {"low": ..., "high": ...}, "params": {"link2.mass": {"mean": 1, "std": 0.1}}}``
    (see :func:`sample_cases`), or a YAML/JSON file with either; a file may also set dt, n_steps, every, method
    and chunk_size (arguments win).  ``params`` are the parameters of a parametric build
    (:attr:`~symgen.runtime.MultibodyModel.parameters`, and ``gravity`` on any build), passed to rollout per
    case; a model given as a file or a Model is built with the parameters the cases name.

    ``client``: a ``dask.distributed.Client`` (or a scheduler address): one task per chunk, retried on another
    worker when a worker dies.  Without one the chunks run here, ``threads`` at a time.  ``store``: a Zarr
    store (path or URL) the chunks write into (layout: this module's docstring); a store from an unfinished run
    of the same sweep is resumed (only chunks not ``done`` run), one of another sweep is refused unless
    ``overwrite``.  ``outputs``: which of ``"q"``, ``"u"`` to keep.  ``progress(event)``: called with
    ``{"event": "start", ...}`` and then ``{"event": "chunk", "chunk", "rows", "seconds", "done", "todo", ...}``
    per finished chunk.

    Returns ``{"case": (n,), "t": (K,), "q": (n, K, nQ), "u": (n, K, nU), "ok": (n,), "status": (n,),
    "inputs": {...}, "info": {...}}`` with rows in the order of the cases (read back from the store when there
    is one); ``info`` holds the store's attributes plus ``computed`` / ``skipped`` chunk lists, ``seconds`` and
    ``cases_per_s`` of this run."""
    t_start = time.perf_counter()
    outputs = tuple(outputs)
    if not outputs or set(outputs) - set(OUTPUTS) or len(set(outputs)) != len(outputs):
        raise SweepError(f"sweep: outputs must be a non-empty subset of {OUTPUTS}, got {outputs!r}")
    if int(threads) != threads or threads < 1:
        raise SweepError(f"sweep: threads must be a positive integer, got {threads!r}")
    data, where = _read_cases(cases)
    settings = _settings(data, dt=dt, n_steps=n_steps, every=every, method=method, chunk_size=chunk_size)
    params = data.get("params")
    mb, src = _resolve_model(model, model_options, list(params) if isinstance(params, dict) else ())
    cols = sample_cases(data, mb, where) if "n" in data else _table(data, where, mb)
    n = cols["q0"].shape[0]
    T = cols.get("T")
    if T is not None and T.ndim == 3 and T.shape[1] != settings["n_steps"]:
        raise SweepError(f"{where}: T per step has {T.shape[1]} steps, expected n_steps = {settings['n_steps']}")
    case = cols.get("case", np.arange(n, dtype=np.int64))
    K = settings["n_steps"] // settings["every"] + 1
    t = np.arange(K) * (settings["every"] * float(settings["dt"]))  # as rollout computes it
    own_client = False
    if isinstance(client, str):
        from distributed import Client

        client, own_client = Client(client), True
    try:
        n_threads = sum(client.nthreads().values()) if client is not None else int(threads)
        store = _store_path(store)
        existing = _open_existing(store) if store is not None else None
        cs = settings["chunk_size"]
        if cs is None and existing is not None and not overwrite:
            cs = dict(existing.attrs).get("chunk_size")
        per_case = K * sum(k for name, k in (("q", mb.nq), ("u", mb.nu)) if name in outputs) * 8
        cs = cs or _default_chunk(n, per_case, n_threads)
        n_chunks = math.ceil(n / cs)
        from . import __version__

        meta = {"model_hash": src.hash if src is not None else f"module:{mb.manifest.get('module', mb.name)}",
                "model_name": mb.name, "symgen_version": __version__, **settings, "chunk_size": int(cs),
                "n_cases": n, "n_chunks": n_chunks, "K": K, "nq": mb.nq, "nu": mb.nu, "outputs": list(outputs),
                "cases_hash": _cases_hash({k: v for k, v in cols.items() if k != "case"}, case),
                "params": sorted(cols["params"]) if cols.get("params") else None,
                "gravity": None if gravity is None else [float(x) for x in np.ravel(gravity)],
                "baumgarte": None if baumgarte is None else [float(x) for x in np.ravel(baumgarte)],
                "cases_spec": _jsonable(data) if "n" in data else None}
        if client is not None and src is None:
            raise SweepError(f"sweep: the sources of {mb.name} were not found (neither a generated folder nor the "
                             "model-sources cache has them), and Dask workers build the model from its sources: "
                             "pass the model file or the symgen.model.Model")
        group, done = None, np.zeros(n_chunks, dtype=bool)
        if store is not None:
            if existing is not None and not overwrite and dict(existing.attrs).get("ready"):
                _check_store(existing, meta, store)
                group, done = existing, existing["done"][:]
            else:
                group = _create_store(store, meta, cols, case, t)
        jobs = []
        for i in range(n_chunks):
            lo, hi = i * cs, min(n, (i + 1) * cs)
            job = {"chunk": i, "rows": (lo, hi), "q0": cols["q0"][lo:hi], "u0": cols["u0"][lo:hi]}
            if T is not None:
                job["T"] = T[lo:hi]
            if cols.get("params"):
                job["params"] = {k: v[lo:hi] for k, v in cols["params"].items()}
            jobs.append(job)
        todo = [j for j in jobs if not done[j["chunk"]]]
        common = {**settings, "outputs": outputs, "gravity": gravity, "baumgarte": baumgarte}
        skipped = [j["chunk"] for j in jobs if done[j["chunk"]]]
        say = progress or (lambda event: None)
        say({"event": "start", "cases": n, "chunks": n_chunks, "chunk_size": cs, "todo": len(todo),
             "skipped": len(skipped), "store": store, "workers": n_threads if client is not None else 0})
        mem = None if group is not None else {
            "q": np.full((n, K, mb.nq), np.nan) if "q" in outputs else None,
            "u": np.full((n, K, mb.nu), np.nan) if "u" in outputs else None,
            "ok": np.zeros(n, dtype=bool), "status": np.zeros(n, dtype=np.int32)}
        counter = {"done": 0}

        def finished(info, r=None):
            lo, hi = info["rows"]
            if mem is not None:
                r = r if r is not None else info.pop("result")
                for name in (*outputs, "ok", "status"):
                    mem[name][lo:hi] = r[name]
            counter["done"] += 1
            say({"event": "chunk", **{k: v for k, v in info.items() if k != "result"},
                 "done": counter["done"], "todo": len(todo)})

        if client is not None:
            _run_distributed(client, src, todo, common, store if group is not None else None, _chunk_hook,
                             finished, meta)
        else:
            _run_here(mb, todo, common, group, _chunk_hook, finished, int(threads))
    finally:
        if own_client:
            client.close()
    seconds = time.perf_counter() - t_start
    run = {"computed": [j["chunk"] for j in todo], "skipped": skipped, "seconds": seconds,
           "cases_per_s": sum(j["rows"][1] - j["rows"][0] for j in todo) / seconds if seconds > 0 else 0.0}
    if group is not None:
        res = load_sweep(store, outputs)
        res["info"].update(run)
        return res
    res = {"case": case, "t": t, **{k: mem[k] for k in outputs}, "ok": mem["ok"], "status": mem["status"],
           "done": np.ones(n_chunks, dtype=bool),
           "inputs": {k: v for k, v in cols.items() if k != "case"}, "info": {**meta, **run, "complete": True}}
    return res


def _run_here(mb, todo, common, group, hook, finished, threads: int) -> None:
    """The chunks in this process: rollouts ``threads`` at a time, each written (in this thread) when done."""
    def compute(job):
        t0 = time.perf_counter()
        r = _rollout_chunk(mb, job, common)
        return r, time.perf_counter() - t0

    def handle(job, r, seconds):
        if group is not None:
            _write_chunk(group, job, r, common["outputs"], hook)
        elif hook is not None:
            hook(job["chunk"])
        finished({"chunk": job["chunk"], "rows": job["rows"], "seconds": seconds, "worker": "local",
                  "n_ok": int(r["ok"].sum())}, r)

    if threads == 1:
        for job in todo:
            handle(job, *compute(job))
        return
    from concurrent.futures import ThreadPoolExecutor, as_completed

    with ThreadPoolExecutor(max_workers=threads) as ex:
        futures = {ex.submit(compute, job): job for job in todo}
        try:
            for fut in as_completed(futures):
                handle(futures[fut], *fut.result())
        except BaseException:
            for fut in futures:
                fut.cancel()
            raise


def _run_distributed(client, src, todo, common, store, hook, finished, meta) -> None:
    """One Dask task per chunk.  The sources (about 50 kB compressed) travel inside every task, so no task
    depends on another and the scheduler spreads the chunks over all workers (a shared sources task kept them
    on the worker that held it); each worker builds the module once (_worker_model).  A chunk task may run
    again on another worker when its worker dies (the scheduler's reassignment) or raises (``retries=2``).  A
    chunk writes only its own rows and flag, so a rerun writes the same bytes to the same place: no case is
    lost or doubled."""
    from distributed import as_completed

    if not todo:
        return
    run = uuid.uuid4().hex[:8]  # keys of this run only: cancelling them never touches another sweep's tasks
    futures = [client.submit(_chunk_task, src, job, common, store, hook, retries=2, pure=False,
                             key=f"symgen-sweep-{meta['model_name']}-{run}-chunk-{job['chunk']:06d}")
               for job in todo]
    rows = {f.key: job["rows"] for f, job in zip(futures, todo)}
    try:
        for fut in as_completed(futures):
            try:
                info = fut.result()
            except Exception as e:
                lo, hi = rows[fut.key]
                raise SweepError(f"sweep: the chunk of cases {lo}..{hi - 1} failed on the cluster "
                                 f"({type(e).__name__}: {' '.join(str(e).split())}); the chunks finished are in "
                                 "the store: rerun the same sweep to resume") from e
            finished(info)
    finally:
        client.cancel([f for f in futures if not f.done()])


def sweep_summary(result, output: str = "q", index=None, row: int = -1,
                  percentiles=(5, 25, 50, 75, 95)) -> dict:
    """Statistics over the cases of one output row of a sweep (a result dict or a store): by default the
    final state.  ``index``: coordinates to keep (an int, a list, a slice; default all).  Returns
    ``{"t", "index", "percentiles", "values": (len(percentiles), k), "mean", "std", "min", "max", "n", "n_ok"}``
    over the cases that ran to the end (``ok``)."""
    res = result if isinstance(result, dict) else load_sweep(result, outputs=(output,))
    if output not in res:
        raise SweepError(f"sweep_summary: this sweep has no {output!r} (it kept {[k for k in OUTPUTS if k in res]})")
    A = np.asarray(res[output])[:, row, :]
    idx = np.arange(A.shape[1])
    if index is not None:
        idx = np.atleast_1d(idx[index])
        A = A[:, idx]
    ok = np.asarray(res["ok"], dtype=bool) & np.all(np.isfinite(A), axis=1)
    sel = A[ok]
    if not len(sel):
        raise SweepError("sweep_summary: no case ran to the end")
    return {"output": output, "t": float(np.asarray(res["t"])[row]), "index": idx, "percentiles": tuple(percentiles),
            "values": np.percentile(sel, percentiles, axis=0), "mean": sel.mean(axis=0), "std": sel.std(axis=0),
            "min": sel.min(axis=0), "max": sel.max(axis=0), "n": int(A.shape[0]), "n_ok": int(ok.sum())}
