"""Planning tasks as validated YAML: the schema (``load_task`` → ``Task``). Running one is planning.pipeline.

Schema (every key is checked; errors name the key) — see docs/concepts/planner.md for the full table::

    name: pendulum_swingup
    model: pendulum                  # anything model.ModelSpec.parse takes: bundled name | erd:panda
                                     # | URDF path | {bundled: double_pendulum, config: acrobot}
                                     # | {example: panda, system: ...} | {urdf: path, system: path}
    dt: 0.1
    horizon: 100                     # N steps
    start: {q: [0.0], qdot: [0.0]}
    goal: {q: [pi]}                  # numbers or expressions of pi ("pi/2", "-pi")
    reference: {type: step, step_index: 50, q_before: [0], q_after: [pi]}   # or type: goal
    weights: {Q: [100, 1], R: 1, Qf: [100, 1]}     # scalar, diagonal list, or {q: .., p: ..}
    input_limits: model              # model (default) | none | list of |u| bounds
    optimizer: {method: ddp, max_iterations: 50, tolerance: 1.0e-6, regularization: 1.0e-6}
                                     # method: ddp | ilqr | gradient | collocation_lg | collocation_lg2
                                     # continuation: {Q_scale: [30, 5], iterations: 20} (planning.continuation)
    collocation: {nodes: 20, final_time: free}   # collocation methods only (planning.collocation.planner)
    lqr: {Q: .., R: .., Qf: ..}      # TV-LQR weights (default: the cost weights)
    hold: {Q: .., R: ..}             # infinite-horizon DLQR about the final state (default: lqr)
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from ..control.lqr import check_weight
from ..model.bundled import share_dir
from ..model.errors import ModelError, removed_name
from ..model.limits import MAX_COEFFICIENT, MAX_CONFIGURATION, PLAN_DT_RANGE, Bound
from ..model.robot import RobotModel
from ..model.spec import ModelSpec
from ..model.yaml_io import YAMLFormatError, load_yaml, read_text_file
from .cost import weight_matrix
from .task_values import TaskError, integer_in, mapping_of, parse_number, parse_vector

# (TaskError, parse_number and parse_vector: the value parsers, planning.task_values, imported from here too)
__all__ = ["Task", "TaskError", "load_task", "config_file", "parse_number", "parse_vector"]

METHODS = ("ddp", "ilqr", "gradient", "collocation_lg", "collocation_lg2")
COLLOCATION_METHODS = ("collocation_lg", "collocation_lg2")
# Stated ranges (docs/reliability.md): every loop of the planner is bounded by these.
MAX_HORIZON = 100_000  # steps: X, U, K and a linearization per step are held in memory
MAX_ITERATIONS = 10_000  # optimizer iterations
MAX_REGULARIZATION = 1e10  # DDP's μ ceiling (planning.ddp): a larger start could never be lowered into use
MAX_DT = PLAN_DT_RANGE[1]  # s: a task step beyond this is no discretization of a robot's motion
# Collocation sizes: the transcription holds a dense (nodes × nodes) differentiation matrix per interval and a CasADi
# expression graph per point; beyond these it would exhaust memory long before IPOPT starts
# (docs/concepts/collocation.md uses 15…30 nodes, the h-p gaits a few hundred points).
MAX_COLLOCATION_NODES = 200  # Gauss points per interval
MAX_COLLOCATION_POINTS = 10_000  # nodes × intervals
# The stated range of every bounded number of a task (key → Bound): ``load_task`` checks each through ``_bounded``
# and test_boundaries_tables.py tries both sides of every end of every entry. Cross-checks (t_min < horizon·dt,
# stages × iterations < max_iterations, nodes × intervals) come after these.
TASK_BOUNDS: dict[str, Bound] = {
    "dt": Bound(*PLAN_DT_RANGE),  # s (model.limits.PLAN_DT_RANGE: the controller's dt range)
    "horizon": Bound(1, MAX_HORIZON, integer=True),
    "optimizer.max_iterations": Bound(1, MAX_ITERATIONS, integer=True),
    "optimizer.tolerance": Bound(0.0, None, low_open=True),
    "optimizer.regularization": Bound(0.0, MAX_REGULARIZATION),
    "optimizer.constraint_tolerance": Bound(0.0, None, low_open=True),
    "optimizer.penalty": Bound(0.0, None, low_open=True),
    # one stage of continuation leaves at least one iteration of optimizer.max_iterations to the task
    "optimizer.continuation.iterations": Bound(1, MAX_ITERATIONS - 1, integer=True),
    "collocation.nodes": Bound(3, MAX_COLLOCATION_NODES, integer=True),
    # (nodes ≥ 3 and nodes × intervals ≤ MAX_COLLOCATION_POINTS: more intervals never fit)
    "collocation.intervals": Bound(1, MAX_COLLOCATION_POINTS // 3, integer=True),
    "collocation.polish_iterations": Bound(1, MAX_ITERATIONS, integer=True),
    "collocation.effort_weight": Bound(0.0, MAX_COEFFICIENT, low_open=True),
    "collocation.polish_tolerance": Bound(0.0, MAX_COEFFICIENT, low_open=True),
    "mpc.horizon": Bound(1, MAX_HORIZON, integer=True),
    "mpc.max_iterations": Bound(1, MAX_ITERATIONS, integer=True),
    "mpc.tolerance": Bound(0.0, None, low_open=True),
}


def _bounded(v, key: str):
    """``v`` checked against ``TASK_BOUNDS[key]`` (numbers may be expressions of pi); TaskError naming the key."""
    b = TASK_BOUNDS[key]
    x = v if b.integer else parse_number(v, key)
    msg = b.refusal(key, x)
    if msg is not None:
        raise TaskError(msg)
    return x


# optimizer keys that only the shooting methods with a terminal constraint read (planning.augmented)
_TERMINAL_KEYS = ("constraint_tolerance", "penalty")
_TOP_KEYS = {
    "name",
    "model",
    "dt",
    "horizon",
    "start",
    "goal",
    "reference",
    "weights",
    "input_limits",
    "optimizer",
    "lqr",
    "hold",
    "initial_guess",
    "collocation",
    "mpc",
}


# Entries the weight memo of a task (and of the tasks made from it by dataclasses.replace) keeps: 9 per set of weights.
MEMO_ENTRIES = 512


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
    terminal_constraint: bool = False
    constraint_tolerance: float = 1e-6
    penalty: float = 1e4
    lqr: dict = field(default_factory=dict)
    hold: dict = field(default_factory=dict)
    initial_guess: str = "reference"
    base_dir: str | None = None
    collocation: dict = field(default_factory=dict)  # validated options (planning.collocation.planner)
    continuation: dict = field(default_factory=dict)  # {"Q_scale": (s₁, …), "iterations": n} (planning.continuation)
    mpc: dict = field(default_factory=dict)  # the validated ``mpc:`` section (planning.mpc.MPCSettings)
    # weight(): matrices already resolved, keyed by the raw values they came from (a plan asks for 8 of them). An init
    # field, so that ``dataclasses.replace`` hands the memo on to the task it makes — an MPC window (a shrinking horizon
    # meets a new length every cycle, and parsing the panda's weights costs ~0.4 ms), a request's goal: the keys hold
    # the raw values, so a task with other weights parses its own; MEMO_ENTRIES bounds what the tasks sharing it keep.
    _resolved: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def model_spec(self) -> ModelSpec:
        """The task's model as a ModelSpec (paths relative to the task file)."""
        try:
            return ModelSpec.parse(self.model, base_dir=self.base_dir)
        except ModelError as e:
            raise TaskError(f"model: {e}") from None

    @property
    def model_name(self) -> str:
        spec = self.model_spec
        return spec.default_name() or os.path.splitext(os.path.basename(spec.source))[0]

    def load_robot(self) -> RobotModel:
        return self.model_spec.load()

    def __getattr__(self, name: str):
        if name == "make_vi":  # removed (one release): say what replaced it
            raise AttributeError(
                "Task.make_vi was removed: use vi_control.make_system(task) "
                "(planning.pipeline.make_system; integrator='midpoint' by default)",
                name=name,
                obj=self,
            )
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}", name=name, obj=self)

    def weight(self, which: str, group: str, n: int, nq: int | None = None) -> np.ndarray:
        """Weight ``which`` (Q, R, Qf) of ``group`` (weights, lqr, hold), falling back weights ← lqr ← hold."""
        chain = {
            "weights": [self.weights],
            "lqr": [self.lqr, self.weights],
            "hold": [self.hold, self.lqr, self.weights],
        }[group]
        key = f"{group}.{which}"
        memo = (which, group, n, nq, repr([d.get(which) for d in chain]), repr([d.get("Q") for d in chain]))
        hit = self._resolved.get(memo)
        if hit is not None:
            return hit.copy()
        W = self._resolve_weight(which, group, n, nq, chain, key)
        if "..." not in memo[4] + memo[5]:  # (numpy abbreviates the repr of large arrays: no key then)
            self._remember(memo, W)
        return W.copy()

    def weight_table(self, nx: int, nu: int, nq: int | None = None) -> dict[tuple[str, str], np.ndarray]:
        """Every weight of a plan, {(group, which): ``weight(which, group, n, nq)``} for the groups weights, lqr and
        hold (hold has no Qf), n = nx for Q and Qf, nu for R: copies of matrices kept under one key of the raw values
        (a plan asks for all eight; one key costs what one ``weight`` call's key does)."""
        memo = ("table", nx, nu, nq, repr((self.weights, self.lqr, self.hold)))
        hit = self._resolved.get(memo)
        if hit is None:
            hit = {
                (g, w): self.weight(w, g, n, nq)
                for g in ("weights", "lqr", "hold")
                for w, n in (("Q", nx), ("R", nu), ("Qf", nx))
                if not (g == "hold" and w == "Qf")
            }
            if "..." not in memo[4]:  # (numpy abbreviates the repr of large arrays: no key then)
                self._remember(memo, hit)
        return {k: W.copy() for k, W in hit.items()}

    def _remember(self, key: tuple, value) -> None:
        if len(self._resolved) >= MEMO_ENTRIES:  # (tasks of ever new weights sharing one memo: a request node's)
            self._resolved.clear()
        self._resolved[key] = value

    def _resolve_weight(self, which: str, group: str, n: int, nq: int | None, chain: list, key: str) -> np.ndarray:
        for d, name in zip(chain, [group, *{"lqr": ["weights"], "hold": ["lqr", "weights"]}.get(group, [])]):
            if which in d:
                W = self._parse_weight(d[which], which, n, nq, key if name == group else f"{key} (from {name}.{which})")
                if which == "R" and group != "weights":  # the Riccati gains invert R (control.lqr.check_weight)
                    try:
                        check_weight(W, n, key if name == group else f"{key} (from {name}.R)", definite=True)
                    except ValueError as e:
                        raise TaskError(str(e)) from None
                return W
        if which == "Qf":
            return self.weight("Q", group, n, nq)
        raise TaskError(f"weights.{which}: missing")

    @staticmethod
    def _parse_weight(w, which: str, n: int, nq: int | None, key: str) -> np.ndarray:
        """One weight value of the YAML (scalar, list, or {q: .., p: ..} for state weights) as an (n, n) matrix."""
        if isinstance(w, dict):  # {q: .., p: ..} for state weights
            if nq is None or set(w) - {"q", "p"}:
                raise TaskError(f"{key}: a mapping must have keys q and p (state weights only)")
            w = np.concatenate([_per_coordinate(w.get(part, 0.0), f"{key}.{part}", nq) for part in "qp"])
        elif isinstance(w, (list, tuple)):
            w = parse_vector(w, key, n, bound=MAX_COEFFICIENT)
        else:
            w = parse_vector(w, key, bound=MAX_COEFFICIENT)[0]
        try:
            return weight_matrix(w, n, key)
        except ValueError as e:
            raise TaskError(str(e)) from None


def _per_coordinate(v, key: str, nq: int) -> np.ndarray:
    """One weight per configuration coordinate: a list of nq numbers, or one number for all of them."""
    w = parse_vector(v, key, bound=MAX_COEFFICIENT)
    if w.size not in (1, nq):
        raise TaskError(f"{key}: expected one number or {nq} entries (one per coordinate), got {w.size}")
    return w * np.ones(nq)


def config_file(source: str) -> str | None:
    """``source`` if it is a file, else the YAML of that name in the package's config/ ("task_panda_reach",
    "sweep_pendulum.yaml"), else None."""
    if os.path.isfile(source):
        return source
    name = os.path.basename(source)
    cand = share_dir() / "config" / (name if name.endswith((".yaml", ".yml")) else name + ".yaml")
    return str(cand) if cand.is_file() else None


def _yaml(text: str, where: str):
    try:
        return load_yaml(text)
    except YAMLFormatError as e:
        raise TaskError(f"{where}task YAML is not valid YAML: {e}") from None


def load_task(source: str | os.PathLike | dict) -> Task:
    """Load and validate a task from a YAML path, YAML text, or a dict; raises TaskError naming the key."""
    base_dir = None
    path_like = isinstance(source, os.PathLike)  # (a pathlib.Path is a path, whatever characters it holds)
    if path_like:
        source = os.fspath(source)
    if isinstance(source, dict):
        d = source
    elif isinstance(source, str):
        if path_like or ("\n" not in source and ":" not in source):  # a path or a name in config/ (YAML has a colon)
            # (an existing non-file — /dev/zero, a FIFO — is refused by read_text_file, not taken for YAML text)
            found = source if os.path.exists(source) else config_file(source)
            if found is None:
                raise TaskError(f"task file {source!r} not found")
            source = found
            base_dir = os.path.dirname(os.path.abspath(source))
            d = _yaml(read_text_file(source, "task", TaskError), f"{source}: ")
        else:
            d = _yaml(source, "")
    else:
        raise TaskError(f"task source must be a path, YAML text or dict, got {type(source).__name__}")
    d = mapping_of(d, "task", _TOP_KEYS)
    for k in ("model", "dt", "horizon", "weights"):
        if k not in d:
            raise TaskError(f"{k}: missing (required keys: model, dt, horizon, weights)")
    model = d["model"]
    try:
        ModelSpec.parse(model, base_dir=base_dir)  # validated now; loaded by the pipeline
    except ModelError as e:
        raise TaskError(f"model: {e}") from None
    dt = _bounded(d["dt"], "dt")
    N = _bounded(d["horizon"], "horizon")
    start = mapping_of(d.get("start"), "start", {"q", "qdot"})
    goal = mapping_of(d.get("goal"), "goal", {"q"})
    ref = mapping_of(d.get("reference"), "reference", {"type", "step_index", "q_before", "q_after", "u"})
    _check_reference(ref, N)
    weights = mapping_of(d["weights"], "weights", {"Q", "R", "Qf"})
    for k in ("Q", "R"):
        if k not in weights:
            raise TaskError(f"weights.{k}: missing")
    opt = mapping_of(
        d.get("optimizer"),
        "optimizer",
        {
            "method",
            "max_iterations",
            "tolerance",
            "regularization",
            "terminal_constraint",
            "constraint_tolerance",
            "penalty",
            "continuation",
        },
    )
    terminal = opt.get("terminal_constraint", False)
    if not isinstance(terminal, bool):
        raise TaskError(f"optimizer.terminal_constraint: expected true or false, got {terminal!r}")
    method = opt.get("method", "ddp")
    if method not in METHODS:
        raise TaskError(f"optimizer.method: expected one of {METHODS}, got {method!r}")
    colloc_method = method in COLLOCATION_METHODS  # the optimizer is IPOPT: its own defaults
    _check_method_keys(d, opt, method, terminal)
    max_it = _bounded(opt.get("max_iterations", 3000 if colloc_method else 100), "optimizer.max_iterations")
    tolerance = _bounded(opt.get("tolerance", 1e-8 if colloc_method else 1e-6), "optimizer.tolerance")
    regularization = _bounded(opt.get("regularization", 1e-6), "optimizer.regularization")
    lim = d.get("input_limits", "model")
    if lim is None:
        lim = "none"
    if isinstance(lim, str):
        if lim not in ("model", "none"):
            raise TaskError(f"input_limits: expected 'model', 'none' or a list, got {lim!r}")
    else:
        lim = parse_vector(lim, "input_limits", bound=MAX_COEFFICIENT)
        if np.any(lim <= 0):
            raise TaskError("input_limits: bounds must be positive")
    colloc = _collocation_options(d, method, N, dt)
    guess = d.get("initial_guess", "reference")
    if guess not in ("reference", "zero", "hold_start", "feedback", "auto"):
        raise TaskError(f"initial_guess: expected reference, zero, hold_start, feedback or auto, got {guess!r}")
    name = d.get("name", "task")
    if not isinstance(name, str):
        raise TaskError(f"name: expected text, got {type(name).__name__} {name!r}")
    return Task(
        name=name,
        model=model,
        dt=dt,
        horizon=N,
        q0=parse_vector(start["q"], "start.q", bound=MAX_CONFIGURATION) if "q" in start else None,
        qdot0=parse_vector(start["qdot"], "start.qdot", bound=MAX_CONFIGURATION) if "qdot" in start else None,
        goal_q=parse_vector(goal["q"], "goal.q", bound=MAX_CONFIGURATION) if "q" in goal else None,
        reference=ref,
        weights=weights,
        input_limits=lim,
        method=method,
        max_iterations=max_it,
        tolerance=tolerance,
        regularization=regularization,
        terminal_constraint=terminal,
        constraint_tolerance=_bounded(opt.get("constraint_tolerance", 1e-6), "optimizer.constraint_tolerance"),
        penalty=_bounded(opt.get("penalty", 1e4), "optimizer.penalty"),
        lqr=mapping_of(d.get("lqr"), "lqr", {"Q", "R", "Qf"}),
        hold=mapping_of(d.get("hold"), "hold", {"Q", "R"}),
        initial_guess=guess,
        base_dir=base_dir,
        collocation=colloc,
        continuation=_continuation_options(opt.get("continuation"), method, max_it),
        mpc=_mpc_options(d.get("mpc"), method, dt, N),
    )


def _mpc_options(m, method: str, dt: float, horizon: int) -> dict:
    """``mpc:`` validated (planning.mpc.MPCSettings; keys named in errors): {} when absent."""
    if m is None:
        return {}
    m = mapping_of(m, "mpc", {"period", "horizon", "shrinking", "min_horizon", "max_iterations", "tolerance"})
    if method not in ("ddp", "ilqr"):
        raise TaskError(f"mpc: receding-horizon re-plans warm-start the shooting methods ddp or ilqr, not {method!r}")
    out: dict = {}
    if "horizon" in m:
        out["horizon"] = _bounded(m["horizon"], "mpc.horizon")
    n = out.get("horizon", horizon)
    if "period" in m:
        period = parse_number(m["period"], "mpc.period")
        if not dt - 1e-12 <= period <= n * dt:
            raise TaskError(
                f"mpc.period: must be in [dt, horizon·dt] = [{dt:g}, {n * dt:g}] s (a re-plan at least "
                f"every step, at most once per horizon), got {period}"
            )
        out["period"] = period
    if "shrinking" in m:
        if not isinstance(m["shrinking"], bool):
            raise TaskError(f"mpc.shrinking: expected true or false, got {m['shrinking']!r}")
        out["shrinking"] = m["shrinking"]
    if "min_horizon" in m:
        out["min_horizon"] = integer_in(m["min_horizon"], "mpc.min_horizon", 1, n)
    if "max_iterations" in m:
        out["max_iterations"] = _bounded(m["max_iterations"], "mpc.max_iterations")
    if "tolerance" in m:
        out["tolerance"] = _bounded(m["tolerance"], "mpc.tolerance")
    return out


def _continuation_options(c, method: str, max_iterations: int) -> dict:
    """``optimizer.continuation`` validated (keys named in errors); {} when absent."""
    if c is None:
        return {}
    c = mapping_of(c, "optimizer.continuation", {"Q_scale", "iterations"})
    if method not in ("ddp", "ilqr"):
        raise TaskError(f"optimizer.continuation: only for optimizer.method ddp or ilqr, not {method!r}")
    if "Q_scale" not in c:
        raise TaskError("optimizer.continuation.Q_scale: missing (the running state weight's scale per stage)")
    scales = parse_vector(c["Q_scale"], "optimizer.continuation.Q_scale", bound=MAX_COEFFICIENT)
    if not scales.size or np.any(scales <= 0):
        raise TaskError(f"optimizer.continuation.Q_scale: expected positive numbers, got {c['Q_scale']!r}")
    n = _bounded(c.get("iterations", 20), "optimizer.continuation.iterations")
    if scales.size * n >= max_iterations:
        raise TaskError(
            f"optimizer.continuation: {scales.size} stages × {n} iterations leave none of "
            f"optimizer.max_iterations = {max_iterations} for the task itself"
        )
    return {"Q_scale": tuple(float(s) for s in scales), "iterations": n}


def _check_reference(ref: dict, horizon: int) -> None:
    """reference.type and .u among the choices (planning.pipeline.reference_trajectory), the step keys only with a
    step (a goal reference would ignore them)."""
    kind = ref.get("type", "goal")
    if kind not in ("step", "goal"):
        raise TaskError(f"reference.type: expected 'step' or 'goal', got {kind!r}")
    if ref.get("u", "zero") not in ("zero", "hold"):
        raise TaskError(f"reference.u: expected 'zero' or 'hold', got {ref['u']!r}")
    if kind == "goal":
        unused = [f"reference.{k}" for k in ("step_index", "q_before", "q_after") if k in ref]
        if unused:
            raise TaskError(f"{', '.join(unused)}: only used with reference.type: step (a goal reference holds goal.q)")
    if "step_index" in ref:
        integer_in(ref["step_index"], "reference.step_index", 0, horizon)


def _check_method_keys(d: dict, opt: dict, method: str, terminal: bool) -> None:
    """A key the chosen method would silently ignore is an error naming it (it was meant for another method)."""
    if method == "gradient" and terminal:
        raise TaskError("optimizer.terminal_constraint: needs optimizer.method ddp or ilqr, not 'gradient'")
    if method in COLLOCATION_METHODS:  # IPOPT from a straight line (collocation.t_guess), then a plain DDP polish
        unused = [f"optimizer.{k}" for k in ("terminal_constraint",) + _TERMINAL_KEYS if k in opt]
        unused += [k for k in ("reference", "initial_guess") if k in d]  # (its reference: the collocated path)
        why = f"not used by optimizer.method {method!r}"
    elif not terminal:
        unused = [f"optimizer.{k}" for k in _TERMINAL_KEYS if k in opt]
        why = "only used with optimizer.terminal_constraint: true"
    else:
        unused = []
    if method == "gradient" and "regularization" in opt:
        unused, why = ["optimizer.regularization"], "not used by optimizer.method 'gradient' (no Hessian to damp)"
    if unused:
        raise TaskError(f"{', '.join(unused)}: {why}")


def _collocation_options(d: dict, method: str, horizon: int, dt: float) -> dict:
    """The ``collocation`` block, validated (keys named in errors); {} for the shooting methods. horizon·dt is the
    fixed final time, or the upper bound of a free one (whose lower bound t_min defaults to 2·dt)."""
    if method not in COLLOCATION_METHODS:
        if "collocation" in d:
            raise TaskError(f"collocation: only used by optimizer.method {COLLOCATION_METHODS}, not {method!r}")
        return {}
    if "collocation" not in d:
        raise TaskError(f"collocation: missing (optimizer.method {method} needs at least collocation.nodes)")
    if "q" not in (d.get("goal") or {}):
        raise TaskError(f"goal.q: missing (optimizer.method {method} plans to the goal configuration)")
    c = mapping_of(d["collocation"], "collocation", set(COLLOCATION_DEFAULTS) | {"nodes"})
    if "nodes" not in c:
        raise TaskError("collocation.nodes: missing (Gauss points per interval, at least 3)")
    out = {**COLLOCATION_DEFAULTS, **c}
    for key in ("nodes", "intervals", "polish_iterations"):
        _bounded(out[key], f"collocation.{key}")
    if out["nodes"] * out["intervals"] > MAX_COLLOCATION_POINTS:
        raise TaskError(
            f"collocation: nodes × intervals = {out['nodes'] * out['intervals']} points, more than the "
            f"supported {MAX_COLLOCATION_POINTS}"
        )
    for key, allowed in (
        ("final_time", ("fixed", "free")),
        ("cost", ("effort", "time")),
        ("dynamics", ("implicit", "explicit")),
    ):
        if out[key] not in allowed:
            raise TaskError(f"collocation.{key}: expected one of {allowed}, got {out[key]!r}")
    if out["cost"] == "time" and out["final_time"] != "free":
        raise TaskError("collocation.cost: 'time' (minimum time) needs collocation.final_time: free")
    for key in ("t_min", "t_guess", "effort_weight", "polish_tolerance"):
        if out[key] is not None and f"collocation.{key}" in TASK_BOUNDS:
            out[key] = _bounded(out[key], f"collocation.{key}")
        elif out[key] is not None:  # (t_min, t_guess: bounded by horizon·dt below)
            out[key] = parse_number(out[key], f"collocation.{key}")
            if not 0 < out[key] <= MAX_COEFFICIENT:
                raise TaskError(f"collocation.{key}: must be positive (at most {MAX_COEFFICIENT:g}), got {out[key]}")
    _check_final_time(c, out, horizon * dt, 2 * dt)
    if not isinstance(out["joint_limits"], bool):
        raise TaskError(f"collocation.joint_limits: expected true or false, got {out['joint_limits']!r}")
    return out


def _check_final_time(given: dict, out: dict, horizon_time: float, default_t_min: float) -> None:
    """t_min < t_guess ≤ horizon·dt for a free final time; neither key with a fixed one (it would be ignored)."""
    if out["final_time"] == "fixed":
        for key in ("t_min", "t_guess"):
            if key in given:
                raise TaskError(
                    f"collocation.{key}: only used with collocation.final_time: free (a fixed final time "
                    f"is horizon·dt = {horizon_time:g} s)"
                )
        return
    t_min = out["t_min"] if out["t_min"] is not None else default_t_min
    if not t_min < horizon_time:
        raise TaskError(
            f"collocation.t_min: must be below horizon·dt = {horizon_time:g} s (the upper bound of the "
            f"free final time), got {t_min:g}"
        )
    t_guess = out["t_guess"]
    if t_guess is not None and not t_min <= t_guess <= horizon_time:
        raise TaskError(
            f"collocation.t_guess: must be in [t_min, horizon·dt] = [{t_min:g}, {horizon_time:g}] s, got {t_guess:g}"
        )


# Options of the ``collocation`` block (``nodes`` is required): see docs/concepts/collocation.md.
COLLOCATION_DEFAULTS = {
    "intervals": 1,  # K equal intervals (1: one global polynomial, MorenoMartin2022; > 1: h-p)
    "final_time": "fixed",  # fixed: t_f = horizon·dt; free: t_f ∈ [t_min, horizon·dt]
    "cost": "effort",  # effort: ∫uᵀu dt (× effort_weight); time: minimum t_f (free final time)
    "effort_weight": 1.0,
    "t_min": None,  # lower bound of a free t_f (default 2·dt)
    "t_guess": None,  # t_f of the initial guess (default: the upper bound)
    "dynamics": "implicit",  # implicit M q̈ + b = Bu (+ Dhᵀλ) | explicit q̈ = g(q, q̇, u) (same solutions)
    "joint_limits": True,  # bound q by the URDF limits at every node
    "polish_iterations": 30,  # at most this many DDP iterations on the VI from the resampled solution (≥ 1)
    "polish_tolerance": 1e-6,  # the polish's |dJ| stop, in the units of the task's cost (as optimizer.tolerance)
}


# Removed names and what replaced them: an ImportError naming the replacement for one release, then plain absence.
_REMOVED = {"plan_task": "vi_control.planning.pipeline.plan_task (also vi_control.plan_task)"}


def __getattr__(name: str):
    if name in _REMOVED:
        raise removed_name(f"vi_control.planning.task.{name}", _REMOVED[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
