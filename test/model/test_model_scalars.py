"""``model.scalars``: the one "real number / integer, never a bool" predicate pair every validator uses.

Independent references: Python's and numpy's own type hierarchy (``bool`` subclasses ``int``; ``np.float64``
subclasses ``float``, ``np.int64`` does not subclass ``int``), and the YAML reader, whose ``true`` is the Python
``True`` that each layer's check must refuse with its own message naming the key."""

from __future__ import annotations

import numpy as np
import pytest

from vi_control.model.scalars import is_integer, is_real
from vi_control.model.yaml_io import load_yaml

YAML_TRUE = load_yaml("v: true")["v"]

REALS = [
    0,
    -3,
    10**30,
    1.5,
    float("inf"),
    float("nan"),
    np.float64(2.0),
    np.float32(2.5),
    np.int64(7),
    np.uint8(3),
    np.float16(1.0),
]
INTEGERS = [0, -3, 10**30, np.int64(7), np.int32(-2), np.uint8(3)]
NEITHER = [
    True,
    False,
    np.bool_(True),
    YAML_TRUE,
    None,
    "1",
    b"1",
    [1],
    (1,),
    1 + 0j,
    np.complex128(1.0),
    np.array(1.0),
    np.array([1]),
]


def test_yaml_true_is_the_int_subclass_the_helpers_exist_for():
    assert YAML_TRUE is True and isinstance(YAML_TRUE, int) and YAML_TRUE == 1  # what a bare isinstance lets in


@pytest.mark.parametrize("v", REALS, ids=repr)
def test_real_numbers_of_python_and_numpy_are_real(v):
    assert is_real(v)


@pytest.mark.parametrize("v", INTEGERS, ids=repr)
def test_integers_of_python_and_numpy_are_integers(v):
    assert is_integer(v) and is_real(v)


@pytest.mark.parametrize("v", [1.0, 2.5, np.float64(3.0), np.float32(1.0), float("inf")], ids=repr)
def test_floats_are_not_integers_even_with_an_integral_value(v):
    assert is_real(v) and not is_integer(v)


@pytest.mark.parametrize("v", NEITHER, ids=repr)
def test_bools_strings_containers_complex_and_arrays_are_neither(v):
    assert not is_real(v) and not is_integer(v)


def _task(**changes) -> dict:
    from vi_control.model.bundled import share_dir

    d = load_yaml((share_dir() / "config" / "task_pendulum_swingup.yaml").read_text())
    for path, value in changes.items():
        *head, last = path.split("__")
        cur = d
        for k in head:
            cur = cur.setdefault(k, {})
        cur[last] = value
    return d


def _plan(steps: int, **changes):
    from vi_control.control.plan import Plan

    fields = dict(
        times=np.arange(steps + 1) * 0.1,
        X=np.zeros((steps + 1, 2)),
        U=np.zeros((steps, 1)),
        K=np.zeros((steps, 1, 2)),
        dt=0.1,
        model_name="pendulum",
        model_hash="h",
        joint_names=["theta"],
        input_names=["theta"],
    )
    return Plan(**(fields | changes))


def _refusal(what: str):
    """(call, error type, message) — a layer's own check of a number, given YAML's ``true``."""
    from vi_control.control.plan import PlanError
    from vi_control.integrators.base import NewtonSettings
    from vi_control.model import SystemConfigError
    from vi_control.model.bundled import bundled_urdf, share_dir
    from vi_control.model.limits import check_time_step
    from vi_control.model.rigid_body import RigidBodyConfigError, load_rigid_body
    from vi_control.model.robot import load_urdf as load_robot
    from vi_control.model.spec import ModelError, ModelSpec
    from vi_control.planning import TaskError, load_task
    from vi_control.sweep.config import SweepConfigError, load_robustness_config

    t = YAML_TRUE
    vehicle = str(share_dir() / "config" / "vehicle_uuv.yaml")
    return {
        "dt": (lambda: check_time_step(t), ValueError, r"time step dt must be positive and finite, got True"),
        "load_robot mass_scale": (
            lambda: load_robot(bundled_urdf("pendulum"), mass_scale=t),
            SystemConfigError,
            r"^mass_scale: must be a number in \[1e-12, 1e\+06\], got True",
        ),
        "ModelSpec.mass_scale": (
            lambda: ModelSpec(source="pendulum", mass_scale=t),
            ModelError,
            r"^mass_scale: must be a number in \[1e-12, 1e\+06\], got True",
        ),
        "rigid body drag_scale": (
            lambda: load_rigid_body(vehicle, drag_scale=t),
            RigidBodyConfigError,
            r"uuv\.yaml: drag_scale: must be a positive finite number, got True",
        ),
        "horizon": (lambda: load_task(_task(horizon=t)), TaskError, r"^horizon: must be an integer"),
        "optimizer.max_iterations": (
            lambda: load_task(_task(optimizer__max_iterations=t)),
            TaskError,
            r"^optimizer\.max_iterations: must be an integer",
        ),
        "NewtonSettings.max_iterations": (
            lambda: NewtonSettings(max_iterations=t),
            ValueError,
            r"NewtonSettings\.max_iterations must be an integer",
        ),
        "NewtonSettings.tol": (
            lambda: NewtonSettings(tol=t),
            ValueError,  # (accepted as 1 before the helper)
            r"NewtonSettings\.tol must be a positive finite number, got True",
        ),
        "Plan.dt": (lambda: _plan(2, dt=t), PlanError, r"^dt: must be a positive finite number, got True"),
        "Plan.receded steps": (lambda: _plan(2).receded(t), ValueError, r"^steps: expected an integer"),
        "sweep samples": (
            lambda: load_robustness_config({"samples": t}),
            SweepConfigError,
            r"^samples: must be an integer",
        ),
    }[what]


@pytest.mark.parametrize(
    "what",
    [
        "dt",
        "load_robot mass_scale",
        "ModelSpec.mass_scale",
        "rigid body drag_scale",
        "horizon",
        "optimizer.max_iterations",
        "NewtonSettings.max_iterations",
        "NewtonSettings.tol",
        "Plan.dt",
        "Plan.receded steps",
        "sweep samples",
    ],
)
def test_yaml_true_in_place_of_a_number_is_refused_with_each_checks_own_message(what):
    call, error, message = _refusal(what)
    with pytest.raises(error, match=message):
        call()


def test_numpy_scalars_pass_where_python_numbers_do():
    """The helpers' numpy scalars: a step count taken out of an array, a Δt computed in float32."""
    from vi_control.model.limits import check_time_step

    plan = _plan(3)
    assert np.array_equal(plan.receded(np.arange(3)[1]).times, plan.receded(1).times)
    assert check_time_step(np.float32(0.01)) == pytest.approx(0.01)
    assert check_time_step(np.int64(1)) == 1.0


def test_ros_parameter_int_kind_refuses_bool():
    common = pytest.importorskip("vi_control.ros.common")
    kinds = common._VALUE_TYPES
    assert kinds["int"](3) and not kinds["int"](YAML_TRUE) and not kinds["int"](3.0)
    assert kinds["bool"](YAML_TRUE) and not kinds["bool"](1)


def test_yaml_aliases_are_counted_unfolded_before_anything_is_built():
    """An alias bomb (ten aliases of the level below, nine levels: 2.6 KB of text, 10⁹ values for a reader that walks
    it) is refused at once; at the boundary a document of exactly MAX_NODES values unfolded loads and one more does
    not. (Root mapping, two keys, a list of 3 scalars, a list of m aliases to it: 4 + (m + 1)·4 nodes.)"""
    from vi_control.model.yaml_io import MAX_NODES, YAMLFormatError, load_yaml

    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"] + [
        f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 10)
    ]
    with pytest.raises(YAMLFormatError, match="aliases are unfolded"):
        load_yaml("\n".join(levels))

    def doc(m: int) -> str:
        return "a: &a [x, y, z]\nb: [" + ", ".join(["*a"] * m) + "]\n"

    m = (MAX_NODES - 4) // 4 - 1
    assert 4 + (m + 1) * 4 == MAX_NODES
    assert len(load_yaml(doc(m))["b"]) == m
    with pytest.raises(YAMLFormatError, match=f"more than {MAX_NODES} values"):
        load_yaml(doc(m + 1))
