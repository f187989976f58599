"""Constrained steps do not depend on the unit of mass either (test_integrator_units.py has the unconstrained ones).

A constrained step's Newton matrix is bordered: J = [∂R_dyn/∂q_{k+1} ≈ M_{k+1}/Δt, −Dhᵀ; Dh, 0] (Johnson2015, eq.
28a–b; the GNI adds its nonholonomic rows, Kobilarov2010, eqs. 5 and 16). The first block scales with every mass and the
border does not. Masses × s leave the motion unchanged (q the same, p and λ × s), but cond₁(J) grew as s²: a
four-bar × 2¹⁰ reported rcond 9e-12, so the planner warned "near singular", and × 2¹⁹ was refused as singular at
step 0. The condition judged now is that of the equilibrated D J D (``integrators.bordered``). It is the same at every
even power of two, and within the factor 2 by which an odd power moves the two blocks apart. A real singularity
is still refused, at its own step.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from vi_control.integrators import SingularityError, make_integrator
from vi_control.integrators.midpoint import MidpointVI
from vi_control.linearization import linearize, linearize_trajectory
from vi_control.model import load_robot
from vi_control.model.bundled import bundled_config, bundled_urdf, fourbar_initial_configuration, load_bundled
from vi_control.planning import compiled, load_task, make_system, plan_task
from vi_control.planning.compiled import compiled_stages

DT, STEPS = 0.01, 100
SCALES = (2.0**-19, 2.0**-10, 2.0**10, 2.0**19)  # 2¹⁹ ≈ 5e5: the largest power of two load_robot takes
RCOND_FACTOR = 4.0  # the reported rcond at any scale within this factor of the unscaled one (measured ≤ 1.54)
Q0 = fourbar_initial_configuration(0.3)
OPTIONS = [dict(), dict(newton="exact"), dict(compile=False, newton="chord"), dict(compile=False)]
OPTION_IDS = ["compiled-chord", "compiled-exact", "numpy-chord", "numpy-exact"]


def _fourbar(s: float):
    return load_robot(bundled_urdf("fourbar"), bundled_config("fourbar"), mass_scale=s)


def _rcond(vi, x: np.ndarray, u: np.ndarray) -> float:
    """The step's condition verdict at (x, u): the rcond of its first factorization, read from the SingularityError
    that rcond_min = 2 forces (both backends report it so)."""
    saved = vi.settings
    vi.settings = dataclasses.replace(saved, rcond_min=2.0)
    try:
        with pytest.raises(SingularityError) as e:
            vi.solve(x, u, step_index=0)
    finally:
        vi.settings = saved
    return e.value.rcond


def _run(vi, x0: np.ndarray, U: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """States, multipliers and every 10th step's rcond of the run from x0 under inputs U."""
    X, lam = vi.simulate(x0, U)
    return X, lam, np.array([_rcond(vi, X[k], U[k]) for k in range(0, len(U), 10)])


def _assert_same_run(run, run1, s: float, nq: int) -> None:
    """``run`` is the unscaled ``run1`` with momenta and multipliers × s, and its rcond within RCOND_FACTOR."""
    (X, lam, rc), (X1, lam1, rc1) = run, run1
    dq = np.abs(X[:, :nq] - X1[:, :nq]).max()
    dp = np.abs(X[:, nq:] / s - X1[:, nq:]).max() / np.abs(X1[:, nq:]).max()
    dlam = np.abs(lam / s - lam1).max() / np.abs(lam1).max()
    ratio = np.abs(np.log(rc / rc1)).max()
    assert dq < 1e-10 and dp < 1e-10 and dlam < 2e-10, (s, dq, dp, dlam)  # (measured ≤ 1e-11, 7e-12, 4e-11)
    assert ratio <= np.log(RCOND_FACTOR), (s, rc, rc1)


@pytest.mark.parametrize("options", OPTIONS, ids=OPTION_IDS)
def test_the_fourbar_runs_in_any_unit_of_mass(options):
    """100 steps of the four-bar driven at the crank (0.5 N·m × s), masses × 2^±10, 2^±19: the unscaled run, and the
    rcond within 1.6× (was 9.7e-6 unscaled, 9.3e-12 at × 2¹⁰, 3.5e-17 at × 2¹⁹: refused at step 0). p₁ of the
    stopping rule is set to s (``NewtonSettings.momentum_scale``; by default it is capped at 1, so exact Newton's
    last iterate would depend on s by ~1e-11): the stopping decisions are then the same at every scale."""

    def run(s):
        vi = MidpointVI(_fourbar(s), DT, dataclasses.replace(MidpointVI.DEFAULT_SETTINGS, momentum_scale=s), **options)
        return _run(vi, vi.state_from_configurations(Q0, Q0), np.full((STEPS, 1), 0.5 * s))

    run1 = run(1.0)
    assert np.ptp(run1[0][:, 0]) > 0.1  # the crank turns
    for s in SCALES:
        _assert_same_run(run(s), run1, s, 3)


@pytest.mark.parametrize("compile", [None, False], ids=["compiled", "numpy"])
def test_the_sleigh_runs_in_any_unit_of_mass(compile):
    """The GNI (Kobilarov2010, eqs. 5, 16) on the Chaplygin sleigh, masses × 2^±10, 2^±19, 100 steps: the unscaled run,
    and the condition of its Newton matrix (bordered by the nonholonomic row) within 1.6× (was 2e-8 at × 2¹⁰; × 2¹⁹
    refused)."""
    qdot0 = np.array([-1.0, 0.5 * 2.0, 2.0])  # test_gni_sleigh.py: an allowed velocity (ẏ = a θ̇ at θ = 0)

    def run(s):
        gni = make_integrator("gni", load_bundled("sleigh", mass_scale=s), DT, compile=compile)
        return _run(gni, gni.state_from_velocity(np.zeros(3), qdot0), np.zeros((STEPS, 0)))

    run1 = run(1.0)
    for s in SCALES:
        _assert_same_run(run(s), run1, s, 3)


def _in_unscaled_units(A: np.ndarray, B: np.ndarray, s: float, nq: int) -> tuple[np.ndarray, np.ndarray]:
    """(A, B) of the model with masses × s in the units of the unscaled one: x_s = T x, T = diag(I, s I), and u_s = s u,
    so A = T⁻¹ A_s T and B = s T⁻¹ B_s."""
    T = np.r_[np.ones(nq), np.full(nq, s)]
    return A * T[None, :] / T[:, None], B * s / T[:, None]


@pytest.mark.parametrize("s", [2.0**19, 2.0**-19])
def test_the_fourbar_linearization_in_any_unit_of_mass(s):
    """A_k, B_k (Johnson2015, eqs. 29–30) at × 2^±19 are the unscaled ones after the unit conversion, from ``linearize``
    and from the planner's compiled kernel, and R_y's rcond is within 1.2× (at × 2¹⁹ it was 3.5e-17: refused)."""
    U = np.full((20, 1), 0.5)
    lins = {}
    for scale in (1.0, s):
        vi = MidpointVI(_fourbar(scale), DT)
        x0 = vi.state_from_configurations(Q0, Q0)
        stages = compiled_stages(vi, len(U), np.full(1, -np.inf), np.full(1, np.inf))
        assert stages is not None
        X, _, Y = stages.rollout(x0, U * scale)
        kernel = stages.linearize(X, U * scale, Y)
        lin = linearize(vi, X[10], U[10] * scale)
        lins[scale] = [(lin.A, lin.B, lin.rcond), (kernel.A[10].copy(), kernel.B[10].copy(), kernel.rcond[10])]
    for (A1, B1, rc1), (A, B, rc) in zip(lins[1.0], lins[s]):
        A, B = _in_unscaled_units(A, B, s, 3)
        # (measured ≤ 1.2e-15 and 9.4e-15 relative)
        assert np.abs(A - A1).max() < 1e-12 * np.abs(A1).max() and np.abs(B - B1).max() < 1e-12 * np.abs(B1).max()
        assert 1.0 / RCOND_FACTOR < rc / rc1 < RCOND_FACTOR, (rc, rc1)


def _fourbar_task(s: float) -> dict:
    """Turn the crank from 0.3 to 0.8 rad in 0.3 s, masses × s and the cost in the same units (momentum and input
    weights ÷ s²)."""
    return {
        "name": "fourbar_turn",
        "model": {"bundled": "fourbar", "mass_scale": s},
        "dt": DT,
        "horizon": 30,
        "start": {"q": Q0.tolist(), "qdot": [0.0] * 3},
        "goal": {"q": fourbar_initial_configuration(0.8).tolist()},
        "reference": {"type": "goal"},
        "initial_guess": "zero",
        "input_limits": "none",
        "optimizer": {"method": "ddp", "max_iterations": 3},
        "weights": {
            "Q": {"q": [1.0] * 3, "p": [0.1 / s**2] * 3},
            "R": 0.01 / s**2,
            "Qf": {"q": [100.0] * 3, "p": [1.0 / s**2] * 3},
        },
        "lqr": {
            "Q": {"q": [1.0] * 3, "p": [1.0 / s**2] * 3},
            "R": 1.0 / s**2,
            "Qf": {"q": [1.0] * 3, "p": [1.0 / s**2] * 3},
        },
    }


@pytest.mark.parametrize("path", ["compiled", "numpy"])
def test_the_planner_does_not_warn_near_singular_on_a_heavy_fourbar(path, monkeypatch):
    """plan_task's check of the returned trajectory (rcond < 1e-8: "M_k+1 near singular") on the four-bar task with
    masses × 2¹⁰: it warned at every step (rcond ~1e-11); now silent, as unscaled."""
    monkeypatch.setattr(compiled, "ENABLED", path == "compiled")
    for s in (1.0, 2.0**10):
        task, lines = load_task(_fourbar_task(s)), []
        plan_task(make_system(task), task, log=lines.append)
        assert not [line for line in lines if "near singular" in line], (s, lines)


@pytest.mark.parametrize("compile", [None, False], ids=["compiled", "numpy"])
@pytest.mark.parametrize("s", [1.0, 2.0**19, 2.0**-19])
def test_a_singular_constraint_matrix_is_refused_at_its_own_step(s, compile):
    """The snakeboard's constraints coincide at step 5 (test_nonholonomic_snakeboard.py): refused there at every
    scale — the equilibration neither hides it nor (as the mixed units did at × 2¹⁹: step 0) invents one earlier —
    by both backends (the numpy loop's guess raised numpy's LinAlgError from the GNI's projector there)."""
    robot, rate = load_bundled("snakeboard", mass_scale=s), 0.5
    gni = make_integrator("gni", robot, DT, compile=compile)
    steer = [robot.joint_index("phi"), robot.joint_index("phi_front")]
    q0, qd = np.zeros(robot.nq), np.zeros(robot.nq)
    q0[steer], qd[steer] = np.pi / 2 - 5 * DT * rate, rate
    with pytest.raises(SingularityError) as e:
        gni.simulate(gni.state_from_velocity(q0, qd), np.zeros((10, gni.nu)))
    assert e.value.step == 5 and e.value.rcond < 1e-25


@pytest.mark.parametrize("compile", [None, False], ids=["compiled", "numpy"])
@pytest.mark.parametrize("s", [1.0, 2.0**19, 2.0**-19])
def test_a_near_singular_constraint_term_is_flagged_at_any_scale(s, compile):
    """Johnson2015, §VII-B: the Cartesian pendulum turning by π/2 − 1e-6 in one step makes the constraint term
    Dh(q_{k+1}) M⁻¹ Dh(q_k)ᵀ nearly singular. That step alone is flagged, and the next is not, at every scale
    (test_linearization_constrained.py unscaled)."""
    vi = MidpointVI(
        load_robot(bundled_urdf("cartesian_pendulum"), bundled_config("cartesian_pendulum"), mass_scale=s),
        0.1,
        compile=compile,
    )
    q0, q1 = (
        np.array([np.sin(0.3), -np.cos(0.3)]),
        np.array([np.sin(0.3 + np.pi / 2 - 1e-6), -np.cos(0.3 + np.pi / 2 - 1e-6)]),
    )
    X = [np.concatenate([q0, -np.asarray(vi.functions["D1Ld"](q0, q1)[0], float).ravel()])]
    for k in range(2):
        X.append(vi.solve(X[-1], np.zeros(0), step_index=k).x)
    traj = linearize_trajectory(vi, np.array(X), np.zeros((2, 0)), rcond_warn=1e-6)
    assert traj.near_singular.tolist() == [0] and traj.rcond[1] > 1e-4, traj.rcond
