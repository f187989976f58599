"""``step`` refuses results it cannot vouch for, in the numpy loop and in the C driver alike.

- a configuration beyond the stated range (q = 1e20) is a ValueError naming the joint;
- the residual's rounding floor can no longer excuse a residual that is no rounding: it is taken from the
  configuration before the step, 64·eps·‖J‖·(1 + |q_k|), not from the root Newton wandered to (a 10-link chain
  at p ~ 1e5 was accepted at a residual of 0.34 with tol 1e-7, chord Newton at 401 for p ~ 1e6);
- a root where a joint turns more than ``max_rotation`` in one step is refused (UntrustedStepError): the DEL
  equations have several roots there and chord and exact Newton returned different ones;
- Δt outside [1e-6, 1] s warns; a model whose joints are all prescribed steps the same in both backends.
"""

import warnings

import numpy as np
import pytest

from vi_control.integrators import ConvergenceError, StepError, UntrustedStepError, make_integrator
from vi_control.integrators.base import NewtonSettings
from vi_control.integrators.midpoint import MidpointVI
from vi_control.mechanics import codegen
from vi_control.model import load_robot
from vi_control.model.bundled import bundled_urdf, load_bundled

pytestmark = pytest.mark.skipif(codegen.compiler() is None, reason="the C driver needs a C compiler")


@pytest.fixture(scope="module")
def chain10():
    return load_bundled("chain10")


def _backends(robot, dt, **kw):
    """numpy loop (exact Newton), C driver with chord Newton (default), C driver with exact Newton."""
    return {
        "numpy": MidpointVI(robot, dt, compile=False, **kw),
        "C chord": MidpointVI(robot, dt, **kw),
        "C exact": MidpointVI(robot, dt, newton="exact", **kw),
    }


def test_configuration_beyond_the_range_is_refused_naming_the_joint(chain10):
    x = np.zeros(20)
    x[3] = 1e20
    systems = {**_backends(chain10, 0.01), "linear_time": make_integrator("linear_time", chain10, 0.01)}
    for vi in systems.values():
        with pytest.raises(ValueError, match=r"q\[3\] \(joint 'joint4'\) = 1e\+20 is beyond the supported range"):
            vi.step(x)
    x[3] = 1e5  # within the range: an ordinary step
    for vi in systems.values():
        assert np.all(np.isfinite(vi.step(x)))


def test_rounding_floor_cannot_excuse_a_large_residual(chain10):
    """With the rotation check switched off, only the acceptance rule stands between the user and a root Newton
    never reached. These steps were accepted at residuals of 0.18–400 (tolerance 1e-7–1e-6) because the floor grew
    with |q_{k+1}| ~ 1e4–1e5 rad; now each backend refuses them, and the residual it reports is no near miss."""
    q0 = np.zeros(10)
    q0[0] = 1.0
    for p in (1e5, 1e6):
        x = np.concatenate([q0, np.full(10, p) * np.array([1.0, -1.0] * 5)])
        tol = NewtonSettings().tolerance(p)
        for name, vi in _backends(chain10, 0.005, max_rotation=1e9).items():
            with pytest.raises(ConvergenceError) as err:
                vi.solve(x)
            assert err.value.residual > 1e3 * tol, (name, err.value.residual)


def test_rounding_floor_follows_the_configuration_not_the_root(chain10):
    """A chain whose joints turned many times (|q| = 1e5 rad) at rest: the residual's genuine rounding floor
    eps·‖M/Δt‖·|q| exceeds tol·(1 + |p|) and is accepted, in every backend, with the same result."""
    x = np.zeros(20)
    x[3] = 1e5
    results = [vi.step(x) for vi in _backends(chain10, 0.01).values()]
    assert all(np.abs(r - results[0]).max() < 1e-9 * 1e5 for r in results)
    assert NewtonSettings.rounding_floor(100.0, 1e5) == pytest.approx(64 * np.finfo(float).eps * 100 * (1 + 1e5))


@pytest.mark.parametrize("seed", [16, 17, 29, 45, 56, 57])
def test_chord_and_exact_never_return_different_roots(chain10, seed):
    """States (p ~ 1e4) where the DEL equations have several roots ~800 rad apart: without the rotation check
    chord and exact Newton may accept different ones; with it every backend refuses the step."""
    rng = np.random.default_rng(seed)
    x = np.concatenate([rng.uniform(-1, 1, 10), rng.normal(size=10) * 1e4 * rng.uniform(0.05, 1)])
    roots = []
    for vi in _backends(chain10, 0.01, max_rotation=1e9).values():
        try:
            roots.append(vi.step(x))
        except StepError:
            pass
    for r in roots:
        assert np.abs(r[:10] - x[:10]).max() > 100.0  # whatever was found is hundreds of radians away
    for vi in _backends(chain10, 0.01).values():
        with pytest.raises(StepError):
            vi.step(x)


def test_accepted_steps_agree_across_backends(chain10):
    """Over states with momenta from 0.1 to 1e4 (seeded): wherever backends accept a step their results agree to
    1e-9 — there is no state where chord and exact return different roots."""
    rng = np.random.default_rng(7)
    systems = _backends(chain10, 0.01)
    outcomes = {"accepted": 0, "refused": 0, "accepted by some": 0}
    for _ in range(120):
        x = np.concatenate([rng.uniform(-3, 3, 10), rng.normal(size=10) * 10 ** rng.uniform(-1, 4)])
        results = []
        for vi in systems.values():
            try:
                results.append(vi.step(x))
            except StepError:
                results.append(None)
        accepted = [r for r in results if r is not None]
        if not accepted:
            outcomes["refused"] += 1
            continue
        scale = 1.0 + np.abs(accepted[0]).max()
        assert max(np.abs(a - accepted[0]).max() for a in accepted) <= 1e-9 * scale
        outcomes["accepted" if len(accepted) == len(results) else "accepted by some"] += 1
    # (where one backend's Newton wandered past half a turn it refuses what another accepted: never two states)
    assert outcomes["accepted"] > 20 and outcomes["refused"] > 20 and outcomes["accepted by some"] <= 3, outcomes


def test_untrusted_step_names_the_joint(chain10):
    x = np.concatenate([np.zeros(10), np.zeros(10)])
    x[10] = 3e3  # the root joint spun at ~ 40 rad per 10 ms step
    for vi in _backends(chain10, 0.01).values():
        with pytest.raises((UntrustedStepError, ConvergenceError)) as err:
            vi.step(x)
        if isinstance(err.value, UntrustedStepError):
            assert err.value.joint.startswith("joint") and "in one step" in str(err.value)


def test_linear_time_vi_refuses_the_same_steps(chain10):
    lt = make_integrator("linear_time", chain10, 0.01, method="newton")
    x = np.concatenate([np.zeros(10), np.full(10, 500.0)])
    with pytest.raises(StepError):
        lt.step(x)
    with pytest.raises(StepError):
        lt.simulate(x, np.zeros((3, lt.nu)))


@pytest.mark.parametrize("dt, warns", [(1e3, True), (2.0, True), (1e-7, True), (0.5, False), (1e-4, False)])
def test_time_step_outside_the_stated_range_warns(chain10, dt, warns):
    for name in ("midpoint", "linear_time"):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            make_integrator(name, chain10, dt, **({"compile": False} if name == "midpoint" else {}))
        hits = [w for w in caught if "outside [1e-06, 1] s" in str(w.message)]
        assert bool(hits) == warns, (name, dt, [str(w.message) for w in caught])


def test_all_prescribed_model_steps_alike_in_both_backends():
    """Nothing to solve: q_{k+1} = ρ and the kinematic velocity (ρ − q_k)/Δt, from the numpy loop (which raised
    ValueError on the empty residual) and the C driver alike."""
    robot = load_robot(bundled_urdf("double_pendulum"), {"prescribed": ["shoulder", "elbow"]})
    x = np.array([0.1, -0.2, 0.0, 0.0])
    rho = np.array([0.15, -0.1])
    for vi in (MidpointVI(robot, 0.1, compile=False), MidpointVI(robot, 0.1)):
        xn = vi.step(x, rho)
        np.testing.assert_allclose(xn, [0.15, -0.1, 0.5, 1.0], atol=1e-12)


def test_a_spinning_wheel_is_not_limited():
    """A joint whose angle the equations do not see (one rigid body, centre of mass on the axis, axisymmetric
    inertia: a wheel, arm7's flange) has one DEL root however far it turns: > 1.5 rad per step is accepted by every
    backend, with one result; a joint that moves an off-axis mass is refused beyond half a turn per step."""
    from vi_control.model.mass_structure import spin_invariant_joints

    assert spin_invariant_joints(load_bundled("diffdrive")) == {"left_wheel_joint", "right_wheel_joint"}
    assert spin_invariant_joints(load_bundled("arm7")) == {"a7"} and not spin_invariant_joints(load_bundled("chain10"))
    arm = load_bundled("arm7")
    systems = _backends(arm, 0.01)
    vi = systems["numpy"]
    q = np.array([0.1, 0.5, -0.2, -1.0, 0.3, 0.6, 0.0])
    fast_flange = np.zeros(7)
    fast_flange[6] = 1000.0  # rad/s
    x = vi.state_from_velocity(q, fast_flange)
    results = [s.step(x) for s in systems.values()]
    assert all(np.abs(r - results[0]).max() < 1e-9 * (1 + np.abs(results[0]).max()) for r in results)
    assert results[0][6] - q[6] > np.pi  # beyond the limit every other joint of the arm has
    fast_wrist = np.zeros(7)
    fast_wrist[5] = 1000.0  # ~ 4 rad per step: beyond half a turn
    for s in systems.values():
        with pytest.raises(StepError):
            s.step(vi.state_from_velocity(q, fast_wrist))


def test_linearize_refuses_a_model_with_every_joint_prescribed_and_takes_one_with_one_dynamic_joint():
    """At the boundary: one dynamic joint left linearizes (A, B finite); none left is a ValueError saying why (it
    was LAPACK's 'DGETRF parameter number 4' on stderr and numpy's zero-size reduction error)."""
    from vi_control.linearization import linearize

    for prescribed, ok in ((["shoulder"], True), (["shoulder", "elbow"], False)):
        vi = make_integrator("midpoint", load_robot(bundled_urdf("double_pendulum"), {"prescribed": prescribed}), 0.01)
        x, u = vi.state_from_configurations(np.zeros(2), np.zeros(2)), np.zeros(vi.nu)
        if ok:
            lin = linearize(vi, x, u)
            assert np.all(np.isfinite(lin.A)) and np.all(np.isfinite(lin.B))
        else:
            with pytest.raises(ValueError, match="no dynamic coordinates"):
                linearize(vi, x, u)
