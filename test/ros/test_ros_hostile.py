"""Hostile messages to the nodes over real DDS (separate processes): plans whose gains or Δt do not fit the
controller's model, joint states and goals that name a joint twice, a goal beyond the URDF's joint limits. Each is
refused with a log line saying why, the node keeps running and keeps what it had: the controller tracks its
previous plan (its command is that plan's u = U_k + K_k (X_k − x)), the planner's latched plan stays the same."""

import time

import numpy as np
import pytest

pytest.importorskip("rclpy")

from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import UInt8MultiArray  # noqa: E402
from test_ros_dds import DISCOVERY, _pendulum_hold_plan, send_state  # noqa: E402

from vi_control.control.plan import Plan  # noqa: E402
from vi_control.ros.common import LATCHED_QOS, STREAM_QOS  # noqa: E402
from vi_control.ros.messages import plan_to_message  # noqa: E402

pytestmark = pytest.mark.ros


def test_controller_refuses_plans_that_do_not_fit_and_joint_states_naming_a_joint_twice(ros, pendulum_vi):
    vi = pendulum_vi
    ctrl = ros.start(
        "controller_node",
        model="pendulum",
        dt=0.1,
        trigger="joint_state",
        state_timeout=0.6,
        safe_mode="zero",
        use_sim_time=True,
        log_throttle_period=0.0,  # every refusal logged
        safe_dampin=3.0,
    )  # a typo: rclpy drops undeclared parameters silently
    assert ctrl.wait_for_log(
        "ignored parameters: unknown key(s) ['safe_dampin'] (did you mean 'safe_damping'?)", DISCOVERY
    ), ctrl.log()
    rec = ros.recorder(["theta"])
    good = _pendulum_hold_plan(vi, 50, t0=1.0)
    plans = rec.create_publisher(UInt8MultiArray, "vi_planner/plan", LATCHED_QOS)
    plans.publish(plan_to_message(good, 42))
    assert ctrl.wait_for_log("accepted plan 42", DISCOVERY), ctrl.log()

    # the gains act on 1 of the state's 2 tangent entries: before, accepted, then every command failed as
    # "tracking error undefined" (a matmul error) and the robot got the safe command instead of plan 42's law
    N = 5
    narrow = Plan(
        times=1.0 + 0.1 * np.arange(N + 1),
        X=np.tile(good.X[0], (N + 1, 1)),
        U=np.zeros((N, 1)),
        K=np.ones((N, 1, 1)),
        dt=0.1,
        model_name="pendulum",
        model_hash=vi.robot.hash,
        joint_names=["theta"],
        input_names=["theta"],
    )
    plans.publish(plan_to_message(narrow, 43))
    assert ctrl.wait_for_log("plan 43 has nx, nu, ndx = (2, 1, 1); model has (2, 1, 2): rejected", 10.0), ctrl.log()
    # a Δt of 1e-7 s (the plan's Δt becomes the state estimate's): before, accepted and the integrator rebuilt at it
    tiny = Plan(
        times=1.0 + 1e-7 * np.arange(N + 1),
        X=np.tile(good.X[0], (N + 1, 1)),
        U=np.zeros((N, 1)),
        K=np.zeros((N, 1, 2)),
        dt=1e-7,
        model_name="pendulum",
        model_hash=vi.robot.hash,
        joint_names=["theta"],
        input_names=["theta"],
    )
    plans.publish(plan_to_message(tiny, 44))
    assert ctrl.wait_for_log("plan 44 has dt = 1e-07 s, outside [1e-05, 10] s: rejected", 10.0), ctrl.log()
    assert "accepted plan 43" not in ctrl.log() and "accepted plan 44" not in ctrl.log()
    assert rec.wait_for(lambda: rec.state_pub.get_subscription_count() > 0, DISCOVERY)

    def send(t, q, v, names=("theta",)):
        return send_state(rec, ctrl, t, q, v, names)

    # plan 42 is still the one tracked: u = U_k + K_k (X_k − x) with x from two configurations one Δt apart
    q_prev, q = np.array([np.pi - 0.1]), np.array([np.pi - 0.08])
    send(1.0 + 3 * vi.dt, q_prev, [0.0])
    u = send(1.0 + 4 * vi.dt, q, [])
    x = vi.state_from_configurations(q_prev, q)
    expected = good.U[4] + good.K[4] @ (good.X[4] - x)
    assert abs(expected[0]) > 0.1 and u[0] == pytest.approx(expected[0], abs=1e-9)
    # two positions for theta (which one is meant?): before, the last one silently won (here 0.0, far from π)
    u = send(1.0 + 5 * vi.dt, [np.pi - 0.06, 0.0], [0.0, 0.0], names=("theta", "theta"))
    assert u[0] == 0.0  # the safe command (safe_mode zero)
    assert ctrl.wait_for_log("invalid joint state: joint state names joint(s) ['theta'] more than once", 5.0)
    assert ctrl.alive


TASK = """
name: cartpole_shift
model: cartpole
dt: 0.05
horizon: 20
start: {q: [0.0, 0.0], qdot: [0.0, 0.0]}
goal: {q: [0.2, 0.0]}
reference: {type: goal}
weights: {Q: [10.0, 10.0, 1.0, 1.0], R: 0.1}
optimizer: {method: ddp, max_iterations: 3}
"""  # the 0.2 m shift converges in 2 iterations (|dJ| ~ 1e-17); a swing-up to the upright cannot in 3


def test_planner_keeps_its_plan_when_a_goal_is_beyond_the_limits_names_a_joint_twice_or_diverges(ros, tmp_path):
    """The cart-pole's slider is limited to ±2 m (urdf/cartpole.urdf): a goal at 5 m was planned through the end
    stop before (DDP on the VI, which does not enforce limits). Now the re-plan fails naming the joint; a goal
    naming the slider twice is refused; a swing-up DDP cannot finish in 3 iterations is not published — and the
    plan on the wire stays the first one throughout."""
    path = tmp_path / "task_cartpole_shift.yaml"
    path.write_text(TASK)
    planner = ros.start("planner_node", task=str(path), startup_wait=0.0, use_measured_state=False)
    rec = ros.recorder(["slider", "hinge"])
    assert rec.wait_for(lambda: rec.plan_message is not None, DISCOVERY), planner.log()
    seq, first, _ = rec.plan()
    assert 0.05 < first.X[-1, 0] < 0.25  # on its way to the 0.2 m goal (1 s, weights that let it lag)
    goals = rec.create_publisher(JointState, "vi_planner/goal", STREAM_QOS)
    assert rec.wait_for(lambda: goals.get_subscription_count() > 0, DISCOVERY), planner.log()
    goals.publish(JointState(name=["slider", "hinge"], position=[5.0, 0.0]))
    assert planner.wait_for_log(
        "planning failed: TaskError: goal.q[0]: 5 is outside joint 'slider''s limits [-2, 2]", 30.0
    ), planner.log()
    goals.publish(JointState(name=["slider", "hinge", "slider"], position=[0.5, 0.0, 1.5]))
    assert planner.wait_for_log("goal refused: joint state names joint(s) ['slider'] more than once", 10.0), (
        planner.log()
    )
    goals.publish(JointState(name=["slider", "hinge"], position=[0.0, np.pi]))
    assert planner.wait_for_log("plan not published: the optimizer did not converge", 30.0), planner.log()
    time.sleep(1.5)  # the latched plan is re-published every second: still the first one
    assert rec.plan()[0] == seq and planner.log().count("published plan") == 1
    assert planner.alive


@pytest.mark.parametrize(
    "initial, message",
    [
        ([5.0, 0.0], "initial_positions[0]: 5 is outside joint 'slider''s limits [-2, 2]"),
        ([float("nan"), 0.0], "initial_positions [nan, 0.0] and initial_velocities [0.0, 0.0] must be finite"),
    ],
)
def test_simulator_refuses_an_initial_state_beyond_the_limits_or_not_finite(ros, initial, message):
    """Before: the cart-pole simulator started 3 m past its end stop, or published NaN joint states. Now configure
    fails with the reason, and autostart ends the process (a node started with a bad state must not idle)."""
    sim = ros.start("simulator_node", model="cartpole", dt=0.01, mode="lockstep", initial_positions=initial)
    assert sim.wait_for_log(f"configure failed: ValueError: {message}", DISCOVERY), sim.log()
    sim.proc.wait(DISCOVERY)
    assert not sim.alive


def test_a_node_refusing_a_broken_robot_description_configures_from_the_corrected_one(ros):
    """robot_description_topic: a URDF with a negative effort limit is refused (configure fails, logged with the
    joint); the corrected description published next configures and activates the node. Before: only the first
    description was ever tried — the node idled unconfigured with a good model on the topic."""
    from std_msgs.msg import String

    from vi_control.model.bundled import bundled_urdf

    good = open(bundled_urdf("pendulum")).read()
    bad = good.replace('effort="', 'effort="-', 1)
    assert bad != good
    ctrl = ros.start(
        "controller_node", model="pendulum", robot_description_topic="my_description", trigger="joint_state"
    )
    rec = ros.recorder(["theta"])
    pub = rec.create_publisher(String, "my_description", LATCHED_QOS)
    pub.publish(String(data=bad))
    assert ctrl.wait_for_log("configure failed: URDFError: joint 'theta' <limit>: effort=", DISCOVERY), ctrl.log()
    pub.publish(String(data=good))
    assert ctrl.wait_for_log("pendulum: joints=['theta']", DISCOVERY), ctrl.log()
    assert ctrl.alive
