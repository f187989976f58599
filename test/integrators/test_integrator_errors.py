"""Failures of a step are specific (DESIGN principle 7): ConvergenceError, SingularityError, ValueError.

The spherical pendulum of Johnson2015, §VII-A (urdf/spherical_pendulum.urdf, q = (φ, θ), m = r = 1,
g = 9.8) has det M_{k+1} = m²r³/(4Δt²) sin²((θ_k+θ_{k+1})/2)·[Δt² g cos((θ_k+θ_{k+1})/2)
+ r(2 + cos(θ_k+θ_{k+1}))(φ_k−φ_{k+1})² + 4r] (eq. 34): singular when θ_k + θ_{k+1} = nπ.
"""

import numpy as np
import pytest
from midpoint_newton_oracle import solve_numpy
from test_integrator_pendulum import eq6a_newton, eq6a_residual

from vi_control.integrators.midpoint import ConvergenceError, MidpointVI, SingularityError
from vi_control.mechanics.discrete import NEWTON_NOT_CONVERGED
from vi_control.model import load_robot
from vi_control.model.bundled import bundled_config, bundled_urdf

G = 9.8


def test_newton_iteration_limit_raises_convergence_error_with_residual(pendulum_robot):
    """max_iterations = 1 on the REFERENCE §1 step: the reported residual is |eq. 6a| after exactly one
    Newton update from θ_k + Δt p_k (the scalar Newton of test_integrator_pendulum)."""
    vi = MidpointVI(pendulum_robot, 0.1, max_iterations=1)
    with pytest.raises(ConvergenceError) as info:
        vi.step(np.array([0.2, 0.5]), np.array([0.8]), step_index=7)
    err = info.value
    theta1, _ = eq6a_newton(0.2, 0.5, 0.8, 0.1, iterations=1)
    assert (err.step, err.iterations) == (7, 1)
    assert err.residual == pytest.approx(abs(eq6a_residual(theta1, 0.2, 0.5, 0.8, 0.1)), rel=1e-6)
    assert err.residual > 1e-9
    assert "step 7" in str(err)


def test_convergence_error_names_the_failing_step_of_a_rollout(pendulum_robot):
    """Three Newton iterations reach tol = 1e-12 on the gentle steps, not on a 300 N·m kick at step 3."""
    vi = MidpointVI(pendulum_robot, 0.1, max_iterations=3)
    U = np.zeros((6, 1))
    U[3] = 300.0
    with pytest.raises(ConvergenceError) as info:
        vi.simulate(np.array([0.2, 0.5]), U)
    assert info.value.step == 3
    X, _ = vi.simulate(np.array([0.2, 0.5]), U[:3])  # the steps before it are fine
    assert X.shape == (4, 2)


@pytest.fixture(scope="module")
def spherical():
    return load_robot(bundled_urdf("spherical_pendulum"), bundled_config("spherical_pendulum"))


def eq34_det(q0: np.ndarray, q1: np.ndarray, dt: float, m: float = 1.0, r: float = 1.0) -> float:
    (phi0, th0), (phi1, th1) = q0, q1
    s = th0 + th1
    return (
        m**2
        * r**3
        / (4 * dt**2)
        * np.sin(s / 2) ** 2
        * (dt**2 * G * np.cos(s / 2) + r * (2 + np.cos(s)) * (phi0 - phi1) ** 2 + 4 * r)
    )


def test_spherical_pendulum_newton_jacobian_is_eq34(spherical, rng):
    """∂R/∂q_{k+1} of the DEL residual is M_{k+1} = D₂D₁L_d; its determinant is eq. 34 (joint order
    (φ, θ) permutes rows and columns alike, which leaves the determinant unchanged)."""
    dt = 0.05
    vi = MidpointVI(spherical, dt)
    for _ in range(10):
        q0, q1, p0 = rng.uniform(-3, 3, 2), rng.uniform(-3, 3, 2), rng.uniform(-2, 2, 2)
        _, J = vi.functions["residual"](q1, np.concatenate([q0, p0]))
        assert np.linalg.det(np.array(J)) == pytest.approx(eq34_det(q0, q1, dt), rel=1e-9, abs=1e-12)


def test_spherical_pendulum_singularity_raises_before_output(spherical):
    """Pure pendular swing (p_φ = 0) through the pole with θ_{k+1} = −θ_k: eq. 2a gives
    p_θ = mr²(θ_{k+1} − θ_k)/Δt = −2mr²θ_k/Δt, and M_{k+1} is singular (eq. 34, θ_k + θ_{k+1} = 0).
    The step must raise SingularityError; a swing that passes beside the
    symmetric point (θ_k + θ_{k+1} = 0.02) is an ordinary step."""
    dt, theta = 0.01, 0.3
    vi = MidpointVI(spherical, dt)
    with pytest.raises(SingularityError) as info:
        vi.step(np.array([0.0, theta, 0.0, -2 * theta / dt]), step_index=5)
    err = info.value
    assert err.step == 5 and err.rcond < vi.settings.rcond_min
    assert "M_{k+1}" in err.what
    x1 = vi.step(np.array([0.0, theta, 0.0, -(2 * theta - 0.02) / dt]))
    assert x1[1] + theta == pytest.approx(0.02, abs=1e-3)
    assert x1[0] == 0.0 and np.all(np.isfinite(x1))
    # chord_root_check=False (both backends) checks M(q_k), regular at θ_k = 0.3, instead of M_{k+1}: the quasi-Newton
    # iteration converges (p_φ = 0, so its residual has no component along the singular direction) and the step
    # is returned — the documented blind spot of that mode
    for compile in (None, False):
        fast = MidpointVI(spherical, dt, newton="chord", chord_root_check=False, compile=compile)
        x_fast = fast.step(np.array([0.0, theta, 0.0, -2 * theta / dt]))
        assert x_fast[1] == pytest.approx(-theta, abs=1e-9)
        assert abs(eq34_det(np.array([0.0, theta]), x_fast[:2], dt)) < 1e-9


def test_spherical_pendulum_at_rest_on_the_pole_raises_singularity_error(spherical):
    """θ_k = 0 and at rest: θ_{k+1} = θ_k = 0 solves eq. 2a and M_{k+1} is singular there."""
    vi = MidpointVI(spherical, 0.01)
    with pytest.raises(SingularityError):
        vi.step(np.zeros(4))


def _planar_swing(spherical, theta: float) -> tuple[np.ndarray, np.ndarray]:
    """A swing in the plane φ = 0 (p_φ = 0, so Δφ = 0 and the sin²θ φ̇² terms of L_d vanish): the θ row of
    eq. 2a is the plane pendulum's eq. 6a with u = 0 (m = r = 1, g = 9.8). Returns (VI step, expected)."""
    dt = 0.01
    th1, p1 = eq6a_newton(theta, 1.0, 0.0, dt)
    return MidpointVI(spherical, dt).step(np.array([0.0, theta, 0.0, 1.0])), np.array([0.0, th1, 0.0, p1])


def test_spherical_pendulum_planar_swing_is_the_plane_pendulum(spherical):
    x1, expected = _planar_swing(spherical, 0.5)
    assert x1 == pytest.approx(expected, abs=1e-10)


def test_spherical_pendulum_swinging_through_the_pole_is_an_ordinary_step(spherical):
    """θ_k = 0, p_θ = 1: θ_{k+1} ≈ Δt ≠ −θ_k, so M_{k+1} is regular (eq. 34) and the step is well defined."""
    x1, expected = _planar_swing(spherical, 0.0)
    assert x1 == pytest.approx(expected, abs=1e-10)


@pytest.mark.parametrize(
    "x, u, what",
    [
        (np.zeros(3), np.zeros(1), "state has size"),
        (np.zeros(2), np.zeros(2), "input has size"),
        (np.array([np.nan, 0.0]), np.zeros(1), "NaN"),
        (np.zeros(2), np.array([np.inf]), "NaN"),
    ],
)
def test_bad_inputs_raise_value_error(pendulum_vi, x, u, what):
    with pytest.raises(ValueError, match=what):
        pendulum_vi.step(x, u)


@pytest.mark.parametrize("dt", [0.0, -0.1, np.nan, np.inf])
def test_bad_time_step_raises_value_error(pendulum_robot, dt):
    with pytest.raises(ValueError, match="dt"):
        MidpointVI(pendulum_robot, dt)


@pytest.mark.parametrize("compile", [True, False])
def test_pole_steps_on_both_backends(spherical, compile):
    """The least-squares initial guess at a singular M(q_k) is the same on the C driver and the numpy loop."""
    vi = MidpointVI(spherical, 0.01, compile=compile)
    with pytest.raises(SingularityError):
        vi.step(np.zeros(4))
    th1, p1 = eq6a_newton(0.0, 1.0, 0.0, 0.01)
    assert vi.step(np.array([0.0, 0.0, 0.0, 1.0])) == pytest.approx([0.0, th1, 0.0, p1], abs=1e-10)


def test_linearize_refuses_a_singular_step_given_to_it(spherical):
    """linearize with a caller-supplied result at the pole (q_{k+1} = q_k = 0: M_{k+1} singular, eq. 34)
    raises instead of returning inf/NaN A, B — the step check is not the only guard."""
    from vi_control.integrators.midpoint import StepResult
    from vi_control.linearization import linearize

    vi = MidpointVI(spherical, 0.01)
    at_pole = StepResult(x=np.zeros(4), lam=np.zeros(0), iterations=0, residual=0.0, y=np.zeros(2))
    with pytest.raises(SingularityError, match="linearization"):
        linearize(vi, np.zeros(4), np.zeros(vi.nu), at_pole)


def test_tolerance_is_honoured_below_1e9(pendulum_robot):
    """A residual above tol (and above the rounding floor) is never reported as converged: the chord loop
    stopped after two updates (~6e-10 left on this step at Δt = 10 ms) fails — in the C driver (its code and
    residual) and in the numpy oracle — and ``solve`` then re-solves by exact Newton, whose two quadratic updates
    do reach the tolerance."""
    x, u = np.array([0.2, 0.5]), np.array([0.0])
    for compile in (None, False):
        vi = MidpointVI(pendulum_robot, 0.01, max_iterations=2, newton="chord", compile=compile)
        nw = vi._newton  # the chord loop alone, without solve's exact fallback
        nw.z_x[:], nw.z_u[:] = x, u
        nw.use_settings(vi.settings, vi.chord_rate_max, vi.chord_root_check)
        assert nw.run(True, True) == NEWTON_NOT_CONVERGED and 1e-12 < nw.info[0] < 1e-9
        with pytest.raises(ConvergenceError) as info:
            solve_numpy(vi, x, u, 0, None, None, chord=True)
        assert 1e-12 < info.value.residual < 1e-9
        r = vi.solve(x, u)
        assert r.residual <= 1e-12 * (1 + 0.5)
        exact = MidpointVI(pendulum_robot, 0.01, max_iterations=2, newton="exact", compile=compile).solve(x, u)
        assert np.array_equal(r.x, exact.x)  # the fallback is exact Newton from the same guess
