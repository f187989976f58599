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
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from vi_control.control.plan import state_error  # noqa: E402
from vi_control.control.tracking import tracking_law, wire_velocity  # noqa: E402
from vi_control.integrators import make_integrator  # noqa: E402
from vi_control.planning import load_task, make_system  # noqa: E402
from vi_control.planning.mpc import MPCSettings, RecedingHorizon  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_planner  # noqa: E402  (the peer worker, its task specs, the CPU pinning)

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
    law, cpu, accepted, iters, windows = tracking_law(plan, vi), [], 0, [], []
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
                # (the window the cycle planned — its start on the task's grid, its length — and where from, in (q, v))
                start = int(round(plan.times[0] / task.dt))
                windows.append((start, len(plan.U), np.concatenate([plan.X[0, : vi.nq], wire_velocity(vi, plan.X[0])])))
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
        windows=windows,
    )


def peer_cycles(py: Path, row: dict, iterations: int) -> dict:
    """Crocoddyl 3.2.0's cycles over the windows our loop planned (``row["windows"]``: the same starts, lengths and
    states), each warm from its own last solution shifted to the window, at most ``iterations`` (``crocoddyl_peer.Task
    .cycle``); a terminal-constrained task as the peer's converged variant, the goal as Qf × 1e6. Its cold plan is
    solved first (the loop's first warm start). CPU per cycle of the solve and of building the window's problem."""
    task = retimed(row["task"], row["rate"])
    vi = make_system(task)
    specs = bench_planner.peer_specs(row["task"], bench_planner.task_spec(task, vi))
    name = next(k for k in specs if not k.endswith("|AL"))
    peer = bench_planner.Peer(py, {name: specs[name]})
    try:
        cold = peer.ask(dict(cmd="solve", task=name))
        out = [
            peer.ask(dict(cmd="cycle", task=name, x0=x.tolist(), start=s, length=n, max_iterations=iterations))
            for s, n, x in row["windows"]
        ]
    finally:
        peer.close()
    cpu, build = np.array([o["cpu_ms"] for o in out]), np.array([o["build_ms"] for o in out])
    return dict(
        variant=name,
        cold_ms=cold["cpu_ms"],
        p50_ms=float(np.percentile(cpu, 50)),
        p99_ms=float(np.percentile(cpu, 99)),
        build_ms=float(np.median(build)),
        iterations=float(np.median([o["iterations"] for o in out])),
    )


def run(
    tasks=TASKS,
    rates=(50.0, 100.0),
    cycles: int | None = None,
    iterations: int = 10,
    log=print,
    py: Path | None = None,
) -> list[dict]:
    """Our loop per (task, rate), then — with the peer venv's interpreter ``py`` — Crocoddyl's cycles over its
    windows (``peer_cycles``, the row's ``peer``)."""
    rows = []
    for name in tasks:
        for rate in rates:
            r = run_case(name, rate, cycles, iterations)
            if py is not None:
                r["peer"] = peer_cycles(py, r, iterations)
            rows.append(r)
            log(
                f"[bench_mpc] {name} {rate:g} Hz: cold {1e3 * r['cold']:.1f} ms, cycle p50 {1e3 * r['p50']:.2f} "
                f"p99 {1e3 * r['p99']:.2f} ms, {100 * r['within']:.0f} % within {1e3 * r['dt']:.0f} ms"
                + (f"; Crocoddyl p50 {r['peer']['p50_ms']:.2f} p99 {r['peer']['p99_ms']:.2f} ms" if "peer" in r else "")
            )
    return rows


def table(rows: list[dict]) -> str:
    out = [
        "| task | rate | N (first plan) | cold plan [ms] | cycle p50 / p99 / max [ms] (CPU) | within the period | "
        "accepted | iterations (median) | final \\|q − q_goal\\|∞ [rad] | Crocoddyl over the same windows: cold "
        "[ms], cycle p50 / p99 [ms] (solve; + building the window), iterations | × Crocoddyl (cycle p50 / p99) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        c = r.get("peer")
        peer = (
            f"{c['cold_ms']:.1f}, {c['p50_ms']:.2f} / {c['p99_ms']:.2f} (+ {c['build_ms']:.2f}), {c['iterations']:g} "
            f"({c['variant'].split('|')[-1] if '|' in c['variant'] else 'its own guess'}) | "
            f"{1e3 * r['p50'] / c['p50_ms']:.2f} / {1e3 * r['p99'] / c['p99_ms']:.2f}"
            if c
            else "- | -"
        )
        out.append(
            f"| {r['task']} | {r['rate']:g} Hz | {r['N']} | {1e3 * r['cold']:.1f} | {1e3 * r['p50']:.2f} / "
            f"{1e3 * r['p99']:.2f} / {1e3 * r['max']:.2f} | {100 * r['within']:.0f} % | {r['accepted']}/"
            f"{r['cycles']} | {r['iterations']:g} | {r['goal_error']:.3g} | {peer} |"
        )
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cycles", type=int, default=None, help="cycles per row (default: the task and 1 s after)")
    ap.add_argument("--rates", type=float, nargs="+", default=[50.0, 100.0])
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--tasks", nargs="+", default=list(TASKS))
    ap.add_argument("--no-peer", action="store_true", help="without Crocoddyl's cycles")
    ap.add_argument("--cpu", type=int, default=None, help="the one CPU for this process and the peer (-1: unpinned)")
    a = ap.parse_args()
    cpu = bench_planner.pin_to_one_cpu(a.cpu)
    py, err = (None, "") if a.no_peer else bench_planner.ensure_bench_venv()
    rows = run(a.tasks, a.rates, a.cycles, a.iterations, py=None if err else py)
    span = "the task's duration and 1 s after it" if a.cycles is None else f"{a.cycles} cycles"
    text = (
        f"# MPC cycle times (benchmarks/bench_mpc.py)\n\n{span} per row, a re-plan every control step, "
        f"at most {a.iterations} iterations a cycle, plant mass ×{MASS_SCALE}; CPU time of `RecedingHorizon.cycle` "
        f"(one process, this machine{f', on CPU {cpu} with its peer' if cpu is not None else ''}). Crocoddyl: its "
        "cycles over the windows our loop planned, from the same states (`peer_cycles`)"
        + (f" — not run: {err}" if err else "")
        + ".\n\n"
        + table(rows)
        + "\n"
    )
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "mpc.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
