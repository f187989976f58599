"""L1 (minimum-fuel) control on SO(3) with bounded torques (Jimenez2013, §6.2, Fig. 3), by IPOPT on the discrete
problem with separate u_k⁻, u_k⁺ so the input can switch inside a step."""

import numpy as np
import pytest

import vi_control as vc
from vi_control.mechanics.euler_poincare import momenta
from vi_control.mechanics.groups import Retraction
from vi_control.model.rigid_body import load_rigid_body
from vi_control.planning.dmoc import DMOCProblem, solve_dmoc
from vi_control.planning.vehicle import maneuver_settings, maneuvers

BODY = load_rigid_body("spacecraft_l1")


@pytest.fixture(scope="module")
def l1():
    st = maneuver_settings(BODY)
    _, g0, gT = maneuvers(BODY)[0]
    prob = DMOCProblem(BODY, g0, gT, st.horizon, st.duration, st.retraction, inputs="split")
    res = vc.solve_l1(prob)  # the public API: solve_ipopt(cost='l1') at the body's effort limits
    return prob, res


def test_l1_solution_is_bang_off_bang_within_the_bounds(l1):
    prob, res = l1
    assert res.success, res.status
    lim = BODY.effort_limits
    assert lim.tolist() == [0.5, 0.5] and BODY.input_matrix.shape == (3, 2)  # two torques, about body x and y
    U = np.concatenate([res.u_minus, res.u_plus])
    assert np.all(np.abs(U) <= lim + 1e-9)
    dist = np.min(np.abs(U[..., None] - np.array([-lim[0], 0.0, lim[0]])), axis=-1)
    assert np.mean(dist <= 1e-6) >= 0.95, np.mean(dist <= 1e-6)
    assert np.any(np.abs(res.u_minus) > 0.4) and np.mean(np.abs(U) <= 1e-6) > 0.5  # bang … off … bang
    assert np.any(np.abs(res.u_minus - res.u_plus) > 0.1)  # a jump inside a step (u_k⁻ ≠ u_k⁺)


def test_l1_solution_satisfies_the_discrete_dynamics_and_reaches_the_goal(l1):
    prob, res = l1
    G, h = prob.group, prob.dt
    ret = Retraction(G, prob.retraction)
    B, I = BODY.input_matrix, BODY.spatial_inertia
    g = prob.g0
    for k, xi in enumerate(res.xi):
        mu, mup = momenta(ret, I, h, xi)  # eqs. 26–27 with f = Bu (no drag)
        assert np.abs((2 / h) * (mu - res.nu[k]) - B @ res.u_minus[k]).max() <= 1e-8
        assert np.abs((2 / h) * (res.nu[k + 1] - mup) - B @ res.u_plus[k]).max() <= 1e-8
        g = g @ ret.tau(h * xi)
    assert np.abs(ret.tau_inv(G.inverse(prob.gT) @ g)).max() <= 1e-9
    assert np.abs(res.nu[0]).max() == 0.0 and np.abs(res.nu[-1]).max() == 0.0


def test_l1_uses_less_fuel_than_the_minimum_effort_plan(l1):
    prob, res = l1
    l2 = solve_dmoc(prob, continuation=False, fallback="ipopt")
    assert l2.converged
    fuel = lambda um, up: 0.5 * prob.dt * (np.abs(um).sum() + np.abs(up).sum())  # noqa: E731
    assert res.cost == pytest.approx(fuel(res.u_minus, res.u_plus), rel=1e-6)
    assert res.cost < fuel(l2.u_minus, l2.u_plus)
