"""LinearTimeVI is Linearizable: the trapezoidal SE(3) discrete Lagrangian (Lee2016, eq. 9) written symbolically
(mechanics.lagrangians) gives the DRNEA step's exact derivatives. Checked against DRNEA itself, scipy's matrix
logarithm, finite differences of the step, and by planning and tracking through the same planner as the midpoint VI.
"""

import casadi as ca
import numpy as np
import pytest
from scipy.linalg import expm
from test_linear_time import TREE_URDF

import vi_control as vc
from vi_control.integrators.linear_time import LinearTimeVI
from vi_control.mechanics.lagrangians import se3_log


def _se3_hat(xi):
    w, v = xi[:3], xi[3:]
    X = np.zeros((4, 4))
    X[:3, :3] = [[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]]
    X[:3, 3] = v
    return X


@pytest.mark.parametrize("angle", [0.0, 1e-7, 1e-4, 5e-3, 0.3, 2.5])
def test_symbolic_se3_log_inverts_the_matrix_exponential(angle, rng):
    R, p = ca.SX.sym("R", 3, 3), ca.SX.sym("p", 3)
    log = ca.Function("log", [R, p], [se3_log(R, p)])
    axis = rng.normal(size=3)
    xi = np.concatenate([angle * axis / np.linalg.norm(axis), rng.normal(size=3)])
    T = expm(_se3_hat(xi))
    assert np.allclose(np.array(log(T[:3, :3], T[:3, 3])).ravel(), xi, atol=1e-13)
    # first derivative along a direction equals the difference quotient (no 0/0 at the identity)
    d = ca.Function("d", [R, p], [ca.jacobian(se3_log(R, p), ca.vertcat(ca.vec(R), p))])
    J = np.array(d(T[:3, :3], T[:3, 3]))
    assert np.all(np.isfinite(J))
    dx = _se3_hat(rng.normal(size=6) * 1e-6)
    Tp, Tm = T @ expm(dx), T @ expm(-dx)
    dvec = np.concatenate([(Tp[:3, :3] - Tm[:3, :3]).ravel(order="F"), Tp[:3, 3] - Tm[:3, 3]])
    fd = np.array(log(Tp[:3, :3], Tp[:3, 3]) - log(Tm[:3, :3], Tm[:3, 3])).ravel()
    assert np.allclose(J @ dvec, fd, atol=1e-10)


@pytest.fixture(scope="module")
def tree_lt():
    return LinearTimeVI(vc.load_robot(TREE_URDF, system={"gravity": [0.3, -0.2, -9.81]}), 0.02)


def test_symbolic_del_equation_is_the_drnea_residual(tree_lt, rng):
    """At the root DRNEA finds, the symbolic residual vanishes and the symbolic output map gives its x_{k+1}."""
    lt = tree_lt
    F = lt._derivative_functions
    for _ in range(5):
        x = lt.state_from_velocity(rng.uniform(-1, 1, lt.nq), rng.uniform(-2, 2, lt.nq))
        u = rng.normal(size=lt.nu)
        r = lt.solve(x, u)
        z = np.concatenate([x, u])
        assert np.abs(F["residual_only"](r.y, z)[0]).max() < 1e-11 * (1 + np.abs(x).max())
        assert np.allclose(np.ravel(F["output"](r.y, z)[0]), r.x, atol=1e-12)


def test_linearization_matches_finite_differences_of_the_drnea_step(tree_lt, rng):
    lt = tree_lt
    assert isinstance(lt, vc.Linearizable)
    x = lt.state_from_velocity(rng.uniform(-1, 1, lt.nq), rng.uniform(-2, 2, lt.nq))
    u = rng.normal(size=lt.nu)
    lin = vc.linearize(lt, x, u)
    eps, n = 1e-6, lt.nx + lt.nu
    J = np.zeros((lt.nx, n))
    for i in range(n):
        d = np.zeros(n)
        d[i] = eps
        J[:, i] = (lt.step(x + d[: lt.nx], u + d[lt.nx :]) - lt.step(x - d[: lt.nx], u - d[lt.nx :])) / (2 * eps)
    assert np.abs(np.hstack([lin.A, lin.B]) - J).max() < 1e-7 * max(1.0, np.abs(J).max())
    # the second-order contraction against differences of A, B along the covector
    c = rng.normal(size=lt.nx)
    Hxx, Hxu, Huu = vc.second_order_contraction(lt, x, u, c)
    k = 2
    e = np.zeros(lt.nx)
    e[k] = eps
    dA = (vc.linearize(lt, x + e, u).A - vc.linearize(lt, x - e, u).A) / (2 * eps)
    assert np.allclose(c @ dA, Hxx[k], atol=1e-6 * max(1.0, np.abs(Hxx).max()))


def test_the_same_planner_plans_on_the_linear_time_integrator(pendulum_robot, pendulum_vi):
    """plan_task on LinearTimeVI: converged, every step a DRNEA step, close to the midpoint VI's plan (both
    discretize the same pendulum), and its TV-LQR gains bring a perturbed start to the goal."""
    task = vc.load_task("task_pendulum_swingup")
    lt = vc.make_integrator("linear_time", pendulum_robot, task.dt)
    plan, res = vc.plan_task(lt, task)
    assert res.converged and res.iterations <= 30
    assert np.allclose([lt.step(x, u) for x, u in zip(plan.X[:-1], plan.U)], plan.X[1:], atol=1e-8)
    ref, _ = vc.plan_task(pendulum_vi, task)
    assert abs(plan.X[-1, 0] - np.pi) < 1e-2 and abs(ref.X[-1, 0] - np.pi) < 1e-2
    assert np.abs(plan.X[:, 0] - ref.X[:, 0]).max() < 0.2  # O(Δt²) apart, Δt = 0.1
    Xc, _ = vc.simulate_plan(lt, plan, plan.X[0] + np.array([0.2, 0.3]), feedback=True)
    Xo, _ = vc.simulate_plan(lt, plan, plan.X[0] + np.array([0.2, 0.3]), feedback=False)
    assert abs(Xc[-1, 0] - np.pi) < 1e-3 < 0.1 < abs(Xo[-1, 0] - np.pi)
