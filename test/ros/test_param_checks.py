"""A node parameter's own checks without a node (vi_control.ros.common.Param): the choices, finiteness, and at
start-up the declared type and range — each at its boundary."""

import math

import pytest

pytest.importorskip("rclpy")

from vi_control.ros.common import Param  # noqa: E402


def test_a_double_is_finite_and_in_its_range():
    p = Param(1.0, "a gain", range=(0.0, 10.0))
    assert p.check("gain", 10.0) is None and p.refusal("gain", 10.0) is None
    assert (
        p.refusal("gain", math.nextafter(10.0, 11.0)) == f"gain must be in [0, 10], got {math.nextafter(10.0, 11.0)!r}"
    )
    for bad in (math.nan, math.inf, -math.inf):
        assert p.check("gain", bad) == f"gain must be finite, got {bad!r}"
    assert p.refusal("gain", 3) == "gain must be of the declared type float, got 3"  # (rclpy converts none)


def test_a_string_is_one_of_its_choices():
    p = Param("hold", "the safe mode", choices=("hold", "zero"))
    assert p.check("safe_mode", "zero") is None
    assert p.check("safe_mode", "brake") == "safe_mode must be one of ['hold', 'zero'], got 'brake'"
    assert Param("x", "free text").check("name", "anything") is None  # (no choices: any string)
