"""GNI (Kobilarov2010, §4) on the Chaplygin sleigh (§6.1): the paper's explicit update, exact energy, the discrete
constraint at every step, second order against SciPy's DOP853 on the Lagrange–d'Alembert equations, reported
multipliers, and what happens to initial velocities that violate the constraints."""

import logging

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from vi_control.integrators import make_integrator
from vi_control.integrators.gni import GeometricNonholonomicIntegrator
from vi_control.integrators.midpoint import MidpointVI
from vi_control.mechanics.lagrange_dalembert import NonholonomicODE
from vi_control.model.bundled import load_bundled

A_SKATE, I_BODY, MASS = 0.5, 0.2, 1.0  # urdf/sleigh.urdf, config/sleigh.yaml
# docs/concepts/nonholonomic.md: skate at rest sideways, body backing up at 1 m/s while turning at 2 rad/s
Q0, QDOT0 = np.zeros(3), np.array([-1.0, A_SKATE * 2.0, 2.0])  # (x, y, θ), constraint ẏ = a θ̇ at θ = 0


@pytest.fixture(scope="module")
def sleigh():
    return load_bundled("sleigh")


def test_step_is_the_papers_explicit_update(sleigh):
    """Kobilarov2010, §6.1: v_{k+1/2} = (Id − 2M⁻¹𝒬ᵀM) v_{k−1/2}, 𝒬 of eq. 33 (written here in (x, y, θ) order)."""
    h = 0.1
    gni = make_integrator("gni", sleigh, h)
    x = np.array([0.3, 0.2, 0.4, -1.0, 1.2, 0.5])
    r = gni.solve(x)
    th, Ip = x[2], I_BODY + A_SKATE**2 * MASS
    s, c = np.sin(th), np.cos(th)
    v = x[3:] / np.array([MASS, MASS, I_BODY])  # (vx, vy, vθ)
    vth = (1 - 2 * A_SKATE**2 * MASS / Ip) * v[2] + A_SKATE * MASS / Ip * (-2 * s * v[0] + 2 * c * v[1])
    vx = -2 * A_SKATE * I_BODY / Ip * s * v[2] + (1 - 2 * I_BODY / Ip * s**2) * v[0] + 2 * I_BODY / Ip * s * c * v[1]
    vy = 2 * A_SKATE * I_BODY / Ip * c * v[2] + 2 * I_BODY / Ip * s * c * v[0] + (1 - 2 * I_BODY / Ip * c**2) * v[1]
    v1 = np.array([vx, vy, vth])
    assert r.x[:3] == pytest.approx(x[:3] + h * v1, abs=1e-14)
    assert r.x[3:] == pytest.approx(np.array([MASS, MASS, I_BODY]) * v1, abs=1e-14)
    # the multiplier is the constraint impulse: p⁻ − p⁺ = A(q_k)ᵀν
    A = gni.nonholonomic_matrix(x[:3])
    assert r.x[3:] - x[3:] == pytest.approx(A[0] * r.lam[0], abs=1e-14)


def test_energy_and_constraint_exact_over_10k_steps(sleigh):
    """Energy ⟨Mv_{k+1/2}, v_{k+1/2}⟩/2 to 1e-13 (relative) and eq. 5b to 1e-13 at every step (10⁵ steps: the
    benchmark), through the sleigh's non-physical returns to backward motion (docs/concepts/nonholonomic.md)."""
    gni = make_integrator("gni", sleigh, 0.01)
    X, lam = gni.simulate(gni.state_from_velocity(Q0, QDOT0), steps=10_000)
    E = np.array([gni.energy(x) for x in X])
    assert np.abs(E / E[0] - 1).max() < 1e-13
    res = np.array([gni.nonholonomic_residual(X[k], X[k + 1]) for k in range(10_000)])
    assert np.abs(res).max() < 1e-13
    assert lam.shape == (10_000, 1) and np.abs(lam).max() > 1e-3  # the skate pushes


def _reference(sleigh, T):
    ode = NonholonomicODE(sleigh)
    s0 = np.concatenate([Q0, QDOT0])
    return ode, solve_ivp(ode.rhs, (0, T), s0, method="DOP853", rtol=1e-12, atol=1e-12, dense_output=True)


def test_second_order_against_dop853(sleigh):
    """Theorem 2 (nonholonomic RATTLE is globally second order): order 2.00 ± 0.05 of the configuration at T = 2 s."""
    T = 2.0
    _, sol = _reference(sleigh, T)
    hs = np.array([0.04, 0.02, 0.01, 0.005])
    err = []
    for h in hs:
        gni = make_integrator("gni", sleigh, h)
        X, _ = gni.simulate(gni.state_from_velocity(Q0, QDOT0), steps=int(round(T / h)))
        err.append(np.abs(X[-1, :3] - sol.y[:3, -1]).max())
    order = np.log2(np.array(err[:-1]) / np.array(err[1:]))
    assert np.all(np.abs(order - 2.0) < 0.05), (err, order)


def test_multipliers_are_the_constraint_force(sleigh):
    """ν_k/Δt → the Lagrange–d'Alembert multiplier λ(t_k) of eq. 4 (same sign convention: force = Aᵀλ)."""
    T, h = 1.0, 0.001
    ode, sol = _reference(sleigh, T)
    gni = make_integrator("gni", sleigh, h)
    X, nu = gni.simulate(gni.state_from_velocity(Q0, QDOT0), steps=int(T / h))
    for k in (100, 500, 999):
        lam_c = ode.multipliers(k * h, sol.sol(k * h))
        A_gni, A_ode = gni.nonholonomic_matrix(X[k, :3])[0], ode.rows(X[k, :3])[0]
        sign = np.sign(A_gni @ A_ode)  # the YAML's row and the paper's may differ in sign
        assert sign * nu[k, 0] / h == pytest.approx(lam_c[0], rel=1e-2, abs=1e-3)


def test_violating_initial_velocity_projected_with_warning_or_error(sleigh, caplog):
    gni = make_integrator("gni", sleigh, 0.01)
    bad = np.array([0.0, 0.0, 2.0])  # turning on the spot: the skate would slide sideways
    with caplog.at_level(logging.WARNING, logger="vi_control.gni"):
        x0 = gni.state_from_velocity(Q0, bad)
    assert "violates the constraints" in caplog.text and "projected" in caplog.text
    v = gni.velocity(x0)
    assert np.abs(gni.nonholonomic_matrix(Q0) @ (x0[3:] / np.array([1, 1, I_BODY]))).max() < 1e-15
    # 𝒫 is the M-orthogonal projection: (q̇ − v) is M-orthogonal to every allowed velocity
    allowed = np.array([1.0, 0.0, 0.0])
    assert (bad - v) @ np.diag([MASS, MASS, I_BODY]) @ allowed == pytest.approx(0.0, abs=1e-15)
    strict = GeometricNonholonomicIntegrator(sleigh, 0.01, on_constraint_violation="raise")
    with pytest.raises(ValueError, match="violates the constraints"):
        strict.state_from_velocity(Q0, bad)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="vi_control.gni"):
        strict.state_from_velocity(Q0, QDOT0)  # an allowed velocity passes silently
    assert not caplog.text
    with pytest.raises(ValueError, match="on_constraint_violation"):
        GeometricNonholonomicIntegrator(sleigh, 0.01, on_constraint_violation="ignore")


def test_gni_is_a_linearizable_discrete_system(sleigh):
    from vi_control.integrators import DiscreteSystem, Linearizable

    gni = make_integrator("gni", sleigh, 0.01)
    assert isinstance(gni, DiscreteSystem) and isinstance(gni, Linearizable)
    assert gni.nc == 1 and gni.nx == 6 and gni.nu == 0


def test_midpoint_refuses_nonholonomic_models(sleigh):
    with pytest.raises(ValueError, match="gni"):
        MidpointVI(sleigh, 0.01)
    with pytest.raises(NotImplementedError, match="gni"):
        make_integrator("linear_time", sleigh, 0.01)
