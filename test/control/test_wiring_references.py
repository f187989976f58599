"""Where plans, gains and states are wired together, checked against references computed here.

Each test is named after a defect that once survived the whole suite (benchmarks/mutations.py lists them):
- the stored TV-LQR gains are the Riccati recursion of Johnson2015, eq. 36, written out below, on the plan's own
  linearization and the task's ``lqr`` weights (not the cost weights, not shifted by a step);
- the hold gain is scipy's DARE gain under the ``hold`` weights, about τ = g sin q (the analytic holding torque);
- the step reference of Johnson2015, eq. 35 switches exactly at its step index;
- a prescribed joint's p-slot holds q̇ (Johnson2015, §II-A: its "momentum" is its velocity), and ``velocity()``
  subtracts the prescribed joints' coupling M_dk q̇_k before solving for the dynamic q̇ (Pinocchio's M);
- the tracking controller's step index is the nearest sample of t (off-grid stamps, on-grid stamps with round-off).
"""

import numpy as np
import pinocchio as pin
import pytest
from scipy.linalg import solve_discrete_are

from vi_control.control.plan import Plan
from vi_control.control.tracking import TrackingController
from vi_control.integrators.midpoint import MidpointVI
from vi_control.linearization import linearize
from vi_control.model import load_robot
from vi_control.model.bundled import bundled_urdf
from vi_control.planning import load_task, plan_task, reference_trajectory

G = 9.8  # the bundled pendulum: m = l = 1 about its pivot, g = 9.8 (config/pendulum.yaml)

# Three different weight sets: a gain built from the wrong one differs by far more than round-off.
TASK = {
    "name": "wiring",
    "model": "pendulum",
    "dt": 0.1,
    "horizon": 30,
    "start": {"q": [0.0]},
    "goal": {"q": [2.0]},
    "reference": {"type": "goal"},
    "input_limits": "none",
    "weights": {"Q": [10.0, 1.0], "R": 1.0, "Qf": [10.0, 1.0]},
    "lqr": {"Q": [60.0, 3.0], "R": 0.25, "Qf": [200.0, 8.0]},
    "hold": {"Q": [5.0, 0.2], "R": 4.0},
    "optimizer": {"method": "ddp", "max_iterations": 60, "tolerance": 1e-8},
}


def riccati_gains(A, B, Q, R, Qf):
    """K_k = (R + BᵀP_{k+1}B)⁻¹BᵀP_{k+1}A_k, P_k = Q + AᵀP_{k+1}A − AᵀP_{k+1}B K_k (Johnson2015, eq. 36a–b)."""
    P, K = Qf, [None] * len(A)
    for k in range(len(A) - 1, -1, -1):
        a, b = A[k], B[k]
        K[k] = np.linalg.solve(R + b.T @ P @ b, b.T @ P @ a)
        P = Q + a.T @ P @ a - a.T @ P @ b @ K[k]
    return np.array(K)


@pytest.fixture(scope="module")
def wiring_plan(pendulum_vi):
    task = load_task(TASK)
    plan, res = plan_task(pendulum_vi, task)
    assert res.converged
    return plan


def test_plan_gains_are_the_riccati_recursion_under_the_lqr_weights(wiring_plan, pendulum_vi):
    plan, vi = wiring_plan, pendulum_vi
    lins = [linearize(vi, x, u) for x, u in zip(plan.X[:-1], plan.U)]
    A, B = np.array([lin.A for lin in lins]), np.array([lin.B for lin in lins])
    W = {
        g: [
            np.diag(TASK[g][w]) if isinstance(TASK[g][w], list) else np.atleast_2d(TASK[g][w]) for w in ("Q", "R", "Qf")
        ]
        for g in ("weights", "lqr")
    }
    K_ref = riccati_gains(A, B, *W["lqr"])
    assert np.abs(plan.K - K_ref).max() <= 1e-8 * np.abs(K_ref).max()
    # what the defects would have stored instead: far from it
    assert np.abs(riccati_gains(A, B, *W["weights"]) - K_ref).max() > 0.05 * np.abs(K_ref).max()
    shifted = np.concatenate([K_ref[1:], K_ref[-1:]])
    assert np.abs(shifted - K_ref).max() > 1e3 * 1e-8 * np.abs(K_ref).max()


def test_hold_gain_is_scipys_dare_gain_under_the_hold_weights(wiring_plan, pendulum_vi):
    plan, vi = wiring_plan, pendulum_vi
    qN = plan.X[-1, :1]
    assert plan.U_final == pytest.approx(G * np.sin(qN), rel=1e-9)  # τ = m g l sin q holds the pendulum at q_N
    x_eq = vi.state_from_configurations(qN, qN)  # held still: q_{k−1} = q_k
    lin = linearize(vi, x_eq, plan.U_final)
    Q, R = np.diag(TASK["hold"]["Q"]), np.array([[TASK["hold"]["R"]]])
    P = solve_discrete_are(lin.A, lin.B, Q, R)
    K_ref = np.linalg.solve(R + lin.B.T @ P @ lin.B, lin.B.T @ P @ lin.A)
    assert np.abs(plan.K_final - K_ref).max() <= 1e-8 * np.abs(K_ref).max()
    assert np.abs(np.linalg.eigvals(lin.A - lin.B @ plan.K_final)).max() < 1.0


@pytest.mark.parametrize("ks", [1, 7, 29])
def test_step_reference_switches_at_its_step_index(pendulum_vi, ks):
    """Johnson2015, eq. 35: q_ref,k = q_before for k < k_s, q_after for k ≥ k_s; p_ref = 0, u_ref = 0."""
    task = load_task({**TASK, "reference": {"type": "step", "step_index": ks, "q_before": [0.5], "q_after": [2.5]}})
    X, U = reference_trajectory(task, pendulum_vi)
    expected = np.where(np.arange(31) < ks, 0.5, 2.5)
    assert np.array_equal(X[:, 0], expected) and not X[:, 1].any() and not U.any()


@pytest.fixture(scope="module")
def prescribed_vi():
    """Double pendulum whose elbow is prescribed (its input is its position), shoulder free (no torque)."""
    robot = load_robot(
        bundled_urdf("double_pendulum"), {"gravity": [0, 0, -9.81], "prescribed": ["elbow"], "actuated": []}
    )
    return MidpointVI(robot, 0.01)


def test_prescribed_p_slot_holds_the_velocity_and_velocity_keeps_the_coupling(prescribed_vi):
    vi = prescribed_vi
    (d,), (k,) = vi.idx_d, vi.idx_k
    q, qdot = np.array([0.4, -0.7]), np.array([0.3, 1.7])
    M = pin.crba(vi.robot.pin_model, vi.robot.pin_model.createData(), q)  # Pinocchio's joint-space inertia
    M = np.triu(M) + np.triu(M, 1).T
    p_dyn = M[d] @ qdot  # ∂L/∂q̇_d, which includes the prescribed joint's coupling M_dk q̇_k
    x = vi.state_from_velocity(q, qdot)
    assert x[2 + k] == qdot[k]  # the prescribed p-slot is q̇ itself
    assert x[2 + d] == pytest.approx(p_dyn, rel=1e-12)
    v = vi.velocity(np.concatenate([q, [p_dyn, qdot[k]] if d == 0 else [qdot[k], p_dyn]]))
    assert v == pytest.approx(qdot, rel=1e-12)  # q̇_d = (p_d − M_dk q̇_k) / M_dd
    # from two configurations: the prescribed slot is the finite difference, as the step itself writes it
    q_prev = q - 0.01 * qdot
    xc = vi.state_from_configurations(q_prev, q)
    assert xc[2 + k] == pytest.approx((q[k] - q_prev[k]) / 0.01, rel=1e-12)
    x1 = vi.step(xc, np.array([q[k] + 0.02]))  # ρ: the elbow's next position
    assert x1[2 + k] == pytest.approx(0.02 / 0.01, rel=1e-9)
    assert vi.state_from_configurations(q, x1[:2]) == pytest.approx(x1, rel=1e-9, abs=1e-12)


def test_tracking_index_is_the_nearest_sample_at_off_grid_and_noisy_stamps(pendulum_vi):
    dt = 0.1
    for t0 in (0.0, 1234.5):
        plan = Plan(
            times=t0 + np.arange(11) * dt,
            X=np.zeros((11, 2)),
            U=np.zeros((10, 1)),
            K=np.zeros((10, 1, 2)),
            dt=dt,
            model_name="pendulum",
            model_hash=pendulum_vi.robot.hash,
            joint_names=["theta"],
            input_names=["theta"],
        )
        law = TrackingController(plan, pendulum_vi.state)
        assert law.index(t0 + 7.4 * dt) == 7 and law.index(t0 + 7.6 * dt) == 8
        assert law.index(t0 - 0.3 * dt) == 0  # before the start: the first sample
        for k in range(40):  # on the grid, with whatever round-off k·Δt (and t0 + k·Δt) carries
            for t in (t0 + k * dt, t0 + k * 0.1, np.nextafter(t0 + k * dt, -np.inf), np.nextafter(t0 + k * dt, np.inf)):
                assert law.index(t) == k, (t0, k, t)
