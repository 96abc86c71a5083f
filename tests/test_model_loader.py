"""Model files: each kind of bad input gets one ModelError naming the file, the body/joint and the field;
a hypothesis fuzz throws hundreds of malformed files at the loader."""
from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from symgen.model import ModelError, load_model

ROOT = Path(__file__).resolve().parents[1]
GOOD = yaml.safe_load((ROOT / "examples" / "models" / "double_pendulum.yaml").read_text())
ARM = (ROOT / "examples" / "models" / "arm7.urdf").read_text()


def _write(tmp_path, doc, suffix=".yaml", name="m"):
    p = tmp_path / f"{name}{suffix}"
    p.write_text(doc if isinstance(doc, str) else (json.dumps(doc) if suffix == ".json" else yaml.safe_dump(doc)))
    return p


def _mutated(fn):
    d = copy.deepcopy(GOOD)
    fn(d)
    return d


CASES = [
    ("missing key", lambda d: d["bodies"][0].pop("mass"), ["body 'link1'", "missing required key 'mass'"]),
    ("unknown key", lambda d: d["bodies"][1].update(colour="red"), ["body 'link2'", "unknown key(s) colour"]),
    ("unknown top key", lambda d: d.update(units="SI"), ["model", "unknown key(s) units"]),
    ("unknown parent", lambda d: d["bodies"][1].update(parent="link9"), ["body 'link2'", "unknown parent 'link9'"]),
    ("cycle", lambda d: (d["bodies"][0].update(parent="link2")), ["cycle"]),
    ("duplicate body", lambda d: d["bodies"][1].update(name="link1"), ["body 'link1'", "duplicate name"]),
    ("duplicate hinge", lambda d: d["bodies"][1]["hinge"].update(name="shoulder"), ["body 'link2'", "duplicate hinge name"]),
    ("duplicate frame", lambda d: d["bodies"][1]["frames"][0].update(name="link1"), ["frames[0]", "duplicate frame"]),
    ("negative mass", lambda d: d["bodies"][0].update(mass=-2.0), ["body 'link1'", "'mass' must be >= 0"]),
    ("bool mass", lambda d: d["bodies"][0].update(mass=True), ["'mass' must be a finite number"]),
    ("inertia not PSD", lambda d: d["bodies"][0].update(inertia=[1, 1, -1, 0, 0, 0]),
     ["body 'link1'", "'inertia' must be positive semi-definite"]),
    ("inertia asymmetric", lambda d: d["bodies"][0].update(inertia=[[1, 0.5, 0], [0, 1, 0], [0, 0, 1]]), ["symmetric"]),
    ("inertia shape", lambda d: d["bodies"][0].update(inertia=[1, 2]), ["'inertia' must be a 3x3"]),
    ("zero axis", lambda d: d["bodies"][0]["hinge"].update(axis=[0, 0, 0]), ["body 'link1'", "hinge", "axis", "zero"]),
    ("unknown hinge", lambda d: d["bodies"][0]["hinge"].update(type="WARP"), ["body 'link1'", "unknown hinge type"]),
    ("hinge param", lambda d: d["bodies"][0]["hinge"].update(pitch=1), ["body 'link1'", "unknown parameter"]),
    ("bad xyz", lambda d: d["bodies"][1].update(onode={"xyz": [0, 0]}), ["field 'onode'", "'xyz' must be 3 finite numbers"]),
    ("rpy and quat", lambda d: d["bodies"][1].update(onode={"rpy": [0, 0, 0], "quat": [0, 0, 0, 1]}), ["either 'rpy' or 'quat'"]),
    ("non-unit quat", lambda d: d["bodies"][1].update(pnode={"quat": [0, 0, 0, 2]}), ["unit quaternion"]),
    ("reserved name", lambda d: d["bodies"][0].update(name="newtonian"), ["reserved"]),
    ("no bodies", lambda d: d.update(bodies=[]), ["'bodies' must be a non-empty list"]),
    ("loop frame", lambda d: d.update(loops=[{"name": "c", "source": "tip", "target": "nowhere", "hinge": "BALL"}]),
     ["loops[0]", "unknown frame 'nowhere'"]),
    ("q0 length", lambda d: d["bodies"][0]["hinge"].update(q0=[0.1, 0.2]), ["body 'link1'", "'hinge.q0' must be 1"]),
    ("q0 and default", lambda d: d["bodies"][0]["hinge"].update(q0=[0.1], default_transform={"rpy": [0, 0, 1]}),
     ["body 'link1'", "either 'q0' or 'default_transform'"]),
]


@pytest.mark.parametrize("what,mutate,words", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_bad_model_files(tmp_path, what, mutate, words, suffix):
    p = _write(tmp_path, _mutated(mutate), suffix)
    with pytest.raises(ModelError) as exc:
        load_model(p)
    msg = str(exc.value)
    assert msg.startswith(str(p)), msg
    for w in words:
        assert w in msg, f"{w!r} not in {msg!r}"


@pytest.mark.parametrize("text,suffix,words", [
    ("bodies: [ {name: a,", ".yaml", ["malformed YAML"]),
    ('{"bodies": [', ".json", ["malformed JSON"]),
    ("- just\n- a list\n", ".yaml", ["expected a mapping"]),
    ("<robot name='r'><link name='a'>", ".urdf", ["malformed XML"]),
    ("<robot name='r'/>", ".urdf", ["no <link>"]),
    ("<robot><link name='a'/></robot>", ".urdf", ["<robot> has no 'name'"]),
    ("<robot name='r'><link name='a'/><link name='a'/></robot>", ".urdf", ["link 'a'", "duplicate name"]),
    ("<robot name='r'><link name='a'/><link name='b'/><joint name='j' type='revolute'><parent link='a'/><child link='c'/>"
     "</joint></robot>", ".urdf", ["joint 'j'", "field 'child'", "unknown link 'c'"]),
    ("<robot name='r'><link name='a'/><link name='b'/><joint name='j' type='continuous'><parent link='a'/><child link='b'/>"
     "<axis xyz='0 0 0'/></joint></robot>", ".urdf", ["joint 'j'", "axis", "zero"]),
    ("<robot name='r'><link name='a'/><link name='b'/><joint name='j' type='gear'><parent link='a'/><child link='b'/>"
     "</joint></robot>", ".urdf", ["joint 'j'", "unsupported joint type 'gear'"]),
    ("<robot name='r'><link name='a'><inertial><mass value='-1'/><inertia ixx='1' iyy='1' izz='1'/></inertial></link></robot>",
     ".urdf", ["link 'a'", "mass"]),
    ("<robot name='r'><link name='a'/><link name='b'/></robot>", ".urdf", ["expected one root link"]),
    ("name: x", ".toml", ["unknown model format"]),
])
def test_malformed_files(tmp_path, text, suffix, words):
    p = _write(tmp_path, text, suffix)
    with pytest.raises(ModelError) as exc:
        load_model(p)
    for w in words:
        assert w in str(exc.value), str(exc.value)


def test_missing_file():
    with pytest.raises(ModelError, match="no such file"):
        load_model("does/not/exist.yaml")


def test_urdf_warnings_and_mapping(tmp_path):
    """mimic, transmission and unknown tags are reported; the mimic joint stays independent; planar ->
    CUSTOM [LINEAR, LINEAR, PIN]; a non-unit axis is normalized with a warning; a link without inertial
    is massless; the inertial origin rotates the inertia into link axes."""
    urdf = ARM.replace('<joint name="joint7" type="continuous">',
                       '<joint name="joint7" type="continuous">\n    <mimic joint="joint6" multiplier="1"/>')
    urdf = urdf.replace("</robot>", '''  <link name="slider"/>
  <joint name="plane" type="planar"><parent link="tool"/><child link="slider"/><axis xyz="0 0 2"/></joint>
  <transmission name="t1"/>
  <sensor name="cam"/>
</robot>''')
    p = _write(tmp_path, urdf, ".urdf", "arm_mimic")
    m = load_model(p)
    text = "\n".join(m.warnings)
    assert "joint 'joint7': <mimic> ignored (the joint stays independent" in text
    assert "<transmission> ignored" in text and "unsupported tag <sensor>" in text
    assert "normalized to unit length" in text and "link 'slider' has no <inertial>: massless" in text
    b = m.body("slider")
    assert b.hinge_type == "CUSTOM" and dict(b.hinge_params)["subhinges"] == ("LINEAR", "LINEAR", "PIN")
    assert np.allclose(dict(b.hinge_params)["axes"][2], (0, 0, 1))
    assert m.body("joint7".replace("joint", "link")).hinge_type == "PIN"
    # inertial rpy honoured: link2 has rpy (0.1, 0, 0) on a diagonal inertia
    from symgen.model import rpy_matrix

    R = rpy_matrix((0.1, 0, 0))
    assert np.allclose(np.array(m.body("link2").inertia), R @ np.diag([0.018, 0.0175, 0.007]) @ R.T)


def test_cli_reports_model_errors_in_one_line(tmp_path):
    """A model error exits 1 (usage errors exit 2) with one line naming the body and the field."""
    p = _write(tmp_path, _mutated(lambda d: d["bodies"][0].update(mass=-1)), ".yaml", "bad")
    out = subprocess.run([sys.executable, "-m", "symgen", "build", str(p)], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert out.stderr.startswith("symgen: error:") and "body 'link1'" in out.stderr and out.stderr.count("\n") == 1


# ------------------------------------------------------------------------------------------------
# fuzz
# ------------------------------------------------------------------------------------------------

junk = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20), st.floats(allow_nan=True, allow_infinity=True),
              st.text(max_size=8)),
    lambda inner: st.one_of(st.lists(inner, max_size=5), st.dictionaries(st.text(max_size=6), inner, max_size=4)),
    max_leaves=12)


def _paths(d, prefix=()):
    out = [prefix]
    if isinstance(d, dict):
        for k, v in d.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(d, list):
        for i, v in enumerate(d):
            out += _paths(v, prefix + (i,))
    return out


@st.composite
def mutated_docs(draw):
    d = copy.deepcopy(GOOD)
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(d)
        path = draw(st.sampled_from(paths[1:]))
        parent = d
        for k in path[:-1]:
            parent = parent[k]
        action = draw(st.sampled_from(["delete", "replace", "add"]))
        if action == "delete":
            del parent[path[-1]]
        elif action == "replace":
            parent[path[-1]] = draw(junk)
        elif isinstance(parent, dict):
            parent[draw(st.text(max_size=6))] = draw(junk)
        else:
            parent.append(draw(junk))
    return d


def _load_expect_model_error(path):
    try:
        load_model(path)
    except ModelError as e:
        assert str(e).startswith(str(path)), str(e)
    # a mutation may happen to leave a valid model: then loading simply succeeds


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(doc=mutated_docs(), as_json=st.booleans())
def test_fuzz_mutated_models(tmp_path, doc, as_json):
    suffix = ".json" if as_json else ".yaml"
    try:
        text = json.dumps(doc) if as_json else yaml.safe_dump(doc)
    except (ValueError, TypeError, yaml.YAMLError):
        return  # not serializable (e.g. NaN in strict JSON): nothing to load
    p = tmp_path / f"fuzz{suffix}"
    p.write_text(text)
    _load_expect_model_error(p)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(0, len(ARM)), insert=st.text(alphabet="<>/=\"' abcxyz0123456789.-", max_size=20),
       drop=st.integers(0, 40))
def test_fuzz_mutated_urdf(tmp_path, cut, insert, drop):
    text = ARM[:cut] + insert + ARM[cut + drop:]
    p = tmp_path / "fuzz.urdf"
    p.write_text(text)
    _load_expect_model_error(p)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=200), suffix=st.sampled_from([".yaml", ".json", ".urdf"]))
def test_fuzz_garbage(tmp_path, text, suffix):
    p = tmp_path / f"garbage{suffix}"
    p.write_text(text)
    _load_expect_model_error(p)
