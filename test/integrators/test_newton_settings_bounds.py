"""NewtonSettings' bounds, each at its boundary: max_iterations in [1, 10000]; tolerances positive and finite."""

import math

import pytest

from vi_control.integrators.newton_settings import NewtonSettings


def test_max_iterations_at_its_bounds():
    for n in (1, 10_000):
        assert NewtonSettings(max_iterations=n).max_iterations == n
    for n in (0, 10_001, 2.5):
        with pytest.raises(ValueError, match=r"max_iterations must be an integer in \[1, 10000\]"):
            NewtonSettings(max_iterations=n)


@pytest.mark.parametrize("name", ["tol", "rcond_min", "step_tol", "max_rotation"])
def test_a_tolerance_must_be_positive_and_finite(name):
    assert getattr(NewtonSettings(**{name: 5e-324}), name) == 5e-324  # (the smallest positive double)
    for bad in (0.0, -1e-12, math.inf, math.nan):
        with pytest.raises(ValueError, match=rf"NewtonSettings\.{name} must be a positive finite number"):
            NewtonSettings(**{name: bad})
