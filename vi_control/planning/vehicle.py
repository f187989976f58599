"""Planning a rigid body's maneuver: DMOC to a goal pose at rest, then TV-LQR on the Lie algebra → Plan.

``plan_maneuver(vi, goal)`` is the planner the ROS node wraps in vehicle mode: Algorithm 5.2 (``dmoc``) with
held inputs (u_k⁻ = u_k⁺: the plan is exactly the ``LieGroupVI`` step the simulator runs), a check of the inputs
against the actuator limits (an over-limit plan is re-solved with the limits by IPOPT; IPOPT's infeasibility
verdict is reported as ``GoalUnreachableError``), then the exact linearization of the group step along the plan
(A, B on tangent vectors, ``linearization.linearize_trajectory``) and the discrete TV-LQR gains (``control.lqr``)
for the tracking law u = U_k + K_k(X_k ⊖ x), X_k ⊖ x = −τ⁻¹(X_k⁻¹x) on the pose.

The body's YAML ``planning`` section supplies defaults: ``horizon`` N, ``duration`` T, ``retraction``,
``lqr: {Q, R, Qf}`` (diagonals on (rotation, [position,] momentum) and the inputs) and ``maneuvers`` (named
boundary pairs: ``{name, start: {position, rpy_deg | quaternion}, goal: {...}}``, start default the origin).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from ..control.lqr import tv_lqr
from ..control.plan import Plan
from ..integrators.lie_group import LieGroupVI
from ..linearization import linearize_trajectory
from ..mechanics.groups import RETRACTIONS, get_group, rotation_from_quaternion
from ..model.errors import unknown_keys
from ..model.limits import MAX_COEFFICIENT, MAX_DMOC_HORIZON, PLAN_DT_RANGE, Bound
from ..model.rigid_body import RigidBodyModel
from ..model.scalars import is_integer, is_real
from .dmoc import DMOC_BOUNDS, DMOCError, DMOCProblem, DMOCResult, solve_dmoc
from .dmoc_check import second_order_check
from .dmoc_nlp import solve_ipopt

# The stated ranges of a body's ``planning`` section (``[]``: each entry of a list), read by the validation below
# and by test_boundaries_tables.py: the horizon and positions DMOC carries (``dmoc.DMOC_BOUNDS``), angles of at
# most a turn (a pose, not a path: 1e300° was accepted, and cos/sin of it carry no digits of the angle).
VEHICLE_BOUNDS: dict[str, Bound] = {
    "planning.horizon": DMOC_BOUNDS["horizon"],
    "planning.lqr.Q[]": Bound(0.0, MAX_COEFFICIENT),
    "planning.lqr.R[]": Bound(0.0, MAX_COEFFICIENT),
    "planning.lqr.Qf[]": Bound(0.0, MAX_COEFFICIENT),
    "planning.maneuvers[].goal.rpy_deg[]": Bound(-360.0, 360.0),
    "planning.maneuvers[].goal.position[]": DMOC_BOUNDS["position[]"],
}
MAX_MANEUVERS = 1000  # named maneuvers of one body (each is a solve when listed; 10⁵ took minutes to read)
MAX_DT = PLAN_DT_RANGE[1]
MAX_HORIZON = MAX_DMOC_HORIZON


def _numbers(v, key: str, size: int | None, bound: Bound, scalar: bool = False) -> np.ndarray:
    """``v`` as numbers: a list of ``size`` (or, with ``scalar``, one number), each within ``bound``; ValueError
    naming the key otherwise (strings, nested lists, NaN: numpy's conversion errors named no key)."""
    one = scalar and is_real(v)
    items = [v] if one else v
    if (
        not isinstance(items, (list, tuple))
        or not all(is_real(x) for x in items)
        or (size is not None and not one and len(items) != size)
    ):
        what = f"{'a number or ' if scalar else ''}{size} numbers" if size is not None else "numbers"
        raise ValueError(f"{key}: expected {what}, got {v!r}")
    bad = [i for i, x in enumerate(items) if not bound.contains(x)]
    if bad:
        raise ValueError(f"{key}[{bad[0]}]: must be {bound.describe()}, got {items[bad[0]]!r}")
    return np.array([float(x) for x in items])


__all__ = [
    "GoalUnreachableError",
    "ManeuverSettings",
    "pose_from_spec",
    "maneuvers",
    "maneuver_settings",
    "maneuver_timing",
    "plan_maneuver",
    "rotation_from_rpy",
]


class GoalUnreachableError(DMOCError):
    """No maneuver reaches the goal within the actuator limits in the planning duration."""


def rotation_from_rpy(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """R = R_z(yaw) R_y(pitch) R_x(roll) (fixed-axis x, y, z: the ROS convention)."""
    cr, sr, cp, sp, cy, sy = (f(a) for a in (roll, pitch, yaw) for f in (math.cos, math.sin))
    return np.array(
        [
            [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
            [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
            [-sp, cp * sr, cp * cr],
        ]
    )


def pose_from_spec(spec: dict | None, group: str, key: str = "pose") -> np.ndarray:
    """A group element from ``{position: [x, y, z], rpy_deg: [r, p, y] | quaternion: [x, y, z, w]}``."""
    G = get_group(group)
    spec = spec or {}
    if not isinstance(spec, dict) or set(spec) - {"position", "rpy_deg", "quaternion"}:
        raise ValueError(f"{key}: expected {{position, rpy_deg | quaternion}}, got {spec!r}")
    if "rpy_deg" in spec and "quaternion" in spec:
        raise ValueError(f"{key}: give rpy_deg or quaternion, not both")
    R = np.eye(3)
    if "rpy_deg" in spec:
        a = _numbers(spec["rpy_deg"], f"{key}.rpy_deg", 3, VEHICLE_BOUNDS["planning.maneuvers[].goal.rpy_deg[]"])
        R = rotation_from_rpy(*np.radians(a))
    elif "quaternion" in spec:
        q = _numbers(spec["quaternion"], f"{key}.quaternion", 4, Bound(None, None))
        try:
            R = rotation_from_quaternion(q)
        except ValueError as e:
            raise ValueError(f"{key}.quaternion: {e}") from None
    if G.name == "SO3":
        if "position" in spec:
            raise ValueError(f"{key}.position: an SO(3) body has no position")
        return R
    p = _numbers(
        spec.get("position", [0.0, 0.0, 0.0]),
        f"{key}.position",
        3,
        VEHICLE_BOUNDS["planning.maneuvers[].goal.position[]"],
    )
    g = np.eye(4)
    g[:3, :3], g[:3, 3] = R, p
    return g


@dataclass(frozen=True)
class ManeuverSettings:
    horizon: int = 32
    duration: float = 8.0
    retraction: str = "cayley"
    Q: np.ndarray | float = 10.0
    R: np.ndarray | float = 1.0
    Qf: np.ndarray | float = 100.0

    @property
    def dt(self) -> float:
        return self.duration / self.horizon


_PLANNING_KEYS = {"horizon", "duration", "retraction", "lqr", "maneuvers"}


def maneuver_settings(body: RigidBodyModel) -> ManeuverSettings:
    """N, T, retraction and LQR weights from the body's ``planning`` section (defaults otherwise)."""
    p = body.planning
    for key, d, allowed in (("planning", p, _PLANNING_KEYS), ("planning.lqr", p.get("lqr", {}), {"Q", "R", "Qf"})):
        if not isinstance(d, dict):
            raise ValueError(f"{key}: expected a mapping, got {d!r}")
        if set(d) - allowed:  # a typo would silently fall back to the default
            raise ValueError(f"{key}: {unknown_keys(set(d) - allowed, allowed)}; allowed: {sorted(allowed)}")
    lqr = p.get("lqr", {})
    n = 2 * body.dim
    w = {}
    for k, default in (("Q", 10.0), ("R", 1.0), ("Qf", 100.0)):
        v = lqr.get(k, default)
        size = len(body.actuators) if k == "R" else n
        a = _numbers(v, f"planning.lqr.{k}", size, VEHICLE_BOUNDS[f"planning.lqr.{k}[]"], scalar=True)
        w[k] = np.asarray(a[0]) if is_real(v) else a
    horizon, duration = p.get("horizon", 32), p.get("duration", 8.0)
    msg = VEHICLE_BOUNDS["planning.horizon"].refusal("planning.horizon", horizon)
    if msg is not None:
        raise ValueError(msg)
    if not is_real(duration) or not PLAN_DT_RANGE[0] <= duration / horizon <= PLAN_DT_RANGE[1]:
        raise ValueError(
            f"planning.duration: expected a positive number of seconds, {PLAN_DT_RANGE[0]:g} to "
            f"{PLAN_DT_RANGE[1]:g} s per step (horizon {horizon}), got {duration!r}"
        )
    retraction = p.get("retraction", "cayley")
    if retraction not in RETRACTIONS:
        raise ValueError(f"planning.retraction: expected one of {RETRACTIONS}, got {retraction!r}")
    return ManeuverSettings(horizon=horizon, duration=float(duration), retraction=retraction, **w)


def maneuver_timing(
    settings: ManeuverSettings, dt: float, horizon: int | None = None, duration: float | None = None
) -> ManeuverSettings:
    """``settings`` with N and T for an integrator stepping ``dt``: from ``horizon`` (T = N·dt), from ``duration``
    (N = T/dt, which must be a whole number of steps), from both (which must agree with dt), or, with neither, from
    the settings' duration (their horizon follows). ValueError naming the numbers otherwise."""
    if horizon is not None and (not is_integer(horizon) or not 2 <= horizon <= MAX_HORIZON):
        raise ValueError(f"horizon: expected an integer in [2, {MAX_HORIZON}], got {horizon!r}")
    if duration is not None and not (is_real(duration) and math.isfinite(duration) and duration > 0):
        raise ValueError(f"duration: expected a positive number of seconds, got {duration!r}")
    if horizon is not None and duration is not None:
        if abs(duration / horizon - dt) > 1e-12 * dt:
            raise ValueError(
                f"horizon {horizon} and duration {duration:g} s give T/N = {duration / horizon:g} s, but "
                f"the integrator steps dt = {dt:g} s: give one of them, the other follows from dt"
            )
        N, T = int(horizon), float(duration)
    elif horizon is not None:
        N, T = int(horizon), horizon * dt
    else:
        T = float(settings.duration if duration is None else duration)
        N = int(round(T / dt))
        if N < 2 or abs(N * dt - T) > 1e-9 * T:
            src = "duration" if duration is not None else "planning.duration"
            raise ValueError(
                f"{src} = {T:g} s is not a whole number (≥ 2) of the integrator's steps dt = {dt:g} s "
                f"({T / dt:.6g}); give a horizon, or a duration that is a multiple of dt"
            )
        if N > MAX_HORIZON:
            raise ValueError(f"duration {T:g} s at dt = {dt:g} s is {N} steps, over the {MAX_HORIZON} allowed")
        T = T if abs(T / N - dt) <= 1e-12 * dt else N * dt
    return dataclasses.replace(settings, horizon=N, duration=T)


def maneuvers(body: RigidBodyModel) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """(name, g(0), g(T)) of every maneuver in the body's ``planning.maneuvers``."""
    out, listed = [], body.planning.get("maneuvers", [])
    if not isinstance(listed, list) or len(listed) > MAX_MANEUVERS:
        raise ValueError(
            f"planning.maneuvers: expected a list of at most {MAX_MANEUVERS} maneuvers, got "
            f"{len(listed) if isinstance(listed, list) else repr(listed)[:60]}"
        )
    for i, m in enumerate(listed):
        if not isinstance(m, dict) or "goal" not in m or set(m) - {"name", "start", "goal"}:
            raise ValueError(f"planning.maneuvers[{i}]: expected {{name, start, goal}}, got {m!r}")
        out.append(
            (
                str(m.get("name", f"maneuver_{i}")),
                pose_from_spec(m.get("start"), body.group, f"planning.maneuvers[{i}].start"),
                pose_from_spec(m["goal"], body.group, f"planning.maneuvers[{i}].goal"),
            )
        )
    return out


def plan_maneuver(
    vi: LieGroupVI,
    goal: np.ndarray,
    x0: np.ndarray | None = None,
    settings: ManeuverSettings | None = None,
    log=None,
    *,
    horizon: int | None = None,
    duration: float | None = None,
) -> tuple[Plan, DMOCResult]:
    """Plan from ``x0`` (a state of ``vi``; default its identity at rest) to the group element ``goal`` at rest.

    The plan steps at the integrator's Δt; ``horizon`` N or ``duration`` T (else the settings', i.e. the YAML's,
    duration) fixes the other by T = N·Δt (``maneuver_timing``): nobody keeps Δt = T/N in sync by hand.

    The plan's ``converged`` is the DMOC result's: a verified local minimum (``solve_dmoc``'s second-order check;
    after a bounded re-solve, the same check with the bounds held where active, in ``res.bounded_check``);
    a stationary point that is not one (a saddle no restart could leave) gives a plan marked unconverged, which the
    planner node publishes only on the same opt-in as other unconverged plans. Raises GoalUnreachableError when the
    limits of the body's actuators make the goal unreachable in the duration (IPOPT finds the bounded problem
    infeasible), DMOCError when the solve fails otherwise.
    """
    body = vi.robot
    st = maneuver_timing(settings or maneuver_settings(body), vi.dt, horizon, duration)
    if st.retraction != vi.retraction.kind:
        raise ValueError(f"the integrator uses the {vi.retraction.kind} retraction, the maneuver {st.retraction}")
    x0 = vi.state.zero() if x0 is None else np.asarray(x0, float)
    vi.check_inputs(x0, None)
    prob = DMOCProblem(
        body,
        vi.pose(x0),
        np.asarray(goal, float),
        st.horizon,
        st.duration,
        st.retraction,
        inputs="hold",
        xi0=vi.velocity(x0),
    )
    res = solve_dmoc(prob, log=log)
    if not res.stationary:
        raise DMOCError(
            f"dmoc: no maneuver found ({res}): the goal may need motion along an unactuated direction "
            "that the geodesic guess cannot start (e.g. pure heave); add a turn or a waypoint"
        )
    if not res.converged and log is not None:  # the plan is marked unconverged: published only on opt-in
        log(f"[plan] the maneuver is stationary only, not a verified minimum ({res}): marked unconverged")
    X, U, converged, bounded_check = res.states(body), res.u_minus, res.converged, None
    lim = body.effort_limits
    over = np.abs(U) > lim * (1 + 1e-9)
    if np.any(over):
        k, i = np.unravel_index(int(np.argmax(np.abs(U) / lim)), U.shape)
        need = f"{abs(U[k, i]):.3g} N on {body.actuated[i]} (limit {lim[i]:g}) at t = {k * st.dt:.2f} s"
        if log is not None:
            log(f"[plan] minimum-effort maneuver needs {need}: re-solving with the limits (IPOPT)")
        bounded = solve_ipopt(prob, bounds=lim, xi_guess=res.xi)
        if not bounded.success:
            cause = "infeasible" if bounded.infeasible else f"IPOPT: {bounded.status}"
            raise GoalUnreachableError(
                f"goal unreachable under the actuator limits: the minimum-effort maneuver needs {need}, and no "
                f"maneuver within the limits reaches the goal in T = {st.duration:g} s ({cause}); lengthen the "
                "planning duration, move the goal closer or raise the limits"
            )
        G = vi.group
        g = [vi.pose(x0)]
        for xi in bounded.xi:
            g.append(g[-1] @ vi.retraction.tau(st.dt * xi))
        X = np.array([np.concatenate([G.to_coordinates(gk), nu]) for gk, nu in zip(g, bounded.nu)])
        U = np.clip(bounded.u_minus, -lim, lim)
        bounded_check = second_order_check(
            prob, bounded.xi, bounded.nu, np.array(g), bounded.u_minus, bounded.u_plus, bounds=lim
        )
        converged = bounded_check.minimum
        if log is not None:
            log(f"[plan] the bounded maneuver: {bounded_check}")
    lin = linearize_trajectory(vi, X, U)
    K, _ = tv_lqr(lin.A, lin.B, st.Q, st.R, st.Qf)
    plan = Plan(
        times=np.arange(st.horizon + 1) * st.dt,
        X=X,
        U=U,
        K=K,
        dt=st.dt,
        model_name=body.name,
        model_hash=body.hash,
        joint_names=body.joint_names,
        input_names=list(body.actuated),
        weights={"lqr": {k: np.atleast_1d(getattr(st, k)).tolist() for k in ("Q", "R", "Qf")}, "method": "dmoc"},
        K_final=K[-1],
        U_final=np.zeros(vi.nu),
        converged=converged,
    )
    if bounded_check is not None:
        res = dataclasses.replace(res, bounded_check=bounded_check)
    return plan, res
