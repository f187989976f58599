"""A robot from example-robot-data through the three node processes over real DDS, configured only as
docs/concepts/ros.md and docs/concepts/planner.md say: parameter files written by the user with ``model: erd:<name>``,
and a task
YAML (config/task_double_pendulum_reach.yaml); lockstep, own ROS_DOMAIN_ID and namespace, as test_ros_e2e.py."""

import numpy as np
import pytest

pytest.importorskip("rclpy")

from vi_control.ros.launcher import domain_id_for  # noqa: E402
from vi_control.ros.main_job import run_closed_loop  # noqa: E402

pytestmark = pytest.mark.ros


PARAMS = {
    "simulator": """/**/vi_simulator:
  ros__parameters:
    model: "erd:double_pendulum"
    dt: 0.05
    mode: lockstep
    initial_positions: [0.0, 0.0]
    initial_velocities: [0.0, 0.0]
""",
    "controller": """/**/vi_controller:
  ros__parameters:
    use_sim_time: true
    model: "erd:double_pendulum"
    dt: 0.05
    trigger: joint_state
""",
    "planner": """/**/vi_planner:
  ros__parameters:
    use_sim_time: true
    task: task_double_pendulum_reach   # config/: a name, or a path
    startup_wait: 5.0
""",
}


def test_example_robot_reach_through_the_three_nodes(request, tmp_path):
    """example-robot-data's double pendulum (its URDF's ``<limit lower="0" upper="0">``: no position limits,
    not a joint pinned at 0 whose every measurement beyond 0.25 rad the controller refused — the pendulum then
    fell over under the safe command) reaches an inverted pose: the simulator runs the planner's model, so the
    measured trajectory is the plan to round-off, and the robot ends at the goal."""
    files = {}
    for node, text in PARAMS.items():
        files[node] = [str(tmp_path / f"{node}.yaml")]
        (tmp_path / f"{node}.yaml").write_text(text)
    run = run_closed_loop(
        domain_id_for(request.node.name),
        str(tmp_path / "logs"),
        params_files=files,
        joint_names=["joint1", "joint2"],
        hold_time=1.0,
        timeout=120.0,
    )
    assert not run.error, run.error + "\n".join(f"--- {n}\n{t[-3000:]}" for n, t in run.logs.items())
    assert "joint state beyond the limits" not in run.logs["controller"]
    err = run.tracking_error(np.zeros(2, bool))
    assert np.isfinite(err).sum() > 0.8 * err.size
    assert np.nanmax(np.abs(err)) < 1e-8
    assert np.abs(run.q[-1] - [0.8, -0.6]).max() < 1e-3


def test_simulator_refuses_initial_positions_off_the_constraints(ros):
    """The four-bar's loop closure (a holonomic constraint) does not hold at q = 0: the simulator used to take the
    first step onto it with an impulse. Now configure fails naming the constraint; a closed start is accepted."""
    from vi_control.model.bundled import fourbar_initial_configuration

    bad = ros.start("simulator_node", name="bad", model="fourbar", dt=0.01, initial_positions=[0.0, 0.0, 0.0])
    bad.proc.wait(60.0)
    assert not bad.alive
    assert "initial_positions violates holonomic constraint 0, coincident" in bad.log(), bad.report()
    good = ros.start(
        "simulator_node",
        name="good",
        model="fourbar",
        dt=0.01,
        initial_positions=fourbar_initial_configuration(0.3).tolist(),
    )
    assert good.wait_for_log("mode=", 60.0), good.report()
    assert good.alive


def test_simulator_warns_when_it_starts_outside_the_joint_limits(ros):
    """Kinova's second joint lives in [0.82, 5.46] rad: the simulator's default initial positions (zeros) lie
    outside, and a controller would refuse every joint state. The simulator says so at start-up, naming the
    joint and its limits (a robot given as URDF text with such a joint, to keep the test small)."""
    from vi_control.model.generate import planar_chain_urdf

    xml = planar_chain_urdf(1, joint_type="revolute").replace('lower="-3.14159"', 'lower="0.82"')
    sim = ros.start("simulator_node", robot_description=xml, dt=0.01)
    assert sim.wait_for_log("mode=", 60.0), sim.report()
    assert "initial_positions outside the URDF joint limits: joint1 = 0 not in [0.82, 3.14159]" in sim.log()
    inside = ros.start("simulator_node", name="inside", robot_description=xml, dt=0.01, initial_positions=[1.0])
    assert inside.wait_for_log("mode=", 60.0), inside.report()
    assert "outside the URDF joint limits" not in inside.log()


def test_a_description_gets_the_named_models_yaml_only_if_it_is_that_robot(tmp_path):
    """``robot_description`` / ``urdf_path`` with ``model`` left at its default ('pendulum') put the pendulum's
    system YAML (``actuated: [theta]``) on any URDF: "actuated: joint 'theta' does not exist". The bundled
    model's YAML now applies only to that model's own robot (same ``<robot name>``): the acrobot's description
    still gets acrobot.yaml (elbow only), example-robot-data's double pendulum gets none."""
    from vi_control.model.bundled import bundled_urdf, example_robot_path
    from vi_control.ros.common import MODEL_PARAMETERS, parameter_defaults, robot_from_parameters

    p = parameter_defaults(MODEL_PARAMETERS)
    assert p["model"] == "pendulum"
    other = example_robot_path("double_pendulum").read_text()
    robot, _ = robot_from_parameters({**p, "robot_description": other})
    assert robot.actuated == ("joint1", "joint2")
    robot, _ = robot_from_parameters({**p, "urdf_path": str(example_robot_path("double_pendulum"))})
    assert robot.actuated == ("joint1", "joint2")
    acrobot, _ = robot_from_parameters(
        {**p, "model": "acrobot", "robot_description": open(bundled_urdf("double_pendulum")).read()}
    )
    assert acrobot.actuated == ("elbow",)
