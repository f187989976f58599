"""Legendre–Gauss nodes, weights, barycentric interpolation and the LG / LG2 differentiation matrices (MorenoMartin2022
eqs. 5–15), against scipy's Gauss rule and exact polynomial calculus (numpy.polynomial)."""

import numpy as np
import pytest
from numpy.polynomial import polynomial as P
from scipy.special import roots_legendre

from vi_control.planning.collocation import legendre as L


@pytest.mark.parametrize("N", [1, 3, 10, 40])
def test_gauss_points_match_scipy_and_integrate_degree_2N_minus_1_exactly(N):
    tau, w = L.gauss_points(N)
    tau_ref, w_ref = roots_legendre(N)
    np.testing.assert_allclose(tau, tau_ref, atol=1e-14)
    np.testing.assert_allclose(w, w_ref, atol=1e-14)
    for k in range(2 * N):  # ∫_{-1}^{1} τ^k dτ
        exact = 0.0 if k % 2 else 2.0 / (k + 1)
        assert w @ tau**k == pytest.approx(exact, abs=1e-13)


def test_gauss_points_reject_bad_sizes():
    for bad in (0, -2, 2.5, True):
        with pytest.raises(ValueError, match="positive integer"):
            L.gauss_points(bad)


@pytest.mark.parametrize("N", [3, 8, 25])
def test_node_sets_of_lg_and_lg2(N):
    tau = L.gauss_points(N)[0]
    np.testing.assert_array_equal(L.lg_nodes(N), np.concatenate([[-1.0], tau]))  # B = N + 1 (eq. 5)
    np.testing.assert_array_equal(L.lg2_nodes(N), np.concatenate([[-1.0], tau, [1.0]]))  # B = N + 2 (§IV)


@pytest.mark.parametrize("N", [3, 9, 30])
def test_differentiation_matrices_are_exact_on_polynomials_of_the_interpolants_degree(N, rng):
    # LG (eq. 8): N × (N+1), exact for degree ≤ N; LG2 (eq. 13): (N+2)², exact for degree ≤ N+1, and D*² (eq. 15).
    cases = ((L.lg_nodes(N), L.lg_differentiation(N), N), (L.lg2_nodes(N), L.lg2_differentiation(N), N + 1))
    for nodes, D, degree in cases:
        c = rng.normal(size=degree + 1)
        d1, d2 = P.polyder(c), P.polyder(c, 2)
        y = P.polyval(nodes, c)
        rows = nodes[1:] if D.shape[0] == N else nodes
        np.testing.assert_allclose(D @ y, P.polyval(rows, d1), atol=1e-9 * np.abs(d1).sum())
        if D.shape[0] == D.shape[1]:
            np.testing.assert_allclose(D @ D @ y, P.polyval(nodes, d2), atol=1e-8 * np.abs(d2).sum() * N)
    assert L.lg_differentiation(N).shape == (N, N + 1)
    assert L.lg2_differentiation(N).shape == (N + 2, N + 2)


def test_interpolation_is_exact_and_reproduces_node_values(rng):
    nodes = L.lg2_nodes(12)
    c = rng.normal(size=14)
    t = np.concatenate([rng.uniform(-1, 1, 50), nodes[[0, 5, -1]], [1.3, -1.2]])  # incl. extrapolation
    E = L.interpolation_matrix(nodes, t)
    np.testing.assert_allclose(E @ P.polyval(nodes, c), P.polyval(t, c), atol=1e-10)
    np.testing.assert_array_equal(L.interpolation_matrix(nodes, nodes), np.eye(len(nodes)))


def test_interpolant_derivatives_in_physical_time(rng):
    # q(t) on [t0, t1] = [0.5, 2.5]: derivatives scale by 2/(t1 − t0) per order (eqs. 14–15).
    c = rng.normal(size=(8, 2))
    nodes = L.lg2_nodes(6)
    t0, t1 = 0.5, 2.5
    tn = t0 + (nodes + 1) * (t1 - t0) / 2
    f = L.Interpolant(nodes, np.column_stack([P.polyval(tn, c[:, j]) for j in range(2)]), t0, t1)
    t = np.linspace(0.2, 2.7, 9)
    for order in (0, 1, 2, 3):
        ref = np.column_stack([P.polyval(t, P.polyder(c[:, j], order)) for j in range(2)])
        np.testing.assert_allclose(f(t, order), ref, atol=1e-9 * (1 + np.abs(ref).max()))


def test_differentiation_matrix_rejects_repeated_nodes():
    with pytest.raises(ValueError, match="distinct"):
        L.differentiation_matrix(np.array([-1.0, 0.0, 0.0, 1.0]))
