"""Vehicle mode of the three nodes over real DDS (Jimenez2013, §6.1): odometry out, thruster efforts in, a DMOC plan
toward a PoseStamped goal, TV-LQR on the Lie algebra; separate processes, own domain, lockstep."""

import time

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy")

from geometry_msgs.msg import PoseStamped  # noqa: E402
from std_msgs.msg import UInt8MultiArray  # noqa: E402
from test_ros_dds import DISCOVERY  # noqa: E402

from vi_control.integrators import make_integrator  # noqa: E402
from vi_control.mechanics.groups import quaternion_from_rotation  # noqa: E402
from vi_control.model.rigid_body import load_rigid_body  # noqa: E402
from vi_control.planning.vehicle import maneuver_settings, plan_maneuver, pose_from_spec  # noqa: E402
from vi_control.ros.common import LATCHED_QOS, STREAM_QOS  # noqa: E402
from vi_control.ros.launcher import NodeProcess  # noqa: E402
from vi_control.ros.messages import plan_to_message  # noqa: E402
from vi_control.ros.vehicle import state_from_odometry  # noqa: E402

pytestmark = pytest.mark.ros
BODY = load_rigid_body("vehicle_uuv")
DT = maneuver_settings(BODY).dt


def _start(h, node: str, overrides: dict | None = None) -> NodeProcess:
    """A node with its config/ros_vehicle_<node>.yaml (plus overrides), stopped by the fixture."""
    p = NodeProcess(
        f"{node}_node", h.domain, [f"ros_vehicle_{node}.yaml"], overrides, str(h.log_dir), name=node, namespace=h.ns
    )
    h.procs.append(p)
    return p


def _goal_message(g: np.ndarray, frame: str = "odom") -> PoseStamped:
    msg = PoseStamped()
    msg.header.frame_id = frame
    q = quaternion_from_rotation(g[:3, :3])
    msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = (float(a) for a in g[:3, 3])
    msg.pose.orientation.x, msg.pose.orientation.y, msg.pose.orientation.z, msg.pose.orientation.w = (
        float(a) for a in q
    )
    return msg


def test_vehicle_rest_to_rest_through_the_three_nodes(ros):
    vi = make_integrator("lie_group", BODY, DT)
    sim, ctrl, plnr = (_start(ros, n) for n in ("simulator", "controller", "planner"))
    rec = ros.recorder([], record_states=False, odometry=True, controller_name="thruster_controller")
    goal_pub = rec.create_publisher(PoseStamped, "vi_planner/goal", STREAM_QOS)
    assert rec.wait_for(lambda: rec.odometry_messages and goal_pub.get_subscription_count() > 0, DISCOVERY), plnr.log()
    assert rec.wait_for(lambda: rec.cmd_pub.get_subscription_count() > 0, DISCOVERY), sim.log()
    assert plnr.wait_for_log("vehicle vehicle_uuv", DISCOVERY), plnr.log()
    goal = pose_from_spec({"position": [2.0, 1.0, 0.0], "rpy_deg": [0.0, 0.0, 90.0]}, "SE3")
    # the planner plans from the measured odometry: make sure it has one before the goal arrives
    time.sleep(0.5)
    goal_pub.publish(_goal_message(goal))
    assert rec.wait_for(lambda: rec.plan() is not None, 60.0), plnr.log()
    seq, plan, _ = rec.plan(BODY.name, BODY.hash, list(BODY.actuated))
    assert plan.X.shape == (33, 18) and plan.K.shape == (32, 5, 12)  # nx and ndx travel separately
    assert ctrl.wait_for_log(f"accepted plan {seq}", 30.0), ctrl.log()
    t_end = plan.times[-1] + 6 * DT

    def stamp():
        with rec.lock:
            return state_from_odometry(vi, rec.odometry_messages[-1])[0] if rec.odometry_messages else 0.0

    assert rec.wait_for(lambda: stamp() >= t_end, 60.0), ctrl.log()[-2000:] + sim.log()[-2000:]
    with rec.lock:
        states = [state_from_odometry(vi, m) for m in rec.odometry_messages]
    by_stamp = {round(t / DT): x for t, x in states}
    k0 = round(plan.times[0] / DT)
    # the simulator steps the same discrete map the plan was made with: tracking at round-off
    err = max(
        np.abs(vi.state.diff(plan.X[k], by_stamp[k0 + k])).max() for k in range(plan.horizon + 1) if k0 + k in by_stamp
    )
    assert err < 1e-6, err
    final = states[-1][1]
    assert np.abs(vi.state.diff(vi.state_from_pose(goal), final)).max() < 1e-6  # at the goal, at rest
    assert sim.alive and ctrl.alive and plnr.alive


def test_vehicle_nodes_refuse_bad_and_unreachable_goals_and_keep_a_safe_command(ros, tmp_path):
    import yaml

    from vi_control.model.bundled import share_dir

    weak = yaml.safe_load((share_dir() / "config" / "vehicle_uuv.yaml").read_text())
    weak["thruster_layout"]["limit"] = 0.1
    weak_path = tmp_path / "weak_uuv.yaml"
    weak_path.write_text(yaml.safe_dump(weak))
    vi = make_integrator("lie_group", BODY, DT)
    # the simulator starts half a turn (about z) away from where the controller's plan starts
    sim = _start(ros, "simulator", dict(initial_pose=[0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0]))
    ctrl = _start(ros, "controller", dict(safe_damping=2.0))
    plnr = _start(ros, "planner", dict(vehicle=str(weak_path)))
    rec = ros.recorder([], record_states=False, odometry=True, controller_name="thruster_controller")
    goal_pub = rec.create_publisher(PoseStamped, "vi_planner/goal", STREAM_QOS)
    assert rec.wait_for(lambda: rec.odometry_messages and goal_pub.get_subscription_count() > 0, DISCOVERY), plnr.log()
    bad = _goal_message(np.eye(4))
    bad.pose.orientation.w = 2.0  # |q| = 2
    goal_pub.publish(bad)
    assert plnr.wait_for_log("goal rejected: goal orientation: quaternion is not unit length", 20.0), plnr.log()
    far = pose_from_spec({"position": [3.0, 1.0, 0.0], "rpy_deg": [0.0, 0.0, 90.0]}, "SE3")
    goal_pub.publish(_goal_message(far))
    assert plnr.wait_for_log("goal unreachable under the actuator limits", 60.0), plnr.log()
    assert rec.plan() is None and plnr.alive  # nothing published, still running

    plan, _ = plan_maneuver(vi, pose_from_spec({"position": [1.0, 0.0, 0.0]}, "SE3"))
    rec.create_publisher(UInt8MultiArray, "vi_planner/plan", LATCHED_QOS).publish(
        plan_to_message(plan, 99, start_on_receipt=True)
    )
    assert ctrl.wait_for_log("accepted plan 99", DISCOVERY), ctrl.log()
    assert ctrl.wait_for_log("tracking error undefined: RetractionDomainError", 20.0), ctrl.log()
    assert rec.wait_for(lambda: rec.commands, 10.0)
    u = rec.commands[-1][1]
    assert u.shape == (5,) and np.all(np.isfinite(u)) and np.abs(u).max() == 0.0  # at rest: damping is zero
    assert sim.alive and ctrl.alive
