"""Every robot of example-robot-data that Pinocchio loads also loads here: load only, no compilation.

The list is not hand-picked: every URDF under ``example_robot_data_dir()`` is tried. Pinocchio's own parser is
the reference: a URDF it rejects is skipped (and counted). Robots that need a setting say which and why in
``NEEDS``; each of those is also checked to *fail* without it, so the table cannot go stale. Every loaded model
is compared with Pinocchio's own model of the same file: total mass (every body of its model, the root link
too) and, for mimic joints, one holonomic coupling per ``<mimic>`` element.
"""

import logging
import xml.etree.ElementTree as ET

import numpy as np
import pinocchio as pin
import pytest

from vi_control.model import URDFError, load_robot
from vi_control.model.bundled import example_robot_data_dir

ROOT = example_robot_data_dir()
URDFS = sorted(str(p.relative_to(ROOT)) for p in ROOT.rglob("*.urdf"))

REPAIR = {"inertia_policy": "repair"}
# relative path -> (system YAML, why). Everything else loads with the defaults (inertia_policy: strict).
NEEDS = {
    **{
        p: (REPAIR, "a CAD inertia misses the triangle inequality by rounding")
        for p in (
            "allegro_hand_description/urdf/allegro_left_hand.urdf",
            "allegro_hand_description/urdf/allegro_right_hand.urdf",
            "anymal_c_simple_description/urdf/anymal.urdf",
            "romeo_description/urdf/romeo_small.urdf",
            "pr2_description/urdf/pr2.urdf",
        )
    },
    **{
        p: (REPAIR, "the base inertia (0, 0, 3e-6) is a flat disc: no body has it")
        for p in (
            "anymal_b_simple_description/robots/anymal-kinova.urdf",
            "anymal_b_simple_description/robots/anymal.urdf",
            "b1_description/urdf/b1-z1.urdf",
            "b1_description/urdf/b1.urdf",
            "go1_description/urdf/go1.urdf",
            "hyq_description/robots/hyq_no_sensors.urdf",
        )
    },
    **{
        p: (REPAIR, "antenna inertias with a negative principal moment (-3.5e-8)")
        for p in (
            "tiago_description/robots/tiago.urdf",
            "tiago_description/robots/tiago_dual.urdf",
            "tiago_description/robots/tiago_no_hand.urdf",
        )
    },
    "bolt_description/robots/bolt.urdf": (REPAIR, "massless feet carry a rotational inertia"),
    "romeo_description/urdf/romeo.urdf": (
        {"prescribed": ["LHand", "RHand"]},
        "the hands and their mimic fingers are massless: kinematic joints, not dynamic ones",
    ),
    "romeo_description/urdf/romeo_laas_small.urdf": (
        {**REPAIR, "prescribed": ["l_gripper_joint", "r_gripper_joint"]},
        "rounded CAD inertias; massless grippers are kinematic",
    ),
    "alex_description/urdf/alex_psyonic_hands.urdf": (
        "mimic_override",
        "its <mimic> tags name 'index_q1' where the joint is 'Left_index_q1': the system YAML "
        "states the intended couplings (and rounded CAD inertias need repair)",
    ),
}


def _mimics(xml: str) -> list[tuple[str, str, float, float]]:
    """(joint, mimicked, multiplier, offset) of every <mimic> of a moving joint (comments are not elements;
    talos_reduced keeps the <mimic> of grippers it made fixed)."""
    out = []
    for j in ET.fromstring(xml).iter("joint"):
        m = j.find("mimic")
        if m is not None and j.get("type") != "fixed":
            out.append((j.get("name"), m.get("joint"), float(m.get("multiplier", 1)), float(m.get("offset", 0))))
    return out


def _system(rel: str, xml: str) -> dict | None:
    if rel not in NEEDS:
        return None
    system = NEEDS[rel][0]
    if system == "mimic_override":  # the side prefix the URDF forgot ('Left_index_q2' mimics 'Left_index_q1')
        joints = {j.get("name") for j in ET.fromstring(xml).iter("joint")}
        fixes = [
            {"type": "joints", "joints": [j, j.split("_")[0] + "_" + m], "coefficients": [1.0, -a], "offset": b}
            for j, m, a, b in _mimics(xml)
            if m not in joints
        ]
        assert fixes and all(f["joints"][1] in joints for f in fixes)
        return {**REPAIR, "constraints": fixes}
    return system


@pytest.mark.parametrize("rel", URDFS)
def test_every_robot_pinocchio_loads_loads_here(rel, caplog):
    xml = (ROOT / rel).read_text(encoding="utf-8")
    try:
        reference = pin.buildModelFromXML(xml)
    except (RuntimeError, ValueError) as e:  # the reference parser refuses it: nothing to match
        pytest.skip(f"Pinocchio rejects {rel}: {e}")
    system = _system(rel, xml)
    with caplog.at_level(logging.WARNING, logger="vi_control.model"):
        robot = load_robot(str(ROOT / rel), system)
    repaired = [r for r in caplog.records if "repaired" in r.getMessage()]
    assert bool(repaired) == (isinstance(system, dict) and system.get("inertia_policy") == "repair")
    assert robot.total_mass == pytest.approx(sum(I.mass for I in reference.inertias), rel=1e-12)  # root included
    assert robot.nq == reference.nv  # continuous joints become one angle each
    mimics = _mimics(xml)
    couplings = {c.joints: (c.coefficients, c.offset) for c in robot.constraints if c.type == "joints"}
    assert len(couplings) == len(mimics)
    if system is None:  # q_j − m·q_i = o for every <mimic joint="i" multiplier="m" offset="o"/> on joint j
        assert all(couplings[(j, i)] == ((1.0, -m), o) for j, i, m, o in mimics)
    if system is not None:  # the setting is needed: without it the same file is refused by name
        with pytest.raises(URDFError, match=r"link '|joint '"):
            load_robot(str(ROOT / rel))


def test_the_survey_covers_the_robots_issue_12_names():
    """pr2, romeo, talos_full, baxter (mimic joints) and romeo_small, tiago_no_hand, allegro, hyq, anymal_c
    (non-physical inertias) are all among the files walked, and only ur3.urdf is refused by Pinocchio itself."""
    names = " ".join(URDFS)
    for robot in (
        "pr2.urdf",
        "romeo.urdf",
        "talos_full_v2.urdf",
        "baxter.urdf",
        "romeo_small.urdf",
        "tiago_no_hand.urdf",
        "allegro_left_hand.urdf",
        "hyq_no_sensors.urdf",
        "anymal_c",
    ):
        assert robot in names
    rejected = []
    for rel in URDFS:
        try:
            pin.buildModelFromXML((ROOT / rel).read_text(encoding="utf-8"))
        except (RuntimeError, ValueError):
            rejected.append(rel)
    assert rejected == ["ur_description/urdf/ur3.urdf"]
    assert set(NEEDS) <= set(URDFS)


def test_mimic_coupling_equals_pinocchios_mimic_model():
    """The holonomic coupling of panda's fingers (finger_joint2 = finger_joint1) reduces M(q) to exactly the mass
    matrix of Pinocchio's own mimic model (mimic=True): PᵀM(q)P = M_mimic(q_reduced)."""
    xml = (ROOT / "panda_description/urdf/panda.urdf").read_text(encoding="utf-8")
    robot = load_robot(xml)
    (c,) = robot.constraints
    assert (c.type, c.joints, c.coefficients, c.offset) == (
        "joints",
        ("panda_finger_joint2", "panda_finger_joint1"),
        (1.0, -1.0),
        0.0,
    )
    assert "panda_finger_joint2" not in robot.actuated
    mimic_model = pin.buildModelFromXML(xml, mimic=True)
    assert mimic_model.nv == robot.nq - 1
    names = robot.joint_names
    i1, i2 = names.index("panda_finger_joint1"), names.index("panda_finger_joint2")
    free = [i for i in range(robot.nq) if i != i2]
    P = np.eye(robot.nq)[:, free]
    P[i2, free.index(i1)] = 1.0
    data, mdata = robot.create_data(), mimic_model.createData()
    for qr in np.random.default_rng(3).uniform(-1, 1, (5, robot.nq - 1)):
        qr[free.index(i1)] = abs(qr[free.index(i1)]) * 0.04
        q = P @ qr
        M = pin.crba(robot.pin_model, data, q)
        M = np.triu(M) + np.triu(M, 1).T
        Mm = pin.crba(mimic_model, mdata, qr)
        Mm = np.triu(Mm) + np.triu(Mm, 1).T
        np.testing.assert_allclose(P.T @ M @ P, Mm, atol=1e-12)


def test_inertia_policy_through_modelspec_and_the_system_yaml(capsys):
    """The policy is a system-YAML key, so every entry point that takes a model (ModelSpec: tasks, nodes,
    vi_inspect) selects it; a task file's model mapping may also name it."""
    from vi_control.model import ModelSpec
    from vi_control.model.inspect import main as inspect_main

    path = str(ROOT / "anymal_c_simple_description/urdf/anymal.urdf")
    with pytest.raises(URDFError, match=r"link 'depth_camera_front_camera'.*inertia_policy: repair"):
        ModelSpec.parse(path).load()
    a = ModelSpec.parse(path, system="inertia_policy: repair").load()
    b = ModelSpec.parse({"urdf": path, "inertia_policy": "repair"}).load()
    assert a.hash == b.hash and a.total_mass == b.total_mass
    assert inspect_main([str(ROOT / "panda_description/urdf/panda.urdf")]) == 0
    assert "joints: 1·panda_finger_joint2 + -1·panda_finger_joint1 = 0" in capsys.readouterr().out
