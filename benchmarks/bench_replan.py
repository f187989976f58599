"""Warm re-plans against cold plans from the same moved start (plan_task's ``warm_start``).

For each task, the plan from the task's start is computed once; then from starts whose first coordinate is moved by
each offset, the plan is computed cold (the task's own initial guess, λ = 0) and warm (the first plan followed under
its TV-LQR gains, the terminal multiplier estimated there). Reports DDP iterations, convergence, the cost difference
(same optimum or not) and CPU time (median and min of ``rounds`` interleaved runs), and writes results/replan.md.

Usage: .venv/bin/python benchmarks/bench_replan.py [--rounds 3] [--offsets 0,0.01,0.05,0.1]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from vi_control.planning import load_task, make_system, plan_task, start_state  # noqa: E402

TASKS = ("pendulum_swingup", "cartpole_swingup", "acrobot_swingup")
RESULTS = Path(__file__).resolve().parent / "results"


def run(tasks=TASKS, offsets=(0.0, 0.01, 0.05, 0.1), rounds: int = 3, log=print) -> list[dict]:
    """One row per (task, offset): iterations, convergence, cost and CPU seconds (median, min) of each way."""
    rows = []
    for name in tasks:
        task = load_task(f"task_{name}")
        vi = make_system(task)
        first, _ = plan_task(vi, task)
        for dx in offsets:
            x0 = start_state(task, vi).copy()
            x0[0] += dx
            runs = {"cold": [], "warm": []}
            for _ in range(rounds):
                for way in runs:
                    c0 = time.process_time()
                    _, res = plan_task(vi, task, x0=x0, warm_start=first if way == "warm" else None)
                    runs[way].append((time.process_time() - c0, res))
            row = dict(task=name, offset=dx)
            for way, rs in runs.items():
                res = rs[-1][1]
                cpu = [c for c, _ in rs]
                row[way] = dict(
                    iterations=res.iterations,
                    converged=res.converged,
                    cost=res.cost,
                    cpu_median=float(np.median(cpu)),
                    cpu_min=float(min(cpu)),
                )
            rows.append(row)
            log(
                f"[bench_replan] {name} offset {dx:g}: cold {row['cold']['iterations']} it, "
                f"warm {row['warm']['iterations']} it"
            )
    return rows


def table(rows: list[dict]) -> str:
    out = [
        "| task | start moved | cold: iterations, converged, CPU median / min [ms] | warm: the same | "
        "J warm − J cold |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        cells = [
            f"{r[w]['iterations']}, {'yes' if r[w]['converged'] else '**no**'}, "
            f"{r[w]['cpu_median'] * 1e3:.1f} / {r[w]['cpu_min'] * 1e3:.1f}"
            for w in ("cold", "warm")
        ]
        out.append(
            f"| {r['task']} | {r['offset']:g} | {cells[0]} | {cells[1]} | "
            f"{r['warm']['cost'] - r['cold']['cost']:+.2e} |"
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--offsets", default="0,0.01,0.05,0.1")
    a = ap.parse_args(argv)
    rows = run(offsets=tuple(float(v) for v in a.offsets.split(",")), rounds=a.rounds)
    text = (
        f"Warm re-plans (`bench_replan.py --rounds {a.rounds}`; load average {os.getloadavg()[0]:.1f}); the "
        f"start's first coordinate moved by the offset (rad, or m for the cart):\n\n{table(rows)}\n"
    )
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "replan.md").write_text(text)
    print(text)
    return rows


if __name__ == "__main__":
    main()
