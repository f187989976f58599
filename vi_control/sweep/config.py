"""Sweep YAML schemas, validated key by key: robustness (perturbation ranges, success rule) and library (goals).

Robustness::

    samples: 64                    # N closed-loop rollouts
    seed: 0                        # sample i draws from numpy's default_rng([seed, i]): order-independent
    perturbations:                 # each: a number (fixed), [lo, hi] (uniform), {uniform: [lo, hi]},
      mass_scale: [0.9, 1.1]       #   {normal: [mean, std]} or {loguniform: [lo, hi]}
      damping: [0.0, 0.05]         # viscous damping added to every dynamic joint [N·m·s/rad or N·s/m]
      actuator_gain: [0.95, 1.05]  # applied torque = gain × commanded torque
      sensor_noise: [0.0, 0.002]   # std of Gaussian noise on every measured position [rad or m]
      q0_offset: [-0.05, 0.05]     # initial configuration offset, drawn per joint
      qdot0_offset: [-0.1, 0.1]    # initial velocity offset, drawn per joint
    success:
      tolerance: 0.05              # success: ‖q_N+hold − q_goal‖∞ below this (continuous joints mod 2π)
      hold_time: 2.0               # seconds under the hold gain after the plan before judging
      clamp: true                  # clamp commands to the model's effort limits
    plant: auto                    # auto | compiled | vm: how perturbed plants evaluate (docs/concepts/sweep.md)

Library::

    goals: [[pi], [pi/2]]          # a list of full goal configurations (numbers or expressions of pi) ...
    grid:                          # ... or a grid: joint -> values or {from, to, num}; the product of all
      theta: {from: 1.0, to: pi, num: 5}   # joints not named keep the task's goal

Errors are ``SweepConfigError`` (a ValueError) naming the key.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np

from ..model.errors import unknown_keys
from ..model.limits import MASS_SCALE_RANGE, MAX_COEFFICIENT, Bound
from ..model.yaml_io import YAMLFormatError, load_yaml, read_text_file
from ..planning.task import TaskError, config_file, parse_number

SCALAR_PARAMETERS = ("mass_scale", "damping", "actuator_gain", "sensor_noise")
VECTOR_PARAMETERS = ("q0_offset", "qdot0_offset")  # drawn once per joint
# Value of a parameter that is not perturbed, and the bounds a drawn value must respect.
NOMINAL = {
    "mass_scale": 1.0,
    "damping": 0.0,
    "actuator_gain": 1.0,
    "sensor_noise": 0.0,
    "q0_offset": 0.0,
    "qdot0_offset": 0.0,
}
_POSITIVE = {"mass_scale"}
# Stated ranges (docs/reliability.md): every sweep loop is bounded. A sample is one closed-loop rollout and one record.
MAX_SAMPLES = 1_000_000
MAX_HOLD_TIME = 3600.0  # s simulated under the hold gain after the plan, per sample
MIN_MASS_SCALE, MAX_MASS_SCALE = MASS_SCALE_RANGE  # load_robot's mass_scale range: beyond it every sample would fail
MAX_LIBRARY_GOALS = 100_000  # goals of one library (a grid's points multiplied out): each is a plan
# success.tolerance [rad or m]: beyond half a turn any final angle of a continuous joint is within it (a dead actuator
# was a 100 % success at 1e300)
MAX_TOLERANCE = float(np.pi)
_NONNEGATIVE = {"damping", "actuator_gain", "sensor_noise"}
# The stated range of every bounded number of a robustness or library config, the table the validation reads and
# test_boundaries_tables.py tries at both ends (a perturbation's: every value its distribution can draw, a
# normal's mean ± 6σ; ``*``: any joint).
SWEEP_BOUNDS: dict[str, Bound] = {
    "samples": Bound(1, MAX_SAMPLES, integer=True),
    "seed": Bound(0, None, integer=True),
    "success.tolerance": Bound(0.0, MAX_TOLERANCE, low_open=True),
    "success.hold_time": Bound(0.0, MAX_HOLD_TIME),
    "perturbations.mass_scale": Bound(*MASS_SCALE_RANGE),
    "perturbations.damping": Bound(0.0, MAX_COEFFICIENT),
    "perturbations.actuator_gain": Bound(0.0, MAX_COEFFICIENT),
    "perturbations.sensor_noise": Bound(0.0, MAX_COEFFICIENT),
    "perturbations.q0_offset": Bound(-MAX_COEFFICIENT, MAX_COEFFICIENT),
    "perturbations.qdot0_offset": Bound(-MAX_COEFFICIENT, MAX_COEFFICIENT),
}
LIBRARY_BOUNDS: dict[str, Bound] = {"grid.*.num": Bound(1, MAX_LIBRARY_GOALS, integer=True)}
DISTRIBUTIONS = ("uniform", "normal", "loguniform")
PLANT_BACKENDS = ("auto", "compiled", "vm")


class SweepConfigError(ValueError):
    """A sweep YAML is invalid; the message names the key."""


def _number(v, key: str) -> float:
    try:
        return parse_number(v, key)
    except TaskError as e:
        raise SweepConfigError(str(e)) from None


@dataclass(frozen=True)
class Distribution:
    """One perturbation: ``kind`` fixed | uniform | normal | loguniform with its two numbers (a, b)."""

    kind: str
    a: float
    b: float = 0.0

    @property
    def varies(self) -> bool:
        return (
            self.kind != "fixed"
            and not (self.kind == "normal" and self.b == 0.0)
            and not (self.kind in ("uniform", "loguniform") and self.a == self.b)
        )

    def draw(self, rng: np.random.Generator, n: int | None = None):
        if self.kind == "fixed":
            return self.a if n is None else np.full(n, self.a)
        if self.kind == "uniform":
            return rng.uniform(self.a, self.b, n)
        if self.kind == "normal":
            return rng.normal(self.a, self.b, n)
        return np.exp(rng.uniform(np.log(self.a), np.log(self.b), n))  # loguniform

    def bounds(self) -> tuple[float, float]:
        """The range of the draws: a normal's mean ± 6σ (a draw outside has probability 2e-9 and is
        refused by ``RobustnessConfig.sample``)."""
        if self.kind == "normal":
            return self.a - 6 * self.b, self.a + 6 * self.b
        return (self.a, self.a) if self.kind == "fixed" else (self.a, self.b)


def parse_distribution(v, key: str) -> Distribution:
    if isinstance(v, (list, tuple)):
        v = {"uniform": list(v)}
    if isinstance(v, dict):
        if len(v) != 1 or next(iter(v)) not in DISTRIBUTIONS:
            raise SweepConfigError(f"{key}: expected one of {{uniform|normal|loguniform: [a, b]}}, got {v!r}")
        kind, ab = next(iter(v.items()))
        if not isinstance(ab, (list, tuple)) or len(ab) != 2:
            raise SweepConfigError(f"{key}.{kind}: expected two numbers [a, b], got {ab!r}")
        a, b = (_number(x, f"{key}.{kind}[{i}]") for i, x in enumerate(ab))
        if not (np.isfinite(a) and np.isfinite(b)):
            raise SweepConfigError(f"{key}.{kind}: numbers must be finite, got {ab!r}")
        if kind in ("uniform", "loguniform") and a > b:
            raise SweepConfigError(f"{key}.{kind}: the lower bound {a} exceeds the upper bound {b}")
        if kind == "loguniform" and a <= 0:
            raise SweepConfigError(f"{key}.loguniform: bounds must be positive, got {ab!r}")
        if kind == "normal" and b < 0:
            raise SweepConfigError(f"{key}.normal: the standard deviation must be non-negative, got {b}")
        return Distribution(kind, a, b)
    a = _number(v, key)
    if not np.isfinite(a):
        raise SweepConfigError(f"{key}: must be finite, got {v!r}")
    return Distribution("fixed", a)


def _mapping(d, key: str, allowed) -> dict:
    if d is None:
        return {}
    if not isinstance(d, dict):
        raise SweepConfigError(f"{key}: expected a mapping, got {type(d).__name__}")
    unknown = set(d) - set(allowed)
    if unknown:
        raise SweepConfigError(f"{key}: {unknown_keys(unknown, set(allowed))}; allowed: {sorted(allowed)}")
    return d


def _choice(v, key: str, options: tuple):
    """``v`` if it is one of ``options`` (booleans are not numbers here: 1 is not true)."""
    if not any(v is o or (type(v) is type(o) and v == o) for o in options):
        raise SweepConfigError(f"{key}: expected one of {list(options)}, got {v!r}")
    return v


def _bounded(v, key: str, bound: Bound | None = None):
    """``v`` within ``bound`` (default ``SWEEP_BOUNDS[key]``); SweepConfigError naming the key."""
    msg = (bound or SWEEP_BOUNDS[key]).refusal(key, v)
    if msg is not None:
        raise SweepConfigError(msg)
    return v


def _read_yaml(source: str | dict | None, what: str) -> dict:
    if source is None:
        return {}
    if isinstance(source, dict):
        return source
    if not isinstance(source, str):
        raise SweepConfigError(f"{what}: expected a path, YAML text or a mapping, got {type(source).__name__}")
    if "\n" not in source and ":" not in source:
        path = config_file(source)  # a path, or a name in the package's config/ ("sweep_pendulum")
        if path is None:
            raise SweepConfigError(f"{what}: file {source!r} not found")
        source = read_text_file(path, what, SweepConfigError)
    try:
        d = load_yaml(source)
    except YAMLFormatError as e:
        raise SweepConfigError(f"{what}: not valid YAML ({e})") from None
    return {} if d is None else d


@dataclass(frozen=True)
class RobustnessConfig:
    """Validated robustness-sweep settings (see the module docstring)."""

    samples: int = 32
    seed: int = 0
    perturbations: dict[str, Distribution] = field(default_factory=dict)
    tolerance: float = 0.05
    hold_time: float = 2.0
    clamp: bool = True
    plant: str = "auto"

    def distribution(self, name: str) -> Distribution:
        return self.perturbations.get(name, Distribution("fixed", NOMINAL[name]))

    @property
    def model_varies(self) -> bool:
        """True when each sample has its own plant model (mass or damping drawn, not fixed)."""
        return any(self.distribution(n).varies for n in ("mass_scale", "damping"))

    def compile_plants(self) -> bool:
        """Whether perturbed plants run generated C: 'auto' compiles only a model shared by every sample
        (one gcc build, cached per node); a model drawn per sample runs on CasADi's VM, since one gcc
        build (0.6 s pendulum, 4 s panda) costs more than the whole rollout on the VM (docs/concepts/sweep.md)."""
        return self.plant == "compiled" or (self.plant == "auto" and not self.model_varies)

    def to_dict(self) -> dict:
        """A plain description (for the results header: a resumed sweep must have the same settings)."""
        return {
            "samples": self.samples,
            "seed": self.seed,
            "tolerance": self.tolerance,
            "hold_time": self.hold_time,
            "clamp": self.clamp,
            "plant": self.plant,
            "perturbations": {k: [d.kind, d.a, d.b] for k, d in sorted(self.perturbations.items())},
        }

    def sample(self, i: int, nq: int) -> dict:
        """Perturbation of sample ``i`` (nq joints) as plain numbers; depends only on (seed, i)."""
        rng = np.random.default_rng([self.seed, i])
        out = {}
        for name in SCALAR_PARAMETERS:
            out[name] = float(self.distribution(name).draw(rng))
            lo = 0.0 if name in _NONNEGATIVE or name in _POSITIVE else -np.inf
            if not (out[name] > lo or (out[name] == 0.0 and name in _NONNEGATIVE)):
                raise SweepConfigError(
                    f"perturbations.{name}: sample {i} drew {out[name]}, out of range; narrow the distribution"
                )
        for name in VECTOR_PARAMETERS:
            out[name] = [float(v) for v in self.distribution(name).draw(rng, nq)]
        return out

    def varied(self, nq: int) -> list[str]:
        """Names of the parameters that vary between samples (vector ones per joint: ``q0_offset[2]``)."""
        names = [n for n in SCALAR_PARAMETERS if self.distribution(n).varies]
        for n in VECTOR_PARAMETERS:
            if self.distribution(n).varies:
                names += [f"{n}[{j}]" for j in range(nq)]
        return names


def load_robustness_config(source: str | dict | None = None, **overrides) -> RobustnessConfig:
    """Robustness settings from a YAML path, YAML text or a mapping; ``overrides`` (samples, seed) win."""
    d = _mapping(
        _read_yaml(source, "robustness config"),
        "robustness config",
        {"samples", "seed", "perturbations", "success", "plant"},
    )
    d = {**d, **{k: v for k, v in overrides.items() if v is not None}}
    samples = _bounded(d.get("samples", 32), "samples")  # (10⁹ rollouts were accepted: a sweep that never ends)
    seed = _bounded(d.get("seed", 0), "seed")
    pert = {}
    for name, v in _mapping(d.get("perturbations"), "perturbations", NOMINAL).items():
        key = f"perturbations.{name}"
        dist = parse_distribution(v, key)
        lo, hi = dist.bounds()
        if name in _POSITIVE and not lo > 0:
            raise SweepConfigError(
                f"{key}: must stay positive (a range above 0; a normal's mean − 6σ above 0), got {v!r}"
            )
        if name == "mass_scale" and not MIN_MASS_SCALE <= lo <= hi <= MAX_MASS_SCALE:
            raise SweepConfigError(
                f"{key}: must stay within [{MIN_MASS_SCALE:g}, {MAX_MASS_SCALE:g}] (the model's "
                "mass_scale range; a normal's mean ± 6σ too), "
                f"got {v!r}"
            )
        if name in _NONNEGATIVE and not lo >= 0:
            raise SweepConfigError(f"{key}: must stay non-negative (a normal's mean − 6σ too), got {v!r}")
        b = SWEEP_BOUNDS[key]
        if not (b.contains(lo) and b.contains(hi)):
            raise SweepConfigError(f"{key}: must stay within {b} (a normal's mean ± 6σ too), got {v!r}")
        pert[name] = dist
    succ = _mapping(d.get("success"), "success", {"tolerance", "hold_time", "clamp"})
    tol = _number(succ.get("tolerance", 0.05), "success.tolerance")
    if not SWEEP_BOUNDS["success.tolerance"].contains(tol):
        raise SweepConfigError(
            f"success.tolerance: must be in (0, π] (rad or m; beyond half a turn every final "
            f"angle would count as a success), got {tol}"
        )
    hold = _bounded(_number(succ.get("hold_time", 2.0), "success.hold_time"), "success.hold_time")
    return RobustnessConfig(
        samples=samples,
        seed=seed,
        perturbations=pert,
        tolerance=tol,
        hold_time=hold,
        clamp=_choice(succ.get("clamp", True), "success.clamp", (True, False)),
        plant=_choice(d.get("plant", "auto"), "plant", PLANT_BACKENDS),
    )


def _values(v, key: str) -> list[float]:
    if isinstance(v, dict):
        r = _mapping(v, key, {"from", "to", "num"})
        if set(r) != {"from", "to", "num"}:
            raise SweepConfigError(f"{key}: a range needs from, to and num")
        num = _bounded(r["num"], f"{key}.num", LIBRARY_BOUNDS["grid.*.num"])
        return [float(x) for x in np.linspace(_number(r["from"], f"{key}.from"), _number(r["to"], f"{key}.to"), num)]
    if isinstance(v, (list, tuple)) and v:
        return [_number(x, f"{key}[{i}]") for i, x in enumerate(v)]
    return [_number(v, key)]


def load_library_goals(source: str | dict, joint_names: list[str], default_goal: np.ndarray) -> list[list[float]]:
    """Goal configurations of a library from its YAML (``goals`` list or ``grid`` of joint values)."""
    d = _mapping(_read_yaml(source, "library config"), "library config", {"goals", "grid"})
    if ("goals" in d) == ("grid" in d):
        raise SweepConfigError("library config: give exactly one of goals (a list) or grid (joint -> values)")
    nq = len(joint_names)
    if "goals" in d:
        goals = d["goals"]
        if not isinstance(goals, list) or not goals:
            raise SweepConfigError("goals: expected a non-empty list of goal configurations")
        if len(goals) > MAX_LIBRARY_GOALS:
            raise SweepConfigError(f"goals: at most {MAX_LIBRARY_GOALS} goals, got {len(goals)}")
        out = []
        for i, g in enumerate(goals):
            g = g if isinstance(g, (list, tuple)) else [g]
            if len(g) != nq:
                raise SweepConfigError(f"goals[{i}]: expected {nq} entries (joints {joint_names}), got {len(g)}")
            out.append([_number(x, f"goals[{i}][{j}]") for j, x in enumerate(g)])
        return out
    grid = d["grid"]
    if not isinstance(grid, dict) or not grid:
        raise SweepConfigError("grid: expected a mapping joint -> values or {from, to, num}")
    axes = []
    for name, v in grid.items():
        if name not in joint_names:
            raise SweepConfigError(f"grid.{name}: no joint of that name (joints: {joint_names})")
        axes.append((joint_names.index(name), _values(v, f"grid.{name}")))
    points = math.prod(len(vals) for _, vals in axes)
    if points > MAX_LIBRARY_GOALS:
        raise SweepConfigError(
            f"grid: {points} goals (the values of every joint multiplied out), at most "
            f"{MAX_LIBRARY_GOALS} (each is a plan)"
        )
    out = []
    for combo in itertools.product(*[vals for _, vals in axes]):
        g = np.array(default_goal, float)
        for (j, _), val in zip(axes, combo):
            g[j] = val
        out.append([float(x) for x in g])
    return out


def parameter_value(rec: dict, name: str) -> float:
    """A record's value of ``mass_scale`` or of a per-joint parameter ``q0_offset[2]``."""
    if "[" in name:
        base, j = name[:-1].split("[")
        return float(rec["params"][base][int(j)])
    return float(rec["params"][name])
