"""The package's Newton driver (vi_newton_step, C) against the numpy oracle (test/support/midpoint_newton_oracle.py)
over the CasADi VM (compile=False).

The oracle is the independent reference here: it evaluates the same symbolic residual without generated C, and
factors with LAPACK's dgetrf/dgecon instead of our own LU and condition estimator. The driver over the VM's
functions (callbacks) is checked against it too.
"""

import dataclasses
import os
from contextlib import contextmanager

import numpy as np
import pytest
from midpoint_newton_oracle import NumpyNewtonVI

from vi_control.integrators.midpoint import CHORD_RATE_MAX, ConvergenceError, MidpointVI, SingularityError
from vi_control.linearization import linearize
from vi_control.mechanics import codegen
from vi_control.model import load_robot
from vi_control.model.bundled import bundled_config, bundled_urdf, example_robot_urdf, fourbar_initial_configuration
from vi_control.model.generate import planar_chain_urdf

DT = 0.01


def _models():
    return {
        "panda": lambda: load_robot(example_robot_urdf("panda")),
        "chain10": lambda: load_robot(planar_chain_urdf(10, damping=0.05)),
        # Holonomic constraints (λ unknowns, bordered Jacobian) and prescribed joints (idx_k path).
        "fourbar": lambda: load_robot(bundled_urdf("fourbar"), bundled_config("fourbar")),
        # Masses × 2¹⁹: the bordered matrix's blocks 2¹⁹ further apart (its own rcond ~4e-17: test_constrained_units)
        "fourbar_heavy": lambda: load_robot(bundled_urdf("fourbar"), bundled_config("fourbar"), mass_scale=2.0**19),
        "prescribed": lambda: load_robot(
            bundled_urdf("double_pendulum"), {"gravity": [0, 0, -9.81], "prescribed": ["elbow"]}
        ),
    }


@pytest.fixture(scope="module", params=list(_models()))
def pair(request):
    if os.environ.get("VI_CONTROL_NO_COMPILE") == "1":
        pytest.skip("VI_CONTROL_NO_COMPILE=1: no generated step to compare")
    robot = _models()[request.param]()
    compiled, vm = MidpointVI(robot, DT), NumpyNewtonVI(MidpointVI(robot, DT, compile=False))
    assert compiled.compiled_driver and not vm.compiled_driver
    assert (compiled.newton, vm.newton) == ("chord", "exact")  # default: the faster method per backend
    return request.param, compiled, vm


def _initial_state(name: str, vi: MidpointVI, rng) -> np.ndarray:
    if name.startswith("fourbar"):
        q = fourbar_initial_configuration(0.3)
        return vi.state_from_configurations(q, q)  # at rest on the constraint manifold
    q, qdot = rng.uniform(-1, 1, vi.nq), rng.uniform(-1, 1, vi.nq)
    return vi.state_from_velocity(q, qdot)


def _forced_inputs(vi: MidpointVI, x: np.ndarray, rng) -> np.ndarray:
    U = rng.uniform(-2, 2, (15, vi.nu))
    if vi.nk:
        U[:, vi.n_torques :] = x[vi.idx_k] + 0.01 * np.arange(1, 16)[:, None]  # ρ_{k+1}
    return U


@contextmanager
def _method(newton: str, rate: float, *vis: MidpointVI):
    """Newton variant on every given integrator (plain attributes, read at each solve)."""
    saved = [(vi.newton, vi.chord_rate_max) for vi in vis]
    for vi in vis:
        vi.newton, vi.chord_rate_max = newton, rate
    try:
        yield
    finally:
        for vi, (n, r) in zip(vis, saved):
            vi.newton, vi.chord_rate_max = n, r


# Chord Newton (default), exact Newton, and chord with rate 0: the Jacobian is refreshed at every update.
METHODS = [("chord", CHORD_RATE_MAX), ("exact", CHORD_RATE_MAX), ("chord", 0.0)]


@pytest.mark.parametrize("newton, rate", METHODS)
def test_compiled_step_matches_vm(pair, rng, newton, rate):
    """Same x_{k+1}, λ_k, y and iteration count along a forced trajectory, to 1e-12."""
    name, compiled, vm = pair
    x = _initial_state(name, compiled, rng)
    U = _forced_inputs(compiled, x, rng)
    for k, u in enumerate(U):
        with _method(newton, rate, compiled, vm):
            rc, rv = compiled.solve(x, u, step_index=k), vm.solve(x, u, step_index=k)
        scale = 1.0 + np.abs(rv.x).max()
        assert np.abs(rc.x - rv.x).max() <= 1e-12 * scale
        assert np.abs(rc.y - rv.y).max() <= 1e-12 * scale
        assert np.allclose(rc.lam, rv.lam, rtol=1e-10, atol=1e-12)
        # Newton's count as a bound: a residual at the tolerance may need one more update on another CPU
        assert abs(rc.iterations - rv.iterations) <= 1 and rc.iterations >= 1
        assert rc.residual <= compiled.settings.tol * (1.0 + np.abs(x[compiled.nq :]).max())
        x = rc.x
    if compiled.nc:  # the constrained steps really stay on h(q) = 0
        assert np.abs(compiled.constraint(x[: compiled.nq])).max() < 1e-10


@pytest.mark.parametrize("newton, rate", METHODS)
def test_compiled_warm_start_matches_vm(pair, rng, newton, rate):
    """The y0 warm start (used by linearize_trajectory) goes through the same driver."""
    name, compiled, vm = pair
    x = _initial_state(name, compiled, rng)
    u = np.zeros(compiled.nu)
    if compiled.nk:
        u[compiled.n_torques :] = x[compiled.idx_k]
    y0 = vm.solve(x, u).y + 1e-4
    with _method(newton, rate, compiled, vm):
        rc, rv = compiled.solve(x, u, y0=y0), vm.solve(x, u, y0=y0)
    assert np.abs(rc.x - rv.x).max() <= 1e-12 * (1.0 + np.abs(rv.x).max())
    assert abs(rc.iterations - rv.iterations) <= 1


@pytest.mark.parametrize("root_check", [False, True])
def test_chord_and_exact_newton_reach_the_same_root(pair, rng, monkeypatch, root_check):
    """Chord Newton (residual-only updates with one factored matrix) converges to the root of exact Newton
    (eq. 2a / 28a-b) to round-off. Unconstrained, the chord matrix is Δt⁻¹M(q_k) (Lee2016, eq. 25): on these gentle
    steps it never evaluates the Jacobian M_{k+1} (its condition check is M(q_k)'s, then 1–2 more quasi-Newton
    updates below tol), or once near the root with ``chord_root_check`` (condition check, then exact updates). With
    constraints M_{k+1} is evaluated twice (at the guess as the chord matrix, and near the root). Exact Newton
    needs one per iteration. Counted on the VM path by wrapping the real functions."""
    name, compiled, vm = pair
    calls = {"residual": 0, "residual_only": 0}
    for fn in calls:
        real = vm.functions[fn]
        monkeypatch.setitem(
            vm.functions._fns, fn, lambda *a, fn=fn, real=real: calls.__setitem__(fn, calls[fn] + 1) or real(*a)
        )
    for vi in (compiled, vm.vi):
        monkeypatch.setattr(vi, "chord_root_check", root_check)
    quasi_only = compiled.nc == 0 and not root_check
    x = _initial_state(name, compiled, rng)
    for k, u in enumerate(_forced_inputs(compiled, x, rng)):
        with _method("exact", CHORD_RATE_MAX, compiled, vm):
            re = compiled.solve(x, u, step_index=k)
            before = dict(calls)
            rv = vm.solve(x, u, step_index=k)
            assert calls["residual"] - before["residual"] == rv.iterations + 1
            assert calls["residual_only"] == before["residual_only"]
        before = dict(calls)
        with _method("chord", CHORD_RATE_MAX, compiled, vm):
            rc, rvc = compiled.solve(x, u, step_index=k), vm.solve(x, u, step_index=k)
        n_jac = calls["residual"] - before["residual"]
        assert n_jac == (0 if quasi_only else 1 if compiled.nc == 0 else 2)
        # every evaluation is one of the counted iterations, plus the updates below tol of the quasi-Newton finish
        extra = n_jac + calls["residual_only"] - before["residual_only"] - (rvc.iterations + 1)
        assert extra in ((1, 2) if quasi_only else (0,)), extra
        assert rc.iterations == rvc.iterations
        scale = 1.0 + np.abs(re.x).max()
        assert np.abs(rc.x - re.x).max() <= 1e-12 * scale and np.abs(rc.y - re.y).max() <= 1e-12 * scale
        assert np.allclose(rc.lam, re.lam, rtol=1e-10, atol=1e-12)
        assert rc.iterations >= re.iterations >= 1  # linear convergence needs at least as many updates
        assert rc.residual <= compiled.settings.tol * (1.0 + np.abs(x[compiled.nq :]).max())
        x = rc.x


def test_unknown_newton_method_rejected():
    with pytest.raises(ValueError, match="newton"):
        MidpointVI(load_robot(planar_chain_urdf(2)), DT, newton="broyden")


def _error_with(vi: MidpointVI, error: type, x, u, step: int, **settings):
    """The error ``solve`` raises under changed NewtonSettings (restored afterwards)."""
    saved = vi.settings
    vi.settings = dataclasses.replace(saved, **settings)
    try:
        with pytest.raises(error) as e:
            vi.solve(x, u, step_index=step)
    finally:
        vi.settings = saved
    return e.value


@pytest.mark.parametrize("newton", ["chord", "exact"])
def test_singularity_error_and_rcond_match_lapack(pair, rng, newton):
    """rcond_min above every attainable value: both raise at the first factorization of M_{k+1} (exact: at the
    guess; chord: near the root, or at the guess with constraints), and our condition estimate equals LAPACK
    dgecon's (same Hager–Higham algorithm)."""
    name, compiled, vm = pair
    x = _initial_state(name, compiled, rng)
    u = np.zeros(compiled.nu)
    if compiled.nk:
        u[compiled.n_torques :] = x[compiled.idx_k] + 0.01
    with _method(newton, CHORD_RATE_MAX, compiled, vm):
        errors = [_error_with(vi, SingularityError, x, u, 7, rcond_min=2.0) for vi in (compiled, vm)]
    assert errors[0].step == errors[1].step == 7 and errors[0].what == errors[1].what
    assert 0 < errors[0].rcond <= 1
    assert errors[0].rcond == pytest.approx(errors[1].rcond, rel=1e-9)


def test_bordered_condition_is_lapacks_of_the_equilibrated_matrix(pair, rng):
    """With constraints both backends judge D J D, D = diag(2^-e I_nd, 2^e I_nc) with e = ⌊(E_dd − E_b)/2⌋ of the binary
    exponents of the largest |entry| of M_{k+1}'s block and of the border (integrators.bordered): their estimates
    equal LAPACK dgecon on dgetrf of D J D formed here, at the guess where exact Newton factors first. The heavy
    four-bar's J itself is near singular to LAPACK (rcond < rcond_min: what the step reported before)."""
    from scipy.linalg import lapack

    name, compiled, vm = pair
    if not compiled.nc:
        pytest.skip("no border: the condition of J itself (test_singularity_error_and_rcond_match_lapack)")
    x = _initial_state(name, compiled, rng)
    u = np.zeros(compiled.nu)
    with _method("exact", CHORD_RATE_MAX, compiled, vm):
        got = [_error_with(vi, SingularityError, x, u, 0, rcond_min=2.0).rcond for vi in (compiled, vm)]
    J = np.array(vm.functions["residual"](vm.initial_guess(x, u, None), np.concatenate([x, u]))[1])
    nd = compiled.nd
    e = (
        np.frexp(np.abs(J[:nd, :nd]).max())[1] - np.frexp(max(np.abs(J[:nd, nd:]).max(), np.abs(J[nd:, :nd]).max()))[1]
    ) // 2
    d = np.r_[np.full(nd, 2.0**-e), np.full(compiled.nc, 2.0**e)]
    DJD = J * np.outer(d, d)
    lu, _, info = lapack.dgetrf(DJD)
    expected = lapack.dgecon(lu, np.abs(DJD).sum(axis=0).max(), norm="1")[0]
    assert info == 0 and got == pytest.approx([expected, expected], rel=1e-9)
    lu, _, _ = lapack.dgetrf(J)
    unscaled = lapack.dgecon(lu, np.abs(J).sum(axis=0).max(), norm="1")[0]
    assert (unscaled < compiled.settings.rcond_min) == (name == "fourbar_heavy"), unscaled


def test_quasi_newton_condition_estimate_matches_lapack_dpocon(pair, rng):
    """chord_root_check=False on an unconstrained step that converges on Δt⁻¹M(q_k) alone: the driver's condition
    estimate (our Hager–Higham on the Cholesky factor) is LAPACK dpocon's for M(q_k)_dd; with rcond_min above it,
    M_{k+1} is checked at the root as with the root check (SingularityError about M_{k+1})."""
    from scipy.linalg import lapack

    name, compiled, vm = pair
    if compiled.nc:
        pytest.skip("constrained steps always use M_{k+1}")
    x = _initial_state(name, compiled, rng)
    u = np.zeros(compiled.nu)
    if compiled.nk:
        u[compiled.n_torques :] = x[compiled.idx_k] + 0.01
    compiled.chord_root_check = vm.chord_root_check = False
    try:
        with _method("chord", CHORD_RATE_MAX, compiled, vm):
            rc, rv = compiled.solve(x, u), vm.solve(x, u)
            mdd = compiled.mass_matrix(x[: compiled.nq])[np.ix_(compiled.idx_d, compiled.idx_d)]
            chol, info = lapack.dpotrf(mdd, lower=1)
            expected = lapack.dpocon(chol, np.abs(mdd).sum(axis=0).max(), uplo="L")[0]
            assert info == 0 and compiled._newton.info[2] == pytest.approx(expected, rel=1e-9)
            assert np.abs(rc.x - rv.x).max() <= 1e-12 * (1.0 + np.abs(rv.x).max())
            assert rc.iterations == rv.iterations
            errors = [_error_with(vi, SingularityError, x, u, 3, rcond_min=2.0) for vi in (compiled, vm)]
        assert errors[0].what == errors[1].what == compiled.jacobian_name
        assert errors[0].rcond == pytest.approx(errors[1].rcond, rel=1e-9)
    finally:
        compiled.chord_root_check = vm.chord_root_check = True


def test_convergence_error_matches(pair, rng):
    name, compiled, vm = pair
    x = _initial_state(name, compiled, rng)
    x[compiled.nq :] *= 50.0  # a violent step: one Newton iteration cannot reach the tolerance
    u = np.full(compiled.nu, 200.0)
    if compiled.nk:
        u[compiled.n_torques :] = x[compiled.idx_k] + 0.5
    errors = [_error_with(vi, ConvergenceError, x, u, 3, max_iterations=1) for vi in (compiled, vm)]
    assert errors[0].step == errors[1].step == 3
    assert errors[0].iterations == errors[1].iterations == 1
    assert errors[0].residual == pytest.approx(errors[1].residual, rel=1e-8)


def test_nonfinite_input_rejected(pair):
    _, compiled, _ = pair
    x = np.zeros(compiled.nx)
    x[-1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        compiled.step(x, np.zeros(compiled.nu))


def test_cache_reused_and_derivatives_lazy(tmp_path, monkeypatch):
    """Second construction of the same model loads the cached library: no compiler run, no new file.
    Derivative functions are compiled only when first used."""
    if codegen.compiler() is None:
        pytest.skip("no C compiler")
    from vi_control.integrators import bordered

    bordered._library()  # (the linearization's model-independent library, once per process: counted by no model)
    monkeypatch.setenv("VI_CONTROL_CACHE", str(tmp_path))
    monkeypatch.delenv("VI_CONTROL_NO_COMPILE", raising=False)
    robot = load_robot(planar_chain_urdf(3))
    before = dict(codegen.build_stats)
    vi = MidpointVI(robot, DT)
    libs = {p.name: p.stat().st_mtime_ns for p in tmp_path.glob("*.so")}
    assert codegen.build_stats["compiled"] == before["compiled"] + 1 and len(libs) == 1
    assert vi.compiled_driver

    again = MidpointVI(load_robot(planar_chain_urdf(3)), DT)
    assert codegen.build_stats["compiled"] == before["compiled"] + 1
    assert codegen.build_stats["cache_hits"] == before["cache_hits"] + 1
    assert {p.name: p.stat().st_mtime_ns for p in tmp_path.glob("*.so")} == libs
    x = again.state_from_velocity(np.array([0.3, -0.2, 0.1]), np.zeros(3))
    assert np.array_equal(again.step(x), vi.step(x))

    linearize(again, x, np.zeros(again.nu))  # first derivative use: one more library
    assert codegen.build_stats["compiled"] == before["compiled"] + 2
    assert len(list(tmp_path.glob("*.so"))) == 2


@pytest.mark.parametrize("wrap", [False, True])
def test_results_do_not_alias_driver_buffers(pair, rng, wrap):
    """Returned x, y, λ stay valid after later steps (the driver reuses its buffers), with and without
    wrapping of continuous angles, and wrapping agrees with the VM path."""
    name, compiled, vm = pair
    x = _initial_state(name, compiled, rng)
    x[: compiled.nq][compiled.robot.continuous_mask] += 2 * np.pi  # something to wrap
    u = np.zeros(compiled.nu)
    if compiled.nk:
        u[compiled.n_torques :] = x[compiled.idx_k]
    compiled.wrap_continuous = vm.wrap_continuous = wrap
    try:
        r1 = compiled.solve(x, u)
        kept = (r1.x.copy(), r1.y.copy(), r1.lam.copy())
        u2 = u.copy()
        u2[compiled.n_torques :] = r1.x[compiled.idx_k]  # a prescribed joint stays where the (wrapped) state has it
        r2 = compiled.solve(r1.x, u2)
        rv = vm.solve(x, u)
    finally:
        compiled.wrap_continuous = vm.wrap_continuous = False
    assert all(np.array_equal(a, b) for a, b in zip(kept, (r1.x, r1.y, r1.lam)))
    assert not np.array_equal(r1.x, r2.x)
    assert np.abs(r1.x - rv.x).max() <= 1e-12 * (1.0 + np.abs(rv.x).max())


def test_the_driver_over_the_vm_matches_the_oracle(pair, rng):
    """compile=False: the VM evaluates the functions, called back from the one C driver — the oracle's roots to
    round-off, the same iteration counts, along a forced trajectory, chord and exact."""
    name, compiled, oracle = pair
    vm = oracle.vi
    x = _initial_state(name, compiled, rng)
    for newton in ("exact", "chord"):
        with _method(newton, CHORD_RATE_MAX, vm):
            xk = x
            for k, u in enumerate(_forced_inputs(compiled, x, rng)[:5]):
                rd, ro = vm.solve(xk, u, step_index=k), oracle.solve(xk, u, step_index=k)
                assert np.abs(rd.x - ro.x).max() <= 1e-12 * (1.0 + np.abs(ro.x).max())
                assert abs(rd.iterations - ro.iterations) <= 1
                xk = rd.x


def test_without_a_compiler_the_midpoint_vi_says_what_to_install(tmp_path, monkeypatch):
    """The Newton iteration is C only: without a compiler MidpointVI refuses at construction with the fix, also
    for compile=False (the driver over the VM is C too)."""
    monkeypatch.setenv("VI_CONTROL_CACHE", str(tmp_path))
    robot = load_robot(planar_chain_urdf(3, damping=0.1))
    monkeypatch.setattr(codegen, "compiler", lambda: None)
    for compile in (None, False):
        with pytest.raises(codegen.CompilerRequiredError, match=r"needs a C compiler.*apt-get install gcc"):
            MidpointVI(robot, DT, compile=compile)
    assert not list(tmp_path.glob("*.so"))


@pytest.mark.parametrize("o0_limit, driver", [(10**9, True), (10, False)])
def test_oversized_residual_builds_at_O0_or_falls_back(tmp_path, monkeypatch, o0_limit, driver):
    """A residual above the optimising-compile limit (the 100-link chain's case, here forced by lowering the
    limits) still gets the whole C step, built at -O0; above the -O0 limit it runs in the VM. Same numbers."""
    if codegen.compiler() is None:
        pytest.skip("no C compiler")
    monkeypatch.setenv("VI_CONTROL_CACHE", str(tmp_path))
    monkeypatch.setattr(codegen, "_COMPILE_LIMIT_OPS", 300)  # residual, mass, output of chain3 are larger
    monkeypatch.setattr(codegen, "_O0_LIMIT_OPS", o0_limit)
    robot = load_robot(planar_chain_urdf(3))
    vi, reference = MidpointVI(robot, DT), MidpointVI(robot, DT, compile=False)
    assert (vi.compiled_driver) == driver and vi.functions.compiled("residual") == driver
    reference.newton = vi.newton  # chord over generated C, exact over the VM by default: compare like with like
    x = vi.state_from_velocity(np.array([0.5, -0.4, 0.3]), np.array([1.0, 0.0, -1.0]))
    X, _ = vi.simulate(x, np.ones((5, vi.nu)))
    Xr, _ = reference.simulate(x, np.ones((5, vi.nu)))
    assert np.abs(X - Xr).max() <= 1e-12 * (1.0 + np.abs(Xr).max())


def test_drivers_over_the_vm_in_two_threads_keep_their_own_functions():
    """The driver over the VM points its generated-function names at one model's callbacks per thread (thread-local
    pointers, set before each call): two models stepped at once in two threads — the driver releases the GIL, the
    callbacks take it back — give each its own sequential trajectory, bit for bit."""
    import sys
    import threading

    models = [load_robot(planar_chain_urdf(n, damping=0.05)) for n in (2, 3)]
    vis = [MidpointVI(r, DT, compile=False) for r in models]
    starts = [vi.state_from_velocity(np.full(vi.nq, 0.3), np.full(vi.nq, -0.2)) for vi in vis]
    inputs = [np.full((40, vi.nu), 0.5) for vi in vis]
    alone = [vi.simulate(x, U)[0] for vi, x, U in zip(vis, starts, inputs)]
    together: list = [None, None]

    def run(i: int) -> None:
        together[i] = [vis[i].simulate(starts[i], inputs[i])[0] for _ in range(5)]

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # (threads switch at every chance: between a binding and its driver call, too)
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    for i in range(2):
        assert all(np.array_equal(X, alone[i]) for X in together[i])
