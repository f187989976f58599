"""Compiled LinearTimeVI step (vi_control.integrators.drnea_c, the package's one path) against its numpy oracle
(test/support/linear_time_oracle.py), step by step, and its articulated-body recursion against Pinocchio's ABA."""

import numpy as np
import pinocchio as pin
import pytest
from linear_time_oracle import linear_time
from test_linear_time import TREE_URDF

from vi_control.integrators import drnea_c
from vi_control.integrators.base import UntrustedStepError
from vi_control.integrators.linear_time import ConvergenceError, LinearTimeVI
from vi_control.mechanics import codegen
from vi_control.model import load_robot
from vi_control.model.bundled import example_robot_urdf
from vi_control.model.generate import planar_chain_urdf

pytestmark = pytest.mark.skipif(not drnea_c.available(), reason="no C compiler")


@pytest.fixture(scope="module")
def robots():
    return {
        # damping makes F⁻_d depend on q_{k+1}; tilted gravity and a prismatic joint on the tree
        "chain5": load_robot(planar_chain_urdf(5, damping=0.3)),
        "tree": load_robot(TREE_URDF, {"gravity": [0.3, -0.2, -9.81], "damping": {"j3": 0.5}}),
        "panda": load_robot(example_robot_urdf("panda")),
    }


def _compare(robot, dt, steps, rng, **options):
    """Run both backends from the same states (the numpy trajectory); worst relative state gap, iterations."""
    a = linear_time(robot, dt, backend="numpy", **options)
    b = linear_time(robot, dt, backend="c", **options)
    n = robot.nq
    x = a.state_from_velocity(rng.uniform(-1, 1, n), rng.uniform(-2, 2, n))
    U = rng.normal(scale=2.0, size=(steps, a.nu))
    gap, its_a, its_b = 0.0, [], []
    for u in U:
        ra, rb = a.solve(x, u), b.solve(x, u)
        xa, xb = ra.x, rb.x
        gap = max(gap, float(np.abs(xa - xb).max() / np.abs(xa).max()))
        its_a.append(ra.iterations)
        its_b.append(rb.iterations)
        x = xa
    return gap, np.array(its_a), np.array(its_b)


@pytest.mark.parametrize("name", ["chain5", "tree", "panda"])
@pytest.mark.parametrize("method,jacobian", [("riqn", "subtree"), ("newton", "subtree"), ("newton", "alg4")])
def test_compiled_step_matches_numpy(name, method, jacobian, robots, rng):
    gap, its_a, its_b = _compare(robots[name], 1e-3, 40, rng, method=method, jacobian=jacobian)
    assert gap < 1e-12, gap
    # same algorithm, same stopping rules: the iteration counts agree except where rounding sits on a threshold
    assert np.mean(its_a == its_b) >= 0.9 and its_b.min() >= 1


@pytest.mark.parametrize("guess", ["IG1", "IG2"])
def test_compiled_initial_guesses_match_numpy(guess, robots, rng):
    for method in ("riqn", "newton"):
        gap, its_a, its_b = _compare(robots["tree"], 5e-3, 20, rng, method=method, initial_guess=guess)
        assert gap < 1e-12 and np.mean(its_a == its_b) >= 0.9, (method, gap)


def test_compiled_step_on_a_long_chain_matches_numpy(rng):
    """30 links: the residual sits at its rounding floor, the update-size rule stops both backends."""
    robot = load_robot(planar_chain_urdf(30))
    for method in ("riqn", "newton"):
        gap, _, its_b = _compare(robot, 1e-3, 10, rng, method=method)
        assert gap < 1e-11, (method, gap)


@pytest.mark.parametrize("name", ["chain5", "tree", "panda"])
def test_compiled_jacobians_match_numpy_and_finite_differences(name, robots, rng):
    """Both compiled exact Jacobians — Alg. 4 column by column and our subtree sums — against the numpy
    Jacobian and central differences of the compiled residual's numpy twin."""
    robot, dt = robots[name], 1e-2
    n = robot.nq
    vi = linear_time(robot, dt, method="newton", backend="numpy")
    step = linear_time(robot, dt, method="newton", backend="c")._compiled
    x = vi.state_from_velocity(rng.uniform(-1, 1, n), rng.uniform(-2, 2, n))
    q1 = x[:n] + dt * rng.normal(size=n) * 2
    J = vi.jacobian(x, q1)
    u, h = np.zeros(vi.nu), 1e-6
    Jfd = np.stack([(vi.residual(x, u, q1 + e) - vi.residual(x, u, q1 - e)) / (2 * h) for e in np.eye(n) * h], axis=1)
    assert np.allclose(J, Jfd, atol=1e-6 * np.abs(J).max())
    for alg4 in (True, False):
        assert np.allclose(step.jacobian(x[:n], q1, alg4=alg4), J, rtol=0, atol=1e-12 * np.abs(J).max()), alg4


@pytest.mark.parametrize("method", ["riqn", "newton"])
def test_compiled_rollout_equals_step_by_step(method, robots, rng):
    """simulate() on the C backend is one C call; it must reproduce the per-step path exactly."""
    robot = robots["tree"]
    vi = linear_time(robot, 2e-3, method=method, backend="c")
    x = vi.state_from_velocity(rng.uniform(-1, 1, 4), rng.uniform(-2, 2, 4))
    U = rng.normal(size=(50, vi.nu))
    X, lam = vi.simulate(x, U)
    history = list(vi.iteration_history)
    Y, its = [x], []
    for u in U:
        r = vi.solve(Y[-1], u)
        Y.append(r.x)
        its.append(r.iterations)
    assert X.shape == (51, 8) and lam.shape == (50, 0)
    assert np.array_equal(X, np.array(Y)) and history == its
    with pytest.raises(ValueError, match="NaN"):
        vi.simulate(x, np.full((3, vi.nu), np.nan))


def test_compiled_rollout_reports_the_failing_step(robots):
    chain = load_robot(planar_chain_urdf(5))
    vi = linear_time(chain, 0.05, max_iterations=3, backend="c", fallback=False)
    x = vi.state_from_velocity(np.full(5, 1.0), np.full(5, 3.0))
    with pytest.raises(ConvergenceError) as err:
        vi.simulate(x, np.zeros((10, 5)))
    assert err.value.step == 0 and err.value.iterations == 3 and len(vi.iteration_history) == 1


def test_given_guess_and_wrapping(robots, rng):
    robot = robots["tree"]
    a, b = (linear_time(robot, 0.01, backend=k, wrap_continuous=True) for k in ("numpy", "c"))
    x = a.state_from_velocity(np.array([3.1, 0.2, 0.1, -0.3]), np.array([5.0, 1.0, -1.0, 2.0]))
    y0 = x[:4] + 0.01 * a.velocity(x)
    ra, rb = a.solve(x, np.zeros(a.nu), y0=y0), b.solve(x, np.zeros(a.nu), y0=y0)
    assert np.abs(rb.x[0]) <= np.pi and rb.y[0] > np.pi  # joint 1 wrapped, the root itself is not
    assert np.allclose(ra.x, rb.x, rtol=1e-12, atol=1e-12) and abs(ra.iterations - rb.iterations) <= 1


@pytest.mark.parametrize("name", ["tree", "panda"])
def test_compiled_articulated_body_algorithm_matches_pinocchio(name, robots, rng):
    """The world-frame ABA used for RIQN's Δt M⁻¹f (eq. 25) and IG3, against pin.aba (local frames)."""
    robot = robots[name]
    step = linear_time(robot, 1e-3, backend="c")._compiled
    model, data = robot.pin_model, robot.pin_model.createData()
    free = pin.Model(model)
    free.gravity = pin.Motion.Zero()
    for _ in range(5):
        q, v, tau = rng.uniform(-2, 2, (3, robot.nq))
        ref = pin.aba(model, data, q, v, tau)
        assert np.allclose(step.aba(q, v, tau), ref, rtol=1e-10, atol=1e-10 * np.abs(ref).max())
        ref0 = pin.aba(free, free.createData(), q, np.zeros(robot.nq), tau)
        got0 = step.aba(q, np.zeros(robot.nq), tau, gravity=False)
        assert np.allclose(got0, ref0, rtol=1e-10, atol=1e-10 * np.abs(ref0).max())


def test_compiled_failures_raise_convergence_error(robots):
    chain = load_robot(planar_chain_urdf(5))
    vi = linear_time(chain, 0.05, max_iterations=3, backend="c", fallback=False)
    with pytest.raises(ConvergenceError) as err:
        vi.step(vi.state_from_velocity(np.full(5, 1.0), np.full(5, 3.0)), np.zeros(5), step_index=7)
    assert err.value.step == 7 and err.value.residual > 1e-6 and err.value.iterations == 3
    # a relative rotation near π in one step: log map not unique (numpy raises the same)
    for backend in ("numpy", "c"):
        vi = linear_time(robots["tree"], 1.0, initial_guess="IG2", backend=backend, fallback=False)
        with pytest.raises(ConvergenceError):
            vi.step(vi.state_from_velocity(np.zeros(4), np.array([3.1, 0, 0, 0])), np.zeros(vi.nu))


def test_fallback_chain_takes_the_step_on_both_backends(robots, caplog):
    """The same near-π step with the fallback chain (the default): RIQN fails at Δt = 1 s, Newton with the exact
    Jacobian finds an aliased root (a joint turning more than max_rotation = π), and substeps take the step; both
    backends log the same chain and agree (same operations)."""
    results, messages = [], []
    for backend in ("numpy", "c"):
        vi = linear_time(robots["tree"], 1.0, initial_guess="IG2", backend=backend)
        x = vi.state_from_velocity(np.zeros(4), np.array([3.1, 0, 0, 0]))
        caplog.clear()
        with caplog.at_level("WARNING", logger="vi_control.integrators.linear_time"):
            results.append(vi.solve(x, np.zeros(vi.nu), step_index=4))
        assert len(caplog.records) == 1
        messages.append(caplog.records[0].getMessage())
    assert messages[0] == messages[1]
    assert messages[0].startswith("LinearTimeVI step 4: RIQN did not converge at Δt")
    assert "Newton with the exact Jacobian neither (its root turns a joint more than max_rotation" in messages[0]
    assert "substeps (finest Δt/" in messages[0]
    a, b = results
    assert np.allclose(a.x, b.x, rtol=1e-10, atol=1e-10) and a.iterations == b.iterations
    assert np.abs(b.x[:4] - x[:4])[vi.rotational].max() <= np.pi  # not the aliased root (revolute joints)
    # without the chain, Newton's aliased root is refused as MidpointVI refuses one
    newton = linear_time(robots["tree"], 1.0, initial_guess="IG2", method="newton", fallback=False)
    with pytest.raises(UntrustedStepError):
        newton.solve(x, np.zeros(newton.nu))


def test_fallback_substeps_are_plain_steps_of_the_finer_map(caplog):
    """RIQN and Newton capped at 4 iterations fail at Δt = 50 ms; the chain halves down to Δt/256, where every
    substep converges: the result is exactly 256 plain RIQN steps of Δt/256 (no fallback), on both backends."""
    chain = load_robot(planar_chain_urdf(5))
    for backend in ("numpy", "c"):
        vi = linear_time(chain, 0.05, max_iterations=4, backend=backend)
        x = vi.state_from_velocity(np.full(5, 1.0), np.full(5, 3.0))
        caplog.clear()
        with caplog.at_level("WARNING", logger="vi_control.integrators.linear_time"):
            xn = vi.step(x, np.zeros(5), step_index=7)
        [record] = caplog.records
        assert "solved as 256 substeps (finest Δt/256)" in record.getMessage(), record.getMessage()
        fine = linear_time(chain, 0.05 / 256, max_iterations=4, backend=backend, fallback=False)
        assert np.allclose(xn, fine.simulate(x, np.zeros((256, 5)))[0][-1], rtol=1e-12, atol=1e-12), backend


def test_200_body_chain_at_10_ms_from_random_states(caplog):
    """A 200-body chain, Δt = 10 ms, random configurations and velocities. Every step is taken
    (RIQN, or a logged fallback); the backends agree; a step taken at Δt is a root of its DEL equation (numpy
    DRNEA residual, independent of the C solver)."""
    robot = load_robot(planar_chain_urdf(200))
    a, b = (linear_time(robot, 0.01, backend=backend) for backend in ("numpy", "c"))
    rng = np.random.default_rng(200)
    u = np.zeros(a.nu)
    for trial in range(3):
        x = a.state_from_velocity(rng.uniform(-np.pi, np.pi, 200), rng.uniform(-2, 2, 200))
        for k in range(2):
            caplog.clear()
            with caplog.at_level("WARNING", logger="vi_control.integrators.linear_time"):
                ra, rb = a.solve(x, u, step_index=k), b.solve(x, u, step_index=k)
            logs = [r.getMessage() for r in caplog.records]
            assert len(logs) in (0, 2) and all(m.startswith(f"LinearTimeVI step {k}: RIQN") for m in logs), logs
            assert np.abs(ra.x - rb.x).max() < 1e-8 * np.abs(ra.x).max(), (trial, k)
            if not any("substeps" in m for m in logs):
                f = a.residual(x, u, rb.y)
                assert np.abs(f).max() < 1e-7 * (1 + np.abs(x[200:]).max()), (trial, k, np.abs(f).max())
            x = ra.x


def test_backend_selection(robots, monkeypatch):
    """The compiled step is the one path: 'numpy' names where its twin went, no compiler names the fix."""
    assert LinearTimeVI(robots["chain5"], 0.01).backend == "c"
    assert LinearTimeVI(robots["chain5"], 0.01, backend="c").backend == "c"
    with pytest.raises(ValueError, match=r"backend='numpy' is no longer .*test/support/linear_time_oracle\.py"):
        LinearTimeVI(robots["chain5"], 0.01, backend="numpy")
    with pytest.raises(ValueError, match="backend"):
        LinearTimeVI(robots["chain5"], 0.01, backend="fortran")
    monkeypatch.setenv("VI_CONTROL_NO_COMPILE", "1")  # (a model's generated functions only: the step is ours)
    assert LinearTimeVI(robots["chain5"], 0.01).backend == "c"
    monkeypatch.setattr(codegen, "compiler", lambda: None)
    monkeypatch.setattr(drnea_c, "compiler", lambda: None)
    with pytest.raises(codegen.CompilerRequiredError, match=r"needs a C compiler: LinearTimeVI's step.*install gcc"):
        LinearTimeVI(robots["chain5"], 0.01)
    with pytest.raises(ValueError, match="jacobian"):
        LinearTimeVI(robots["chain5"], 0.01, method="newton", jacobian="broyden")


def test_newton_on_a_400_link_chain_stops_at_its_rounding_floor():
    """At N = 400 the residual's rounding floor (~1e-7) is far above tol and Newton's updates (~1e-9) above
    step_tol: before the stall rule, exact Newton cycled in that noise for 100 iterations at step 107 of this
    run. With it every step converges in a few iterations and lands on RIQN's root (tol 1e-12, rule off)."""
    n = 400
    robot = load_robot(planar_chain_urdf(n))
    q0 = np.zeros(n)
    q0[0] = 0.5
    newton = linear_time(robot, 1e-3, method="newton", backend="c")
    riqn = linear_time(robot, 1e-3, method="riqn", backend="c")
    X, _ = newton.simulate(np.concatenate([q0, np.zeros(n)]), np.zeros((110, n)))  # from rest: p = 0
    assert max(newton.iteration_history) <= 6
    # from the same states, RIQN (no stall rule: linear convergence to the tolerance or step_tol)
    gaps = [np.abs(riqn.step(X[k], np.zeros(n))[:n] - X[k + 1, :n]).max() for k in range(100, 110)]
    assert max(gaps) < 1e-8, gaps


@pytest.mark.parametrize("name", ["chain5", "tree", "panda"])
def test_compiled_state_conversions_match_pinocchio_without_its_data(name, robots, rng):
    """velocity (compiled ABA), state_from_velocity (our CRBA) and energy (the tree's own kinematics) on the C
    backend against Pinocchio's aba/rnea/energies; none of them creates a pinocchio.Data (nv³-sized)."""
    robot = robots[name]
    vi = linear_time(robot, 1e-3, backend="c")
    model, data = robot.pin_model, robot.pin_model.createData()
    free = pin.Model(model)
    free.gravity = pin.Motion.Zero()
    for _ in range(3):
        q, v = rng.uniform(-1.5, 1.5, robot.nq), rng.uniform(-2, 2, robot.nq)
        x = vi.state_from_velocity(q, v)
        p_ref = pin.rnea(free, free.createData(), q, np.zeros(robot.nq), v)
        assert np.allclose(x[robot.nq :], p_ref, rtol=0, atol=1e-12 * np.abs(p_ref).max())
        assert np.allclose(vi.velocity(x), v, rtol=0, atol=1e-10 * np.abs(v).max())
        e_ref = pin.computeKineticEnergy(model, data, q, v) + pin.computePotentialEnergy(model, data, q)
        assert vi.energy(x) == pytest.approx(e_ref, rel=1e-12, abs=1e-12)
    assert "_data" not in vi.__dict__ and "_impulse_data" not in vi.__dict__
