"""The stated ranges of every number vi_control accepts (docs/reliability.md lists them with their reasons).

A value outside these ranges is refused with an error naming the element or key, never computed with:
1e300 in an inertial origin or a constraint distance overflows to inf inside M(q) or h(q) and surfaces much
later as a generic LinAlgError or OverflowError. The bounds are far beyond any robot (a 1000 km link, a
million-tonne body) and far inside double precision, so ordinary models never meet them.
"""

import math
import warnings
from dataclasses import dataclass

from .scalars import is_integer, is_real

MAX_LINKS = 10_000  # links in one URDF (a 3000-link chain loads in seconds; each link costs O(1))
MAX_LENGTH = 1.0e6  # m: |coordinate| of any origin, point, distance, offset, mesh scale, geometry size
MAX_MASS = 1.0e9  # kg per link
MAX_INERTIA = 1.0e12  # kg·m² per inertia entry
MAX_GRAVITY = 1.0e4  # m/s² per component (1000 g)
MAX_COEFFICIENT = 1.0e12  # damping, friction, effort and velocity limits, mimic multiplier/offset
MAX_TEXT_BYTES = 64 * 2**20  # a URDF or YAML file (10 000 links of URDF are a few MB)
MAX_CONFIGURATION = 1.0e6  # |q_i| a step accepts (rad or m): cos/sin of 1e20 carry no digits of the angle
# Δt outside this range is accepted with a warning: no robot's motion is resolved by a step of more than a
# second, and below a microsecond the p/Δt terms lose the digits the residual is judged by.
DT_RANGE = (1.0e-6, 1.0)
# Δt outside this range is refused: Δt² and 1/Δt of the discrete Lagrangian's terms leave double precision long
# before (1e300 s was accepted with a warning, and every step then failed or returned inf).
DT_BOUNDS = (1.0e-12, 1.0e3)
# mass_scale of a model: a 1e-300 scale gave an OverflowError in the planner's regularization; 1e-12 still leaves a
# model in any unit of mass (the unit tests step and plan milligram and 2⁻³⁰ scales) its digits.
MASS_SCALE_RANGE = (1.0e-12, 1.0e6)
# Δt of a plan (a task's dt, a maneuver's T/N): the controller's ``dt`` parameter range, so every plan can be
# tracked. A task at Δt = 1e-300 (or 1e-12) "converged after 0 iterations" with the pendulum still at rest: no input
# moves a robot in such a horizon, and the optimizer's first gradient is already below any tolerance.
PLAN_DT_RANGE = (1.0e-5, 10.0)
# Steps of a DMOC maneuver (planning.dmoc.DMOC_BOUNDS says why: its second-order check is dense, O(N³)).
MAX_DMOC_HORIZON = 256
# A rigid body's buoyancy force [N]: the weight of the heaviest body at the largest gravity.
MAX_FORCE = MAX_MASS * MAX_GRAVITY


def check_time_step(dt: float) -> float:
    """Δt as a float: ValueError unless in DT_BOUNDS (positive, finite, what the arithmetic carries); a
    RuntimeWarning outside DT_RANGE."""
    if not Bound(0.0, None, low_open=True).contains(dt):  # (a real, finite: 10**400 was numpy's TypeError)
        raise ValueError(f"time step dt must be positive and finite, got {dt!r}")
    if not DT_BOUNDS[0] <= dt <= DT_BOUNDS[1]:
        raise ValueError(
            f"time step dt = {dt:g} s is outside [{DT_BOUNDS[0]:g}, {DT_BOUNDS[1]:g}] s, the range the "
            "discrete Lagrangian's arithmetic carries"
        )
    if not DT_RANGE[0] <= dt <= DT_RANGE[1]:
        warnings.warn(
            f"vi_control: time step dt = {dt:g} s is outside [{DT_RANGE[0]:g}, {DT_RANGE[1]:g}] s: "
            "no robot motion is resolved by it (steps will likely fail or be refused)",
            RuntimeWarning,
            stacklevel=3,
        )
    return float(dt)


def position_limit_violation(joints, q, key: str, entries=None) -> str | None:
    """Why configuration ``q`` lies beyond the URDF's position limits ("goal.q[0]: 5 is outside joint 'slider''s
    limits [-2, 2]"), or None. ``joints``: the model's ``JointInfo`` in configuration order (continuous joints are
    unbounded); ``entries``: the configuration indices ``q`` holds (default all). The bounds are inclusive, with
    a relative slack of 1e-9 for values read back from text."""
    for i, e in enumerate(range(len(joints)) if entries is None else entries):
        j = joints[e]
        slack = 1e-9 * max(1.0, abs(j.lower), abs(j.upper))
        if not j.lower - slack <= q[i] <= j.upper + slack:
            return f"{key}[{i}]: {q[i]:g} is outside joint {j.name!r}'s limits [{j.lower:g}, {j.upper:g}]"
    return None


@dataclass(frozen=True)
class Bound:
    """The stated range of one number of a schema: ``low`` ≤ v ≤ ``high`` (None: that side unbounded; ``low_open``
    / ``high_open``: that end excluded); ``integer``: an int (never a bool). Schemas keep these in tables (key →
    Bound) that their validation reads, and the boundary tests read the same tables
    (test_boundaries_tables.py): a new bounded key gets its boundary test by construction."""

    low: float | None
    high: float | None
    integer: bool = False
    low_open: bool = False
    high_open: bool = False

    def contains(self, v) -> bool:
        if not (is_integer(v) if self.integer else is_real(v)):
            return False
        if not self.integer:
            try:  # (an int beyond float range: OverflowError; np.isfinite of one: TypeError)
                if not math.isfinite(float(v)):
                    return False
            except OverflowError:
                return False
        if self.low is not None and not (v > self.low if self.low_open else v >= self.low):
            return False
        return self.high is None or (v < self.high if self.high_open else v <= self.high)

    def __str__(self) -> str:
        lo = "-inf" if self.low is None else f"{self.low:g}"
        hi = "inf" if self.high is None else f"{self.high:g}"
        left = "(" if self.low_open or self.low is None else "["
        right = ")" if self.high_open or self.high is None else "]"
        return f"{left}{lo}, {hi}{right}"

    def describe(self) -> str:
        """'an integer in [1, 100000]' / 'a number in (0, 10]'."""
        return f"{'an integer' if self.integer else 'a number'} in {self}"

    def refusal(self, key: str, v) -> str | None:
        """The message refusing ``v`` for ``key`` ("dt: must be a number in [1e-05, 10], got 1e-300"), or None."""
        return None if self.contains(v) else f"{key}: must be {self.describe()}, got {v!r}"
