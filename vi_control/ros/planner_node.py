"""Planner node: a task YAML, a goal or a joint trajectory in, a Plan out (trajectory + gains), and the outcome of
every request on ``~/request_status``.

A lifecycle node (vi_control.ros.managed; ``autostart`` configures and activates it at start-up): configure loads the
task and the model and creates the topics, activate plans the task once (``plan_on_startup``, at the first
activation) and accepts requests, deactivate refuses them (a solve under way is not published), shutdown ends the
process. Requests: ``~/replan`` (std_srvs/Trigger: the task), ``~/goal`` (sensor_msgs/JointState: the task toward
these positions) and ``~/joint_trajectory`` (trajectory_msgs/JointTrajectory, the joint_trajectory_controller topic
interface: a timed path, planning.requests.plan_trajectory; a goal: planning.requests.plan_goal). Every joint-space
plan is verified against ``velocity_limit_factor`` × the URDF velocity limits and the effort limits (the states and
inputs the controller accepts) before it is published; one beyond them is refused with the joint, the time and the
duration that would do. One request is solved at a time
in a worker thread; one more waits, and a newer request replaces the waiting one (it is *superseded*), as a
joint_trajectory_controller's newest goal wins. Publishes, latched: ``~/plan`` (UInt8MultiArray, the exact plan:
layout in vi_control.ros.messages), ``~/trajectory`` (JointTrajectory for other tools, header.stamp = the plan's
start on this node's clock; 0 for a plan that starts on receipt) and ``~/request_status`` (diagnostic_msgs/
DiagnosticArray, one status per event: queued, planning, accepted with the plan's sequence number and start time,
superseded, refused or failed with the reason). Only converged plans are published unless ``publish_unconverged``. A
re-plan of the task starts from the plan being executed, receded to the new start (``warm_start``).

Joint states are kept, not processed, as they arrive (the last ``STATE_BUFFER`` serialized messages and a clock
sample): a planner beside a controller at real-time priority and 1 kHz joint states has no backlog to starve on.
The state to plan from is estimated from the newest of them when a request is solved.

A plan starts at a stated time on the node's clock (``use_sim_time``: the simulator's /clock). While a plan of this
planner is being executed, the measured state at t_m is carried forward under that plan's law to t_start = t_m + the
expected solve time (``expected_solve_time`` until a solve after the first has been timed, then 1.5 × the longest of
the last five; in the clock's units: a lockstep simulation stands still while it waits), so no step of the
new plan is skipped. Otherwise the robot is held where it was measured, and the plan starts as soon as it is ready
(``start_delay`` after it is published), or at a trajectory's own header.stamp if that is later.

Vehicle mode (parameter ``vehicle``, ``ros.vehicle``): the state comes from ``odom`` (nav_msgs/Odometry), a goal
pose from ``~/goal`` (geometry_msgs/PoseStamped in ``odom_frame``; or the ``goal`` parameter at start-up) starts a
DMOC plan to rest there (``planning.vehicle.plan_maneuver``: Jimenez2013, Algorithm 5.2, TV-LQR on the Lie algebra),
published on the same ``~/plan`` and drawn on ``~/path`` (nav_msgs/Path). A goal that cannot be reached (actuator
limits, an unactuated direction, a malformed pose) is refused with its reason: the controller keeps its plan.

The requests and how each becomes a plan: vi_control.ros.planner_requests; the parameters: planner_parameters.
"""

from __future__ import annotations

import dataclasses
import math
import threading
import time
from collections import deque
from collections.abc import Callable

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from geometry_msgs.msg import PoseStamped
from nav_msgs.msg import Odometry, Path
from rclpy.clock import Clock, ClockType
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Header, UInt8MultiArray
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory

from ..control.intake import stamped_on_receipt
from ..control.joint_merge import JointStateMerger, Missing
from ..control.plan import Plan
from ..control.runner import REFUSED_ENDED, REFUSED_LATE
from ..control.schedule import PlanSchedule
from ..control.tracking import StateEstimator, wire_velocity
from ..integrators import make_integrator, require_linearizable
from .common import (
    LATCHED_QOS,
    PLAN_QOS,
    SENSOR_STREAM_QOS,
    STREAM_QOS,
    resolve_config,
    run_node,
    with_message_info,
)
from .managed import ManagedNode
from .messages import (
    ForeignJointState,
    RawJointStateReader,
    joint_state_arrays,
    plan_entered_from_message,
    plan_refused_from_message,
    plan_refused_kind,
    plan_to_message,
    plan_to_trajectory,
    split_seconds,
    time_seconds,
)
from .planner_parameters import PARAMETERS, STATE_TIMEOUT
from .planner_requests import Request, solve_request, trajectory_request
from .supervision import (
    ERROR,
    OK,
    WARN,
    PublisherSources,
    carried_parts,
    diagnostics,
    joint_state_conflict_text,
    planner_diagnostics,
    publisher_gid,
)
from .vehicle import goal_from_pose_stamped, path_from_plan, pose_parameter, state_from_odometry, vehicle_system

# A zero-stamped state right after one of t = 0, the clock within this of 0, is a simulation's first state again
# (``stamped_on_receipt``): the controller's default state_timeout, beyond which the controller would call it stale.
FIRST_STATE_WINDOW = STATE_TIMEOUT
# Serialized joint states kept for the estimate (2 s of a 1 kHz driver); only the newest few Δt are decoded.
STATE_BUFFER = 2048
# The outcomes of recent requests stay readable by a late subscriber.
STATUS_QOS = QoSProfile(
    depth=20,
    history=HistoryPolicy.KEEP_LAST,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.TRANSIENT_LOCAL,
)
# Request outcomes (the ``state`` value of a ~/request_status message) and their diagnostic levels.
LATE_REPLANS = 2  # a request whose plan reached the controller after its end is planned again at most this often
STATUS_LEVELS = {"queued": OK, "planning": OK, "accepted": OK, "superseded": WARN, "refused": ERROR, "failed": ERROR}


@dataclasses.dataclass
class Job:
    """A request to solve: its number (``request`` in ~/request_status), what was asked, where it came from, the
    sender's header (stamp [s], frame_id) and how long to wait for a first joint state."""

    id: int
    request: Request
    source: str
    header_stamp: float = 0.0
    frame_id: str = ""
    wait: float = 0.0
    quiet: bool = False
    late: int = 0  # how many plans of this request before it reached the controller after their end (``LATE_REPLANS``)
    unentered: int | None = None  # an mpc restart's: the plan it stands in for (ended without the controller's entry)


class ClockSamples:
    """(steady time, node clock) pairs at least 50 ms apart, from the joint states' arrivals: how fast the node's
    clock runs (``rate``). A sim-time clock that has not heard /clock yet reads 0: no sample (one such sample beside
    a simulation 10 s on made a rate of 13.8, and an MPC cycle planned 4 s ahead); a clock that went back (a
    restarted simulator) starts the samples again."""

    WINDOW, MIN_SPAN, SPACING = 2.0, 0.25, 0.05

    def __init__(self):
        self.samples: deque[tuple[float, float]] = deque(maxlen=64)

    def add(self, wall: float, now: float) -> None:
        samples = self.samples
        if now <= 0.0:
            return
        if samples and now < samples[-1][1]:
            samples.clear()
        if not samples or wall - samples[-1][0] >= self.SPACING:
            samples.append((wall, now))

    def rate(self, wall: float) -> float | None:
        """Node-clock seconds per steady second over the last ``WINDOW`` s; None if they span under ``MIN_SPAN``."""
        window = [s for s in list(self.samples) if wall - s[0] < self.WINDOW]
        if len(window) < 2 or window[-1][0] - window[0][0] < self.MIN_SPAN:
            return None
        (s0, r0), (s1, r1) = window[0], window[-1]
        return max(0.0, (r1 - r0) / (s1 - s0))


def measured_clock_rate(clock: Callable[[], float], wait: float = 1.0) -> float:
    """Node-clock seconds per steady second of ``clock``, measured now: ``ClockSamples`` of it every ``SPACING`` s
    until they span ``MIN_SPAN`` — so a sim-time clock that has not heard /clock yet (0) is not sampled and the
    measurement starts once it has — or 0 if it is not heard within ``wait`` s (a clock still at 0 runs nothing; one
    heard, ``WINDOW`` s more at most). Counted
    from 0, a lockstep clock standing at 1.0 s read as 3.3: the start-up plan started 2 steps ahead of the state it was
    planned from, and the lockstep controller, which commands nothing before the first plan, waited for a state that
    never came (CI s59g)."""
    samples, deadline = ClockSamples(), time.monotonic() + wait
    while True:
        wall = time.monotonic()
        samples.add(wall, clock())
        rate = samples.rate(wall)
        if rate is not None:
            return rate
        if wall >= deadline + (ClockSamples.WINDOW if samples.samples else 0.0):
            return 0.0
        time.sleep(ClockSamples.SPACING)


class PlannerNode(ManagedNode):
    PARAMETERS = PARAMETERS

    def __init__(self) -> None:
        self.robot = self.settings = self.task = None  # (settings: vehicle mode's maneuver settings)
        self.own_subs, self.own_pubs, self.own_timers, self.own_services = [], [], [], []
        self._lock, self._worker, self._pending = threading.Lock(), None, None
        self._solving: Job | None = None  # (the job the worker is on; with _worker, under _lock)
        self._next_id = 0
        # the plans published last, by sequence number, with the job that made each: a controller's ~/plan_refused
        # of one becomes that request's status (under _lock)
        self._published: dict[int, Job] = {}
        self._refused_early: dict[int, tuple[str, str]] = {}  # (why, kind) of refusals of plans not (yet) in
        # _published, by sequence number
        self._started = False  # the start-up plan was requested (at the first activation only)
        # Deactivations over the node's life (not reset by a configure): a solve begun before one is not published,
        # not even once the node is active again.
        self.activation = 0
        super().__init__("vi_planner")

    # ---- lifecycle -------------------------------------------------------------------------------
    def configure(self) -> None:
        from ..planning import load_task  # the planner library; imported here so tests can skip cleanly

        p = self.p
        self.vehicle = bool(p["vehicle"])
        self.measured: tuple[float, np.ndarray] | None = None  # a state given as it is: odometry's (vehicle mode)
        # (wall, clock, message, its publisher's GID)
        self.states: deque[tuple[float, float, bytes, bytes | None]] = deque(maxlen=STATE_BUFFER)
        self.clock_samples = ClockSamples()
        self.last_plan: Plan | None = None  # the latest published plan with a stated start (for the prediction)
        self.last_seq: int | None = None  # its sequence number
        self.schedule = PlanSchedule()  # the published plans as the controller runs them: the prediction's laws
        self.entered_seq: int | None = None  # the controller entered this plan of the task's run (mode mpc: cycles)
        self.timeline = 0  # counts the controller's re-timings of last_plan: a solve from an older one is stale
        self.last_result = self.last_warm_step = None  # the last solve's optimizer result, its warm start's step
        self._warm_task = None  # the task last_plan planned (None after a goal or trajectory request)
        self.solve_times: list[float] = []  # wall time of the last few solves (not the first)
        self._solves = 0
        self._latest: UInt8MultiArray | None = None
        self.mpc = None  # mode mpc: the RecedingHorizon of the task (planning.mpc)
        # (a cycle's outcome: accepted or not (planning.mpc.Cycle), refused (beyond the limits), failed (raised))
        self.mpc_counts = dict(
            cycles=0,
            accepted=0,
            not_accepted=0,
            refused=0,
            failed=0,
            overruns=0,
            stale=0,
            restarts=0,
            controller_refused=0,
        )
        self._restarted_t0: float | None = None  # the task clock (mpc.t0) the last restart left behind
        self._followed: Request | None = None  # the goal or trajectory request whose plan the MPC cycles follow
        self.mpc_last_solve = 0.0
        self.mpc_last_state_t: float | None = None  # the state the last cycle planned from: its stamp
        self.pub_plan = self.create_publisher(UInt8MultiArray, "~/plan", PLAN_QOS)
        self.pub_status = self.create_publisher(DiagnosticArray, "~/request_status", STATUS_QOS)
        self.diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", STREAM_QOS)
        self.own_pubs = [self.pub_plan, self.pub_status, self.diag_pub]
        self.own_services = [self.create_service(Trigger, "~/replan", self.on_replan)]
        if float(p["republish_period"]) > 0:
            self.own_timers.append(self.create_timer(float(p["republish_period"]), self._republish))
        if p["controller_name"]:
            topic = f"{p['controller_name']}/plan_entered"
            self.own_subs.append(self.create_subscription(Header, topic, self.on_plan_entered, LATCHED_QOS))
            topic = f"{p['controller_name']}/plan_refused"
            self.own_subs.append(self.create_subscription(DiagnosticStatus, topic, self.on_plan_refused, PLAN_QOS))
        if self.vehicle:
            if p["mode"] == "mpc":  # (refused, not ignored: one plan per goal without a word)
                raise ValueError(
                    "mode: 'mpc' re-plans a joint-space task (planning.mpc); vehicle mode plans each goal pose once "
                    "(a DMOC maneuver, tracked with TV-LQR gains on the group): set mode 'plan'"
                )
            return self._configure_vehicle()
        self.task = load_task(resolve_config(p["task"]))
        own = p["model"] or p["urdf_path"] or p["robot_description"] or p["robot_description_topic"]
        robot = self.load_robot()[0] if own else self.task.load_robot()
        self.robot = robot
        self.vi = make_integrator(p["integrator"], robot, float(self.task.dt))
        require_linearizable(self.vi, "the planner node")
        self.estimator = StateEstimator(self.vi, p["state_estimate"])
        self.reader = RawJointStateReader(robot.joint_names, partial=True)  # one driver's joints: merged
        self.merger = JointStateMerger(robot.joint_names, p["joint_state_merge_age"], robot.continuous_mask)
        self.pub_traj = self.create_publisher(JointTrajectory, "~/trajectory", LATCHED_QOS)
        self.own_pubs.append(self.pub_traj)
        self.state_sub = self.create_subscription(
            JointState, "joint_states", with_message_info(self.on_joint_state), SENSOR_STREAM_QOS, raw=True
        )
        self.own_subs += [
            self.state_sub,
            self.create_subscription(JointState, "~/goal", self.on_goal, STREAM_QOS),
            self.create_subscription(JointTrajectory, "~/joint_trajectory", self.on_joint_trajectory, STREAM_QOS),
        ]
        if p["mode"] == "mpc":
            from ..planning.mpc import RecedingHorizon

            self.mpc = RecedingHorizon(self.vi, self.task, log=None)
            period = self.mpc.settings.period
            self.own_timers.append(self.create_timer(period, self._mpc_tick))
            self.get_logger().info(
                f"mode mpc: a re-plan every {period:g} s over "
                f"{'a shrinking' if self.mpc.settings.shrinking else 'a receding'} horizon of "
                f"{self.mpc.N} steps, at most {self.mpc.settings.max_iterations} iterations each"
            )
        self.own_timers.append(
            self.create_timer(
                float(p["diagnostics_period"]), self.publish_diagnostics, clock=Clock(clock_type=ClockType.STEADY_TIME)
            )
        )
        self.get_logger().info(f"task {p['task']} on {robot.name}: dt={self.vi.dt}, nx={self.vi.nx}")

    def _configure_vehicle(self) -> None:
        from ..model.rigid_body import load_rigid_body
        from ..planning.vehicle import maneuver_settings

        p = self.p
        st = maneuver_settings(load_rigid_body(p["vehicle"]))
        over = {k: v for k, v in (("horizon", int(p["horizon"])), ("duration", float(p["duration"]))) if v}
        self.settings = dataclasses.replace(st, **over, retraction=p["retraction"])
        self.robot, self.vi = vehicle_system(p, self.settings.dt)
        self.goal = pose_parameter(self.vi, p["goal"], "goal") if p["goal"] else None
        self.pub_path = self.create_publisher(Path, "~/path", LATCHED_QOS)
        self.own_pubs.append(self.pub_path)
        self.own_subs += [
            self.create_subscription(Odometry, "odom", self.on_odometry, SENSOR_STREAM_QOS),
            self.create_subscription(PoseStamped, "~/goal", self.on_pose_goal, STREAM_QOS),
        ]
        self.get_logger().info(
            f"vehicle {p['vehicle']} on {self.robot.name}: dt={self.vi.dt}, nx={self.vi.nx}, N={self.settings.horizon}"
        )

    def activate(self) -> None:
        if self._started or not self.p["plan_on_startup"]:
            return
        self._started = True
        if not self.vehicle:
            self._submit(Request("task"), "start-up", wait=float(self.p["startup_wait"]))
        elif self.goal is not None:
            self._submit(Request("pose", goal=self.goal), "start-up", wait=float(self.p["startup_wait"]))

    def deactivate(self) -> None:
        """Requests are refused from now on; the waiting one is dropped, a solve under way is not published — not even
        once the node is active again (``activation``)."""
        with self._lock:
            job, self._pending = self._pending, None
            self.activation += 1
        if job is not None:
            self._status(job, "refused", "the planner was deactivated before it was solved")

    def cleanup(self) -> None:
        self.deactivate()
        self.destroy_entities(self.own_timers, self.own_subs, self.own_services, self.own_pubs)
        self.own_subs, self.own_pubs, self.own_timers, self.own_services = [], [], [], []
        self.robot = self.task = None

    def apply_parameter(self, name: str, value) -> str | None:
        if name == "joint_state_merge_age" and getattr(self, "merger", None) is not None:
            self.merger.max_age = float(value)
        return None  # the others are read from self.p when used

    # ---- inputs ----------------------------------------------------------------------------------
    def on_joint_state(self, msg: bytes, info: dict | None = None) -> None:
        """A serialized JointState: kept as it is (decoded only when a request is solved), with its publisher's GID
        (``info``: its rclpy ``MessageInfo``); a clock sample at most every 50 ms (how fast the clock runs)."""
        wall = time.monotonic()
        now = self._now()
        if not self.states:
            try:
                self.get_logger().info(f"first state to plan from: t={_stamp(RawJointStateReader.HEAD, msg):.6f}")
            except Exception as e:  # (a malformed message: it is reported when a request decodes it)
                self.get_logger().info(f"first joint state received ({type(e).__name__} reading its stamp)")
        self.states.append((wall, now, msg, publisher_gid(info)))
        self.clock_samples.add(wall, now)

    def on_odometry(self, msg: Odometry) -> None:
        try:
            t, x = state_from_odometry(self.vi, msg)
        except ValueError as e:
            self.warn("odometry ignored", f"odometry ignored: {e}")
            return
        self.clock_samples.add(time.monotonic(), self._now())
        if self.measured is None:
            self.get_logger().info(f"first state to plan from: t={t:.6f}")
        self.measured = (t, x)

    def on_pose_goal(self, msg: PoseStamped) -> None:
        try:
            goal = goal_from_pose_stamped(self.vi, msg, str(self.p["odom_frame"]))
        except ValueError as e:
            self._status(self._job(Request("pose"), "~/goal", msg.header), "refused", f"goal rejected: {e}")
            return
        self.goal = goal
        self.get_logger().info(f"goal pose {np.round(goal[:-1, -1], 4).tolist()}: planning")
        self._submit(Request("pose", goal=goal), "~/goal", msg.header)

    def on_goal(self, msg: JointState) -> None:
        """Goal positions: every model joint must be named (unlike a joint state from one driver of several)."""
        try:
            goal = joint_state_arrays(msg, self.robot.joint_names)[0]
        except ValueError as e:
            self._status(self._job(Request("goal"), "~/goal", msg.header), "refused", f"goal refused: {e}")
            return
        self.get_logger().info(f"goal {np.round(goal, 4).tolist()}: re-planning")
        self._submit(Request("goal", goal=goal), "~/goal", msg.header, wait=self._first_state_wait())

    def on_joint_trajectory(self, msg: JointTrajectory) -> None:
        try:
            request = trajectory_request(msg, self.robot)
        except ValueError as e:
            self._status(
                self._job(Request("trajectory"), "~/joint_trajectory", msg.header),
                "refused",
                f"joint trajectory refused: {e}",
            )
            return
        times = request.times
        self.get_logger().info(f"joint trajectory: {len(times)} points over {times[-1]:g} s: planning")
        self._submit(request, "~/joint_trajectory", msg.header, wait=self._first_state_wait())

    def on_plan_entered(self, msg: Header) -> None:
        """The controller entered plan ``seq`` with X_0 at t₀: where it re-timed our latest plan (late, from rest),
        that plan moves to t₀ here too — the prediction, warm starts and MPC cycles (and the task's clock) continue
        the timeline the robot is on, and a solve begun on the old one is dropped (``timeline``)."""
        try:
            seq, t0 = plan_entered_from_message(msg)
        except ValueError as e:
            self.warn("plan_entered ignored", f"plan_entered ignored: {e}")
            return
        with self._lock:
            plan = self.last_plan
            if plan is None or seq != self.last_seq:
                return  # (another planner's plan, or one ours replaced since)
            self.entered_seq = seq
            shift = t0 - float(plan.times[0])
            if abs(shift) <= 1e-6:
                return
            m = round(shift / plan.dt)
            if abs(shift - m * plan.dt) <= 1e-6:  # by whole steps (our controller): t₀ + m·Δt as it computes it
                t0, shift = float(plan.times[0]) + m * plan.dt, m * plan.dt
            self.last_plan = plan.shifted(t0)
            self.schedule.plans = [self.last_plan]  # (re-timed only when no plan ran: it alone runs)
            self.timeline += 1
            if self.mpc is not None and self.mpc.t0 is not None:
                self.mpc.t0 += shift
        self.get_logger().info(
            f"plan {seq} was re-timed by {self.p['controller_name']}: it starts at t={t0:.6f} ({shift:+.4f} s); "
            "later plans continue it from there"
        )

    def on_plan_refused(self, msg: DiagnosticStatus) -> None:
        """The controller does not run plan ``seq`` (rejected on arrival, or not entered): the request that made it
        gets the status 'refused' with the controller's reason — it had read 'accepted' for a plan that never ran."""
        try:
            seq, why = plan_refused_from_message(msg)
            kind = plan_refused_kind(msg)
        except ValueError as e:
            self.warn("plan_refused ignored", f"plan_refused ignored: {e}")
            return
        with self._lock:
            job = self._published.pop(seq, None)
            if job is None:  # (ours before its 'accepted' went out — or another planner's, or one long replaced)
                self._refused_early[seq] = (why, kind)
                _trim(self._refused_early)
                return
        self._controller_refused(job, seq, why, kind)

    def _controller_refused(self, job: Job, seq: int, why: str, kind: str = "") -> None:
        if job.request.kind == "mpc":
            self.mpc_counts["controller_refused"] += 1  # (a quiet job: its status goes to the throttled log)
        self._status(job, "refused", f"{self.p['controller_name']} does not run plan {seq}: {why}", plan=seq)
        if kind in (REFUSED_ENDED, REFUSED_LATE) and self.mpc is None and job.request.kind != "mpc":
            self._plan_again_after_late_delivery(job, seq, kind)

    def _plan_again_after_late_delivery(self, job: Job, seq: int, kind: str = REFUSED_ENDED) -> None:
        """Plan ``seq`` of ``job`` reached the controller late (a plan writer matched late under load, a clock that
        jumped) — after its end, or (``REFUSED_LATE``) steps after its start with the held robot no longer at its X_0
        (a heavier arm sags under its hold) — and was dropped, the robot held: nothing of it ran, so the request is
        planned again from the measured state — up to ``LATE_REPLANS`` times per request (a controller that never gets
        a plan in time would loop); then the request stays refused, said so. Mode mpc restarts its task by itself
        (``_mpc_tick``)."""
        if job.id != self._next_id:  # (a request came after it: that one is what the sender wants now)
            return
        when = "after its end" if kind == REFUSED_ENDED else "after its start, the robot no longer at its start"
        if job.late >= LATE_REPLANS:
            self.get_logger().error(
                f"request {job.id}: plan {seq} too reached {self.p['controller_name']} {when}; not planned "
                f"again ({LATE_REPLANS} times already): is the controller's clock the planner's? (the robot is held)"
            )
            return
        self.get_logger().warning(
            f"request {job.id}: plan {seq} reached {self.p['controller_name']} {when} (delivered late) and "
            "did not run: planned again from the measured state"
        )
        self._submit(job.request, f"{job.source}, again: its plan {seq} came late", wait=job.wait, late=job.late + 1)

    def on_replan(self, _req, res):
        request = (
            Request("task")
            if not self.vehicle
            else (Request("pose", goal=self.goal) if self.goal is not None else None)
        )
        if not self.active or request is None:
            res.success, res.message = False, "the planner is not active" if not self.active else "no goal pose yet"
            return res
        job = self._submit(request, "~/replan")
        res.success, res.message = True, f"request {job.id}: see ~/request_status"
        return res

    def _republish(self) -> None:
        latest = self._latest
        if latest is not None and self.active:
            self.pub_plan.publish(latest)

    def _first_state_wait(self) -> float:
        """A goal or trajectory sent before any joint state (just after launch, a driver still starting) waits
        ``startup_wait`` for one, as the start-up plan does, rather than planning from the task's x_0 at once."""
        return float(self.p["startup_wait"]) if not self.states else 0.0

    # ---- mode mpc -------------------------------------------------------------------------------
    def _mpc_tick(self) -> None:
        """Every mpc.period on the node's clock: a cycle from the latest state, once the task's first plan runs; a
        cycle still being solved when the next is due is an overrun (logged, counted): the last plan goes on."""
        if not self.active or self.mpc.t0 is None or self.last_plan is None:
            return
        if self.p["controller_name"] and self.entered_seq is None:
            # (the first plan may yet be re-timed: a cycle from its stated start could be on the wrong timeline)
            with self._lock:
                solving = self._solving is not None
            # That plan ended and no controller entered it (none ran, or one started since dropped it as ended):
            # waiting on would hold the robot for good. The task (or the goal request) again: a new run, a plan a
            # controller can enter (at most one per plan's length while none does).
            if (
                not solving
                and self._now() > self.last_plan.times[-1]
                and self._restart_task(
                    f"the {'request' if self.mpc.followed else 'task'}'s plan ended at t={self.last_plan.times[-1]:.4f}"
                    f" without {self.p['controller_name']} entering it (is it running?)",
                    unentered=self.last_seq,
                )
            ):
                return
            self.warn(
                "mpc waits",
                f"mpc: waiting for {self.p['controller_name']}/plan_entered to say where the task's first plan "
                "started before the first cycle (controller_name '' if the controller does not publish it)",
            )
            return
        with self._lock:
            solving = self._solving  # (None exactly when no worker runs)
        if solving is not None and solving.request.kind != "mpc":
            return  # (a request being solved: no cycle overran; its plan is what the next cycles continue)
        if solving is not None:
            self.mpc_counts["overruns"] += 1
            self.warn(
                "mpc overrun",
                f"mpc: a cycle overran its period ({self.mpc.settings.period:g} s): the last "
                f"plan goes on ({self.mpc_counts['overruns']} overruns)",
            )
            return
        self._submit(Request("mpc"), "mpc")

    def _maybe_restart_task(self, t_start: float) -> None:
        """A shrinking-horizon cycle past the task's end refused as beyond the limits while no plan of ours runs (the
        robot held): it is still far from the goal after the deadline (stopped on the way: its controller restarted,
        brakes, an abort), and the ``min_horizon`` windows ask for the rest of the motion in a few steps — every cycle
        would be refused and the robot held there. The task is planned again from the measured state, a new run with
        a new deadline (``_restart_task``, with its exceptions), once per task run: if that plan is refused too, the
        cycles go on being refused and said so."""
        mpc, last = self.mpc, self.last_plan
        if not mpc.settings.shrinking or not mpc.ended(t_start) or mpc.t0 == self._restarted_t0:
            return
        if last is not None and last.times[-1] > t_start:
            return  # (a cycle of ours still runs: the next ones continue it; from it, the task would be carried)
        t0 = mpc.t0
        if self._restart_task(
            f"a cycle after the task's end (t={t0 + len(mpc.U_ref) * self.vi.dt:.4f}) was refused as beyond the limits "
            "with no plan of ours running: the robot is still far from the goal"
        ):
            self._restarted_t0 = t0

    def _restart_task(self, why: str, unentered: int | None = None) -> bool:
        """Plan the task again from the measured state, a new run with a new deadline (its cycles wait for the
        controller's entry of that plan): said with ``why``, counted in ``mpc_restarts``. While the cycles follow a
        ``~/goal`` request's plan, that goal is planned again instead (the task is not what the user asked for last);
        a ``~/joint_trajectory`` request's is not: from the held arm its points, from the first on, could lead the arm
        back along its path — the robot stays held, and the log says to send it again. Not while a request waits to be
        solved (a user's goal, say: it plans next, and a restart would supersede it). ``unentered``: the plan that
        ended without the controller's entry, if that is why — should the controller enter it after all before the
        restart's plan is out (it came late and was re-timed), the restart is dropped (``_restart_overtaken``). True if
        submitted."""
        with self._lock:
            if self._pending is not None:
                return False
        request, what = Request("task"), "the task"
        if self.mpc.followed:
            asked = self._followed
            if asked is None or asked.kind != "goal":
                self.warn(
                    "mpc held",
                    f"mpc: {why}; the robot is held: a joint trajectory request is not planned again by itself (from "
                    "where the arm is, its points from the first on could lead it back along its path) — send it "
                    "again, or a goal",
                )
                return False
            request, what = Request("goal", goal=asked.goal, duration=asked.duration), "the goal request"
        self.mpc_counts["restarts"] += 1
        self.warn(
            "mpc restart",
            f"mpc: {why}; {what} is planned again from the measured state, with a new deadline (restart "
            f"{self.mpc_counts['restarts']})",
        )
        self._submit(request, "mpc restart", unentered=unentered)
        return True

    def _restart_overtaken(self, job: Job) -> bool:
        """Whether ``job`` is an mpc restart for a plan the controller has entered since (call with the lock held): that
        plan reached it late, after its end, and was re-timed to start from the held robot — the run the restart was
        to begin is under way. Its plan, from the held state before that entry, would replace the running one mid-motion
        with a new task plan whose first command is not the running law's (a jump in the torque); dropped instead,
        said, and the cycles continue the entered plan."""
        return job.unentered is not None and self.entered_seq == job.unentered

    def _drop_overtaken_restart(self, job: Job) -> None:
        self._status(
            job,
            "superseded",
            f"{self.p['controller_name']} entered plan {job.unentered} after all (it came late and was re-timed): the "
            "restart is not published, the cycles continue that plan",
        )

    def publish_diagnostics(self) -> None:
        level, message, values = planner_diagnostics(
            self.active, self._worker is not None, self.mpc, self.mpc_counts, self.mpc_last_solve, self.last_plan
        )
        name = f"{self.get_namespace().rstrip('/')}/{self.get_name()}"
        self.diag_pub.publish(diagnostics(name, self.get_clock().now().to_msg(), level, message, values))

    # ---- requests and their outcomes -------------------------------------------------------------
    def _job(
        self, request: Request, source: str, header=None, wait: float = 0.0, late: int = 0, unentered: int | None = None
    ) -> Job:
        self._next_id += 1
        stamp, frame = (time_seconds(header.stamp), header.frame_id) if header is not None else (0.0, "")
        # (an MPC cycle is quiet: reported in /diagnostics and by its failures only, not 10 statuses a second)
        quiet = request.kind == "mpc"
        return Job(self._next_id, request, source, stamp, frame, wait, quiet=quiet, late=late, unentered=unentered)

    def _submit(
        self, request: Request, source: str, header=None, wait: float = 0.0, late: int = 0, unentered: int | None = None
    ) -> Job:
        """Solve ``request`` now, or after the solve under way (replacing a request that waits: superseded);
        ``late``: how many of its plans came late before (``_plan_again_after_late_delivery``); ``unentered``: the
        plan an mpc restart stands in for (``_restart_overtaken``)."""
        job = self._job(request, source, header, wait, late, unentered)
        if not self.active:
            self._status(job, "refused", "the planner is not active")
            return job
        with self._lock:
            if self._worker is None:
                self._worker, self._solving = threading.Thread(target=self._work, args=(job,), daemon=True), job
                self._worker.start()
                return job
            older, self._pending = self._pending, job
        if older is not None:
            self._status(older, "superseded", f"request {job.id} came before it was solved")
        self._status(job, "queued", "waits for the solve under way")
        return job

    def _work(self, job: Job) -> None:
        """The worker: solve ``job``, then whatever waits, until nothing does."""
        while job is not None:
            try:
                self._plan(job)
            except Exception as e:  # never a traceback from the worker thread: the outcome says why
                self._count_cycle(job, "failed")
                self._status(job, "failed", f"{type(e).__name__}: {e}")
            with self._lock:
                job, self._pending = self._pending, None
                self._solving = job
                if job is None:
                    self._worker = None

    def _count_cycle(self, job: Job, outcome: str) -> None:
        """An MPC cycle that ended ``outcome`` ('refused', 'failed') in /diagnostics' ``mpc_<outcome>``."""
        if job.request.kind == "mpc":
            self.mpc_counts[outcome] += 1

    def _status(self, job: Job, state: str, message: str, **values) -> None:
        """One outcome of ``job`` on ~/request_status (and in the log: refusals and failures as errors). An MPC cycle's
        (``job.quiet``): not its OK ones (10 a second), and its others through the throttled log, one line per outcome
        and ``log_throttle_period`` — a cycle refused every period (a robot beyond the limits) would otherwise log an
        error 10–100 times a second; /diagnostics counts them all."""
        text = f"request {job.id} ({job.request.kind} from {job.source}): {state}" + (f": {message}" if message else "")
        level = STATUS_LEVELS[state]
        if job.quiet and level == OK:
            return
        if job.quiet:
            self.warn(f"mpc {state}", text, level="error" if level == ERROR else "warning")
        elif level == ERROR:
            self.get_logger().error(text)
        elif level == WARN:
            self.get_logger().warning(text)
        values = dict(
            request=job.id,
            kind=job.request.kind,
            source=job.source,
            state=state,
            reason=message if level != OK else "",
            request_stamp=f"{job.header_stamp:.9f}",
            request_frame_id=job.frame_id,
            **values,
        )
        try:
            name = f"{self.get_namespace().rstrip('/')}/{self.get_name()}"
            self.pub_status.publish(diagnostics(name, self.get_clock().now().to_msg(), level, text, values))
        except Exception:  # (shutting down: the context is gone; the log line above stands)
            pass

    # ---- timing: where the plan starts ---------------------------------------------------------------
    def _now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def clock_rate(self) -> float:
        """Node-clock seconds per wall second: 1 without sim time; 0 for a lockstep simulation that waits."""
        if not self.get_parameter("use_sim_time").value:
            return 1.0
        rate = self.clock_samples.rate(time.monotonic())
        if rate is None:  # too short a window: measure now
            rate = measured_clock_rate(self._now)
        return rate

    def expected_solve_time(self) -> float:
        """``expected_solve_time`` until a solve after the first has been timed (the first also loads and compiles
        code: 7 s where later ones take 0.1 s); then 1.5 × the longest of the last five after the first."""
        if not self.solve_times:
            return float(self.p["expected_solve_time"])
        return 1.5 * max(self.solve_times)

    def _wait_until_at_rest(
        self, job: Job, measured: tuple[float, np.ndarray], activation: int
    ) -> tuple[float, np.ndarray] | None:
        """The measured state to plan ``job`` from when no plan of this planner runs: the robot held, at rest — or
        moving under a plan this planner did not make (a planner restarted mid-motion, another tool's). A plan from a
        moving state starts ``start_delay`` and the solve after it was measured, and this planner knows no law to carry
        the state there with: handed over from the running plan, its X_0 would be where the robot was (the panda at
        1 rad/s, 0.2 rad away: a jump in the command). So it waits until every joint's velocity (the joint states'
        q̇) is at most ``rest_velocity``, said once, and plans from that state. None (nothing to plan) when a newer
        request came meanwhile (``job`` superseded), an mpc restart was overtaken by the controller's entry of the plan
        it stood in for (``_restart_overtaken``), or the node was deactivated."""
        said = False
        while True:
            bound = float(self.p["rest_velocity"])
            qdot = np.abs(wire_velocity(self.vi, measured[1]))
            j = int(np.argmax(qdot)) if qdot.size else 0
            if bound <= 0.0 or not qdot.size or qdot[j] <= bound:
                if said:
                    self.get_logger().info(f"request {job.id}: the robot is at rest (t={measured[0]:.4f}): planning")
                return measured
            if not said:
                said, names = True, self.robot.joint_names
                name = names[j] if j < len(names) else f"coordinate {j}"
                self.get_logger().warning(
                    f"request {job.id}: the robot moves ({name} at {qdot[j]:.3g} per second, "
                    f"rest_velocity {bound:g}) under a plan this planner did not make (restarted mid-motion?): a plan "
                    "from this state would start where the robot no longer is; waiting until it is at rest"
                )
            time.sleep(0.05)
            with self._lock:
                newer, overtaken = self._pending, self._restart_overtaken(job)
            if overtaken:  # (the plan it stood in for runs after all: that is the motion it waited on)
                self._drop_overtaken_restart(job)
                return None
            if newer is not None:
                self._status(job, "superseded", f"request {newer.id} came while it waited for the robot to rest")
                return None
            if not self.active or activation != self.activation:
                self._status(job, "refused", "the planner was deactivated while it waited for the robot to rest")
                return None
            measured = self.measured_state() or measured

    def measured_state(self) -> tuple[float, np.ndarray] | None:
        """(t, x) of the newest joint states kept: the last few Δt decoded, merged and estimated as the controller
        does; None without a usable one (logged, throttled)."""
        if self.vehicle or self.measured is not None:  # (odometry's state, or one a caller set)
            return self.measured
        msgs = list(self.states)
        if not msgs:
            return None
        head = RawJointStateReader.HEAD
        try:
            newest = _stamp(head, msgs[-1][2])
        except Exception:
            newest = msgs[-1][1]
        horizon = 2 * self.vi.dt + float(self.p["joint_state_merge_age"]) + 0.05
        first = len(msgs) - 1
        while first > 0:
            try:
                t = _stamp(head, msgs[first - 1][2])
            except Exception:
                break
            if 0.0 < t < newest - horizon:
                break
            first -= 1
        self.estimator.reset()
        self.merger.reset()
        out = None
        for _, received, buf, _ in msgs[first:]:
            try:
                t, has_v = self.reader.read_raw(buf)
            except ForeignJointState:
                continue  # another driver's joints (gripper, wheels) on joint_states: not ours
            except ValueError as e:
                self.warn("joint state ignored", f"joint state ignored: {e}")
                continue
            if stamped_on_receipt(t, self.merger.last, received, FIRST_STATE_WINDOW):
                t = received  # header.stamp 0: never set by the driver
            merged = self.merger.add(
                t, self.reader.carried, self.reader.q.copy(), self.reader.qdot.copy() if has_v else None
            )
            if merged is None:
                continue
            if isinstance(merged, Missing):
                self.warn("waiting", f"joint state not complete: {merged}")
                continue
            try:
                x = self.estimator.update(merged.t, merged.q, merged.qdot)
            except Exception as e:  # never let a state estimate kill the solve; plan from the task's x_0 instead
                self.estimator.reset()
                self.warn("estimate", f"state estimate failed: {type(e).__name__}: {e}")
                continue
            if x is not None:
                out = (merged.t, x)
        return out

    def state_conflict(self) -> str | None:
        """Why the measured state cannot be trusted, or None: joint states of one joint from two publishers within
        ``joint_state_conflict_window`` of the newest (by receipt) — a joint_state_publisher beside the robot's
        driver, a second simulator in this ROS domain: the newest state may be the other's. Drivers of disjoint joints
        (an arm and a gripper) are no conflict: the newest message of each publisher is decoded for the joints it
        carries (``supervision.PublisherSources``, the controller's rule)."""
        window = float(self.p["joint_state_conflict_window"])
        msgs = list(self.states)
        if window <= 0.0 or self.vehicle or not msgs:
            return None
        newest: dict[bytes, tuple[float, bytes]] = {}
        for wall, _, buf, gid in reversed(msgs):
            if wall < msgs[-1][0] - window:
                break
            if gid is not None and gid not in newest:
                newest[gid] = (wall, buf)
        if len(newest) < 2:
            return None
        sources = PublisherSources(window)
        for gid, (wall, buf) in sorted(newest.items(), key=lambda kv: kv[1][0]):
            try:
                self.reader.read_raw(buf)  # (the worker's reader: measured_state, on this thread, is done with it)
            except (ForeignJointState, ValueError):
                continue  # (not this robot's joints, or unreadable: reported when a request decodes it)
            sources.admit(gid, wall, carried_parts(self.reader.carried))
        if not sources.conflict:
            return None
        return joint_state_conflict_text(
            self, self.state_sub.topic_name, sources, "the measured state may be the other's"
        )

    def _skip_cycle(self, measured: tuple[float, np.ndarray] | None) -> bool:
        """Whether an MPC cycle from the newest state ``measured`` (None: none) has nothing to correct: skipped, and
        said why where that is news. Else that state's stamp is kept (``mpc_last_state_t``)."""
        if measured is None:
            # a cycle corrects the running plan from where the robot is: without a state it has nothing to correct
            # (solved anyway it would be the task's first plan again, from the task's start pose)
            self.warn("mpc no state", "mpc: no usable joint state (none kept, or none estimated): cycle skipped")
            return True
        t_m, t0, last = measured[0], self.mpc.t0, self.mpc_last_state_t
        if t_m < t0:  # (the plan the cycles continue has not started: the robot is held until then)
            # (but a cycle planned from a later state: the clock went back)
            if last is not None and last >= t0:
                self.warn(
                    "mpc clock back",
                    f"mpc: the newest joint state (t={t_m:.4f}) is before the start of the plan the cycles continue "
                    f"(t={t0:.4f}), after a cycle from t={last:.4f}: the clock went back (a simulator reset?); the "
                    "cycles resume from there, where the controller enters that plan again",
                )
            return True
        if self._stale(t_m):
            return True
        self.mpc_last_state_t = t_m
        return False

    def _stale(self, t_m: float) -> bool:
        """Whether an MPC cycle's newest joint state, stamped ``t_m``, is older than ``state_timeout`` on this node's
        clock (the controller's rule): then the cycle is skipped, warned and counted (``mpc_stale``). The controller
        holds the arm on such a state; a plan predicted from it under the running plans would be a guess of where the
        arm is, and the prediction grows with its age (a dead driver: a roll-out of minutes per cycle, reported as
        overruns instead of its cause)."""
        age, timeout = self._now() - t_m, float(self.p["state_timeout"])
        if not age > timeout:
            return False
        self.mpc_counts["stale"] += 1
        self.warn(
            "mpc stale state",
            f"mpc: the newest joint state is {age:.3f} s old (state_timeout {timeout:g} s): cycle skipped "
            f"({self.mpc_counts['stale']} so far); is the driver publishing joint_states?",
        )
        return True

    def predict(self, t: float, x: np.ndarray, steps: int, t_start: float) -> np.ndarray:
        """The state ``steps`` Δt after the measurement: under the laws of the plans the controller runs until the
        new plan's start ``t_start`` (``PlanSchedule``); where none runs, where it was measured (at rest or held)."""
        try:
            return self.schedule.predict(self.vi, t, x, steps, t_start)
        except Exception as e:
            self.get_logger().warning(f"prediction failed ({type(e).__name__}: {e}): planning from the measured state")
            return x

    def predict_at(self, t: float, x: np.ndarray, t_end: float) -> np.ndarray:
        """The state at ``t_end`` (not necessarily a whole number of Δt after the measurement at ``t``): ``predict``
        to the step before it and one step on, interpolated linearly between the two (joint states: (q, p))."""
        steps = int(math.ceil((t_end - t) / self.vi.dt - 1e-9))
        if steps <= 0:
            return x
        before = self.predict(t, x, steps - 1, t_end)
        after = self.predict(t + (steps - 1) * self.vi.dt, before, 1, t_end)
        frac = (t_end - t) / self.vi.dt - (steps - 1)
        return before + min(max(frac, 0.0), 1.0) * (after - before)

    def _warm_start(self, request: Request, task, t_start: float) -> Plan | None:
        """The executed plan receded to ``t_start`` when this is a re-plan of the task that made it (``warm_start``
        on, same horizon, ``t_start`` inside it), else None (plan cold)."""
        plan = self.last_plan
        if (
            not self.p["warm_start"]
            or plan is None
            or request.kind != "task"
            or self._warm_task is not task
            or plan.horizon != task.horizon
        ):
            return None
        steps = int(round((t_start - plan.times[0]) / plan.dt))
        if not 0 <= steps < plan.horizon:
            return None
        self.get_logger().info(f"warm start: the executed plan from its step {steps} on")
        self.last_warm_step = steps
        return plan.receded(steps)

    def _mpc_solve(self, request: Request, x0: np.ndarray | None, t_start: float, executing):
        """Mode mpc: the task's first plan (``RecedingHorizon.start``; its time origin becomes the plan's start) or a
        cycle from the state predicted at ``t_start``, warm from ``executing``, the plan that runs then. (plan,
        result) with the plan's ``converged`` = the cycle's acceptance (planning.mpc.Cycle)."""
        if request.kind == "mpc":  # (``_plan`` skips a cycle without a measured state: x0 is the predicted one)
            self.mpc_counts["cycles"] += 1
            cycle = self.mpc.cycle(t_start, x0, executing)
        else:
            cycle = self.mpc.start(x0, t_start)
        from ..planning.requests import verify_plan

        plan = cycle.plan.shifted(0.0)  # (shifted to t_start on publish)
        verify_plan(self.vi, self.task, plan, float(self.p["velocity_limit_factor"]))
        return plan, dataclasses.replace(cycle.result, converged=cycle.accepted)

    # ---- planning ------------------------------------------------------------------------------------
    def _plan(self, job: Job) -> None:
        """Wait up to ``job.wait`` s for a measured state, plan the request from it, publish, report."""
        from ..planning.errors import PlanLimitsError  # (the planner library: loaded with the task at configure)

        request, log = job.request, self.get_logger()
        activation = self.activation  # (a deactivation from here on: the plan is not published)
        with self._lock:
            overtaken = self._restart_overtaken(job)
        if overtaken:
            return self._drop_overtaken_restart(job)
        self._status(job, "planning", "")
        measured = None
        deadline = time.monotonic() + job.wait
        while self.p["use_measured_state"]:
            measured = self.measured_state()
            if measured is not None or time.monotonic() >= deadline:
                break
            time.sleep(0.02)
        conflict = self.state_conflict() if self.p["use_measured_state"] else None
        if conflict is not None:  # (planned from it, the plan could start from the other publisher's pose)
            if request.kind == "mpc":
                self._count_cycle(job, "refused")
                self.warn("mpc ambiguous state", f"mpc: cycle skipped: {conflict}", level="error")
            else:
                self._status(job, "refused", f"no trustworthy measured state: {conflict}")
            return
        vi, task, x0, t_start, steps = self.vi, self.task, None, 0.0, 0
        executing = None  # (an MPC cycle: the plan that runs at its start, whose law its step 0 keeps)
        timeline = self.timeline  # (the timeline last_plan is on while this solve predicts from it)
        # while a plan of ours runs, the state is carried to where the new plan starts; else the robot is held
        moving = (
            measured is not None
            and self.last_plan is not None
            and (request.kind == "mpc" or measured[0] < self.last_plan.times[-1])
        )  # (an MPC cycle: under the last plan)
        if request.kind == "mpc" and self._skip_cycle(measured):
            return
        if measured is not None and not moving and not self.vehicle:
            measured = self._wait_until_at_rest(job, measured, activation)
            if measured is None:
                return
        if measured is not None:
            t_m, x_m = measured
            with self._lock:
                self.schedule.prune(t_m)
            rate = self.clock_rate()
            expected = self.expected_solve_time()
            if request.kind == "mpc":  # (a cycle is capped at its iterations; one beyond its period is an overrun)
                expected = min(expected, self.mpc.settings.period)
            lead = max(self._now() - t_m, 0.0) + rate * expected if moving else 0.0
            if request.kind == "trajectory" and request.start > t_m + lead:
                lead = request.start - t_m
            steps = int(math.ceil(lead / vi.dt - 1e-9))
            t_start = t_m + steps * vi.dt
            if request.kind == "mpc" and not self.vehicle:
                # on the grid of the plan that runs then: the cycle's step 0 is that plan's law at its own step
                # (planning.mpc), entered by the controller exactly where the law would have stepped anyway — the
                # plan that runs, not the latest published (a cycle whose lead a clock-rate transient stretched
                # starts seconds ahead: the next cycle continues the plan before it, and replaces it)
                t_start = PlanSchedule.cycle_start(self.schedule.plans, t_m + lead, vi.dt)
                x0 = self.predict_at(t_m, x_m, t_start)
                executing = PlanSchedule.in_force(self.schedule.remaining(t_start), t_start)
            else:
                x0 = self.predict(t_m, x_m, steps, t_start)
            log.info(
                f"request {job.id}: planning from the measured state at t={t_m:.6f}"
                + (
                    f", carried {steps} steps to the start t={t_start:.6f} under the plan being executed (clock "
                    f"rate {rate:.3g}, expected solve {expected:.2f} s)"
                    if moving
                    else ", held there (no plan of this planner running): the plan starts when it is ready"
                )
            )
        else:
            log.info(
                f"request {job.id}: planning from the task's x_0 (no measured state): the plan starts when the "
                "controller receives it"
            )
        t0 = time.monotonic()
        self.last_warm_step = self.last_result = None  # (this solve's: for /diagnostics and tests)
        try:
            if self.mpc is not None and request.kind in ("task", "mpc"):
                plan, result = self._mpc_solve(request, x0, t_start, executing)
            else:
                warm = self._warm_start(request, task, t_start) if moving else None
                plan, result = solve_request(
                    request,
                    vi,
                    task,
                    x0,
                    warm,
                    self.settings,
                    log.info,
                    velocity_limit_factor=float(self.p["velocity_limit_factor"]),
                )
        except PlanLimitsError as e:  # a plan the controller would refuse: the sender hears why and what to do
            self._count_cycle(job, "refused")
            self._status(job, "refused", f"plan beyond the limits: {e}", joint=e.joint, limit_ratio=f"{e.ratio:.4g}")
            if request.kind == "mpc":
                self._maybe_restart_task(t_start)
            return
        except Exception as e:  # a failed solve must not kill the node; the controller keeps its plan
            self._count_cycle(job, "failed")
            self._status(job, "failed", f"planning failed: {type(e).__name__}: {e}")
            return
        solve = time.monotonic() - t0
        self.last_result = result
        if request.kind == "mpc":
            self.mpc_last_solve = solve
            self.mpc_counts["accepted" if result.converged else "not_accepted"] += 1
        if self._solves:  # (the first solve of the process is not a measure of the next ones)
            self.solve_times = self.solve_times[-4:] + [solve]
        self._solves += 1
        if not result.converged and not self.p["publish_unconverged"]:
            why = (
                f"cycle not accepted: its plan is no better than the executing plan's continuation ({result}); that "
                "plan goes on"
                if request.kind == "mpc"
                else f"plan not published: the optimizer did not converge ({result}); the controller keeps its "
                "current plan (set publish_unconverged to publish best-effort plans)"
            )
            self._status(job, "refused", why)
            return
        # (computed before the start is fixed: for a 100-step plan this takes a good part of start_delay)
        velocities = None if self.vehicle else np.array([wire_velocity(vi, x) for x in plan.X])
        if measured is not None and not moving:  # held still: start as soon as the controller can have it
            ready = self._now() + rate * float(self.p["start_delay"])  # (a lockstep clock waits: no delay)
            t_start = max(t_start, t_m + math.ceil((ready - t_m) / vi.dt - 1e-9) * vi.dt)
            if self.mpc is not None and request.kind == "task":
                self.mpc.t0 = t_start  # (the task's clock: the first plan's start)
        if not self.active or activation != self.activation:  # (deactivated, and maybe active again, meanwhile)
            self._status(job, "refused", "the planner was deactivated during the solve: not published")
            return
        plan = plan.shifted(t_start)
        seq = time.time_ns() // 1000  # unique across planner restarts
        on_receipt = measured is None
        msg = plan_to_message(plan, seq, start_on_receipt=on_receipt)
        with self._lock:  # (plan_entered waits: the plan and the timeline it continues are judged together)
            overtaken = self._restart_overtaken(job)
            stale = moving and timeline != self.timeline
            if not (stale or overtaken):
                self._publish_plan(plan, msg, seq, on_receipt, velocities)
                if request.kind != "mpc":
                    self.entered_seq = None  # (a new run of the task: its cycles wait for this plan's entry)
                if self.mpc is not None and request.kind in ("goal", "trajectory"):
                    self.mpc.follow(result, t_start)  # (the cycles continue the request, not the task's goal)
                    self._followed = request
        if overtaken:
            return self._drop_overtaken_restart(job)
        if stale and request.kind == "mpc":
            self.warn("mpc stale", "mpc: a cycle dropped: the controller re-timed the plan it continues meanwhile")
            return
        if stale:  # (a request: planned again from the new timeline)
            log.info(f"request {job.id}: the controller re-timed the plan it continues during the solve: again")
            return self._plan(job)
        self._warm_task = task if request.kind == "task" else None
        late = (self._now() - t_start) / vi.dt if not on_receipt else 0.0
        text = (
            f"published plan {seq}{'' if plan.converged else ' (UNCONVERGED, best effort)'}: N={plan.horizon}, "
            "starts at "
            + ("receipt" if on_receipt else f"t={t_start:.6f}")
            + f", solve {solve:.2f} s, {result}"
            + (f"; WARNING: {late:.1f} steps after its start" if late > 0.5 else "")
        )
        log.info(f"request {job.id} ({request.kind} from {job.source}): {text}")
        self._status(
            job,
            "accepted",
            text,
            plan=seq,
            plan_start="0" if on_receipt else f"{t_start:.9f}",
            horizon=plan.horizon,
            dt=f"{vi.dt:g}",
            converged=plan.converged,
            solve_time=f"{solve:.3f}",
        )
        # from here on a refusal of this plan is its request's next status; one that came before 'accepted' was sent
        # (a plan refused on receipt: the controller answered while this thread was still on its way here) now
        with self._lock:
            self._published[seq] = job
            _trim(self._published)
            early = self._refused_early.pop(seq, None)
        if early is not None:
            self._controller_refused(job, seq, *early)

    def _publish_plan(self, plan: Plan, msg: UInt8MultiArray, seq: int, on_receipt: bool, velocities) -> None:
        """~/path or ~/trajectory, then ~/plan; ``last_plan``, ``last_seq`` (for the prediction and plan_entered)."""
        if self.vehicle:
            self.pub_path.publish(path_from_plan(self.vi, plan.X, plan.times[0], str(self.p["odom_frame"])))
        else:
            inputs = [self.robot.joint_index(n) for n in self.robot.actuated]
            stamp = self.get_clock().now().to_msg()
            stamp.sec, stamp.nanosec = split_seconds(0.0 if on_receipt else float(plan.times[0]))
            self.pub_traj.publish(plan_to_trajectory(plan, velocities, inputs, stamp))
        # the newest first: a re-publish (the executor's timer thread) between the two lines would otherwise send the
        # previous plan after this one, which a controller then takes as a new plan starting earlier
        self._latest = msg
        self.last_plan, self.last_seq = (plan if not on_receipt else None), seq
        if on_receipt:
            self.schedule.clear()
        else:
            self.schedule.add(plan)
        self.pub_plan.publish(msg)


def _trim(d: dict, keep: int = 32) -> None:
    """Drop the oldest entries of ``d`` beyond ``keep``."""
    while len(d) > keep:
        del d[next(iter(d))]


def _stamp(head, buf: bytes) -> float:
    sec, nsec, _ = head.unpack_from(buf, 4)
    return sec + 1e-9 * nsec


def main(args: list[str] | None = None) -> None:
    run_node(PlannerNode, args)


if __name__ == "__main__":
    main()
