"""control.joint_merge.JointStateMerger: one robot's joints from two drivers at different rates, with jitter, phases
and transport delays, against an analytic motion q(t). References: the error bound of linear interpolation and
extrapolation through two samples a, b (|f(t) − L(t)| ≤ max|f''|/2 · |t − a| |t − b|), Pinocchio's M(q) for the
momentum M(q) q̇ the configurations estimate (seed 000 eq. 1b) approximates, and the same estimate fed the exact q(t)
as one full-rate driver would be.
"""

import numpy as np
import pinocchio as pin
import pytest

from vi_control.control.intake import FAULT_INVALID_STATE, FAULT_STALE, Estimate, Fault, JointLimits, StateIntake
from vi_control.control.joint_merge import JointStateMerger, Missing, Sample
from vi_control.control.tracking import StateEstimator
from vi_control.integrators.midpoint import MidpointVI
from vi_control.model.bundled import load_bundled

DT = 0.01
NAMES = ["shoulder", "elbow"]
ARM, WRIST = np.array([True, False]), np.array([False, True])
# q(t) = (0.3 sin 2t + 0.1, 0.5 cos 3t): |q''| ≤ (1.2, 4.5), |q'''| ≤ (2.4, 13.5)
Q2, Q3 = np.array([1.2, 4.5]), np.array([2.4, 13.5])


def q_of(t: float) -> np.ndarray:
    return np.array([0.3 * np.sin(2 * t) + 0.1, 0.5 * np.cos(3 * t)])


def qdot_of(t: float) -> np.ndarray:
    return np.array([0.6 * np.cos(2 * t), -1.5 * np.sin(3 * t)])


@pytest.fixture(scope="module")
def vi():
    return MidpointVI(load_bundled("double_pendulum"), DT)


def _stream(rng, duration: float, velocities: bool):
    """Messages of two drivers in order of arrival: the arm (shoulder) at 500 Hz ± 30 %, the wrist (elbow) at
    40 Hz ± 20 % from phase 7 ms; each delivered 0–3 ms (arm) or 2–12 ms (wrist) after its stamp, so the wrist's
    arrive after newer arm messages. Entries: (arrival, stamp, carried mask, q, q̇ or None)."""
    out = []
    for mask, period, jitter, phase, delay in ((ARM, 0.002, 0.3, 0.0, (0.0, 0.006)),
                                               (WRIST, 0.025, 0.2, 0.007, (0.0, 0.008))):
        t = 1.0 + phase
        while t < 1.0 + duration:
            q = np.where(mask, q_of(t), np.nan)  # the other joint's entry is never read: NaN proves it
            v = np.where(mask, qdot_of(t), np.nan) if velocities else None
            out.append((t + rng.uniform(*delay), t, mask, q, v))
            t += period * (1.0 + jitter * rng.uniform(-1.0, 1.0))
    return sorted(out, key=lambda m: m[0])


def _merge(stream, max_age: float = 0.05):
    """Feed the stream; the emitted samples with, per joint, |t − a| |t − b| / 2 for the pair (a, b) of its driver's
    samples the merger must use — the two around t, else the last two (0 where the message itself carried it) —,
    whether that was an extrapolation, and the error a zero-order hold of the newest sample at or before t would
    have had."""
    merger = JointStateMerger(NAMES, max_age, np.array([True, True]))
    seen = {ARM.tobytes(): [], WRIST.tobytes(): []}
    emitted = []
    for _, t, mask, q, v in stream:
        seen[mask.tobytes()].append(t)
        out = merger.add(t, mask, q, v)
        if isinstance(out, Missing):
            merger.missing_at = getattr(merger, "missing_at", []) + [t]
        if not isinstance(out, Sample):
            continue
        factor, extrapolated, hold = np.zeros(2), False, np.zeros(2)
        other = ~mask
        s = sorted(seen[other.tobytes()])
        after = [x for x in s if x >= t]
        a, b = (max(x for x in s if x <= t), after[0]) if after else (s[-2], s[-1])
        factor[other] = abs(t - a) * abs(t - b) / 2
        hold[other] = np.abs(q_of(t) - q_of(max(x for x in s if x <= t)))[other]
        emitted.append((out, factor, not after, hold))
    return merger, emitted


def test_merged_joint_states_are_the_motion_to_the_linear_interpolation_bound(rng):
    """Every emitted sample: q(t) and q̇(t) within the interpolation/extrapolation bound of the other driver's
    samples, stamps strictly increasing although the wrist's messages arrive after newer arm messages; both
    interpolation and extrapolation occurred, and the error is far below a zero-order hold's."""
    stream = _stream(rng, 1.0, velocities=True)
    merger, emitted = _merge(stream)
    # (an arm message delivered after a newer one is only recorded: 0–6 ms delays at 2 ms periods)
    assert len(emitted) > 0.6 * sum(1 for m in stream if m[2][0])
    assert np.all(np.diff([e[0].t for e in emitted]) > 0)
    errors, bounds = [], []
    for s, factor, _, _ in emitted:
        err, bound = np.abs(s.q - q_of(s.t)), Q2 * factor
        assert np.all(err <= 1.01 * bound + 1e-12), (s.t, err, bound)
        assert np.all(np.abs(s.qdot - qdot_of(s.t)) <= 1.01 * Q3 * factor + 1e-12)
        errors.append(err[1])
        bounds.append(bound[1])
    # streaming, the wrist's joint is mostly extrapolated (its newer sample has not come yet), sometimes interpolated
    assert sum(e[2] for e in emitted) > 0.9 * len(emitted)
    assert max(errors) > 0.1 * max(bounds)  # the bound is not vacuous
    assert max(errors) < 0.25 * max(e[3][1] for e in emitted)  # a zero-order hold: several times worse
    assert merger.counts["partial"] == len(stream)
    second_wrist = sorted(t for _, t, m, _, _ in stream if m[1])[1]
    assert len(merger.missing_at) == merger.counts["waiting"] > 0
    assert max(merger.missing_at) < second_wrist  # only until the wrist's driver had spoken twice


def test_interpolation_out_of_order_and_the_same_stamp_again():
    """The wrist's samples at 1.000 and 1.025 s arrive before the arm's at 1.010: the elbow is interpolated between
    them (to the bound); the arm's 1.005 arriving next is older than what was emitted: recorded, nothing emitted;
    1.010 again gives 1.010 again (a republished state), never a step back."""
    m = JointStateMerger(NAMES, 0.05)
    for t in (1.000, 1.025):
        out = m.add(t, WRIST, q_of(t), None)
        assert isinstance(out, Missing) and out.joints == ["shoulder"] and out.last_seen is None
        assert str(out) == "waiting for joint(s) ['shoulder'] (not seen in time)"
    s = m.add(1.010, ARM, q_of(1.010), None)
    assert isinstance(s, Sample) and s.t == 1.010 and s.qdot is None  # (no driver gave velocities)
    assert s.q[0] == q_of(1.010)[0]
    expected = q_of(1.0)[1] + (q_of(1.025)[1] - q_of(1.0)[1]) * 0.010 / 0.025
    assert s.q[1] == pytest.approx(expected, abs=1e-15)
    assert abs(s.q[1] - q_of(1.010)[1]) <= Q2[1] * 0.010 * 0.015 / 2
    assert m.add(1.005, ARM, q_of(1.005), None) is None
    again = m.add(1.010, ARM, q_of(1.010), None)
    assert again.t == 1.010 and np.array_equal(again.q, s.q)
    later = m.add(1.030, ARM, q_of(1.030), None)  # past the wrist's newest: extrapolated from its last two
    assert later.q[1] == pytest.approx(q_of(1.0)[1] + (q_of(1.025)[1] - q_of(1.0)[1]) * 1.2, abs=1e-15)
