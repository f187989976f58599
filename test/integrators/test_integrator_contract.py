"""The contract every integrator passes, as Crocoddyl's one abstract test case subclassed for every
action model: one suite, parametrised over every ``make_integrator`` kind — state layout and manifold, stateless
step/solve with a warm start, simulate, the Legendre transforms, and the errors at the interface.

The reduced d'Alembert–Pontryagin simulator (``ReducedDAlembertPontryagin``, Kobilarov2010, §5) is not one of them: it
integrates a reduced system (shape r and group velocity ξ of ℓ(u, ξ), no RobotModel) from a continuous start, and
carries momenta (π⁺, μ⁺) that are not a state x_k of f(x_k, u_k); it is exported as a separate reduced simulator
(docs/architecture.md), and its last test here pins what it is and its pose convention against the GNI's.
"""

import numpy as np
import pytest

import vi_control as vc
from vi_control.integrators import INTEGRATORS, DiscreteSystem, Linearizable, NewtonSettings, State, make_integrator
from vi_control.model.bundled import load_bundled
from vi_control.model.rigid_body import RigidBodyModel, load_rigid_body
from vi_control.model.robot import RobotModel

N = 6  # steps of the rollouts


def _case(kind: str, rng: np.random.Generator):
    """(system, x0, inputs (N, nu), velocity for the Legendre round trip) of one integrator kind."""
    if kind in ("midpoint", "linear_time"):
        s = make_integrator(kind, load_bundled("double_pendulum"), 0.01)
        x0 = s.state_from_velocity(np.array([0.3, -0.2]), np.array([0.5, 0.1]))
        return s, x0, 0.2 * rng.standard_normal((N, s.nu)), np.array([0.4, -0.7])
    if kind == "gni":  # the sleigh: (x, y, θ), no-slip ẏ cos θ − ẋ sin θ = a θ̇ (a = 0.5)
        s = make_integrator(kind, load_bundled("sleigh"), 0.05)
        x0 = s.state_from_velocity(np.zeros(3), np.array([-1.0, 1.0, 2.0]))
        return s, x0, 0.2 * rng.standard_normal((N, s.nu)), np.array([-1.0, 1.0, 2.0])
    assert kind == "lie_group"
    s = make_integrator(kind, load_rigid_body("vehicle_uuv"), 0.1)
    x0 = s.state_from_pose(
        s.group.exp(np.array([0.3, -0.2, 0.5, 1.0, 2.0, 3.0])), np.array([0.1, -0.05, 0.2, 0.5, 0.0, -0.1])
    )
    return s, x0, 0.2 * rng.standard_normal((N, s.nu)), np.array([0.1, 0.2, -0.1, 0.3, 0.0, 0.2])


@pytest.fixture(scope="module", params=INTEGRATORS)
def case(request):
    return (request.param, *_case(request.param, np.random.default_rng(38)))


def test_every_kind_is_covered():
    assert set(INTEGRATORS) == {"midpoint", "linear_time", "gni", "lie_group"}


def test_layout(case):
    """Sizes and the state manifold: x has nx coordinates and ndx tangent directions; the model is what the
    kind takes (a RobotModel, or a RigidBodyModel for 'lie_group')."""
    kind, s, x0, U, _ = case
    assert isinstance(s, DiscreteSystem) and isinstance(s, Linearizable)
    assert isinstance(s.robot, RigidBodyModel if kind == "lie_group" else RobotModel)
    assert isinstance(s.settings, NewtonSettings) and isinstance(s.state, State)
    assert s.state.nx == s.nx == x0.shape[0] and s.state.zero().shape == (s.nx,)
    assert s.nu == s.n_torques + s.nk and s.nq + s.nk >= s.nd >= 0
    assert len(s.idx_act) == s.n_torques and len(s.idx_d) == s.nd and len(s.idx_k) == s.nk
    # (q, p) layouts have ndx = nx = 2 nq; the Lie group's state is (coordinates of g, body momentum)
    assert s.state.ndx == (s.nx if kind != "lie_group" else 2 * s.robot.dim) and s.state.ndx <= s.nx


def test_diff_and_integrate_on_the_manifold(case):
    """integrate(x, diff(x, y)) = y and diff(x, x) = 0, on single states and on stacks."""
    kind, s, x0, U, _ = case
    X, _ = s.simulate(x0, U)
    dx = s.state.diff(X[0], X[-1])
    assert dx.shape == (s.state.ndx,)
    assert np.abs(s.state.integrate(X[0], dx) - X[-1]).max() <= 1e-12 * (1 + np.abs(X[-1]).max())
    assert np.abs(s.state.diff(X[2], X[2])).max() <= 1e-15
    stack = s.state.diff(X[:-1], X[1:])
    assert stack.shape == (N, s.state.ndx)
    assert np.abs(s.state.integrate(X[:-1], stack) - X[1:]).max() <= 1e-12 * (1 + np.abs(X).max())


def test_simulate_is_a_chain_of_steps(case):
    """simulate's states are step after step, bit for bit; the multipliers one row per step."""
    kind, s, x0, U, _ = case
    X, lams = s.simulate(x0, U)
    assert X.shape == (N + 1, s.nx) and lams.shape == (N, s.nc)
    assert np.array_equal(X[0], x0)
    x = x0
    for k in range(N):
        x = s.step(x, U[k], lam0=lams[k - 1] if k and s.nc else None)
        assert np.abs(x - X[k + 1]).max() <= 1e-12 * (1 + np.abs(X[k + 1]).max()), k
    assert np.array_equal(s.simulate(x0, steps=3)[0], s.simulate(x0, np.zeros((3, s.nu)))[0])


def test_solve_is_stateless_and_takes_a_warm_start(case):
    """The same call twice gives the same bits whatever ran in between; a warm start at the answer ends there
    in no more iterations than the default guess."""
    kind, s, x0, U, _ = case
    X, lams = s.simulate(x0, U)
    r1 = s.solve(X[2], U[2])
    s.simulate(x0, -U)
    r2 = s.solve(X[2], U[2])
    assert np.array_equal(r1.x, r2.x) and r1.iterations == r2.iterations
    warm = s.solve(X[2], U[2], y0=s.warm_start(r1.x, r1.lam))
    assert np.abs(warm.x - r1.x).max() <= 1e-12 * (1 + np.abs(r1.x).max())
    assert warm.iterations <= r1.iterations
    assert warm.residual <= s.settings.tol * s.settings.scale(np.abs(X[2][s.nq :]).max()) * 10


def test_legendre_transforms_invert_each_other(case):
    """velocity(state_from_velocity(q, v)) = v; the discrete transform from (q_{k−1}, q_k) of an unforced step
    gives back x_k."""
    kind, s, x0, U, v = case
    q = x0[: s.nq]
    assert np.abs(s.velocity(s.state_from_velocity(q, v)) - v).max() <= 1e-12 * (1 + np.abs(v).max())
    if kind == "lie_group":
        return  # its discrete transform is pinned in test_lie_integrator (it needs an unforced, undamped body)
    x1 = s.step(x0)
    x1_again = s.state_from_configurations(x0[: s.nq], x1[: s.nq])
    assert np.abs(x1_again - x1).max() <= 1e-8 * (1 + np.abs(x1).max())


def test_energy_potential_and_wrap(case):
    kind, s, x0, U, _ = case
    assert np.isfinite(s.energy(x0))
    assert s.potential_gradient(x0[: s.nq]).shape == ((s.nq,) if kind != "lie_group" else (s.robot.dim,))
    assert s.wrap(x0).shape == (s.nx,)


def test_errors_at_the_interface(case):
    """A wrong input or state size and NaN are refused by name, before any Newton iteration."""
    kind, s, x0, U, _ = case
    with pytest.raises(ValueError, match=f"input has size {s.nu + 1}, expected {s.nu}"):
        s.step(x0, np.zeros(s.nu + 1))
    with pytest.raises(ValueError, match=f"state has size {s.nx - 1}, expected {s.nx}"):
        s.step(x0[:-1], U[0])
    bad = x0.copy()
    bad[-1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        s.step(bad, U[0])
    if s.nu:
        with pytest.raises(ValueError, match="NaN"):
            s.simulate(x0, np.full((2, s.nu), np.inf))


def test_the_reduced_simulator_is_a_separate_kind_with_the_papers_pose_order():
    """RDP is not a DiscreteSystem (no RobotModel, no step/solve/state: it carries (π⁺, μ⁺) from a continuous
    start) and make_integrator does not build it. Its poses are Kobilarov2010, App. B's g = (θ, x, y);
    ``RDPTrajectory.poses_xytheta`` gives them in the GNI's coordinate order (x, y, θ), and the two integrators of
    the sleigh agree there to O(Δt²)."""
    from vi_control.integrators.rdp import sleigh_system
    from vi_control.mechanics.se2 import spatial_to_body

    rdp = vc.ReducedDAlembertPontryagin(sleigh_system(I=0.2, m=1.0, a=0.5), 0.01)
    assert not isinstance(rdp, DiscreteSystem) and "rdp" not in INTEGRATORS
    assert not any(hasattr(rdp, name) for name in ("step", "solve", "state", "robot"))
    with pytest.raises(TypeError, match="ReducedSystem"):
        vc.ReducedDAlembertPontryagin(load_bundled("sleigh"), 0.01)
    gni = make_integrator("gni", load_bundled("sleigh"), 0.01)
    qdot0 = np.array([-1.0, 1.0, 2.0])  # (ẋ, ẏ, θ̇) of the centre of mass at q = 0: backing up, turning
    traj = rdp.simulate(
        np.zeros(3), np.zeros(0), np.zeros(0), spatial_to_body(np.zeros(3), qdot0[[2, 0, 1]]), steps=100
    )
    assert traj.g.shape == (101, 3) and np.array_equal(traj.poses_xytheta, traj.g[:, [1, 2, 0]])
    X, _ = gni.simulate(gni.state_from_velocity(np.zeros(3), qdot0), steps=100)
    gap = np.abs(X[:, :3] - traj.poses_xytheta).max()
    assert gap < 1e-3 and np.abs(X[-1, :3] - traj.g[-1]).max() > 100 * gap  # the order matters at this motion
