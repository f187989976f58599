"""Planner convergence from perturbed initial guesses, per Newton variant of the step.

For each task (acrobot and cart-pole swing-ups: the goal as a terminal constraint, an augmented Lagrangian
around DDP) and each seed, the initial inputs are the task's own guess plus Gaussian noise (σ in the inputs'
units), and the same plan is computed with the integrator's three ways of solving a step: chord Newton with the
compiled driver (the default), exact Newton, and the CasADi virtual machine (no compiler). Reports the success
rate (converged and at the goal), the iteration counts, and how far the variants' counts lie apart per seed.

``--gains 88`` prints, per iteration k of the first augmented-Lagrangian subproblem of that seed, the gain of one DDP
iteration ‖ΔU_k+1‖∞ / ‖ΔU_k‖∞ for a perturbation ΔU_k of 1e-9 (how fast round-off grows along the solve).

``--ulp 1e-16,1e-14`` adds, per seed, chord runs from the same inputs scaled by (1 + ε ξ), ξ ~ N(0, 1): how far
the iteration count moves when nothing but the last bits of the inputs change (the spread the variants' different
round-off can cause, measured without them; docs/benchmarks/planner.md). Rows "chord ε" in the table.

Usage: .venv/bin/python benchmarks/bench_convergence.py [--seeds 20] [--sigma 2.0] [--variants chord,exact,vm]
       [--ulp 1e-16,1e-14] [--first-seed 0] [--name convergence] [--gains SEED [--gain-iterations 20]]
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
from vi_control.planning.cost import QuadraticTrackingCost  # noqa: E402
from vi_control.planning.ddp import ddp  # noqa: E402
from vi_control.planning.pipeline import input_limits  # noqa: E402

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


def run(
    tasks=TASKS,
    seeds=20,
    sigma=2.0,
    variants=tuple(VARIANTS),
    goal_tolerance=5e-3,
    log=print,
    ulp: tuple[float, ...] = (),
    first_seed: int = 0,
) -> dict:
    """{task: {variant: [(seed, iterations, converged, at_goal, cost, cpu_s), ...]}}; with ``ulp``, also rows
    "chord ε" (the chord plan from the same inputs scaled by 1 + ε ξ per entry)."""
    out: dict = {}
    for name in tasks:
        task = load_task(f"task_{name}")
        systems = {v: make_system(task, **VARIANTS[v]) for v in variants}
        chord = systems.get("chord") or make_system(task)
        labels = list(variants) + [f"chord {e:g}" for e in ulp]
        rows = out[name] = {v: [] for v in labels}
        for seed in range(first_seed, first_seed + seeds):
            U0 = perturbed_inputs(task, systems[variants[0]], seed, sigma)
            xi = np.random.default_rng(10_000 + seed).standard_normal(U0.shape)
            runs = [(v, vi, U0) for v, vi in systems.items()]
            runs += [(f"chord {e:g}", chord, U0 * (1 + e * xi)) for e in ulp]
            for v, vi, U in runs:
                t0 = time.process_time()
                plan, res = plan_task(vi, task, U0=U)
                rows[v].append(
                    (
                        seed,
                        res.iterations,
                        res.converged,
                        goal_error(task, vi, plan) < goal_tolerance,
                        res.cost,
                        time.process_time() - t0,
                    )
                )
            log(
                f"[bench_convergence] {name} seed {seed}: "
                + ", ".join(f"{v} {rows[v][-1][1]} it{'' if rows[v][-1][2] else ' (FAILED)'}" for v in labels)
            )
    return out


def iteration_gains(name: str, seed: int, iterations: int = 20, sigma: float = 2.0, eps: float = 1e-9) -> list:
    """[(k, J_k, step α of iteration k+1, gain)] for the first augmented-Lagrangian subproblem of the task (terminal
    weight Qf + ρ₀I, target the goal, λ = 0: what ``terminal_constrained_ddp`` solves first) from the seed's
    perturbed inputs: gain = ‖U'(U_k + ΔU) − U'(U_k)‖∞ / ‖ΔU‖∞ of one DDP iteration U → U', ‖ΔU‖∞ ~ ``eps``."""
    task = load_task(f"task_{name}")
    vi = make_system(task)
    x0 = start_state(task, vi)
    X_ref, U_ref = reference_trajectory(task, vi, x0)
    nx, nq = vi.nx, vi.nq
    Q, R, Qf = (task.weight(w, "weights", n, nq) for w, n in (("Q", nx), ("R", vi.nu), ("Qf", nx)))
    sub = QuadraticTrackingCost(X_ref, U_ref, Q, R, Qf + task.penalty * np.eye(nx))
    opts = dict(input_limits=input_limits(task, vi), tolerance=1e-1, regularization=task.regularization)
    U0, out = perturbed_inputs(task, vi, seed, sigma), []
    dU = eps * np.random.default_rng(seed).standard_normal(U0.shape)
    for k in range(1, iterations + 1):
        res = ddp(vi, sub, x0, U0, max_iterations=k, **opts)
        if res.converged:
            break
        a, b = (ddp(vi, sub, x0, U, max_iterations=1, **opts) for U in (res.U, res.U + dU))
        out.append(
            (
                k,
                res.cost,
                a.step_history[0] if a.step_history else 0.0,
                float(np.abs(a.U - b.U).max() / np.abs(dU).max()),
            )
        )
    return out


def table(out: dict, sigma: float) -> str:
    lines = [
        f"Perturbed initial inputs (σ = {sigma:g}), one plan per seed and Newton variant; "
        f"load average {os.getloadavg()[0]:.1f} at the end.",
        "",
        "| task | variant | success | iterations min / median / max | CPU s median |",
        "|---|---|---|---|---|",
    ]
    for name, rows in out.items():
        for v, r in rows.items():
            its = np.array([x[1] for x in r])
            ok = sum(1 for x in r if x[2] and x[3])
            lines.append(
                f"| {name} | {v} | {ok}/{len(r)} | {its.min()} / {np.median(its):g} / {its.max()} | "
                f"{np.median([x[5] for x in r]):.2f} |"
            )
        variants = [v for v in rows if " " not in v]
        groups = [("variants", variants)]
        if len(rows) > len(variants):  # the ulp runs: the chord plan and its perturbed replays
            replays = ["chord"] * ("chord" in rows) + list(rows)[len(variants) :]
            groups.append(("chord runs (inputs × (1 + ε ξ))", replays))
        for what, labels in groups:
            if len(labels) < 2:
                continue
            spread = [
                max(rows[v][i][1] for v in labels) - min(rows[v][i][1] for v in labels)
                for i in range(len(rows[labels[0]]))
            ]
            lines.append(
                f"| {name} | spread between {what} per seed | — | max {max(spread)}, median "
                f"{np.median(spread):g}, > 6 on {sum(d > 6 for d in spread)} of {len(spread)} | — |"
            )
            # the same optimum? (cost of the seed's runs, relative; two nearby optima of the acrobot differ 3e-4)
            rel = [
                (max(rows[v][i][4] for v in labels) - min(rows[v][i][4] for v in labels))
                / abs(min(rows[v][i][4] for v in labels))
                for i in range(len(rows[labels[0]]))
            ]
            lines.append(
                f"| {name} | cost difference between {what} per seed (relative) | — | max {max(rel):.1e}, "
                f"> 1e-4 (another optimum) on {sum(d > 1e-4 for d in rel)} of {len(rel)} | — |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--sigma", type=float, default=2.0)
    ap.add_argument("--variants", default="chord,exact,vm")
    ap.add_argument("--tasks", default=",".join(TASKS))
    ap.add_argument("--ulp", default="", help="comma-separated ε: chord runs from inputs scaled by 1 + ε ξ")
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--out", default=str(RESULTS))
    ap.add_argument("--name", default="convergence", help="results file <out>/<name>.md")
    ap.add_argument("--gains", type=int, default=None, help="print one seed's per-iteration gains instead")
    ap.add_argument("--gain-iterations", type=int, default=20)
    args = ap.parse_args(argv)
    if args.gains is not None:
        gains = {}
        for name in args.tasks.split(","):
            gains[name] = iteration_gains(name, args.gains, args.gain_iterations, args.sigma)
            print(f"{name}, seed {args.gains}: " + ", ".join(f"{k}: {g:.2g} (α {a:g})" for k, _, a, g in gains[name]))
        return gains
    ulp = tuple(float(e) for e in args.ulp.split(",") if e)
    out = run(
        tuple(args.tasks.split(",")),
        args.seeds,
        args.sigma,
        tuple(args.variants.split(",")),
        ulp=ulp,
        first_seed=args.first_seed,
    )
    text = table(out, args.sigma)
    print(text)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / f"{args.name}.md").write_text(text + "\n", encoding="utf-8")
    return out


if __name__ == "__main__":
    main(sys.argv[1:])
