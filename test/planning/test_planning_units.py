"""The planner does not depend on the units of the cost and of mass.

Multiplying every cost weight by s — with the options given in units of the cost, ``optimizer.tolerance`` (|dJ|) and
``optimizer.penalty`` (ρ₀), × s as well — leaves the optimal plan and the convergence decision unchanged; so does
multiplying the masses and the input limits by s with the cost in the same units (momentum and input weights ÷ s²:
the plan's q is the same, its inputs × s). Each test plans a bundled task scaled by a power of two against the
unscaled task as the reference.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from vi_control.planning import compiled, load_task, make_system, plan_task, weight_matrix
from vi_control.planning.augmented import terminal_multiplier
from vi_control.planning.cost import QuadraticTrackingCost
from vi_control.planning.pipeline import input_limits, reference_trajectory, start_state

CONFIG = Path(__file__).resolve().parents[2] / "config"


def _scaled(name: str, s: float) -> dict:
    """The task ``name`` with every weight (weights, lqr, hold), the tolerance and the penalty × s."""
    d = yaml.safe_load((CONFIG / f"{name}.yaml").read_text())

    def times(w):
        if isinstance(w, dict):
            return {k: times(v) for k, v in w.items()}
        if isinstance(w, list):
            return [times(v) for v in w]
        return float(w) * s

    for group in ("weights", "lqr", "hold"):
        d[group] = {k: times(v) for k, v in d[group].items()}
    opt = d["optimizer"]
    opt["tolerance"] = float(opt["tolerance"]) * s
    if opt.get("terminal_constraint"):
        opt["penalty"] = float(opt.get("penalty", 1e4)) * s
    return d


def _plan(d: dict):
    task = load_task(d)
    return plan_task(make_system(task), task)


def test_terminal_constraint_converges_with_heavy_weights():
    """Cart-pole swing-up to a terminal constraint, weights × 2^20: the augmented Lagrangian's ρ cap and loosest
    inner tolerance are relative to ρ₀ and the tolerance (absolute 1e9 before: ρ₀ = 1e3·2^20 was cut to 1e9 at the
    first update and the run ended after 30 updates, unconverged)."""
    s = 2.0**20
    p1, r1 = _plan(_scaled("task_cartpole_swingup", 1.0))
    p, r = _plan(_scaled("task_cartpole_swingup", s))
    assert r1.converged and r.converged, (r1.stop_reason, r.stop_reason)
    assert abs(r.cost / s - r1.cost) < 1e-5 * r1.cost  # (both solves stop within their tolerances)
    assert np.abs(p.U - p1.U).max() < 1e-3 * np.abs(p1.U).max()
    assert np.abs(p.X[-1] - p1.X[-1]).max() < 1e-5


def _mass_scaled(name: str, s: float, cost_scale: float = 1.0) -> dict:
    """The task ``name`` (a one-joint pendulum, x = (q, p)) with masses and input limits × s and the weights in the
    same units: momentum and input weights ÷ s², then every weight and the tolerance × ``cost_scale``. The optimal
    plan has the same q and inputs × s."""
    d = yaml.safe_load((CONFIG / f"{name}.yaml").read_text())
    d["model"] = {"bundled": d["model"], "mass_scale": s}
    d["input_limits"] = [5.0 * s]  # (config/pendulum.yaml's 5 N·m)
    for group in ("weights", "lqr", "hold"):
        for key, w in d[group].items():
            d[group][key] = (
                [w[0] * cost_scale, w[1] / s**2 * cost_scale] if key != "R" else float(w) / s**2 * cost_scale
            )
    d["optimizer"]["tolerance"] = float(d["optimizer"]["tolerance"]) * cost_scale
    return d


@pytest.mark.parametrize("path", ["compiled", "numpy"])
def test_ddp_plan_does_not_depend_on_the_unit_of_the_cost(path, monkeypatch):
    """Pendulum swing-up, weights × 2⁻⁴⁰: DDP's regularization is in units of the cost (``ddp.regularization_unit``);
    with absolute bounds (μ ≥ 1e-9 against weights ~1e-10) it ended unconverged after 50 iterations, J 25 % high.
    Both loops: the compiled one and ddp's own."""
    monkeypatch.setattr(compiled, "ENABLED", path == "compiled")
    s = 2.0**-40
    p1, r1 = _plan(_scaled("task_pendulum_swingup", 1.0))
    p, r = _plan(_scaled("task_pendulum_swingup", s))
    assert r1.converged and r.converged, r.stop_reason
    assert abs(r.cost / s - r1.cost) < 1e-10 * r1.cost
    assert np.abs(p.U - p1.U).max() < 1e-9 * np.abs(p1.U).max()
    assert np.abs(p.K - p1.K).max() < 1e-9 * np.abs(p1.K).max()
    assert np.abs(p.K_final - p1.K_final).max() < 1e-9 * np.abs(p1.K_final).max()


@pytest.mark.parametrize(
    "s, cost_scale", [(2.0**19, 1.0), (2.0**-20, 2.0**-40)], ids=["heavy", "milligram-cost-in-its-units"]
)
def test_ddp_plan_does_not_depend_on_the_unit_of_mass(s, cost_scale):
    """Bounded pendulum swing-up (|u| ≤ 5 N·m × s) with masses × s and its cost in the same units. With absolute
    bounds on μ: × 2¹⁹ ended after 100 iterations 0.15 rad off; × 2⁻²⁰ with the cost × 2⁻⁴⁰ (angle weights
    ~1e-10 against μ ≥ 1e-9) reported convergence at a plan 3.9 rad off."""
    p1, r1 = _plan(_mass_scaled("task_pendulum_swingup_bounded", 1.0))
    p, r = _plan(_mass_scaled("task_pendulum_swingup_bounded", s, cost_scale))
    assert r1.converged and r.converged, r.stop_reason
    assert np.abs(p.X[:, 0] - p1.X[:, 0]).max() < 1e-9
    assert np.abs(p.U / s - p1.U).max() < 1e-9 * np.abs(p1.U).max()


@pytest.mark.parametrize("s", [1.0, 2.0**-20])
def test_an_unbalanced_final_configuration_is_reported_at_any_mass(s):
    """The acrobot (unactuated shoulder) ending 1 mrad off upright is no equilibrium: unbalanced gravity 0.02 N·m, or
    1.9e-8 N·m with masses × 2⁻²⁰ — which an absolute threshold of 1e-6 N·m took for an equilibrium."""
    d = yaml.safe_load((CONFIG / "task_acrobot_swingup.yaml").read_text())
    d["model"] = {**d["model"], "mass_scale": s}
    d.update(
        horizon=2,
        start={"q": [float(np.pi) - 1e-3, 0.0], "qdot": [0.0, 0.0]},
        input_limits="none",
        optimizer={"method": "ddp", "max_iterations": 1},
    )
    task, lines = load_task(d), []
    plan_task(make_system(task), task, log=lines.append)
    assert any("no equilibrium" in line for line in lines), lines


@pytest.mark.parametrize("s", [1.0, 2.0**-40])
@pytest.mark.parametrize("W", [[1.0, -1e-3], [[1.0, 2.0], [2.0, 1.0]]], ids=["negative-entry", "indefinite"])
def test_an_indefinite_cost_weight_is_refused_at_any_scale(W, s):
    """The planner's weight check allows round-off relative to the weight (it allowed 1e-12 absolute, so these
    weights × 2⁻⁴⁰ were accepted)."""
    with pytest.raises(ValueError, match="positive semidefinite"):
        weight_matrix(np.asarray(W) * s, 2, "Q")


def test_a_diagonal_weight_is_taken_as_it_is_and_refused_where_any_weight_is():
    """The diagonal weights the tasks give (a matrix, a vector or a scalar) come back equal and as copies; at the
    boundary the verdicts are those of any weight: 0 on the diagonal accepted, −1e-13 relative accepted (round-off),
    −1e-11 relative refused; a NaN off the diagonal or an infinite entry refused."""
    for w in (np.diag([100.0, 0.0]), [100.0, 0.0], 3.0, np.diag([-0.0, 2.0])):
        W = weight_matrix(w, 2, "Q")
        expected = np.diag(np.broadcast_to(np.diagonal(np.atleast_2d(w)) if np.ndim(w) == 2 else w, (2,)))
        assert np.array_equal(W, expected) and W is not w
    src = np.diag([1.0, 2.0])
    W = weight_matrix(src, 2, "Q")
    W[0, 0] = 7.0
    assert src[0, 0] == 1.0  # (a copy)
    assert np.array_equal(weight_matrix([1.0, -1e-13], 2, "Q"), np.diag([1.0, -1e-13]))
    with pytest.raises(ValueError, match="positive semidefinite"):
        weight_matrix([1.0, -1e-11], 2, "Q")
    with pytest.raises(ValueError, match="finite"):
        weight_matrix(np.array([[1.0, np.nan], [0.0, 1.0]]), 2, "Q")
    with pytest.raises(ValueError, match="finite"):
        weight_matrix([1.0, np.inf], 2, "Q")


def _scaled_multiplier(s: float, U: np.ndarray) -> np.ndarray:
    """``augmented.terminal_multiplier`` of the bounded pendulum with masses and limits × s and the cost in the same
    units, at the inputs U (unscaled units), as λ in unscaled units (its momentum part × s)."""
    name = "task_pendulum_swingup_bounded"
    task1, task = load_task(_mass_scaled(name, 1.0)), load_task(_mass_scaled(name, s))
    vi = make_system(task)
    X_ref, U_ref = reference_trajectory(task, vi)
    W = [np.diag(w) for w in (task1.weight(k, "weights", n, 1) for k, n in (("Q", 2), ("R", 1), ("Qf", 2)))]
    unit = np.array([1.0, 1.0 / s])  # (the weights in the units of the scaled model; beyond the task's range)
    cost = QuadraticTrackingCost(X_ref, U_ref, np.diag(W[0] * unit**2), W[1] / s**2, np.diag(W[2] * unit**2))
    return terminal_multiplier(vi, cost, start_state(task, vi), U * s, input_limits(task, vi)) * np.array([1.0, s])


def _pendulum_plan_inputs() -> np.ndarray:
    task1 = load_task(_mass_scaled("task_pendulum_swingup_bounded", 1.0))
    return plan_task(make_system(task1), task1)[0].U


def test_terminal_multiplier_estimate_does_not_depend_on_the_unit_of_mass():
    """``augmented.terminal_multiplier`` at the bounded pendulum's optimal inputs, masses and limits × 2⁻³⁰ and the cost
    in the same units: λ (its momentum part × s) as unscaled. Gᵀ's columns mix units (∂q_N/∂u ∝ 1/s, ∂p_N/∂u ∝ 1);
    without equilibrating them the least squares lost λ_p and λ came out 29 % off."""
    U = _pendulum_plan_inputs()
    lams = [_scaled_multiplier(s, U) for s in (1.0, 2.0**-30)]
    # At the optimum λ fits the residual of g = ∇_U J (~1e-6): its size is round-off — inputs changed by 1e-13
    # (relative) move it up to ×30 and the two units' sizes apart by up to 5 % — but its direction is the problem's
    # (λ_p / λ_q = −0.0931 whatever the last bits). Unequilibrated, the scaled model's λ_p was lost (1e-23: the ratio
    # ~1e-18).
    ratio = [lam[1] / lam[0] for lam in lams]
    assert abs(ratio[0]) > 1e-2 and ratio[1] == pytest.approx(ratio[0], rel=1e-3)


@pytest.mark.parametrize("inside", [1e-3, 1e-10])
def test_terminal_multiplier_counts_an_input_at_its_bound_in_the_bounds_own_units(inside):
    """``augmented.terminal_multiplier`` leaves out inputs at their bound (they need not be stationary) — "at" within
    1e-9 of the bound's magnitude, in its own units. An input 1e-3 N·m inside the pendulum's −5 N·m is free in
    kilograms and in the model × 2⁻³⁰ alike (an absolute 1e-9 counted it at the bound there, 9.3e-13 inside, and λ
    changed); 1e-10 N·m inside, at the bound in both (the boundary: 5e-9 N·m). Away from the optimum, where λ is the
    problem's and not round-off: both units give the same λ."""
    U = 0.9 * _pendulum_plan_inputs()
    i = int(np.argmax(np.abs(U[:, 0])))

    def lam(s: float, gap: float) -> np.ndarray:
        Ui = U.copy()
        Ui[i, 0] = np.sign(U[i, 0]) * (5.0 - gap)
        return _scaled_multiplier(s, Ui)

    got, scaled, at_bound = lam(1.0, inside), lam(2.0**-30, inside), lam(1.0, 0.0)
    assert np.abs(scaled - got).max() <= 1e-8 * np.abs(got).max()
    same = np.abs(got - at_bound).max() <= 1e-6 * np.abs(at_bound).max()
    assert same == (inside < 5e-9)  # (left out: λ as with the input on its bound; free: λ fits its row too)
