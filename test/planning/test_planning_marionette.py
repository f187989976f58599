"""REFERENCE §3 (Johnson2015, §VIII-B): the marionette (80 states, 18 string inputs, 6 constraints) holds a
pose with discrete LQR (cost 100 on configurations, identity elsewhere) against a 0.1 rad perturbation
of the torso's orientation about the vertical; the open loop (strings held still) keeps swinging.

The functions run in CasADi's virtual machine (compile=False) so the test never waits for gcc; Δt and the
horizon are coarse (0.04 s, 4 s) to keep it quick.
"""

import numpy as np
import pytest
from scipy.linalg import eig
from scipy.optimize import least_squares

from vi_control.control.hold import equilibrium_state
from vi_control.control.plan import state_error
from vi_control.integrators.midpoint import MidpointVI
from vi_control.linearization import linearize
from vi_control.mechanics.constraints import consistent_state
from vi_control.mechanics.symbolic import ContinuousDynamics
from vi_control.model import load_robot
from vi_control.model import marionette as marionette_model
from vi_control.model.bundled import bundled_config, bundled_urdf
from vi_control.model.marionette import marionette_system
from vi_control.planning import load_task, plan_task
from vi_control.planning.evaluate import simulate_plan, tracking_error

DT, N = 0.04, 100


@pytest.fixture(scope="module")
def marionette():
    robot = load_robot(bundled_urdf("marionette"), bundled_config("marionette"))
    vi = MidpointVI(robot, DT, compile=False)
    return robot, vi, ContinuousDynamics(robot)


def _constrained(vi, dyn, q, free):
    """Solve h(q) = 0 by minimum-norm Gauss–Newton over the dynamic coordinates in ``free``."""
    q = q.copy()
    for _ in range(50):
        h = dyn.constraint(q)
        if np.abs(h).max() < 1e-13:
            return q
        q[free] -= np.linalg.lstsq(dyn.constraint_jacobian(q)[:, free], h, rcond=None)[0]
    raise AssertionError("constraint projection did not converge")


def _hanging_equilibrium(robot, vi, dyn, x0, seconds=4.0):
    """Stable static equilibrium with the strings fixed, found independently of the planner: let a copy of
    the puppet with viscous damping on every dynamic joint settle (damping changes no equilibrium), then
    polish ∇V_d(q) + Dh_d(q)ᵀμ = 0, h(q) = 0 by Levenberg–Marquardt (∇V from D₁L_d + D₂L_d = −Δt∇V)."""
    system = {**marionette_system(), "damping": {j: 2.0 for j in robot.dynamic_joints}}
    vi_damped = MidpointVI(load_robot(bundled_urdf("marionette"), system), vi.dt, compile=False)
    rho = x0[: vi.nq][vi.idx_k]
    x = x0
    for k in range(int(seconds / vi.dt)):
        x = vi_damped.step(x, rho, step_index=k)
    q0, d, nd = x[: vi.nq], vi.idx_d, len(vi.idx_d)

    def residual(z):
        q = q0.copy()
        q[d] = z[:nd]
        gradV = -(vi.functions["D1Ld"](q, q)[0].ravel() + vi.functions["D2Ld"](q, q)[0].ravel()) / vi.dt
        J = dyn.constraint_jacobian(q)[:, d]
        return np.concatenate([gradV[d] + J.T @ z[nd:], dyn.constraint(q)])

    mu0 = np.linalg.lstsq(
        dyn.constraint_jacobian(q0)[:, d].T, -residual(np.concatenate([q0[d], np.zeros(6)]))[:nd], rcond=None
    )[0]
    sol = least_squares(residual, np.concatenate([q0[d], mu0]), method="lm", xtol=1e-15, ftol=1e-15)
    assert np.abs(residual(sol.x)).max() < 1e-9
    q = q0.copy()
    q[d] = sol.x[:nd]
    return q


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_marionette_lqr_rejects_a_torso_perturbation(marionette):
    robot, vi, dyn = marionette
    q_eq = _hanging_equilibrium(robot, vi, dyn, consistent_state(robot, *marionette_model.initial_guess(robot)))
    x_eq = equilibrium_state(vi, q_eq)
    rho = q_eq[vi.idx_k]
    assert np.allclose(vi.step(x_eq, rho), x_eq, atol=1e-10)  # a fixed point of the constrained step
    # ... and a stable one (the potential's minimum): the symplectic one-step map has |eigenvalues| ≤ 1.
    assert np.abs(np.linalg.eigvals(linearize(vi, x_eq, rho).A)).max() < 1.0 + 1e-6
    task = load_task(
        {
            "name": "marionette_hold",
            "model": "marionette",
            "dt": DT,
            "horizon": N,
            "goal": {"q": q_eq.tolist()},
            "reference": {"type": "goal", "u": "hold"},
            "weights": {"Q": {"q": 100.0, "p": 1.0}, "R": 1.0},  # REFERENCE §3
            "optimizer": {"method": "ilqr", "max_iterations": 3},
        }
    )
    lines: list[str] = []
    plan, res = plan_task(vi, task, x0=x_eq, log=lines.append)
    assert res.converged and res.iterations == 0, res  # the reference is already feasible and optimal
    assert np.allclose(plan.U, rho) and plan.K.shape == (N, 18, 80)
    # No infinite-horizon hold gain exists here, and the planner says so: the hanging puppet has a neutral
    # mode at λ = 1 that no string moves (PBH test: left eigenvector w with wᴴB = 0), so (A, B) is not
    # stabilizable and the DLQR has no stabilizing solution; the finite-horizon TV-LQR is what Johnson2015 uses.
    # The λ = 1 mode sits on the unit circle to round-off, so whether the doubling iteration fails is a
    # round-off matter (a 1e-15 change of q_eq flips it): the PBH test below is the robust statement, and
    # a missing hold gain must be reported.
    if plan.K_final is None:
        assert any("no hold gain" in line for line in lines)
    lin = linearize(vi, x_eq, rho)
    lam, W = eig(lin.A, left=True, right=False)
    unit = np.abs(lam) > 1.0 - 1e-9
    pbh = np.linalg.norm(W[:, unit].conj().T @ lin.B, axis=1) / np.linalg.norm(lin.B)
    assert unit.any() and pbh.min() < 1e-10
    # Perturb the torso's orientation about the vertical by 0.1 rad; the limbs and base settle the strings.
    yaw = robot.joint_index("torso_yaw")
    q_p = q_eq.copy()
    q_p[yaw] += 0.1
    free = np.array([i for i in vi.idx_d if i != yaw])
    q_p = _constrained(vi, dyn, q_p, free)
    x_p = equilibrium_state(vi, q_p)
    assert abs(state_error(x_eq, x_p)[yaw]) == pytest.approx(0.1)
    Xc, _ = simulate_plan(vi, plan, x_p, feedback=True)
    Xo, _ = simulate_plan(vi, plan, x_p, feedback=False)
    yaw_c = np.abs(Xc[:, yaw] - q_eq[yaw])
    err_c, err_o = tracking_error(vi, plan, Xc), tracking_error(vi, plan, Xo)
    assert yaw_c[-1] < 5e-3 and err_c[-1] < 0.02  # rejected: back to the pose, about 4 s later
    assert err_o[N // 2 :].max() > 0.05  # open loop (strings held still): the puppet keeps swinging
    assert err_c[3 * N // 4 :].max() < err_o[3 * N // 4 :].max() / 3
    assert np.abs(vi.constraint(Xc[-1, : vi.nq])).max() < 1e-9
