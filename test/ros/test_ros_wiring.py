"""Node wiring over real DDS with two actuators: command order against joint names, the stale timeout
within one watchdog period of its parameter (zero torque: a stale q̇ is not damped), safe damping from the measured q̇
on a fresh state, the simulator's mass_scale.

References are computed here: the tracking law u = U_k + K_k (X_k − x) in numpy, the heavier robot from a URDF
whose masses and inertias this test scales itself.
"""

import re
import time

import numpy as np
import pinocchio as pin
import pytest

pytest.importorskip("rclpy")

from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import UInt8MultiArray  # noqa: E402
from test_ros_dds import DISCOVERY  # noqa: E402
from test_safe_damping import pinocchio_mass_matrix  # noqa: E402

from vi_control.control.plan import Plan  # noqa: E402
from vi_control.integrators.midpoint import MidpointVI  # noqa: E402
from vi_control.model import load_robot  # noqa: E402
from vi_control.model.bundled import bundled_urdf, load_bundled  # noqa: E402
from vi_control.ros.common import LATCHED_QOS, RECORD_QOS  # noqa: E402
from vi_control.ros.messages import plan_to_message, split_seconds  # noqa: E402

pytestmark = pytest.mark.ros
JOINTS = ["shoulder", "elbow"]  # the double pendulum, both joints actuated (20 N·m)
DT, T0, TIMEOUT = 0.1, 1.0, 0.4


@pytest.fixture(scope="module")
def double_vi():
    return MidpointVI(load_bundled("double_pendulum"), DT)


def _mass_matrix(robot, q: np.ndarray) -> np.ndarray:
    """M(q) from Pinocchio's crba (which fills the upper triangle)."""
    M = pin.crba(robot.pin_model, robot.create_data(), q)
    return np.triu(M) + np.triu(M, 1).T


def _velocity_state(robot, q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """(q, M(q)q̇ − (Δt/2)g(q)): a measured velocity without an effort, the holding torque (both joints actuated)
    standing in for the applied one (docs/concepts/ros.md's velocity convention); Pinocchio's M and gravity."""
    g = pin.computeGeneralizedGravity(robot.pin_model, robot.create_data(), q)
    return np.concatenate([q, _mass_matrix(robot, q) @ v - DT / 2 * g])


def _plan(vi, N: int = 60) -> Plan:
    """Constant reference near hanging, constant inputs, and gains whose rows differ (u₁ ≠ u₂ for any error)."""
    x_ref = vi.state_from_configurations(np.array([0.1, -0.05]), np.array([0.1, -0.05]))
    K = np.random.default_rng(5).normal(0.0, 2.0, (vi.nu, vi.nx))
    r = vi.robot
    return Plan(
        times=T0 + np.arange(N + 1) * DT,
        X=np.tile(x_ref, (N + 1, 1)),
        U=np.tile([1.5, -0.5], (N, 1)),
        K=np.tile(K, (N, 1, 1)),
        dt=DT,
        model_name=r.name,
        model_hash=r.hash,
        joint_names=JOINTS,
        input_names=JOINTS,
    )


def test_two_actuator_controllers_command_in_joint_order_and_go_safe_on_time(ros, double_vi):
    vi, plan = double_vi, _plan(double_vi)
    common = dict(
        model="double_pendulum",
        dt=DT,
        trigger="joint_state",
        state_timeout=TIMEOUT,
        use_sim_time=True,
        safe_mode="damping",
        safe_damping=1.0,
        path_tolerance=1.0,
    )
    names = {"default": [], "reversed": JOINTS[::-1]}
    ctrls = {
        k: ros.start(
            "controller_node", name=k, controller_name=f"{k}_controller", **common, **({"joints": j} if j else {})
        )
        for k, j in names.items()
    }
    recs = {
        k: ros.recorder(JOINTS, controller_name=f"{k}_controller", name=f"rec_{k}", record_states=False) for k in names
    }
    rec = recs["default"]
    rec.create_publisher(UInt8MultiArray, "vi_planner/plan", LATCHED_QOS).publish(plan_to_message(plan, 3))
    for c in ctrls.values():
        assert c.wait_for_log("accepted plan 3", DISCOVERY), c.log()
    assert rec.wait_for(lambda: rec.state_pub.get_subscription_count() >= 2, DISCOVERY)
    # each controller's commands reach its recorder (the only publisher on the topic): a command sent
    # before its reader matched would be lost
    for k, r in recs.items():
        assert r.wait_for(lambda r=r, k=k: r.count_publishers(f"{k}_controller/commands") > 0, DISCOVERY), k

    def publish(t, q, v, clock=None):
        msg = JointState(name=JOINTS, position=list(q), velocity=list(v))
        msg.header.stamp.sec, msg.header.stamp.nanosec = split_seconds(t)
        rec.publish_clock(t if clock is None else clock)
        time.sleep(0.1)  # (a clock that jumped may first fire the watchdog: its command comes before ours)
        n0 = {k: len(r.commands) for k, r in recs.items()}
        rec.state_pub.publish(msg)
        return n0

    def send(t, q, v, clock=None):
        """A joint state stamped t (the clock at ``clock``, default t); both controllers' next commands."""
        n0 = publish(t, q, v, clock)
        assert all(r.wait_for(lambda r=r, k=k: len(r.commands) > n0[k], 10.0) for k, r in recs.items()), [
            c.log()[-2000:] for c in ctrls.values()
        ]
        time.sleep(0.1)
        return {k: r.commands[-1][1] for k, r in recs.items()}

    def law(k, x):
        return plan.U[k] + plan.K[k] @ (plan.X[k] - x)

    # two configurations one Δt apart (x by the discrete Legendre transform) with a measured q̇ that is not
    # their difference quotient: the law uses x, the safe damping the measured q̇
    q_prev, q, v_meas = np.array([0.12, -0.02]), np.array([0.15, -0.06]), np.array([0.9, -1.3])
    # the plan starts at its stated t0, to the nearest sample: not before t0 − Δt/2, step 0 from then on. Before it
    # (no plan runs) a lockstep controller steps the simulator to that start under the safe command — here damping of
    # the measured q̇, d capped for a hold of Δt (the first state: no interval yet) — not the plan's law
    publish(T0 - 0.7 * DT, q_prev, v_meas)
    for k, r in recs.items():
        assert r.wait_for(lambda r=r: len(r.commands) == 1, 10.0), ctrls[k].log()[-2000:]
    time.sleep(0.3)
    cap = 1.0 / (DT * np.abs(np.linalg.inv(pinocchio_mass_matrix(vi.robot, q_prev))).sum(axis=1))
    safe = -np.minimum(1.0, cap) * v_meas
    assert len(recs["default"].commands) == len(recs["reversed"].commands) == 1, "more than one command per state"
    assert recs["default"].commands[0][1] == pytest.approx(safe, abs=1e-9)
    assert recs["reversed"].commands[0][1] == pytest.approx(safe[::-1], abs=1e-9)
    u = send(T0 - 0.3 * DT, q_prev, v_meas)  # 0.4·Δt after the last sample: p = M(q)q̇ from the measured q̇
    assert u["default"] == pytest.approx(law(0, _velocity_state(vi.robot, q_prev, v_meas)), abs=1e-9)
    send(T0 + 2 * DT, q_prev, v_meas)
    u = send(T0 + 3 * DT, q, v_meas)
    x = vi.state_from_configurations(q_prev, q)
    expected = law(3, x)
    assert abs(expected[0] - expected[1]) > 0.5
    assert u["default"] == pytest.approx(expected, abs=1e-9)  # entries in the model's actuated order
    assert u["reversed"] == pytest.approx(expected[::-1], abs=1e-9)  # entries in the `joints` order

    # joint states stop while the clock runs on: no fault up to 0.9 × state_timeout of age, the watchdog's safe
    # command at the latest one watchdog period (state_timeout / 2) after the timeout: zero torque, as the last q̇ is
    # stale (damping it would be a constant torque repeated for as long as states stay away)
    t_last = T0 + 3 * DT
    n0 = {k: len(r.commands) for k, r in recs.items()}
    for age in np.arange(0.05, 0.9 * TIMEOUT + 1e-9, 0.05):
        rec.publish_clock(t_last + age)
        time.sleep(0.05)
    time.sleep(0.3)
    assert all(len(r.commands) == n0[k] for k, r in recs.items()), "safe command before the timeout"
    assert all("joint states stale" not in c.log() for c in ctrls.values())
    for age in np.arange(0.9 * TIMEOUT + 0.05, 1.5 * TIMEOUT + 0.06, 0.05):
        rec.publish_clock(t_last + age)
        time.sleep(0.05)
    for k, r in recs.items():
        assert r.wait_for(lambda r=r, k=k: len(r.commands) > n0[k], 5.0), ctrls[k].log()[-2000:]
        assert not r.commands[n0[k]][1].any()
        assert ctrls[k].wait_for_log("joint states stale", 5.0)

    # a state whose stamp is 0.7 × state_timeout old is tracked (the one before it then 0.95 × old); one 1.2 × old
    # is refused as stale
    t_s = t_last + 3.0
    send(t_s - DT, q_prev, v_meas, clock=t_s - DT + 0.7 * TIMEOUT)
    u = send(t_s, q, v_meas, clock=t_s + 0.7 * TIMEOUT)
    assert u["default"] == pytest.approx(law(int(round((t_s - T0) / DT)), x), abs=1e-9)
    later = t_s + 1.0
    u = send(later - 1.2 * TIMEOUT, q, v_meas, clock=later)
    assert not u["default"].any() and not u["reversed"].any()  # refused: the safe command, no velocity to damp
    # ... and refused by the stamp check, which resets the estimate: the next state (0.38 s old: fresh) takes p from its
    # measured q̇. (Let in, the old state would have been the zero of the tick's own stale check — the same command —
    # and this one's p would come from the two configurations one Δt apart.)
    t2 = later - 1.2 * TIMEOUT + DT
    u = send(t2, q, v_meas, clock=later)
    x_measured = _velocity_state(vi.robot, q, v_meas)
    assert u["default"] == pytest.approx(law(int(round((t2 - T0) / DT)), x_measured), abs=1e-9)

    # a fresh, valid state 1.4 rad off the plan (path_tolerance 1 rad): the plan is aborted and the safe command
    # damps the measured q̇ (not the configurations' difference quotient), −d·q̇ in each controller's joint order,
    # d capped per joint to 1/(T·Σ_j |(M⁻¹)_ij|) for the hold T = the states' interval Δt (Pinocchio's M here):
    # the light elbow's below d = 1 (held 0.1 s, d = 1 would reverse its velocity), the shoulder's above
    send(later, q, v_meas)
    q_off = q + [1.4, 0.0]
    u = send(later + DT, q_off, v_meas)
    cap = 1.0 / (DT * np.abs(np.linalg.inv(pinocchio_mass_matrix(vi.robot, q_off))).sum(axis=1))
    assert cap[1] < 0.9 and cap[0] > 1.1
    damping = -np.minimum(1.0, cap) * v_meas
    assert u["default"] == pytest.approx(damping, abs=1e-9) and u["reversed"] == pytest.approx(damping[::-1], abs=1e-9)
    assert all(c.wait_for_log("path tolerance violated", 5.0) for c in ctrls.values())
    assert all(c.alive for c in ctrls.values())


def _scaled_urdf(xml: str, s: float) -> str:
    """The URDF with every link's mass and inertia multiplied by s (independent of load_robot's mass_scale)."""

    def scale(m):
        return f'{m.group(1)}="{float(m.group(2)) * s!r}"'

    return re.sub(r'\b(value|ixx|ixy|ixz|iyy|iyz|izz)="([^"]+)"', scale, xml)


def test_simulator_steps_the_scaled_robot_in_its_joint_order(ros):
    s, q0 = 1.5, np.array([0.3, -0.2])
    sim = ros.start(
        "simulator_node",
        model="double_pendulum",
        dt=0.02,
        mode="lockstep",
        mass_scale=s,
        joints=JOINTS[::-1],
        initial_positions=q0.tolist(),
        idle_publish_period=10.0,
    )
    rec = ros.recorder(JOINTS)
    velocities = {}  # stamp → published q̇ (the recorder keeps positions and efforts)
    rec.create_subscription(
        JointState,
        "joint_states",
        lambda m: velocities.setdefault(
            round(m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec, 6), np.array(m.velocity)
        ),
        RECORD_QOS,
    )
    assert rec.wait_for(lambda: rec.states and rec.cmd_pub.get_subscription_count() > 0, DISCOVERY), sim.log()
    with open(bundled_urdf("double_pendulum")) as f:
        xml = f.read()
    heavy = MidpointVI(load_robot(_scaled_urdf(xml, s), None), 0.02)
    nominal = MidpointVI(load_bundled("double_pendulum"), 0.02)
    x = x_nom = heavy.state_from_configurations(q0, q0)
    x_nom = nominal.state_from_configurations(q0, q0)
    for i in range(5):
        cmd = np.array([4.0, -2.0])  # (elbow, shoulder): the simulator's `joints` order
        n0 = len(rec.states)
        rec.publish_command(cmd)
        assert rec.wait_for(lambda n0=n0: len(rec.states) > n0, 10.0), sim.log()
        q_before = x[:2]
        x, x_nom = heavy.step(x, cmd[::-1]), nominal.step(x_nom, cmd[::-1])
        assert rec.states[-1][2] == pytest.approx(x[:2], abs=1e-10), i
        stamp = round(rec.states[-1][1], 6)
        assert rec.wait_for(lambda stamp=stamp: stamp in velocities, 5.0)
        # q̇_k = M(q_k)⁻¹(p_k + (Δt/2)g(q_k)) (the wire's convention, docs/concepts/ros.md; both joints
        # actuated), M and g
        # from Pinocchio for the heavy robot
        M = _mass_matrix(heavy.robot, x[:2])
        g = pin.computeGeneralizedGravity(heavy.robot.pin_model, heavy.robot.create_data(), x[:2])
        assert velocities[stamp] == pytest.approx(np.linalg.solve(M, x[2:] + 0.01 * g), abs=1e-8)
        assert np.abs(velocities[stamp] - (x[:2] - q_before) / 0.02).max() > 1e-4  # (not the difference quotient)
    assert np.abs(x[:2] - x_nom[:2]).max() > 1e-3  # the nominal robot would be visibly elsewhere
    assert sim.alive
