"""Which plan the controller follows and what it commands at each tick: the plan side of the controller node,
ROS-free (the node decodes plans, reads its clock, publishes and logs through the ``logger`` and ``warn`` it
passes in).

A plan is admitted (converged unless ``accept_unconverged``, sizes and Δt of this system), waits until its stated
start t₀ (the current plan, or nothing, until then) and is entered at k = 0 — at once if it says so (start on
receipt), re-timed to now if it comes late while the robot is still at its X_0 and no plan runs (a plan that
follows a running one was planned on its timeline: it is entered late instead; ``on_enter`` tells who needs to
know where a plan started) — or dropped if it ended before it could be entered and is not re-timed. Each tick
gives the law's command u = U_k + K_k (X_k ⊖ x) (``tracking_law``) or the fault that calls for the safe command
instead: path and goal tolerances abort a plan, a tracking error outside the retraction's domain and a non-finite
command are faults.
The safe command itself is ``safe_input``. Stamps and clock that went back together (a simulator reset) re-queue
the active plan for its start (``clock_went_back``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ..integrators.base import DiscreteSystem, state_velocities
from ..model.robot import RobotModel
from .intake import FAULT_INVALID_STATE, Estimate, Fault, JointLimits
from .plan import Plan, state_error
from .tracking import HoldLaw, TrackingController, plan_step, replaces, safe_command, tracking_law

# The kinds of refusal (``refuse``, the node's ~/plan_refused) of a plan that nothing of ran because it reached the
# controller late — after its end, or two or more steps after its start with the held robot no longer at its X_0 (so
# not re-timed) and beyond start_tolerance from where the plan had got to: the planner plans its request again from
# the measured state. (A plan refused by start_tolerance on time is wrong for where the robot is: not planned again.)
REFUSED_ENDED = "plan ended"
REFUSED_LATE = "plan late"

# Kinds of fault of the plan side (the measurements' are control.intake's FAULT_*).
FAULT_NONFINITE, FAULT_PATH, FAULT_GOAL, FAULT_TRACKING = (
    "non-finite control input",
    "path tolerance violated",
    "goal tolerance violated",
    "tracking error undefined",
)


# The hold's DLQR weights when the settings do not name them (the controller node's parameter defaults).
HOLD_WEIGHTS = {"hold_position_weight": 100.0, "hold_momentum_weight": 1.0, "hold_effort_weight": 0.01}


def command_hold(trigger: str, rate: float, dt: float, state_interval: float | None) -> float:
    """How long a controller's command is held: the timer's period 1/``rate``, or (``trigger`` 'joint_state': one
    command per state) the interval between the last two states, at least the plan's ``dt`` (a lockstep simulator
    steps Δt per command; jitter or a second driver's messages do not shorten it)."""
    if trigger == "timer":
        return 1.0 / rate
    return max(dt, state_interval or 0.0)


class PlanRunner:
    """The plan being tracked (``law``, ``active_seq``), the next one (``pending``: (seq, plan, start on receipt))
    and the fault state (``fault``: the last fault's kind until a command succeeds again, ``aborted``: (kind,
    detail) of an aborted plan, ``fault_counts`` per kind) of one controller.

    ``settings``: the controller's live parameters (read at each use): ``accept_unconverged``, ``gain_scale``,
    ``hold_integral_gain``, ``retime_tolerance``, ``start_tolerance``, ``path_tolerance``, ``goal_tolerance``,
    ``goal_time_tolerance``, ``safe_mode``, ``safe_damping``, ``hold_position_weight``, ``hold_momentum_weight``,
    ``hold_effort_weight`` (the hold's gain: ``hold``, a ``HoldLaw``, None on a vehicle). ``robot``, ``vi``: the model
    and its discrete system (``set_system`` for a plan's Δt);
    ``vehicle``: tolerances on τ⁻¹(X_k⁻¹x) (a Lie-group state) instead of joint angles; ``error_names``: what the
    tolerance messages call each error component; ``act_q_index``: where the actuated joints' velocities are in an
    ``Estimate``'s q̇. ``logger``: .info/.warning (a ROS or ``logging`` logger); ``warn(kind, text, level)``: the
    log throttled per kind.
    """

    def __init__(
        self,
        robot: RobotModel,
        vi: DiscreteSystem,
        settings: Mapping[str, Any],
        vehicle: bool,
        error_names,
        act_q_index: np.ndarray,
        logger,
        warn: Callable[..., Any],
    ):
        self.robot, self.vi, self.p, self.vehicle = robot, vi, settings, vehicle
        self.error_names, self.act_q_index, self.logger, self.warn = error_names, act_q_index, logger, warn
        self.law: TrackingController | None = None
        self.active_plan: Plan | None = None
        self.active_seq = self.last_seq = None
        self.pending: tuple[int, Plan, bool] | None = None
        self.following: list[tuple[int, Plan, bool]] = []  # plans that start after the pending one, by start
        self._admitted: deque[int] = deque(maxlen=16)  # the last plans queued (a late duplicate is not new)
        self._refused: deque[int] = deque(maxlen=16)  # the last plans said to be refused (``on_refuse``)
        self.fault_counts: dict[str, int] = {}
        self._held_prescribed: np.ndarray | None = None
        self.hold = None if vehicle else HoldLaw(vi, self.hold_weights())
        # called with (seq, plan as run) when a plan is entered: the node tells the planner its start (re-timed?)
        self.on_enter: Callable[[int, Plan], Any] | None = None
        # called with (seq, why) when a plan is not run (rejected on arrival, or not entered): the node tells the
        # planner, whose request status says so — else the sender read "accepted" for a plan that never ran
        self.on_refuse: Callable[[int, str, str], Any] | None = None  # (seq, why, kind)
        self.reset()

    def hold_weights(self) -> tuple[float, float, float]:
        """(w_q, w_p, w_u) of the hold's DLQR gain, from the live settings."""
        return tuple(float(self.p.get(k, w)) for k, w in HOLD_WEIGHTS.items())

    def set_system(self, robot: RobotModel, vi: DiscreteSystem) -> None:
        """Run plans on ``vi`` (a plan's Δt) from now on; the active plan's law stays until the next plan."""
        self.robot, self.vi = robot, vi
        if self.hold is not None:
            self.hold.set_system(vi)

    def reset(self) -> None:
        """No fault, no abort, nothing held (a controller that (re)starts; its plans stay)."""
        self.fault, self.aborted, self.goal_reached = None, None, False
        if self.hold is not None:
            self.hold.release()

    def stop(self) -> None:
        """Forget the active and the pending plan (a controller that stops)."""
        self.law, self.pending, self.active_seq, self.following = None, None, None, []

    # ---- plans ---------------------------------------------------------------------------------------------------
    def refuse(self, seq: int, kind: str, text: str, level: str = "warning") -> None:
        """Plan ``seq`` is not run: ``text`` logged (throttled per ``kind``) and passed to ``on_refuse`` — once per
        plan (the planner re-publishes its latest plan every second; a live parameter change may admit it then)."""
        self.warn(kind, text, level=level)
        if self.on_refuse is not None and seq not in self._refused:
            self._refused.append(seq)
            self.on_refuse(seq, text, kind)

    def admit(self, seq: int, plan: Plan, dt_range: tuple[float, float], limits: JointLimits | None = None) -> bool:
        """Whether plan ``seq`` may be queued on this system (``dt_range``: the Δt the estimate accepts; ``limits``:
        the bounds measured states are held to — a plan whose own states break them would be aborted mid-motion by
        the safe command, so it is refused before the robot moves); a refusal is logged. The same ``seq`` again
        (the planner's periodic re-publish), or one of the last few admitted, is silently not admitted."""
        if seq == self.last_seq or seq in self._admitted:
            return False
        if not plan.converged and not self.p["accept_unconverged"]:
            self.refuse(
                seq,
                "plan rejected",
                f"plan {seq} rejected: marked unconverged by the planner (set "
                "accept_unconverged to track best-effort plans)",
                level="error",
            )
            return False
        sizes = (plan.X.shape[1], plan.U.shape[1], plan.K.shape[2])
        if sizes != (self.vi.nx, self.vi.nu, self.vi.state.ndx):
            self.refuse(
                seq,
                "plan rejected",
                f"plan {seq} has nx, nu, ndx = {sizes}; model has "
                f"{(self.vi.nx, self.vi.nu, self.vi.state.ndx)}: rejected",
                level="error",
            )
            return False
        lo, hi = dt_range
        if not lo <= plan.dt <= hi:
            self.refuse(
                seq,
                "plan rejected",
                f"plan {seq} has dt = {plan.dt:g} s, outside [{lo:g}, {hi:g}] s: rejected",
                level="error",
            )
            return False
        why = self.beyond_limits(plan, limits) if limits is not None else None
        if why is not None:
            self.refuse(
                seq,
                "plan rejected",
                f"plan {seq} rejected: {why}, which this controller refuses as a measured "
                "state (position_limit_margin, velocity_limit_factor): re-plan within the URDF limits",
                level="error",
            )
            return False
        return True

    def beyond_limits(self, plan: Plan, limits: JointLimits) -> str | None:
        """Where the plan's own states break ``limits`` (positions, q̇ = M(q)⁻¹p as for a measured state), or None."""
        nq = self.vi.nq
        for k, x in enumerate(plan.X):
            why = limits.check(x[:nq], self.vi.velocity(x))
            if why is not None:
                return f"its state at t = {plan.times[k]:.4g} s (k = {k}) has {why}"
        return None

    def queue(self, seq: int, plan: Plan, start_on_receipt: bool) -> None:
        """An admitted plan becomes the pending one (entered by ``command`` when its start comes) — replacing the one
        that waits, unless it starts later than that one: then it follows it (``following``), each entered at its
        own start (consecutive MPC plans: the later was planned to continue the earlier's law)."""
        self.last_seq = seq
        self._admitted.append(seq)
        item, waiting = (seq, plan, start_on_receipt), self.pending
        if start_on_receipt or waiting is None or waiting[2] or replaces(plan.times[0], waiting[1].times[0], plan.dt):
            self.pending, self.following = item, []  # replaces what waits
        else:
            # starts after the plan that waits (an MPC cycle's plan arriving before the last cycle's has started):
            # that one runs until this one's start — the planner predicted this plan's start state under its law
            self.following = [f for f in self.following if not replaces(plan.times[0], f[1].times[0], plan.dt)] + [item]
        start = "the next joint state" if start_on_receipt else f"t={plan.times[0]:.4f}"
        self.logger.info(
            f"accepted plan {seq}: N={plan.horizon}, dt={plan.dt:g}, starts at {start}"
            f"{'' if plan.converged else ', UNCONVERGED (best effort)'}"
        )

    def set_plan(self, plan: Plan) -> None:
        """Track ``plan`` with the current gain_scale (also to apply a new gain_scale to the active plan)."""
        ki = 0.0 if self.vehicle else self.p.get("hold_integral_gain", 0.0)  # (on joint positions only)
        self.law = tracking_law(plan, self.vi, self.p["gain_scale"], ki)
        self.active_plan = plan  # unscaled: a later gain_scale applies to it

    def _maybe_enter(self, t: float, x: np.ndarray) -> None:
        """Make the pending plan the active one once its start time has come (or at once: start on receipt)."""
        seq, plan, on_receipt = self.pending
        t0 = plan.times[0]
        if on_receipt:
            plan = plan.shifted(t)
        elif plan_step(t, t0, plan.dt) < 0:
            return  # not yet: the current plan (or nothing) until the stated start (its step 0 from t₀ − Δt/2)
        late = 0 if on_receipt else plan_step(t, t0, plan.dt)
        retimed, gap_x0 = False, ""
        gap = float(self.configuration_error(plan.X[0], x).max())  # (re-timing keeps X: the same gap after it)
        running = self.running(t)
        if late > 1 and running:
            # planned on the running plan's timeline (an MPC cycle, a re-plan in motion): its X_0 is where that law
            # takes the robot at t₀ and its U_0 that law's command there — shifted, both would be wrong
            gap_x0 = f" (it follows plan {self.active_seq}, on whose timeline it was planned: not re-timed)"
        elif late > 1 and self.p["retime_tolerance"] > 0:
            # Late, but the robot is still at X_0 (at rest or held: nothing happened meanwhile): start it now
            # rather than skip its first steps. Velocities both through one inverse Legendre map: X_0 and x are
            # discrete states (p_k = D₂L_d), whose M⁻¹p at rest under gravity is Δt/2·M⁻¹∇V, not the measured q̇ = 0.
            ev = np.abs(self.vi.velocity(plan.X[0]) - self.vi.velocity(x)).max()
            if max(gap, ev) <= self.p["retime_tolerance"]:
                # by whole steps, to the first of its instants not before now: its grid stays the planner's (told
                # by on_enter: it continues the plan from t₀ + m·Δt exactly) and U_0 still runs Δt/2…3Δt/2 from now
                # (law.index rounds) — not a step that began in the past (panda reach: 0.0064 rad RMS entered at
                # t₀ = t − Δt/2 against 0.0014–0.0019 on time)
                m = late if t0 + late * plan.dt >= t else late + 1
                plan, retimed = plan.shifted(t0 + m * plan.dt), True
            gap_x0 = f" (the robot is {gap:.3g} in q, {ev:.3g} in q̇ from its X_0: not re-timed)"
        if late >= plan.horizon and not retimed:
            # Past its last input and not re-timed: entering it would only hold X_N, wherever the robot is now (a
            # latched plan a restarted controller receives mid-motion; one delivered that late). As ros2_controllers'
            # JTC refuses a trajectory that ends in the past: dropped, and what ran before goes on.
            self.pending = None
            self.refuse(
                seq,
                REFUSED_ENDED,
                f"plan {seq} not entered: it ended at t={plan.times[-1]:.4f}, before it could be entered (state "
                f"t={t:.4f}); " + (f"plan {self.active_seq} goes on" if self.law is not None else "the hold goes on"),
            )
            return
        tol = self.p["start_tolerance"]
        if tol > 0 and not running:
            # Entered from the hold (a plan planned from elsewhere: the task's x_0 without a measured state, a latched
            # plan a restarted controller receives mid-motion): its feedback would drive the arm at the effort limits
            # toward a reference it is far from. As MoveIt's allowed_start_tolerance: refused, the hold goes on.
            # Judged at the step of entry, or the one before: a plan one step late is entered at its step 1 (re-timing
            # starts at two), while the held arm is still at X_0 — one step of the plan's own motion is no distance
            # from it (the panda's wrist turns 0.069 rad in its reach's first step; CI beside a busy loop)
            k_in = min(max(plan_step(t, plan.times[0], plan.dt), 0), plan.horizon)
            e = min((self.configuration_error(plan.X[k], x) for k in {max(k_in - 1, 0), k_in}), key=np.max)
            if e.max() > tol:
                j = int(np.argmax(e))
                self.pending = None
                self.refuse(
                    seq,
                    REFUSED_LATE if late > 1 and not retimed else "start tolerance",
                    f"plan {seq} not entered: at its step {k_in} its {self.error_names[j]} is {e[j]:.4g} from the "
                    f"measured one, beyond start_tolerance {tol:g}; "
                    + (f"plan {self.active_seq}'s hold goes on" if self.law is not None else "the hold goes on"),
                )
                return
        self.set_plan(plan)
        self.pending, self.active_seq, self.aborted, self.goal_reached = None, seq, None, False
        if self.hold is not None:
            self.hold.release()
        k = self.law.index(t)
        self.logger.info(
            f"entered plan {seq} at k={k} (state t={t:.4f}, plan start t0={t0:.4f})"
            + (
                f", re-timed by {m} steps (to t0={plan.times[0]:.4f}): {late} steps late with the robot still at X_0"
                if retimed
                else ""
            )
        )
        if self.on_enter is not None:
            self.on_enter(seq, plan)
        if k > 1:
            self.warn(
                "late plan",
                f"plan {seq} entered {k} steps after its start: it arrived late (the planner's "
                f"expected_solve_time is too short for this machine){gap_x0}",
            )
        if k == 0 and gap > 0.1:  # a plan from the task's x_0 while the robot is elsewhere: feedback fights it
            self.warn("far start", f"plan {seq} starts {gap:.3f} away from the measured q")

    def running(self, t: float) -> bool:
        """Whether a plan drives the robot at ``t``: entered, not aborted, not past its last step (after it, the
        law holds X_N: the robot at rest, as under the hold)."""
        return self.law is not None and self.aborted is None and t < self.active_plan.times[-1]

    def clock_went_back(self, t: float, last_stamp: float) -> bool:
        """Stamps and the clock went back together (a simulator reset with its time): an active plan that starts
        after ``t`` waits for its start again, as a newly received one (re-entered at k = 0 then) — not its U_0
        held until then. True if so: the caller commands zero torque once meanwhile, the command that needs no loop
        (as on deactivate)."""
        msg = f"the clock went back: state t={t:.4f} after t={last_stamp:.4f} (a simulator reset?)"
        plan = self.active_plan if self.law is not None else None
        if plan is None or t >= plan.times[0] - 0.5 * plan.dt:
            self.logger.warning(msg)
            return False
        if self.pending is None:
            self.pending = (self.active_seq, plan, False)
            self.logger.warning(f"{msg}: plan {self.active_seq} starts at t={plan.times[0]:.4f} again")
        else:  # a newer plan waits for its own start
            self.logger.warning(f"{msg}: plan {self.active_seq} dropped; plan {self.pending[0]} is next")
        self.law, self.active_seq = None, None
        return True

    # ---- commands ------------------------------------------------------------------------------------------------
    def command(self, t: float, x: np.ndarray) -> tuple[int, np.ndarray] | Fault | None:
        """(k, u) for the state x stamped t, entering the pending plan if its start has come; a ``Fault`` where the
        safe command is due instead; None without a plan."""
        while self.pending is not None:
            waiting = self.pending
            self._maybe_enter(t, x)
            if self.pending is waiting:
                break  # not yet
            if self.following:  # entered: the next one in line, if its start has come too
                self.pending = self.following.pop(0)
        law = self.law
        if law is None:
            return None
        if self.aborted is not None:
            return Fault(*self.aborted)
        k = law.index(t)
        if self._tolerances_violated(law, k, t, x):
            return Fault(*self.aborted)
        try:
            u, clamped = law.command(k, x)
        except ValueError as e:  # e.g. the Cayley retraction's τ⁻¹ half a turn off the plan (Jimenez2013, §5)
            return Fault(FAULT_TRACKING, f"{type(e).__name__}: {e}")
        if not np.all(np.isfinite(u)):
            return Fault(FAULT_NONFINITE, "check the plan's gains")
        if clamped:
            self.warn("clamped", "command clamped to the effort limits")
        if self.fault is not None:
            self.logger.info(f"joint states valid again after: {self.fault}; tracking resumed")
            self.fault = None
        if self.hold is not None and self.hold.engaged:  # (a hold taken on a fault ends when tracking resumes)
            self.hold.release()
        return k, u

    def abort(self, kind: str, detail: str) -> None:
        """Abort the plan that runs (if any, and not aborted already) for the fault ``kind``: the safe command until
        the next plan is entered, as on a violated tolerance."""
        if self.law is not None and self.aborted is None:
            self.aborted = (kind, f"plan {self.active_seq} aborted: {detail}")

    def _tolerances_violated(self, law: TrackingController, k: int, t: float, x: np.ndarray) -> bool:
        p, plan = self.p, law.plan
        if p["path_tolerance"] > 0 and k <= plan.horizon:
            e = self.configuration_error(plan.X[k], x)
            if e.max() > p["path_tolerance"]:
                j = int(np.argmax(e))
                self.aborted = (
                    FAULT_PATH,
                    f"plan {self.active_seq} aborted at k={k}: |q_ref − q| of "
                    f"{self.error_names[j]} = {e[j]:.4g} > {p['path_tolerance']}",
                )
                return True
        if p["goal_tolerance"] > 0 and k >= plan.horizon and not self.goal_reached:
            e = self.configuration_error(plan.X[-1], x).max()
            if e <= p["goal_tolerance"]:
                self.goal_reached = True
                self.logger.info(f"plan {self.active_seq}: goal reached (|q_N − q| = {e:.4g})")
            elif t > plan.times[-1] + p["goal_time_tolerance"]:
                self.aborted = (
                    FAULT_GOAL,
                    f"plan {self.active_seq}: |q_N − q| = {e:.4g} > {p['goal_tolerance']} "
                    f"{p['goal_time_tolerance']} s after the plan's end",
                )
                return True
        return False

    def configuration_error(self, x_ref: np.ndarray, x: np.ndarray) -> np.ndarray:
        """|configuration of x_ref − that of x| per joint (modulo 2π), or per component of τ⁻¹(g_ref⁻¹g) on a
        vehicle (∞ where τ⁻¹ is undefined: half a turn off)."""
        if self.vehicle:
            try:
                return np.abs(self.vi.state.diff(x_ref, x)[: self.vi.dim])
            except ValueError:
                return np.full(self.vi.dim, np.inf)
        nq = self.vi.nq
        return np.abs(state_error(x_ref[:nq], x[:nq], self.robot.continuous_mask))

    # ---- faults --------------------------------------------------------------------------------------------------
    def record_fault(self, kind: str, detail: str = "") -> None:
        """Count and log the fault (throttled per kind; an invalid state per reason, its detail up to the names or
        numbers it quotes) that sends the safe command."""
        self.fault_counts[kind] = self.fault_counts.get(kind, 0) + 1
        key = f"{kind}: {detail.split('(')[0].split('[')[0]}" if kind == FAULT_INVALID_STATE else kind
        self.warn(key, f"{kind}{': ' + detail if detail else ''} -> safe command ({self.p['safe_mode']})")
        self.fault = kind

    def safe_input(
        self,
        mode: str,
        state: Estimate | None,
        fresh: bool = True,
        period: float | None = None,
        stale_hold: bool = False,
    ) -> np.ndarray | None:
        """The safe command's input u (``mode`` 'zero', 'damping' −d·q̇ on the actuated joints, or 'hold'; prescribed
        joints held where they were last measured), or None before any prescribed position was measured.

        'hold' (joint robots; a vehicle damps): from a fresh ``state`` the ``HoldLaw`` about the configuration held
        — the one measured when the hold began, kept until a plan is entered — gravity compensation plus its DLQR
        gain. From a state that is not fresh (``state``: the last valid one) its gravity torque alone while
        ``stale_hold`` (the node: within ``stale_hold_time`` of going stale), then zero: brakes are the hardware's.

        ``fresh``: whether ``state`` is recent enough to damp with (the node: its stamp within ``state_timeout``).
        A stale state's q̇ is no feedback: −d·q̇ from it is a constant torque, which the watchdog would repeat for as
        long as states stay away — the joint decelerates, stops, and is then driven backwards. So damping needs a
        fresh q̇ (a fault of the plan side on a valid state: path or goal tolerance, a non-finite command); a stale
        or refused state gets zero torque, as a NaN velocity does.

        ``period``: how long the command is held (the node: 1/rate, or the joint states' interval); d is capped by
        ``damping_cap`` per joint so the held torque never reverses a velocity. None: d as set."""
        if mode == "hold" and self.hold is not None:
            u = self._hold_input(state, fresh, stale_hold)
            if u is not None:
                return u
            mode = "zero"
        elif mode == "hold":  # a vehicle has no configuration to hold against gravity: damp its motion
            mode = "damping"
        r = self.robot
        v = state.qdot[self.act_q_index] if state is not None and fresh else None
        d = np.full(len(r.actuated), float(self.p["safe_damping"]))
        if v is not None and mode == "damping" and period is not None and not self.vehicle:
            d = np.minimum(d, self.damping_cap(state.x, period))
        tau = safe_command(mode, v, d, r.effort_limits)
        u = np.zeros(self.vi.nu)
        u[: len(tau)] = tau
        if self.vi.nk:
            if state is not None:
                self._held_prescribed = state.x[self.vi.idx_k]
            if self._held_prescribed is None:
                return None  # no measured prescribed positions yet: commanding 0 would move them
            u[len(tau) :] = self._held_prescribed  # prescribed joints stay where they were last measured
        return u

    def brake_input(self, mode: str, state: Estimate, period: float | None = None) -> np.ndarray | None:
        """The safe command on an over-speed (``intake.FAULT_OVERSPEED``: ``state`` is fresh, the robot itself too
        fast): −d·q̇ with d capped per joint (``damping_cap`` for the command's hold ``period``: the held torque never
        reverses a velocity, so no mode grows), plus, with ``mode`` 'hold', gravity compensation — the hold's
        feed-forward, the hold engaged at this state's configuration if it was not. 'zero': zero. Not the hold law:
        its position feedback, saturated and delayed (a plant stalling 0.2 s), whipped an arm from 3.5 to 60 rad/s;
        the hold law takes over once the velocities are within their bounds again."""
        u = self.safe_input("zero" if mode == "zero" else "damping", state, True, period)
        if u is None or mode != "hold" or self.hold is None:  # (a vehicle has no hold: it is damped)
            return u
        self._engage_hold(state)
        n = len(self.robot.actuated)
        lim = self.robot.effort_limits
        u[:n] = np.clip(u[:n] + self.hold.feedforward()[:n], -lim, lim)
        return u

    def _engage_hold(self, state: Estimate) -> None:
        """Engage the hold at ``state``'s configuration if it is not engaged (said in the log)."""
        hold = self.hold
        if hold.engaged:
            return
        hold.engage(state.x[: self.vi.nq])
        self.logger.info(
            "holding q = "
            + np.array2string(hold.target, precision=4, separator=", ")
            + (
                ""
                if hold.gain_failure is None
                else f" by gravity compensation alone (no hold gain: {hold.gain_failure})"
            )
        )

    def _hold_input(self, state: Estimate | None, fresh: bool, stale_hold: bool) -> np.ndarray | None:
        """The hold's input (None: zero torque is due): the full hold from a fresh state, the feed-forward alone from
        the last valid one while ``stale_hold``."""
        hold = self.hold
        if state is None or not (fresh or stale_hold):
            return None
        self._engage_hold(state)
        if not fresh:
            return hold.feedforward()
        u, clamped = hold.command(state.x)
        if clamped:
            self.warn("clamped", "hold command clamped to the effort limits")
        return u

    def damping_cap(self, x: np.ndarray, period: float) -> np.ndarray:
        """Per actuated joint, the largest d_i for which −D·q̇ held over ``period`` T never reverses a velocity.

        Over the hold q̇ ← (I − T·D·A) q̇, with A = (M⁻¹)_aa the inverse inertia the actuated joints see (prescribed
        joints held: M_dd⁻¹). DA is similar to D^½AD^½, so its eigenvalues are real, ≥ 0 and at most its largest
        absolute row sum: d_i ≤ 1/(T·Σ_j |A_ij|) keeps them ≤ 1 (every mode decays without reversing; beyond 2 one
        grows), while a heavy joint keeps the full d a light wrist would not allow. Holonomic constraints only
        shrink A: the cap is then conservative. Zeros if A cannot be evaluated at x (zero torque is passive)."""
        vi, act = self.vi, self.act_q_index
        X = np.zeros((len(act), vi.nx))
        X[:, : vi.nq] = x[: vi.nq]
        X[np.arange(len(act)), vi.nq + act] = 1.0  # p = e_j: q̇ = M⁻¹e_j, column j of M⁻¹
        try:
            V = state_velocities(vi, X)
        except (np.linalg.LinAlgError, ValueError, ArithmeticError):
            return np.zeros(len(act))
        rows = np.abs(V[:, act]).sum(axis=0)
        if not np.all(np.isfinite(rows)):
            return np.zeros(len(act))
        with np.errstate(divide="ignore"):
            return 1.0 / (period * rows)
