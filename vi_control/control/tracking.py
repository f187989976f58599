"""Plan tracking law u = U_k + K_k (X_k − x) (Johnson2015, §VIII, time-varying LQR about a trajectory), and the hold of
one configuration under gravity (``HoldLaw``: the same law about a one-point plan).

This is the whole controller the ROS node wraps: the node only turns messages into a discrete state
x = (q, p) and the returned input into a command. Nothing here imports ROS.
"""

from __future__ import annotations

import dataclasses
import math
from collections import deque
from collections.abc import Callable

import numpy as np

from ..integrators.base import DiscreteSystem, Linearizable, State, StepError
from ..integrators.midpoint import MidpointVI
from ..model.robot import wrap_angle
from ..model.scalars import is_integer, is_real
from .hold import equilibrium_state, hold_gain, holding_input
from .lqr import dlqr
from .plan import Plan


def plan_step(t: float, t0: float, dt: float) -> int:
    """The step of a plan starting at ``t0`` that runs at time ``t``: step k from t_k − Δt/2 to t_k + Δt/2, a time
    exactly halfway (to 1e-9 Δt) in the later step. One rule for the law's index and the runner's entry of a new
    plan (control.runner: at t₀ − Δt/2), so that a plan entered halfway between two steps of the executing one
    takes over exactly where that plan's law steps (Python's round would keep half the ties in the earlier step)."""
    return math.floor((t - t0) / dt + 0.5 + 1e-9)


def replaces(t0_new: float, t0_old: float, dt: float) -> bool:
    """Whether a plan starting at ``t0_new``, published after one starting at ``t0_old``, replaces it: it starts no
    later (in ``plan_step``'s steps) — else it follows it, and the earlier runs until the later's start."""
    return plan_step(t0_new, t0_old, dt) <= 0


class TrackingController:
    """Feedback about a Plan: u_k = U_k + K_k (X_k ⊖ x); after the horizon U_final + K_final (X_N ⊖ x), plus
    ``hold_integral_gain`` k_i × z with z = Σ (q_N − q)_act Δt over the hold's steps (``actuated_q``: the
    configuration index of each torque) — the integral action that removes the offset a model or payload error
    leaves under a proportional law; z is clamped so that k_i z stays within the effort limits (anti-windup).

    ``state``: the discrete system's state manifold, whose ``diff`` gives X_k ⊖ x; ``continuous_mask``
    (nq,): joints whose measured angle is compared modulo 2π (default: the state's own mask, if it has
    one); ``effort_limits`` (n_torques,) clamp the torque part of u (the first ``n_torques`` entries;
    prescribed-joint positions are not clamped). ``system``: the discrete system the law runs on; if given,
    the plan must have been made for it (``Plan.check_compatible``: model hash, Δt, joints, sizes) unless
    ``allow_mismatch`` says the model differs on purpose.
    """

    def __init__(
        self,
        plan: Plan,
        state: State,
        effort_limits: np.ndarray | None = None,
        n_torques: int | None = None,
        continuous_mask: np.ndarray | None = None,
        system: DiscreteSystem | None = None,
        allow_mismatch: bool = False,
        hold_integral_gain: float = 0.0,
        actuated_q: np.ndarray | None = None,
    ):
        if system is not None:
            plan.check_compatible(system, allow_mismatch=allow_mismatch)
        self.plan = plan
        self.state = state
        mask = getattr(state, "continuous_mask", None) if continuous_mask is None else continuous_mask
        self._wrap = None
        if mask is not None and np.any(mask):
            nq = len(mask)
            self._wrap = np.flatnonzero(np.concatenate([np.asarray(mask, bool), np.zeros(state.ndx - nq, bool)]))
        nu = plan.U.shape[1]
        self.n_torques = nu if n_torques is None else int(n_torques)
        lim = np.full(self.n_torques, np.inf) if effort_limits is None else np.asarray(effort_limits, float)
        if lim.shape != (self.n_torques,):
            raise ValueError(f"effort_limits has shape {lim.shape}, expected ({self.n_torques},)")
        self.effort_limits = lim
        # Without an equilibrium gain the last time-varying gain is the best available hold law.
        self.K_final = plan.K[-1] if plan.K_final is None else np.asarray(plan.K_final, float)
        self.U_final = plan.U[-1] if plan.U_final is None else np.asarray(plan.U_final, float)
        if hold_integral_gain < 0 or not np.isfinite(hold_integral_gain):
            raise ValueError(f"hold_integral_gain must be ≥ 0, got {hold_integral_gain}")
        if hold_integral_gain and (actuated_q is None or len(actuated_q) != self.n_torques):
            raise ValueError("hold_integral_gain needs actuated_q: the configuration index of each torque")
        self.ki, self.actuated_q = float(hold_integral_gain), actuated_q
        self.z = np.zeros(self.n_torques)  # Σ (q_N − q)_act Δt over the hold's steps so far
        self._integrated_k = -1

    @property
    def horizon(self) -> int:
        return self.plan.horizon

    def index(self, t: float) -> int:
        """Step index k of time t on the plan's grid (``plan_step``: the nearest sample, a half step up; may exceed
        the horizon)."""
        return max(0, plan_step(t, self.plan.times[0], self.plan.dt))

    def reference(self, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(X_k, U_k, K_k); for k ≥ N the final state with the equilibrium gain."""
        if k >= self.horizon:
            return self.plan.X[-1], self.U_final, self.K_final
        return self.plan.X[k], self.plan.U[k], self.plan.K[k]

    def feedback(self, k: int, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(U_k + K_k (X_k ⊖ x), X_k ⊖ x): the law's input before the integral action and the effort clamp (a
        re-plan that continues this law for one step starts from it: planning.mpc), and the error it acts on."""
        x_ref, u_ref, K = self.reference(k)
        e = self.state.diff(x, x_ref)
        if self._wrap is not None:  # a measured angle may be off by turns: compare modulo 2π
            e[self._wrap] = wrap_angle(e[self._wrap])
        return u_ref + K @ e, e

    def command(self, k: int, x: np.ndarray) -> tuple[np.ndarray, bool]:
        """Input u for step k at measured state x, and whether the torque part was clamped.

        ValueError for a negative or non-integer k (``plan.X[-1]`` would silently be the last stage's reference) or
        an x that is not a finite state of the plan's size (NaN torques, or numpy's broadcast error, before)."""
        if not is_integer(k) or k < 0:
            raise ValueError(f"command: step index k must be a non-negative integer, got {k!r}")
        x = np.asarray(x)
        if x.shape != self.plan.X.shape[1:] or np.iscomplexobj(x) or not np.all(np.isfinite(x)):
            raise ValueError(
                f"command: the state must be {self.plan.X.shape[1]} finite real numbers, got "
                f"{'shape ' + str(x.shape) if x.shape != self.plan.X.shape[1:] else 'NaN/inf or complex'}"
            )
        u, e = self.feedback(k, x)
        if self.ki and k >= self.horizon:
            if k > self._integrated_k:  # once per step of the plan's grid (a faster timer repeats k)
                self._integrated_k = k
                bound = self.effort_limits / self.ki
                self.z = np.clip(self.z + e[self.actuated_q] * self.plan.dt, -bound, bound)
            u[: self.n_torques] += self.ki * self.z
        tau = u[: self.n_torques]
        clamped = np.clip(tau, -self.effort_limits, self.effort_limits)
        hit = bool(np.any(clamped != tau))
        u[: self.n_torques] = clamped
        return u, hit


def tracking_law(
    plan: Plan, vi: DiscreteSystem, gain_scale: float = 1.0, hold_integral_gain: float = 0.0
) -> TrackingController:
    """The controller's law for a plan, as the controller node runs it and the planner predicts it: gains scaled by
    ``gain_scale``; after the horizon it holds the equilibrium state of q_N (momentum −(Δt/2)∇V), the state U_final
    and K_final were computed about (planning.pipeline.plan_task: hold_gain), not X_N, whose momentum differs when
    the plan ends moving, with integral action ``hold_integral_gain`` on the actuated joints (robots with joints)."""
    s, r = float(gain_scale), vi.robot
    law_plan = dataclasses.replace(plan, K=plan.K * s, K_final=None if plan.K_final is None else plan.K_final * s)
    if plan.K_final is not None:
        law_plan.X = plan.X.copy()
        law_plan.X[-1] = equilibrium_state(vi, plan.X[-1, : vi.nq])
    return TrackingController(
        law_plan,
        vi.state,
        r.effort_limits,
        len(r.actuated),
        continuous_mask=r.continuous_mask,
        hold_integral_gain=hold_integral_gain,
        actuated_q=vi.idx_act,
    )


class HoldLaw:
    """Hold a configuration q_h under gravity: u = u_eq(q_h) + K_h (x_eq(q_h) ⊖ x), torques clamped to the effort
    limits — the hold a joint_trajectory_controller gives on activation and on abort, with the gravity compensation
    of the discrete system (``holding_input``) and its DLQR hold gain (``hold_gain``, Johnson2015, eq. 36 at the fixed
    point) instead of a hand-tuned PID.

    ``vi``: the discrete system (its Δt is the gain's); ``weights``: (w_q, w_p, w_u): Q = diag(w_q·1, w_p·1) on the
    state error (q, p), R = w_u·I. ``engage(q)`` fixes the target (and computes the gain once); ``command(x)`` is the
    full hold from a measured state, ``feedforward()`` the gravity torque alone (a state that cannot be trusted:
    stale or refused). A pose where no gain exists (``SingularPoseError``, an uncontrollable or undetectable pair)
    is held by the feed-forward alone; ``gain_failure`` says why.
    """

    def __init__(self, vi: Linearizable, weights: tuple[float, float, float], riccati: Callable = dlqr):
        self.vi, self.riccati = vi, riccati
        self.set_weights(weights)
        self.target: np.ndarray | None = None
        self.gain_failure: str | None = None
        self._law = None

    def set_weights(self, weights: tuple[float, float, float]) -> None:
        """New (w_q, w_p, w_u); an engaged hold keeps its gain until it is engaged again."""
        w_q, w_p, w_u = (float(w) for w in weights)
        if not (w_q >= 0 and w_p >= 0 and w_u > 0) or not np.all(np.isfinite([w_q, w_p, w_u])):
            raise ValueError(f"hold weights: expected w_q ≥ 0, w_p ≥ 0, w_u > 0 (finite), got {weights}")
        nq = self.vi.nq
        self.Q = np.concatenate([np.full(nq, w_q), np.full(self.vi.state.ndx - nq, w_p)])
        self.R = np.full(self.vi.nu, w_u)

    def set_system(self, vi: Linearizable) -> None:
        """Hold on ``vi`` (another Δt) from now on: the target is kept, its gain computed again."""
        self.vi = vi
        self.set_weights((self.Q[0], self.Q[-1], self.R[0]))
        if self.target is not None:
            q, self.target = self.target, None
            self.engage(q)

    @property
    def engaged(self) -> bool:
        return self.target is not None

    def release(self) -> None:
        """Nothing held (a plan is tracked)."""
        self.target, self._law = None, None

    def engage(self, q: np.ndarray) -> None:
        """Hold ``q`` from now on (the gain at q: one linearization and one Riccati solve)."""
        vi, r = self.vi, self.vi.robot
        q = np.array(q, float)
        u_eq, _ = holding_input(vi, q)
        self.gain_failure = None
        try:
            K, x_eq, u_eq = hold_gain(vi, q, self.Q, self.R, u_eq=u_eq, riccati=self.riccati)
        except (np.linalg.LinAlgError, StepError, ValueError, ArithmeticError) as e:
            self.gain_failure = f"{type(e).__name__}: {e}"
            K, x_eq = np.zeros((vi.nu, vi.state.ndx)), equilibrium_state(vi, q)
        plan = Plan(
            times=np.array([0.0, vi.dt]),
            X=np.array([x_eq, x_eq]),
            U=u_eq[None],
            K=K[None],
            dt=vi.dt,
            model_name=r.name,
            model_hash=r.hash,
            joint_names=r.joint_names,
            input_names=list(r.actuated) + list(r.prescribed),
            K_final=K,
            U_final=u_eq,
        )
        self._law = TrackingController(
            plan, vi.state, r.effort_limits, len(r.actuated), continuous_mask=r.continuous_mask
        )
        self.target = q

    def command(self, x: np.ndarray) -> tuple[np.ndarray, bool]:
        """(u, whether a torque was clamped) of the hold from the measured state ``x``; engage first."""
        if self._law is None:
            raise RuntimeError("HoldLaw.command: nothing engaged")
        return self._law.command(1, x)

    def feedforward(self) -> np.ndarray:
        """The holding input of the target alone (no feedback), torques clamped; engage first."""
        if self._law is None:
            raise RuntimeError("HoldLaw.feedforward: nothing engaged")
        u = self._law.U_final.copy()
        n = self._law.n_torques
        u[:n] = np.clip(u[:n], -self._law.effort_limits, self._law.effort_limits)
        return u


def safe_command(mode: str, velocity: np.ndarray | None, damping: np.ndarray, effort_limits: np.ndarray) -> np.ndarray:
    """The fallback torque: zero, or viscous damping −d·q̇ on the actuated joints (clamped).

    ``velocity`` holds q̇ of the actuated joints; if it is unknown or not finite, damping falls back to zero.
    """
    n = len(effort_limits)
    if mode == "zero" or velocity is None or not np.all(np.isfinite(velocity)):
        return np.zeros(n)
    if mode != "damping":
        raise ValueError(f"unknown safe mode {mode!r} (zero|damping)")
    return np.clip(-np.asarray(damping, float) * np.asarray(velocity, float), -effort_limits, effort_limits)


def holding_torque(vi: DiscreteSystem, q: np.ndarray) -> np.ndarray:
    """τ_g(q) (n_torques,): the torque on the actuated joints that holds q against gravity (``hold.holding_input``)."""
    return holding_input(vi, np.asarray(q, float))[0][: vi.n_torques]


def wire_velocity(vi: DiscreteSystem, x: np.ndarray) -> np.ndarray:
    """The velocity a node publishes for the discrete state x_k: q̇_k = M(q_k)⁻¹(p_k + (Δt/2)·S·τ_g(q_k)).

    The midpoint rule's post-momentum p_k = D₂L_d(q_{k−1}, q_k) is p(t_k) − (Δt/2)Sτ to second order under an input
    τ (gravity's two half steps cancel, the input's second half step is not in it). With τ the holding torque this
    is the instantaneous q̇(t_k) of an arm whose torque balances gravity — exactly 0 for one held still, as a real
    joint reports it — and off by (Δt/2)M⁻¹S(τ − τ_g) under other torques (as the difference quotient
    (q_k − q_{k−1})/Δt is). A function of x_k alone, inverted exactly by ``velocity_state``."""
    y = np.array(x, float)
    y[vi.nq + vi.idx_act] += 0.5 * vi.dt * holding_torque(vi, y[: vi.nq])
    return vi.velocity(y)


def velocity_state(vi: DiscreteSystem, q: np.ndarray, qdot: np.ndarray) -> np.ndarray:
    """x = (q, M(q)q̇ − (Δt/2)·S·τ_g(q)) (a prescribed joint's p-slot: its q̇): the continuous Legendre transform less
    the holding torque's half step — the exact inverse of ``wire_velocity``, and the equilibrium state of an arm
    measured at rest (q̇ = 0). For the GNI, whose velocity is projected onto its constraints, p comes back up to that
    projection."""
    if isinstance(vi, MidpointVI):  # (the GNI's own state_from_velocity adds forces of its own: not the inverse)
        x = MidpointVI.state_from_velocity(vi, q, qdot)
    else:
        x = vi.state_from_velocity(q, qdot)
    x[vi.nq + vi.idx_act] -= 0.5 * vi.dt * holding_torque(vi, q)
    return x


class StateEstimator:
    """Discrete state x_k = (q_k, p_k) from measured joint states (Johnson2015, eq. 1b, DESIGN principle 3).

    ``mode='configurations'``: p_k = D₂L_d(q(t − Δt), q_k), with q(t − Δt) the sample one Δt before (exact
    when the samples are Δt apart, as a lockstep simulator's) or the linear interpolation between the two
    samples around t − Δt — a driver faster than 1/Δt, or with jitter, as long as those two are at most
    (1 + ``tolerance``)·Δt apart. Otherwise the measured velocity: p_k = M(q)q̇ − (Δt/2)Sτ_g(q) (``velocity_state``,
    τ_g the holding torque: the exact inverse of the velocity the simulator publishes, ``wire_velocity``, and exact
    for an arm held still), also with ``mode='velocities'``. A driver without
    velocities slower than 1/Δt (samples up to ``max_gap`` apart) gets the same interpolation: the finite
    difference of its last two samples. Continuous joints are unwrapped between samples so a ±π wrap is not a
    huge p. A stamp before the last one (a clock that jumped back) starts the history afresh; the same stamp
    again replaces its sample.
    """

    def __init__(
        self, vi: DiscreteSystem, mode: str = "configurations", tolerance: float = 0.25, max_gap: float = 0.05
    ):
        if mode not in ("configurations", "velocities"):
            raise ValueError(f"unknown state estimate {mode!r} (configurations|velocities)")
        for name, v in (("tolerance", tolerance), ("max_gap", max_gap)):
            if not is_real(v) or not (math.isfinite(v) and v >= 0):
                raise ValueError(f"StateEstimator {name}: expected a finite number >= 0, got {v!r}")
        self.vi, self.mode, self.tolerance, self.max_gap = vi, mode, tolerance, max_gap
        self.mask = vi.robot.continuous_mask
        self._history: deque[tuple[float, np.ndarray]] = deque()  # (t, q), oldest: the newest ≤ t_last − Δt

    def reset(self) -> None:
        self._history.clear()

    def update(self, t: float, q: np.ndarray, qdot: np.ndarray | None) -> np.ndarray | None:
        """x for the sample (t, q, q̇), or None if neither earlier samples nor a velocity are usable.

        ValueError for a stamp that is not finite or positions that are not nq finite numbers: kept in the history,
        such a sample made the *next* estimate NaN (or numpy's broadcast error). Velocities that are not finite
        are not used (ros2_control fills the velocities a joint lacks with NaN); of the wrong size: ValueError."""
        q, dt, hist = np.array(q, float), self.vi.dt, self._history
        if not math.isfinite(t) or q.shape != (self.vi.nq,) or not np.all(np.isfinite(q)):
            raise ValueError(
                f"StateEstimator.update: expected a finite stamp and {self.vi.nq} finite positions, got "
                f"t = {t!r}, q of shape {q.shape}{' with NaN/inf' if q.shape == (self.vi.nq,) else ''}"
            )
        if qdot is not None:
            if np.shape(qdot) != (self.vi.nq,):
                raise ValueError(f"StateEstimator.update: expected {self.vi.nq} velocities, got shape {np.shape(qdot)}")
            if not np.all(np.isfinite(qdot)):
                qdot = None
        if hist and t == hist[-1][0]:  # the same stamp again: the newer sample replaces it
            hist.pop()
        elif hist and t < hist[-1][0]:  # a clock that went back (simulator reset): start afresh
            hist.clear()
        before = self._configuration_before(t, q) if self.mode == "configurations" and hist else None
        hist.append((t, q))
        while len(hist) > 2 and hist[1][0] <= t - dt:  # keep the newest sample at or before the next t − Δt
            hist.popleft()
        if before is not None and (before[1] <= (1 + self.tolerance) * dt or qdot is None):
            return self.vi.state_from_configurations(before[0], q)
        if qdot is not None:  # p = M q̇ − (Δt/2)Sτ_g: the inverse of the simulator's wire_velocity
            return velocity_state(self.vi, q, np.asarray(qdot, float))
        return None

    def _configuration_before(self, t: float, q: np.ndarray) -> tuple[np.ndarray, float] | None:
        """(q(t − Δt) on the piecewise-linear path through the samples and (t, q), spacing of the two samples it
        lies between), or None: the history does not reach back to t − Δt, or with a gap over ``max_gap``."""
        hist, dt = self._history, self.vi.dt
        tau = t - dt
        snap = 1e-6 * dt  # stamps k·Δt in floating point: the sample at t − Δt itself, bit for bit
        i = 0
        while i + 1 < len(hist) and hist[i + 1][0] <= tau + snap:
            i += 1
        t_a, q_a = hist[i]
        if t_a > tau + snap:
            return None
        t_b, q_b = hist[i + 1] if i + 1 < len(hist) else (t, q)
        gap = t_b - t_a
        if gap > max(self.max_gap, (1 + self.tolerance) * dt):
            return None
        q_tau = q_a
        if tau - t_a > snap:
            d = q_b - q_a
            d[self.mask] = wrap_angle(d[self.mask])
            q_tau = q_a + (tau - t_a) / gap * d
        dq = q - q_tau
        dq[self.mask] = wrap_angle(dq[self.mask])
        return q - dq, gap
