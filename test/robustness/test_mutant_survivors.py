"""Survivors of the AST mutation pilot (benchmarks/mutate_ast.py) that were real gaps, each now
checked against something independent of the code that computes it."""

import warnings

import numpy as np
import pytest

import vi_control as vc
from vi_control.integrators import make_integrator
from vi_control.linearization import linearize_trajectory
from vi_control.model.limits import DT_RANGE, check_time_step
from vi_control.planning.vehicle import pose_from_spec


def test_a_prescribed_coordinates_state_slot_is_its_finite_difference_velocity():
    """``state_from_configurations`` holds, for a prescribed coordinate, its velocity (q_k − q_{k−1})/Δt (what
    ``velocity`` and the step read back); dropping that line left the discrete momentum there and survived."""
    robot = vc.load_robot("marionette")
    vi = vc.MidpointVI(robot, 0.01)
    assert len(vi.idx_k)
    rng = np.random.default_rng(1)
    q_prev = rng.uniform(-0.1, 0.1, vi.nq)
    q = q_prev + rng.uniform(-0.01, 0.01, vi.nq)
    x = vi.state_from_configurations(q_prev, q)
    fd = (q - q_prev) / 0.01
    np.testing.assert_allclose(vi.velocity(x)[vi.idx_k], fd[vi.idx_k], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(x[vi.nq :][vi.idx_k], fd[vi.idx_k], rtol=1e-12, atol=1e-12)


def test_a_maneuver_plans_final_gain_is_the_last_stage_of_its_riccati_recursion():
    """K_final of a DMOC plan is the gain of its last stage: with P_N = Q_f, K_{N−1} = (R + BᵀQ_fB)⁻¹BᵀQ_fA at the
    plan's last linearization (seed 000 eq. 36) — computed here from that formula, not from tv_lqr. K[−2] in its
    place survived."""
    body = vc.load_rigid_body("spacecraft")
    vi = make_integrator("lie_group", body, 0.25)
    goal = pose_from_spec({"rpy_deg": [0.0, 0.0, 30.0]}, "SO3")
    plan, _ = vc.plan_maneuver(vi, goal, horizon=16)
    lin = linearize_trajectory(vi, plan.X, plan.U)
    A, B = lin.A[-1], lin.B[-1]
    w = plan.weights["lqr"]
    Qf = np.diag(np.broadcast_to(np.asarray(w["Qf"], float), (A.shape[0],)))
    R = np.diag(np.broadcast_to(np.asarray(w["R"], float), (B.shape[1],)))
    K_last = np.linalg.solve(R + B.T @ Qf @ B, B.T @ Qf @ A)
    np.testing.assert_allclose(plan.K_final, K_last, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(plan.K[-1], K_last, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("dt", [DT_RANGE[0] / 2, DT_RANGE[1] * 2])
def test_the_time_step_warning_states_the_range(dt):
    """The warning outside DT_RANGE names the range it means ([1e-06, 1] s): an index of it mutated into the
    message's text survived (an IndexError only when the warning fires)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert check_time_step(dt) == dt
    assert any("is outside [1e-06, 1] s" in str(w.message) for w in caught), [str(w.message) for w in caught]


def test_a_dmoc_problems_step_is_bounded_at_both_ends():
    """T/N must be a plan's Δt, [1e-5, 10] s: both ends accepted, the next doubles refused with the range (an index
    of PLAN_DT_RANGE mutated in that message survived: nothing refused a step)."""
    import math

    from vi_control.model.limits import PLAN_DT_RANGE
    from vi_control.planning.dmoc import DMOCProblem

    body = vc.load_rigid_body("spacecraft")
    for dt in PLAN_DT_RANGE:
        DMOCProblem(body, np.eye(3), np.eye(3), 8, 8 * dt)
    for dt in (math.nextafter(PLAN_DT_RANGE[0], 0) * (1 - 1e-15), PLAN_DT_RANGE[1] * (1 + 1e-15)):
        with pytest.raises(ValueError, match=r"duration / horizon = .* must be in \[1e-05, 10\] s"):
            DMOCProblem(body, np.eye(3), np.eye(3), 8, 8 * dt)


def test_task_vectors_are_bounded_inclusively():
    """A weight of exactly MAX_COEFFICIENT (1e12) and a goal of exactly MAX_CONFIGURATION (1e6) are inside their
    ranges, the next doubles outside (> flipped to >= survived: no test sat on the bound)."""
    import math

    from vi_control.model.limits import MAX_COEFFICIENT, MAX_CONFIGURATION
    from vi_control.planning.task import TaskError
    from vi_control.planning.task_values import parse_vector

    for bound in (MAX_COEFFICIENT, MAX_CONFIGURATION):
        assert parse_vector([bound, -bound], "w", bound=bound).tolist() == [bound, -bound]
        with pytest.raises(TaskError, match=r"^w: .* is beyond the supported range"):
            parse_vector([math.nextafter(bound, math.inf)], "w", bound=bound)


def test_an_ipopt_run_of_exactly_max_iterations_counts_them():
    """IPOPT stopped at its iteration limit reports max_iterations iterations (CasADi's uninitialized counts
    outside [0, max_iterations] are 0): < in place of <= survived."""
    from vi_control.planning.errors import ipopt_iterations

    assert ipopt_iterations({"iter_count": 500}, 500) == 500
    assert ipopt_iterations({"iter_count": 0}, 500) == 0
    assert ipopt_iterations({"iter_count": 501}, 500) == 0
    assert ipopt_iterations({"iter_count": -1305018176}, 500) == 0


@pytest.mark.parametrize("joints", [[], ["j1", "j1"], "j1", None])
def test_a_joints_constraint_needs_a_list_of_distinct_joints(joints):
    """A coupling constraint Σ cᵢqᵢ = o over no joint, or one joint twice, or a bare name, is refused by name (the
    three conditions joined by and in place of or survived test_model_errors, test_fuzz and the constraint tests)."""
    from vi_control.model.system_config import SystemConfigError, parse_system_config

    c = {"type": "joints", "joints": joints, "coefficients": [1.0, -1.0][: len(joints or [])] or [1.0]}
    with pytest.raises(SystemConfigError, match=r"^constraints\[0\]\.joints: expected a list of distinct joint"):
        parse_system_config({"constraints": [c]})
    ok = parse_system_config({"constraints": [dict(c, joints=["j1", "j2"], coefficients=[1.0, -1.0])]})
    assert ok.constraints[0].joints == ("j1", "j2")
