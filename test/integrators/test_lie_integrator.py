"""Lie-group variational integrator (Jimenez2013, §4, §5, §5.2): conservation, order, group structure, interface.

References: the discrete Noether theorem (spatial momentum Ad*_{g⁻¹}ν of an unforced step is exact), the
continuous forced Euler–Poincaré equations integrated by scipy's DOP853 at 1e-12 (order), finite differences of
``step`` (linearization), and the DiscreteSystem/Linearizable protocols every integrator implements.
"""

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from vi_control.integrators import DiscreteSystem, Linearizable, make_integrator
from vi_control.integrators.base import ConvergenceError
from vi_control.integrators.lie_group import LieGroupVI
from vi_control.linearization import linearize, second_order_contraction
from vi_control.mechanics.euler_poincare import restoring_wrench
from vi_control.mechanics.groups import RetractionDomainError
from vi_control.model.rigid_body import load_rigid_body

FREE = {
    "SO3": dict(name="tumbler", group="SO3", inertia=[0.1, 0.2, 0.3]),
    "SE3": dict(name="free", group="SE3", mass=3.0, inertia=[0.1, 0.2, 0.3]),
}
# A forced, damped, buoyant body with a restoring moment: every term of f(g, ξ, u) = Hξ + Bu + w(g) is active.
FORCED = dict(
    name="forced",
    group="SE3",
    mass=3.0,
    inertia=[0.1, 0.2, 0.3],
    drag=[0.05, 0.05, 0.05, 0.5, 0.5, 0.5],
    actuators=[
        dict(name="a", direction=[1.0, 0.0, 0.0], position=[0.0, 0.1, 0.2]),
        dict(name="b", direction=[0.0, 0.0, 1.0], position=[0.1, 0.0, 0.0]),
    ],
    gravity=[0.0, 0.0, -9.81],
    buoyancy=dict(force=29.0, center=[0.0, 0.0, 0.05]),
)
TWIST = {"SO3": np.array([1.0, 0.5, -0.8]), "SE3": np.array([1.0, 0.5, -0.8, 0.1, -0.05, 0.08])}


@pytest.mark.parametrize("group, kind", [("SO3", "cayley"), ("SE3", "cayley"), ("SE3", "exp")])
def test_unforced_spatial_momentum_and_group_over_1e4_steps(group, kind):
    vi = make_integrator("lie_group", load_rigid_body(FREE[group]), 0.01, retraction=kind)
    x0 = vi.state_from_pose(vi.group.identity(), TWIST[group])
    X, _ = vi.simulate(x0, steps=10_000)
    pi = np.array([vi.spatial_momentum(x) for x in X])
    assert np.abs(pi - pi[0]).max() <= 1e-12  # discrete Noether theorem, no renormalization anywhere
    assert max(vi.group.distance_from_group(vi.pose(x)) for x in X[::100]) <= 1e-13
    E = np.array([vi.energy(x) for x in X])
    q = len(E) // 4  # bounded: the last quarter's error band is no wider than the first's
    assert np.ptp(E - E[0]) <= 1e-3 * E[0]
    assert np.abs(E[-q:] - E[0]).max() <= 1.5 * np.abs(E[:q] - E[0]).max() + 1e-12


def _continuous(t, s, vi, u):
    """Forced Euler–Poincaré equations ν̇ = ad_ξᵀν + Hξ + Bu + w(g), ġ = gξ̂ (Jimenez2013, §4, §5.2)."""
    b, G = vi.robot, vi.group
    g = G.from_coordinates(s[:12])
    nu = s[12:]
    xi = vi.velocity(s)
    f = b.drag_matrix @ xi + b.input_matrix @ u + restoring_wrench(G, g, b.weight, b.buoyancy, b.buoyancy_center)
    return np.concatenate([G.to_coordinates(g @ G.hat(xi)), G.ad(xi).T @ nu + f])


@pytest.mark.parametrize("kind", ["cayley", "exp"])
def test_second_order_against_the_continuous_forced_dynamics(kind):
    body, T, u = load_rigid_body(FORCED), 2.0, np.array([0.7, -0.4])
    errs = []
    for N in (16, 32, 64, 128, 256):
        vi = make_integrator("lie_group", body, T / N, retraction=kind)
        x0 = vi.state_from_pose(vi.group.exp(np.array([0.3, -0.2, 0.5, 1.0, 2.0, 3.0])), TWIST["SE3"])
        X, _ = vi.simulate(x0, np.tile(u, (N, 1)))
        ref = solve_ivp(_continuous, (0, T), x0, args=(vi, u), rtol=1e-12, atol=1e-12, method="DOP853").y[:, -1]
        errs.append(np.abs(vi.state.diff(ref, X[-1])).max())
    order = np.log2(np.array(errs[:-1]) / np.array(errs[1:]))
    assert np.all(np.abs(order - 2.0) <= 0.1), (errs, order)


def test_potential_and_drag_energy_behaviour():
    """Neutral buoyancy above the centre of mass (a restoring moment) and no drag: T + V is bounded (a rocking
    vehicle); with drag and slightly negative buoyancy it only decreases."""
    lossless = dict(FORCED, drag=[0.0] * 6, actuators=[], buoyancy=dict(force=29.43, center=[0.0, 0.0, 0.05]))
    vi = make_integrator("lie_group", load_rigid_body(lossless), 0.02)
    X, _ = vi.simulate(vi.state_from_pose(vi.group.exp(np.array([0.6, -0.4, 0.2, 0, 0, 0])), TWIST["SE3"]), steps=3000)
    E = np.array([vi.energy(x) for x in X])
    q = len(E) // 4
    assert np.abs(E[-q:] - E[0]).max() <= 1.5 * np.abs(E[:q] - E[0]).max() and np.ptp(E) <= 1e-3 * np.abs(E).max()
    damped = make_integrator("lie_group", load_rigid_body(dict(FORCED, actuators=[])), 0.02)
    X, _ = damped.simulate(X[0], steps=500)
    assert np.all(np.diff([damped.energy(x) for x in X]) <= 1e-12)


def test_protocols_factory_and_state_manifold(rng):
    body = load_rigid_body("vehicle_uuv")
    vi = make_integrator("lie_group", body, 0.1)
    assert isinstance(vi, LieGroupVI) and isinstance(vi, DiscreteSystem) and isinstance(vi, Linearizable)
    assert (vi.nq, vi.nx, vi.state.ndx, vi.nu, vi.nc) == (12, 18, 12, 5, 0)
    x = vi.state_from_pose(vi.group.exp(rng.normal(size=6)), rng.normal(size=6))
    dx = 0.3 * rng.normal(size=12)
    y = vi.state.integrate(x, dx)
    assert np.abs(vi.state.diff(x, y) - dx).max() <= 1e-14  # diff = τ⁻¹(g0⁻¹g1) inverts integrate = gτ(dξ)
    assert np.abs(vi.state.diff(x, y) + vi.state.diff(y, x)).max() <= 1e-14  # τ⁻¹(W⁻¹) = −τ⁻¹(W)
    stack = vi.state.diff(np.array([x, y]), np.array([y, x]))
    assert stack.shape == (2, 12) and np.abs(stack[0] + stack[1]).max() <= 1e-14
    assert np.abs(vi.velocity(vi.state_from_velocity(x[:12], dx[:6])) - dx[:6]).max() <= 1e-15


def test_discrete_legendre_transform_recovers_the_unforced_state(rng):
    """state_from_configurations(g_{k−1}, g_k) = x_k for an unforced step (eq. 27 with u = 0)."""
    vi = make_integrator("lie_group", load_rigid_body(dict(FORCED, gravity=[0, 0, 0], buoyancy={})), 0.05)
    x0 = vi.state_from_pose(vi.group.exp(rng.normal(size=6)), TWIST["SE3"])
    x1 = vi.step(x0, np.zeros(2))
    assert np.abs(vi.state_from_configurations(x0[:12], x1[:12]) - x1).max() <= 1e-13


@pytest.mark.parametrize("kind", ["cayley", "exp"])
def test_exact_linearization_matches_finite_differences(kind, rng):
    vi = make_integrator("lie_group", load_rigid_body(FORCED), 0.1, retraction=kind)
    x = vi.state_from_pose(vi.group.exp(np.array([0.3, -0.2, 0.5, 1, 2, 3.0])), TWIST["SE3"])
    u = np.array([0.7, -0.4])
    lin = linearize(vi, x, u)
    x1, nd, eps = vi.step(x, u), vi.state.ndx, 1e-6

    def f(dx, du):
        return vi.state.diff(x1, vi.step(vi.state.integrate(x, dx), u + du))

    A = np.column_stack([(f(e * eps, 0) - f(-e * eps, 0)) / (2 * eps) for e in np.eye(nd)])
    B = np.column_stack([(f(0 * x[:nd], e * eps) - f(0 * x[:nd], -e * eps)) / (2 * eps) for e in np.eye(2)])
    assert np.abs(A - lin.A).max() <= 1e-7 * np.abs(A).max()
    assert np.abs(B - lin.B).max() <= 1e-7 * np.abs(B).max()
    c = rng.normal(size=nd)
    Hxx, Hxu, Huu = second_order_contraction(vi, x, u, c)
    h = 1e-4
    E = np.eye(nd)

    def F(dx):
        return c @ f(dx, np.zeros(2))

    Hfd = np.array(
        [
            [
                (F(h * E[i] + h * E[j]) - F(h * E[i] - h * E[j]) - F(-h * E[i] + h * E[j]) + F(-h * E[i] - h * E[j]))
                / (4 * h * h)
                for j in range(nd)
            ]
            for i in range(nd)
        ]
    )
    assert np.abs(Hfd - Hxx).max() <= 1e-5 * np.abs(Hfd).max()


def test_bad_states_and_inputs_are_named():
    vi = make_integrator("lie_group", load_rigid_body("vehicle_uuv"), 0.1)
    x = vi.state.zero()
    with pytest.raises(ValueError, match="expected 18 = 12 coordinates"):
        vi.step(x[:-1])
    with pytest.raises(ValueError, match=r"expected 5 \(thruster_1"):
        vi.step(x, np.zeros(3))
    bad = x.copy()
    bad[0] = 1.1
    with pytest.raises(ValueError, match="not on SO\\(3\\)"):
        vi.step(bad)
    with pytest.raises(ValueError, match="NaN"):
        vi.step(x, np.full(5, np.nan))
    flipped = vi.state_from_pose(np.diag([1.0, -1.0, -1.0, 1.0]))
    with pytest.raises(RetractionDomainError, match="rotation by π"):
        vi.state.diff(x, flipped)
    with pytest.raises(TypeError, match="RigidBodyModel"):
        LieGroupVI(object(), 0.1)


def test_a_step_newton_has_not_solved_within_max_iterations_is_refused():
    """A tumbling step that Newton solves in n iterations: with ``max_iterations`` = n it is the same step, with n − 1
    ConvergenceError naming the residual — never an unconverged ξ passed on as a step."""
    body = load_rigid_body(FREE["SO3"])
    x0 = make_integrator("lie_group", body, 0.1).state_from_pose(np.eye(3), 3.0 * TWIST["SO3"])
    r = make_integrator("lie_group", body, 0.1).solve(x0)
    n = r.iterations
    assert n >= 2  # (else there is no unconverged iterate to refuse)
    at_n = make_integrator("lie_group", body, 0.1, max_iterations=n).solve(x0)
    assert np.array_equal(at_n.x, r.x)
    with pytest.raises(ConvergenceError) as e:
        make_integrator("lie_group", body, 0.1, max_iterations=n - 1).solve(x0)
    assert np.isfinite(e.value.residual) and e.value.residual > 0
