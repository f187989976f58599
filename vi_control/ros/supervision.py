"""What the nodes report besides their outputs: the controller's JTC-style ``~/controller_state`` message and its
``/diagnostics`` status with its command loop's timing (``LoopTiming``), and the simulator's step timing
(``CommandTiming``) and status. (The joint-state limits the controller checks are ``control.intake.JointLimits``.)"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from ..model.robot import RobotModel, wrap_angle
from .messages import split_seconds

if TYPE_CHECKING:
    from ..control.intake import StateIntake
    from ..control.runner import PlanRunner

# ~/controller_state is a trajectory_msgs/JointTrajectory whose four points are, in this order (control_msgs'
# JointTrajectoryControllerState is not installable here; the fields are the same):
STATE_POINTS = ("reference", "feedback", "error", "output")


class ControllerStateMessage:
    """The preallocated ``~/controller_state`` message: reference, feedback, error and output per joint."""

    def __init__(self, robot: RobotModel, input_joints: list[int]):
        nq = robot.nq
        self.msg = JointTrajectory(joint_names=robot.joint_names, points=[JointTrajectoryPoint() for _ in STATE_POINTS])
        self.mask = robot.continuous_mask
        self.input_joints = input_joints
        self._effort = np.zeros(nq)
        self._zeros = [0.0] * nq

    def fill(self, stamp: float, k: int, dt: float, q_ref, qdot_ref, u_ref, q, qdot, u) -> JointTrajectory:
        m = self.msg
        m.header.stamp.sec, m.header.stamp.nanosec = split_seconds(stamp)
        ref, fb, err, out = m.points
        e = q_ref - q
        e[self.mask] = wrap_angle(e[self.mask])
        ref.positions, ref.velocities, ref.effort = q_ref.tolist(), qdot_ref.tolist(), self._efforts(u_ref)
        fb.positions, fb.velocities = q.tolist(), qdot.tolist()
        err.positions, err.velocities = e.tolist(), (qdot_ref - qdot).tolist()
        out.effort = self._efforts(u)
        sec, nsec = split_seconds(k * dt)
        ref.time_from_start.sec, ref.time_from_start.nanosec = sec, nsec
        return m

    def _efforts(self, u: np.ndarray) -> list[float]:
        self._effort[:] = 0.0
        self._effort[self.input_joints] = u[: len(self.input_joints)]
        return self._effort.tolist()


def diagnostics(name: str, stamp, level: int, message: str, values: dict) -> DiagnosticArray:
    """A DiagnosticArray with one status (what rqt_robot_monitor and the aggregator read)."""
    status = DiagnosticStatus(
        level=bytes([level]),
        name=name,
        message=message,
        hardware_id=name,
        values=[KeyValue(key=k, value=str(v)) for k, v in values.items()],
    )
    out = DiagnosticArray(status=[status])
    out.header.stamp = stamp
    return out


OK, WARN, ERROR = (
    int.from_bytes(b, "little") for b in (DiagnosticStatus.OK, DiagnosticStatus.WARN, DiagnosticStatus.ERROR)
)


class LoopTiming:
    """The controller's command loop as the arm sees it, on the node's clock: each tick's gap since the tick before
    and the age of the joint state it commanded from (the delay the feedback acts with).

    With a period (the timer trigger), a gap of more than two periods is a *late tick*: at least one command period
    went by without a command, the driver holding the last one meanwhile — a starved process, a collection, a
    blocked executor. The tick itself still commands: it is counted and logged, not faulted (joint states that stop
    are ``state_timeout``'s fault). Totals, and per window (``window()``, once per diagnostics period).
    ``restart()`` forgets the last tick (a timer stopped or rearmed: the gap across it is no lateness)."""

    LATE_PERIODS = 2.0
    RECENT = 0.5  # s: how far back ``recent_gap`` looks

    def __init__(self, period: float | None):
        self.period = period  # None: ticks on joint states, no period of the loop's own
        self.ticks = self.late_ticks = 0
        self.max_gap = 0.0
        self._last: float | None = None
        self._late, self._gap, self._age = 0, 0.0, 0.0  # the current window's
        self._recent: deque[tuple[float, float]] = deque()  # (tick time, gap) of the late ticks of the last RECENT s

    def restart(self, period: float | None) -> None:
        self.period, self._last = period, None

    def tick(self, now: float, state_t: float | None) -> float | None:
        """A tick at ``now`` commanding from the state stamped ``state_t`` (None: no state). Returns its gap when
        late, else None."""
        last, self._last = self._last, now
        self.ticks += 1
        if state_t is not None:
            self._age = max(self._age, now - state_t)
        if last is None or self.period is None:
            return None
        gap = now - last
        self._gap, self.max_gap = max(self._gap, gap), max(self.max_gap, gap)
        if gap > self.LATE_PERIODS * self.period:
            self.late_ticks += 1
            self._late += 1
            self._recent.append((now, gap))
            return gap
        return None

    def recent_gap(self, now: float) -> float:
        """The longest gap between ticks in the last ``RECENT`` seconds before ``now`` (0 if no tick was late then):
        how long a command may be held by the driver while the loop is starved."""
        while self._recent and self._recent[0][0] < now - self.RECENT:
            self._recent.popleft()
        return max((g for t, g in self._recent if t <= now), default=0.0)  # (not those of a clock that went back)

    def window(self) -> tuple[int, float, float]:
        """(late ticks, largest gap, largest state age) since the last call; starts the next window."""
        out = self._late, self._gap, self._age
        self._late, self._gap, self._age = 0, 0.0, 0.0
        return out


def controller_diagnostics(
    active: bool,
    runner: PlanRunner,
    intake: StateIntake,
    counts: dict[str, int],
    rates: tuple[float, float],
    extrapolation: float = 0.0,
    loop: LoopTiming | None = None,
    window: tuple[int, float, float] = (0, 0.0, 0.0),
    state_publishers: int = 0,
    command_publishers: int = 0,
) -> tuple[int, str, dict]:
    """The controller's /diagnostics (level, message, values): inactive, on the safe command (a fault or an aborted
    plan), waiting, holding the end of a plan, or tracking one; with the plan, the step, the rates (joint states and
    commands per second), and the counts of states, commands, safe commands, refusals and faults by kind. With
    several drivers also how far their joints were extrapolated (in total, and ``extrapolation`` in the period).
    With ``loop`` the command loop's timing: late ticks in total and in the period, and the period's largest tick gap
    and state age (``window``, ``LoopTiming.window()``'s). ERROR while ``state_publishers`` (> 1) publishers send
    joint states of one joint (``PublisherSources``: a driver and a fake, or two robots); WARN where it would be OK
    while ``command_publishers`` (> 0) other publishers are on its command topic (``other_publishers``)."""
    law, state, merger = runner.law, intake.state, intake.merger
    if not active:
        level, status = WARN, "inactive"
    elif state_publishers > 1:
        level, status = ERROR, f"joint states of one joint from {state_publishers} publishers (see the log)"
    elif runner.fault is not None or runner.aborted is not None:
        level, status = ERROR, f"safe command: {runner.aborted[0] if runner.aborted else runner.fault}"
    elif law is None and runner.hold is not None and runner.hold.engaged:
        level, status = OK, "holding the measured configuration (no plan)"
    elif law is None:
        level, status = WARN, "waiting for a plan" if intake.ever_valid else "waiting for a joint state"
    elif state is not None and law.index(state.t) >= law.horizon:
        level, status = OK, f"holding the end of plan {runner.active_seq}"
    else:
        level, status = OK, f"tracking plan {runner.active_seq}"
    if level == OK and command_publishers > 0:
        level, status = WARN, f"{status}; {command_publishers} other publisher(s) on the command topic (see the log)"
    values = dict(
        state=status,
        plan=runner.active_seq if runner.active_seq is not None else "",
        pending_plan=runner.pending[0] if runner.pending else "",
        k=law.index(state.t) if law is not None and state is not None else "",
        horizon=law.horizon if law is not None else "",
        joint_state_rate_hz=f"{rates[0]:.1f}",
        command_rate_hz=f"{rates[1]:.1f}",
        joint_states=intake.counts["states"],
        commands=counts["commands"],
        safe_commands=counts["safe"],
        hold_commands=counts.get("hold", 0),
        conflicting_joint_states=counts.get("conflicting_joint_states", 0),
        other_command_publishers=command_publishers,
        hold_target=(
            "" if runner.hold is None or not runner.hold.engaged else " ".join(f"{v:.4f}" for v in runner.hold.target)
        ),
        last_fault=runner.fault or "",
        foreign_joint_states=intake.counts["foreign"],
        unstamped_joint_states=intake.counts["unstamped"],
        **{f"{k}_joint_states": n for k, n in (merger.counts.items() if merger else ())},
        **(
            dict(
                max_extrapolation_s=f"{merger.max_extrapolation:.4f}",
                max_extrapolation_s_in_period=f"{extrapolation:.4f}",
            )
            if merger
            else {}
        ),
        **(
            dict(
                late_ticks=loop.late_ticks,
                late_ticks_in_period=window[0],
                max_tick_gap_s_in_period=f"{window[1]:.4f}",
                max_state_age_s_in_period=f"{window[2]:.4f}",
            )
            if loop is not None
            else {}
        ),
        **{f"faults: {k}": n for k, n in runner.fault_counts.items()},
    )
    return level, status, values


def planner_diagnostics(
    active: bool, solving: bool, mpc, counts: dict[str, int], last_solve: float, last_plan
) -> tuple[int, str, dict]:
    """The planner's /diagnostics (level, message, values): inactive (WARN), solving or idle (OK); with ``mpc`` (a
    planning.mpc.RecedingHorizon) its cycles, accepted and not, refused (a plan beyond the limits), failed (the solve
    raised), overruns (a cycle still solving when the next was due), stale (a cycle skipped: its newest joint state
    older than ``state_timeout``; not among the cycles), restarts (the task planned again after a cycle past its end
    was refused: ``PlannerNode._maybe_restart_task``), controller_refused (a cycle's plan the controller did not run:
    its ``~/plan_refused``) and the last cycle's solve time. WARN once a cycle was refused, failed, overran, was skipped
    as stale or not run by the controller: the plan before it went on instead of a correction."""
    if not active:
        level, status = WARN, "inactive"
    elif mpc is not None and mpc.t0 is None:
        level, status = OK, "mpc: waiting for the task's first plan"
    elif mpc is not None:
        missed = {k: counts.get(k, 0) for k in ("refused", "failed", "overruns", "stale", "controller_refused")}
        level = WARN if any(missed.values()) else OK
        said = [f"{n} {k}" for k, n in missed.items() if n or k == "overruns"]
        status = ", ".join([f"mpc: {counts['cycles']} cycles", *said])
    else:
        level, status = OK, "solving" if solving else "idle"
    values = dict(
        state=status,
        mode="mpc" if mpc is not None else "plan",
        solving=solving,
        last_plan_start=f"{last_plan.times[0]:.6f}" if last_plan is not None else "",
        **({f"mpc_{k}": v for k, v in counts.items()} if mpc is not None else {}),
        **(
            dict(mpc_last_solve_s=f"{last_solve:.4f}", mpc_period_s=f"{mpc.settings.period:g}")
            if mpc is not None
            else {}
        ),
    )
    return level, status, values


# Default of the plants' ``command_conflict_window`` [s]: longer than the gap between a controller's commands (one per
# joint state; 0.1 s at the slowest shipped rate, loaded machines add ~0.3 s), shorter than a controller's restart (a
# new process: imports, the model's compiled code, DDS discovery — over a second).
COMMAND_CONFLICT_WINDOW = 0.5


class PublisherSources:
    """Which publishers' messages on one topic arrived within ``window`` seconds of each other, and which of them
    speak for the same thing: the same joints of one robot (``parts``: the model joints a message carries; None: all).
    Publishers are told apart by the middleware's publisher GID (rclpy's ``MessageInfo``, ``with_message_info``).

    A plant's ``command_conflict_window`` rule: a command is refused while another publisher has also commanded within
    the window — two controllers on one arm (a second launch in the same ROS domain, a ``ros2 topic pub`` by hand
    beside the controller) would drive it with interleaved torques, each computed for a motion the other disturbs.
    ros2_control refuses a second controller that claims the same command interfaces; a plant subscribed to a topic
    can tell only the publishers apart. The controller's: joint states of one joint from two publishers (a
    ``joint_state_publisher`` left running beside the robot's driver, a second simulator in the same domain) are two
    robots' or a fake's, told apart only by this. Drivers of disjoint joints (an arm and a gripper) do not conflict;
    nor does a restarted node: its old publisher's last message is older than the window by the time the new process
    publishes. ``window`` 0: off (every message admitted)."""

    def __init__(self, window: float = COMMAND_CONFLICT_WINDOW):
        self.window = float(window)
        self._last: dict[bytes, tuple[float, frozenset[int] | None]] = {}  # GID → (time, parts) of its last message
        self.conflicting: frozenset[bytes] = frozenset()  # the publishers in conflict at the last message

    @property
    def conflict(self) -> bool:
        return bool(self.conflicting)

    def admit(self, gid: bytes | None, now: float, parts: frozenset[int] | None = None) -> bool:
        """Record a message of publisher ``gid`` (None: the middleware names none — admitted, and what was recorded
        forgotten) carrying ``parts`` at ``now`` [s, monotonic]; whether it may be used: no other publisher sent a
        message of an overlapping part in [now − window, now]."""
        last = self._last
        if gid is None or self.window <= 0.0:
            last.clear()
            self.conflicting = frozenset()
            return True
        last[gid] = (now, parts)
        if len(last) == 1:
            self.conflicting = frozenset()
            return True
        for g in [g for g, (t, _) in last.items() if now - t > self.window]:
            del last[g]
        items = list(last.items())
        self.conflicting = frozenset(
            g
            for i, (g, (_, p)) in enumerate(items)
            for j, (h, (_, r)) in enumerate(items)
            if i != j and (p is None or r is None or not p.isdisjoint(r))
        )
        return gid not in self.conflicting

    def sources(self) -> list[bytes]:
        """The GIDs of the publishers in conflict, the one heard from longest ago first."""
        return sorted(self.conflicting, key=lambda g: self._last[g][0])


def publisher_gid(info: dict | None) -> bytes | None:
    """The publisher GID of an rclpy ``MessageInfo`` as bytes (the form ``TopicEndpointInfo.endpoint_gid`` takes
    as a list of ints), or None where the middleware gives none."""
    gid = (info or {}).get("publisher_gid")
    data = gid.get("data") if isinstance(gid, dict) else None
    return bytes(data) if data else None


def publisher_names(node, topic: str, gids: list[bytes | None], infos: list | None = None) -> list[str]:
    """The nodes (namespace/name) of the publishers ``gids`` on ``topic``, from the ROS graph (``infos``: its
    ``get_publishers_info_by_topic`` where the caller has it); one the graph does not list, or lists before its node's
    name is discovered (rmw's ``_NODE_NAME_UNKNOWN_``), is named by its GID."""
    known = {
        bytes(e.endpoint_gid): f"{e.node_namespace.rstrip('/')}/{e.node_name}"
        for e in (node.get_publishers_info_by_topic(topic) if infos is None else infos)
        if e.node_name and "_UNKNOWN_" not in e.node_name
    }
    return [
        "a publisher the middleware gives no GID"
        if g is None
        else known.get(g, f"a publisher whose node the graph does not name yet (GID {g.hex()})")
        for g in gids
    ]


def other_publishers(node, topic: str) -> dict[bytes, str]:
    """The publishers on ``topic`` other than ``node``'s one, from the ROS graph: GID → node (namespace/name), in the
    order of their names. A node of ``node``'s own name counts once as itself (a second launch of it is listed under
    the same name); one whose node the graph has not named yet is named by its GID (told apart by it: the same
    publisher once its name is discovered)."""
    infos = node.get_publishers_info_by_topic(topic)
    gids = [bytes(e.endpoint_gid) for e in infos]
    named = sorted(zip(publisher_names(node, topic, gids, infos), gids))
    own = f"{node.get_namespace().rstrip('/')}/{node.get_name()}"
    mine = next((i for i, (name, _) in enumerate(named) if name == own), None)
    return {gid: name for i, (name, gid) in enumerate(named) if i != mine}


def refused_command_fallback(on_bad_command: str, command_timeout: float) -> str:
    """What a plant applies in place of a refused command: ``on_bad_command``'s, then, with ``command_timeout`` > 0,
    the brakes (a lockstep simulator passes 0: it has none)."""
    what = "zero torque" if on_bad_command == "zero" else "the last valid command"
    return what + (f", the brakes after command_timeout {command_timeout:g} s" if command_timeout > 0 else "")


def carried_parts(carried: np.ndarray | None) -> frozenset[int] | None:
    """The model joints a partial joint-state message carries (``RawJointStateReader.carried``), as
    ``PublisherSources`` takes them; None: all of them."""
    return None if carried is None else frozenset(np.flatnonzero(carried).tolist())


def joint_state_conflict_text(node, topic: str, sources: PublisherSources, consequence: str) -> str:
    """The controller's and the planner's report of joint states of one joint from two publishers (``sources`` in
    conflict on ``topic``), naming them; ``consequence``: what it means to that node."""
    return (
        f"joint states of the same joints on {topic} from {len(sources.conflicting)} publishers within "
        f"joint_state_conflict_window {sources.window:g} s: "
        f"{', '.join(publisher_names(node, topic, sources.sources()))} — a joint_state_publisher beside the robot's "
        f"driver, or two robots in one ROS domain: {consequence}; stop the publisher that is not this robot's"
    )


def admit_command(
    node, sources: PublisherSources, info: dict | None, counts: dict[str, int], applying: Callable[[], str]
) -> bool:
    """A plant's ``command_conflict_window`` check of one command (``info``: its rclpy ``MessageInfo``): whether it
    may be applied. The start of a conflict is logged as an error naming the publishers (``applying()``: what the
    plant applies instead), its end as info; every refused command is counted (``counts['conflicting_commands']``)."""
    was = sources.conflict
    topic = node.sub.topic_name
    gid = publisher_gid(info)
    if sources.admit(gid, time.monotonic()):
        if was:
            (name,) = publisher_names(node, topic, [gid])
            node.get_logger().info(f"commands on {topic} from one publisher again ({name}): applied")
        return True
    counts["conflicting_commands"] += 1
    if not was:
        node.get_logger().error(
            f"commands on {topic} from {len(sources.conflicting)} publishers within command_conflict_window "
            f"{sources.window:g} s: {', '.join(publisher_names(node, topic, sources.sources()))} — two controllers "
            f"would drive the robot with interleaved commands; every command refused ({applying()}) until one "
            f"publisher alone has commanded for {sources.window:g} s"
        )
    return False


class CommandTiming:
    """On a running clock, which state each step's command answered (the command names it: ``COMMAND_STAMP_PREFIX``).

    A step from state k on the command that answered state j < k ran on a command k − j steps *late*: the loop
    state → controller → command took longer than the step's wall time (Δt / real_time_factor), and the simulator,
    as hardware does, applied the last command it had. A command naming no state (another tool's) is never late.
    Counts are kept in total and per window (``window()``, once per diagnostics period), with the measured
    real-time factor of the window.
    """

    def __init__(self, dt: float):
        self.dt = float(dt)
        self.answered: int | None = None  # the state index the command in force answered
        self.late_steps = self.max_lag = 0
        # the current window: its start (wall), first step index (None: no step yet), late steps, largest lag
        self._wall, self._k0, self._late, self._lag = time.monotonic(), None, 0, 0

    def command(self, stamp: tuple[int, int] | None) -> None:
        """A command came that answers the state of ``stamp`` (``messages.command_stamp``), or names none."""
        self.answered = None if stamp is None else round((stamp[0] + 1e-9 * stamp[1]) / self.dt)

    def step(self, k: int) -> None:
        """Step k → k + 1 is taken under the command in force."""
        if self._k0 is None:
            self._k0 = k
        lag = 0 if self.answered is None else k - self.answered
        if lag > 0:
            self.late_steps += 1
            self.max_lag = max(self.max_lag, lag)
            self._late += 1
            self._lag = max(self._lag, lag)

    def window(self, k: int) -> tuple[int, int, int, float]:
        """(steps, late steps, largest lag, simulated seconds per wall second) since the last call; k = the state
        index now. Starts the next window."""
        now = time.monotonic()
        steps = 0 if self._k0 is None else k - self._k0
        out = steps, self._late, self._lag, steps * self.dt / max(now - self._wall, 1e-9)
        self._wall, self._k0, self._late, self._lag = now, k, 0, 0
        return out


def simulator_diagnostics(
    active: bool,
    ended: bool,
    mode: str,
    requested_rtf: float | None,
    k: int,
    dt: float,
    window: tuple[int, int, int, float],
    timing: CommandTiming,
    counts: dict[str, int],
    conflicting: bool = False,
) -> tuple[int, str, dict]:
    """The simulator's /diagnostics (level, message, values). WARN when inactive, or when a realtime run keeps less
    than 80 % of the requested real-time factor over a window (the machine cannot step at Δt: every node that
    paces itself on /clock slows with it); ERROR while its commands are refused as ``conflicting`` (two publishers:
    ``PublisherSources``). ``requested_rtf`` is None for max_speed and lockstep."""
    steps, late, lag, rtf = window
    if not active:
        level, status = WARN, "inactive"
    elif conflicting:
        level, status = ERROR, "commands from two publishers refused (command_conflict_window)"
    elif ended:
        level, status = OK, "end_time reached"
    elif mode == "lockstep":
        level, status = OK, f"lockstep, {steps} steps"
    elif requested_rtf is not None and not steps:
        level, status = WARN, "not stepping (a failed step is held: see the log)"
    elif requested_rtf is not None and rtf < 0.8 * requested_rtf:
        level, status = WARN, f"{rtf:.2f}x real time, {requested_rtf:g}x asked: the simulator cannot keep pace"
    else:
        level, status = OK, f"{rtf:.2f}x real time, {late} of {steps} steps on a late command"
    values = dict(
        state=status,
        mode=mode,
        step=k,
        sim_time=f"{k * dt:.9g}",
        steps_in_period=steps,
        real_time_factor=f"{rtf:.3f}",
        late_command_steps=timing.late_steps,
        late_command_steps_in_period=late,
        max_command_lag_steps=timing.max_lag,
        max_command_lag_steps_in_period=lag,
        **counts,
    )
    return level, status, values
