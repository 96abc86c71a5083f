"""Mass properties checked as the robotics ecosystem checks them (DESIGN.md §6).

Pinocchio and MuJoCo load real robot descriptions whose CAD exports are exact only up to rounding, so:

* **errors** (name the file, the body or link, the field): a non-finite mass, CoM or inertia entry, a
  negative mass, an inertia that is not symmetric, and a rotational inertia with a clearly negative
  principal moment that no composite makes good (below);
  (``accept_indefinite_inertia=True`` loads it anyway, with a warning, as Pinocchio does);
* **accepted silently**: positive *semi*-definite inertia — point masses, massless or zero-inertia sensor
  links, principal moments that are zero up to rounding (``-2e-22`` beside ``3e-6``).  "Up to rounding" is
  relative to the body's scale: ``PSD_RTOL`` times the largest of its principal moments, of ``m |c|^2`` and
  of a millionth of the model's largest principal moment;
* **warnings** (name the link): a clearly negative principal moment of a link that is welded (LOCKED /
  URDF ``fixed``) to others whose rigid composite is positive semi-definite — the composite is what the
  dynamics sees; and a violation of the triangle inequality ``I1 + I2 >= I3`` of the principal moments,
  which no rigid body has but which the dynamics tolerates (Pinocchio accepts it; MuJoCo refuses it unless
  ``balanceinertia`` is set).  ``balance_inertia=True`` is MuJoCo's fix as an opt-in: such an inertia is
  replaced by the isotropic one with the mean principal moment, with a warning saying so (never silently).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from .spec import NEWTONIAN, Model, ModelError

#: principal moments down to -PSD_RTOL x the body's scale count as zero (rounding in CAD exports)
PSD_RTOL = 1e-8
#: a triangle-inequality violation below TRIANGLE_RTOL x the largest moment is rounding: not reported
TRIANGLE_RTOL = 1e-9


def check_mass_fields(where_err, m, com, J) -> None:
    """The hard errors of one body: ``where_err(field, message)`` builds the ModelError."""
    if not np.isfinite(m):
        raise where_err("mass", f"must be a finite number, got {m}")
    if m < 0:
        raise where_err("mass", f"must be >= 0, got {m}")
    if not np.all(np.isfinite(com)):
        raise where_err("com", f"must be finite, got {list(com)}")
    if not np.all(np.isfinite(J)):
        raise where_err("inertia", "must be finite numbers")
    if not np.allclose(J, J.T, atol=1e-9 * max(1.0, float(np.abs(J).max()))):
        raise where_err("inertia", "must be symmetric")


def principal_moments(J) -> np.ndarray:
    J = np.asarray(J, float)
    return np.linalg.eigvalsh((J + J.T) / 2)


def _spatial(m, c, J):
    """(m, h = m c, J about the frame origin) of a body, frame axes."""
    c = np.asarray(c, float)
    return m, m * c, np.asarray(J, float) + m * (np.dot(c, c) * np.eye(3) - np.outer(c, c))


def _composite(model: Model, group: list) -> tuple:
    """Mass, CoM and inertia about the CoM (in the first body's axes) of bodies welded together."""
    first = group[0]
    X = {first: np.eye(4)}
    for name in group[1:]:          # parent before child: every parent of the group is placed already
        b = model.body(name)
        X[name] = X[b.parent] @ b.onode.matrix @ b.pnode.inverse().matrix
    m_tot, h_tot, J_tot = 0.0, np.zeros(3), np.zeros((3, 3))
    for name in group:
        b = model.body(name)
        R, p = X[name][:3, :3], X[name][:3, 3]
        m, h, Jo = _spatial(b.mass, b.com, b.inertia)
        # move (m, h, J about the body origin) to the group frame: rotate, then shift the origin by p
        hr, Jr = R @ h, R @ Jo @ R.T
        J_g = Jr + m * (np.dot(p, p) * np.eye(3) - np.outer(p, p)) + 2 * np.dot(p, hr) * np.eye(3) \
            - np.outer(p, hr) - np.outer(hr, p)
        m_tot, h_tot, J_tot = m_tot + m, h_tot + hr + m * p, J_tot + J_g
    c = h_tot / m_tot if m_tot > 0 else np.zeros(3)
    return m_tot, c, J_tot - m_tot * (np.dot(c, c) * np.eye(3) - np.outer(c, c))


def welded_groups(model: Model) -> dict:
    """{body: the bodies welded to it (LOCKED hinges, URDF fixed joints), parent before child}."""
    root = {}
    for b in model.bodies:
        root[b.name] = root[b.parent] if (b.hinge_type == "LOCKED" and b.parent != NEWTONIAN) else b.name
    groups: dict = {}
    for b in model.bodies:
        groups.setdefault(root[b.name], []).append(b.name)
    return {name: groups[root[name]] for name in root}


def validate_inertias(model: Model, err, balance_inertia: bool = False, accept_indefinite: bool = False) -> Model:
    """Check every body's rotational inertia (see the module docstring); ``err(body, field, message)``
    builds the loader's ModelError.  Returns the model with warnings added (and, with
    ``balance_inertia``, triangle-violating inertias replaced).  ``accept_indefinite`` turns the error for
    a clearly negative principal moment into a warning (Pinocchio loads such files; MuJoCo does not)."""
    moments = {b.name: principal_moments(b.inertia) for b in model.bodies}
    model_scale = max([float(np.abs(ev).max()) for ev in moments.values()] + [0.0])
    warnings, replaced = list(model.warnings), {}
    groups = None

    def scale(m, com, ev):
        return max(float(np.abs(ev).max()), m * float(np.dot(com, com)), 1e-6 * model_scale)

    for b in model.bodies:
        ev = moments[b.name]
        s = scale(b.mass, np.asarray(b.com), ev)
        if ev[0] < -PSD_RTOL * s:
            groups = groups or welded_groups(model)
            group = groups[b.name]
            others = [g for g in group if g != b.name]
            if others:
                m, c, J = _composite(model, group)
                evc = principal_moments(J)
                if evc[0] >= -PSD_RTOL * scale(m, c, evc):
                    warnings.append(f"link '{b.name}': field 'inertia' has a negative principal moment "
                                    f"({ev[0]:.3g} of {ev.tolist()}); accepted because the rigid composite it forms "
                                    f"through fixed joints with {', '.join(repr(o) for o in others)} is positive "
                                    "semi-definite")
                    continue
            what = (f"principal moment {ev[0]:.6g} is negative (principal moments {ev.tolist()})"
                    + (f", and so is the composite it forms through fixed joints with "
                       f"{', '.join(repr(o) for o in others)}" if others else ""))
            if not accept_indefinite:
                raise err(b.name, "inertia", f"must be positive semi-definite: {what}; fix the file, or load it "
                                             "anyway as Pinocchio does with accept_indefinite_inertia=True "
                                             "(--accept-indefinite-inertia)")
            warnings.append(f"link '{b.name}': field 'inertia' is not positive semi-definite: {what}; accepted "
                            "(accept_indefinite_inertia): no rigid body has such an inertia")
            continue
        gap = ev[2] - ev[0] - ev[1]
        if gap > max(TRIANGLE_RTOL * float(ev[2]), PSD_RTOL * s):
            rel = gap / ev[2]
            if balance_inertia:
                mean = float(ev.sum()) / 3
                replaced[b.name] = tuple(tuple(float(x) for x in row) for row in mean * np.eye(3))
                warnings.append(f"link '{b.name}': field 'inertia' violates the triangle inequality "
                                f"({ev[0]:.6g} + {ev[1]:.6g} < {ev[2]:.6g}); balance_inertia replaced it by "
                                f"{mean:.6g} I (the mean principal moment, as MuJoCo's balanceinertia)")
            else:
                warnings.append(f"link '{b.name}': field 'inertia' violates the triangle inequality "
                                f"({ev[0]:.6g} + {ev[1]:.6g} < {ev[2]:.6g}, by {100 * rel:.3g}% of the largest "
                                "moment): no rigid body has such an inertia, the dynamics accept it; "
                                "balance_inertia=True (--balance-inertia) makes it isotropic")
    bodies = [dataclasses.replace(b, inertia=replaced[b.name]) if b.name in replaced else b for b in model.bodies]
    return dataclasses.replace(model, bodies=bodies, warnings=warnings)


def model_err(path: str, kind: str = "body"):
    """``err(body, field, message)`` for :func:`validate_inertias`, in the loaders' message format."""
    def err(body, field_, message):
        return ModelError(f"{path}: {kind} '{body}': field '{field_}' {message}")
    return err
