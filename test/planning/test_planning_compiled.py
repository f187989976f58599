"""Whole-horizon compiled DDP stage passes (planning.compiled) against the numpy stage passes they accelerate.

Independent reference: ddp's per-stage Python path (``linearization.linearize``/``second_order_contraction``,
``shooting.rollout`` through ``vi.solve``), which the rest of the suite checks against finite differences, scipy and
the papers, with the numpy oracle of the backward pass (test/support/ddp_oracle.py, LAPACK) — the package's one
backward pass is C, for the numpy stages too (their second-order terms called back), checked against it here.
Every pass of the kernel (rollout, linearization, backward with and without second-order terms, regularized, with
active input bounds) must agree with it to 1e-10 on an unconstrained, a holonomically constrained (four-bar,
Johnson2015, eqs. 28–32) and a nonholonomic (GNI, Kobilarov2010) system, and whole DDP solves — ddp's one loop
driving the compiled stages, then the numpy stages — must agree to 1e-10 with the same iteration counts. The kernel
is chosen by capability (``compiled_stage``), never by class: systems without it take the numpy stages.
"""

from __future__ import annotations

import ctypes
import dataclasses

import numpy as np
import pytest
from ddp_oracle import oracle_backward

from vi_control.integrators import make_integrator
from vi_control.integrators.midpoint import MidpointVI
from vi_control.mechanics import codegen, discrete
from vi_control.model.bundled import fourbar_initial_configuration, load_bundled
from vi_control.planning import compiled, load_task, make_system, plan_task, reference_trajectory, start_state
from vi_control.planning.augmented import terminal_constrained_ddp
from vi_control.planning.cost import QuadraticTrackingCost
from vi_control.planning.ddp import _NumpyStages, ddp
from vi_control.planning.pipeline import input_limits
from vi_control.planning.shooting import input_bounds

TOL = 1e-10


def _rel(a, b) -> float:
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.abs(a - b).max() / max(1.0, np.abs(b).max()))


def _same_path(res_c, res_n, slack: int = 2) -> bool:
    """Iteration counts as bounds: a decision at a threshold (a line search's acceptance, Q_uu's positive
    definiteness) may flip with the compiler or CPU, so the counts may differ by ``slack``; the costs agree to
    round-off for as long as the decisions (step kind, step size) agree. True if they agree all the way: the
    caller then compares every iterate to round-off, else only the solutions."""
    assert abs(res_c.iterations - res_n.iterations) <= slack, (res_c.iterations, res_n.iterations)
    dc = list(zip(res_c.step_kinds, res_c.step_history))
    dn = list(zip(res_n.step_kinds, res_n.step_history))
    same = next((i for i, (a, b) in enumerate(zip(dc, dn)) if a != b), min(len(dc), len(dn)))
    assert _rel(res_c.cost_history[: same + 1], res_n.cost_history[: same + 1]) < TOL
    return dc == dn and res_c.step_kinds == res_n.step_kinds and res_c.iterations == res_n.iterations


def _numpy_path(monkeypatch, fn, *args, **kwargs):
    with monkeypatch.context() as m:
        m.setattr(compiled, "ENABLED", False)
        return fn(*args, **kwargs)


def _task_problem(name: str, integrator: str = "midpoint"):
    task = load_task(name)
    vi = make_system(task, integrator)
    x0 = start_state(task, vi)
    X_ref, U_ref = reference_trajectory(task, vi, x0)
    W = [task.weight(w, "weights", n, vi.nq) for w, n in (("Q", vi.nx), ("R", vi.nu), ("Qf", vi.nx))]
    return vi, QuadraticTrackingCost(X_ref, U_ref, *W), x0, input_limits(task, vi)


def _fourbar_problem(N: int = 40):
    """Crank of the four-bar (2 loop-closure constraints) from 0.2 rad to 0.8 rad, tracked in all coordinates."""
    vi = MidpointVI(load_bundled("fourbar"), 0.02)
    x0 = vi.state_from_configurations(fourbar_initial_configuration(0.2), fourbar_initial_configuration(0.2))
    goal = np.concatenate([fourbar_initial_configuration(0.8), np.zeros(3)])
    cost = QuadraticTrackingCost(
        np.tile(goal, (N + 1, 1)),
        np.zeros((N, 1)),
        np.diag([10.0] * 3 + [0.1] * 3),
        0.1,
        np.diag([1e3] * 3 + [1.0] * 3),
    )
    return vi, cost, x0, np.array([3.0])


@pytest.fixture(scope="module")
def cartpole():
    """The cart-pole swing-up with the cost of its augmented Lagrangian's first subproblem (Qf + ρI, ρ = 1e3)."""
    vi, cost, x0, limits = _task_problem("task_cartpole_swingup")
    return vi, QuadraticTrackingCost(cost.X_ref, cost.U_ref, cost.Q, cost.R, cost.Qf + 1e3 * np.eye(4)), x0, limits


@pytest.fixture(scope="module")
def fourbar():
    return _fourbar_problem()


@pytest.fixture(scope="module")
def panda():
    return _task_problem("task_panda_reach")


@pytest.fixture(scope="module")
def diffdrive():
    return _task_problem("task_diffdrive_parking", "gni")


def _passes(stages, x0, U, X_nom, K, cost, mu, second_order, oracle=False):
    """X, U applied, A, B, rcond and the backward pass's result of ``stages``; with ``oracle`` the backward pass is
    the numpy oracle's over the same rollout and linearizations."""
    X, Ua, aux = stages.rollout(x0, U, X_nom, K)
    lins = stages.linearize(X, Ua, aux)
    if oracle:
        back = oracle_backward(stages.vi, cost, X, Ua, aux, lins, stages.lo, stages.hi, mu, second_order)
    else:
        back = stages.backward(cost, X, Ua, aux, lins, mu, second_order)
    lin = stages.linearization(lins)
    return X, Ua, np.array([a.A for a in lin]), np.array([a.B for a in lin]), np.array([a.rcond for a in lin]), back


@pytest.mark.parametrize("path", ["compiled", "numpy"])
def test_a_failed_newton_pass_falls_back_to_gauss_newton_within_the_call(path):
    """``fallback=True``: where the second-order model is not convex (the pendulum swing-up 2 DDP iterations in:
    Newton's Q_uu is −0.91 at the first stage that fails, with R = 1) the call returns the Gauss–Newton pass of the
    same μ, bit for bit, and ``second_order_taken`` is False; where it is convex (8 iterations in: Q_uu ≥ 1.02 at
    every stage) the Newton pass, bit for bit, and True — margins no round-off decides (the numpy oracle's Q_uu).
    Without ``fallback`` the failed pass is None, as before; a Gauss–Newton request never reports second order."""
    vi, cost, x0, limits = _task_problem("task_pendulum_swingup")
    N = cost.N
    lo, hi = input_bounds(limits, vi.nu)
    stages = compiled.compiled_stages(vi, N, lo, hi) if path == "compiled" else _NumpyStages(vi, N, lo, hi)
    for iterations, convex in ((2, False), (8, True)):
        U = ddp(vi, cost, x0, np.zeros((N, vi.nu)), input_limits=limits, max_iterations=iterations).U
        X, Ua, aux = stages.rollout(x0, U)
        lins = stages.linearize(X, Ua, aux)
        for mu in (0.0, 1e-6, 1e-3):
            newton = stages.backward(cost, X, Ua, aux, lins, mu, True)
            assert (newton is not None) == convex and stages.second_order_taken
            gauss = stages.backward(cost, X, Ua, aux, lins, mu, False, fallback=True)
            assert gauss is not None and not stages.second_order_taken
            got = stages.backward(cost, X, Ua, aux, lins, mu, True, fallback=True)
            assert stages.second_order_taken == convex
            want = newton if convex else gauss
            assert all(np.array_equal(g, w) for g, w in zip(got, want)), (iterations, mu)


@pytest.mark.parametrize("system", ["cartpole", "fourbar", "diffdrive", "panda"])
def test_every_stage_pass_agrees_with_the_numpy_path(system, request):
    vi, cost, x0, limits = request.getfixturevalue(system)
    N, nu, nx = cost.N, vi.nu, vi.nx
    lo, hi = input_bounds(limits, nu)
    # About a trajectory 15 DDP iterations into the task (where its second-order model is convex and the input
    # bounds are active), a closed-loop trial off it: a feedforward change plus perturbed feedback on x − X_nom.
    if system == "panda":  # (its own plan: from zero torques the arm falls through the first steps' root bound)
        nominal = plan_task(vi, load_task("task_panda_reach"))[1]
    else:
        nominal = ddp(vi, cost, x0, np.zeros((N, nu)), input_limits=limits, max_iterations=15)
    X_nom, rng = nominal.X, np.random.default_rng(3)
    kick = 0.02 if system == "panda" else 0.5  # (of the effort limits: 0.5 of the panda's 87 N·m throws it off a step)
    U = nominal.U + kick * np.where(np.isfinite(hi), hi, 1.0) * rng.standard_normal((N, nu))
    K = -nominal.K * (1 + 0.1 * rng.standard_normal((N, nu, nx)))
    fast = compiled.compiled_stages(vi, N, lo, hi)
    assert fast is not None and fast.compiled
    # (the panda's derivatives by the tree's recursion, the others' by their generated functions)
    assert (vi.compiled_stage(True).kernel.tree is not None) == (system == "panda")
    clamped, solved = 0, []
    for mu, second_order in ((0.0, True), (1e2, True), (1e6, True), (0.0, False), (1e-2, False)):
        got = _passes(fast, x0, U, X_nom, K, cost, mu, second_order)
        want = _passes(_NumpyStages(vi, N, lo, hi), x0, U, X_nom, K, cost, mu, second_order, oracle=True)
        numpy_stages = _passes(_NumpyStages(vi, N, lo, hi), x0, U, X_nom, K, cost, mu, second_order)[5]
        assert (numpy_stages is None) == (want[5] is None)  # the C pass over Python's contraction, too
        if want[5] is not None:
            for name, g, w in zip(("k", "K", "d1", "d2"), numpy_stages, want[5]):
                assert _rel(g, w) < TOL, ("numpy stages", name, mu, second_order, _rel(g, w))
        for name, g, w in zip(("X", "U applied", "A", "B"), got[:4], want[:4]):
            assert _rel(g, w) < TOL, (name, _rel(g, w))
        assert _rel(np.log(got[4]), np.log(want[4])) < 1e-6  # rcond: the same 1-norm estimator as dgecon
        # Both reject a model whose regularized Q_uu is not positive definite (ddp then changes it), or neither.
        assert (got[5] is None) == (want[5] is None), (mu, second_order)
        if got[5] is None:
            continue
        solved.append(second_order)
        for name, g, w in zip(("k", "K", "d1", "d2"), got[5], want[5]):
            assert _rel(g, w) < TOL, (name, mu, second_order, _rel(g, w))
        U_next = got[1] + got[5][0]
        clamped += int(np.sum(np.isclose(np.abs(U_next), hi) & np.isfinite(hi)))
    assert True in solved and False in solved
    if np.isfinite(hi).any() and system != "panda":  # (the panda's reach stays inside its effort limits)
        assert clamped > 0  # the box QP was active somewhere (projected Newton, not the fast path only)


def test_rollout_failure_is_a_rejected_trial_on_both_paths(cartpole):
    vi, cost, x0, limits = cartpole
    lo, hi = input_bounds(None, vi.nu)
    U = np.zeros((cost.N, vi.nu))
    U[7] = np.nan
    assert compiled.compiled_stages(vi, cost.N, lo, hi).rollout(x0, U) is None
    assert _NumpyStages(vi, cost.N, lo, hi).rollout(x0, U) is None


def test_pendulum_swingup_plan_is_the_numpy_plan(monkeypatch):
    """REFERENCE §2: ≤ 14 iterations; trajectory, DDP gains, TV-LQR and hold gains and cost to 1e-10 on one path."""
    task = load_task("task_pendulum_swingup")
    vi = make_system(task)
    plan_c, res_c = plan_task(vi, task)
    plan_n, res_n = _numpy_path(monkeypatch, plan_task, vi, task)
    assert res_c.compiled and not res_n.compiled
    assert res_c.converged and res_n.converged
    assert max(res_c.iterations, res_n.iterations) <= 14
    if _same_path(res_c, res_n):
        for g, w in (
            (plan_c.X, plan_n.X),
            (plan_c.U, plan_n.U),
            (res_c.K, res_n.K),
            (plan_c.K, plan_n.K),
            (plan_c.K_final, plan_n.K_final),
            (res_c.cost, res_n.cost),
            (res_c.cost_history, res_n.cost_history),
        ):
            assert _rel(g, w) < TOL
    else:  # both at the optimum, to the solution's own precision (|dJ| < 1e-6)
        assert _rel(res_c.cost, res_n.cost) < 1e-8 and _rel(plan_c.X, plan_n.X) < 1e-5


@pytest.mark.parametrize(
    "system, second_order, iterations", [("fourbar", True, 30), ("fourbar", False, 30), ("diffdrive", True, 15)]
)
def test_ddp_solves_agree(system, second_order, iterations, request, monkeypatch):
    vi, cost, x0, limits = request.getfixturevalue(system)
    U0 = np.zeros((cost.N, vi.nu))
    kw = dict(input_limits=limits, second_order=second_order, max_iterations=iterations)
    res_c = ddp(vi, cost, x0, U0, **kw)
    res_n = _numpy_path(monkeypatch, ddp, vi, cost, x0, U0, **kw)
    assert res_c.compiled and not res_n.compiled
    assert res_c.cost < 0.5 * res_c.cost_history[0] and res_n.cost < 0.5 * res_n.cost_history[0]  # it did optimize
    if _same_path(res_c, res_n):
        assert res_c.converged == res_n.converged
        for g, w in (
            (res_c.X, res_n.X),
            (res_c.U, res_n.U),
            (res_c.K, res_n.K),
            (res_c.cost_history, res_n.cost_history),
        ):
            assert _rel(g, w) < TOL
    elif res_c.converged and res_n.converged:
        assert _rel(res_c.cost, res_n.cost) < 1e-8


def test_augmented_lagrangian_cartpole_agrees(cartpole, monkeypatch):
    """The terminal-constraint wrapper calls ddp with modified costs: the compiled path is taken inside it. The
    first 20 iterations agree to 1e-10 (relative); later outer updates with ρ up to 1e9 amplify round-off, so
    the whole swing-up is checked for agreement to the solution's own precision (cost to 1e-6; U to what the
    constraint tolerance leaves open), its iteration count as a bound: round-off of 1e-13 moves decisions of the ~60
    iterations (measured: 66 with the tree's recursive derivatives, 61 with the generated ones, 62 on the numpy
    path), so within 10 %."""
    vi, cost, x0, limits = cartpole
    U0 = np.zeros((cost.N, vi.nu))
    kw = dict(input_limits=limits, penalty=1e3)
    short_c = terminal_constrained_ddp(vi, cost, x0, U0, cost.X_ref[-1], max_iterations=20, **kw)
    short_n = _numpy_path(
        monkeypatch, terminal_constrained_ddp, vi, cost, x0, U0, cost.X_ref[-1], max_iterations=20, **kw
    )
    assert short_c.compiled and not short_n.compiled and short_c.iterations == short_n.iterations == 20
    assert _rel(short_c.U, short_n.U) < TOL and _rel(short_c.X, short_n.X) < TOL
    full_c = terminal_constrained_ddp(vi, cost, x0, U0, cost.X_ref[-1], max_iterations=150, **kw)
    full_n = _numpy_path(
        monkeypatch, terminal_constrained_ddp, vi, cost, x0, U0, cost.X_ref[-1], max_iterations=150, **kw
    )
    assert full_c.converged and full_n.converged
    assert abs(full_c.iterations - full_n.iterations) <= 0.1 * full_n.iterations, (full_c.iterations, full_n.iterations)
    assert abs(full_c.cost - full_n.cost) < 1e-6 * full_n.cost, (full_c.cost, full_n.cost)
    # The two runs stop at different terminal violations (each below the constraint tolerance; 4e-7 vs 1.5e-7 when
    # their paths differ by an iteration), and the inputs of a 4-s swing-up follow x_N only to ~1e3 of that.
    assert _rel(full_c.U, full_n.U) < 1e-3, _rel(full_c.U, full_n.U)


class _Delegate:
    """A system object of another class that forwards everything to a MidpointVI (optionally hiding one name)."""

    def __init__(self, vi, hide: str = ""):
        self._vi, self._hide = vi, hide

    def __getattr__(self, name):
        if name == self._hide:
            raise AttributeError(name)
        return getattr(self._vi, name)


def test_fast_path_is_chosen_by_capability_not_class(monkeypatch):
    task = dataclasses.replace(load_task("task_pendulum_swingup"), max_iterations=3)
    vi = make_system(task)
    ran = [plan_task(sys, task)[1] for sys in (vi, _Delegate(vi), _Delegate(vi, hide="compiled_stage"))]
    assert [r.compiled for r in ran] == [True, True, False]
    assert _rel(ran[1].U, ran[0].U) == 0.0 and _rel(ran[2].U, ran[0].U) < TOL
    # Linearizable systems without a compiled step: the linear-time VI (DRNEA step), the CasADi VM, wrapped angles.
    for other in (
        make_integrator("linear_time", vi.robot, task.dt),
        MidpointVI(vi.robot, task.dt, compile=False),
        MidpointVI(vi.robot, task.dt, wrap_continuous=True),
    ):
        assert compiled.compiled_stages(other, task.horizon, *input_bounds(None, 1)) is None
        res = plan_task(other, task)[1]
        assert not res.compiled and res.iterations == 3 and res.cost < res.cost_history[0]
    monkeypatch.setattr(compiled, "ENABLED", False)
    assert not plan_task(vi, task)[1].compiled


def test_results_do_not_depend_on_whether_the_kernel_was_built_before(tmp_path, monkeypatch):
    task = load_task("task_pendulum_swingup")
    vi = make_system(task)
    _, cached = plan_task(vi, task)
    monkeypatch.setenv("VI_CONTROL_CACHE", str(tmp_path))  # an empty cache: the kernel is compiled anew
    compiled.kernel_library.cache_clear()
    built = codegen.build_stats["compiled"]
    try:
        _, fresh = plan_task(vi, task)
        _, again = plan_task(vi, task)
    finally:
        compiled.kernel_library.cache_clear()
    assert codegen.build_stats["compiled"] == built + 1 and list(tmp_path.glob("vi_ddp_*.so"))
    for res in (fresh, again):
        assert res.compiled and np.array_equal(res.U, cached.U) and np.array_equal(res.K, cached.K)
        assert res.cost_history == cached.cost_history


def test_built_stages_are_reused_per_system_thread_horizon_and_box(monkeypatch):
    """compiled_stages hands back the stages it built for the same (system, thread, horizon, box, settings) —
    their context and workspaces are set up once — and new ones otherwise; a reused instance, whose arena carves the
    memory of earlier calls' dead arrays again, computes bit for bit what a freshly built one does (whose arena
    drops the entries of dead arrays at every carve: ``_Arena.KEEP`` = 0)."""
    import threading
    import weakref

    monkeypatch.setattr(compiled, "_STAGES", weakref.WeakKeyDictionary())
    task = load_task("task_pendulum_swingup")
    vi = make_system(task)
    N, (lo, hi) = task.horizon, input_bounds(input_limits(task, vi), vi.nu)
    first = compiled.compiled_stages(vi, N, lo, hi)
    assert compiled.compiled_stages(vi, N, lo.copy(), hi.copy()) is first
    assert compiled.compiled_stages(vi, N + 1, lo, hi) is not first
    assert compiled.compiled_stages(vi, N, lo, np.full_like(hi, 2.0)) is not first
    assert compiled.compiled_stages(vi, N, lo, hi, second_order=False) is not first
    elsewhere = []
    t = threading.Thread(target=lambda: elsewhere.append(compiled.compiled_stages(vi, N, lo, hi)))
    t.start()
    t.join()
    assert elsewhere[0] is not None and elsewhere[0] is not first

    monkeypatch.setattr(compiled._Arena, "KEEP", 0)
    x0 = start_state(task, vi)
    X_ref, U_ref = reference_trajectory(task, vi, x0)
    cost = QuadraticTrackingCost(
        X_ref, U_ref, *(task.weight(w, "weights", n, vi.nq) for w, n in (("Q", vi.nx), ("R", vi.nu), ("Qf", vi.nx)))
    )
    U = np.full((N, vi.nu), 0.3)
    fresh = compiled.CompiledStages(compiled.kernel_library(), vi, vi.compiled_stage(True), N, lo, hi)
    X, Ua, Y = fresh.rollout(x0, U)
    lin = fresh.linearize(X, Ua, Y)
    want = fresh.backward(cost, X, Ua, Y, lin, 1e-3, True)
    for _ in range(3):
        again = compiled.compiled_stages(vi, N, lo, hi)
        assert again is first
        ro = again.rollout(x0, U)
        got = again.backward(cost, *ro, again.linearize(*ro), 1e-3, True)
        assert all(np.array_equal(a, b) for a, b in zip(ro, (X, Ua, Y)))
        assert all(np.array_equal(a, b) for a, b in zip(got, want))
    plans = [plan_task(vi, task)[0] for _ in range(3)]
    assert all(np.array_equal(p.U, plans[0].U) and np.array_equal(p.K, plans[0].K) for p in plans)


def test_the_arena_carves_memory_again_only_once_no_array_of_it_lives():
    """A pass's outputs never share memory with a living array — one carved before, or any view of one (a row kept
    from a linearization) — and memory whose arrays are all gone is carved again (warm, not new pages)."""
    arena = compiled._Arena()
    a, b = arena.carve((3, 4), (5,), int_index=1)
    a[...], b[...] = 1.0, 7
    first = a.ctypes.data
    row = a.T[1]  # a view of a view: it alone keeps the chunk
    del a, b
    size = compiled._Arena.CHUNK
    big = arena.carve((size,))[0]  # does not fit after a and b: the next chunk
    address = big.ctypes.data
    big[...] = -1.0
    assert np.array_equal(row, np.ones(3))
    del big
    again = arena.carve((size,))[0]
    assert again.ctypes.data == address  # the dead chunk, carved again
    again[...] = -2.0
    assert np.array_equal(row, np.ones(3))  # the first chunk is still in use through the row
    del row
    third = arena.carve((size,))[0]  # the first chunk, free now
    assert third.ctypes.data == first and not np.shares_memory(third, again)
    # The pointers handed to C are the arrays' own addresses.
    x, y = arena.carve((2, 3), (4,), int_index=1)
    at = arena.pointers([x, y, None])
    assert list(np.ctypeslib.as_array((ctypes.c_int64 * 3).from_address(at))) == [x.ctypes.data, y.ctypes.data, 0]


@pytest.mark.parametrize("root_check", [True, False])
def test_the_rollout_checks_the_root_as_the_system_says(root_check):
    """``chord_root_check`` reaches the kernel's Newton steps (as ``MidpointVI.solve`` uses it): the spherical
    pendulum's pure swing through the pole lands where M_{k+1} is singular (θ_{k+1} = −θ_k,
    test_integrator_errors.py). With the check on, that step is refused — the rollout is a rejected trial on both
    paths; with it off, the quasi-Newton root is returned by both. (The kernel once read the flag past the end of its
    argument array: whatever lay there on the stack decided.)"""
    dt, theta = 0.01, 0.3
    vi = MidpointVI(load_bundled("spherical_pendulum"), dt, newton="chord", chord_root_check=root_check)
    x0, U = np.array([0.0, theta, 0.0, -2 * theta / dt]), np.zeros((1, vi.nu))
    lo, hi = input_bounds(None, vi.nu)
    fast = compiled.compiled_stages(vi, 1, lo, hi)
    assert fast is not None and fast.compiled
    got, want = fast.rollout(x0, U), _NumpyStages(vi, 1, lo, hi).rollout(x0, U)
    if root_check:
        assert got is None and want is None
    else:
        assert got is not None and want is not None
        assert got[0][1, 1] == pytest.approx(-theta, abs=1e-9) and _rel(got[0], want[0]) < TOL


def test_the_passes_refuse_arrays_the_kernel_would_read_past_or_misplace(cartpole):
    """The kernel reads every argument in its own layout — X_nom (N+1, nx), K (N, nu, nx), the local model (N, nx)
    ... — and arrays from outside were copied into staging buffers of whatever shape they came with: gains K of
    another width (a warm start's) or a nominal trajectory a row short were read past their end, and the rollout
    returned a trajectory. Each is refused now, naming the argument, with the shape it must have."""
    vi, cost, x0, _ = cartpole
    N, nu, nx = 20, vi.nu, vi.nx
    lo, hi = input_bounds(None, nu)
    stages = compiled.compiled_stages(vi, N, lo, hi)
    U = np.full((N, nu), 0.1)
    X, Ua, Y = stages.rollout(x0, U)
    K = np.zeros((N, nu, nx))
    assert stages.rollout(x0, U, X, K) is not None  # (the shapes it takes)
    for args, match in (
        ((X[:-1], K), r"rollout: X_nom: expected shape \(21, 4\), got \(20, 4\)"),
        ((X, K[:, :, :2]), r"rollout: K: expected shape \(20, 1, 4\), got \(20, 1, 2\)"),
        ((X, K[:, :, :, None]), r"rollout: K: expected shape"),
    ):
        with pytest.raises(ValueError, match=match):
            stages.rollout(x0, U, *args)
    with pytest.raises(ValueError, match=r"linearize: Y: expected shape \(20, 2\), got \(19, 2\)"):
        stages.linearize(X, Ua, Y[1:])
    lin = stages.linearize(X, Ua, Y)
    # arrays carved by the passes themselves (their addresses known, no staging copy) in another pass's slot: the same
    with pytest.raises(ValueError, match=r"linearize: Y: expected shape \(20, 2\), got \(21, 4\)"):
        stages.linearize(X, Ua, X)
    with pytest.raises(ValueError, match=r"rollout: K: expected shape \(20, 1, 4\), got \(20, 4, 4\)"):
        stages.rollout(x0, U, X, lin.A)
    cost = QuadraticTrackingCost(cost.X_ref[: N + 1], cost.U_ref[:N], cost.Q, cost.R, cost.Qf)
    assert stages.backward(cost, X, Ua, Y, lin, 1e-3, True) is not None
    short = QuadraticTrackingCost(cost.X_ref[:N], cost.U_ref[: N - 1], cost.Q, cost.R, cost.Qf)
    with pytest.raises(ValueError, match=r"backward pass: X: expected shape \(21, 4\), got \(20, 4\)"):
        stages.backward(short, X[:-1], Ua[:-1], Y, lin, 1e-3, True)


_CHILD = """
import dataclasses
import numpy as np
from vi_control.planning import compiled, load_task, make_system, start_state
from vi_control.planning.cost import QuadraticTrackingCost
task = load_task("task_cartpole_swingup")
vi = make_system(task)
N = 20
stages = compiled.compiled_stages(vi, N, np.full(vi.nu, -np.inf), np.full(vi.nu, np.inf))
x0, U = start_state(task, vi), np.full((N, vi.nu), 0.1)
X, Ua, Y = stages.rollout(x0, U)
lin = stages.linearize(X, Ua, Y)
assert lin.piv.any()  # pivot indices 1, whose float64 bits are 0x3ff0000000000000
cost = QuadraticTrackingCost(np.zeros((N + 1, vi.nx)), np.zeros((N, vi.nu)), 1.0, 1.0, 10.0)
own = stages.backward(cost, X, Ua, Y, lin, 1e-3, True)
copied = stages.backward(cost, X, Ua, Y, dataclasses.replace(lin, piv=lin.piv.copy()), 1e-3, True)
assert all(np.array_equal(a, b) for a, b in zip(own, copied)), "copied pivots"
try:
    stages.backward(cost, X, Ua, Y, dataclasses.replace(lin, piv=lin.piv.astype(float)), 1e-3, True)
except TypeError as e:
    print("refused:", e)
try:
    stages.rollout(x0, U, None, np.zeros((N, vi.nu, vi.nx)))
except ValueError as e:
    print("refused:", e)
"""


def test_copied_pivots_and_gains_without_their_trajectory_do_not_crash_the_kernel():
    """Two ways the kernel's arguments took the process down (SIGSEGV; run in a child process, where a crash shows as
    a signal): (1) a linearization whose pivots are a copy — the same int64 values in an array the stages' arena did
    not carve — was staged as float64, so the backward pass's LU solves indexed b[4.6e18]; the copy gives the same
    pass now, and float pivots are refused (a float is no index). (2) ``rollout`` with gains K but no X_nom passed
    NULL for the trajectory K acts on; refused now."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, (out.returncode, out.stderr[-2000:])
    assert "refused: Cannot cast array data from dtype('float64') to dtype('int64')" in out.stdout, out.stdout
    assert "refused: rollout: the gains K act on x − X_nom: give X_nom with them" in out.stdout, out.stdout


def test_the_step_kernel_is_built_once_per_kind_and_equals_a_fresh_build():
    """``DiscreteSystemStructure.step_kernel`` keeps the kernel it built (a plan asks for it twice, an MPC loop every
    cycle): the same object again for the same kind, another for the other kind (without the second-order term), and
    field for field what a structure built afresh for the same model gives. The pendulum's generated functions are a
    few dozen instructions: no tree recursion."""
    task = load_task("task_pendulum_swingup")
    s = make_system(task).structure
    with_h, without_h = s.step_kernel(True), s.step_kernel(False)
    assert with_h is s.step_kernel(True) and without_h is s.step_kernel(False) and with_h is not without_h
    assert with_h.hessian != 0 and without_h.hessian == 0 and with_h.linearize == without_h.linearize != 0
    assert with_h.tree is None and without_h.tree is None and with_h.second_order and not without_h.second_order
    fresh = make_system(task).structure.step_kernel(True)
    for f in dataclasses.fields(with_h):
        a, b = getattr(with_h, f.name), getattr(fresh, f.name)
        assert np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b, f.name


def test_the_tree_recursion_replaces_a_generated_function_above_its_instruction_budget(monkeypatch):
    """The panda's generated 'linearize' and 'hessian' (25 719 and 28 595 instructions, 7 joints) are above
    ``TREE_INSTRUCTIONS_PER_JOINT`` per joint: its kernel computes both by the tree's recursion (no generated address,
    the tree's model); at exactly their count per joint the generated function is kept, one instruction under it the
    recursion takes over; with ``RECURSIVE_DERIVATIVES`` off, the generated ones."""
    s = make_system(load_task("task_panda_reach")).structure
    kernel = s.step_kernel(True)
    assert kernel.linearize == kernel.hessian == 0 and kernel.tree is not None and kernel.second_order
    assert s.step_kernel(False).tree is not None and s.step_kernel(False).linearize == 0
    for name in ("linearize", "hessian"):
        count = s.functions.raw[name].n_instructions()
        monkeypatch.setattr(discrete, "TREE_INSTRUCTIONS_PER_JOINT", count / s.nq)
        assert not s.recursive(name)
        monkeypatch.setattr(discrete, "TREE_INSTRUCTIONS_PER_JOINT", (count - 1) / s.nq)
        assert s.recursive(name)
        monkeypatch.setattr(discrete, "RECURSIVE_DERIVATIVES", False)
        assert not s.recursive(name)
        monkeypatch.undo()


def test_the_kernel_context_has_every_slot_the_kernel_reads():
    """vi_plan_unpack reads 18 slots: a context is padded with NULL up to them (the numpy stages' backward pass fills
    15: it read three slots past its array before), and one with more is refused."""
    from vi_control.planning.compiled import _CONTEXT_SLOTS, _context

    ctx = _context([7, np.zeros(1)])
    assert len(ctx) == _CONTEXT_SLOTS == 18 and ctx[0] == 7 and ctx[1] is not None
    assert all(ctx[i] is None for i in range(2, 18))  # (NULL)
    assert len(_context([1] * 18)) == 18
    with pytest.raises(ValueError, match="19 slots, the kernel reads 18"):
        _context([1] * 19)
