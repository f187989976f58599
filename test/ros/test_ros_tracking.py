"""The control law and message layer behind the ROS nodes, without DDS."""

import numpy as np
import pytest
from scipy.linalg import solve_discrete_are

from vi_control.control.plan import Plan, state_error
from vi_control.control.tracking import StateEstimator, TrackingController, safe_command
from vi_control.integrators.base import ConfigurationMomentumState
from vi_control.linearization import linearize


def _hold_upright_plan(vi, N: int = 60) -> Plan:
    """Plan that holds the pendulum upright (θ = π, u = 0) with the infinite-horizon LQR gain from scipy's DARE."""
    x_up = np.array([np.pi, 0.0])
    lin = linearize(vi, x_up, np.zeros(1))
    Q, R = np.diag([10.0, 1.0]), np.eye(1)
    P = solve_discrete_are(lin.A, lin.B, Q, R)
    K = np.linalg.solve(R + lin.B.T @ P @ lin.B, lin.B.T @ P @ lin.A)  # u = U + K (X − x)
    return Plan(
        times=np.arange(N + 1) * vi.dt,
        X=np.tile(x_up, (N + 1, 1)),
        U=np.zeros((N, 1)),
        K=np.tile(K, (N, 1, 1)),
        dt=vi.dt,
        model_name="pendulum",
        model_hash=vi.robot.hash,
        joint_names=["theta"],
        input_names=["theta"],
    )


def test_state_difference_compares_continuous_angles_modulo_2pi():
    e = state_error(np.array([np.pi, 0.3]), np.array([-np.pi + 0.01, 0.1]), np.array([True]))
    assert e == pytest.approx([-0.01, 0.2])
    # a non-continuous joint keeps the plain difference
    e = state_error(np.array([np.pi, 0.0]), np.array([-np.pi + 0.01, 0.0]), np.array([False]))
    assert e[0] == pytest.approx(2 * np.pi - 0.01)
    # the integrator's state space is the universal cover: its diff is plain, integrate inverts it
    st = ConfigurationMomentumState(1, np.array([True]))
    x_ref, x = np.array([np.pi, 0.3]), np.array([-np.pi + 0.01, 0.1])
    assert np.array_equal(st.diff(x, x_ref), x_ref - x)
    assert np.array_equal(st.integrate(x, st.diff(x, x_ref)), x + (x_ref - x))


def test_tracking_controller_stabilizes_upright_where_open_loop_falls(pendulum_vi):
    vi = pendulum_vi
    ctrl = TrackingController(_hold_upright_plan(vi), vi.state, np.array([50.0]))
    x_cl = x_ol = vi.state_from_velocity(np.array([np.pi - 0.2]), np.array([0.3]))
    worst_ol = 0.0
    for k in range(80):  # also past the horizon: K_final defaults to the last gain
        x_cl = vi.step(x_cl, ctrl.command(k, x_cl)[0])
        x_ol = vi.step(x_ol, ctrl.reference(k)[1])
        worst_ol = max(worst_ol, abs(state_error(np.array([np.pi]), x_ol[:1], np.array([True]))[0]))
    assert abs(state_error(np.array([np.pi]), x_cl[:1], np.array([True]))[0]) < 1e-3
    assert abs(x_cl[1]) < 1e-3
    assert worst_ol > 3.0  # open loop falls through the bottom


def test_tracking_controller_uses_modular_error_and_clamps(pendulum_vi):
    vi = pendulum_vi
    ctrl = TrackingController(_hold_upright_plan(vi), vi.state, np.array([0.5]))
    # θ = −π + 0.05 is 0.05 rad past upright: a small correcting torque, not a 2π swing
    u_wrapped, _ = ctrl.command(0, np.array([-np.pi + 0.05, 0.0]))
    u_plain, _ = ctrl.command(0, np.array([np.pi + 0.05, 0.0]))
    assert u_wrapped == pytest.approx(u_plain, abs=1e-12)
    u, clamped = ctrl.command(0, np.array([np.pi - 1.0, 0.0]))
    assert clamped and abs(u[0]) == pytest.approx(0.5)
    # nearest sample: 7.4·Δt → 7 and 7.6·Δt → 8 (truncation agrees with rounding only at the first), and an
    # on-grid stamp with round-off below it (0.7 / 0.1 = 6.999…) is still step 7
    assert ctrl.index(ctrl.plan.times[0] + 7.4 * vi.dt) == 7 and ctrl.index(ctrl.plan.times[0] + 7.6 * vi.dt) == 8
    assert ctrl.index(ctrl.plan.times[0] + 0.7) == 7


def test_state_from_configurations_recovers_simulated_momenta(pendulum_vi, rng):
    """p_{k} = D₂L_d(q_{k−1}, q_k) holds exactly along a forced trajectory (F⁺_d = 0, Johnson2015, eq. 1b)."""
    vi = pendulum_vi
    X, _ = vi.simulate(np.array([0.4, 0.2]), rng.normal(0, 1, (10, 1)))
    est = StateEstimator(vi, "configurations")
    assert est.update(0.0, X[0, :1], None) is None  # one sample, no velocity: nothing to say
    for k in range(1, 11):
        shift = 2 * np.pi * (k % 2)  # a 2π wrap between samples must not matter
        x = est.update(k * vi.dt, X[k, :1] + shift, None)
        assert x[1] == pytest.approx(X[k, 1], abs=1e-10)
    # samples not one Δt apart fall back to the measured velocity: p = m l² q̇ − (Δt/2) m g l sin q (the m = l = 1
    # pendulum; without a measured effort the holding torque stands in for the applied one), the inverse of the
    # wire's q̇_k = M⁻¹(p_k + (Δt/2)τ)
    q, qd = X[10, 0], vi.velocity(X[10])[0]
    x = est.update(20 * vi.dt, X[10, :1], np.array([qd]))
    assert x[1] == pytest.approx(qd - vi.dt / 2 * 9.8 * np.sin(q), abs=1e-12)


def test_safe_command_damping_opposes_velocity_and_is_limited():
    lim = np.array([1.0, 1.0])
    assert safe_command("damping", np.array([0.5, -5.0]), np.array([1.0, 1.0]), lim) == pytest.approx([-0.5, 1.0])
    assert safe_command("damping", np.array([np.nan, 0.0]), np.ones(2), lim) == pytest.approx([0.0, 0.0])
    assert safe_command("zero", np.array([3.0, 3.0]), np.ones(2), lim) == pytest.approx([0.0, 0.0])


def test_plan_message_round_trips_exactly_and_is_validated(pendulum_vi, rng):
    """One UInt8MultiArray per plan (ros.messages layout v1): exact round trip, header fields first-class,
    every malformed or foreign message refused with a reason; a reader without a model hash of its own takes any
    model's."""
    messages = pytest.importorskip("vi_control.ros.messages")
    import struct

    plan = _hold_upright_plan(pendulum_vi, N=7).shifted(1234.5)
    plan.X = plan.X + rng.normal(0, 1, plan.X.shape)
    plan.U = rng.normal(0, 1, plan.U.shape)
    plan.K_final, plan.U_final = rng.normal(0, 1, (1, 2)), np.array([0.25])
    plan.converged = False
    msg = messages.plan_to_message(plan, 1234567890123, start_on_receipt=True)
    assert [d.label for d in msg.layout.dim] == [messages.PLAN_FORMAT]
    raw = bytes(msg.data)
    # the documented header, read independently of decode_plan
    magic, version, flags, seq, h, N, nx, nu, ndx, dt, t0 = struct.unpack_from("<8sIIQ16sIIIIdd", raw)
    assert (magic, version, seq, h.decode(), N, nx, nu, ndx, dt, t0) == (
        b"VIPLAN\0\0",
        1,
        1234567890123,
        plan.model_hash,
        7,
        2,
        1,
        2,
        plan.dt,
        1234.5,
    )
    assert flags == messages.FLAG_START_ON_RECEIPT  # not converged, start on receipt
    assert len(raw) == 72 + 8 * (8 * 2 + 7 * 1 + 7 * 2 + 1 + 2)
    h = plan.model_hash
    seq, back, flags = messages.plan_from_message(msg, "pendulum", h, ["theta"], ["theta"])
    assert seq == 1234567890123 and back.model_hash == h and not back.converged
    assert flags & messages.FLAG_START_ON_RECEIPT
    for name in ("X", "U", "K", "K_final", "U_final"):
        np.testing.assert_array_equal(getattr(back, name), getattr(plan, name))
    np.testing.assert_allclose(back.times, plan.times, rtol=0, atol=1e-12)
    assert back.dt == plan.dt
    # a plan made for another model is refused by name; malformed ones name what is wrong
    with pytest.raises(messages.PlanModelMismatch, match="made for model"):
        messages.plan_from_message(msg, "cartpole", "0123456789abcdef", ["theta"], ["theta"])
    bad = {
        "fewer than": raw[:40],
        "not a vi_control plan": b"X" + raw[1:],
        "format version 2": raw[:8] + struct.pack("<I", 2) + raw[12:],
        "data bytes": raw[:-8],
        "not finite": raw[:-8] + struct.pack("<d", float("inf")),
        "dt = -0.1": raw[:56] + struct.pack("<d", -0.1) + raw[64:],
        "t0 = nan": raw[:64] + struct.pack("<d", float("nan")) + raw[72:],
        "t0 = inf": raw[:64] + struct.pack("<d", float("inf")) + raw[72:],
        "N >= 1": raw[:40] + struct.pack("<I", 0) + raw[44:],
    }
    for why, data in bad.items():
        with pytest.raises(ValueError, match=why):
            messages.decode_plan(data, "pendulum", h, ["theta"], ["theta"])
    # a node without a model hash of its own (a recorder, a viewer) reads a plan of any model
    assert messages.decode_plan(raw, "any", "", ["theta"], ["theta"])[1].model_hash == h
    msg.layout.dim[0].label = "gains"
    with pytest.raises(ValueError, match="layout labels"):
        messages.plan_from_message(msg, "pendulum", h, ["theta"], ["theta"])
    uneven = _hold_upright_plan(pendulum_vi, N=3)
    uneven.times = np.array([0.0, 0.1, 0.25, 0.3])
    with pytest.raises(ValueError, match="not uniform"):
        messages.encode_plan(uneven, 1)


def test_raw_joint_state_reader_equals_rclpy_deserialization(rng):
    """The controller's hot path reads serialized JointStates in place (messages.RawJointStateReader): same
    positions, velocities and stamps as rclpy's own deserialization, for permuted and extra joints, missing or
    present velocities and efforts, any frame_id length; malformed bytes and missing joints are ValueErrors."""
    pytest.importorskip("rclpy")
    from rclpy.serialization import deserialize_message, serialize_message
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray

    from vi_control.ros.messages import JointStateReader, RawFloat64MultiArray, RawJointStateReader, command_stamp

    joints = ["a", "elbow", "wrist_3_joint"]
    raw, ref = RawJointStateReader(joints), JointStateReader(joints)
    for trial in range(200):
        names = list(rng.permutation(joints + ["x" * int(rng.integers(0, 6)) + "extra"]))
        m = JointState(name=names, position=rng.normal(size=len(names)).tolist())
        if rng.random() < 0.6:
            m.velocity = rng.normal(size=len(names)).tolist()
        if rng.random() < 0.3:
            m.effort = rng.normal(size=len(names)).tolist()
        m.header.frame_id = "f" * int(rng.integers(0, 9))
        m.header.stamp.sec, m.header.stamp.nanosec = int(rng.integers(0, 2**31 - 1)), int(rng.integers(0, 10**9))
        buf = serialize_message(m)
        t, has_v = raw.read_raw(buf)
        assert has_v == ref.read(deserialize_message(buf, JointState)), trial
        assert np.array_equal(raw.q, ref.q) and (not has_v or np.array_equal(raw.qdot, ref.qdot)), trial
        assert t == m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec
        assert raw.stamp == (m.header.stamp.sec, m.header.stamp.nanosec)  # exact: what a command answering it names
    with pytest.raises(ValueError, match="lacks joint"):
        raw.read_raw(serialize_message(JointState(name=["a"], position=[0.0])))
    with pytest.raises(ValueError, match="malformed"):
        raw.read_raw(buf[:30])
    # velocities not one per name (a driver's extra entry) are none: both readers; NaN positions are refused by both
    m = JointState(name=joints, position=[0.1, 0.2, 0.3], velocity=[1.0, 2.0, 3.0, 4.0])
    assert raw.read_raw(serialize_message(m))[1] is False and ref.read(m) is False
    m = JointState(name=joints, position=[0.1, float("nan"), 0.3])
    for read in (lambda: raw.read_raw(serialize_message(m)), lambda: ref.read(m)):
        with pytest.raises(ValueError, match="positions contain NaN/inf"):
            read()
    for n in (0, 1, 7):  # the preserialized command message, naming the joint state it answers
        cmd = RawFloat64MultiArray(n)
        cmd.data[:] = np.arange(n) + 0.5
        for sec, nsec in ((12, 300_000_000), (1_795_469_000, 5), (-(2**31), 999_999_999), (0, 0)):
            cmd.set_stamp(sec, nsec)
            msg = deserialize_message(bytes(cmd), Float64MultiArray)
            assert msg.data.tolist() == (np.arange(n) + 0.5).tolist()
            assert command_stamp(msg) == (sec, nsec) and (msg.layout.dim[0].size, msg.layout.dim[0].stride) == (n, n)
    assert command_stamp(Float64MultiArray(data=[1.0])) is None  # a command from another tool names no state
