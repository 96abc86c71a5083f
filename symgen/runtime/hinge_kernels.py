"""numpy wrapper of one hinge spec's compiled kernels (no sympy, no jinja2)."""
from __future__ import annotations

import numpy as np


class HingeKernels:
    """The C kernels of one hinge spec with numpy in / numpy out.

    Every method takes one state (``q`` of shape ``(nq,)``) or a batch (``(N, nq)``; ``u`` likewise with
    ``nu``) and returns ``(*shape)`` or ``(N, *shape)``; the loop over the batch runs in C.  ``out=`` takes a
    preallocated C-contiguous float64 array of the result's shape.  ``lib`` and ``ffi``: the cffi module the
    kernels live in (``module``: anything with ``lib`` and ``ffi``, such as a model's ``ModelBinding``).
    """

    def __init__(self, module, manifest: dict, module_name: str = "", path=None):
        self.lib, self.ffi = module.lib, module.ffi
        self.manifest = manifest
        self.nq, self.nu = manifest["nq"], manifest["nu"]
        self.label = manifest["label"]
        self.module_name, self.path = module_name, path
        self.kernel_names = tuple(manifest["kernels"])

    def __repr__(self):
        return f"<symgen.HingeKernels {self.label} kernels={list(self.kernel_names)}>"

    def flops(self) -> dict:
        """``{kernel name: operation count}``: sympy's ``count_ops`` of each kernel's generated statements, for
        one state."""
        return {k: v["flops"] for k, v in self.manifest["kernels"].items()}

    # ---- plumbing
    def _arr(self, x, n, what):
        a = np.ascontiguousarray(x, dtype=np.float64)
        if a.ndim not in (1, 2) or a.shape[-1] != n:
            raise ValueError(f"{self.label}: {what} must have shape ({n},) or (N, {n}), got {np.shape(x)}")
        return a

    def _ptr(self, a):
        if a is None or a.size == 0:
            return self.ffi.NULL
        return self.ffi.from_buffer("double[]", a)

    def _call(self, name, q, u=None, p=None, out=None):
        info = self.manifest["kernels"].get(name)
        if info is None:
            raise AttributeError(f"{self.label} has no kernel {name!r}")
        q = self._arr(q, self.nq, "q")
        single = q.ndim == 1
        n = 1 if single else q.shape[0]
        args = {"q": q}
        if "u" in info["inputs"]:
            u = self._arr(u, self.nu, "u")
            if (u.ndim == 1) != single or (not single and u.shape[0] != n):
                raise ValueError(f"{self.label}: q and u must both be single states or batches of equal length, "
                                 f"got {q.shape} and {u.shape}")
            args["u"] = u
        if "p" in info["inputs"]:
            p = np.ascontiguousarray(p, dtype=np.float64)
            if p.shape != ((6, 6) if single else (n, 6, 6)):
                raise ValueError(f"{self.label}: P must have shape {(6, 6) if single else (n, 6, 6)}, got {p.shape}")
            args["p"] = p
        shape = tuple(info["out_shape"])
        full = shape if single else (n, *shape)
        if out is None:
            out = np.empty(full)
        elif out.shape != full or out.dtype != np.float64 or not out.flags.c_contiguous:
            raise ValueError(f"{self.label}: out must be a C-contiguous float64 array of shape {full}")
        fn = getattr(self.lib, info["c_name"] + "_batch")
        status = fn(n, self._ptr(args.get("q")), self._ptr(args.get("u")), self._ptr(args.get("p")),
                    self.ffi.from_buffer("double[]", out, require_writable=True) if out.size else self.ffi.NULL)
        if info["status"] and status:
            raise np.linalg.LinAlgError(f"{self.label}: D = H P H* is not positive definite "
                                        f"(state {status - 1} of the batch)")
        return out

    # ---- kernels
    def transform(self, q, out=None):
        """4x4 X_op(Q)."""
        return self._call("transform", q, out=out)

    def coord_map(self, q, out=None):
        """6 x nU pframe coord map."""
        return self._call("coord_map", q, out=out)

    def oframe_coord_map(self, q, out=None):
        """6 x nU coord map in oframe axes, ``diag(R_op, R_op) H*_p``."""
        return self._call("oframe_coord_map", q, out=out)

    def qdot_map(self, q, out=None):
        """nQ x nU ``N(Q)``: ``Q_dot = N U``."""
        return self._call("qdot_map", q, out=out)

    def coord_map_dot(self, q, u, out=None):
        """6 x nU time derivative of the pframe coord map along ``Q_dot = N U``."""
        return self._call("coord_map_dot", q, u, out=out)

    def bias(self, q, u, out=None):
        """6-vector H*_p_dot U."""
        return self._call("bias", q, u, out=out)

    def pose_gradient(self, q, out=None):
        """6 x nU map from U to ``d/dt [log R_op; l_op]`` (``d[log R; l]/dQ N``)."""
        return self._call("pose_gradient", q, out=out)

    def ortho_complement(self, q, out=None):
        """6 x (6 - nU): the constraint wrench directions at the pnode (``C^T H*_p = 0``)."""
        return self._call("ortho_complement", q, out=out)

    def oframe_ortho_complement(self, q) -> np.ndarray:
        """6 x (6 - nU): :meth:`ortho_complement` in oframe axes, ``diag(R_op, R_op) C``, so that
        ``C_o^T oframe_coord_map = 0`` (Karana ``oframeOrthoComplement``)."""
        R = self.transform(q)[..., :3, :3]
        C = self.ortho_complement(q)
        return np.concatenate([R @ C[..., :3, :], R @ C[..., 3:, :]], axis=-2)

    def oframe_deriv_rel_rates(self, q, u) -> np.ndarray:
        """d/dt [log R_op; l_op] of the hinge (Karana oframeDerivRelRates on the hinge's onode -> pnode):
        ``pose_gradient(q) @ u``."""
        G = self.pose_gradient(q)
        return np.einsum("...ij,...j->...i", G, self._arr(u, self.nu, "u"))

    def sanitize(self, q, out=None):
        """Equivalent coordinates (|r| <= pi for SPHERICAL, unit quaternions); identity copy otherwise."""
        if "sanitize" not in self.manifest["kernels"]:
            return np.array(self._arr(q, self.nq, "q"), copy=True)
        return self._call("sanitize", q, out=out)

    def atbi(self, q, P):
        """ATBI hinge step for articulated inertia P (6x6 at the pnode; only its upper triangle is read).
        Returns dict D, Dinv, G, Pplus; raises LinAlgError when D is not positive definite."""
        raw = self._call("atbi", q, p=P)
        nu = self.nu
        a, b, c = nu * nu, 2 * nu * nu, 2 * nu * nu + 6 * nu
        lead = raw.shape[:-1]
        return {"D": raw[..., :a].reshape(*lead, nu, nu), "Dinv": raw[..., a:b].reshape(*lead, nu, nu),
                "G": raw[..., b:c].reshape(*lead, 6, nu), "Pplus": raw[..., c:].reshape(*lead, 6, 6)}


def load_generated(path):
    """(module, manifest) of a generated folder: its ``manifest.json`` and the compiled module it names."""
    import importlib.util
    import json
    import sys
    from pathlib import Path

    path = Path(path)
    manifest = json.loads((path / "manifest.json").read_text())
    name = manifest["module"]
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path / manifest["so"])
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        sys.modules[name] = mod
    return sys.modules[name], manifest


def load_hinge_library(path) -> dict:
    """Load ``generated/hinges/`` (written by ``python -m symgen build hinges``) without sympy or jinja2:
    ``{hinge type: HingeKernels}`` for the default-parameter spec of every hinge type."""
    from pathlib import Path

    mod, manifest = load_generated(path)
    so = Path(path) / manifest["so"]
    return {t: HingeKernels(mod, m, module_name=manifest["module"], path=so) for t, m in manifest["hinges"].items()}
