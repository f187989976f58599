"""Planning tasks as validated YAML, and ``plan_task``: optimize → TV-LQR gains → hold gain → Plan.

Schema (every key is checked; errors name the key) — see docs/planner.md for the full table::

    name: pendulum_swingup
    model: pendulum                  # bundled name | {bundled: double_pendulum, config: acrobot}
                                     # | {example: panda, config: ...} | {urdf: path, system: path}
    dt: 0.1
    horizon: 100                     # N steps
    start: {q: [0.0], qdot: [0.0]}
    goal: {q: [pi]}                  # numbers or expressions of pi ("pi/2", "-pi")
    reference: {type: step, step_index: 50, q_before: [0], q_after: [pi]}   # or type: goal
    weights: {Q: [100, 1], R: 1, Qf: [100, 1]}     # scalar, diagonal list, or {q: .., p: ..}
    input_limits: model              # model (default) | none | list of |u| bounds
    optimizer: {method: ddp, max_iterations: 50, tolerance: 1.0e-6, regularization: 1.0e-6}
    lqr: {Q: .., R: .., Qf: ..}      # TV-LQR weights (default: the cost weights)
    hold: {Q: .., R: ..}             # infinite-horizon DLQR about the final state (default: lqr)
"""

from __future__ import annotations

import ast
import dataclasses
import operator
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import yaml

from ..control.hold import equilibrium_state, hold_gain, holding_input
from ..control.lqr import tv_lqr
from ..integrators.midpoint import MidpointVI
from ..linearization import linearize_trajectory
from ..model import load_robot
from ..model.robot import RobotModel
from ..robots import bundled_config, bundled_urdf, example_robot_urdf, share_dir
from .cost import QuadraticTrackingCost, weight_matrix
from .ddp import ddp
from .gradient import projection_gradient
from .plan import Plan
from .shooting import LogFn, OptimizerResult, feedback_initial_guess, rollout

METHODS = ("ddp", "ilqr", "gradient")
_TOP_KEYS = {"name", "model", "dt", "horizon", "start", "goal", "reference", "weights", "input_limits",
             "optimizer", "lqr", "hold", "initial_guess"}


class TaskError(ValueError):
    """A task file is invalid; the message names the key."""


_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
        ast.USub: operator.neg, ast.UAdd: operator.pos}


def _number(v, key: str) -> float:
    """A float, or a string of arithmetic on numbers and ``pi`` (no other names are evaluated)."""
    if isinstance(v, bool):
        raise TaskError(f"{key}: expected a number, got {v!r}")
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str):
        def ev(n):
            if isinstance(n, ast.Expression):
                return ev(n.body)
            if isinstance(n, ast.Constant) and isinstance(n.value, (int, float)):
                return float(n.value)
            if isinstance(n, ast.Name) and n.id == "pi":
                return np.pi
            if isinstance(n, ast.BinOp) and type(n.op) in _OPS:
                return _OPS[type(n.op)](ev(n.left), ev(n.right))
            if isinstance(n, ast.UnaryOp) and type(n.op) in _OPS:
                return _OPS[type(n.op)](ev(n.operand))
            raise ValueError
        try:
            return float(ev(ast.parse(v, mode="eval")))
        except (ValueError, SyntaxError, ZeroDivisionError):
            pass
    raise TaskError(f"{key}: expected a number or an expression of pi, got {v!r}")


def _vector(v, key: str, n: int | None = None) -> np.ndarray:
    if not isinstance(v, (list, tuple)):
        v = [v]
    out = np.array([_number(a, f"{key}[{i}]") for i, a in enumerate(v)])
    if n is not None and out.size != n:
        raise TaskError(f"{key}: expected {n} entries, got {out.size}")
    if not np.all(np.isfinite(out)):
        raise TaskError(f"{key}: entries must be finite")
    return out


def _mapping(d, key: str, allowed: set[str]) -> dict:
    if d is None:
        return {}
    if not isinstance(d, dict):
        raise TaskError(f"{key}: expected a mapping, got {type(d).__name__}")
    unknown = set(d) - allowed
    if unknown:
        raise TaskError(f"{key}: unknown key(s) {sorted(unknown)}; allowed: {sorted(allowed)}")
    return d


@dataclass
class Task:
    """A validated task. Weights stay as given (resolved to matrices against the model's nx, nu)."""

    name: str
    model: str | dict
    dt: float
    horizon: int
    q0: np.ndarray | None
    qdot0: np.ndarray | None
    goal_q: np.ndarray | None
    reference: dict
    weights: dict
    input_limits: str | np.ndarray
    method: str = "ddp"
    max_iterations: int = 100
    tolerance: float = 1e-6
    regularization: float = 1e-6
    lqr: dict = field(default_factory=dict)
    hold: dict = field(default_factory=dict)
    initial_guess: str = "reference"
    base_dir: str | None = None

    @property
    def model_name(self) -> str:
        if isinstance(self.model, str):
            return self.model
        return str(self.model.get("name") or self.model.get("config") or self.model.get("bundled")
                   or self.model.get("example") or Path(str(self.model.get("urdf"))).stem)

    def _path(self, p: str) -> str:
        if os.path.isabs(p) or self.base_dir is None:
            return p
        for base in (self.base_dir, str(share_dir())):
            if os.path.exists(os.path.join(base, p)):
                return os.path.join(base, p)
        return p

    def load_robot(self) -> RobotModel:
        m = self.model
        if isinstance(m, str):
            return load_robot(bundled_urdf(m), bundled_config(m), name=m)
        system = m.get("system")
        if m.get("config") is not None:
            system = bundled_config(m["config"])
            if system is None:
                raise TaskError(f"model.config: no bundled config named {m['config']!r}")
        elif isinstance(system, str):
            system = self._path(system)
        if "bundled" in m:
            urdf = bundled_urdf(m["bundled"])
        elif "example" in m:
            urdf = example_robot_urdf(m["example"])
        else:
            urdf = self._path(m["urdf"])
        return load_robot(urdf, system, name=self.model_name)

    def make_vi(self, **kwargs) -> MidpointVI:
        return MidpointVI(self.load_robot(), self.dt, **kwargs)

    # ---- resolution against a discrete system -------------------------------------------------
    def start_state(self, vi: MidpointVI) -> np.ndarray:
        """x₀ = (q₀, D₂L_d(q₀ − Δt·q̇₀, q₀)): the discrete state of the configuration pair a sampled
        trajectory would show (seed 000 eq. 1b). At rest (q̇₀ = 0) this is the held state, whose
        momentum under gravity is −(Δt/2)∇V — p = M q̇ = 0 would instead kick the robot by that impulse.
        """
        q0 = np.zeros(vi.nq) if self.q0 is None else _vector(list(self.q0), "start.q", vi.nq)
        qd = np.zeros(vi.nq) if self.qdot0 is None else _vector(list(self.qdot0), "start.qdot", vi.nq)
        return vi.state_from_configurations(q0 - vi.dt * qd, q0)

    def weight(self, which: str, group: str, n: int, nq: int | None = None) -> np.ndarray:
        """Weight ``which`` (Q, R, Qf) of ``group`` (weights, lqr, hold), falling back weights ← lqr ← hold."""
        chain = {"weights": [self.weights], "lqr": [self.lqr, self.weights],
                 "hold": [self.hold, self.lqr, self.weights]}[group]
        key = f"{group}.{which}"
        for d in chain:
            if which in d:
                w = d[which]
                if isinstance(w, dict):  # {q: .., p: ..} for state weights
                    if nq is None or set(w) - {"q", "p"}:
                        raise TaskError(f"{key}: a mapping must have keys q and p (state weights only)")
                    w = np.concatenate([_vector(w.get("q", 0.0), f"{key}.q") * np.ones(nq),
                                        _vector(w.get("p", 0.0), f"{key}.p") * np.ones(nq)])
                elif isinstance(w, (list, tuple)):
                    w = _vector(w, key, n)
                else:
                    w = _number(w, key)
                try:
                    return weight_matrix(w, n, key)
                except ValueError as e:
                    raise TaskError(str(e)) from None
        if which == "Qf":
            return self.weight("Q", group, n, nq)
        raise TaskError(f"weights.{which}: missing")

    def limits(self, vi: MidpointVI) -> np.ndarray | None:
        """|u| bounds per input (prescribed-joint inputs are positions: unbounded); None = no bounds."""
        if isinstance(self.input_limits, str):
            if self.input_limits == "none":
                return None
            lim = np.asarray(vi.robot.effort_limits, float)
        else:
            lim = _vector(list(self.input_limits), "input_limits", vi.n_torques)
        return np.concatenate([lim, np.full(vi.nk, np.inf)])

    def reference_trajectory(self, vi: MidpointVI, x0: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(X_ref (N+1, nx), U_ref (N, nu)) of the reference; may be dynamically infeasible.

        ``x0``: where the plan starts (a measured state when re-planning; default the task's start). A step
        reference without ``q_before`` starts from x0's configuration, so a re-plan from the goal holds it.
        """
        N, nq, ref = self.horizon, vi.nq, self.reference
        x0 = self.start_state(vi) if x0 is None else np.asarray(x0, float)
        goal = self.goal_q if self.goal_q is not None else x0[:nq]
        goal = _vector(list(goal), "goal.q", nq)
        kind = ref.get("type", "goal")
        if kind == "step":  # seed 000 eq. 35: q jumps at step_index, p_ref = 0, u_ref = 0
            qa = _vector(ref.get("q_before", list(x0[:nq])), "reference.q_before", nq)
            qb = _vector(ref.get("q_after", list(goal)), "reference.q_after", nq)
            ks = int(ref.get("step_index", N // 2))
            if not 0 <= ks <= N:
                raise TaskError(f"reference.step_index: must be in [0, {N}], got {ks}")
            Q = np.where(np.arange(N + 1)[:, None] < ks, qa, qb)
            X = np.hstack([Q, np.zeros((N + 1, nq))])
        elif kind == "goal":  # hold the goal from the start: the optimizer finds the way there
            X = np.tile(equilibrium_state(vi, goal), (N + 1, 1))
        else:
            raise TaskError(f"reference.type: expected 'step' or 'goal', got {kind!r}")
        u_kind = ref.get("u", "zero" if kind == "step" else "hold")
        if u_kind == "zero":
            U = np.zeros((N, vi.nu))
            U[:, vi.n_torques:] = X[1:, :nq][:, vi.idx_k]
        elif u_kind == "hold":
            U = np.array([holding_input(vi, x[:nq])[0] for x in X[1:]])
        else:
            raise TaskError(f"reference.u: expected 'zero' or 'hold', got {u_kind!r}")
        return X, U

    def initial_inputs(self, vi: MidpointVI, x0: np.ndarray, X_ref: np.ndarray, U_ref: np.ndarray) -> np.ndarray:
        if self.initial_guess in ("reference", "auto"):  # "auto": plan_task compares it with "feedback"
            return U_ref.copy()
        if self.initial_guess == "feedback":
            nx, nu, nq = vi.nx, vi.nu, vi.nq
            W = [self.weight(w, "lqr", n, nq) for w, n in (("Q", nx), ("R", nu), ("Qf", nx))]
            return feedback_initial_guess(vi, x0, X_ref, U_ref, *W, input_limits=self.limits(vi))
        if self.initial_guess == "hold_start":
            return np.tile(holding_input(vi, x0[: vi.nq])[0], (self.horizon, 1))
        return np.zeros_like(U_ref)  # "zero"


def load_task(source: str | dict) -> Task:
    """Load and validate a task from a YAML path, YAML text, or a dict; raises TaskError naming the key."""
    base_dir = None
    if isinstance(source, dict):
        d = source
    elif isinstance(source, str):
        bare = "\n" not in source and ":" not in source
        if bare and (source.endswith((".yaml", ".yml")) or os.path.isfile(source) or "/" not in source):
            if not os.path.isfile(source):  # a name in the package's config/ ("task_pendulum_swingup")
                name = os.path.basename(source)
                cand = share_dir() / "config" / (name if name.endswith((".yaml", ".yml")) else name + ".yaml")
                if not cand.is_file():
                    raise TaskError(f"task file {source!r} not found")
                source = str(cand)
            base_dir = os.path.dirname(os.path.abspath(source))
            with open(source, encoding="utf-8") as f:
                d = yaml.safe_load(f)
        else:
            d = yaml.safe_load(source)
    else:
        raise TaskError(f"task source must be a path, YAML text or dict, got {type(source).__name__}")
    d = _mapping(d, "task", _TOP_KEYS)
    for k in ("model", "dt", "horizon", "weights"):
        if k not in d:
            raise TaskError(f"{k}: missing (required keys: model, dt, horizon, weights)")
    model = d["model"]
    if isinstance(model, dict):
        _mapping(model, "model", {"bundled", "example", "urdf", "system", "config", "name"})
        if sum(k in model for k in ("bundled", "example", "urdf")) != 1:
            raise TaskError("model: give exactly one of bundled, example, urdf")
    elif not isinstance(model, str):
        raise TaskError(f"model: expected a bundled model name or a mapping, got {model!r}")
    dt = _number(d["dt"], "dt")
    if not dt > 0:
        raise TaskError(f"dt: must be positive, got {dt}")
    N = d["horizon"]
    if isinstance(N, bool) or not isinstance(N, int) or N < 1:
        raise TaskError(f"horizon: must be a positive integer, got {N!r}")
    start = _mapping(d.get("start"), "start", {"q", "qdot"})
    goal = _mapping(d.get("goal"), "goal", {"q"})
    ref = _mapping(d.get("reference"), "reference", {"type", "step_index", "q_before", "q_after", "u"})
    weights = _mapping(d["weights"], "weights", {"Q", "R", "Qf"})
    for k in ("Q", "R"):
        if k not in weights:
            raise TaskError(f"weights.{k}: missing")
    opt = _mapping(d.get("optimizer"), "optimizer", {"method", "max_iterations", "tolerance", "regularization"})
    method = opt.get("method", "ddp")
    if method not in METHODS:
        raise TaskError(f"optimizer.method: expected one of {METHODS}, got {method!r}")
    max_it = opt.get("max_iterations", 100)
    if isinstance(max_it, bool) or not isinstance(max_it, int) or max_it < 1:
        raise TaskError(f"optimizer.max_iterations: must be a positive integer, got {max_it!r}")
    lim = d.get("input_limits", "model")
    if lim is None:
        lim = "none"
    if isinstance(lim, str):
        if lim not in ("model", "none"):
            raise TaskError(f"input_limits: expected 'model', 'none' or a list, got {lim!r}")
    else:
        lim = _vector(lim, "input_limits")
        if np.any(lim <= 0):
            raise TaskError("input_limits: bounds must be positive")
    guess = d.get("initial_guess", "reference")
    if guess not in ("reference", "zero", "hold_start", "feedback", "auto"):
        raise TaskError(f"initial_guess: expected reference, zero, hold_start, feedback or auto, got {guess!r}")
    return Task(
        name=str(d.get("name", "task")), model=model, dt=dt, horizon=N,
        q0=_vector(start["q"], "start.q") if "q" in start else None,
        qdot0=_vector(start["qdot"], "start.qdot") if "qdot" in start else None,
        goal_q=_vector(goal["q"], "goal.q") if "q" in goal else None, reference=ref, weights=weights,
        input_limits=lim, method=method, max_iterations=max_it,
        tolerance=_number(opt.get("tolerance", 1e-6), "optimizer.tolerance"),
        regularization=_number(opt.get("regularization", 1e-6), "optimizer.regularization"),
        lqr=_mapping(d.get("lqr"), "lqr", {"Q", "R", "Qf"}), hold=_mapping(d.get("hold"), "hold", {"Q", "R"}),
        initial_guess=guess, base_dir=base_dir)


def plan_task(vi: MidpointVI, task: Task, x0: np.ndarray | None = None,
              log: LogFn = None) -> tuple[Plan, OptimizerResult]:
    """Optimize the task from x0 (measured state; default the task's start), then TV-LQR gains along the
    optimal trajectory (seed 000 eq. 36) and the DLQR hold gain K_final about the final configuration
    with U_final its holding input (gravity compensation). Returns (Plan, OptimizerResult).
    """
    if abs(vi.dt - task.dt) > 1e-12:
        raise TaskError(f"dt: the task has dt = {task.dt} but the integrator uses {vi.dt}")
    nx, nu, nq = vi.nx, vi.nu, vi.nq
    x0 = task.start_state(vi) if x0 is None else np.asarray(x0, float).ravel()
    if x0.size != nx:
        raise ValueError(f"x0 has size {x0.size}, expected {nx}")
    X_ref, U_ref = task.reference_trajectory(vi, x0)
    Q, R, Qf = (task.weight(w, "weights", n, nq) for w, n in (("Q", nx), ("R", nu), ("Qf", nx)))
    cost = QuadraticTrackingCost(X_ref, U_ref, Q, R, Qf)
    limits = task.limits(vi)
    U0 = task.initial_inputs(vi, x0, X_ref, U_ref)
    if task.initial_guess == "auto":  # the feedback guess only if its rollout costs less than half as much
        U_fb = dataclasses.replace(task, initial_guess="feedback").initial_inputs(vi, x0, X_ref, U_ref)
        J = []
        for U in (U0, U_fb):
            ro = rollout(vi, x0, U, lo=-limits if limits is not None else None, hi=limits)
            J.append(np.inf if ro is None else cost.calc(ro[0], ro[1]))
        U0 = U_fb if J[1] < 0.5 * J[0] else U0
    if task.method == "gradient":
        res = projection_gradient(vi, cost, x0, U0, input_limits=limits, max_iterations=task.max_iterations,
                                  tolerance=task.tolerance, log=log)
    else:
        res = ddp(vi, cost, x0, U0, input_limits=limits, second_order=task.method == "ddp",
                  max_iterations=task.max_iterations, tolerance=task.tolerance,
                  regularization=task.regularization, log=log)
    if log is not None:
        log(f"[{res.method}] {res}")
    if res.linearization is not None:  # the optimizer's last A_k, B_k are at the returned trajectory
        A = np.array([lin.A for lin in res.linearization])
        B = np.array([lin.B for lin in res.linearization])
        near = np.flatnonzero(np.array([lin.rcond for lin in res.linearization]) < 1e-8)
    else:
        tl = linearize_trajectory(vi, res.X, res.U)
        A, B, near = tl.A, tl.B, tl.near_singular
    if len(near) and log is not None:
        log(f"warning: M_k+1 near singular at steps {near.tolist()} (seed 000 §VII)")
    Ql, Rl, Qfl = (task.weight(w, "lqr", n, nq) for w, n in (("Q", nx), ("R", nu), ("Qf", nx)))
    K, _ = tv_lqr(A, B, Ql, Rl, Qfl)
    qN = res.X[-1, :nq]
    K_final = U_final = None
    _, residual = holding_input(vi, qN)
    if vi.nc == 0 and residual > 1e-6 and log is not None:  # (with constraints their forces may hold it)
        log(f"warning: the final configuration is no equilibrium (unbalanced gravity {residual:.2e} on "
            "unactuated joints): the hold gain cannot keep it")
    try:
        K_final, _, U_final = hold_gain(vi, qN, task.weight("Q", "hold", nx, nq), task.weight("R", "hold", nu))
    except (np.linalg.LinAlgError, ValueError) as e:
        if log is not None:
            log(f"warning: no hold gain about the final state ({e})")
    weights = {g: {w: np.diag(task.weight(w, g, n, nq)).tolist() for w, n in (("Q", nx), ("R", nu), ("Qf", nx))
                   if not (g == "hold" and w == "Qf")} for g in ("weights", "lqr", "hold")}
    weights["task"] = task.name
    weights["method"] = res.method
    robot = vi.robot
    plan = Plan(times=np.arange(task.horizon + 1) * vi.dt, X=res.X, U=res.U, K=K, dt=vi.dt,
                model_name=task.model_name, model_hash=robot.hash, joint_names=robot.joint_names,
                input_names=list(robot.actuated) + list(robot.prescribed), weights=weights,
                K_final=K_final, U_final=U_final)
    return plan, res
