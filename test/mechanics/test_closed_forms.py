"""Hand-written closed forms that no other test compares with finite differences (or with the definition they
close), each against central differences or the matrix definition at random points:

- ``mechanics.se2``'s [dexp⁻¹_v] (ψ(ad_v) in closed form, Kobilarov2010 eq. 36) and [dcay⁻¹_v] (eq. 44), the
  CasADi maps the reduced integrator (RDP) runs on: inverses of the right-trivialized differential of ``se2.exp`` /
  ``se2.cay`` (column i = vee(∂τ/∂v_i · τ(v)⁻¹)) by central differences;
- ``se2.body_to_spatial`` / ``spatial_to_body``: ġ of t ↦ g·exp(tξ̂) by central differences of scipy's expm;
- ``lie.coad_bar``: B(y) = ∂(ad_δᵀ y)/∂δ (central differences, exact for a linear map);
- ``lie.dlog_transpose_apply`` (Horner in ad_ξᵀ²): [dlog_ξ]ᵀ y with the matrix ``lie.dlog_matrix`` (itself checked
  against differences of expm in test/integrators/test_linear_time.py);
- ``lie.exp_so3_minus_identity`` (Rodrigues, series below 1e-4 rad): expm(ŵ) − I, on both sides of the switch;
- ``MidpointVI.potential_gradient`` (−(D₁L_d + D₂L_d)(q, q)/Δt): central differences of V(q) = energy(q, p = 0);
- ``control.hold.equilibrium_state``'s momentum (−(Δt/2)∇V, docstring) and ``holding_input`` (f(x_eq, u) = x_eq);
- ``planning.cost.QuadraticTrackingCost.calc_diff``: l_x, l_u of the running cost by central differences;
- ``mechanics.lagrange_dalembert.CLOSED_FORM``'s drifts Ċ(q, q̇)q̇: central differences of C(q) along q̇;
- ``so3_maps.a_inv``: (I − ŵ/2)⁻¹ against a matrix inverse;
- ``euler_poincare.restoring_wrench``: −(left-trivialized gradient) of ``potential_energy`` by central differences.

Tolerances: central differences with step h have truncation error ~h²·|f'''| and rounding ~1e-16·|f|/h; with
h = 1e-6 on O(1) maps both are ≤ ~1e-9, so 1e-7 relative (absolute on O(1) entries) leaves a margin of 100.
"""

import casadi as ca
import numpy as np
import pytest
from scipy.linalg import expm

import vi_control as vc
from vi_control.control.hold import equilibrium_state, holding_input
from vi_control.mechanics import lie, se2
from vi_control.mechanics.lagrange_dalembert import CLOSED_FORM
from vi_control.mechanics.so3_maps import a_inv

H = 1e-6  # central-difference step
FD_TOL = 1e-7  # ≥ 100 × (h² truncation + 1e-16/h rounding) on O(1) maps


def _numeric(fn, n=3):
    v = ca.SX.sym("v", n)
    f = ca.Function("f", [v], [fn(v)])
    return lambda x: np.array(f(np.asarray(x, float)))


def _se2_matrix(g) -> np.ndarray:
    """(θ, x, y) as a homogeneous 3×3 matrix."""
    c, s = np.cos(g[0]), np.sin(g[0])
    return np.array([[c, -s, g[1]], [s, c, g[2]], [0.0, 0.0, 1.0]])


def _se2_hat(v) -> np.ndarray:
    """v̂ of App. B for v = (v¹ angular, v², v³ translation)."""
    return np.array([[0.0, -v[0], v[1]], [v[0], 0.0, v[2]], [0.0, 0.0, 0.0]])


def _se2_vee(X) -> np.ndarray:
    return np.array([X[1, 0], X[0, 2], X[1, 2]])


def _samples(rng, n=3, scales=(1e-6, 1e-3, 0.3, 1.0, 2.5)):
    """Algebra elements from below the series switch (|v¹| < 1e-4) to 2.5 rad (inside both retractions' domains)."""
    return [s * rng.normal(size=n) for s in scales for _ in range(2)]


@pytest.mark.parametrize("name", ["exp", "cayley"])
def test_se2_inverse_differentials_invert_the_right_trivialized_derivative(name, rng):
    tau, dtau_inv = (_numeric(f) for f in se2.retraction(name))
    for v in _samples(rng):
        g_inv = np.linalg.inv(_se2_matrix(tau(v).ravel()))
        d = np.column_stack(
            [
                _se2_vee((_se2_matrix(tau(v + H * e).ravel()) - _se2_matrix(tau(v - H * e).ravel())) / (2 * H) @ g_inv)
                for e in np.eye(3)
            ]
        )
        assert np.abs(dtau_inv(v) @ d - np.eye(3)).max() <= FD_TOL, (name, v)


def test_se2_exp_is_the_matrix_exponential(rng):
    """se2.exp's closed form (and its series for |v¹| < 1e-4) against expm(v̂): what the differential above is of."""
    tau = _numeric(se2.exp)
    for v in _samples(rng):
        assert np.abs(_se2_matrix(tau(v).ravel()) - expm(_se2_hat(v))).max() <= 1e-14 * max(1.0, np.abs(v).max())


def test_se2_body_and_spatial_velocities(rng):
    for _ in range(8):
        g, xi = rng.normal(size=3) * [3.0, 2.0, 2.0], rng.normal(size=3)
        G = _se2_matrix(g)
        gdot_fd = (G @ expm(H * _se2_hat(xi)) - G @ expm(-H * _se2_hat(xi))) / (2 * H)
        # (θ̇, ẋ, ẏ): the angle's rate from the rotation block, the translation's from the last column
        gdot = np.array([gdot_fd[1, 0] * G[0, 0] - gdot_fd[0, 0] * G[1, 0], gdot_fd[0, 2], gdot_fd[1, 2]])
        assert np.abs(se2.body_to_spatial(g, xi) - gdot).max() <= FD_TOL * max(1.0, np.abs(g).max())
        assert np.abs(se2.spatial_to_body(g, gdot) - xi).max() <= FD_TOL * max(1.0, np.abs(g).max())


def test_coad_bar_is_the_derivative_of_the_coadjoint(rng):
    for _ in range(6):
        y, delta = rng.normal(size=6), rng.normal(size=6)
        B = np.column_stack([(lie.ad(delta + H * e).T @ y - lie.ad(delta - H * e).T @ y) / (2 * H) for e in np.eye(6)])
        assert np.abs(lie.coad_bar(y) - B).max() <= FD_TOL
        assert np.allclose(lie.coad_bar(y) @ delta, lie.ad(delta).T @ y, rtol=0, atol=1e-14 * np.abs(y).max() * 10)


def test_dlog_transpose_apply_is_the_transposed_matrix(rng):
    xi = np.concatenate([rng.normal(size=(5, 6)) * s for s in (1e-5, 0.1, 0.6)])
    y = rng.normal(size=xi.shape)
    got = lie.dlog_transpose_apply(xi, y)
    want = np.einsum("nji,nj->ni", lie.dlog_matrix(xi), y)
    assert np.abs(got - want).max() <= 1e-13 * np.abs(want).max()


def test_exp_so3_minus_identity_on_both_sides_of_its_series_switch(rng):
    axes = rng.normal(size=(6, 3))
    axes /= np.linalg.norm(axes, axis=1)[:, None]
    for theta in (1e-9, 1e-5, 0.99999e-4, 1.00001e-4, 1e-3, 0.5, 2.0, 3.1):
        w = theta * axes
        got = lie.exp_so3_minus_identity(w)
        for wi, gi in zip(w, got):
            want = expm(lie.hat(wi[None])[0]) - np.eye(3)
            # relative to the displacement itself (~θ): the point of keeping it apart from I
            assert np.abs(gi - want).max() <= 1e-15 + 1e-13 * theta, theta


@pytest.mark.parametrize("name", ["pendulum", "double_pendulum", "cartpole", "acrobot"])
def test_potential_gradient_and_the_held_state(name, rng):
    vi = vc.MidpointVI(vc.load_robot(name), 0.01)
    nq = vi.nq
    for _ in range(3):
        q = rng.uniform(-1.5, 1.5, size=nq)
        V = lambda q: vi.energy(np.concatenate([q, np.zeros(nq)]))  # noqa: E731 (p = 0: T = 0)
        grad_fd = np.array([(V(q + H * e) - V(q - H * e)) / (2 * H) for e in np.eye(nq)])
        scale = max(1.0, np.abs(grad_fd).max())
        grad = vi.potential_gradient(q)
        assert np.abs(grad - grad_fd).max() <= FD_TOL * scale, (grad, grad_fd)
        x_eq = equilibrium_state(vi, q)
        assert np.array_equal(x_eq[:nq], q)
        # the midpoint rule's momentum of a configuration held still (docstring): −(Δt/2)∇V, not zero
        assert np.abs(x_eq[nq:] - (-0.5 * vi.dt * grad_fd)).max() <= FD_TOL * scale * vi.dt
        u, residual = holding_input(vi, q)
        assert residual <= 1e-12 or name in ("cartpole", "acrobot")  # (fully actuated: always an equilibrium)
        if residual <= 1e-12:  # (gravity on an unactuated joint: no equilibrium at q)
            x1 = vi.step(x_eq, u)
            assert np.abs(x1 - x_eq).max() <= 1e-9 * scale


def test_quadratic_cost_derivatives(rng):
    from vi_control.planning.cost import QuadraticTrackingCost

    nx, nu, N = 4, 2, 3
    A, Bm = rng.normal(size=(nx, nx)), rng.normal(size=(nu, nu))
    Q, R = A @ A.T, Bm @ Bm.T + np.eye(nu)
    cost = QuadraticTrackingCost(rng.normal(size=(N + 1, nx)), rng.normal(size=(N, nu)), Q, R, Q * 2)
    k, x, u = 1, rng.normal(size=nx), rng.normal(size=nu)
    d = cost.calc_diff(k, x, u)
    lx = [(cost.running(k, x + H * e, u) - cost.running(k, x - H * e, u)) / (2 * H) for e in np.eye(nx)]
    lu = [(cost.running(k, x, u + H * e) - cost.running(k, x, u - H * e)) / (2 * H) for e in np.eye(nu)]
    scale = max(1.0, np.abs(lx).max(), np.abs(lu).max())
    assert np.abs(d.lx - lx).max() <= FD_TOL * scale and np.abs(d.lu - lu).max() <= FD_TOL * scale
    lxx = np.column_stack(
        [(cost.calc_diff(k, x + H * e, u).lx - cost.calc_diff(k, x - H * e, u).lx) / (2 * H) for e in np.eye(nx)]
    )
    assert np.abs(d.lxx - lxx).max() <= FD_TOL * max(1.0, np.abs(Q).max())
    assert np.array_equal(d.lux, np.zeros((nu, nx)))


@pytest.mark.parametrize("name", sorted(CLOSED_FORM))
def test_nonholonomic_drift_is_the_time_derivative_of_the_rows(name, rng):
    """``lagrange_dalembert.CLOSED_FORM``'s Ċ(q, q̇)q̇, written by hand from the papers, against central differences
    of C along q̇: Ċq̇ = (d/dε) C(q + εq̇)|₀ · q̇ — the reference the GNI and RDP tests integrate."""
    rows, drift = CLOSED_FORM[name]
    n = rows(np.zeros(8)).shape[1]
    for _ in range(5):
        q, v = rng.uniform(-3, 3, size=n), rng.normal(size=n)
        want = (rows(q + H * v) - rows(q - H * v)) / (2 * H) @ v
        assert np.abs(drift(q, v) - want).max() <= FD_TOL * max(1.0, np.abs(v).max() ** 2), (name, q, v)


def test_so3_a_inv_is_the_inverse(rng):
    """``so3_maps.a_inv``: (I − ŵ/2)⁻¹ in closed form (the translation of SE(3)'s Cayley map) against a solve."""
    for w in _samples(rng) + [np.array([0.0, 0.0, 40.0])]:
        want = np.linalg.inv(np.eye(3) - 0.5 * lie.hat(w[None])[0])
        assert np.abs(np.asarray(a_inv(w, False)) - want).max() <= 1e-15 * 10


def test_restoring_wrench_is_minus_the_left_trivialized_gradient_of_the_potential(rng):
    """``euler_poincare.restoring_wrench`` (Jimenez2013, §5.2: −l_g*∂V) against central differences of
    ``potential_energy`` along body twists δ = (ω, v): (d/dε) V(g·exp(εδ̂))|₀ = −wrench·δ."""
    from vi_control.mechanics.euler_poincare import potential_energy, restoring_wrench
    from vi_control.mechanics.groups import SE3, SO3

    for _ in range(5):
        g = SE3.exp(rng.normal(size=6))
        weight, buoyancy, center = rng.normal(size=3) * [1, 1, 50], rng.normal(size=3) * [1, 1, 50], rng.normal(size=3)
        w = restoring_wrench(SE3, g, weight, buoyancy, center)
        for delta in np.eye(6):
            V = [potential_energy(SE3, g @ SE3.exp(s * H * delta), weight, buoyancy, center) for s in (1, -1)]
            assert abs((V[0] - V[1]) / (2 * H) + w @ delta) <= FD_TOL * 100, delta  # (|V| ~ 100: rounding 1e-14/h)
    assert np.array_equal(restoring_wrench(SO3, np.eye(3), weight, buoyancy, center), np.zeros(3))
