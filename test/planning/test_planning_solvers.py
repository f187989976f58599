"""The solvers against independent checks: finite differences of the rollout cost, a brute-force box QP,
first-order optimality (KKT) of the returned trajectories, and agreement of DDP, iLQR and gradient descent."""

import sys

import numpy as np
import pytest
from ddp_oracle import box_qp
from scipy.optimize import minimize

from vi_control.planning import load_task, reference_trajectory, start_state
from vi_control.planning.compiled import backward_pass
from vi_control.planning.cost import QuadraticTrackingCost
from vi_control.planning.ddp import ddp
from vi_control.planning.gradient import adjoint_gradient, steepest_descent
from vi_control.planning.shooting import rollout


@pytest.fixture(scope="module")
def problem(pendulum_vi):
    """REFERENCE §2: the step reference of Johnson2015, eq. 35 with the task file's weights."""
    task = load_task("task_pendulum_swingup")
    X_ref, U_ref = reference_trajectory(task, pendulum_vi)
    cost = QuadraticTrackingCost(
        X_ref, U_ref, task.weight("Q", "weights", 2), task.weight("R", "weights", 1), task.weight("Qf", "weights", 2)
    )
    return cost, start_state(task, pendulum_vi)


def _gradient_at(vi, cost, X, U):
    """∇_U J on a given trajectory (each step re-solved from X_k: an open-loop re-simulation through the
    unstable upright would amplify round-off by ~e^{5√g} and measure that instead)."""
    res = [vi.solve(X[k], U[k], step_index=k) for k in range(len(U))]
    assert np.allclose([r.x for r in res], X[1:], atol=1e-9)
    return adjoint_gradient(vi, cost, X, U, res)


def _J(vi, cost, x0, U):
    X, U, _ = rollout(vi, x0, U)
    return cost.calc(X, U)


def test_adjoint_gradient_matches_finite_differences(pendulum_vi, problem, rng):
    cost, x0 = problem
    U = rng.normal(0, 2, (cost.N, 1))
    X, U, res = rollout(pendulum_vi, x0, U)
    G = adjoint_gradient(pendulum_vi, cost, X, U, res)
    for k in (0, 17, 49, 50, 99):
        e = np.zeros_like(U)
        e[k] = 1e-6
        fd = (_J(pendulum_vi, cost, x0, U + e) - _J(pendulum_vi, cost, x0, U - e)) / 2e-6
        assert G[k, 0] == pytest.approx(fd, rel=1e-5, abs=1e-6)


def test_ddp_and_ilqr_reach_the_same_stationary_trajectory(pendulum_vi, problem):
    cost, x0 = problem
    U0 = np.zeros((cost.N, 1))
    r2 = ddp(pendulum_vi, cost, x0, U0, second_order=True, max_iterations=50)
    r1 = ddp(pendulum_vi, cost, x0, U0, second_order=False, max_iterations=100)
    assert r2.converged and r1.converged
    assert r2.iterations <= 14 and r1.iterations <= 30  # (the first-order method needs more: benchmark)
    assert r2.cost == pytest.approx(r1.cost, rel=1e-8)
    assert np.allclose(r2.U, r1.U, atol=1e-4) and np.allclose(r2.X, r1.X, atol=1e-4)
    # First-order optimality, checked by the independent adjoint gradient: ∇_U J ≈ 0.
    # Open-loop sensitivity of x_N to u_0 through the unstable upright is ~e^{5√g} ≈ 6e6, so state round-off
    # of 1e-12 shows as ~1e-4 in ∇_U J; at the initial guess the gradient is ~1e2–1e3.
    assert np.abs(_gradient_at(pendulum_vi, cost, r2.X, r2.U)).max() < 2e-3
    assert "newton" in r2.step_kinds and set(r1.step_kinds) == {"gauss-newton"}


def test_a_newton_pass_that_fails_gives_a_gauss_newton_step_and_one_iteration_without_newton(
    pendulum_vi, problem, monkeypatch
):
    """DDP's rule where the second-order model is not convex, watched on its real stage passes (each backward call
    recorded: Newton asked for, Newton taken): the pass falls back to Gauss–Newton within the call (``fallback``),
    that iteration's step is recorded as Gauss–Newton, and the next iteration asks for no Newton pass; every other
    iteration asks for it. The pendulum swing-up from rest meets both kinds."""
    ddp_module = sys.modules["vi_control.planning.ddp"]  # (the package's ``ddp`` is the function)

    calls = []  # (iteration, Newton asked for, Newton taken)
    real = ddp_module.stage_passes

    def watched(*args, **kwargs):
        stages = real(*args, **kwargs)
        backward = stages.backward

        def spy(cost, X, U, results, lins, mu, second_order, metric=None, fallback=False):
            step = backward(cost, X, U, results, lins, mu, second_order, metric, fallback=fallback)
            calls.append((len(lines), second_order, stages.second_order_taken))
            return step

        monkeypatch.setattr(stages, "backward", spy)
        return stages

    monkeypatch.setattr(ddp_module, "stage_passes", watched)
    cost, x0 = problem
    lines = []
    r = ddp(pendulum_vi, cost, x0, np.zeros((cost.N, 1)), max_iterations=50, log=lines.append)
    assert r.converged and len(r.step_kinds) == r.iterations + 1  # (the last pass only tells convergence)
    failed = {it for it, asked, taken in calls if asked and not taken}
    assert failed and "newton" in r.step_kinds  # (both kinds met)
    for it, kind in enumerate(r.step_kinds):
        asked = [a for i, a, _ in calls if i == it]
        assert asked[0] == (it == 0 or it - 1 not in failed), (it, asked)  # one iteration without Newton after
        assert kind == ("newton" if asked[0] and it not in failed else "gauss-newton"), (it, kind)


def test_ddp_respects_input_bounds_and_is_kkt_optimal(pendulum_vi, problem):
    cost, x0 = problem
    r = ddp(pendulum_vi, cost, x0, np.zeros((cost.N, 1)), input_limits=np.array([5.0]), max_iterations=100)
    assert r.converged, r.stop_reason
    assert np.abs(r.U).max() <= 5.0 + 1e-12
    assert r.X[-1, 0] == pytest.approx(np.pi, abs=0.05)  # swings up by pumping
    G = _gradient_at(pendulum_vi, cost, r.X, r.U)[:, 0]
    upper, lower = r.U[:, 0] >= 5.0 - 1e-9, r.U[:, 0] <= -5.0 + 1e-9
    free = ~(upper | lower)
    assert upper.any() or lower.any()
    assert np.abs(G[free]).max() < 1e-4  # stationary where the bound is inactive
    assert np.all(G[upper] <= 1e-6) and np.all(G[lower] >= -1e-6)  # the cost wants to push past active bounds


def _kernel_box_qp(H, g, lo, hi):
    """The box QP of the package's backward pass (C) alone: one stage with B = I and no cost-to-go, so that
    Q_uu = H and Q_u = g; returns (δu, free mask from its zero feedback rows) or None (not convex)."""
    n = len(g)
    out = backward_pass(1, n, n, lo, hi)(
        np.zeros((1, n, n)),
        np.eye(n)[None],
        np.zeros((1, n)),
        (np.zeros((1, n)), g[None], np.zeros(n), np.zeros((n, n)), np.eye(n), H),
        0.0,
        False,
    )
    return None if out is None else (out[0][0], np.abs(out[1][0]).sum(axis=1) > 0)


@pytest.mark.parametrize("n", [1, 3, 6])
@pytest.mark.parametrize("solve", ["kernel", "oracle"])
def test_box_qp_matches_a_bounded_quasi_newton_solve(rng, n, solve):
    """The C box QP of the backward pass, and the tests' numpy oracle of it, against L-BFGS-B."""
    box = _kernel_box_qp if solve == "kernel" else (lambda H, g, lo, hi: box_qp(H, g, lo, hi, np.zeros(len(g))))
    for _ in range(10):
        M = rng.standard_normal((n, n))
        H = M @ M.T + 0.1 * np.eye(n)
        g = 3 * rng.standard_normal(n)
        lo, hi = -rng.uniform(0.1, 1, n), rng.uniform(0.1, 1, n)
        x, free = box(H, g, lo, hi)
        ref = minimize(
            lambda z, H=H, g=g: 0.5 * z @ H @ z + g @ z,
            np.zeros(n),
            jac=lambda z, H=H, g=g: H @ z + g,
            bounds=list(zip(lo, hi)),
            method="L-BFGS-B",
            options={"ftol": 1e-15, "gtol": 1e-12},
        )
        assert np.allclose(x, ref.x, atol=1e-6)
        assert np.all((x > lo) & (x < hi) | ~free)
    assert box(-np.eye(2), np.ones(2), -np.ones(2), np.ones(2)) is None  # not convex


def test_steepest_descent_decreases_the_cost_towards_the_ddp_optimum(pendulum_vi, problem):
    cost, x0 = problem
    r = steepest_descent(pendulum_vi, cost, x0, np.zeros((cost.N, 1)), max_iterations=40)
    opt = ddp(pendulum_vi, cost, x0, np.zeros((cost.N, 1)), max_iterations=50)
    assert opt.converged and np.all(np.diff(r.cost_history) < 0)
    # towards DDP's optimum J*: not below it, and most of the gap closed (measured: 25167 → 5158, J* = 692)
    assert opt.cost < r.cost and r.cost - opt.cost < 0.3 * (r.cost_history[0] - opt.cost)
    assert r.iterations == 40 and not r.converged and r.stop_reason == "max_iterations"
    # one directional derivative per iteration, each a descent (G·d < 0); the first that of the initial inputs
    assert len(r.decrement_history) == 40 and max(r.decrement_history) < 0
    U0 = np.zeros((cost.N, 1))
    X0, _, _ = rollout(pendulum_vi, x0, U0)
    G = _gradient_at(pendulum_vi, cost, X0, U0)
    assert r.decrement_history[0] == pytest.approx(float(np.sum(G * -G)), rel=1e-9)  # (no input limits: d = −G)


def test_first_order_projection_method_reaches_the_ddp_optimum(pendulum_vi, problem):
    """Johnson2015, Fig. 3: the first-order method converges to the same trajectory, in more iterations."""
    from vi_control.planning.gradient import projection_gradient

    cost, x0 = problem
    r1 = projection_gradient(pendulum_vi, cost, x0, np.zeros((cost.N, 1)), max_iterations=300)
    r2 = ddp(pendulum_vi, cost, x0, np.zeros((cost.N, 1)), max_iterations=50)
    assert r1.converged and r1.iterations > r2.iterations
    assert r1.cost == pytest.approx(r2.cost, rel=1e-7)
    assert np.allclose(r1.X, r2.X, atol=1e-3)
    assert set(r1.step_kinds) == {"metric"} and np.all(np.diff(r1.cost_history) <= 0)


def test_the_first_order_methods_direction_is_its_lq_problems_solution(pendulum_vi, problem):
    """Johnson2015, eqs. 8–15: the projection method's descent direction minimizes the first-order change of J plus
    the metric ½(Σ‖δx_k‖² + Σ‖δu_k‖²) subject to δx_{k+1} = A_k δx_k + B_k δu_k, δx_0 = 0 — no other curvature, no
    regularization. Its predicted change along that direction (the first decrement d1) is checked against the same
    LQ problem solved here as one dense KKT system, on the swing-up's first iterate (U = 0)."""
    from vi_control.linearization import linearize
    from vi_control.planning.gradient import projection_gradient

    cost, x0 = problem
    vi, N = pendulum_vi, cost.N
    nx, nu = vi.nx, vi.nu
    U = np.zeros((N, nu))
    X, _, _ = rollout(vi, x0, U)
    lins = [linearize(vi, X[k], U[k]) for k in range(N)]
    n_x, n_z = (N + 1) * nx, (N + 1) * nx + N * nu  # δz = (δx_0 … δx_N, δu_0 … δu_{N−1})
    g = np.zeros(n_z)
    for k in range(N):
        g[k * nx : (k + 1) * nx] = cost.Q @ (X[k] - cost.X_ref[k])
        g[n_x + k * nu : n_x + (k + 1) * nu] = cost.R @ (U[k] - cost.U_ref[k])
    g[N * nx : n_x] = cost.Qf @ (X[N] - cost.X_ref[N])
    C = np.zeros(((N + 1) * nx, n_z))
    C[:nx, :nx] = np.eye(nx)  # δx_0 = 0
    for k in range(N):
        rows = slice((k + 1) * nx, (k + 2) * nx)
        C[rows, (k + 1) * nx : (k + 2) * nx] = -np.eye(nx)
        C[rows, k * nx : (k + 1) * nx] = lins[k].A
        C[rows, n_x + k * nu : n_x + (k + 1) * nu] = lins[k].B
    KKT = np.block([[np.eye(n_z), C.T], [C, np.zeros((len(C), len(C)))]])
    dz = np.linalg.solve(KKT, np.concatenate([-g, np.zeros(len(C))]))[:n_z]
    res = projection_gradient(vi, cost, x0, U, max_iterations=1)
    d1 = res.decrement_history[0]
    assert d1 < 0 and d1 == pytest.approx(g @ dz, rel=1e-8)
    assert g @ dz == pytest.approx(-dz @ dz, rel=1e-10)  # (the LQ optimum: its linear term is −‖δz‖²)


def test_contraction_reusing_the_linearization_is_the_same(pendulum_vi, rng):
    """DDP passes linearize's factors to second_order_contraction(lin=): identical numbers, less work."""
    from vi_control.linearization import linearize, second_order_contraction

    for _ in range(3):
        x, u, c = rng.normal(size=2), rng.normal(size=1), rng.normal(size=2)
        r = pendulum_vi.solve(x, u)
        lin = linearize(pendulum_vi, x, u, r)
        for a, b in zip(
            second_order_contraction(pendulum_vi, x, u, c, r, lin=lin),
            second_order_contraction(pendulum_vi, x, u, c, r),
        ):
            assert np.array_equal(a, b)


@pytest.mark.parametrize("path", ["compiled", "numpy"])
def test_box_qp_lets_an_input_leave_the_bound_the_cost_pulls_it_from(pendulum_vi, path, monkeypatch):
    """Every input at +5 (the upper bound) while the cost wants −50: each stage's QP starts at δu = 0, on the upper
    bound, with a gradient pointing inside, so the input is free and the minimizer of the 1-D convex model is the
    other bound. One DDP iteration (full step: the model is exact enough) puts every input at −5 — on the compiled
    kernel's stages (the default path) as on the numpy stages (the same C backward pass)."""
    from vi_control.planning import compiled

    monkeypatch.setattr(compiled, "ENABLED", path == "compiled")
    N, vi = 10, pendulum_vi
    x0 = vi.state_from_configurations(np.zeros(1), np.zeros(1))
    cost = QuadraticTrackingCost(
        np.tile(x0, (N + 1, 1)), np.full((N, 1), -50.0), np.diag([1e-3, 1e-3]), 1.0, np.diag([1e-3, 1e-3])
    )
    r = ddp(vi, cost, x0, np.full((N, 1), 5.0), input_limits=np.array([5.0]), max_iterations=1)
    assert r.compiled == (path == "compiled") and r.step_history == [1.0]
    assert np.array_equal(r.U, np.full((N, 1), -5.0))


@pytest.mark.parametrize("path", ["compiled", "numpy"])
def test_an_initial_guess_that_cannot_be_simulated_is_a_planning_error_naming_the_step(
    pendulum_vi, problem, path, monkeypatch
):
    """Inputs of 1e9 N·m from step 3 on: that step has no solution the Newton iteration can reach. The planner says
    which step of the guess fails (a PlanningError, caught by the planner node like any failed solve) instead of a
    bare error; the steps before it are simulated, so the index is the first failing one."""
    from vi_control.planning import compiled
    from vi_control.planning.errors import PlanningError

    monkeypatch.setattr(compiled, "ENABLED", path == "compiled")
    cost, x0 = problem
    U = np.zeros((cost.N, 1))
    U[3:] = 1e9
    with pytest.raises(PlanningError, match=rf"step 3 of {cost.N} failed") as e:
        ddp(pendulum_vi, cost, x0, U)
    assert e.value.solver == "initial rollout"
    ddp(pendulum_vi, cost, x0, np.where(U > 1, 0.0, U), max_iterations=1)  # the same guess without them simulates


def test_each_ddp_solve_stops_at_its_own_tolerance(pendulum_vi, problem):
    """Consecutive solves on the same compiled stages (their buffers are reused) each stop at their own tolerance and
    regularization: a loose one stops early with its last decrement below it, a tight one goes on, and the loose one
    again repeats itself exactly."""
    cost, x0 = problem
    U0 = np.zeros((cost.N, 1))
    loose, tight = (ddp(pendulum_vi, cost, x0, U0, max_iterations=100, tolerance=t) for t in (1e-1, 1e-9))
    again = ddp(pendulum_vi, cost, x0, U0, max_iterations=100, tolerance=1e-1, regularization=1e-6)
    assert loose.converged and tight.converged and loose.iterations < tight.iterations
    assert abs(loose.decrement_history[-1]) < 1e-1 and abs(tight.decrement_history[-1]) < 1e-9
    assert again.iterations == loose.iterations and again.cost == loose.cost


def test_shooting_methods_refuse_a_state_whose_tangent_is_not_its_coordinates():
    """A Lie-group system's state has nx coordinates (a rotation matrix and a momentum) but ndx < nx tangent directions:
    the quadratic cost's derivatives are in the coordinates, the backward pass works in the tangent directions. The
    first-order projection method (whose metric skips the step that failed with numpy's shape error for DDP) ran on
    one, the backward pass reading the cost's (N, 12) gradients as (N, 6): other stages' entries, a meaningless
    direction, no error. Refused by name now, and the backward pass itself refuses arrays not of its shapes."""
    from vi_control.integrators import make_integrator
    from vi_control.model.rigid_body import load_rigid_body
    from vi_control.planning.gradient import projection_gradient

    vi = make_integrator("lie_group", load_rigid_body("spacecraft"), 0.1)
    assert vi.state.ndx < vi.nx
    N = 5
    x0 = vi.state_from_pose(vi.group.exp(np.zeros(vi.state.ndx // 2)), np.zeros(vi.state.ndx // 2))
    U0 = np.zeros((N, vi.nu))
    cost = QuadraticTrackingCost(np.tile(x0, (N + 1, 1)), U0, 1.0, 1.0, 10.0)
    for solve in (projection_gradient, ddp):
        with pytest.raises(ValueError, match=r"ndx = 6 tangent directions.*need a vector state"):
            solve(vi, cost, x0, U0, max_iterations=3)

    n, nu = vi.state.ndx, vi.nu
    lo, hi = np.full(nu, -np.inf), np.full(nu, np.inf)
    back = backward_pass(N, n, nu, lo, hi)
    A, B = np.tile(np.eye(n), (N, 1, 1)), np.zeros((N, n, nu))
    local = (np.zeros((N, n)), np.zeros((N, nu)), np.zeros(n), np.eye(n), np.eye(n), np.eye(nu))
    assert back(A, B, U0, local, 0.0, False) is not None  # (the shapes it takes)
    wide = (np.zeros((N, vi.nx)), *local[1:])  # the cost's derivatives in the coordinates
    with pytest.raises(ValueError, match=r"backward pass: l_x: expected shape \(5, 6\), got \(5, 12\)"):
        back(A, B, U0, wide, 0.0, False)
    with pytest.raises(ValueError, match=r"backward pass: A: expected shape"):
        back(A[1:], B, U0, local, 0.0, False)
