"""Hostile inputs the fuzz suite (test_fuzz.py) does not generate: hand-written attacks on the task YAML of every
planner method, on URDFs and system YAMLs, on plans bound to a system and on joint-state names. Each case must end
as the package's own error naming the key, element, joint or constraint row — before its fix each was accepted
silently (and ignored, or planned through an end stop, or hung), or failed with a generic exception.

Independent references: the joint limits and names are the URDF's own (urdf/cartpole.urdf's slider ±2 m, the
Panda's ±2.8973 rad), the redundancy of a constraint set is judged on Pinocchio's frame Jacobians
(model.constraint_rows), the plan's gain columns against the integrator's state (``state.ndx``)."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
import yaml

from vi_control.control.plan import Plan, PlanError
from vi_control.model import SystemConfigError, URDFError, load_robot
from vi_control.model.bundled import bundled_urdf, share_dir
from vi_control.planning import TaskError, load_task, make_system
from vi_control.planning.pipeline import reference_trajectory, start_state, trajectory_reference
from vi_control.planning.task import MAX_COLLOCATION_NODES


def _task(name: str) -> dict:
    return yaml.safe_load((share_dir() / "config" / f"{name}.yaml").read_text())


def _edit(d: dict, path: str, value) -> dict:
    """A copy of ``d`` with ``path`` ('a.b.c') set to ``value`` (or deleted: value ``...``)."""
    d = copy.deepcopy(d)
    *head, last = path.split(".")
    cur = d
    for k in head:
        cur = cur.setdefault(k, {})
    if value is ...:
        del cur[last]
    else:
        cur[last] = value
    return d


SWINGUP, BOUNDED, CARTPOLE_LG2, MINTIME_LG2, PARKING, PANDA = (
    "task_pendulum_swingup",
    "task_pendulum_swingup_bounded",
    "task_cartpole_swingup_lg2",
    "task_pendulum_mintime_lg2",
    "task_diffdrive_parking",
    "task_panda_reach",
)

# (task file, key path, value, what the error must say). Before the fixes: the typo was named without its close
# key; the collocation sizes were unbounded (10⁹ nodes: a transcription that never finishes building); t_min/t_guess
# beyond horizon·dt were caught only when IPOPT was set up, or not at all; keys of another method, a name that is
# not text, were accepted and ignored.
LOAD_ATTACKS = [
    (SWINGUP, "horizn", 100, r"unknown key\(s\) \['horizn'\] \(did you mean 'horizon'\?\)"),
    (SWINGUP, "optimizer.max_iteration", 5, r"did you mean 'max_iterations'\?"),
    (SWINGUP, "weights.q", [1, 1], r"weights: unknown key\(s\) \['q'\] \(did you mean 'Q'\?\)"),
    (CARTPOLE_LG2, "collocation.node", 20, r"collocation: unknown key\(s\) \['node'\] \(did you mean 'nodes'\?\)"),
    (SWINGUP, "model", {"bundled": "pendulum", "systme": "x"}, r"did you mean 'system'\?"),
    (SWINGUP, "name", {"a": 1}, r"^name: expected text"),
    (CARTPOLE_LG2, "collocation.nodes", 10**9, r"collocation\.nodes: must be an integer in \[3, 200\]"),
    (CARTPOLE_LG2, "collocation.intervals", 10**9, r"collocation\.intervals: must be an integer in \[1, 3333\]"),
    (CARTPOLE_LG2, "collocation.polish_iterations", 10**9, r"collocation\.polish_iterations: .*\[1, 10000\]"),
    (CARTPOLE_LG2, "collocation.intervals", 1000, r"collocation: nodes × intervals = 25000 points"),
    (CARTPOLE_LG2, "collocation.effort_weight", 1e300, r"effort_weight: must be a number in \(0, 1e\+12\]"),
    (CARTPOLE_LG2, "collocation.t_guess", 1.0, r"collocation\.t_guess: only used with collocation\.final_time: free"),
    (MINTIME_LG2, "collocation.t_min", 5.0, r"collocation\.t_min: must be below horizon·dt = 4 s"),
    (
        MINTIME_LG2,
        "collocation.t_guess",
        50.0,
        r"collocation\.t_guess: must be in \[t_min, horizon·dt\] = "
        r"\[0\.04, 4\]",
    ),
    (MINTIME_LG2, "collocation.t_guess", 0.01, r"collocation\.t_guess: must be in \[t_min"),
    (
        CARTPOLE_LG2,
        "optimizer.terminal_constraint",
        True,
        r"optimizer\.terminal_constraint: not used by optimizer\.method 'collocation_lg2'",
    ),
    (CARTPOLE_LG2, "optimizer.penalty", 10.0, r"optimizer\.penalty: not used by optimizer\.method 'collocation_lg2'"),
    (CARTPOLE_LG2, "initial_guess", "feedback", r"^initial_guess: not used by optimizer\.method 'collocation_lg2'"),
    (CARTPOLE_LG2, "reference", {"type": "step"}, r"^reference: not used by optimizer\.method"),
    (SWINGUP, "optimizer.penalty", 10.0, r"optimizer\.penalty: only used with optimizer\.terminal_constraint: true"),
    (SWINGUP, "optimizer.constraint_tolerance", 1e-3, r"optimizer\.constraint_tolerance: only used with"),
    (
        "task_cartpole_swingup",
        "optimizer.method",
        "gradient",
        r"optimizer\.terminal_constraint: needs optimizer\.method ddp or ilqr, not 'gradient'",
    ),
    (BOUNDED, "optimizer.regularization", 1.0, r"optimizer\.regularization: not used by optimizer\.method 'gradient'"),
]


@pytest.mark.parametrize("name, key, value, message", LOAD_ATTACKS, ids=[f"{a[0][5:]}:{a[1]}" for a in LOAD_ATTACKS])
def test_task_attacks_are_refused_at_load_naming_the_key(name, key, value, message):
    d = _edit(_task(name), key, value)
    if name == BOUNDED:
        d["optimizer"]["method"] = "gradient"
    with pytest.raises(TaskError, match=message):
        load_task(d)


# Checked against the model (sizes and limits are the model's): before, goals beyond the URDF's position limits were
# planned through the end stop (DDP: the VI does not enforce limits), and a {q, p} weight list of the wrong length
# raised numpy's "operands could not be broadcast together".
RESOLVE_ATTACKS = [
    (CARTPOLE_LG2, "goal.q", [5.0, 3.14], r"goal\.q\[0\]: 5 is outside joint 'slider''s limits \[-2, 2\]"),
    (CARTPOLE_LG2, "start.q", [-2.5, 0.0], r"start\.q\[0\]: -2\.5 is outside joint 'slider''s limits \[-2, 2\]"),
    (PANDA, "goal.q", [10, 0, 0, -1.5, 0, 1.5, 0], r"goal\.q\[0\]: 10 is outside joint 'panda_joint1''s limits"),
    (
        "task_cartpole_swingup",
        "reference",
        {"type": "step", "q_after": [3.0, 0.0]},
        r"reference\.q_after\[0\]: 3 is outside joint 'slider''s limits",
    ),
    (PARKING, "weights.Q", {"q": [1, 1], "p": 1}, r"weights\.Q\.q: expected one number or 5 entries .*got 2"),
]


@pytest.mark.parametrize(
    "name, key, value, message", RESOLVE_ATTACKS, ids=[f"{a[0][5:]}:{a[1]}" for a in RESOLVE_ATTACKS]
)
def test_task_attacks_against_the_model_name_the_key_and_joint(name, key, value, message):
    task = load_task(_edit(_task(name), key, value))
    vi = make_system(task, "gni" if name == PARKING else "midpoint")
    with pytest.raises(TaskError, match=message):
        start_state(task, vi)
        reference_trajectory(task, vi)
        task.weight("Q", "weights", vi.state.ndx, vi.nq)


def test_configurations_at_the_limits_and_every_bundled_task_still_load():
    """The limit check is inclusive (the slider at exactly ±2 m), and every task in config/ still resolves."""
    task = load_task(_edit(_task(CARTPOLE_LG2), "goal.q", [2.0, np.pi]))
    reference_trajectory(task, make_system(task))
    for path in sorted((share_dir() / "config").glob("task_*.yaml")):
        task = load_task(str(path))
        vi = make_system(task, "gni" if "diffdrive" in path.name else "midpoint")
        reference_trajectory(task, vi, start_state(task, vi))
    assert MAX_COLLOCATION_NODES >= 60  # the collocation docs' largest global polynomial, with room


DOUBLE = Path(bundled_urdf("double_pendulum")).read_text()
_LINK = {"type": "coincident", "link_a": "tip", "point_a": [0, 0, 0], "link_b": "world", "point_b": [0, 0, -2.0]}
# Before: a redundant holonomic set loaded and every step then failed with "the constrained DEL Jacobian is
# singular" naming no constraint; Pinocchio's refusal of a negative effort limit named neither joint nor attribute;
# a typo in the system YAML was named without its close key.
MODEL_ATTACKS = [
    (
        {"constraints": [{**_LINK, "link_a": "base", "point_b": [0, 0, 0]}]},
        SystemConfigError,
        r"constraints\[0\] \(axis x\): its row of Dh\(q\) is a combination .*rank 0 < 1",
    ),
    (
        {
            "constraints": [
                _LINK,
                {
                    "type": "distance",
                    "link_a": "tip",
                    "point_a": [0, 0, 0],
                    "link_b": "world",
                    "point_b": [0, 0, 0],
                    "distance": 2.0,
                },
            ]
        },
        SystemConfigError,
        r"constraints\[0\] \(axis y\): its row of Dh\(q\) .*rank 1 < 2 at a generic q",
    ),
    ({"actuted": ["shoulder"]}, SystemConfigError, r"unknown key\(s\) \['actuted'\] \(did you mean 'actuated'\?\)"),
    ({"constraints": [{**_LINK, "axis": ["x"]}]}, SystemConfigError, r"did you mean 'axes'\?"),
]


@pytest.mark.parametrize("system, error, message", MODEL_ATTACKS)
def test_system_yaml_attacks_name_the_key_or_row(system, error, message):
    with pytest.raises(error, match=message):
        load_robot(DOUBLE, system)


def test_a_planar_loop_closed_on_two_axes_still_loads_and_three_axes_are_refused():
    """The four-bar (config/fourbar.yaml) closes its loop along x and z: full rank. The same loop closed along
    all three axes has a y row that is zero at every q (all axes are parallel to y): named at load."""
    fourbar = load_robot(bundled_urdf("fourbar"), str(share_dir() / "config" / "fourbar.yaml"))
    assert len(fourbar.constraints) == 1
    cfg = yaml.safe_load((share_dir() / "config" / "fourbar.yaml").read_text())
    cfg["constraints"][0]["axes"] = ["x", "y", "z"]
    with pytest.raises(SystemConfigError, match=r"constraints\[0\] \(axis y\): its row of Dh\(q\)"):
        load_robot(bundled_urdf("fourbar"), cfg)


@pytest.mark.parametrize("attribute", ["effort", "velocity"])
def test_negative_urdf_limits_name_the_joint_and_attribute(attribute):
    bad = DOUBLE.replace(
        'effort="20.0" velocity="100"',
        'effort="-20.0" velocity="100"' if attribute == "effort" else 'effort="20.0" velocity="-1"',
        1,
    )
    with pytest.raises(URDFError, match=rf"joint 'shoulder' <limit>: {attribute}=-\d+ must be non-negative"):
        load_robot(bad)


def test_a_plan_whose_gains_do_not_fit_the_state_is_incompatible(pendulum_vi):
    """K (N, nu, ndx) with ndx = 1 on the pendulum (ndx = 2): Plan accepts it (1 ≤ ndx ≤ nx), but bound to the
    system it must be refused — every command would fail in the matrix product."""
    N = 3
    plan = Plan(
        times=0.1 * np.arange(N + 1),
        X=np.zeros((N + 1, 2)),
        U=np.zeros((N, 1)),
        K=np.zeros((N, 1, 1)),
        dt=0.1,
        model_name="pendulum",
        model_hash=pendulum_vi.robot.hash,
        joint_names=["theta"],
        input_names=["theta"],
    )
    with pytest.raises(PlanError, match=r"K: the plan's gains act on 1 state-tangent entries.*ndx = 2"):
        plan.check_compatible(pendulum_vi)


def test_joint_states_naming_a_joint_twice_are_refused():
    """Which of two positions of 'theta' is meant? Before, the last one silently won."""
    pytest.importorskip("rclpy")
    from sensor_msgs.msg import JointState

    from vi_control.ros.messages import JointStateReader, joint_state_arrays

    msg = JointState(name=["theta", "theta"], position=[0.1, 5.0])
    message = r"joint state names joint\(s\) \['theta'\] more than once"
    with pytest.raises(ValueError, match=message):
        JointStateReader(["theta"]).read(msg)
    with pytest.raises(ValueError, match=message):
        joint_state_arrays(msg, ["theta"])
    q, _ = joint_state_arrays(JointState(name=["other", "theta"], position=[9.0, 0.1]), ["theta"])
    assert q.tolist() == [0.1]  # extra joints are fine


def test_joint_trajectories_beyond_the_limits_or_the_horizon_are_refused():
    """A JointTrajectory (planner node's ~/joint_trajectory) → trajectory_reference. Before: a point beyond the
    slider's ±2 m was planned through the end stop, and a last point at 10⁹ s allocated 2·10¹⁰ steps (hang)."""
    task = load_task(_task("task_cartpole_swingup"))
    vi = make_system(task)
    x0 = start_state(task, vi)
    with pytest.raises(TaskError, match=r"trajectory point 1: positions\[0\]: 2\.5 is outside joint 'slider''s"):
        trajectory_reference(vi, x0, [0.5, 1.0], [[1.0], [2.5]], joints=[0])
    with pytest.raises(TaskError, match=r"trajectory: its last point at 1e\+09 s needs 20000000010 steps"):
        trajectory_reference(vi, x0, [1e9], [[0.5]], joints=[0])
    X, U = trajectory_reference(vi, x0, [0.5], [[2.0]], joints=[0])  # at the limit: fine
    assert X[-1, 0] == pytest.approx(2.0) and len(U) == round((0.5 + 0.5) / vi.dt)  # point + 0.5 s settle


UUV = yaml.safe_load((share_dir() / "config" / "vehicle_uuv.yaml").read_text())


@pytest.mark.parametrize(
    "key, value, message",
    [
        ("planning.horizn", 16, r"planning: unknown key\(s\) \['horizn'\] \(did you mean 'horizon'\?\)"),
        ("planning.lqr.q", 1.0, r"planning\.lqr: unknown key\(s\) \['q'\] \(did you mean 'Q'\?\)"),
        ("planning.horizon", 10**9, r"planning\.horizon: must be an integer in \[2, 256\]"),
        ("planning.duration", float("inf"), r"planning\.duration: .*1e-05 to 10 s per step"),
        ("planning.retraction", "euler", r"planning\.retraction: expected one of \('cayley', 'exp'\)"),
    ],
)
def test_vehicle_planning_section_attacks_name_the_key(key, value, message):
    """config/vehicle_uuv.yaml's ``planning`` section (DMOC, Jimenez2013). Before: a typo fell back to the default
    silently, an infinite duration gave Δt = inf, 10⁹ steps built an NLP that never finished, a retraction
    name was only refused when the integrator was built."""
    from vi_control.model.rigid_body import load_rigid_body
    from vi_control.planning.vehicle import maneuver_settings

    body = load_rigid_body(_edit(UUV, key, value))
    with pytest.raises(ValueError, match=message):
        maneuver_settings(body)
    assert maneuver_settings(load_rigid_body(UUV)).horizon == 32  # the shipped section is valid


@pytest.mark.parametrize("reader", ["urdf", "system", "task", "plan"])
def test_device_files_fifos_and_oversized_files_are_refused_without_reading_them(reader, tmp_path):
    """Every file the package reads by path (URDF, system YAML, task YAML, plan). Before: /dev/zero was read until
    memory ran out (MemoryError under a 4 GB limit), a FIFO blocked the process forever in open()."""
    import os

    from vi_control.control.plan import PlanFileError
    from vi_control.model.limits import MAX_TEXT_BYTES

    read, error = {
        "urdf": (lambda p: load_robot(p), URDFError),
        "system": (lambda p: load_robot(bundled_urdf("pendulum"), p), SystemConfigError),
        "task": (load_task, TaskError),
        "plan": (Plan.load, PlanFileError),
    }[reader]
    fifo = tmp_path / "model.fifo"
    os.mkfifo(fifo)
    for path in ("/dev/zero", str(fifo), str(tmp_path)):
        with pytest.raises(error, match="is not a regular file"):
            read(path)
    if reader != "plan":  # (a plan file's members are bounded by their headers instead)
        big = tmp_path / "big.yaml"
        with open(big, "wb") as f:
            f.truncate(MAX_TEXT_BYTES + 1)  # sparse: no disk space used
        with pytest.raises(error, match=r"is larger than the supported 64 MiB"):
            read(str(big))


def test_a_typo_in_a_robustness_sweep_config_gets_the_close_key():
    from vi_control.sweep.config import SweepConfigError, load_robustness_config

    with pytest.raises(SweepConfigError, match=r"unknown key\(s\) \['sample'\] \(did you mean 'samples'\?\)"):
        load_robustness_config("sample: 3")


def test_an_overconstrained_collocation_reports_no_iterations_not_garbage():
    """LG2 with 3 nodes on the cart-pole: 26 equality constraints for 25 variables (CasADi says so), IPOPT stops
    before iterating. Before: the error read "-1305018176 iterations" (CasADi's uninitialized count)."""
    from vi_control.planning import plan_task
    from vi_control.planning.errors import PlanningError

    task = load_task(_edit(_task(CARTPOLE_LG2), "collocation.nodes", 3))
    with pytest.raises(PlanningError, match=r"status Not_Enough_Degrees_Of_Freedom, 0 iterations") as e:
        plan_task(make_system(task), task)
    assert e.value.iterations == 0


@pytest.mark.parametrize(
    "reference, message",
    [
        ({"type": "goal", "step_index": 10}, r"^reference\.step_index: only used with reference\.type: step"),
        ({"q_after": [1.0]}, r"^reference\.q_after: only used with reference\.type: step"),  # (type goal by default)
        ({"type": "ramp"}, r"^reference\.type: expected 'step' or 'goal', got 'ramp'"),
        ({"type": "step", "u": "full"}, r"^reference\.u: expected 'zero' or 'hold', got 'full'"),
    ],
)
def test_reference_keys_a_goal_reference_would_ignore_are_refused_at_load(reference, message):
    """Before: a goal reference silently ignored step_index/q_before/q_after, and a wrong type or u was only found
    when the task met a model."""
    with pytest.raises(TaskError, match=message):
        load_task(_edit(_task(SWINGUP), "reference", reference))


def test_a_misspelt_model_name_gets_the_close_bundled_name():
    from vi_control.model.spec import ModelSpec

    with pytest.raises(URDFError, match=r"model 'pendullum' is not a bundled model .* \(did you mean 'pendulum'\?\)"):
        ModelSpec.parse("pendullum").load()
