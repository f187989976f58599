"""LinearTimeVI trajectories: order of accuracy against scipy's solve_ivp on Pinocchio's ABA, agreement with
MidpointVI, energy behaviour on the passive 10-body chain of Lee2016, §4.2, discrete Noether, RIQN = Newton."""

import linear_time_oracle
import numpy as np
import pinocchio as pin
import pytest
from scipy.integrate import solve_ivp

from vi_control.integrators import make_integrator
from vi_control.integrators.linear_time import ConvergenceError, LinearTimeVI
from vi_control.integrators.midpoint import MidpointVI
from vi_control.model import load_robot
from vi_control.model.generate import planar_chain_urdf


@pytest.fixture(scope="module")
def chain5():
    return load_robot(planar_chain_urdf(5))


@pytest.fixture(scope="module")
def chain10():
    return load_robot(planar_chain_urdf(10))


def _reference(robot, q0, v0, T):
    """Continuous passive dynamics q̈ = ABA(q, q̇, −c q̇), integrated to rtol 1e-12."""
    m, d, n = robot.pin_model, robot.pin_model.createData(), robot.nq

    def rhs(_, y):
        return np.concatenate([y[n:], pin.aba(m, d, y[:n], y[n:], -robot.damping * y[n:])])

    sol = solve_ivp(rhs, (0.0, T), np.concatenate([q0, v0]), method="DOP853", rtol=1e-12, atol=1e-12)
    return sol.y[:n, -1], sol.y[n:, -1]


@pytest.mark.parametrize("which", ["pendulum", "chain5"])
def test_second_order_convergence(which, pendulum_robot, chain5):
    robot = pendulum_robot if which == "pendulum" else chain5
    n = robot.nq
    q0 = np.full(n, 0.6)
    v0 = np.linspace(1.0, -0.5, n)
    T = 1.0
    q_ref, v_ref = _reference(robot, q0, v0, T)
    errors = []
    for N in (40, 80, 160):
        vi = LinearTimeVI(robot, T / N)
        X, _ = vi.simulate(vi.state_from_velocity(q0, v0), np.zeros((N, vi.nu)))
        errors.append(np.abs(X[-1, :n] - q_ref).max())
        assert np.allclose(vi.velocity(X[-1]), v_ref, atol=50 * errors[-1] + 1e-9)
    orders = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    assert np.all((orders >= 1.8) & (orders <= 2.2)), (errors, orders)


def test_agrees_with_midpoint_vi_at_small_dt(chain5):
    """Both are second-order VIs with different L_d: trajectories differ by O(Δt²)."""
    n, T = chain5.nq, 0.5
    q0, v0 = np.full(n, 0.3), np.linspace(0.5, -0.5, n)
    diffs = []
    for N in (50, 100):
        lt, mp = LinearTimeVI(chain5, T / N), MidpointVI(chain5, T / N)
        Xl, _ = lt.simulate(lt.state_from_velocity(q0, v0), np.zeros((N, n)))
        Xm, _ = mp.simulate(mp.state_from_velocity(q0, v0), np.zeros((N, n)))
        diffs.append(np.abs(Xl[:, :n] - Xm[:, :n]).max())
    assert diffs[1] < 2e-3
    assert 3.0 < diffs[0] / diffs[1] < 5.0  # the gap itself shrinks like Δt²


def test_energy_bounded_on_passive_10_body_chain(chain10):
    """Lee2016, §4.2 / Fig. 2b: RIQN keeps the energy of the passive chain; semi-implicit Euler does not."""
    n, dt, N = 10, 5e-3, 1000
    vi = LinearTimeVI(chain10, dt)
    q0 = np.zeros(n)
    q0[0] = np.pi / 2  # released horizontal
    X, _ = vi.simulate(vi.state_from_velocity(q0, np.zeros(n)), np.zeros((N, n)))
    E = np.array([vi.energy(x) for x in X])
    scale = 9.81 * n * n / 2  # potential energy range of the chain (m = L = 1 per link)
    vi_error = np.abs(E - E[0]).max()
    assert vi_error < 5e-3 * scale
    assert abs(E[-200:].mean() - E[:200].mean()) < 1e-3 * scale  # no drift, only bounded oscillation
    m, d = chain10.pin_model, chain10.pin_model.createData()
    q, v = q0.copy(), np.zeros(n)
    euler = []
    for _ in range(N):
        v = v + dt * pin.aba(m, d, q, v, np.zeros(n))
        q = q + dt * v
        euler.append(pin.computeKineticEnergy(m, d, q, v) + pin.computePotentialEnergy(m, d, q))
    assert np.abs(np.array(euler) - E[0]).max() > 20 * vi_error


def test_discrete_noether_momentum_conserved():
    """Without gravity the chain's L_d is invariant under rotating the first joint: p₁ is exactly conserved."""
    robot = load_robot(planar_chain_urdf(4), {"gravity": [0.0, 0.0, 0.0]})
    vi = LinearTimeVI(robot, 0.02)
    X, _ = vi.simulate(
        vi.state_from_velocity(np.array([0.1, 0.5, -0.4, 0.3]), np.array([1.0, -2.0, 0.5, 1.5])), np.zeros((200, 4))
    )
    # each step conserves it up to the solver tolerance (1e-12 relative), so 200 steps stay below 1e-9
    assert np.abs(X[:, 4] - X[0, 4]).max() < 1e-9 * (1 + abs(X[0, 4]))
    assert np.abs(np.diff(X[:, 5])).max() > 1e-3  # the other momenta do change


def test_riqn_and_newton_solve_the_same_step(chain10, rng):
    n = 10
    q0 = np.linspace(0.2, 1.0, n) + 0.1 * rng.uniform(-1, 1, n)
    sols = {}
    for method in ("riqn", "newton"):
        for ig in ("IG1", "IG2", "IG3"):
            vi = LinearTimeVI(chain10, 1e-3, method=method, initial_guess=ig)
            x = vi.state_from_velocity(q0, np.linspace(2, -2, n))
            r = vi.solve(x, np.linspace(-1, 1, n))
            xn = r.x
            f = vi.residual(x, np.linspace(-1, 1, n), xn[:n])
            assert np.abs(f).max() <= 1e-12 * (1 + np.abs(x[n:]).max())
            sols[method, ig] = (xn, r.iterations)
    ref = sols["newton", "IG3"][0]
    for xn, _ in sols.values():
        assert np.allclose(xn, ref, atol=1e-11 * (1 + np.abs(ref).max()))
    # quasi-Newton needs at least as many iterations as Newton from the same guess (Lee2016, Fig. 4)
    for ig in ("IG1", "IG2", "IG3"):
        assert sols["riqn", ig][1] >= sols["newton", ig][1]


def test_the_initial_guesses_by_default_predict_one_step_of_the_integrators_own_dt(chain5):
    """Lee2016, §3.3: IG1 q_k, IG2 q_k + Δt q̇_k, IG3 q_k + Δt (q̇_k + Δt q̈_k) with q̈ from Pinocchio's ABA — Δt the
    integrator's own unless a substep's is given (the fallback chain's)."""
    n, dt = 5, 0.01
    q, v, u = np.linspace(0.1, 0.5, n), np.linspace(1.0, -1.0, n), np.linspace(-0.5, 0.5, n)
    for ig in ("IG1", "IG2", "IG3"):
        vi = LinearTimeVI(chain5, dt, initial_guess=ig)
        x = vi.state_from_velocity(q, v)
        a = pin.aba(chain5.pin_model, chain5.pin_model.createData(), q, v, u - vi.damping * v)
        for h in (dt, dt / 4):
            want = {"IG1": q, "IG2": q + h * v, "IG3": q + h * (v + h * a)}[ig]
            got = vi.initial_guess(x, u) if h == dt else vi.initial_guess(x, u, h)
            assert np.allclose(got, want, rtol=0, atol=1e-12), (ig, h)


def test_state_from_configurations_recovers_the_discrete_momentum(chain5):
    vi = LinearTimeVI(chain5, 0.01)
    X, _ = vi.simulate(vi.state_from_velocity(np.full(5, 0.4), np.zeros(5)), np.full((20, 5), 0.3))
    for k in (1, 10, 20):
        assert np.allclose(vi.state_from_configurations(X[k - 1, :5], X[k, :5]), X[k], atol=1e-10)


def test_factory_and_guards(pendulum_robot):
    lt = make_integrator("linear_time", pendulum_robot, 0.01, method="newton", initial_guess="IG2")
    assert isinstance(lt, LinearTimeVI) and (lt.nq, lt.nx, lt.nu, lt.dt) == (1, 2, 1, 0.01)
    assert isinstance(make_integrator("midpoint", pendulum_robot, 0.01), MidpointVI)
    with pytest.raises(ValueError, match="unknown integrator"):
        make_integrator("rk4", pendulum_robot, 0.01)
    with pytest.raises(ValueError, match="method"):
        LinearTimeVI(pendulum_robot, 0.01, method="broyden")
    with pytest.raises(ValueError, match="input has size"):
        lt.step(np.zeros(2), np.zeros(3))
    constrained = load_robot(
        planar_chain_urdf(2),
        {"constraints": [{"type": "plane", "link": "link2", "point": [0, 0, -2], "normal": [0, 0, 1]}]},
    )
    with pytest.raises(NotImplementedError):
        LinearTimeVI(constrained, 0.01)


def test_non_convergence_is_reported(chain5, monkeypatch):
    vi = LinearTimeVI(chain5, 0.05, max_iterations=3, fallback=False)
    x = vi.state_from_velocity(np.full(5, 1.0), np.full(5, 3.0))
    with pytest.raises(ConvergenceError) as err:
        vi.step(x, np.zeros(5), step_index=7)
    assert err.value.step == 7 and err.value.residual > 1e-6
    # with the fallback chain cut to its Newton stage (no substeps), the error says what was tried
    monkeypatch.setattr(linear_time_oracle, "MAX_DEPTH", 0)  # (the oracle's chain: the C's depth is compiled in)
    vi = linear_time_oracle.NumpyLinearTimeVI(chain5, 0.05, max_iterations=3)
    with pytest.raises(
        ConvergenceError, match="RIQN did not converge at Δt .*; Newton with the exact Jacobian neither"
    ) as err:
        vi.step(x, np.zeros(5), step_index=7)
    assert err.value.step == 7


def test_wrapping_continuous_joints_changes_nothing_physical(pendulum_robot):
    """L_d depends on relative placements only: wrapped and unwrapped runs differ by multiples of 2π."""
    runs = []
    for wrap in (False, True):
        vi = LinearTimeVI(pendulum_robot, 0.05, wrap_continuous=wrap)
        X, _ = vi.simulate(vi.state_from_velocity(np.array([3.0]), np.array([8.0])), np.zeros((60, 1)))
        runs.append(X)
    assert np.abs(runs[0][:, 0]).max() > 2 * np.pi and np.abs(runs[1][1:, 0]).max() <= np.pi
    assert np.allclose(np.cos(runs[0][:, 0]), np.cos(runs[1][:, 0]), atol=1e-9)
    assert np.allclose(runs[0][:, 1], runs[1][:, 1], atol=1e-9)
