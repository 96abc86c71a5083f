"""Build and load warnings as Python warnings (symgen.diagnostics, issue 40).

Every warning symgen writes into ``model.warnings`` / ``mb.warnings`` (one string each, unchanged) is also a Python
warning of a subclass of ``symgen.SymgenWarning``, grouped: the warnings of one kind that say the same thing about
several joints (hinges, links) are one Python warning naming them.  Checked on real inputs: iCub (example-robot-data,
floating base: its neck_roll is ill-conditioned at the neutral configuration), Panda's <dynamics> and
<safety_controller> tags, URDF, YAML and MJCF files written here; the expected groups are counted from the files
themselves (ElementTree), not from symgen.  Also: warnings made errors (``simplefilter("error")``) raise the right
class and leave a build's outputs whole, a cache hit warns again, and the CLI prints one line per group.
"""
from __future__ import annotations

import copy
import pickle
import subprocess
import sys
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

import symgen
from helpers import erd_file
from model_factory import NECK
from symgen import diagnostics
from symgen.pipeline.compile import stats

ROOT = Path(__file__).resolve().parents[1]


def _erd(relpath):
    """A file of example-robot-data, or a skip."""
    return erd_file(relpath) or pytest.skip("example-robot-data is not installed")


def _recorded(fn, *args, **kwargs):
    """(fn's result, [warnings.WarningMessage]) with every warning recorded (none filtered or deduplicated)."""
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        out = fn(*args, **kwargs)
    return out, list(rec)


def _of(records, category):
    """The recorded warnings whose class is exactly ``category``."""
    return [r for r in records if r.category is category]


def _tag_groups(path):
    """{(tag, joint names)} of the ignored joint sub-tags of a URDF, read with ElementTree: what the grouped warnings
    must name."""
    found: dict = {}
    for j in ET.parse(path).getroot().iter("joint"):
        for sub in j:
            if sub.tag in ("dynamics", "safety_controller", "calibration", "mimic"):
                found.setdefault(sub.tag, []).append(j.get("name"))
    return found


# ---- the classes ---------------------------------------------------------------------------------------------------

def test_the_categories_are_public_and_form_one_family():
    names = ["SymgenWarning", "IllConditionedWarning", "SingularHingeWarning", "IgnoredElementWarning",
             "ModelInputWarning", "InertiaWarning", "NonOrthogonalModesWarning", "DefaultTransformWarning"]
    for n in names:
        cls = getattr(symgen, n)
        assert cls is getattr(diagnostics, n) and n in symgen.__all__ and n in dir(symgen)
        assert issubclass(cls, symgen.SymgenWarning) and issubclass(cls, UserWarning)
    assert issubclass(symgen.SingularHingeWarning, symgen.IllConditionedWarning)
    assert issubclass(symgen.InertiaWarning, symgen.ModelInputWarning)
    assert issubclass(symgen.NonOrthogonalModesWarning, symgen.ModelInputWarning)
    assert not issubclass(symgen.IgnoredElementWarning, symgen.ModelInputWarning)
    assert set(diagnostics.CATEGORIES) == {getattr(symgen, n) for n in names}


def test_grouping_rules():
    """One group per (category, subject kind, issue), in first-seen order; a group of one keeps its own text;
    at most NAMES_SHOWN names unless the diagnostics ask for all; identical subjectless texts are counted."""
    a = [diagnostics.about("joint", f"j{i}", "<dynamics> ignored (not modelled)", symgen.IgnoredElementWarning)
         for i in range(40)]
    b = diagnostics.about("joint", "j0", "<safety_controller> ignored (not modelled)", symgen.IgnoredElementWarning)
    c = diagnostics.about("link", "l0", "<dynamics> ignored (not modelled)", symgen.IgnoredElementWarning)
    g = diagnostics.note("<gazebo> ignored", symgen.IgnoredElementWarning)
    out = diagnostics.grouped([a[0], b, g, *a[1:], c, g, g])
    assert [cat for cat, _ in out] == [symgen.IgnoredElementWarning] * 4
    texts = [t for _, t in out]
    k = diagnostics.NAMES_SHOWN - 2
    assert texts[0] == ("joint " + ", ".join(f"'j{i}'" for i in range(k)) + f" and {40 - k} more (40 joints): "
                        "<dynamics> ignored (not modelled)")
    assert texts[1] == str(b) == "joint 'j0': <safety_controller> ignored (not modelled)"
    assert texts[2] == "<gazebo> ignored (3 times)"
    assert texts[3] == "link 'l0': <dynamics> ignored (not modelled)"
    many = [diagnostics.Diagnostic(f"hinge 'h{i}': bad", symgen.IllConditionedWarning, ("hinge", f"h{i}"), "bad",
                                   detail=f"D = {i}", name_all=True) for i in range(20)]
    (cat, text), = diagnostics.grouped(many)
    assert cat is symgen.IllConditionedWarning
    assert text == "hinge " + ", ".join(f"'h{i}' (D = {i})" for i in range(20)) + " (20 hinges): bad"
    # a plain string (a Model made by hand) is a SymgenWarning, its subject read from its text
    (cat, text), = diagnostics.grouped(["body 'x': something odd"])
    assert cat is symgen.SymgenWarning and text == "body 'x': something odd"


def test_a_diagnostic_is_a_string_that_keeps_its_category_through_copies():
    d = diagnostics.about("joint", "j", "<dynamics> ignored", symgen.IgnoredElementWarning, detail="x")
    assert d == "joint 'j': <dynamics> ignored" and isinstance(d, str) and hash(d) == hash(str(d))
    for e in (copy.deepcopy(d), pickle.loads(pickle.dumps(d)), copy.copy(d)):
        assert e == d and e.category is symgen.IgnoredElementWarning and e.subject == ("joint", "j")
        assert e.issue == "<dynamics> ignored" and e.detail == "x"


# ---- URDF: ignored elements, grouped --------------------------------------------------------------------------------

N_JOINTS = 6


def _many_ignored_urdf(path):
    """A chain of N_JOINTS revolute joints, each with <dynamics> and <safety_controller>, two with a non-unit axis;
    two <gazebo> blocks, one <transmission>, a massless link in the middle (l3: its children have mass, so no hinge
    is singular)."""
    parts = ["<link name='l0'><inertial><mass value='1'/><inertia ixx='0.1' iyy='0.1' izz='0.1' ixy='0' ixz='0' "
             "iyz='0'/></inertial></link>"]
    for i in range(1, N_JOINTS + 1):
        axis = "0 0 2" if i <= 2 else "0 1 0"
        parts.append(f"<joint name='j{i}' type='revolute'><parent link='l{i - 1}'/><child link='l{i}'/>"
                     f"<origin xyz='0 0 0.2'/><axis xyz='{axis}'/>"
                     "<limit lower='-2' upper='2' effort='5' velocity='3'/><dynamics damping='0.1' friction='0.0'/>"
                     "<safety_controller soft_lower_limit='-1.9' soft_upper_limit='1.9' k_velocity='10'/></joint>")
        mass = "" if i == 3 else (f"<inertial><origin xyz='0 0 0.1'/><mass value='{1 + 0.1 * i}'/><inertia "
                                         "ixx='0.02' iyy='0.03' izz='0.015' ixy='0' ixz='0' iyz='0'/></inertial>")
        parts.append(f"<link name='l{i}'>{mass}</link>")
    parts += ["<gazebo reference='l1'><mu1>0.2</mu1></gazebo>", "<gazebo reference='l2'><mu1>0.2</mu1></gazebo>",
              "<transmission name='t1'><type>x</type></transmission>"]
    path.write_text("<robot name='ignored'>" + "".join(parts) + "</robot>")
    return path


@pytest.fixture(scope="module")
def ignored_urdf(tmp_path_factory):
    return _many_ignored_urdf(tmp_path_factory.mktemp("ignored") / "ignored.urdf")


#: the groups _many_ignored_urdf must give: (category, a phrase of the grouped text)
IGNORED_GROUPS = [(symgen.IgnoredElementWarning, "<gazebo> ignored (actuation and simulator settings are not "
                                                 "modelled) (2 times)"),
                  (symgen.IgnoredElementWarning, "<transmission> ignored (actuation and simulator settings are not "
                                                 "modelled)"),
                  (symgen.ModelInputWarning, "link 'l3' has no <inertial>: massless"),
                  (symgen.IgnoredElementWarning, "joint " + ", ".join(f"'j{i}'" for i in range(1, N_JOINTS + 1))
                   + f" ({N_JOINTS} joints): <dynamics> ignored (not modelled)"),
                  (symgen.IgnoredElementWarning, "joint " + ", ".join(f"'j{i}'" for i in range(1, N_JOINTS + 1))
                   + f" ({N_JOINTS} joints): <safety_controller> ignored (not modelled)"),
                  (symgen.ModelInputWarning, "joint 'j1', 'j2' (2 joints): axis normalized to unit length")]


def test_load_model_warns_one_grouped_warning_per_kind(ignored_urdf):
    model, rec = _recorded(symgen.load_model, ignored_urdf)
    assert sorted((r.category.__name__, str(r.message)) for r in rec) == \
        sorted((c.__name__, t) for c, t in IGNORED_GROUPS)
    # the warnings point at the caller (this file), not into symgen
    assert {r.filename for r in rec} == {__file__}
    # model.warnings keeps one string per item: 2 gazebo + 1 transmission + 1 massless + 2 x 6 joint tags + 2 axes
    assert len(model.warnings) == 2 + 1 + 1 + 2 * N_JOINTS + 2
    assert sum("<dynamics> ignored" in w for w in model.warnings) == N_JOINTS


def test_the_same_groups_from_symgen_build_once(ignored_urdf, tmp_path):
    """symgen.build warns the file's groups once (load_model inside it does not warn them a second time), after
    the build, and again at the second build (a compile cache hit)."""
    for attempt in range(2):
        compiles = stats["compiles"]
        mb, rec = _recorded(symgen.build, ignored_urdf, out=tmp_path / "gen")
        assert sorted((r.category.__name__, str(r.message)) for r in rec) == \
            sorted((c.__name__, t) for c, t in IGNORED_GROUPS)
        assert {r.filename for r in rec} == {__file__}
        assert len(mb.warnings) == 2 + 1 + 1 + 2 * N_JOINTS + 2 and mb.singular_hinges == ()
        if attempt:
            assert stats["compiles"] == compiles        # a cache hit warns all the same


def test_a_real_urdf_panda(tmp_path):
    """example-robot-data's Panda: 9 joints with <dynamics>, 7 with <safety_controller>, one <mimic>: one warning
    per tag, naming exactly the joints that have it (read from the file)."""
    path = _erd("panda_description/urdf/panda.urdf")
    expected = _tag_groups(path)
    assert len(expected["dynamics"]) == 9 and len(expected["safety_controller"]) == 7
    model, rec = _recorded(symgen.load_model, path)
    assert [r.category for r in rec] == [symgen.IgnoredElementWarning] * len(expected)
    for tag, joints in expected.items():
        hits = [str(r.message) for r in rec if f"<{tag}> ignored" in str(r.message)]
        assert len(hits) == 1, (tag, hits)
        names = ", ".join(f"'{j}'" for j in joints)
        assert hits[0].startswith(f"joint {names}" + (f" ({len(joints)} joints)" if len(joints) > 1 else "") + ": ")
    assert len(model.warnings) == sum(len(v) for v in expected.values())


def test_warnings_made_errors_raise_the_right_class(ignored_urdf):
    with warnings.catch_warnings():
        warnings.simplefilter("error", symgen.IgnoredElementWarning)
        with pytest.raises(symgen.IgnoredElementWarning, match=r"<gazebo> ignored"):
            symgen.load_model(ignored_urdf)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(symgen.SymgenWarning):
            symgen.load_model(ignored_urdf)
    # filtered out by their base class: nothing left of ModelInputWarning, the ignored elements still warned
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        warnings.simplefilter("ignore", symgen.ModelInputWarning)
        symgen.load_model(ignored_urdf)
    assert {r.category for r in rec} == {symgen.IgnoredElementWarning}


def test_a_failed_build_raises_its_own_error_not_a_warning(ignored_urdf):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="form must be one of"):
            symgen.build(ignored_urdf, form="no-such-form")


# ---- ill-conditioned and singular hinges ---------------------------------------------------------------------------

def test_ill_conditioned_hinge_warns_at_every_build(tmp_path):
    path = tmp_path / "neck.urdf"
    path.write_text(NECK)
    for attempt in range(2):                      # the second build is a compile cache hit
        compiles = stats["compiles"]
        mb, rec = _recorded(symgen.build, path)
        ill = [r for r in rec if issubclass(r.category, symgen.IllConditionedWarning)]
        assert len(ill) == 1 and ill[0].category is symgen.IllConditionedWarning, [str(r.message) for r in rec]
        assert "hinge 'neck_yaw'" in str(ill[0].message) and "neutral configuration" in str(ill[0].message)
        assert ill[0].filename == __file__
        assert mb.ill_conditioned_hinges == ("neck_yaw",)
        # the massless link 'neck' is the only other warning
        assert [(r.category, str(r.message)) for r in rec if r is not ill[0]] == \
            [(symgen.ModelInputWarning, "link 'neck' has no <inertial>: massless")]
        if attempt:
            assert stats["compiles"] == compiles
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", symgen.ModelInputWarning)       # (pytest.warns passes the others on)
        with pytest.warns(symgen.IllConditionedWarning, match="neck_yaw"):
            symgen.build(path)


#: two massless tips: hinges 'b' and 'c' are structurally singular (no mass or inertia outboard)
TIPS = ("name: tips\nbodies:\n"
        "  - {name: a, parent: newtonian, hinge: {type: PIN}, mass: 1.0, inertia: [0.1, 0.1, 0.1, 0, 0, 0]}\n"
        "  - {name: b, parent: a, hinge: {type: PIN}, mass: 0.0, inertia: [0, 0, 0, 0, 0, 0]}\n"
        "  - {name: c, parent: a, hinge: {type: SLIDER}, mass: 0.0, inertia: [0, 0, 0, 0, 0, 0]}\n")


def test_singular_hinges_are_one_warning_caught_as_ill_conditioned(tmp_path):
    path = tmp_path / "tips.yaml"
    path.write_text(TIPS)
    mb, rec = _recorded(symgen.build, path)
    assert mb.singular_hinges == ("b", "c")
    assert [r.category for r in rec] == [symgen.SingularHingeWarning]
    text = str(rec[0].message)
    assert text.startswith("hinge 'b' (body 'b', subtree 'b'), 'c' (body 'c', subtree 'c') (2 hinges): ")
    assert "armature" in text and "lock" in text
    assert sum("hinge 'b'" in w or "hinge 'c'" in w for w in mb.warnings) == 2      # one string per hinge, as before
    with pytest.warns(symgen.IllConditionedWarning, match="'b'.*'c'"):
        symgen.build(path)


def test_a_warning_made_an_error_leaves_the_build_whole(tmp_path):
    """The warnings come last: with simplefilter("error") the build raises SingularHingeWarning, and its package
    out/<name>/ is complete (no staging folder left), and the next build is a compile cache hit that loads."""
    path = tmp_path / "tips.yaml"
    path.write_text(TIPS)
    out = tmp_path / "gen"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(symgen.SingularHingeWarning, match="'b'"):
            symgen.build(path, out=out)
    pkg = out / "tips"
    names = {p.name for p in pkg.iterdir()}
    assert {"manifest.json", "__init__.py", "tips.c", "tips.h"} <= names and any(n.endswith(".so") for n in names)
    assert [p.name for p in out.iterdir()] == ["tips"]                     # no .tips.* staging folder left
    compiles = stats["compiles"]
    mb, rec = _recorded(symgen.build, path, out=out)
    assert stats["compiles"] == compiles and mb.singular_hinges == ("b", "c") and len(rec) == 1
    from symgen.runtime import load_built

    assert load_built(pkg).singular_hinges == ("b", "c")


def test_icub_floating_is_one_ill_conditioned_warning_naming_neck_roll():
    """example-robot-data's iCub with a floating base: its neck_roll hinge is ill-conditioned at the neutral
    configuration (the head's inertia about it vanishes there), and the build says so in exactly one
    IllConditionedWarning; the ignored <gazebo>, <sensor> and <dynamics> tags are one warning each.  Built in the
    per-kind form: the check reads D from atbi_matrices, which every form builds alike, and the per-kind
    module compiles several times faster than the straight-line one."""
    path = _erd("icub_description/robots/icub.urdf")
    root = ET.parse(path).getroot()
    joints = _tag_groups(path)
    mb, rec = _recorded(symgen.build, path, floating_base=True, form="per_kind")
    ill = [r for r in rec if issubclass(r.category, symgen.IllConditionedWarning)]
    assert len(ill) == 1 and ill[0].category is symgen.IllConditionedWarning
    assert issubclass(ill[0].category, symgen.SymgenWarning)
    assert str(ill[0].message).startswith("hinge 'neck_roll' (body 'neck_2'): at the neutral configuration D = ")
    assert mb.ill_conditioned_hinges == ("neck_roll",) and mb.singular_hinges == ()
    ignored = [str(r.message) for r in _of(rec, symgen.IgnoredElementWarning)]
    top = sorted({el.tag for el in root if el.tag not in ("link", "joint", "material")})    # gazebo, sensor
    assert len(ignored) == len(top) + len(joints), ignored
    for tag in top:
        n = sum(1 for el in root if el.tag == tag)
        assert sum(f"<{tag}> ignored" in t and t.endswith(f"({n} times)") for t in ignored) == 1, (tag, ignored)
    dyn = joints["dynamics"]
    assert [t for t in ignored if "<dynamics>" in t] == [
        "joint " + ", ".join(f"'{j}'" for j in dyn[:diagnostics.NAMES_SHOWN - 2])
        + f" and {len(dyn) - diagnostics.NAMES_SHOWN + 2} more ({len(dyn)} joints): <dynamics> ignored (not modelled)"]
    assert len(rec) == len(ignored) + 1


# ---- YAML, MJCF and the build's other kinds -----------------------------------------------------------------------

def test_non_orthogonal_modes_and_inertia_kinds(tmp_path):
    flex = {"name": "panel", "bodies": [
        {"name": "hub", "parent": "newtonian", "mass": 2.0, "inertia": [0.3, 0.25, 0.2, 0, 0, 0],
         "hinge": {"type": "PIN", "name": "hub_pin"}},
        {"name": "panel", "parent": "hub", "mass": 1.0, "inertia": [0.05, 0.1, 0.09, 0, 0, 0],
         "hinge": {"type": "PIN", "name": "panel_pin", "axis": [0, 1, 0]},
         "flex": {"nodes": [{"name": "mid", "pos": [0.5, 0, 0], "mass": 0.3}, {"name": "tip", "pos": [1, 0, 0], "mass": 0.2}],
                  "modes": [{"frequency": 1.5, "shape": {"mid": [0, 0, 0.4], "tip": [0, 0, 1.0]}},
                            {"frequency": 4.0, "shape": {"mid": [0, 0, -0.5], "tip": [0, 0, 0.6]}}]}}]}
    # m_01 = 0.3 * 0.4 * -0.5 + 0.2 * 1.0 * 0.6 = 0.06: not mass-orthogonal
    path = tmp_path / "panel.yaml"
    path.write_text(yaml.safe_dump(flex))
    model, rec = _recorded(symgen.load_model, path)
    assert [r.category for r in rec] == [symgen.NonOrthogonalModesWarning]
    assert "body 'panel'" in str(rec[0].message) and "0.06" in str(rec[0].message)
    assert issubclass(rec[0].category, symgen.ModelInputWarning)
    bad = ("<robot name='neg'><link name='base'><inertial><mass value='1'/><inertia ixx='0.01' iyy='0.02' izz='0.03' "
           "ixy='0' ixz='0' iyz='0'/></inertial></link><joint name='j1' type='continuous'><parent link='base'/>"
           "<child link='bad'/><axis xyz='0 0 1'/></joint><link name='bad'><inertial><mass value='1'/><inertia "
           "ixx='0.1' iyy='0.1' izz='-0.05' ixy='0' ixz='0' iyz='0'/></inertial></link></robot>")
    (tmp_path / "neg.urdf").write_text(bad)
    model, rec = _recorded(symgen.load_model, tmp_path / "neg.urdf", accept_indefinite_inertia=True)
    assert [r.category for r in rec] == [symgen.InertiaWarning]
    assert str(rec[0].message).startswith("link 'bad': field 'inertia' is not positive semi-definite")


def test_default_transform_out_of_reach(tmp_path):
    doc = {"name": "reach", "bodies": [
        {"name": "a", "parent": "newtonian", "mass": 1.0, "inertia": [0.01, 0.02, 0.03, 0, 0, 0],
         "hinge": {"type": "PIN", "name": "reach", "default_transform": {"xyz": [0, 0, 0.2]}}}]}
    path = tmp_path / "reach.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.warns(symgen.DefaultTransformWarning, match=r"hinge 'reach': default_transform is out of the "
                                                            r"hinge's reach \(its PIN moves in 1 coordinates\)"):
        symgen.build(path)


MJCF = """<mujoco model="dup">
  <worldbody>
    <site name="world_site"/>
    <body name="arm" pos="0 0 1">
      <joint name="j1" type="hinge" axis="0 1 0" damping="0.1"/>
      <geom name="arm" type="capsule" fromto="0 0 0 0.5 0 0" size="0.05"/>
      <site name="arm_tip" pos="0.5 0 0"/>
      <body name="fore" pos="0.5 0 0">
        <joint name="j2" type="hinge" axis="0 1 0" damping="0.1"/>
        <geom name="fore" type="capsule" fromto="0 0 0 0.5 0 0" size="0.04"/>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


def test_mjcf_kinds():
    """A geom named like its body becomes the frame 'geom:<name>' (ModelInputWarning, both geoms in one warning);
    the damping and contacts are not imported and the world's site is no frame (IgnoredElementWarning)."""
    pytest.importorskip("mujoco")
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "dup.xml"
        path.write_text(MJCF)
        model, rec = _recorded(symgen.load_model, path)
    got = sorted((r.category.__name__, str(r.message)) for r in rec)
    assert got[0] == ("IgnoredElementWarning", "not imported (not tree dynamics): contacts (2 colliding geoms); "
                                               "damping (j1, j2)")
    assert got[1] == ("IgnoredElementWarning", "sites and geoms on the world body are not frames: world_site")
    assert got[2] == ("ModelInputWarning", "geom 'arm' ('geom:arm'), 'fore' ('geom:fore') (2 geoms): frame renamed "
                                           "(the name is taken)")
    assert len(got) == 3 and {f.name for f in model.frames} >= {"geom:arm", "geom:fore", "arm_tip"}


# ---- the command line --------------------------------------------------------------------------------------------

def test_cli_prints_one_line_per_group(ignored_urdf, tmp_path):
    out = subprocess.run([sys.executable, "-m", "symgen", "build", str(ignored_urdf), "--out", str(tmp_path / "gen")],
                         capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    lines = [ln for ln in out.stderr.splitlines() if ln.startswith("warning: ")]
    assert sorted(lines) == sorted(f"warning: {ignored_urdf}: {t}" for _, t in IGNORED_GROUPS), out.stderr
    assert "Warning:" not in out.stderr          # printed by the CLI, not by Python's warning display
