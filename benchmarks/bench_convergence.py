"""Planner convergence from perturbed initial guesses, per Newton variant of the step (issue 13 item 2).

For each task (acrobot and cart-pole swing-ups: the goal as a terminal constraint, an augmented Lagrangian
around DDP) and each seed, the initial inputs are the task's own guess plus Gaussian noise (σ in the inputs'
units), and the same plan is computed with the integrator's three ways of solving a step: chord Newton with the
compiled driver (the default), exact Newton, and the CasADi virtual machine (no compiler). Reports the success
rate (converged and at the goal), the iteration counts, and how far the variants' counts lie apart per seed.

Usage: .venv/bin/python benchmarks/bench_convergence.py [--seeds 20] [--sigma 2.0] [--variants chord,exact,vm]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from vi_control.planning import load_task, make_system, plan_task, reference_trajectory, start_state  # noqa: E402

TASKS = ("cartpole_swingup", "acrobot_swingup")
VARIANTS = {"chord": {}, "exact": {"newton": "exact"}, "vm": {"compile": False}}
RESULTS = Path(__file__).resolve().parent / "results"


def perturbed_inputs(task, vi, seed: int, sigma: float) -> np.ndarray:
    """The task's reference inputs plus N(0, σ²) noise, reproducible by seed."""
    _, U_ref = reference_trajectory(task, vi, start_state(task, vi))
    return U_ref + np.random.default_rng(seed).normal(0.0, sigma, U_ref.shape)


def goal_error(task, vi, plan) -> float:
    """‖q_N − q_goal‖∞ of the plan."""
    return float(np.abs(plan.X[-1, : vi.nq] - np.asarray(task.goal_q)).max())


def run(tasks=TASKS, seeds=20, sigma=2.0, variants=tuple(VARIANTS), goal_tolerance=5e-3, log=print) -> dict:
    """{task: {variant: [(seed, iterations, converged, at_goal, cost, cpu_s), ...]}}."""
    out: dict = {}
    for name in tasks:
        task = load_task(f"task_{name}")
        systems = {v: make_system(task, **VARIANTS[v]) for v in variants}
        rows = out[name] = {v: [] for v in variants}
        for seed in range(seeds):
            U0 = perturbed_inputs(task, systems[variants[0]], seed, sigma)
            for v, vi in systems.items():
                t0 = time.process_time()
                plan, res = plan_task(vi, task, U0=U0)
                rows[v].append((seed, res.iterations, res.converged, goal_error(task, vi, plan) < goal_tolerance,
                                res.cost, time.process_time() - t0))
            log(f"[bench_convergence] {name} seed {seed}: "
                + ", ".join(f"{v} {rows[v][-1][1]} it{'' if rows[v][-1][2] else ' (FAILED)'}" for v in variants))
    return out


def table(out: dict, sigma: float) -> str:
    lines = [f"Perturbed initial inputs (σ = {sigma:g}), one plan per seed and Newton variant; "
             f"load average {os.getloadavg()[0]:.1f} at the end.", "",
             "| task | variant | success | iterations min / median / max | CPU s median |",
             "|---|---|---|---|---|"]
    for name, rows in out.items():
        for v, r in rows.items():
            its = np.array([x[1] for x in r])
            ok = sum(1 for x in r if x[2] and x[3])
            lines.append(f"| {name} | {v} | {ok}/{len(r)} | {its.min()} / {np.median(its):g} / {its.max()} | "
                         f"{np.median([x[5] for x in r]):.2f} |")
        variants = list(rows)
        if len(variants) > 1:
            spread = [max(rows[v][i][1] for v in variants) - min(rows[v][i][1] for v in variants)
                      for i in range(len(rows[variants[0]]))]
            lines.append(f"| {name} | spread between variants per seed | — | max {max(spread)}, median "
                         f"{np.median(spread):g} | — |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--sigma", type=float, default=2.0)
    ap.add_argument("--variants", default="chord,exact,vm")
    ap.add_argument("--tasks", default=",".join(TASKS))
    ap.add_argument("--out", default=str(RESULTS))
    args = ap.parse_args(argv)
    out = run(tuple(args.tasks.split(",")), args.seeds, args.sigma, tuple(args.variants.split(",")))
    text = table(out, args.sigma)
    print(text)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "convergence.md").write_text(text + "\n", encoding="utf-8")
    return out


if __name__ == "__main__":
    main(sys.argv[1:])
