"""The planner does not depend on the unit of the cost.

Multiplying every cost weight by s — with the options given in units of the cost, ``optimizer.tolerance`` (|dJ|) and
``optimizer.penalty`` (ρ₀), × s as well — leaves the optimal plan and the convergence decision unchanged. Each test
plans a bundled task scaled by a power of two against the unscaled task as the reference.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import yaml

from vi_control.planning import load_task, make_system, plan_task

CONFIG = Path(__file__).resolve().parent.parent / "config"


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
    s = 2.0 ** 20
    p1, r1 = _plan(_scaled("task_cartpole_swingup", 1.0))
    p, r = _plan(_scaled("task_cartpole_swingup", s))
    assert r1.converged and r.converged, (r1.stop_reason, r.stop_reason)
    assert abs(r.cost / s - r1.cost) < 1e-5 * r1.cost  # (both solves stop within their tolerances)
    assert np.abs(p.U - p1.U).max() < 1e-3 * np.abs(p1.U).max()
    assert np.abs(p.X[-1] - p1.X[-1]).max() < 1e-5
