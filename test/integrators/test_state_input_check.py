"""integrators.base.check_state_input, the one input check of every integrator, through the pendulum's step: an
omitted input is zero torque, a list or an (nu, 1) column is the same input, and complex, wrong-sized or NaN inputs
are refused by name."""

import numpy as np
import pytest


def test_omitted_list_and_column_inputs_are_the_same_step(pendulum_vi):
    vi = pendulum_vi
    x = vi.state_from_velocity(np.array([0.3]), np.array([-0.2]))
    assert np.array_equal(vi.step(x), vi.step(x, np.zeros(vi.nu)))
    u = np.array([1.5])
    ref = vi.step(x, u)
    assert not np.array_equal(ref, vi.step(x))
    assert np.array_equal(vi.step(x, [1.5]), ref) and np.array_equal(vi.step(x, u.reshape(1, 1)), ref)


@pytest.mark.parametrize(
    "u, match",
    [
        (np.array([1.0 + 0.5j]), "complex"),
        (np.array([1.0, 2.0]), r"input has size 2, expected 1 \(1 torques \+ 0 prescribed positions\)"),
        (np.array([np.nan]), "NaN/inf"),
    ],
)
def test_bad_inputs_are_refused_by_name(pendulum_vi, u, match):
    vi = pendulum_vi
    with pytest.raises((ValueError, TypeError), match=match):
        vi.step(vi.state_from_velocity(np.array([0.3]), np.array([0.0])), u)


def test_a_step_beyond_the_supported_configuration_range_is_refused_naming_the_joint(pendulum_vi):
    """check_step: q_{k+1} beyond ±MAX_CONFIGURATION is a root the integrator does not vouch for (cos and sin of
    such angles carry few digits): refused naming the joint and the range; a step that stays inside is taken."""
    from vi_control.integrators.base import UntrustedStepError
    from vi_control.model.limits import MAX_CONFIGURATION

    vi = pendulum_vi
    inside = vi.state_from_velocity(np.array([MAX_CONFIGURATION - 1.0]), np.array([1.0]))
    assert abs(vi.step(inside)[0]) <= MAX_CONFIGURATION
    edge = vi.state_from_velocity(np.array([MAX_CONFIGURATION - 1e-3]), np.array([1.0]))
    with pytest.raises(UntrustedStepError, match=r"joint 'theta' would reach q = 1e\+06, beyond the supported range"):
        vi.step(edge)
