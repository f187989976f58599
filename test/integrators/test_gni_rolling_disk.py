"""GNI on the vertical rolling disk (bundled rolling_disk): the analytic circle, heading momentum (a horizontal
symmetry: Kobilarov2010, §4's discrete nonholonomic momentum map) conserved exactly, energy and spin rate."""

import numpy as np
import pytest

from vi_control.integrators import make_integrator
from vi_control.model.bundled import load_bundled

R, W_HEADING, W_SPIN, PHI0 = 0.5, 0.8, 3.0, 0.3  # radius (urdf), heading and spin rates, initial heading


def _exact(t):
    """x = R ω_s/ω_h (sin φ − sin φ₀), y = −R ω_s/ω_h (cos φ − cos φ₀), φ = φ₀ + ω_h t, θ = ω_s t."""
    phi, rho = PHI0 + W_HEADING * t, R * W_SPIN / W_HEADING
    return np.array([rho * (np.sin(phi) - np.sin(PHI0)), -rho * (np.cos(phi) - np.cos(PHI0)), phi, W_SPIN * t])


@pytest.fixture(scope="module")
def disk():
    return load_bundled("rolling_disk")


def _run(disk, h, T):
    gni = make_integrator("gni", disk, h)
    q0 = np.array([0.0, 0.0, PHI0, 0.0])
    qd0 = np.array([R * W_SPIN * np.cos(PHI0), R * W_SPIN * np.sin(PHI0), W_HEADING, W_SPIN])
    X, nu = gni.simulate(gni.state_from_velocity(q0, qd0), steps=int(round(T / h)))
    return gni, X, nu


def test_second_order_to_the_analytic_circle(disk):
    T = 4.0
    err = [np.abs(_run(disk, h, T)[1][-1, :4] - _exact(T)).max() for h in (0.04, 0.02, 0.01)]
    order = np.log2(np.array(err[:-1]) / np.array(err[1:]))
    assert np.all(np.abs(order - 2) < 0.05), (err, order)
    assert err[-1] < 1e-3


def test_heading_momentum_energy_and_constraints(disk):
    """∂/∂φ is an allowed velocity at every q and L does not depend on φ: J^nh_d = ⟨p_k, ∂/∂φ⟩ = p_φ is exactly
    preserved by the GNI (Kobilarov2010, §4, [12]); so are the energy and eq. 5b."""
    gni, X, nu = _run(disk, 0.05, 50.0)
    i_phi = disk.joint_index("heading")
    p_phi = X[:, gni.nq + i_phi]
    assert np.abs(p_phi - p_phi[0]).max() < 1e-14 * max(1.0, abs(p_phi[0])) + 1e-15
    E = np.array([gni.energy(x) for x in X])
    assert np.abs(E / E[0] - 1).max() < 1e-13
    res = [gni.nonholonomic_residual(X[k], X[k + 1]) for k in range(0, len(X) - 1, 5)]
    assert np.abs(res).max() < 1e-13
    assert nu.shape[1] == 2
    v = np.array([gni.velocity(x) for x in X[::50]])
    assert v[:, disk.joint_index("spin")] == pytest.approx(W_SPIN, rel=1e-2)  # spin rate stays (continuous: exact)
