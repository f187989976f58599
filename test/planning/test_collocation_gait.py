"""RABBIT five-link biped walking (MorenoMartin2022, §V-C): a periodic single-support step with the heel-strike impact
map collocated by LG and LG2 under the stance-foot constraint (holonomic constraints in the transcription), then
replayed in the midpoint VI with the impact map under TV-LQR."""

import numpy as np
import pytest

from vi_control.integrators.base import StepError
from vi_control.integrators.midpoint import MidpointVI
from vi_control.model.bundled import load_bundled
from vi_control.planning.collocation.gait import BipedGait
from vi_control.planning.collocation.metrics import dynamic_errors

N = 8


@pytest.fixture(scope="module")
def gait():
    return BipedGait(load_bundled("biped5_stance"))


@pytest.fixture(scope="module")
def gaits(gait):
    return {m: gait.solve(m, N) for m in ("lg", "lg2")}


def test_model_parameters_are_rabbits(gait):
    r = gait.robot
    assert r.masses["torso"] == 20.0 and r.masses["left_femur"] == 6.8 and r.masses["right_tibia"] == 3.2
    assert list(r.effort_limits) == [100.0] * 4 and list(r.actuated) == [
        "left_hip",
        "left_knee",
        "right_hip",
        "right_knee",
    ]  # passive ankle


def test_both_methods_find_the_periodic_gait_from_the_interpolated_guess(gait, gaits):
    """Converges from the straight-line guess in at most 143 IPOPT iterations (GPOPS-II's count, REFERENCE §7);
    LG and LG2 agree on the optimum; the step is periodic through the impact map."""
    for sol in gaits.values():
        assert sol.success and sol.iterations <= 143, (sol.status, sol.iterations)
        q0, v0, qf, vf = sol.Q[0], sol.V[0], sol.Q[-1], sol.V[-1]
        q_next, v_next = gait.relabel(qf, gait.impact(qf, vf))
        np.testing.assert_allclose(q0, q_next, atol=1e-8)
        np.testing.assert_allclose(v0, v_next, atol=1e-7)
        np.testing.assert_allclose(np.array(gait.foot("right", qf)).ravel(), [gait.step_length, 0.0], atol=1e-8)
        np.testing.assert_allclose(np.array(gait.foot("left", qf)).ravel(), [0.0, 0.0], atol=1e-8)
        # the swing foot stays above the ground at the collocation points, the impact pushes into it
        z = [float(gait.foot("right", q)[1]) for q in sol.Q[1:-1]]
        assert min(z) >= -1e-7 and np.abs(sol.U).max() <= 100.0 + 1e-6
    assert gaits["lg"].objective == pytest.approx(gaits["lg2"].objective, rel=0.02)
    # the same gait as the minimal-coordinate formulation (261.56), near GPOPS-II's 263.7 (REFERENCE §7)
    assert gaits["lg2"].objective == pytest.approx(263.7, rel=0.02)


def test_the_stance_foot_stays_down_along_the_polynomial(gait, gaits):
    """The holonomic constraint (imposed at acceleration level at the Gauss points, position and velocity at the
    start and end) holds along the whole interpolating polynomial to about a millimetre."""
    for sol in gaits.values():
        t = np.linspace(0.0, sol.tf, 81)
        h = np.array([gait.dynamics.constraint_value(q) for q in sol.q(t)])
        assert np.abs(h).max() < 2e-3


def test_lg2_has_the_lower_second_order_error(gait, gaits):
    E = {m: dynamic_errors(s, gait.dynamics, subintervals=200).E2 for m, s in gaits.items()}
    assert E["lg2"] < 0.5 * E["lg"], E  # measured 2.9× at N = 8 (docs/concepts/collocation.md: the paper reports ~10×)


@pytest.fixture(scope="module")
def cycle(gait, gaits):
    """The LG2 step on a 10 ms VI grid: polished, closed into an exact cycle, periodic TV-LQR gains (solved once)."""
    vi = MidpointVI(gait.robot, 0.01)
    Q, R = np.diag([100.0] * 7 + [1.0] * 7), 0.01 * np.eye(4)
    return vi, gait.periodic_step(vi, gaits["lg2"], Q, R, 10 * Q)


def test_vi_reference_step_is_feasible_and_periodic_through_the_impact_map(gait, cycle):
    """Each step of the reference equals ``vi.step`` (a VI rollout), the stance foot stays exactly down, and the
    impact map applied to the last state gives back the first (the polished step alone misses by ~0.1)."""
    vi, c = cycle
    X, U = c.X, c.U
    assert X.shape == (81, 14) and U.shape == (80, 4) and np.abs(U).max() <= 100.0
    assert max(np.abs(vi.step(X[k], U[k]) - X[k + 1]).max() for k in range(80)) < 1e-8
    assert max(np.abs(vi.constraint(x[:7])).max() for x in X) < 1e-10  # the VI keeps the stance foot exactly down
    assert c.polish_mismatch > 1e-2  # why the cycle has to be closed: the VI's step differs from the polynomial's
    assert len(c.residuals) <= 8 and c.residuals[-1] < 1e-10, c.residuals  # Newton, quadratic
    np.testing.assert_allclose(gait.discrete_impact(vi, X[-1]), X[0], atol=1e-9)
    assert gait.deviation(vi, gait.discrete_impact(vi, X[-1]), X[0]) < 1e-9
    # closing the closed cycle again: it starts where it ended (a defect at round-off, not the state's size)
    _, _, again = gait.close_cycle(vi, X, U, c.K)
    assert again[0] < 1e-7 and again[-1] < 1e-10 and len(again) <= 3, again


def test_a_walker_at_rest_lands_at_rest_on_the_vis_own_discrete_momentum(gait):
    """``discrete_impact`` of a held state x⁻ = (q, D₂L_d(q, q)) (q̇⁻ = 0: no impulse) is the held state of the
    relabelled configuration, x⁺ = (q⁺, D₂L_d(q⁺, q⁺)) with D₂L_d the VI's own (``equilibrium_state``, the midpoint
    rule's −(Δt/2)∇V(q⁺)) — not only periodic: the map's own D₂L_d is the VI's."""
    from vi_control.control.hold import equilibrium_state

    vi = MidpointVI(gait.robot, 0.01)
    q = np.array([0.0, 0.0, 0.1, 0.3, -0.4, 0.5, -0.2])[: vi.nq]
    x_plus = gait.discrete_impact(vi, equilibrium_state(vi, q), anchor=False)
    q_plus, v_plus = gait.relabel(q, np.zeros(vi.nq))
    assert not np.any(v_plus)
    want = equilibrium_state(vi, q_plus)
    assert np.abs(want[vi.nq :]).max() > 1e-3  # (gravity: the held momentum is not zero)
    np.testing.assert_allclose(x_plus, want, rtol=0, atol=1e-12)


def test_vi_replay_stays_on_the_cycle_under_tv_lqr_and_falls_open_loop(gait, cycle):
    """Ten steps in the VI with the impact map under the periodic TV-LQR gains: from the reference's start the walker
    stays on the cycle; from a start 0.02 rad off (swing knee) it converges back; without feedback it falls."""
    vi, c = cycle
    dev, walked = gait.replay(vi, c.X, c.U, c.K, steps=10)
    assert len(walked) == 10 and dev.max() < 1e-6, dev
    x0 = c.X[0].copy()
    x0[6] += 0.02  # right (swing) knee: the stance foot stays on the ground
    dev, _ = gait.replay(vi, c.X, c.U, c.K, steps=10, x0=x0)
    assert dev[0] == pytest.approx(0.02) and dev[-1] < 1e-4 * dev[0] and dev[5] < 1e-1 * dev[0], dev
    try:
        dev_open, _ = gait.replay(vi, c.X, c.U, None, steps=3, x0=x0)
        fell = dev_open.max() > 2.0
    except StepError:  # the open-loop walker leaves the step's domain
        fell = True
    assert fell


def test_periodic_gains_do_not_depend_on_the_unit_of_the_cost(gait, cycle):
    """The periodic Riccati recursion stops on a change of P₀ relative to P₀: with 1e-9·(1 + |P₀|) the weights × 2⁻⁴⁰
    stopped early, the gains 1.6e-5 off."""
    vi, cyc = cycle
    Q, R = np.diag([100.0] * 7 + [1.0] * 7), 0.01 * np.eye(4)
    K1 = gait.periodic_gains(vi, cyc.X, cyc.U, Q, R)
    s = 2.0**-40
    K = gait.periodic_gains(vi, cyc.X, cyc.U, s * Q, s * R)
    assert np.abs(K - K1).max() < 1e-12 * np.abs(K1).max()


@pytest.mark.parametrize("step_length", [0.5, 0.3])
def test_the_guess_starts_and_ends_in_double_support_one_step_apart(step_length):
    """The interpolated guess's end poses (forward kinematics of the URDF, not the poses' formula): both feet on
    the ground, the stance (left) foot at the origin, the swing foot a step behind at the start and a step ahead
    at the end, the legs straight."""
    g = BipedGait(load_bundled("biped5_stance"), step_length=step_length)
    q_start, q_end = g.standing_poses
    for q, swing_x in ((q_start, -step_length), (q_end, step_length)):
        np.testing.assert_allclose(np.array(g.foot("left", q)).ravel(), [0.0, 0.0], atol=1e-12)
        np.testing.assert_allclose(np.array(g.foot("right", q)).ravel(), [swing_x, 0.0], atol=1e-12)
        assert q[list(g.knees)].tolist() == [0.0, 0.0]
