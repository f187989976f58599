"""control.joint_merge.JointStateMerger: one robot's joints from two drivers at different rates, with jitter, phases
and transport delays, against an analytic motion q(t). References: the error bound of linear interpolation and
extrapolation through two samples a, b (|f(t) − L(t)| ≤ max|f''|/2 · |t − a| |t − b|), Pinocchio's M(q) for the
momentum M(q) q̇ the configurations estimate (Johnson2015, eq. 1b) approximates, and the same estimate fed the exact
q(t) as one full-rate driver would be.
"""

import numpy as np
import pinocchio as pin
import pytest

from vi_control.control import intake
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
    for mask, period, jitter, phase, delay in (
        (ARM, 0.002, 0.3, 0.0, (0.0, 0.006)),
        (WRIST, 0.025, 0.2, 0.007, (0.0, 0.008)),
    ):
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
    whether that was an extrapolation, the error a zero-order hold of the newest sample at or before t would have
    had, and the bound of the velocity's error."""
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
        factor, hold, v_bound = np.zeros(2), np.zeros(2), np.zeros(2)
        other = ~mask
        s = sorted(seen[other.tobytes()])
        after = [x for x in s if x >= t]
        # (one sample only, at the start: extrapolated with its velocity — Taylor's bound with a = b)
        a, b = (max(x for x in s if x <= t), after[0]) if after else (s[-2], s[-1]) if len(s) > 1 else (s[0], s[0])
        factor[other] = abs(t - a) * abs(t - b) / 2
        v_bound[other] = (Q3 * factor)[other] if a != b else (Q2 * abs(t - a))[other]
        hold[other] = np.abs(q_of(t) - q_of(max(x for x in s if x <= t)))[other]
        emitted.append((out, factor, not after, hold, v_bound, max(0.0, t - s[-1])))
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
    for s, factor, _, _, v_bound, _ in emitted:
        err, bound = np.abs(s.q - q_of(s.t)), Q2 * factor
        assert np.all(err <= 1.01 * bound + 1e-12), (s.t, err, bound)
        assert np.all(np.abs(s.qdot - qdot_of(s.t)) <= 1.01 * v_bound + 1e-12)
        errors.append(err[1])
        bounds.append(bound[1])
    # streaming, the wrist's joint is mostly extrapolated (its newer sample has not come yet), sometimes interpolated
    assert sum(e[2] for e in emitted) > 0.9 * len(emitted)
    assert max(errors) > 0.1 * max(bounds)  # the bound is not vacuous
    assert max(errors) < 0.25 * max(e[3][1] for e in emitted)  # a zero-order hold: several times worse
    assert merger.counts["partial"] == len(stream)
    # the longest extrapolation: past the wrist's newest sample by up to its period and delay (25 ms ± 20 %, 0–8 ms)
    assert merger.max_extrapolation == max(e[5] for e in emitted) and 0.02 < merger.max_extrapolation < 0.05
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
    assert m.max_extrapolation == 0.0  # (interpolated so far)
    later = m.add(1.030, ARM, q_of(1.030), None)  # past the wrist's newest: extrapolated from its last two
    assert later.q[1] == pytest.approx(q_of(1.0)[1] + (q_of(1.025)[1] - q_of(1.0)[1]) * 1.2, abs=1e-15)
    assert m.max_extrapolation == pytest.approx(0.005, abs=1e-15)  # 5 ms past the wrist's newest sample
    assert m.take_extrapolation() == m.max_extrapolation and m.take_extrapolation() == 0.0  # (a new period)


def test_configuration_estimate_from_merged_states_is_a_full_rate_drivers(vi, rng):
    """Positions only: the configurations estimate (Johnson2015, eq. 1b) of the merged stream against the same estimate
    fed the exact q(t) at the same stamps (one full-rate driver): p differs by at most the merge errors ε of q(t)
    and of the samples q(t − Δt) is interpolated from, through ∂p/∂q ≈ M/Δt (1.5 (ε_t + ε_{t−Δt}) ‖M‖∞ / Δt);
    the full-rate driver's p is M(q) q̇ of the analytic motion to O(Δt)."""
    model = vi.robot.pin_model
    data = model.createData()
    _, emitted = _merge(_stream(rng, 1.0, velocities=False))
    merged, single = StateEstimator(vi, "configurations"), StateEstimator(vi, "configurations")
    eps = [(s.t, float(np.max(Q2 * f))) for s, f, *_ in emitted]  # each merged sample's error bound
    n, worst_single, ratio = 0, 0.0, 0.0
    for (s, *_), (_, eps_t) in zip(emitted, eps):
        assert s.qdot is None
        x, x_ref = merged.update(s.t, s.q, None), single.update(s.t, q_of(s.t), None)
        assert (x is None) == (x_ref is None)
        if x is None:
            continue
        n += 1
        M = pin.crba(model, data, q_of(s.t))
        M = np.triu(M) + np.triu(M, 1).T
        # q(t − Δt) lies between merged samples up to max_gap (50 ms) before it
        eps_before = max(e for t, e in eps if s.t - DT - 0.05 <= t <= s.t)
        bound = 1.5 * (eps_t + eps_before) * np.abs(M).sum(axis=1).max() / DT
        gap = float(np.abs(x[2:] - x_ref[2:]).max())
        assert gap <= bound, (s.t, gap, bound)
        ratio = max(ratio, gap / bound)
        worst_single = max(worst_single, float(np.abs(x_ref[2:] - M @ qdot_of(s.t)).max()))
    assert n > 300 and ratio > 0.1  # (the bound is not vacuous)
    assert worst_single < 0.05


def test_a_silent_driver_gives_no_state_and_names_its_joints():
    """The wrist's driver stops: within max_age its joint is extrapolated, beyond it nothing is emitted and Missing
    names the joint and when it was last seen; the driver back, states resume at once."""
    m = JointStateMerger(NAMES, 0.05)
    for t in (1.00, 1.02):
        m.add(t, WRIST, q_of(t), None)
    assert isinstance(m.add(1.069, ARM, q_of(1.069), None), Sample)  # 49 ms past the newest: extrapolated
    out = m.add(1.0712, ARM, q_of(1.0712), None)
    assert isinstance(out, Missing) and out.joints == ["elbow"] and out.last_seen == pytest.approx(0.0512)
    assert str(out) == "waiting for joint(s) ['elbow'] (last seen 0.051 s ago)"
    assert m.counts == dict(partial=4, waiting=3)  # (the wrist's first two: no arm yet)
    m.add(1.08, WRIST, q_of(1.08), None)  # back, but 60 ms after its previous sample: no slope to go on
    assert isinstance(m.add(1.081, ARM, q_of(1.081), None), Missing)
    m.add(1.09, WRIST, q_of(1.09), None)
    assert isinstance(m.add(1.091, ARM, q_of(1.091), None), Sample)
    m.add(1.20, WRIST, q_of(1.20), qdot_of(1.20))  # after a gap, with its velocity: extrapolated with that
    s = m.add(1.21, ARM, q_of(1.21), None)
    assert s.q[1] == q_of(1.20)[1] + 0.01 * qdot_of(1.20)[1] and s.qdot is None  # (the arm gave no velocity)


def test_overlapping_drivers_the_newest_sample_wins_and_full_messages():
    """Two drivers both publishing the elbow: at a stamp the elbow comes from the driver whose sample of it is
    newest. A message with every joint passes through unchanged (the same arrays) while no partial one came; after
    that it is one more group of the merge."""
    m = JointStateMerger(NAMES, 0.05)
    q, v = q_of(0.5), qdot_of(0.5)
    out = m.add(0.5, None, q, v)
    assert out.q is q and out.qdot is v and not m.active
    both = np.array([True, True])
    m.add(1.000, WRIST, np.array([np.nan, 0.30]), None)  # (partial: from now on a full message is one more group)
    assert m.add(1.001, both, np.array([0.10, 0.41]), None).q.tolist() == [0.10, 0.41]
    m.add(1.010, WRIST, np.array([np.nan, 0.31]), None)
    s = m.add(1.011, both, np.array([0.11, 0.40]), None)  # the arm driver's elbow differs (a miscalibration)
    assert s.q.tolist() == [0.11, 0.40]  # its own sample at 1.011 is the newest elbow
    s = m.add(1.013, WRIST, np.array([np.nan, 0.33]), None)  # now the wrist's is the newest elbow
    assert s.q[1] == 0.33 and s.q[0] == pytest.approx(0.11 + 0.01 * 0.2, abs=1e-14)  # shoulder extrapolated


def test_state_intake_merges_partial_joint_states(vi):
    """The controller's intake on two drivers' messages: a state from the arm and wrist together (the discrete state
    of the merged q − Δt q̇, q), the other joint's entries never read; NaN in a carried joint, wrong sizes: refused
    as before; unstamped: stamped on receipt; the wrist silent beyond the merge age: no new state (Waiting) naming
    it; both drivers' stamps and the clock back together (a simulator reset): the clock-reset path, then estimates
    again."""
    resets = []
    it = intake.StateIntake(
        vi,
        intake.JointLimits(vi.robot, 0.25, 1e4, 1.5, 1e3),
        0.5,
        merge_age=0.05,
        on_clock_back=lambda t, last: resets.append(t),
    )

    def arm(t):  # (the elbow's entries are never read: NaN and a huge velocity prove it)
        return np.array([q_of(t)[0], np.nan]), np.array([qdot_of(t)[0], 9e9])

    def wrist(t):
        return np.array([np.nan, q_of(t)[1]]), np.array([np.nan, qdot_of(t)[1]])

    v = it.joint_state(2.000, *arm(2.000), now=2.0, carried=ARM)
    assert v == intake.Waiting(2.000, "waiting for joint(s) ['elbow'] (not seen in time)")
    assert it.joint_state(2.000, *wrist(2.000), now=2.0, carried=WRIST).t == 2.000  # both at 2.000: exact
    est = it.joint_state(2.010, *arm(2.010), now=2.01, carried=ARM)  # the elbow's only sample: with its velocity
    q1 = np.array([q_of(2.010)[0], q_of(2.000)[1] + 0.01 * qdot_of(2.000)[1]])
    assert est.x == pytest.approx(vi.state_from_configurations(q_of(2.000), q1), abs=1e-12)  # (Δt after 2.000)
    # the wrist's 2.010 after the arm's: 2.010 again, a republished state (the estimate keeps its first 2.010)
    assert isinstance(it.joint_state(2.010, *wrist(2.010), now=2.01, carried=WRIST), intake.Republished)
    est = it.joint_state(2.015, *arm(2.015), now=2.02, carried=ARM)
    assert isinstance(est, intake.Estimate) and est.t == 2.015
    q2 = np.array([q_of(2.015)[0], q_of(2.000)[1] + 1.5 * (q_of(2.010)[1] - q_of(2.000)[1])])
    assert est.x == pytest.approx(vi.state_from_configurations((q_of(2.000) + q1) / 2, q2), abs=1e-12)
    assert it.joint_state(2.016, np.array([0.1, np.nan]), None, now=2.02, carried=WRIST) == intake.Fault(
        intake.FAULT_INVALID_STATE, "joint state positions contain NaN/inf"
    )
    assert it.joint_state(2.016, np.zeros(3), None, now=2.02, carried=WRIST) == intake.Fault(
        intake.FAULT_INVALID_STATE, "joint state has 3 positions for the model's 2"
    )
    assert isinstance(it.joint_state(0.0, *arm(2.02), now=2.02, carried=ARM), intake.Estimate)  # stamped on receipt
    assert it.counts["unstamped"] == 1 and it.state.t == 2.02
    stale = it.joint_state(2.070, *arm(2.070), now=2.07, carried=ARM)  # the wrist's newest is 60 ms old
    assert stale == intake.Waiting(2.070, "waiting for joint(s) ['elbow'] (last seen 0.060 s ago)")
    assert it.state.t == 2.02  # no new state: the last one ages (the controller's state_timeout makes it stale)
    for t in (0.5, 0.51):  # a simulator reset: every driver's stamps and the clock back to 0.5 s
        est = it.joint_state(t, *arm(t), now=t, carried=ARM)
        it.joint_state(t, *wrist(t), now=t, carried=WRIST)
    assert resets == [0.5] and isinstance(est, intake.Estimate) and est.t == 0.51
    assert it.merger.counts["partial"] == 11  # (the two refused before the merge: not counted)


def test_a_continuous_joint_is_interpolated_across_its_wrap_the_short_way():
    """A continuous elbow through ±π: samples π − 0.05 and −π + 0.05 (its driver wraps) 20 ms apart are 0.1 rad of
    motion, not 2π − 0.1 the other way: at the midpoint the elbow is at π (to round-off; ±π are one angle), 10 ms past
    the newest at π + 0.1 − (continued, unwrapped: the estimator's finite difference sees 0.05 rad per 10 ms)."""
    m = JointStateMerger(NAMES, 0.05, np.array([False, True]))
    m.add(1.00, WRIST, np.array([np.nan, np.pi - 0.05]), None)
    m.add(1.00, ARM, np.array([0.2, np.nan]), None)
    m.add(1.02, WRIST, np.array([np.nan, -np.pi + 0.05]), None)
    mid = m.add(1.01, ARM, np.array([0.2, np.nan]), None)
    assert isinstance(mid, Sample) and abs(abs(mid.q[1]) - np.pi) < 1e-12, mid
    ahead = m.add(1.03, ARM, np.array([0.2, np.nan]), None)
    assert ahead.q[1] == pytest.approx(np.pi + 0.1, abs=1e-12)


def test_at_one_stamp_the_message_being_merged_wins_a_joint_two_drivers_carry():
    """Two drivers carrying the elbow with the same stamp (a republish, or two clocks in step): the message being
    merged gives the elbow — the newest arrival of the newest stamp, not whichever driver happened to be first."""
    m = JointStateMerger(NAMES, 0.05)
    both = np.array([True, True])
    m.add(1.000, WRIST, np.array([np.nan, 0.30]), None)
    assert m.add(1.000, both, np.array([0.10, 0.40]), None).q.tolist() == [0.10, 0.40]
    again = m.add(1.000, WRIST, np.array([np.nan, 0.33]), None)  # (the same stamp again: that stamp again)
    assert again.t == 1.000 and again.q.tolist() == [0.10, 0.33]


def test_a_slow_drivers_first_message_finds_the_fast_drivers_samples_around_it():
    """Start-up: the arm's driver (500 Hz) sends 1.000 … 1.014 s while the wrist's first message (stamped 1.001) is
    still in transit — eight arm messages, each waiting for the elbow. When it comes, the first full state is at
    1.001 with the shoulder interpolated between the arm's samples at 1.000 and 1.002, seven newer samples later
    (``_KEEP``: every message within max_age of one still in transit is kept)."""
    m = JointStateMerger(NAMES, 0.05)
    for i in range(8):
        t = 1.000 + 0.002 * i
        assert isinstance(m.add(t, ARM, np.array([0.1 * t, np.nan]), None), Missing)
    s = m.add(1.001, WRIST, np.array([np.nan, 0.5]), np.array([np.nan, 0.0]))
    assert isinstance(s, Sample) and s.t == 1.001, s
    assert s.q[0] == pytest.approx(0.1 * 1.001, abs=1e-15) and s.q[1] == 0.5
