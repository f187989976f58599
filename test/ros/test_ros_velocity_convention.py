"""One velocity convention on the wire: the simulator's JointState.velocity is
q̇_k = M⁻¹(p_k + (Δt/2)Sτ_g(q_k)) (control.tracking.wire_velocity, τ_g the holding torque: 0 for a configuration
held still), and the 'velocities' state estimate (control.tracking.StateEstimator, the controller's and the
planner's) turns a published joint state back into the simulator's x_k to round-off. Before, the simulator published
(q_k − q_{k−1})/Δt, the velocity half a step back."""

import threading

import numpy as np
import pinocchio as pin
import pytest

pytest.importorskip("rclpy")

from sensor_msgs.msg import JointState  # noqa: E402
from test_ros_dds import DISCOVERY, lockstep_step  # noqa: E402

from vi_control.control.tracking import StateEstimator  # noqa: E402
from vi_control.integrators import make_integrator  # noqa: E402
from vi_control.model.bundled import load_bundled  # noqa: E402
from vi_control.ros.common import RECORD_QOS  # noqa: E402
from vi_control.ros.messages import stamp_seconds  # noqa: E402

pytestmark = pytest.mark.ros


def test_simulator_states_read_back_with_velocities_reproduce_x_k(ros):
    """The double pendulum under gravity, stepped in lockstep with varying torques: every published state, read by a
    StateEstimator in 'velocities' mode (a fresh one: no history to fall back on), is the x_k the same integrator
    computes offline from the same commands — to 1e-10; the velocity on the wire is M⁻¹(p_k + (Δt/2)g(q_k)) with
    Pinocchio's M and g (both joints actuated: the holding torque is g)."""
    dt, q0 = 0.01, [0.4, -0.3]
    vi = make_integrator("midpoint", load_bundled("double_pendulum"), dt)
    sim = ros.start(
        "simulator_node",
        model="double_pendulum",
        dt=dt,
        mode="lockstep",
        initial_positions=q0,
        initial_velocities=[0.5, -1.0],
    )
    rec = ros.recorder(["shoulder", "elbow"])
    lock, messages = threading.Lock(), {}

    def keep(msg: JointState) -> None:
        with lock:
            messages[round(stamp_seconds(msg) / dt)] = (
                np.array(msg.position),
                np.array(msg.velocity),
                np.array(msg.effort),
            )

    rec.create_subscription(JointState, "joint_states", keep, RECORD_QOS)
    # (the recorder's own subscription too: lockstep_step reads its states, and the two match the publisher apart)
    assert rec.wait_for(
        lambda: 0 in messages and len(rec.states) > 0 and rec.cmd_pub.get_subscription_count() > 0, DISCOVERY
    ), sim.log()
    x = vi.state_from_configurations(np.array(q0) - dt * np.array([0.5, -1.0]), np.array(q0))  # the node's x_0
    xs = [x]
    for k in range(20):
        u = np.array([3.0 * np.sin(0.7 * k), -2.0 + 0.3 * k])
        lockstep_step(rec, u, sim)
        x = vi.step(x, u)
        xs.append(x)
    assert rec.wait_for(lambda: all(k in messages for k in range(21)), 10.0)
    worst, old_convention = 0.0, 0.0
    for k, x in enumerate(xs):
        q, v, _ = messages[k]
        est = StateEstimator(vi, "velocities").update(k * dt, q, v)
        worst = max(worst, np.abs(est - x).max())
        model, data = vi.robot.pin_model, vi.robot.create_data()
        M = pin.crba(model, data, x[:2])
        M = np.triu(M) + np.triu(M, 1).T
        g = pin.computeGeneralizedGravity(model, data, x[:2])
        assert np.allclose(v, np.linalg.solve(M, x[2:] + dt / 2 * g), rtol=0, atol=1e-12)
        if k:  # what the former (q_k − q_{k−1})/Δt convention would have carried
            old_convention = max(old_convention, np.abs((xs[k][:2] - xs[k - 1][:2]) / dt - v).max())
    print(f"velocities estimate: |x − x_k| {worst:.2e}; |q̇ − (q_k − q_(k−1))/Δt| up to {old_convention:.3f} rad/s")
    assert worst < 1e-10, worst
    assert old_convention > 1e-3  # (the two conventions differ measurably here)
