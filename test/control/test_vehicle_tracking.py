"""Tracking a DMOC plan with TV-LQR on the Lie algebra (Jimenez2013, §6.1 vehicle).

The gains come from the project's tv_lqr on the exact linearization of the group step (FD-checked along the
plan); the law is the project's TrackingController, whose error ``state.diff`` is τ⁻¹ on the pose. The plant is
the same integrator with the vehicle 5 % heavier or lighter (mass and inertia, ballasted to the same trim) and
5 % more or less drag.
"""

import numpy as np
import pytest

from vi_control.control.tracking import TrackingController
from vi_control.integrators import make_integrator
from vi_control.linearization import linearize
from vi_control.model.rigid_body import load_rigid_body
from vi_control.planning.dmoc import DMOCError
from vi_control.planning.vehicle import (
    GoalUnreachableError,
    maneuver_settings,
    maneuver_timing,
    maneuvers,
    plan_maneuver,
    pose_from_spec,
)

BODY = load_rigid_body("vehicle_uuv")
SETTINGS = maneuver_settings(BODY)


@pytest.fixture(scope="module")
def vi():
    return make_integrator("lie_group", BODY, SETTINGS.dt)


@pytest.fixture(scope="module")
def plans(vi):
    chosen = {"forward_yaw", "reconfigure", "descend_turn"}
    return [
        (name, *plan_maneuver(vi, gT, vi.state_from_pose(g0))) for name, g0, gT in maneuvers(BODY) if name in chosen
    ]


def _pose_error(vi, goal_state, x):
    """max |τ⁻¹(g_goal⁻¹ g)| over rotation [rad] and position [m]."""
    return float(np.abs(vi.state.diff(goal_state, x)[:6]).max())


def test_gains_come_from_the_exact_linearization_of_the_group_step(vi, plans):
    name, plan, _ = plans[1]
    assert plan.K.shape == (32, 5, 12) and plan.X.shape == (33, 18)
    for k in (0, 13, 31):
        lin = linearize(vi, plan.X[k], plan.U[k])
        x1, eps = vi.step(plan.X[k], plan.U[k]), 1e-6

        def f(dx, du, xk=plan.X[k], uk=plan.U[k], x1=x1):
            return vi.state.diff(x1, vi.step(vi.state.integrate(xk, dx), uk + du))

        A = np.column_stack([(f(e * eps, 0) - f(-e * eps, 0)) / (2 * eps) for e in np.eye(12)])
        B = np.column_stack([(f(np.zeros(12), e * eps) - f(np.zeros(12), -e * eps)) / (2 * eps) for e in np.eye(5)])
        assert np.abs(A - lin.A).max() <= 1e-6 * np.abs(A).max(), (name, k)
        assert np.abs(B - lin.B).max() <= 1e-6 * np.abs(B).max(), (name, k)


@pytest.mark.parametrize("scale", [1.05, 0.95])
def test_algebra_tv_lqr_reaches_the_goal_with_mass_and_drag_mismatch(vi, plans, scale):
    plant = make_integrator(
        "lie_group", load_rigid_body("vehicle_uuv", mass_scale=scale, drag_scale=scale), SETTINGS.dt
    )
    for name, plan, _ in plans:
        X_nominal, _ = vi.simulate(plan.X[0], plan.U)
        assert np.abs(vi.state.diff(plan.X, X_nominal)).max() <= 1e-10  # the plan is the model's own rollout
        X_open, _ = plant.simulate(plan.X[0], plan.U)
        ctl = TrackingController(plan, vi.state, BODY.effort_limits)
        x = plan.X[0].copy()
        for k in range(plan.horizon):
            u, _ = ctl.command(k, x)
            x = plant.step(x, u)
        open_err, closed_err = _pose_error(vi, plan.X[-1], X_open[-1]), _pose_error(vi, plan.X[-1], x)
        assert open_err > 5e-2, (name, open_err)  # the open loop misses by centimetres / degrees
        assert closed_err < 1e-2, (name, closed_err)


def test_goal_unreachable_under_the_thruster_limits_is_named(vi):
    weak = load_rigid_body(dict(_vehicle_yaml(), thruster_layout=dict(type="seed002_uuv", c=0.1, d=0.1, limit=0.1)))
    vi_weak = make_integrator("lie_group", weak, SETTINGS.dt)
    goal = pose_from_spec({"position": [3.0, 1.0, 0.0], "rpy_deg": [0.0, 0.0, 90.0]}, "SE3")
    with pytest.raises(GoalUnreachableError, match="unreachable under the actuator limits.*thruster_"):
        plan_maneuver(vi_weak, goal)
    # a goal the limits allow after re-solving with bounds: the plan respects them
    near = pose_from_spec({"position": [0.5, 0.2, 0.0], "rpy_deg": [0.0, 0.0, 20.0]}, "SE3")
    plan, res = plan_maneuver(vi_weak, near)
    assert np.abs(res.u_minus).max() > 0.1  # the minimum-effort maneuver is over the limit ...
    assert np.abs(plan.U).max() <= 0.1 + 1e-9  # ... the bounded re-solve is not
    Xs, _ = vi_weak.simulate(plan.X[0], plan.U)
    assert _pose_error(vi_weak, plan.X[-1], Xs[-1]) <= 1e-6


def test_the_bounded_re_solve_is_checked_with_its_active_bounds():
    """The maneuver re-solved under the thruster limits (IPOPT with bounds) is checked like every DMOC answer, with
    the inputs at their limits held: a verified minimum whose bound multipliers push against the limits. The same
    point checked as if unbounded is not even stationary (the cost would fall by raising the clipped thrusts), so
    the bounds are what make it a minimum; and a limit moved off the point (10 % looser) frees those inputs: no
    longer stationary either; a limit looser by half the tolerance still holds them (at the boundary of
    ``ACTIVE_RTOL``)."""
    from vi_control.planning.dmoc import DMOCProblem
    from vi_control.planning.dmoc_check import ACTIVE_RTOL, second_order_check
    from vi_control.planning.dmoc_nlp import solve_ipopt

    weak = load_rigid_body(dict(_vehicle_yaml(), thruster_layout=dict(type="seed002_uuv", c=0.1, d=0.1, limit=0.1)))
    vi_weak = make_integrator("lie_group", weak, SETTINGS.dt)
    near = pose_from_spec({"position": [0.5, 0.2, 0.0], "rpy_deg": [0.0, 0.0, 20.0]}, "SE3")
    plan, res = plan_maneuver(vi_weak, near)
    chk = res.bounded_check
    assert chk is not None and chk.minimum and plan.converged, str(chk)
    assert chk.active_bounds > 0 and chk.wrong_sign_bounds == 0 and chk.kkt_inertia is not None
    lim = weak.effort_limits
    st = maneuver_timing(maneuver_settings(weak), vi_weak.dt, None, None)
    prob = DMOCProblem(weak, np.eye(4), near, st.horizon, st.duration, st.retraction, inputs="hold")
    g = np.array([vi_weak.pose(x) for x in plan.X])
    bounded = solve_ipopt(prob, bounds=lim, xi_guess=res.xi)
    args = (prob, bounded.xi, bounded.nu, g, bounded.u_minus, bounded.u_plus)
    again = second_order_check(*args, bounds=lim)
    assert again.minimum and again.active_bounds == chk.active_bounds
    unbounded = second_order_check(*args)
    assert not unbounded.minimum and unbounded.stationarity > 1e-3
    looser = second_order_check(*args, bounds=lim * (1 + 10 * ACTIVE_RTOL))
    assert looser.active_bounds == 0 and not looser.minimum
    inside = second_order_check(*args, bounds=lim * (1 + 0.5 * ACTIVE_RTOL))
    assert inside.active_bounds == chk.active_bounds and inside.minimum


def test_a_goal_along_the_unactuated_axis_is_refused_with_the_cause(vi):
    up = pose_from_spec({"position": [0.0, 0.0, 1.0]}, "SE3")
    with pytest.raises(DMOCError, match="unactuated direction"):
        plan_maneuver(vi, up)


def _vehicle_yaml():
    import yaml

    from vi_control.model.bundled import share_dir

    return yaml.safe_load((share_dir() / "config" / "vehicle_uuv.yaml").read_text())
