"""MoveIt-style requests to the planner: the success rate and the time per request.

Draws random feasible requests for the panda (``task_panda_reach``: its weights, Δt = 50 ms) with a fixed seed and
plans each as the planner node does (``ros.planner_requests.solve_request`` on the measured start state):

- the start: a configuration inside the joint limits (10 % of each range inset), moving at up to ``max_speed`` rad/s
  per joint (random signs), measured as the node measures it: joint states at 500 Hz with 1e-5 rad position noise
  and 1e-3 rad/s velocity noise through ``StateEstimator`` (the node's default ``state_estimate: configurations``);
- ``JointTrajectory`` requests (4 of 5): 1–10 points over 0.5–10 s, a random subset of the joints (all of them in
  half the draws), each segment a random walk from the start at up to ``SEGMENT_SPEED`` × each joint's URDF velocity
  limit (and 1 rad/s), kept inside the limits — feasible by construction; in 1 of 4 the start state as a first
  point at t = 0 as well, as MoveIt sends it;
- goals (1 of 5): a random configuration inside the limits, no duration (``planning.requests.goal_duration``).

A request plans when ``solve_request`` returns a converged plan (it has verified the plan against the controller's
default ``velocity_limit_factor`` 1.5 and the effort limits); otherwise the reason is recorded. Reports the success
rate and the CPU time per request (median, min, max) and writes results/requests.md.

Usage: .venv/bin/python benchmarks/bench_requests.py [--requests 50] [--seed 34]
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from vi_control.control.tracking import StateEstimator  # noqa: E402
from vi_control.integrators.base import DiscreteSystem  # noqa: E402
from vi_control.planning import Task, load_task, make_system  # noqa: E402
from vi_control.ros.planner_requests import Request, solve_request  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
SEGMENT_SPEED = 0.3  # a segment's straight-line speed per joint: at most this × its URDF velocity limit,
MAX_SEGMENT_SPEED = 1.0  # and at most this [rad/s] (the bundled double pendulum's limit is 100 rad/s)
LIMIT_INSET = 0.1  # starts, points and goals stay this fraction of each joint's range inside its limits
STATE_RATE = 500.0  # joint states per second (joint_state_broadcaster's usual rate)


def measured_state(
    vi: DiscreteSystem,
    q: np.ndarray,
    qdot: np.ndarray,
    rng: np.random.Generator,
    position_noise: float = 1e-5,
    velocity_noise: float = 1e-3,
) -> np.ndarray:
    """The state the planner node plans from when the robot passes ``q`` at ``qdot``: joint states at STATE_RATE for
    the last 2Δt (noisy), each through the node's ``StateEstimator`` (its default mode, 'configurations'), the last
    estimate returned. (Without a plan being executed the node plans from this estimate unchanged.)"""
    est, x = StateEstimator(vi, "configurations"), None
    n = int(np.ceil(2 * vi.dt * STATE_RATE)) + 1
    for i in range(n):
        t = 100.0 + i / STATE_RATE
        back = (n - 1 - i) / STATE_RATE
        qi = q - qdot * back + position_noise * rng.standard_normal(vi.nq)
        x = est.update(t, qi, qdot + velocity_noise * rng.standard_normal(vi.nq))
    return x


def _range(vi: DiscreteSystem) -> tuple[np.ndarray, np.ndarray]:
    lo = np.array([j.lower for j in vi.robot.joints], float)
    hi = np.array([j.upper for j in vi.robot.joints], float)
    lo, hi = np.where(np.isfinite(lo), lo, -np.pi), np.where(np.isfinite(hi), hi, np.pi)
    inset = LIMIT_INSET * (hi - lo)
    return lo + inset, hi - inset


@dataclass
class Drawn:
    """One random request and the state it is planned from."""

    request: Request
    x0: np.ndarray
    start_speed: float  # max |q̇| of the start [rad/s]

    def describe(self) -> str:
        r = self.request
        if r.kind == "goal":
            return "goal"
        start = " (+ the start at t = 0)" if r.times[0] == 0.0 else ""
        return f"{len(r.times) - bool(start)} points{start}, {r.times[-1]:.2f} s, {len(r.joints)} joints"


def random_requests(
    vi: DiscreteSystem, n: int, seed: int = 34, max_speed: float = 0.2, goal_share: float = 0.2
) -> list[Drawn]:
    """``n`` random feasible requests for ``vi`` (module doc) drawn with ``seed``."""
    rng = np.random.default_rng(seed)
    lo, hi = _range(vi)
    vlim = np.array([j.velocity_limit for j in vi.robot.joints], float)
    speed = np.minimum(SEGMENT_SPEED * np.where(np.isfinite(vlim) & (vlim > 0), vlim, np.inf), MAX_SEGMENT_SPEED)
    out = []
    for _ in range(n):
        q = rng.uniform(lo, hi)
        qdot = rng.uniform(0.0, max_speed) * rng.choice([-1.0, 1.0], vi.nq) * rng.uniform(0.0, 1.0, vi.nq)
        x0 = measured_state(vi, q, qdot, rng)
        if rng.uniform() < goal_share:
            request = Request("goal", goal=rng.uniform(lo, hi))
        else:
            m = int(rng.integers(1, 11))
            duration = float(rng.uniform(0.5, 10.0))
            times = np.sort(rng.uniform(0.0, duration, m))
            times[-1] = duration
            times = np.maximum.accumulate(np.maximum(times, np.arange(1, m + 1) * 0.01))  # increasing, > 0
            times[1:] = np.maximum(times[1:], times[:-1] + 1e-3)
            joints = (
                list(range(vi.nq))
                if rng.uniform() < 0.5
                else sorted(rng.choice(vi.nq, int(rng.integers(1, vi.nq + 1)), replace=False).tolist())
            )
            points, prev, t_prev = [], q[joints], 0.0
            for t in times:
                step = (t - t_prev) * speed[joints] * rng.uniform(-1.0, 1.0, len(joints))
                prev = np.clip(prev + step, lo[joints], hi[joints])
                points.append(prev)
                t_prev = t
            if rng.uniform() < 0.25:  # as MoveIt sends it: the start state it planned from as a point at t = 0
                times, points = np.concatenate([[0.0], times]), [q[joints]] + points
            request = Request("trajectory", times=times, positions=np.array(points), joints=joints)
        out.append(Drawn(request, x0, float(np.abs(qdot).max())))
    return out


def plan_all(vi: DiscreteSystem, task: Task, drawn: list[Drawn], log: Callable[[str], None] = print) -> list[dict]:
    """Each request through ``solve_request``: one row per request (planned or the reason, iterations, CPU s)."""
    rows = []
    for i, d in enumerate(drawn):
        c0 = time.process_time()
        try:
            plan, res = solve_request(d.request, vi, task, d.x0)
            ok, why, iterations = res.converged, "" if res.converged else f"not converged: {res}", res.iterations
        except Exception as e:  # a refusal or a failure: its reason is the result
            ok, why, iterations = False, f"{type(e).__name__}: {e}", None
        cpu = time.process_time() - c0
        rows.append(
            dict(
                index=i,
                request=d.describe(),
                start_speed=d.start_speed,
                planned=ok,
                reason=why,
                iterations=iterations,
                cpu=cpu,
            )
        )
        log(
            f"[bench_requests] {i}: {d.describe()}, start {d.start_speed:.3f} rad/s: "
            f"{'planned' if ok else why[:200]} ({cpu * 1e3:.0f} ms)"
        )
    return rows


def run(n: int = 50, seed: int = 34, task_name: str = "task_panda_reach", log: Callable[[str], None] = print) -> dict:
    """The benchmark: the rows and their summary (success rate, CPU per request median / min / max)."""
    task = load_task(task_name)
    vi = make_system(task)
    solve_request(Request("goal", goal=np.asarray(task.goal_q)), vi, task, None)  # compiled code loaded before timing
    rows = plan_all(vi, task, random_requests(vi, n, seed), log)
    cpu = [r["cpu"] for r in rows]
    return dict(
        task=task_name,
        seed=seed,
        rows=rows,
        planned=sum(r["planned"] for r in rows),
        total=len(rows),
        cpu_median=float(np.median(cpu)),
        cpu_min=float(min(cpu)),
        cpu_max=float(max(cpu)),
    )


def table(summary: dict) -> str:
    out = [
        f"{summary['planned']} of {summary['total']} requests planned ({summary['task']}, seed {summary['seed']}); "
        f"CPU per request median {summary['cpu_median'] * 1e3:.0f} ms, min {summary['cpu_min'] * 1e3:.0f} ms, "
        f"max {summary['cpu_max'] * 1e3:.0f} ms\n",
        "| # | request | start max \\|q̇\\| [rad/s] | planned | DDP iterations | CPU [ms] | reason |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in summary["rows"]:
        out.append(
            f"| {r['index']} | {r['request']} | {r['start_speed']:.3f} | {'yes' if r['planned'] else '**no**'} "
            f"| {r['iterations'] if r['iterations'] is not None else '—'} | {r['cpu'] * 1e3:.0f} | "
            f"{r['reason'][:160].replace('|', '/')} |"
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=50, help="how many random requests")
    ap.add_argument("--seed", type=int, default=34, help="their seed")
    args = ap.parse_args(argv)
    summary = run(args.requests, args.seed)
    command = f"bench_requests.py --requests {args.requests} --seed {args.seed}"
    report = f"Random MoveIt-style requests (`{command}`; load average {os.getloadavg()[0]:.1f}):\n\n{table(summary)}\n"
    print(report)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "requests.md").write_text(report)
    return summary


if __name__ == "__main__":
    main()
