"""Worker-side work of a sweep: one perturbed closed-loop rollout, or one plan of a library.

Tasks carry descriptions only — a ``ModelSpec``, a task mapping, a Plan's arrays, plain numbers — and each
worker process builds the discrete systems it needs once and keeps them (``cached_system``); the generated
C behind a model comes from the on-disk compile cache (``VI_CONTROL_CACHE``, default ~/.cache/vi_control),
shared by every worker of a node. Nothing here imports ROS.

The closed loop is the one the ROS nodes run (Johnson2015, §VIII): the plant (the midpoint VI of the perturbed
model) is measured as positions with Gaussian noise; the controller forms the discrete state from the last
two measured configurations with its own — nominal — model (``StateEstimator``, Johnson2015, eq. 1b) and
commands u = U_k + K_k (X_k ⊖ x̂) clamped to the effort limits (``TrackingController``, eq. 37), then holds
X_N with the DLQR gain; the actuator applies gain × u.
"""

from __future__ import annotations

import dataclasses
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

import numpy as np
from scipy.optimize import root

from ..control.plan import Plan, state_error
from ..control.tracking import StateEstimator, TrackingController
from ..integrators.base import StepError
from ..integrators.midpoint import MidpointVI
from ..model.spec import ModelSpec
from ..planning.pipeline import plan_task
from ..planning.task import load_task

_CACHE_SIZE = 4
_systems: OrderedDict[str, MidpointVI] = OrderedDict()  # per worker process (a small LRU)


class SweepError(ValueError):
    """A sweep cannot run as described (model/plan mismatch, a results file of another sweep, ...)."""


def portable_spec(spec: ModelSpec) -> ModelSpec:
    """The spec with local files inlined (URDF and system YAML as text), so a worker on another node can
    load it; bundled and example-robot-data names resolve on the worker's own installation."""
    if spec.kind == "path":
        name = spec.default_name() or Path(spec.source).stem
        spec = dataclasses.replace(spec, source=spec.urdf_text(), name=name)
    sys_src = spec.system_source()
    if isinstance(sys_src, str) and "\n" not in sys_src and ":" not in sys_src:
        spec = dataclasses.replace(spec, system=Path(sys_src).read_text(encoding="utf-8"))
    return dataclasses.replace(spec, base_dir=None)


def _perturbed_robot(spec: ModelSpec, mass_scale: float, damping: float):
    robot = dataclasses.replace(spec, mass_scale=spec.mass_scale * mass_scale).load()
    if damping:
        d = np.array(robot.damping, float)
        dynamic = [i for i, n in enumerate(robot.joint_names) if n not in robot.prescribed]
        d[dynamic] += damping
        robot = dataclasses.replace(robot, damping=d)  # part of robot.hash, so of the compile cache key
    return robot


def cached_system(
    spec: ModelSpec, dt: float, mass_scale: float = 1.0, damping: float = 0.0, compile: bool | None = None
) -> MidpointVI:
    """The midpoint VI of ``spec`` (masses ×``mass_scale``, ``damping`` added to every dynamic joint),
    built once per worker process and kept in a small LRU; ``compile`` as for MidpointVI."""
    key = repr((spec, float(dt), float(mass_scale), float(damping), compile))
    vi = _systems.get(key)
    if vi is None:
        vi = MidpointVI(_perturbed_robot(spec, mass_scale, damping), dt, compile=compile)
        _systems[key] = vi
        if len(_systems) > _CACHE_SIZE:
            _systems.popitem(last=False)
    _systems.move_to_end(key)
    return vi


def start_pair(vi: MidpointVI, x0: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The configuration pair (q_{−1}, q_0) whose discrete Legendre transform D₂L_d(q_{−1}, q_0) is x0's
    momentum (Johnson2015, eq. 1b): how the robot was moving when the plan starts, in configurations."""
    nq = vi.nq
    q0, p0 = np.asarray(x0[:nq], float), np.asarray(x0[nq:], float)
    d = vi.idx_d
    guess = q0 - vi.dt * vi.velocity(x0)

    def residual(qd):
        q_prev = guess.copy()
        q_prev[d] = qd
        return (vi.state_from_configurations(q_prev, q0)[nq:] - p0)[d]

    sol = root(residual, guess[d], method="hybr", options={"xtol": 1e-14})
    q_prev = guess.copy()
    q_prev[d] = sol.x
    scale = max(1.0, float(np.abs(p0).max(initial=0.0)))
    if not np.abs(residual(sol.x)).max(initial=0.0) <= 1e-9 * scale:
        raise SweepError(
            f"no configuration pair reproduces the plan's start state (residual "
            f"{np.abs(residual(sol.x)).max():.2e}): is the plan made for this model?"
        )
    return q_prev, q0


def closed_loop(
    plant: MidpointVI,
    nominal: MidpointVI,
    plan: Plan,
    q_pair: tuple[np.ndarray, np.ndarray],
    *,
    actuator_gain: float = 1.0,
    sensor_noise: float = 0.0,
    rng: np.random.Generator | None = None,
    hold_steps: int = 0,
    clamp: bool = True,
    effort_limits: np.ndarray | None = None,
) -> dict:
    """Track ``plan`` on ``plant`` with the controller's ``nominal`` model, from the configuration pair
    ``q_pair``: returns final state, applied inputs, and the step error that ended the run early (or None).
    ``effort_limits``: the clamp (default the nominal model's)."""
    nq, nt = plant.nq, plant.n_torques
    limits = (nominal.robot.effort_limits if effort_limits is None else effort_limits) if clamp else None
    ctl = TrackingController(plan, nominal.state, limits, n_torques=nt)
    est = StateEstimator(nominal)
    rng = rng or np.random.default_rng(0)

    def measure(q):
        return q + rng.normal(0.0, sensor_noise, nq) if sensor_noise > 0 else q

    q_prev, q0 = q_pair
    x = plant.state_from_configurations(q_prev, q0)
    est.update(-plant.dt, measure(q_prev), None)
    steps = plan.horizon + hold_steps
    X = np.zeros((steps + 1, plant.nx))
    U = np.zeros((steps, plant.nu))
    X[0] = x
    for k in range(steps):
        x_hat = est.update(k * plant.dt, measure(X[k, :nq]), None)
        u, _ = ctl.command(k, x_hat)
        u[:nt] *= actuator_gain
        U[k] = u
        try:
            X[k + 1] = plant.step(X[k], u, step_index=k)
        except StepError as e:
            return {"X": X[: k + 1], "U": U[: k + 1], "failure": f"{type(e).__name__}: {e}"}
    return {"X": X, "U": U, "failure": None}


def mpc_closed_loop(
    plant: MidpointVI,
    nominal: MidpointVI,
    task,
    q_pair: tuple[np.ndarray, np.ndarray],
    *,
    actuator_gain: float = 1.0,
    sensor_noise: float = 0.0,
    rng: np.random.Generator | None = None,
    hold_steps: int = 0,
    clamp: bool = True,
    clock: Callable[[], float] = time.process_time,
) -> dict:
    """``closed_loop`` under MPC (planning.mpc) of ``task`` on the ``nominal`` model: the task's first plan, then a
    cycle every ``mpc.period`` from the estimated state, as the planner node runs it — each cycle's plan starts
    ``lead`` steps ahead (1.5 × the longest of the last five solve times, at least a step), from the state predicted
    there under the executing law, and is entered when its measured solve time has passed (late: at the step then
    due, its first steps skipped, as the controller enters a late plan); no cycle starts while a plan waits to be
    entered. Solve times are read on ``clock`` (CPU seconds). Returns what ``closed_loop`` does, the cycles' solve
    times (``solves``) and per cycle (its step, its lead in steps, the step its plan is entered at or None if not
    accepted) (``cycles``)."""
    from ..control.tracking import tracking_law
    from ..planning.mpc import RecedingHorizon

    nq, nt, dt = plant.nq, plant.n_torques, plant.dt
    m = RecedingHorizon(nominal, task)
    plan = m.start(t0=0.0).plan
    law = tracking_law(plan, nominal)
    limits = law.effort_limits if clamp else np.full(nt, np.inf)
    est = StateEstimator(nominal)
    rng = rng or np.random.default_rng(0)

    def measure(q):
        return q + rng.normal(0.0, sensor_noise, nq) if sensor_noise > 0 else q

    q_prev, q0 = q_pair
    est.update(-dt, measure(q_prev), None)
    steps = plan.horizon + hold_steps
    X, U = np.zeros((steps + 1, plant.nx)), np.zeros((steps, plant.nu))
    X[0] = plant.state_from_configurations(q_prev, q0)
    solves, cycles, pending = [], [], None  # pending: (the step it is ready at, plan)
    for k in range(steps):
        t = k * dt
        x_hat = est.update(t, measure(X[k, :nq]), None)
        if pending is not None and k >= pending[0]:
            plan, law, pending = pending[1], tracking_law(pending[1], nominal), None
        if k and k % m.steps_per_cycle == 0 and pending is None:
            lead = max(1, int(np.ceil(1.5 * max(solves[-5:]) / dt - 1e-9))) if solves else 1
            x_pred = x_hat
            for i in range(lead):
                x_pred = nominal.step(x_pred, law.command(law.index(t + i * dt), x_pred)[0])
            c0 = clock()
            cyc = m.cycle(t + lead * dt, x_pred, plan)
            solves.append(clock() - c0)
            if cyc.accepted:
                pending = (max(k + lead, k + int(np.ceil(solves[-1] / dt - 1e-9))), cyc.plan)
            cycles.append((k, lead, pending[0] if cyc.accepted else None))
        u, _ = law.command(law.index(t), x_hat)
        u[:nt] = np.clip(u[:nt], -limits, limits) * actuator_gain
        U[k] = u
        try:
            X[k + 1] = plant.step(X[k], u, step_index=k)
        except StepError as e:
            failure = f"{type(e).__name__}: {e}"
            return {"X": X[: k + 1], "U": U[: k + 1], "failure": failure, "solves": solves, "cycles": cycles}
    return {"X": X, "U": U, "failure": None, "solves": solves, "cycles": cycles}


def oracle_plan(plant: MidpointVI, task, actuator_gain: float, x0: np.ndarray) -> tuple[Plan, np.ndarray]:
    """The oracle's plan: ``task`` planned on the true ``plant`` from the true start ``x0`` under the torque the
    actuator really delivers (the effort limits × ``actuator_gain``), and that clamp — commanding u/gain."""
    from ..planning.pipeline import input_limits

    lim = input_limits(task, plant)
    effort = plant.robot.effort_limits * actuator_gain
    if lim is not None:  # (a task without input limits stays so: the clamp, if any, is the sweep's)
        task = dataclasses.replace(task, input_limits=[float(v) for v in np.minimum(lim[: plant.n_torques], effort)])
    plan, _ = plan_task(plant, task, x0=x0)
    return plan, effort


def robustness_sample(payload: dict, shared: dict) -> dict:
    """One sample of a robustness sweep: build (or reuse) the perturbed plant and the nominal model, run the
    closed loop, and judge it. ``shared``: spec, plan, q_pair, settings; ``payload``: sample, params."""
    spec, plan, cfg = shared["spec"], shared["plan"], shared["settings"]
    p = payload["params"]
    nominal = cached_system(spec, plan.dt)
    nominal_plant = p["mass_scale"] == 1.0 and p["damping"] == 0.0
    controller = cfg.get("controller", "tvlqr")
    # (the oracle plans on its plant: one gcc build, 0.6 s for the pendulum, against ~30 s of DDP on CasADi's VM)
    compiled = cfg["compile_plants"] or controller == "oracle"
    plant = (
        nominal
        if nominal_plant
        else cached_system(spec, plan.dt, p["mass_scale"], p["damping"], compile=None if compiled else False)
    )
    q_prev, q0 = (np.asarray(a, float) for a in shared["q_pair"])
    dq, dqd = np.asarray(p["q0_offset"]), np.asarray(p["qdot0_offset"])
    pair = (q_prev + dq - plant.dt * dqd, q0 + dq)
    rng = np.random.default_rng([cfg["seed"], payload["sample"], 1])  # the noise stream of this sample
    hold = int(round(cfg["hold_time"] / plan.dt))
    noise = dict(sensor_noise=p["sensor_noise"], rng=rng, hold_steps=hold, clamp=cfg["clamp"])
    if controller == "mpc":
        run = mpc_closed_loop(plant, nominal, shared["task"], pair, actuator_gain=p["actuator_gain"], **noise)
    elif controller == "oracle":  # the plan made on the true plant from the true start, under the true torque
        true_plan, effort = oracle_plan(
            plant, shared["task"], p["actuator_gain"], plant.state_from_configurations(*pair)
        )
        run = closed_loop(plant, plant, true_plan, pair, effort_limits=effort, **noise)
    else:
        run = closed_loop(plant, nominal, plan, pair, actuator_gain=p["actuator_gain"], **noise)
    X, U, mask = run["X"], run["U"], plant.robot.continuous_mask
    nq, nt = plant.nq, plant.n_torques
    e_final = state_error(plan.X[-1, :nq], X[-1, :nq], mask)
    n = min(len(X), plan.horizon + 1)
    track = np.abs(state_error(plan.X[:n, :nq], X[:n, :nq], mask)).max(axis=1)
    final = float(np.abs(e_final).max()) if run["failure"] is None else float("inf")
    ok = run["failure"] is None and bool(np.all(np.isfinite(X[-1]))) and final < cfg["tolerance"]
    return {
        "sample": payload["sample"],
        "params": p,
        "success": ok,
        "final_error": final,
        "final_error_q": [float(v) for v in e_final],
        "rms_tracking": float(np.sqrt(np.mean(track**2))),
        "peak_torque": [float(v) for v in np.abs(U[:, :nt]).max(axis=0, initial=0.0)],
        "failure": run["failure"],
        "steps": len(X) - 1,
        "controller": controller,
        **(
            {"solve_p50": float(np.median(run["solves"])), "solve_max": float(max(run["solves"]))}
            if run.get("solves")
            else {}
        ),
    }


def library_plan(payload: dict, shared: dict) -> dict:
    """One plan of a library: the task with goal ``payload['goal']``, planned on the worker's cached model.
    Returns the record and the Plan (under ``plan``; the driver saves it and keeps only the file name)."""
    task_dict = dict(shared["task"])
    task_dict["goal"] = {"q": list(payload["goal"])}
    task = load_task(task_dict)
    vi = cached_system(shared["spec"], task.dt)
    plan, res = plan_task(vi, task)
    final = state_error(np.asarray(payload["goal"], float), plan.X[-1, : vi.nq], vi.robot.continuous_mask)
    return {
        "index": payload["index"],
        "goal": list(payload["goal"]),
        "converged": bool(res.converged),
        "iterations": int(res.iterations),
        "cost": float(res.cost),
        "stop_reason": str(res.stop_reason),
        "final_goal_error": float(np.abs(final).max()),
        "plan": plan,
    }


def warm_worker(payload, shared: dict) -> dict:
    """Build (or find) the nominal systems ``shared['models']`` = [(spec, dt), ...] in this worker: imports
    and the compile-cache load happen here, not in the first timed task. Returns the worker's pid."""
    import os

    for spec, dt in shared["models"]:
        cached_system(spec, dt)
    return {"pid": os.getpid()}
