"""control.tracking.TrackingController past the plan's end: for k ≥ N it tracks the plan's last state X_N with the
plan's hold input and gain (U_final, K_final) — at X_N the command is U_final exactly, off it U_final + K_final
(X_N − x). (``tracking_law`` puts the equilibrium state of q_N in X_N's place first.)"""

import numpy as np

from vi_control.control.plan import Plan
from vi_control.control.tracking import TrackingController


def _pendulum_plan(vi, X: np.ndarray, U: np.ndarray, K: np.ndarray) -> Plan:
    """A pendulum plan of the states X (N+1, 2), inputs U and gains K, held after its end by U_final = 0.7 and
    K_final = [2, 0.5]."""
    N = len(U)
    return Plan(
        times=np.arange(N + 1) * vi.dt,
        X=X,
        U=U,
        K=K,
        dt=vi.dt,
        model_name="pendulum",
        model_hash=vi.robot.hash,
        joint_names=["theta"],
        input_names=["theta"],
        U_final=np.array([0.7]),
        K_final=np.array([[2.0, 0.5]]),
    )


def test_past_the_end_the_law_holds_the_last_state(pendulum_vi):
    vi, N = pendulum_vi, 5
    rng = np.random.default_rng(0)
    X = rng.normal(size=(N + 1, 2))
    plan = _pendulum_plan(vi, X, rng.normal(size=(N, 1)), rng.normal(size=(N, 1, 2)))
    law = TrackingController(plan, vi.state, vi.robot.effort_limits, 1)
    for k in (N, N + 1, 3 * N):
        x_ref, u_ref, K = law.reference(k)
        assert np.array_equal(x_ref, X[N]) and np.array_equal(u_ref, [0.7]) and np.array_equal(K, [[2.0, 0.5]])
    assert np.array_equal(law.command(N + 2, X[N])[0], [0.7])
    dx = np.array([0.01, -0.02])
    assert np.allclose(law.command(N + 2, X[N] + dx)[0], 0.7 - (2.0 * 0.01 + 0.5 * -0.02), rtol=0, atol=1e-15)
    x_ref, u_ref, _ = law.reference(N - 1)  # the last step of the plan itself
    assert np.array_equal(x_ref, X[N - 1]) and np.array_equal(u_ref, plan.U[N - 1])


def test_the_controllers_law_holds_the_equilibrium_of_q_N_not_a_moving_X_N(pendulum_vi):
    """``tracking_law`` (the controller's): a plan that ends moving (X_N's momentum 0.4 off the equilibrium's) is held
    after its horizon about the equilibrium state of q_N — the state its hold input and gain were computed about
    (``hold_gain``) — so that at rest at q_N the command is U_final exactly, not U_final + K_final·(0.4 of momentum)."""
    from vi_control.control.hold import equilibrium_state
    from vi_control.control.tracking import tracking_law

    vi, N = pendulum_vi, 5
    X = np.zeros((N + 1, 2))
    X[:, 0] = np.linspace(0.0, 0.3, N + 1)
    x_eq = equilibrium_state(vi, X[N, :1])
    X[N, 1] = x_eq[1] + 0.4
    plan = _pendulum_plan(vi, X, np.zeros((N, 1)), np.zeros((N, 1, 2)))
    law = tracking_law(plan, vi)
    assert np.array_equal(law.reference(N)[0], x_eq) and np.array_equal(plan.X[N], X[N])  # (the plan kept)
    assert np.array_equal(law.command(N + 1, x_eq)[0], [0.7])
