"""Plans and joint states <-> standard messages.

A Plan travels as two ``std_msgs/Float64MultiArray`` (exact, so the controller rebuilds it bit for bit)
plus a ``trajectory_msgs/JointTrajectory`` for other tools:

- ``~/gains``: dims ('time', N+1), ('inputs', nu), ('states', nx): K_0 … K_{N−1}, then K_final.
- ``~/plan_states``: dims ('time', N+1), ('values', 1+nx+nu), ('model:<hash>', 1): rows (t_k, X_k, U_k), last
  row (t_N, X_N, U_final); the third (size-1) dimension's label carries the planner model's hash, so a
  controller running another model rejects the plan.

Both use ``layout.data_offset = 1``: data[0] is the plan's sequence number (the padding the layout
allows), so a consumer pairs the two messages of the same plan.
"""

from __future__ import annotations

import numpy as np
from builtin_interfaces.msg import Duration
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from ..planning.plan import Plan


class PlanModelMismatch(ValueError):
    """A complete plan, but made for another model (different content hash)."""


def _array(seq: int, dims: list[tuple[str, int]], values: np.ndarray) -> Float64MultiArray:
    msg = Float64MultiArray()
    stride = int(np.prod([n for _, n in dims]))
    for label, n in dims:
        msg.layout.dim.append(MultiArrayDimension(label=label, size=int(n), stride=stride))
        stride //= max(int(n), 1)
    msg.layout.data_offset = 1
    msg.data = np.concatenate([[float(seq)], np.asarray(values, float).ravel()]).tolist()
    return msg


def _unpack(msg: Float64MultiArray, labels: tuple[str, ...]) -> tuple[int, np.ndarray]:
    got = tuple(d.label for d in msg.layout.dim)
    if got != labels:
        raise ValueError(f"layout labels {got}, expected {labels}")
    shape = tuple(d.size for d in msg.layout.dim)
    data = np.asarray(msg.data, float)
    off = msg.layout.data_offset
    if off != 1 or data.size != 1 + int(np.prod(shape)):
        raise ValueError(f"data has {data.size} values for shape {shape} with data_offset {off}")
    if not np.isfinite(data[0]):
        raise ValueError("plan sequence number is not finite")
    return int(data[0]), data[off:].reshape(shape)


def plan_to_messages(plan: Plan, seq: int) -> tuple[Float64MultiArray, Float64MultiArray]:
    """(gains, plan_states) messages of a Plan (layouts in the module docstring)."""
    N, nu, nx = plan.K.shape
    K_final = plan.K[-1] if plan.K_final is None else plan.K_final
    U_final = plan.U[-1] if plan.U_final is None else plan.U_final
    gains = _array(seq, [("time", N + 1), ("inputs", nu), ("states", nx)], np.concatenate([plan.K, [K_final]]))
    rows = np.column_stack([plan.times, plan.X, np.vstack([plan.U, U_final])])
    states = _array(seq, [("time", N + 1), ("values", 1 + nx + nu), ("model:" + plan.model_hash, 1)], rows)
    return gains, states


def plan_from_messages(gains: Float64MultiArray, states: Float64MultiArray, model_name: str, model_hash: str,
                       joint_names: list[str], input_names: list[str]) -> tuple[int, Plan]:
    """Rebuild (sequence number, Plan) from the two arrays; ValueError if they do not belong together."""
    seq_k, K = _unpack(gains, ("time", "inputs", "states"))
    labels = [d.label for d in states.layout.dim]
    plan_hash = labels[2][len("model:"):] if len(labels) == 3 and labels[2].startswith("model:") else None
    seq_x, rows = _unpack(states, ("time", "values", f"model:{plan_hash}"))
    rows = rows.reshape(rows.shape[:2])
    if seq_k != seq_x:
        raise ValueError(f"gains of plan {seq_k} and states of plan {seq_x}")
    if model_hash and plan_hash != model_hash:  # an observer (recorder) passes no hash and takes any plan
        raise PlanModelMismatch(f"plan {seq_k} was made for model {plan_hash}, this node runs {model_name} "
                                f"({model_hash})")
    nx, nu = K.shape[2], K.shape[1]
    if rows.shape != (K.shape[0], 1 + nx + nu):
        raise ValueError(f"plan_states shape {rows.shape} does not match gains {K.shape}")
    times = rows[:, 0]
    if len(times) < 2 or not (np.all(np.isfinite(rows)) and np.all(np.isfinite(K))) or np.any(np.diff(times) <= 0):
        raise ValueError("plan rejected: needs N >= 1 finite steps with increasing times")
    # over the whole horizon: wall-clock stamps (~1e9 s) leave ~1e-7 s of round-off in one difference
    dt = float(times[-1] - times[0]) / (len(times) - 1) if len(times) > 1 else 0.0
    plan = Plan(times=times, X=rows[:, 1:1 + nx], U=rows[:-1, 1 + nx:], K=K[:-1], dt=dt, model_name=model_name,
                model_hash=plan_hash or "", joint_names=list(joint_names), input_names=list(input_names),
                K_final=K[-1], U_final=rows[-1, 1 + nx:])
    return seq_k, plan


def plan_to_trajectory(plan: Plan, velocities: np.ndarray, input_joints: list[int], stamp) -> JointTrajectory:
    """JointTrajectory: positions q_k, velocities q̇_k, efforts U_k placed on the actuated joints."""
    msg = JointTrajectory()
    msg.header.stamp = stamp
    msg.joint_names = list(plan.joint_names)
    nq = len(plan.joint_names)
    for k, t in enumerate(plan.times):
        u = plan.U[k] if k < plan.horizon else (plan.U_final if plan.U_final is not None else plan.U[-1])
        effort = np.zeros(nq)
        effort[input_joints] = u[: len(input_joints)]
        sec, nsec = split_seconds(float(t - plan.times[0]))
        msg.points.append(JointTrajectoryPoint(
            positions=plan.X[k, :nq].tolist(), velocities=np.asarray(velocities[k], float).tolist(),
            effort=effort.tolist(), time_from_start=Duration(sec=sec, nanosec=nsec)))
    return msg


def split_seconds(t: float) -> tuple[int, int]:
    """(sec, nanosec) of a time in seconds, for stamps and durations."""
    sec, nsec = divmod(int(round(t * 1e9)), 10**9)
    return sec, nsec


def stamp_seconds(msg: JointState) -> float:
    return msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec


def joint_state_arrays(msg: JointState, joint_names: list[str]) -> tuple[np.ndarray, np.ndarray | None]:
    """(q, q̇ or None) in ``joint_names`` order; ValueError naming missing joints or non-finite values."""
    index = {n: i for i, n in enumerate(msg.name)}
    missing = [n for n in joint_names if n not in index]
    if missing:
        raise ValueError(f"joint state lacks joint(s) {missing} (got {list(msg.name)})")
    if len(msg.position) != len(msg.name):
        raise ValueError(f"joint state has {len(msg.position)} positions for {len(msg.name)} names")
    order = [index[n] for n in joint_names]
    q = np.asarray(msg.position, float)[order]
    if not np.all(np.isfinite(q)):
        raise ValueError("joint state positions contain NaN/inf")
    v = None
    if len(msg.velocity) == len(msg.name):
        v = np.asarray(msg.velocity, float)[order]
        if not np.all(np.isfinite(v)):
            v = None
    return q, v
