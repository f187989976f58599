"""Boundary tests generated from the tables that define the checks.

Every schema keeps its bounded numbers in a table (key → ``model.limits.Bound``) that its validation reads: the
task (``planning.task.TASK_BOUNDS``), the system YAML (``model.system_config.SYSTEM_BOUNDS``), the rigid body
(``model.rigid_body.RIGID_BODY_BOUNDS``, ``SCALE_BOUNDS``), the vehicle's planning section
(``planning.vehicle.VEHICLE_BOUNDS``), DMOC (``planning.dmoc.DMOC_BOUNDS``), the sweep configs
(``sweep.config.SWEEP_BOUNDS``, ``LIBRARY_BOUNDS``) and the ROS nodes' parameters (``Param.range`` /
``Param.choices`` of every node's ``PARAMETERS``). One parametrised test per kind of table tries, for every entry and
each finite end: the end itself (or, for an open end, the next double inside) is accepted, the next value outside
(the next double, or ±1 for integers) is refused with an error naming the key. A key added to a table gets its
test by construction; a YAML key is placed into a base document by its path (``[]``: every entry of a list,
``*``: the first joint of a mapping, ``[type=…]``: the constraint of that type), and a Python-API table without a
way to place its key fails here rather than going untested.
"""

from __future__ import annotations

import copy
import math
import re

import numpy as np
import pytest

from vi_control.model.limits import Bound
from vi_control.model.rigid_body import RIGID_BODY_BOUNDS, SCALE_BOUNDS, RigidBodyConfigError, load_rigid_body
from vi_control.model.system_config import SYSTEM_BOUNDS, SystemConfigError, parse_system_config
from vi_control.planning.dmoc import DMOC_BOUNDS, DMOCProblem, check_dmoc_options
from vi_control.planning.task import TASK_BOUNDS, TaskError, load_task
from vi_control.planning.vehicle import VEHICLE_BOUNDS, maneuver_settings, maneuvers
from vi_control.sweep.config import (
    LIBRARY_BOUNDS,
    SWEEP_BOUNDS,
    SweepConfigError,
    load_library_goals,
    load_robustness_config,
)


# ---- the two sides of each end of a Bound ----------------------------------------------------------------------
def sides(b: Bound) -> list[tuple[str, object, object]]:
    """(end, a value just inside, a value just outside) for each finite end of ``b``."""
    out = []
    if b.low is not None:
        if b.integer:
            out.append(("low", int(b.low) + (1 if b.low_open else 0), int(b.low) - (0 if b.low_open else 1)))
        else:
            inside = math.nextafter(b.low, math.inf) if b.low_open else float(b.low)
            outside = float(b.low) if b.low_open else math.nextafter(b.low, -math.inf)
            out.append(("low", inside, outside))
    if b.high is not None:
        if b.integer:
            out.append(("high", int(b.high) - (1 if b.high_open else 0), int(b.high) + (0 if b.high_open else 1)))
        else:
            inside = math.nextafter(b.high, -math.inf) if b.high_open else float(b.high)
            outside = float(b.high) if b.high_open else math.nextafter(b.high, math.inf)
            out.append(("high", inside, outside))
    return out


def cases(table: dict[str, Bound], name: str) -> list:
    return [
        pytest.param(key, inside, outside, id=f"{name}:{key}:{end}")
        for key, b in table.items()
        for end, inside, outside in sides(b)
    ]


def test_every_bound_has_a_finite_end():
    """(A table entry without a finite end would generate no test.)"""
    for table in (
        TASK_BOUNDS,
        SYSTEM_BOUNDS,
        RIGID_BODY_BOUNDS,
        SCALE_BOUNDS,
        VEHICLE_BOUNDS,
        DMOC_BOUNDS,
        SWEEP_BOUNDS,
        LIBRARY_BOUNDS,
    ):
        for key, b in table.items():
            assert sides(b), key


# ---- placing a key into a YAML document ----------------------------------------------------------------------------
_TOKEN = re.compile(r"^([^\[\]]+)((?:\[[^\]]*\])*)$")


def place(doc, path: str, value) -> bool:
    """Set ``path`` of ``doc`` to ``value`` in place (module docstring); False if the document lacks the path."""
    head, _, rest = path.partition(".")
    m = _TOKEN.match(head)
    name, brackets = m.group(1), re.findall(r"\[([^\]]*)\]", m.group(2))
    if not isinstance(doc, dict):
        return False
    if name == "*":
        if not doc:
            return False
        name = next(iter(doc))
    if not brackets:
        if not rest:
            if name not in doc:
                return False
            doc[name] = value
            return True
        return name in doc and place(doc[name], rest, value)
    node = doc.get(name)
    if not isinstance(node, list) or not node:
        return False
    sel = brackets[0]
    if sel.startswith("type="):
        hits = [e for e in node if isinstance(e, dict) and e.get("type") == sel[5:]]
        if not hits:
            return False
        return place(hits[0], rest, value) if rest else False
    if rest:  # "name[].more": the first entry
        return place(node[0], rest, value)
    node[:] = [value] * len(node)  # "name[]": every entry
    return True


def placed(bases: list[dict], key: str, value) -> dict:
    for base in bases:
        doc = copy.deepcopy(base)
        if place(doc, key, value):
            return doc
    raise AssertionError(f"{key}: no base document of this table holds the key: add one to the test")


def _named(msg: str, key: str) -> bool:
    """The error names the key (its last component at least: 'actuators[0].position[0]' for actuators[].position[])."""
    parts = [re.sub(r"\[[^\]]*\]", "", p) for p in key.split(".") if p != "*"]
    return parts[-1] in msg and parts[0] in msg


def check(load, error, key: str, inside, outside, bases: list[dict]) -> None:
    load(placed(bases, key, inside))
    with pytest.raises(error) as e:
        load(placed(bases, key, outside))
    assert _named(str(e.value), key), (key, str(e.value))


# ---- task YAML ------------------------------------------------------------------------------------------------------
_TASK = {
    "model": "pendulum",
    "dt": 0.1,
    "horizon": 50,
    "start": {"q": [0.0]},
    "goal": {"q": ["pi"]},
    "weights": {"Q": [100.0, 1.0], "R": 1.0},
    "optimizer": {"method": "ddp", "max_iterations": 10_000, "tolerance": 1e-6, "regularization": 1e-6},
}
TASK_BASES = [
    _TASK,
    {
        **_TASK,
        "optimizer": {**_TASK["optimizer"], "terminal_constraint": True, "constraint_tolerance": 1e-6, "penalty": 1e4},
    },
    {**_TASK, "optimizer": {**_TASK["optimizer"], "continuation": {"Q_scale": [1.0], "iterations": 20}}},
    {
        **_TASK,
        "optimizer": {"method": "collocation_lg2", "max_iterations": 100},
        "collocation": {
            "nodes": 3,
            "intervals": 1,
            "polish_iterations": 10,
            "effort_weight": 1.0,
            "polish_tolerance": 1e-6,
        },
    },
    {**_TASK, "mpc": {"horizon": 20, "max_iterations": 10, "tolerance": 1e-6}},
]


@pytest.mark.parametrize("key, inside, outside", cases(TASK_BOUNDS, "task"))
def test_task_bounds(key, inside, outside):
    check(load_task, TaskError, key, inside, outside, TASK_BASES)


# ---- system YAML ----------------------------------------------------------------------------------------------------
SYSTEM_BASES = [
    {
        "gravity": [0.0, 0.0, -9.81],
        "actuated": [{"joint": "j1", "effort_limit": 5.0}],
        "damping": {"j1": 0.1},
        "locked": {"j2": 0.0},
        "constraints": [
            {"type": "joints", "joints": ["j1", "j3"], "coefficients": [1.0, -1.0], "offset": 0.0},
            {"type": "plane", "link": "l1", "point": [0.0, 0.0, 0.0], "normal": [0.0, 0.0, 1.0], "offset": 0.0},
            {
                "type": "distance",
                "link_a": "l1",
                "point_a": [0.0, 0.0, 0.0],
                "link_b": "l2",
                "point_b": [0.0, 0.0, 0.0],
                "distance": 1.0,
            },
            {
                "type": "coincident",
                "link_a": "l1",
                "point_a": [0.0, 0.0, 0.0],
                "link_b": "l2",
                "point_b": [0.0, 0.0, 0.0],
            },
        ],
        "nonholonomic": [
            {"type": "knife_edge", "link": "l1", "point": [0.0, 0.0, 0.0], "direction": [0.0, 1.0, 0.0]},
            {
                "type": "rolling",
                "link": "l2",
                "point": [0.0, 0.0, 0.0],
                "radius": 0.1,
                "axis": [0.0, 1.0, 0.0],
                "normal": [0.0, 0.0, 1.0],
            },
        ],
    }
]


@pytest.mark.parametrize("key, inside, outside", cases(SYSTEM_BOUNDS, "system"))
def test_system_yaml_bounds(key, inside, outside):
    check(parse_system_config, SystemConfigError, key, inside, outside, SYSTEM_BASES)


# ---- rigid-body YAML ------------------------------------------------------------------------------------------------
_BODY = {
    "name": "b",
    "group": "SE3",
    "mass": 1.0,
    "inertia": {"cylinder": {"radius": 0.1, "length": 0.5}},
    "actuators": [{"name": "fx", "type": "force", "direction": [1, 0, 0], "position": [0.0, 0.0, 0.1], "limit": 2.0}],
    "drag": [0.1, 0.3, 0.3, 2.0, 4.0, 4.0],
    "gravity": [0.0, 0.0, -9.81],
    "buoyancy": {"force": 9.81, "center": [0.0, 0.0, 0.0]},
}
BODY_BASES = [
    _BODY,
    {
        **{k: v for k, v in _BODY.items() if k != "actuators"},
        "inertia": [1.0, 1.0, 1.0],
        "thruster_layout": {"type": "seed002_uuv", "c": 0.1, "d": 0.1, "limit": 2.0},
    },
]


@pytest.mark.parametrize("key, inside, outside", cases(RIGID_BODY_BOUNDS, "rigid_body"))
def test_rigid_body_bounds(key, inside, outside):
    check(load_rigid_body, RigidBodyConfigError, key, inside, outside, BODY_BASES)


@pytest.mark.parametrize("key, inside, outside", cases(SCALE_BOUNDS, "scales"))
def test_rigid_body_scale_bounds(key, inside, outside):
    load_rigid_body(_BODY, **{key: inside})
    with pytest.raises(RigidBodyConfigError, match=rf"^{key}: "):
        load_rigid_body(_BODY, **{key: outside})


# ---- the vehicle's planning section -----------------------------------------------------------------------------
_SO3 = {
    "name": "sc",
    "group": "SO3",
    "inertia": [1.0, 2.0, 2.5],
    "actuators": [{"name": f"t{i}", "type": "torque", "direction": np.eye(3)[i].tolist()} for i in range(3)],
}
_PLANNING = {
    "horizon": 32,
    "duration": 6.4,
    "lqr": {"Q": [1.0] * 12, "R": [1.0], "Qf": [1.0] * 12},
    "maneuvers": [{"goal": {"position": [1.0, 0.0, 0.0], "rpy_deg": [0.0, 0.0, 90.0]}}],
}


def _load_planning(doc: dict) -> None:
    """A body whose ``planning`` section is ``doc['planning']``, read as the planner reads it."""
    if doc["planning"]["horizon"] != 32:  # (the horizon's bound, at a step inside the plan Δt range)
        doc["planning"]["duration"] = 0.2 * doc["planning"]["horizon"]
    body = load_rigid_body(doc)
    maneuver_settings(body)
    maneuvers(body)


@pytest.mark.parametrize("key, inside, outside", cases(VEHICLE_BOUNDS, "vehicle"))
def test_vehicle_planning_bounds(key, inside, outside):
    check(_load_planning, ValueError, key, inside, outside, [{**_BODY, "planning": _PLANNING}])


# ---- DMOC's Python API ------------------------------------------------------------------------------------------
_UUV = load_rigid_body(_BODY)
_DMOC_PLACERS = {
    "horizon": lambda v: DMOCProblem(load_rigid_body(_SO3), np.eye(3), np.eye(3), v, 0.2 * v),
    "position[]": lambda v: DMOCProblem(
        _UUV, np.eye(4), np.block([[np.eye(3), np.full((3, 1), v)], [np.zeros((1, 3)), np.ones((1, 1))]]), 8, 2.0
    ),
    "velocity[]": lambda v: DMOCProblem(_UUV, np.eye(4), np.eye(4), 8, 2.0, xi0=np.full(6, v)),
    "tolerance": lambda v: check_dmoc_options(v, 30),
    "max_iterations": lambda v: check_dmoc_options(1e-11, v),
}


@pytest.mark.parametrize("key, inside, outside", cases(DMOC_BOUNDS, "dmoc"))
def test_dmoc_bounds(key, inside, outside):
    assert key in _DMOC_PLACERS, f"{key}: a DMOC bound without a way to try it here"
    _DMOC_PLACERS[key](inside)
    with pytest.raises(ValueError) as e:
        _DMOC_PLACERS[key](outside)
    assert _named(str(e.value), key.replace("position[]", "position").replace("velocity[]", "xi0")), str(e.value)


# ---- sweep configs --------------------------------------------------------------------------------------------------
SWEEP_BASES = [
    {
        "samples": 4,
        "seed": 1,
        "perturbations": {
            k: v
            for k, v in (
                ("mass_scale", 1.0),
                ("damping", 0.1),
                ("actuator_gain", 1.0),
                ("sensor_noise", 0.0),
                ("q0_offset", 0.0),
                ("qdot0_offset", 0.0),
            )
        },
        "success": {"tolerance": 0.05, "hold_time": 2.0},
    }
]


@pytest.mark.parametrize("key, inside, outside", cases(SWEEP_BOUNDS, "sweep"))
def test_sweep_bounds(key, inside, outside):
    check(load_robustness_config, SweepConfigError, key, inside, outside, SWEEP_BASES)


@pytest.mark.parametrize("key, inside, outside", cases(LIBRARY_BOUNDS, "library"))
def test_library_bounds(key, inside, outside):
    check(
        lambda d: load_library_goals(d, ["theta"], np.zeros(1)),
        SweepConfigError,
        key,
        inside,
        outside,
        [{"grid": {"theta": {"from": 0.0, "to": 1.0, "num": 3}}}],
    )


# ---- ROS node parameters --------------------------------------------------------------------------------------------
def _node_tables() -> dict[str, dict]:
    from vi_control.ros import (
        controller_parameters,
        mujoco_plant,
        planner_parameters,
        recorder_node,
        simulator_parameters,
    )

    return {
        "controller": controller_parameters.PARAMETERS,
        "planner": planner_parameters.PARAMETERS,
        "simulator": simulator_parameters.PARAMETERS,
        "mujoco_plant": mujoco_plant.PARAMETERS,
        "recorder": recorder_node.PARAMETERS,
    }


def _param_cases() -> list:
    out = []
    for node, table in _node_tables().items():
        for name, p in table.items():
            if p.range is not None:
                integer = isinstance(p.default, int) and not isinstance(p.default, bool)
                for end, inside, outside in sides(Bound(p.range[0], p.range[1], integer=integer)):
                    out.append(pytest.param(node, name, inside, outside, id=f"{node}:{name}:{end}"))
            for c in p.choices or ():
                out.append(pytest.param(node, name, c, c + "x", id=f"{node}:{name}:{c}"))
    return out


@pytest.mark.parametrize("node, name, inside, outside", _param_cases())
def test_node_parameter_bounds(node, name, inside, outside):
    """Each node parameter's range and choices as ``Param.refusal`` applies them to a params file or ``-p``
    value before the node starts (the same table declares rclpy's ranges)."""
    p = _node_tables()[node][name]
    assert p.refusal(name, inside) is None
    msg = p.refusal(name, outside)
    assert msg is not None and msg.startswith(name), msg


def test_node_parameter_descriptors_carry_the_table_ranges():
    """What rclpy enforces on a running node (SetParameters, a params file) is the descriptor each Param declares:
    its range the table's, integer or floating as the default's type, read-only unless live; its choices named."""
    from rcl_interfaces.msg import ParameterType

    for node, table in _node_tables().items():
        for name, p in table.items():
            d = p.descriptor(name)
            assert d.name == name and d.read_only == (not p.live), (node, name)
            if p.range is None:
                assert not d.floating_point_range and not d.integer_range, (node, name)
            elif p.type == ParameterType.PARAMETER_INTEGER:
                (r,) = d.integer_range
                assert (r.from_value, r.to_value) == tuple(int(v) for v in p.range), (node, name)
            else:
                (r,) = d.floating_point_range
                assert (r.from_value, r.to_value) == tuple(float(v) for v in p.range), (node, name)
            if p.choices:
                assert all(c in d.additional_constraints for c in p.choices), (node, name)
