"""Rigid-body YAML (model layer): Jimenez2013, §6.1's thrusters and cylinder, validation errors naming the key."""

import copy
import math

import numpy as np
import pytest
import yaml

from vi_control.model.bundled import share_dir
from vi_control.model.rigid_body import (
    RigidBodyConfigError,
    cylinder_inertia,
    is_rigid_body_source,
    load_rigid_body,
    seed002_thrusters,
)

VEHICLE = yaml.safe_load((share_dir() / "config" / "vehicle_uuv.yaml").read_text())


def _with(**changes):
    cfg = copy.deepcopy(VEHICLE)
    cfg.update(changes)
    return cfg


def test_thruster_layout_reproduces_b_of_section_6_1(rng):
    """b₁ = d(u₅ − u₄), b₂ = c((u₁+u₂)/2 − u₃), b₃ = c sin(π/3)(u₂ − u₁), b₄ = u₁+u₂+u₃, b₅ = u₄+u₅, e₆ unactuated."""
    c, d = 0.1, 0.1
    body = load_rigid_body("vehicle_uuv")
    lay = VEHICLE["thruster_layout"]
    assert (lay["c"], lay["d"]) == (c, d)
    for _ in range(5):
        u = rng.normal(size=5)
        b = np.array(
            [
                d * (u[4] - u[3]),
                c * ((u[0] + u[1]) / 2 - u[2]),
                c * math.sin(math.pi / 3) * (u[1] - u[0]),
                u[0] + u[1] + u[2],
                u[3] + u[4],
                0.0,
            ]
        )
        assert np.abs(body.input_matrix @ u - b).max() <= 1e-15
    assert np.linalg.matrix_rank(body.input_matrix) == 5
    assert len(seed002_thrusters(c, d)) == 5


def test_vehicle_mass_and_cylinder_inertia():
    body = load_rigid_body("vehicle_uuv")
    assert body.mass == 3.0  # Jimenez2013, §6.1
    r, L = 0.1, 0.5
    assert np.allclose(np.diag(body.inertia), [3 * r**2 / 2, 3 * (3 * r**2 + L**2) / 12, 3 * (3 * r**2 + L**2) / 12])
    assert np.allclose(body.spatial_inertia, np.diag([*np.diag(body.inertia), 3, 3, 3]))
    assert np.all(np.linalg.eigvalsh(-body.drag_matrix) > 0)  # H negative definite (§6.1)
    assert not body.has_restoring_wrench  # trimmed: buoyancy = weight at the centre of mass
    assert np.allclose(cylinder_inertia(2.0, 1.0, 2.0, "z"), np.diag([7 / 6, 7 / 6, 1.0]))


def test_spacecraft_and_scaling_change_the_hash():
    sc = load_rigid_body("spacecraft")
    assert sc.group == "SO3" and sc.dim == 3 and sc.nq == 9
    # the stored coordinates' labels: the rotation's entries row by row, then (SE(3)) the position
    rotation = [f"R{i}{j}" for i in range(3) for j in range(3)]
    assert sc.joint_names == rotation and load_rigid_body("vehicle_uuv").joint_names == rotation + ["x", "y", "z"]
    assert np.allclose(sc.input_matrix, np.eye(3))
    heavy = load_rigid_body("vehicle_uuv", mass_scale=1.05, drag_scale=0.95)
    nominal = load_rigid_body("vehicle_uuv")
    assert heavy.hash != nominal.hash and len(nominal.hash) == 16
    assert heavy.mass == pytest.approx(3.15) and np.allclose(heavy.damping, 0.95 * nominal.damping)
    assert not heavy.has_restoring_wrench  # ballasted to the same trim by default
    assert load_rigid_body("vehicle_uuv", mass_scale=1.05, buoyancy_scale=1.0).has_restoring_wrench
    assert is_rigid_body_source("vehicle_uuv") and not is_rigid_body_source("pendulum")


@pytest.mark.parametrize(
    "change, match",
    [
        (dict(inertia=[1.0, -2.0, 2.5]), "inertia: not positive definite"),
        (dict(inertia=[[1.0, 0.0, 0.0], [0.0, 1.0, 2.0], [0.0, 2.0, 1.0]]), "inertia: not positive definite"),
        (dict(inertia=[1.0, 1.0, 5.0]), "triangle inequality"),
        (dict(inertia=[[1.0, 0.5, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]), "symmetric"),
        (dict(inertia={"cylinder": {"radius": 0.0, "length": 0.5}}), "inertia.cylinder.radius"),
        (dict(mass=-3.0), "mass: must be a positive finite number, got -3.0"),
        (dict(mass=float("inf")), "mass: must be a positive finite number, got inf"),
        (dict(group="SE2"), "group: expected one of"),
        (dict(drag=[0.1, 0.3, -0.3, 2.0, 4.0, 4.0]), "drag: the damping −H must be positive semidefinite"),
        (dict(drag=[0.1, 0.3]), "drag: expected 6 numbers"),
        (dict(wings=2), r"unknown key\(s\) \['wings'\]"),
        (dict(thruster_layout={"type": "seed002_uuv", "c": 0.1, "d": -1.0}), "thruster_layout.d"),
        (dict(buoyancy={"force": -1.0}), "buoyancy.force"),
    ],
)
def test_invalid_vehicle_yaml_names_the_key(change, match):
    with pytest.raises(RigidBodyConfigError, match=match):
        load_rigid_body(_with(**change))


def test_invalid_actuators_name_the_problem():
    base = dict(name="sc", group="SO3", inertia=[1.0, 2.0, 2.5])
    torque = {"name": "a", "type": "torque", "direction": [1.0, 0.0, 0.0]}
    with pytest.raises(RigidBodyConfigError, match="linearly dependent"):
        load_rigid_body(dict(base, actuators=[torque, dict(torque, name="b")]))
    with pytest.raises(RigidBodyConfigError, match=r"actuators\[0\].direction: must be a unit vector"):
        load_rigid_body(dict(base, actuators=[dict(torque, direction=[2.0, 0.0, 0.0])]))
    with pytest.raises(RigidBodyConfigError, match=r"actuators\[1\].name"):
        load_rigid_body(dict(base, actuators=[torque, dict(torque, direction=[0.0, 1.0, 0.0])]))
    with pytest.raises(RigidBodyConfigError, match=r"actuators\[0\].type"):
        load_rigid_body(dict(base, actuators=[dict(torque, type="force")]))
    # a limit may be inf ('unlimited'), so its refusal does not ask for a finite number
    with pytest.raises(RigidBodyConfigError, match=r"actuators\[0\].limit: must be a positive number, got -1.0"):
        load_rigid_body(dict(base, actuators=[dict(torque, limit=-1.0)]))
    assert load_rigid_body(dict(base, actuators=[dict(torque, limit="inf")])).actuators[0].limit == float("inf")
    with pytest.raises(RigidBodyConfigError, match="gravity/buoyancy"):
        load_rigid_body(dict(base, gravity=[0.0, 0.0, -9.81]))
    with pytest.raises(RigidBodyConfigError, match="no file 'no_such_body'"):
        load_rigid_body("no_such_body")
