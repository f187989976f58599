"""REFERENCE §2 closed loop (Johnson2015, Fig. 4) and plans as data (save → load → same closed loop)."""

import numpy as np
import pytest

from vi_control.control.plan import Plan, state_error
from vi_control.planning import load_task, plan_task
from vi_control.planning.evaluate import simulate_plan, tracking_error

X0_PERTURBED = np.array([1.0, 1.0])  # Johnson2015, §VIII-A: x(0) = [1 1]ᵀ instead of [0 0]ᵀ


@pytest.fixture(scope="module")
def swingup_plan(pendulum_vi):
    return plan_task(pendulum_vi, load_task("task_pendulum_swingup"))[0]


def test_tv_lqr_rejects_the_perturbation_and_open_loop_does_not(swingup_plan, pendulum_vi):
    plan = swingup_plan
    Xc, _ = simulate_plan(pendulum_vi, plan, X0_PERTURBED, feedback=True)
    Xo, _ = simulate_plan(pendulum_vi, plan, X0_PERTURBED, feedback=False)
    err_c, err_o = tracking_error(pendulum_vi, plan, Xc), tracking_error(pendulum_vi, plan, Xo)
    assert err_c[0] == pytest.approx(1.0)
    assert err_c[-1] < 1e-3  # converged to the feasible reference (upright) ...
    assert err_c[60:].max() < 1e-2  # ... and stays there after the swing
    assert err_o[-1] > 1.0  # open loop misses it
    assert abs(state_error(plan.X[-1], Xo[-1], pendulum_vi.robot.continuous_mask)[0]) > 0.5


def test_hold_gain_keeps_the_pendulum_up_after_the_plan(swingup_plan, pendulum_vi):
    x = swingup_plan.X[-1] + np.array([0.05, -0.05])
    plan = swingup_plan
    tail = Plan(
        times=plan.times[-2:],
        X=plan.X[-2:],
        U=plan.U[-1:],
        K=plan.K[-1:],
        dt=plan.dt,
        model_name=plan.model_name,
        model_hash=plan.model_hash,
        joint_names=plan.joint_names,
        input_names=plan.input_names,
        K_final=plan.K_final,
        U_final=plan.U_final,
    )
    X, _ = simulate_plan(pendulum_vi, tail, x, feedback=True, extra_steps=100)
    assert np.abs(state_error(plan.X[-1], X[-1], [True])).max() < 1e-4


def test_plan_save_load_round_trip_drives_the_same_closed_loop(swingup_plan, pendulum_vi, tmp_path):
    plan = swingup_plan
    path = tmp_path / "swingup.npz"
    plan.save(str(path))
    loaded = Plan.load(str(path))
    for name in ("times", "X", "U", "K", "K_final", "U_final"):
        assert np.array_equal(getattr(loaded, name), getattr(plan, name)), name
    assert (loaded.model_name, loaded.model_hash, loaded.dt) == ("pendulum", pendulum_vi.robot.hash, 0.1)
    assert loaded.joint_names == ["theta"] and loaded.input_names == ["theta"]
    assert loaded.weights["weights"]["Q"] == [100.0, 1.0] and loaded.weights["method"] == "ddp"
    X1, U1 = simulate_plan(pendulum_vi, plan, X0_PERTURBED)
    X2, U2 = simulate_plan(pendulum_vi, loaded, X0_PERTURBED)
    assert np.array_equal(X1, X2) and np.array_equal(U1, U2)


def test_state_error_wraps_continuous_configurations_only_and_refuses_other_sizes():
    """x_ref − x: the continuous joint's angle to [−π, π), its momentum and the bounded joint's angle as they are,
    on (nq,), (nx,) and stacks; any other size is refused naming both sizes the mask allows."""
    mask = [True, False]
    e = state_error(np.array([3.0, 3.0, 5.0, 5.0]), np.array([-3.0, -3.0, -5.0, -5.0]), mask)
    np.testing.assert_allclose(e, [6.0 - 2 * np.pi, 6.0, 10.0, 10.0], rtol=0, atol=1e-15)
    np.testing.assert_allclose(state_error(np.array([3.0, 3.0]), np.array([-3.0, -3.0]), mask), e[:2], atol=1e-15)
    assert state_error(np.zeros((5, 3, 4)), np.ones((5, 3, 4)), mask).shape == (5, 3, 4)
    with pytest.raises(ValueError, match=r"size 3 is neither nq = 2 nor 2·nq = 4 of the continuous mask"):
        state_error(np.zeros(3), np.zeros(3), mask)
