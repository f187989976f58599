"""State intake of the tracking controller: measured states (decoded arrays and their stamps) in, the discrete state
x_k = (q_k, p_k) out (Johnson2015, eq. 1b, ``StateEstimator``) — or the reason the measurement cannot be used.

What real drivers send, checked in this order: a header stamp never set (0) is replaced by the time of receipt; the
stamp against the controller's clock (stale, from the future, going backwards), where the last stamp again is a
republished state (a lockstep simulator idling) and stamps that went back together with the clock are a simulator reset
(``on_clock_back``); positions and measured velocities against the model's limits (``JointLimits``), then the estimate's
velocity when the driver sends none (a jump between two configurations is a huge velocity). A measured velocity beyond
its bound but within ``OVERSPEED_TRUST`` × it is the robot's own over-speed, not a bad message: the state is kept
(the brake acts on its velocity) and the verdict is ``Fault(FAULT_OVERSPEED)``. Another driver's joint
states on the same topic are counted, never refused. A message with only some of the model's joints (one of several
drivers: an arm and a wrist, a base and an arm) goes through ``joint_merge.JointStateMerger`` first: at its stamp the
other drivers' joints are interpolated (or extrapolated) from their own recent samples; joints with none within
``merge_age`` give no new state (``Waiting``: "waiting for joint(s) [...]"; the last state then ages into a stale one),
a message older than the last merged one is only recorded. A message with every joint passes through unchanged while no
partial one came. A refusal forgets the state and restarts the estimate. Nothing here imports ROS: the controller node
decodes the messages, reads its clock and acts on the verdict (``Estimate``: command from it; ``Fault``: refused, the
safe command; ``Republished``: the last state again, answered again; ``Waiting``: log it; None: no estimate yet).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from ..integrators.base import DiscreteSystem
from ..model.robot import RobotModel
from .joint_merge import JointStateMerger, Missing
from .tracking import StateEstimator

# Kinds of refusal (the controller logs each kind at once, then throttled, and sends the safe command).
FAULT_INVALID_STATE, FAULT_ESTIMATE, FAULT_STALE, FAULT_FUTURE, FAULT_BACKWARDS, FAULT_LIMITS = (
    "invalid joint state",
    "state estimate failed",
    "joint states stale",
    "joint state stamp in the future",
    "joint state stamps went backwards",
    "joint state beyond the limits",
)
# Not a refusal: the robot itself moving faster than the bound (a measured velocity within OVERSPEED_TRUST × the
# bound). The state is kept — the safe command brakes from it (``PlanRunner.brake_input``) — and the running plan is
# aborted.
FAULT_OVERSPEED = "joint velocity beyond the limits"

# A measured velocity up to this multiple of its bound (velocity_limit_factor × the URDF limit) is taken as the
# robot's own over-speed; beyond it, as no plausible reading of this robot (refused: FAULT_LIMITS). Refusing a real
# over-speed left the arm without feedback exactly then: a 20 %-heavier panda at 1.9× a joint's URDF limit got the
# held configuration's gravity torque, then zero, and swung 3 rad away (test_ros_mpc's panda, on a loaded machine).
OVERSPEED_TRUST = 10.0


class JointLimits:
    """Bounds a measured joint state must respect: the URDF position limits widened by ``position_margin``
    (joint units), ``max_continuous_position`` on continuous joints (a multi-turn count, not a limit), and
    ``velocity_factor`` × the URDF velocity limit (``max_velocity`` where the URDF gives none)."""

    def __init__(
        self,
        robot: RobotModel,
        position_margin: float,
        max_continuous_position: float,
        velocity_factor: float,
        max_velocity: float,
    ):
        self.names = robot.joint_names
        lo = np.array([j.lower for j in robot.joints], float) - position_margin
        hi = np.array([j.upper for j in robot.joints], float) + position_margin
        cont = robot.continuous_mask | ~np.isfinite(lo) | ~np.isfinite(hi)
        self.lo = np.where(cont, -max_continuous_position, lo)
        self.hi = np.where(cont, max_continuous_position, hi)
        vlim = np.array([j.velocity_limit for j in robot.joints], float)
        self.vmax = np.where(np.isfinite(vlim) & (vlim > 0), velocity_factor * vlim, max_velocity)

    def check(self, q: np.ndarray, qdot: np.ndarray | None) -> str | None:
        """Why (q, q̇) is beyond the bounds (positions first), or None."""
        bad = (q < self.lo) | (q > self.hi)
        if bad.any():
            j = int(np.argmax(bad))
            return f"position of {self.names[j]} = {q[j]:.6g} outside [{self.lo[j]:.6g}, {self.hi[j]:.6g}]"
        return None if qdot is None else self.overspeed(qdot)

    def overspeed(self, qdot: np.ndarray, factor: float = 1.0) -> str | None:
        """Which velocity exceeds ``factor`` × its bound, or None."""
        bad = np.abs(qdot) > factor * self.vmax
        if not bad.any():
            return None
        j = int(np.argmax(bad))
        return f"velocity of {self.names[j]} = {qdot[j]:.6g} beyond ±{factor * self.vmax[j]:.6g}"


class Estimate(NamedTuple):
    """An accepted measurement: its stamp t [s], the discrete state x and the velocities the safe command damps
    (q̇ of every joint, measured or the estimate's; a vehicle's: each actuator's own, Bᵀξ)."""

    t: float
    x: np.ndarray
    qdot: np.ndarray


class Fault(NamedTuple):
    """Why the safe command is due instead of the law's: its kind (a refused measurement: one of the FAULT_* above)
    and the detail for the log."""

    kind: str
    detail: str


class Republished(NamedTuple):
    """The last accepted stamp t again: the same state republished (a per-state trigger answers it again with the
    same command: a lockstep simulator that republishes it is still waiting for it)."""

    t: float


class Waiting(NamedTuple):
    """One driver's message at t, but other drivers' joints have no recent samples (``joint_merge.Missing``): no new
    state — as when joint states stop, the state ages until ``state_timeout`` makes it stale."""

    t: float
    detail: str


Verdict = Estimate | Fault | Republished | Waiting | None


def stamped_on_receipt(t: float, last_stamp: float | None, now: float, window: float) -> bool:
    """Whether a joint state stamped ``t`` is to be stamped with the time of receipt ``now``: its header stamp was
    never set (0, some drivers) — unless the last state was stamped 0 too and the clock is still within ``window`` of
    0: then it is a simulation's first state again. Republished before the first step, that state can arrive after
    the step's /clock (DDS orders one writer's samples, not two topics'); stamped on receipt it was a phantom state at
    t = Δt with the first state's positions. The one rule of the controller's intake and the planner."""
    return t == 0.0 and not (last_stamp == 0.0 and now <= window)


class StateIntake:
    """Measured states → ``Estimate`` or the reason not to use them (module docstring for the checks).

    ``vi``: the discrete system (its Δt is the estimate's; ``set_system`` when a plan brings another Δt);
    ``limits``: the robot's ``JointLimits`` (None for a vehicle's poses: ``pose_state`` only); ``timeout`` [s]: a
    stamp older than this on the caller's clock is stale, one this far ahead is refused (assign it to change it);
    ``estimate``: the ``StateEstimator`` mode; ``notice(text)``: what is worth one log line (states without
    stamps); ``on_clock_back(t, last_stamp)``: stamps and the clock went back together (a simulator reset), called
    before the new state is used. ``state`` is the last accepted ``Estimate`` (None after a refusal; ``last_valid``
    keeps it), ``ever_valid`` whether there was one since ``reset``, ``counts`` the states received (``states``),
    another driver's (``foreign``) and unstamped ones (``unstamped``), for diagnostics; ``merger`` the
    ``JointStateMerger`` of partial joint states (``merge_age``: its ``max_age``; its own ``counts``), None for a
    vehicle.
    """

    def __init__(
        self,
        vi: DiscreteSystem,
        limits: JointLimits | None,
        timeout: float,
        estimate: str = "configurations",
        notice: Callable[[str], None] | None = None,
        on_clock_back: Callable[[float, float], None] | None = None,
        merge_age: float = 0.05,
    ):
        self.limits, self.timeout, self.mode = limits, float(timeout), estimate
        self.notice = notice if notice is not None else lambda text: None
        self.on_clock_back = on_clock_back if on_clock_back is not None else lambda t, last: None
        self.counts = dict(states=0, foreign=0, unstamped=0)
        self._foreign_seen: set[str] = set()
        r = vi.robot
        self.merger = JointStateMerger(r.joint_names, merge_age, r.continuous_mask) if limits is not None else None
        self.set_system(vi)
        self.reset()

    def set_system(self, vi: DiscreteSystem) -> None:
        """Estimate on ``vi`` from now on (its Δt): the history of samples starts afresh."""
        self.vi = vi
        self.estimator = StateEstimator(vi, self.mode)

    def reset(self) -> None:
        """Forget every state and stamp (a node that (re)starts)."""
        self.state: Estimate | None = None
        self.overspeed: str | None = None  # why ``state`` is an over-speed (FAULT_OVERSPEED), else None
        self.last_valid: Estimate | None = None  # (kept through refusals: what a hold falls back on)
        self.last_stamp: float | None = None
        self.state_interval: float | None = None  # between the last two accepted states (the safe command's hold)
        self.ever_valid = False
        self.estimator.reset()
        if self.merger is not None:
            self.merger.reset()

    # ---- verdicts ------------------------------------------------------------------------------------------------
    def joint_state(
        self, t: float, q: np.ndarray, qdot: np.ndarray | None, now: float, carried: np.ndarray | None = None
    ) -> Verdict:
        """A joint state in the model's joint order: stamp ``t`` (0: never set), positions ``q`` (nq,), measured
        velocities ``qdot`` (None, or not nq finite values: none usable, as a driver without them), on the clock
        reading ``now``; ``carried``: mask of the joints the message has (None: all; else only those entries are
        read and the merger completes the state). None: accepted, but no estimate yet (the first configuration of a
        positions-only driver, or a partial message older than the last merged state). ``q`` and ``qdot`` may be
        buffers the caller reuses: nothing kept refers to them."""
        self.counts["states"] += 1
        nq = self.vi.nq
        if np.shape(q) != (nq,):
            return self.refuse(FAULT_INVALID_STATE, f"joint state has {np.size(q)} positions for the model's {nq}")
        ours = slice(None) if carried is None else carried
        if not np.isfinite(q[ours]).all():
            return self.refuse(FAULT_INVALID_STATE, "joint state positions contain NaN/inf")
        if qdot is not None and (np.shape(qdot) != (nq,) or not np.isfinite(qdot[ours]).all()):
            qdot = None
        if stamped_on_receipt(t, self.last_stamp, now, self.timeout):
            t = self._receipt_stamp(now)  # header.stamp never set (some drivers): the time of receipt on our clock
        if carried is not None or self.merger.active:
            merged = self.merger.add(t, carried, q, qdot)
            if merged is None:  # older than the last merged state: recorded for the interpolation only
                return None
            if isinstance(merged, Missing):  # another driver's joints have no recent samples: no new state
                return Waiting(t, str(merged))
            t, q, qdot = merged
        verdict = self._check_stamp(t, now)
        if verdict is not None:
            return verdict
        why = self.limits.check(q, None)
        over = None if why is not None or qdot is None else self.limits.overspeed(qdot)  # the robot too fast: braked
        if over is not None:
            why = self.limits.overspeed(qdot, OVERSPEED_TRUST)  # (beyond that: no plausible reading)
        if why is not None:
            return self.refuse(FAULT_LIMITS, why)
        try:
            x = self.estimator.update(t, q, qdot)
            if x is None:
                self.last_stamp = t
                return None
            velocity = qdot.copy() if qdot is not None else self.vi.velocity(x)
        except Exception as e:  # e.g. a singular M(q) in the Legendre transform: never crash the loop
            return self.refuse(FAULT_ESTIMATE, f"{type(e).__name__}: {e}")
        if qdot is None:
            why = self.limits.check(q, velocity)  # a jump between two configurations is a huge velocity
            if why is not None:
                return self.refuse(FAULT_LIMITS, why)
        estimate = self._accept(t, x, velocity)
        self.overspeed = over
        return estimate if over is None else Fault(FAULT_OVERSPEED, over)

    def pose_state(self, t: float, x: np.ndarray, velocity: np.ndarray, now: float) -> Verdict:
        """A vehicle's state x = (g, 𝕀ξ) stamped ``t``, with its actuators' velocities: checked as a joint state's
        stamp (no limits, no estimate: the pose and twist are the state)."""
        self.counts["states"] += 1
        verdict = self._check_stamp(t, now)
        return verdict if verdict is not None else self._accept(t, x, velocity)

    def invalid(self, detail: str) -> Fault:
        """A message that is no usable state (malformed, joints missing, NaN): refused."""
        self.counts["states"] += 1
        return self.refuse(FAULT_INVALID_STATE, detail)

    def foreign(self, reason: str) -> bool:
        """Another driver's joint state (none of the model's joints): counted, not refused. True the first time
        this ``reason`` (its name list) comes: worth a log line, in case these are the robot's under other names."""
        self.counts["states"] += 1
        self.counts["foreign"] += 1
        if reason in self._foreign_seen:
            return False
        self._foreign_seen.add(reason)
        return True

    def refuse(self, kind: str, detail: str) -> Fault:
        """Forget the state and restart the estimate (the next one needs fresh samples)."""
        self.state, self.overspeed = None, None
        self.estimator.reset()
        return Fault(kind, detail)

    # ---- stamps --------------------------------------------------------------------------------------------------
    def _receipt_stamp(self, now: float) -> float:
        """The stamp of an unstamped state: ``now``; said once (on a clock that stands at 0, as a lockstep
        simulation's first state, a zero stamp is a true one and nothing is said). Not called for a simulation's
        first state again (``stamped_on_receipt``, window ``timeout``): its command was taken by a lockstep
        simulator for that of its real state of t = Δt."""
        self.counts["unstamped"] += 1
        if self.counts["unstamped"] == 1 and now > 0.0:
            self.notice(
                "joint states have header.stamp = 0 (the driver does not stamp them): stamped on receipt "
                "with this node's clock, transport delay and jitter included"
            )
        return now

    def _check_stamp(self, t: float, now: float) -> Fault | Republished | None:
        """None if the state stamped ``t`` may be used; else stale, from the future or going backwards, or the last
        stamp again."""
        tol = self.timeout
        if now - t > tol:
            return self.refuse(
                FAULT_STALE, f"stamp {t:.4f} is {now - t:.3f} s old on this node's clock (state_timeout {tol} s)"
            )
        if t - now > tol:
            return self.refuse(FAULT_FUTURE, f"stamp {t:.4f} is {t - now:.3f} s ahead of this node's clock")
        if self.last_stamp is not None and t <= self.last_stamp:
            if t == self.last_stamp:
                return Republished(t)
            if now >= self.last_stamp - tol:  # (a clock that itself jumped back re-arms the check)
                return self.refuse(FAULT_BACKWARDS, f"stamp {t:.4f} after {self.last_stamp:.4f}")
            self.on_clock_back(t, self.last_stamp)
        return None

    def _accept(self, t: float, x: np.ndarray, velocity: np.ndarray) -> Estimate:
        if self.state is not None and t > self.state.t:
            self.state_interval = t - self.state.t
        self.state = self.last_valid = Estimate(t, x, velocity)
        self.last_stamp, self.ever_valid = t, True
        return self.state
