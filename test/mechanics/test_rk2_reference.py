"""rk2_midpoint, the explicit reference integrator of the nonholonomic tests (mechanics.lagrange_dalembert), against
closed forms: on ṡ = A s one step multiplies by 1 + hA + (hA)²/2 exactly (the midpoint rule's stability
polynomial), and on the harmonic oscillator the error at t = 1 falls as h² (the order the tests rely on)."""

import numpy as np

from vi_control.mechanics.lagrange_dalembert import rk2_midpoint


def test_one_step_is_the_second_order_taylor_polynomial_of_the_flow():
    A = np.array([[0.0, 1.0], [-4.0, -0.3]])
    s0, h = np.array([0.7, -0.2]), 0.125
    S = rk2_midpoint(lambda t, s: A @ s, s0, h, 3)
    step = np.eye(2) + h * A + 0.5 * (h * A) @ (h * A)
    assert S.shape == (4, 2) and np.array_equal(S[0], s0)
    np.testing.assert_allclose(S[1:], [step @ s0, step @ step @ s0, step @ step @ step @ s0], rtol=1e-14, atol=1e-15)


def test_the_global_error_is_second_order_and_time_dependent_fields_see_the_half_step():
    """The harmonic oscillator ẋ = v, v̇ = −x, and the time-dependent ṡ = cos t (exact: sin t): errors at t = 1 over
    h and h/2 shrink by 4 (±10 %), so the stages' times t and t + h/2 are the ones the rule states."""
    exact = np.array([np.cos(1.0), -np.sin(1.0)])
    errs, errs_t = [], []
    for n in (20, 40):
        S = rk2_midpoint(lambda t, s: np.array([s[1], -s[0]]), np.array([1.0, 0.0]), 1.0 / n, n)
        errs.append(np.abs(S[-1] - exact).max())
        St = rk2_midpoint(lambda t, s: np.array([np.cos(t)]), np.array([0.0]), 1.0 / n, n)
        errs_t.append(abs(St[-1, 0] - np.sin(1.0)))
    assert 3.6 < errs[0] / errs[1] < 4.4, errs
    assert 3.6 < errs_t[0] / errs_t[1] < 4.4, errs_t
