"""The plan's byte layout (vi_control.ros.messages.encode_plan / decode_plan) without DDS: a plan comes back bit for
bit (states, inputs, gains, the hold's input and gain, times t₀ + k·Δt, flags, the sequence number beyond 2^53); a
buffer a byte short or long, a wrong magic, version or model hash is refused by name."""

import numpy as np
import pytest

pytest.importorskip("rclpy")

from vi_control.control.plan import Plan  # noqa: E402
from vi_control.ros.messages import PlanModelMismatch, decode_plan, encode_plan  # noqa: E402

HASH = "0123456789abcdef"


def _plan(converged=True) -> Plan:
    rng = np.random.default_rng(1)
    N, nx, nu = 4, 4, 2
    return Plan(
        times=7.25 + 0.05 * np.arange(N + 1),
        X=rng.normal(size=(N + 1, nx)),
        U=rng.normal(size=(N, nu)),
        K=rng.normal(size=(N, nu, nx)),
        dt=0.05,
        model_name="m",
        model_hash=HASH,
        joint_names=["a", "b"],
        input_names=["a", "b"],
        U_final=rng.normal(size=nu),
        K_final=rng.normal(size=(nu, nx)),
        converged=converged,
    )


@pytest.mark.parametrize("converged, on_receipt", [(True, False), (False, True)])
def test_a_plan_comes_back_bit_for_bit(converged, on_receipt):
    plan, seq = _plan(converged), 2**62 + 12345
    got_seq, got, flags = decode_plan(encode_plan(plan, seq, on_receipt), "m", HASH, ["a", "b"], ["a", "b"])
    assert got_seq == seq and got.converged == converged and bool(flags & 2) == on_receipt
    for name in ("X", "U", "K", "U_final", "K_final"):
        assert np.array_equal(getattr(got, name), getattr(plan, name)), name
    assert got.dt == plan.dt and np.array_equal(got.times, 7.25 + 0.05 * np.arange(5))


def test_a_damaged_or_foreign_buffer_is_refused_by_name():
    buf = encode_plan(_plan(), 3)
    with pytest.raises(ValueError, match=r"plan 3: \d+ data bytes, expected \d+ for N=4, nx=4, nu=2"):
        decode_plan(buf[:-1], "m", HASH, ["a", "b"], ["a", "b"])
    with pytest.raises(ValueError, match=r"plan 3: \d+ data bytes, expected"):
        decode_plan(buf + b"\0", "m", HASH, ["a", "b"], ["a", "b"])
    with pytest.raises(ValueError, match="not a vi_control plan"):
        decode_plan(b"X" + buf[1:], "m", HASH, ["a", "b"], ["a", "b"])
    with pytest.raises(ValueError, match="plan format version 2"):
        decode_plan(buf[:8] + (2).to_bytes(4, "little") + buf[12:], "m", HASH, ["a", "b"], ["a", "b"])
    with pytest.raises(PlanModelMismatch, match="was made for model 0123456789abcdef") as foreign:
        decode_plan(buf, "other", "fedcba9876543210", ["a", "b"], ["a", "b"])
    assert foreign.value.seq == 3  # (the controller's ~/plan_refused names it)
