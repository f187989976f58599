"""MPC cycle times (planning.mpc.RecedingHorizon): what a warm re-plan costs per control step at 50 Hz and 100 Hz.

For each task (the bounded pendulum swing-up, the cart-pole swing-up, the panda reach) and control rate, the task is
re-discretized at Δt = 1/rate over the same duration (N = duration/Δt; the pendulum's step reference at the same
time) and run as MPC with a re-plan every control step (``mpc.period`` = Δt, a shrinking horizon toward the task's
end and ``MIN_HORIZON`` long after it, at most ``max_iterations`` DDP iterations a cycle, warm from the executing
plan) on a plant 20 % heavier on every link (``mass_scale`` 1.2): each cycle re-plans from the plant's true state at
its own time, with the executing law continued for its first step (planning.mpc's seamless switch), over the task
and 1 s after it. Reported per (task, rate): the cold first plan's CPU time (the second of the process: the first
loads and compiles), the warm cycles' CPU time p50 / p99 / max, the share of cycles within the period (the budget a
real-time loop has), and the final distance to the goal.

Usage: .venv/bin/python benchmarks/bench_mpc.py [--cycles N] [--rates 50 100] [--iterations 10]
Writes benchmarks/results/mpc.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from vi_control.control.plan import state_error  # noqa: E402
from vi_control.control.tracking import tracking_law  # noqa: E402
from vi_control.integrators import make_integrator  # noqa: E402
from vi_control.planning import load_task, make_system  # noqa: E402
from vi_control.planning.mpc import MPCSettings, RecedingHorizon  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
TASKS = ("pendulum_swingup_bounded", "cartpole_swingup", "panda_reach_mpc")
MASS_SCALE = 1.2
# seconds a window keeps past the deadline (mpc.min_horizon): a swing-up needs time to settle at its goal (the
# cart-pole at 0.5 s overreached under its terminal constraint); a reach with a window longer than itself creeps
MIN_HORIZON = {"pendulum_swingup_bounded": 2.0, "cartpole_swingup": 1.5, "panda_reach_mpc": 0.2}


def retimed(name: str, rate: float):
    """The task ``name`` at Δt = 1/rate over the same duration (a step reference at the same time)."""
    task = load_task(f"task_{name}")
    dt = 1.0 / rate
    N = int(round(task.horizon * task.dt / dt))
    ref = dict(task.reference)
    if "step_index" in ref:
        ref["step_index"] = int(round(ref["step_index"] * task.dt / dt))
    return dataclasses.replace(task, dt=dt, horizon=N, reference=ref)


def run_case(name: str, rate: float, cycles: int | None = None, iterations: int = 10) -> dict:
    """One (task, rate): the closed loop of ``cycles`` MPC cycles (None: the task's duration and 1 s after it) on
    the heavier plant; CPU seconds per cycle."""
    task = retimed(name, rate)
    cycles = task.horizon + int(round(rate)) if cycles is None else cycles
    vi = make_system(task)
    plant = make_integrator("midpoint", dataclasses.replace(task.model_spec, mass_scale=MASS_SCALE).load(), task.dt)
    min_horizon = max(2, int(round(MIN_HORIZON.get(name, 0.2) * rate)))
    settings = MPCSettings(period=task.dt, shrinking=True, min_horizon=min_horizon, max_iterations=iterations)
    m = RecedingHorizon(vi, task, settings)
    m.start(t0=0.0)  # (the first call of a process loads and compiles: not the plan's cost)
    c0 = time.process_time()
    first = m.start(t0=0.0)
    cold = time.process_time() - c0
    plan, x = first.plan, first.plan.X[0].copy()
    law, cpu, accepted, iters = tracking_law(plan, vi), [], 0, []
    for k in range(cycles + 1):
        t = k * task.dt
        if k:
            c0 = time.process_time()
            cyc = m.cycle(t, x, plan)
            cpu.append(time.process_time() - c0)
            iters.append(cyc.result.iterations)
            if cyc.accepted:
                accepted += 1
                plan, law = cyc.plan, tracking_law(cyc.plan, vi)
        x = plant.step(x, law.command(law.index(t), x)[0])
    cpu = np.array(cpu)
    goal = m.X_ref[-1, : vi.nq]
    return dict(
        task=name,
        rate=rate,
        dt=task.dt,
        N=task.horizon,
        converged=bool(first.result.converged),
        cold=cold,
        p50=float(np.percentile(cpu, 50)),
        p99=float(np.percentile(cpu, 99)),
        max=float(cpu.max()),
        within=float(np.mean(cpu <= task.dt)),
        cycles=len(cpu),
        accepted=accepted,
        iterations=float(np.median(iters)),
        goal_error=float(np.abs(state_error(goal, x[: vi.nq], vi.robot.continuous_mask)).max()),
    )


def run(tasks=TASKS, rates=(50.0, 100.0), cycles: int | None = None, iterations: int = 10, log=print) -> list[dict]:
    rows = []
    for name in tasks:
        for rate in rates:
            r = run_case(name, rate, cycles, iterations)
            rows.append(r)
            log(
                f"[bench_mpc] {name} {rate:g} Hz: cold {1e3 * r['cold']:.1f} ms, cycle p50 {1e3 * r['p50']:.2f} "
                f"p99 {1e3 * r['p99']:.2f} ms, {100 * r['within']:.0f} % within {1e3 * r['dt']:.0f} ms"
            )
    return rows


def table(rows: list[dict]) -> str:
    out = [
        "| task | rate | N (first plan) | cold plan [ms] | cycle p50 / p99 / max [ms] (CPU) | within the period | "
        "accepted | iterations (median) | final \\|q − q_goal\\|∞ [rad] |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        out.append(
            f"| {r['task']} | {r['rate']:g} Hz | {r['N']} | {1e3 * r['cold']:.1f} | {1e3 * r['p50']:.2f} / "
            f"{1e3 * r['p99']:.2f} / {1e3 * r['max']:.2f} | {100 * r['within']:.0f} % | {r['accepted']}/"
            f"{r['cycles']} | {r['iterations']:g} | {r['goal_error']:.3g} |"
        )
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cycles", type=int, default=None, help="cycles per row (default: the task and 1 s after)")
    ap.add_argument("--rates", type=float, nargs="+", default=[50.0, 100.0])
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--tasks", nargs="+", default=list(TASKS))
    a = ap.parse_args()
    rows = run(a.tasks, a.rates, a.cycles, a.iterations)
    span = "the task's duration and 1 s after it" if a.cycles is None else f"{a.cycles} cycles"
    text = (
        f"# MPC cycle times (benchmarks/bench_mpc.py)\n\n{span} per row, a re-plan every control step, "
        f"at most {a.iterations} iterations a cycle, plant mass ×{MASS_SCALE}; CPU time of `RecedingHorizon.cycle` "
        "(one process, this machine).\n\n" + table(rows) + "\n"
    )
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "mpc.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
