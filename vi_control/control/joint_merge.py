"""One robot's joints from several drivers' joint states: partial messages merged into full samples (t, q, q̇).

Real robots often publish their joints from two drivers on one ``joint_states`` topic (an arm and a wrist or gripper
driver, a mobile base and an arm), each at its own rate with its own stamps. A *group* is the set of model joints one
message carries. At the stamp t of each message the other groups' joints are *interpolated* between their two samples
that bracket t, or extrapolated linearly from their last two samples when t is past their newest: a zero-order hold of a
slow driver's joints would put steps into the finite difference of q(t) and q(t − Δt) that the configurations estimate
takes (``tracking.StateEstimator``). The two samples used must be at most ``max_age`` apart and t at most ``max_age``
past the newer one; a driver with only one such sample (its first, or its first after a gap) is extrapolated with the
velocity it measured, if it sends velocities. Otherwise the joint is missing and nothing is emitted (``Missing`` names
the joints and how long ago they were last seen). Velocities are merged only if every group used gives them (else None:
the estimate takes positions). A joint carried by several groups (two drivers publishing it) takes the value of the
group with the newest sample. Continuous joints are interpolated on the circle.

Emitted stamps never go back: a message older than the last emitted stamp (drivers' messages arrive out of stamp order)
is only recorded; one at that stamp again gives that stamp again (a republished state). A group whose own stamps go back
by more than ``max_age`` (a simulator reset) starts every group afresh. While no partial message has come, a message
with every joint passes through unchanged (the same arrays: bit-identical to no merger at all). ROS-free: the
controller's ``intake.StateIntake`` and the planner node feed it decoded messages.
"""

from __future__ import annotations

from bisect import insort
from typing import NamedTuple

import numpy as np

from ..model.robot import wrap_angle

# Samples kept per group. Once a state was emitted, a message older than it is only recorded, so older samples matter
# only before the first state (or after a gap): a slow driver's first message then finds the fast driver's samples
# around it if at most 7 came after (14 ms of a 500 Hz driver); later, the first state waits for its next message.
_KEEP = 8


class Sample(NamedTuple):
    """A full joint state: stamp t [s], positions q (nq,) and velocities q̇ (nq,) or None, in model order."""

    t: float
    q: np.ndarray
    qdot: np.ndarray | None


class Missing(NamedTuple):
    """No full sample at stamp t: these model joints have no recent enough samples; ``last_seen`` [s before t] of
    the freshest sample of any of them (None: never seen, or only after t)."""

    t: float
    joints: list[str]
    last_seen: float | None

    def __str__(self) -> str:
        seen = f"last seen {self.last_seen:.3f} s ago" if self.last_seen is not None else "not seen in time"
        return f"waiting for joint(s) {self.joints} ({seen})"


class _Group:
    """The samples of one set of joints (``idx``: their model indices), sorted by stamp."""

    def __init__(self, idx: np.ndarray, mask: np.ndarray):
        self.idx, self.mask = idx, mask
        self.samples: list[tuple[float, np.ndarray, np.ndarray | None]] = []

    @property
    def newest(self) -> float:
        return self.samples[-1][0]

    def record(self, t: float, q: np.ndarray, qdot: np.ndarray | None) -> None:
        s = self.samples
        if s and s[-1][0] == t:  # the same stamp again: the newer message replaces it
            s.pop()
        insort(s, (t, q, qdot), key=lambda e: e[0])
        del s[:-_KEEP]

    def at(self, t: float, max_age: float) -> tuple[np.ndarray, np.ndarray | None] | None:
        """(q, q̇ or None) of this group's joints at t (module docstring), or None: no usable samples."""
        s = self.samples
        i = next((k for k in range(len(s) - 1, -1, -1) if s[k][0] <= t), None)
        if i is None:
            return None
        t_i, q_i, v_i = s[i]
        if t_i == t:
            return q_i, v_i
        a, b = (s[i], s[i + 1]) if i + 1 < len(s) else (s[i - 1], s[i]) if i > 0 else (None, None)
        if a is not None and b[0] - a[0] <= max_age and t - b[0] <= max_age:
            w = (t - a[0]) / (b[0] - a[0])  # > 1: extrapolated past the newest sample
            d = b[1] - a[1]
            d[self.mask] = wrap_angle(d[self.mask])
            qdot = a[2] + w * (b[2] - a[2]) if a[2] is not None and b[2] is not None else None
            return a[1] + w * d, qdot
        if v_i is not None and t - t_i <= max_age:  # one recent sample (a driver's first): its own velocity
            return q_i + (t - t_i) * v_i, v_i
        return None


class JointStateMerger:
    """Partial joint states → full samples (module docstring). ``joint_names``: the model's joints (its order);
    ``max_age`` [s]: bound on the samples an interpolation or extrapolation uses (assign it to change it);
    ``continuous``: mask of continuous joints (interpolated modulo 2π). ``counts``: partial messages received
    (``partial``) and those that found a joint missing (``waiting``), for diagnostics; ``max_extrapolation`` [s]:
    the longest a merged sample's joints were extrapolated past their group's newest sample (the timeliness of the
    slowest driver: its own period, plus its delay), in total and since ``take_extrapolation()``."""

    def __init__(self, joint_names: list[str], max_age: float = 0.05, continuous: np.ndarray | None = None):
        self.names = list(joint_names)
        self.max_age = float(max_age)
        self.continuous = np.zeros(len(self.names), bool) if continuous is None else np.asarray(continuous, bool)
        self.counts = dict(partial=0, waiting=0)
        self.max_extrapolation = self._period_extrapolation = 0.0
        self.reset()

    def reset(self) -> None:
        """Forget every sample (a node that (re)starts)."""
        self._groups: dict[bytes, _Group] = {}
        self.last: float | None = None

    def take_extrapolation(self) -> float:
        """The longest extrapolation [s] since the last call (0: none), and start the next period."""
        out, self._period_extrapolation = self._period_extrapolation, 0.0
        return out

    @property
    def active(self) -> bool:
        """Whether partial messages have come (from then on, full ones are merged as one more group)."""
        return bool(self._groups)

    def add(
        self, t: float, carried: np.ndarray | None, q: np.ndarray, qdot: np.ndarray | None
    ) -> Sample | Missing | None:
        """One decoded message stamped ``t``: ``carried`` the mask (nq,) of model joints it has (None: all),
        ``q`` and ``qdot`` (None: no velocities) in model order, read only where ``carried``. A full ``Sample``,
        ``Missing``, or None: recorded only (older than the last emitted stamp)."""
        if carried is None or carried.all():
            if not self._groups:
                self.last = t
                return Sample(t, q, qdot)
            carried = np.ones(len(self.names), bool)
        else:
            self.counts["partial"] += 1
        key = carried.tobytes()
        group = self._groups.get(key)
        if group is not None and t < group.newest - self.max_age:  # its stamps went back: a reset, all afresh
            self.reset()
            group = None
        if group is None:
            idx = np.flatnonzero(carried)
            group = self._groups[key] = _Group(idx, self.continuous[idx])
        group.record(t, q[group.idx].copy(), None if qdot is None else qdot[group.idx].copy())
        if self.last is not None and t < self.last:
            return None
        return self._compose(t, group)

    def _compose(self, t: float, trigger: _Group) -> Sample | Missing:
        nq = len(self.names)
        q, qdot = np.empty(nq), np.empty(nq)
        covered, velocities, ahead = np.zeros(nq, bool), True, np.zeros(nq)  # ahead: t − its group's newest stamp
        # the newest sample of a joint wins: groups in order of their newest stamp, the message's own last
        for g in sorted(self._groups.values(), key=lambda g: (g.newest, g is trigger)):
            value = g.at(t, self.max_age)
            if value is None:
                continue
            q[g.idx], covered[g.idx], ahead[g.idx] = value[0], True, t - g.newest
            if value[1] is None:
                velocities = False
            else:
                qdot[g.idx] = value[1]
        if not covered.all():
            self.counts["waiting"] += 1
            missing = ~covered
            seen = [t - g.newest for g in self._groups.values() if missing[g.idx].any() and g.newest <= t]
            return Missing(t, [n for n, m in zip(self.names, missing) if m], min(seen) if seen else None)
        self.last = t
        longest = float(ahead.max())
        if longest > self._period_extrapolation:
            self._period_extrapolation = longest
            self.max_extrapolation = max(self.max_extrapolation, longest)
        return Sample(t, q, qdot if velocities else None)
