"""Visible bundled robots: every moving link of every bundled URDF has visual geometry, read by
Pinocchio's own geometry loader; the dynamics and the model hashes are those of 721b2f7, before the visuals.

test/data/bundled_dynamics_721b2f7.json was written from ``git show 721b2f7:urdf/<name>.urdf`` loaded with
``load_robot`` (and the bundled system YAML): per bundled system its ``RobotModel.hash`` and, per joint, the
Pinocchio body inertia (mass, lever, 3×3 rotational inertia) as ``float.hex`` — bit for bit.
"""

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from vi_control.model.bundled import BUNDLED, GENERATED, bundled_urdf, example_robot_urdf, load_bundled
from vi_control.model.generate import planar_chain_urdf
from vi_control.model.marionette import marionette_urdf
from vi_control.model.robot import load_urdf as load_robot
from vi_control.model.visuals import BUNDLED_VISUALS, add_visuals, bundled_visuals, dynamics_text

SNAPSHOT = json.loads((Path(__file__).resolve().parents[1] / "data" / "bundled_dynamics_721b2f7.json").read_text())
URDFS = sorted({u for u, _ in BUNDLED.values()})


def _massive_moving_links(model: pin.Model, xml: str) -> set[str]:
    """Links with mass in the URDF whose pose depends on q (their frame hangs below a moving joint)."""
    root = ET.fromstring(xml)
    massive = {
        lk.get("name")
        for lk in root.findall("link")
        if lk.find("inertial") is not None and float(lk.find("inertial/mass").get("value")) > 0
    }
    return {
        model.frames[f].name
        for f in range(model.nframes)
        if model.frames[f].type == pin.FrameType.BODY
        and model.frames[f].parentJoint > 0
        and model.frames[f].name in massive
    }


@pytest.mark.parametrize("stem", URDFS)
def test_every_moving_link_has_a_visual_in_pinocchios_geometry_model(stem):
    path = bundled_urdf(stem)
    model = pin.buildModelFromUrdf(path)
    visual = pin.buildGeomFromUrdf(model, path, pin.GeometryType.VISUAL)
    drawn = {model.frames[o.parentFrame].name for o in visual.geometryObjects}
    moving = _massive_moving_links(model, Path(path).read_text())
    assert moving and moving <= drawn, f"{stem}: links without a visual: {sorted(moving - drawn)}"
    for o in visual.geometryObjects:  # a color from the URDF's material, opaque
        assert o.meshColor[3] == 1.0 and not np.allclose(o.meshColor[:3], [0.9, 0.9, 0.9]), o.name


@pytest.mark.parametrize("stem", URDFS)
def test_each_links_body_shape_carries_the_links_own_inertia(stem):
    """The first visual of a link with a rotational inertia is a uniform solid (box, cylinder, sphere) of the
    link's mass whose inertia about its centre is the link's (Coal's shape inertia, scaled to the mass); a
    dimension held at the 1 cm minimum (a thin wheel) is the only departure, a few % of the largest moment.
    The lumped inertias of RABBIT and the snakeboard (``fit``) are drawn by the same solids scaled down to the
    link's reach: their inertia is then proportional to the link's (factor < 1)."""
    path = bundled_urdf(stem)
    model = pin.buildModelFromUrdf(path)
    visual = pin.buildGeomFromUrdf(model, path, pin.GeometryType.VISUAL)
    checked = 0
    for link in ET.fromstring(Path(path).read_text()).findall("link"):
        inertial = link.find("inertial")
        if inertial is None:
            continue
        i = inertial.find("inertia")
        I_urdf = np.array([[float(i.get("i" + a + b, i.get("i" + b + a, "0"))) for b in "xyz"] for a in "xyz"], float)
        o = inertial.find("origin")
        R_in = pin.rpy.rpyToMatrix(*[float(v) for v in (o.get("rpy", "0 0 0") if o is not None else "0 0 0").split()])
        I_link = R_in @ I_urdf @ R_in.T
        mass = float(inertial.find("mass").get("value"))
        if np.abs(I_link).max() <= 1e-12 or mass <= 0:
            continue
        geom = visual.geometryObjects[visual.getGeometryId(f"{link.get('name')}_0")]
        frame = model.frames[geom.parentFrame]
        link_to_geom = frame.placement.inverse() * geom.placement
        shape = geom.geometry
        I_shape = shape.computeMomentofInertiaRelatedToCOM() * mass / shape.computeVolume()
        I_drawn = link_to_geom.rotation @ I_shape @ link_to_geom.rotation.T
        factor = np.trace(I_drawn) / np.trace(I_link)
        if BUNDLED_VISUALS.get(stem, {}).get("fit"):
            assert factor <= 1.03, link.get("name")  # (1: a solid that fits unscaled)
        else:
            assert factor == pytest.approx(1, abs=0.03), link.get("name")
        assert np.allclose(I_drawn, factor * I_link, rtol=0, atol=0.03 * factor * np.abs(I_link).max()), link.get(
            "name"
        )
        com = [float(v) for v in (o.get("xyz", "0 0 0") if o is not None else "0 0 0").split()]
        assert np.allclose(link_to_geom.translation, com, atol=1e-6)
        checked += 1
    if stem not in ("pendulum", "cartesian_pendulum", "spherical_pendulum"):  # point masses only
        assert checked


@pytest.mark.parametrize("name", sorted(BUNDLED))
def test_inertias_and_model_hash_are_unchanged_bit_for_bit(name):
    robot = load_bundled(name)
    old = SNAPSHOT[name]
    m = robot.pin_model
    now = {
        m.names[i]: " ".join(
            float(v).hex()
            for v in np.concatenate([[m.inertias[i].mass], m.inertias[i].lever, m.inertias[i].inertia.ravel()])
        )
        for i in range(1, m.njoints)
    }
    assert now == old["inertias"]
    assert {k: float(v).hex() for k, v in robot.masses.items()} == old["masses"]
    assert robot.hash == old["hash"]


def test_the_hash_covers_the_dynamics_only():
    """Visuals, collisions and materials do not change the hash; a change of inertia does. The text with the
    drawing stripped is the text without it: the URDF with add_visuals undone is the plain one, exactly."""
    plain = Path(bundled_urdf("double_pendulum")).read_text()
    stripped = dynamics_text(plain)
    assert "<visual>" in plain and "<visual" not in stripped and "<material" not in stripped
    assert dynamics_text(add_visuals(stripped, collision=True)) == stripped
    base = load_robot(plain)
    assert load_robot(stripped).hash == base.hash
    recolored = plain.replace('rgba="0.18 0.42 0.78 1"', 'rgba="1 0 0 1"')
    assert recolored != plain and load_robot(recolored).hash == base.hash
    heavier = plain.replace('<mass value="1.0"/>', '<mass value="1.5"/>', 1)
    assert load_robot(heavier).hash != base.hash


def test_example_robot_data_models_keep_their_meshes():
    """add_visuals leaves a link that has a visual alone: the panda's meshes stay, nothing is added."""
    xml = example_robot_urdf("panda")
    assert add_visuals(xml) == xml and "<mesh" in xml


@pytest.mark.parametrize("stem", URDFS)
def test_the_files_hold_what_their_generator_draws(stem):
    """urdf/ is reproducible: each file is what `python -m vi_control.model.bundled` (or its model's generator)
    writes from the file's dynamics."""
    text = Path(bundled_urdf(stem)).read_text()
    if stem in GENERATED:
        assert text == planar_chain_urdf(**GENERATED[stem]) + "\n"
    elif stem == "marionette":
        assert text == marionette_urdf()
    else:
        assert text == bundled_visuals(stem, text)
