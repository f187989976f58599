"""What a view replays: a robot, its executed motion and its planned motion — from a Plan file or an MCAP recording.

A recording (``vi_control.ros.bag``, ``ros2 bag record -s mcap``) is read with the ``mcap`` reader and
``mcap-ros2-support``'s decoder: the model from ``robot_description``, the executed motion from ``joint_states``
(header stamps), the planned motion from the last ``JointTrajectory`` on a topic ending in ``/trajectory``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..control.plan import Plan
from ..model.robot import RobotModel


@dataclass
class Replay:
    """``q`` (T, nq) at ``times`` (T,): the executed (or, for a plan alone, the planned) motion; ``plan_q`` at
    ``plan_times``: the planned motion drawn as the ghost, or None."""

    robot: RobotModel
    times: np.ndarray
    q: np.ndarray
    plan_times: np.ndarray | None = None
    plan_q: np.ndarray | None = None


def _load_model(model) -> RobotModel:
    from ..model.spec import ModelSpec

    return model if isinstance(model, RobotModel) else ModelSpec.parse(model).load()


def replay_from_plan(plan: Plan | str | Path, model: str | RobotModel | None = None) -> Replay:
    """A plan (or its .npz file) alone: the robot follows the plan. ``model`` (a ``ModelSpec`` name, a URDF, a
    ``RobotModel``) defaults to the plan's ``model_name``; a model whose hash is not the plan's is used with a
    warning (the view needs the kinematics only)."""
    plan = plan if isinstance(plan, Plan) else Plan.load(str(plan))
    robot = _load_model(model or plan.model_name)
    if plan.model_hash and robot.hash != plan.model_hash:
        warnings.warn(
            f"plan made for {plan.model_name!r} ({plan.model_hash}), shown on {robot.name!r} ({robot.hash})",
            stacklevel=2,
        )
    q = plan.X[:, : robot.nq]
    return Replay(robot, np.asarray(plan.times, float), np.asarray(q, float))


def _stamp(header_stamp) -> float:
    return header_stamp.sec + 1e-9 * header_stamp.nanosec


def _columns(names: list[str], positions, joint_names: list[str]) -> np.ndarray | None:
    index = {n: i for i, n in enumerate(names)}
    if not all(n in index for n in joint_names):
        return None
    return np.array([positions[index[n]] for n in joint_names], float)


def replay_from_recording(path: str | Path, model: str | RobotModel | None = None) -> Replay:
    """An MCAP recording of a run: the executed joint states with the last planned trajectory as the ghost.
    ``model`` overrides the recorded ``robot_description``."""
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    description, states, trajectory = None, [], None
    with open(path, "rb") as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        for schema, channel, _message, msg in reader.iter_decoded_messages():
            if schema.name == "std_msgs/msg/String" and channel.topic.endswith("robot_description"):
                description = msg.data
            elif schema.name == "sensor_msgs/msg/JointState":
                states.append((_stamp(msg.header.stamp), list(msg.name), list(msg.position)))
            elif schema.name == "trajectory_msgs/msg/JointTrajectory" and channel.topic.endswith("/trajectory"):
                trajectory = msg
    if model is None and description is None:
        raise ValueError(f"{path}: no robot_description recorded (pass the model)")
    robot = _load_model(model) if model is not None else _load_model(description)
    rows = [(t, c) for t, names, pos in states if (c := _columns(names, pos, robot.joint_names)) is not None]
    if not rows:
        raise ValueError(f"{path}: no joint_states with the joints {robot.joint_names}")
    times, q = np.array([r[0] for r in rows]), np.array([r[1] for r in rows])
    plan_times = plan_q = None
    if trajectory is not None and trajectory.points:
        t0 = _stamp(trajectory.header.stamp)
        points = [
            (
                t0 + _stamp(p.time_from_start),
                _columns(list(trajectory.joint_names), list(p.positions), robot.joint_names),
            )
            for p in trajectory.points
        ]
        if all(c is not None for _, c in points):
            plan_times = np.array([t for t, _ in points])
            plan_q = np.array([c for _, c in points])
    return Replay(robot, times, q, plan_times, plan_q)


def load_replay(source: str | Path, model: str | RobotModel | None = None) -> Replay:
    """A replay from a plan file (.npz) or a recording (.mcap)."""
    suffix = Path(source).suffix.lower()
    if suffix == ".npz":
        return replay_from_plan(source, model)
    if suffix == ".mcap":
        return replay_from_recording(source, model)
    raise ValueError(f"{source}: expected a plan (.npz) or an MCAP recording (.mcap)")
