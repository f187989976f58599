"""Planner benchmark: the REFERENCE §2 pendulum swing-up (Johnson2015, §VIII-A) by every method we have and two
outside tools, with iterations, wall time and final cost, plus the closed-loop figure (Johnson2015, Fig. 4).

Ours (this process): ``plan_task`` with DDP (second order, Johnson2015's method), iLQR (DDP without the
second-order dynamics terms) and the first-order projection method (Johnson2015's first-order comparison),
each to |dJ| < 1e-6 from U = 0; "total" = optimization + TV-LQR gains + DLQR hold gain (a whole Plan).
Each figure is the fastest of ``--rounds`` runs (the machine is shared and loaded by other people's
tests). Baseline row: open-loop steepest descent on the adjoint gradient, capped.

Outside tools (each in its own interpreter, so a crash cannot kill this benchmark):
- Crocoddyl 3.2.0 (with Pinocchio 3.9.0: the release that converges here; 3.2.1 with pin 4.1.0 stops
  unconverged at maximum regularization) ``SolverFDDP``/``SolverBoxFDDP`` on the same tasks built with its C++
  action models (benchmarks/crocoddyl_peer.py says exactly how), as a worker process whose solves alternate with
  ours round by round: every task's plan (ours: ``plan_task`` with the compiled kernel, incl. TV-LQR and hold gains;
  ours on the numpy path as the baseline; Crocoddyl's solve with its own gains) sees the same machine load;
- Drake ``DirectCollocation`` (cubic Hermite, 101 knots at fixed Δt = 0.1, quadratic costs on the knots)
  on its ``PendulumPlant`` (m = l = 1, g = 9.8, no damping), then ``FiniteHorizonLinearQuadraticRegulator``.
They are installed from benchmarks/requirements-bench-planner.txt into a separate venv
(~/.cache/vi_control-bench/bench-planner-venv): Crocoddyl's wheel pins example-robot-data 5 and Pinocchio 3.9, which
would replace the project venv's pinned 6.0.0 and 4.1.0. A failed install or a crash is recorded with its error.

Usage: .venv/bin/python benchmarks/bench_planner.py [--rounds 3] [--task-rounds 7] [--no-external]
       [--gradient-iterations 3000] [--tasks pendulum_swingup cartpole_swingup acrobot_swingup panda_reach]
Writes benchmarks/results/planner.md, pendulum_swingup.png, pendulum_convergence.png.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

# Small dense matrices: a multithreaded OpenBLAS on a loaded 2-core machine stalls for milliseconds per call.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
# Beside the compile cache, not in it: the cache refuses a directory holding anything but its own entries.
BENCH_VENV = Path.home() / ".cache" / "vi_control-bench" / "bench-planner-venv"
TASK = ROOT / "config" / "task_pendulum_swingup.yaml"
X0_PERTURBED = np.array([1.0, 1.0])  # Johnson2015, §VIII-A


def ours(rounds: int, gradient_iterations: int) -> tuple[list[dict], dict]:
    from vi_control.planning import load_task, make_system, plan_task, reference_trajectory, start_state

    task = load_task(str(TASK))
    vi = make_system(task)
    rows, runs = [], {}
    methods = (("ddp", 50), ("ilqr", 200), ("gradient", 2000))
    best: dict = {}
    cpu_all: dict = {m: [] for m, _ in methods}
    for _ in range(rounds):  # rounds interleaved across methods: each sees the same mix of machine load
        for method, max_it in methods:
            task.method, task.max_iterations = method, max_it
            t0, c0 = time.perf_counter(), time.process_time()
            plan, res = plan_task(vi, task)
            total, cpu = time.perf_counter() - t0, time.process_time() - c0
            cpu_all[method].append(cpu)
            if method not in best or total < best[method][0]:
                best[method] = (total, cpu, plan, res)
    for method, _ in methods:
        total, cpu, plan, res = best[method]
        runs[method] = (plan, res)
        rows.append(
            dict(
                tool="vi_control",
                method=method,
                iterations=res.iterations,
                converged=res.converged,
                optimize_ms=res.wall_time * 1e3,
                total_ms=total * 1e3,
                cpu_ms=float(np.min(cpu_all[method])) * 1e3,
                cpu_median_ms=float(np.median(cpu_all[method])) * 1e3,
                cost=res.cost,
                q_final=float(plan.X[-1, 0]),
                note=res.stop_reason,
            )
        )
    # Baseline: open-loop steepest descent on the adjoint gradient (no projection), same stop rule.
    from vi_control.planning.cost import QuadraticTrackingCost
    from vi_control.planning.gradient import steepest_descent

    X_ref, U_ref = reference_trajectory(task, vi)
    cost = QuadraticTrackingCost(
        X_ref, U_ref, *(task.weight(w, "weights", n) for w, n in (("Q", 2), ("R", 1), ("Qf", 2)))
    )
    res = steepest_descent(vi, cost, start_state(task, vi), U_ref, max_iterations=gradient_iterations)
    runs["open-loop gradient"] = (None, res)
    rows.append(
        dict(
            tool="vi_control",
            method="open-loop gradient (baseline)",
            iterations=res.iterations,
            converged=res.converged,
            optimize_ms=res.wall_time * 1e3,
            total_ms=None,
            cost=res.cost,
            q_final=float(res.X[-1, 0]),
            note=res.stop_reason,
        )
    )
    return rows, runs


DRAKE = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    from pydrake.all import (DirectCollocation, FiniteHorizonLinearQuadraticRegulator,
        FiniteHorizonLinearQuadraticRegulatorOptions, PiecewisePolynomial, Solve)
    from pydrake.examples import PendulumPlant
    N, dt, Q, R, Qf = 100, 0.1, np.diag([100.0, 1.0]), np.array([[1.0]]), np.diag([100.0, 1.0])
    plant = PendulumPlant()
    ctx = plant.CreateDefaultContext()
    p = plant.get_mutable_parameters(ctx)
    p.set_mass(1.0); p.set_length(1.0); p.set_damping(0.0); p.set_gravity(9.8)
    best = None
    for _ in range(int(sys.argv[1])):
        t0, c0 = time.perf_counter(), time.process_time()
        dc = DirectCollocation(plant, ctx, num_time_samples=N + 1, minimum_time_step=dt, maximum_time_step=dt)
        prog = dc.prog()
        prog.AddBoundingBoxConstraint(0, 0, dc.initial_state())
        for k in range(N + 1):
            xr = np.array([0.0 if k < 50 else np.pi, 0.0])
            W = Qf if k == N else Q
            prog.AddQuadraticErrorCost(W, xr, dc.state(k))  # vi_control's weights on (q, p = ml²·qdot)
            if k < N:
                prog.AddQuadraticCost(R, np.zeros(1), dc.input(k))
        res = Solve(prog)
        t_opt = time.perf_counter() - t0
        xtraj, utraj = dc.ReconstructStateTrajectory(res), dc.ReconstructInputTrajectory(res)
        opts = FiniteHorizonLinearQuadraticRegulatorOptions()
        opts.Qf = Qf
        opts.x0 = xtraj
        opts.u0 = utraj
        t1 = time.perf_counter()
        FiniteHorizonLinearQuadraticRegulator(plant, ctx, xtraj.start_time(), xtraj.end_time(), Q, R, opts)
        t_lqr, cpu = time.perf_counter() - t1, time.process_time() - c0
        if best is None or t_opt + t_lqr < best[0] + best[1]:
            best = (t_opt, t_lqr, res.is_success(), res.get_solver_id().name(), res.get_optimal_cost(),
                    float(xtraj.value(xtraj.end_time())[0, 0]), cpu)
    t_opt, t_lqr, ok, solver, cost, qf, cpu = best
    from importlib.metadata import version
    print(json.dumps(dict(tool="drake " + version("drake"), method=f"DirectCollocation ({solver})",
        iterations=None, converged=bool(ok), optimize_ms=t_opt * 1e3, total_ms=(t_opt + t_lqr) * 1e3,
        cpu_ms=cpu * 1e3,
        cost=float(cost) / 2, q_final=qf, note=f"+ FiniteHorizonLQR (continuous Riccati ODE) {t_lqr * 1e3:.0f} ms")))
""")


TASKS = ("pendulum_swingup", "cartpole_swingup", "acrobot_swingup", "panda_reach")
# Each timed call of the comparison (our compiled plan, each of the peer's solves) follows the same call once and then
# for HOT_S more of CPU time in the same process, untimed. On this host a process that has slept resumes slowly — the
# VM's DAMON proactive reclaim (kdamond, scheme "pageout") evicts what it has not touched: the panda plan after 0.3 s
# asleep took 14–36 ms CPU (4.9 hot), after 1 s 72 ms, then 5–7 ms for several plans more; the peer's solve 2.3 → 5.0
# ms. The interleaving had our process asleep ~1 s (the acrobot's peer solves) before the panda's plan while the
# peer's second variant ran hot. ``after_idle`` measures both after the same sleep.
HOT_S = 0.05
IDLE_S = 0.3
PEER = ROOT / "benchmarks" / "crocoddyl_peer.py"


def task_spec(task, vi) -> dict:
    """The task as crocoddyl_peer.py builds it: state (q, v) where ours is (q, p), torques on every joint."""
    from vi_control.planning import input_limits, reference_trajectory, start_state
    from vi_control.planning.pipeline import initial_inputs
    from vi_control.planning.task import parse_vector

    nq, N = vi.nq, task.horizon
    x0 = start_state(task, vi)
    X_ref, U_ref = reference_trajectory(task, vi, x0)
    qd0 = np.zeros(nq) if task.qdot0 is None else parse_vector(list(task.qdot0), "start.qdot", nq)
    lim = input_limits(task, vi)
    act = vi.idx_act.tolist()

    def torques(U: np.ndarray) -> list:  # the actuated joints' inputs as a torque on every joint
        T = np.zeros((len(U), nq))
        T[:, act] = U[:, : vi.n_torques]
        return T.tolist()

    # The peer's own guess is gravity compensation at the start (its quasiStatic): our feedback guess's inputs, open
    # loop in its Euler model, diverge (cost 1.6e51 on the panda). It gets our guess as states and inputs in a
    # variant of its own (``peer_specs``: "our guess").
    own = dataclasses.replace(task, initial_guess="hold_start") if task.initial_guess == "feedback" else task
    rest = np.zeros((N + 1, nq))  # our references hold p at the discrete momentum of rest; theirs v = 0
    R = np.ones(nq)
    R[act] = np.diag(task.weight("R", "weights", vi.nu, nq))[: vi.n_torques]
    return dict(
        urdf_xml=vi.robot.urdf_xml,
        gravity=vi.robot.gravity.tolist(),
        N=N,
        dt=task.dt,
        x0=np.concatenate([x0[:nq], qd0]).tolist(),
        goal=np.concatenate([X_ref[-1, :nq], np.zeros(nq)]).tolist(),
        X_ref=np.hstack([X_ref[:, :nq], rest]).tolist(),
        u_ref=torques(U_ref),
        U0=torques(initial_inputs(own, vi, x0, X_ref, U_ref)),
        ours=None if own is task else _our_guess(vi, x0, initial_inputs(task, vi, x0, X_ref, U_ref), torques),
        actuated=act,
        limits=(np.full(len(act), np.inf) if lim is None else lim[: vi.n_torques]).tolist(),
        bounded=lim is not None or len(act) < nq,
        **{w: np.diag(task.weight(w, "weights", vi.nx, nq)).tolist() for w in ("Q", "Qf")},
        R=R.tolist(),
        terminal_constraint=task.terminal_constraint,
        tolerance=task.tolerance,
        constraint_tolerance=task.constraint_tolerance,
        penalty=task.penalty,
        max_iterations=task.max_iterations,
    )


def _our_guess(vi, x0: np.ndarray, U: np.ndarray, torques) -> dict:
    """Our initial guess for the peer: the inputs and the states of their rollout in our model, in (q, v) with v the
    difference quotient of q (the rollout's own velocities; at rest at the end)."""
    from vi_control.planning.shooting import rollout

    X = rollout(vi, x0, U)[0]
    Q = X[:, : vi.nq]
    V = np.vstack([np.diff(Q, axis=0) / vi.dt, np.zeros((1, vi.nq))])
    return dict(U0=torques(U), X0=np.hstack([Q, V]).tolist())


class Peer:
    """crocoddyl_peer.py as a worker in the peer venv (one JSON line per request)."""

    def __init__(self, py: Path, specs: dict):
        self.err = open(RESULTS / "crocoddyl_peer.stderr", "w")  # noqa: SIM115 (closed in close())
        self.proc = subprocess.Popen(
            [str(py), str(PEER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.err,
            text=True,
            env={**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"},
        )
        self.info = self.ask(dict(cmd="setup", tasks=specs))

    def ask(self, msg: dict) -> dict:
        self.proc.stdin.write(json.dumps(msg) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            self.err.flush()
            tail = (RESULTS / "crocoddyl_peer.stderr").read_text().strip().splitlines()[-1:] or ["no output"]
            raise RuntimeError(f"crocoddyl worker: {tail[0][:160]}")
        return json.loads(line)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.write(json.dumps(dict(cmd="quit")) + "\n")
            self.proc.stdin.flush()
            self.proc.wait(timeout=60)
        self.err.close()


STIFF_QF = 1e6  # the stiff-terminal-penalty peer's Qf scale: it then ends within ~3e-4 rad of the goal


def peer_specs(name: str, spec: dict) -> dict:
    """Crocoddyl's problems for one task. A terminal-constrained task gets two: ``AL`` — the same method of
    multipliers as ours (the passive joint's torque penalized, R = 1e8: boxed to [0, 0] the warm-started
    subproblems stall at maximum regularization) — and ``stiff Qf`` — the goal as a terminal penalty Qf × 1e6, the
    passive torque boxed to [0, 0], up to 500 iterations: the usual way to reach a goal with Crocoddyl."""
    ours = spec.pop("ours", None)
    if not spec["terminal_constraint"]:
        return {name: spec} if ours is None else {name: spec, f"{name}|our guess": dict(spec, **ours)}
    stiff = dict(spec, terminal_constraint=False, Qf=[w * STIFF_QF for w in spec["Qf"]], max_iterations=500)
    return {f"{name}|AL": dict(spec, passive="penalty"), f"{name}|stiff Qf": stiff}


def timed_c_passes(restore: bool = False) -> list[float]:
    """Times each compiled stage pass (rollout, linearization, backward pass: ``CompiledStages._run``, one C call
    each; DDP's and the feedback guess's rollout) into the list returned (wall seconds inside the call; the process is
    pinned): what those passes cost a plan, the floor under any trimming of the Python around them. ``restore``:
    undo."""
    from vi_control.planning.compiled import CompiledStages

    run = CompiledStages.__dict__["_run"]
    original = getattr(run, "original", run)
    if restore:
        CompiledStages._run = original
        return []
    spent: list[float] = []

    def timed(self, which: int, arrays: list) -> int:
        t = time.perf_counter()
        try:
            return original(self, which, arrays)
        finally:
            spent.append(time.perf_counter() - t)

    timed.original = original
    CompiledStages._run = timed
    return spent


def peer_variants(names, specs: dict) -> dict[str, list[str]]:
    """The peer's problems of each task (``peer_specs``' keys: the task's name, then ``|variant``)."""
    return {n: [k for k in specs if k.split("|")[0] == n] for n in names}


def peer_path(variant: str) -> str:
    """The row path of a peer problem: ``crocoddyl`` and its variant (``crocoddyl|our guess``)."""
    name, _, rest = variant.partition("|")
    return "crocoddyl" + ("|" + rest if rest else "")


def our_record(plan, res, cpu: float, goal_q: np.ndarray, **extra) -> dict:
    """One timed plan of ours as ``task_rows`` reads it: CPU [ms] of the plan and of its optimizer, iterations,
    convergence, and the final configuration's distance to the goal."""
    return dict(
        cpu_ms=cpu * 1e3,
        opt_cpu_ms=res.cpu_time * 1e3,
        iterations=res.iterations,
        converged=res.converged,
        outer=res.outer_iterations,
        goal_error=float(np.abs(plan.X[-1, : len(goal_q)] - goal_q).max()),
        **extra,
    )


def tasks_vs_peer(names: tuple[str, ...], rounds: int, py: Path | None, numpy_rounds: int = 3) -> tuple[list, str]:
    """Interleaved rounds per task: our plan (compiled kernel), Crocoddyl's solve(s), our numpy path (first
    ``numpy_rounds`` rounds). Returns (rows, note on the peer)."""
    from vi_control.planning import compiled, load_task, make_system, plan_task

    tasks = {n: load_task(n if n.endswith(".yaml") else f"task_{n}") for n in names}
    systems = {n: make_system(t) for n, t in tasks.items()}
    in_c = timed_c_passes()
    for n in names:  # warm-up: the derivative functions and the kernel compile on first use (cache)
        plan_task(systems[n], tasks[n])
    peer, note, variants = None, "", {n: [] for n in names}
    if py is not None:
        try:
            specs = {k: v for n in names for k, v in peer_specs(n, task_spec(tasks[n], systems[n])).items()}
            variants = peer_variants(names, specs)
            peer = Peer(py, specs)
            note = f"crocoddyl {peer.info['version']} (pinocchio {peer.info['pinocchio']})"
        except (RuntimeError, OSError, ValueError) as e:
            note = f"crocoddyl worker failed: {e}"
    load0 = os.getloadavg()
    runs: dict = {}
    try:
        for r in range(rounds):
            for n in names:
                for kind in ("compiled", "crocoddyl", "numpy"):
                    if kind == "numpy" and r >= numpy_rounds or kind == "crocoddyl" and peer is None:
                        continue
                    if kind == "crocoddyl":
                        for v in variants[n]:
                            out = peer.ask(dict(cmd="solve", task=v, warm_s=HOT_S))
                            cold = peer.ask(dict(cmd="solve", task=v, build=True))  # (a cold plan: build, solve)
                            out["cold_ms"] = cold["build_ms"] + cold["cpu_ms"]
                            out["build_ms"] = cold["build_ms"]
                            runs.setdefault((n, peer_path(v)), []).append(out)
                        continue
                    compiled.ENABLED = kind == "compiled"
                    if kind == "compiled":
                        warm_up(lambda n=n: plan_task(systems[n], tasks[n]), HOT_S)
                    in_c.clear()
                    c0 = time.process_time()
                    plan, res = plan_task(systems[n], tasks[n])
                    cpu = time.process_time() - c0
                    c_ms = sum(in_c) * 1e3 if kind == "compiled" else None
                    record = our_record(plan, res, cpu, tasks[n].goal_q, compiled=res.compiled, c_passes_ms=c_ms)
                    runs.setdefault((n, kind), []).append(record)
    finally:
        compiled.ENABLED = True
        timed_c_passes(restore=True)
        if peer is not None:
            peer.close()
    return task_rows(names, runs, load0 + os.getloadavg()), note


def warm_up(call, seconds: float) -> None:
    """``call()`` once, then again and again until ``seconds`` more of this process's CPU time have passed (the first
    call after a sleep may alone take longer than that; the next few still recover)."""
    call()
    t0 = time.process_time()
    while time.process_time() - t0 < seconds:
        call()


def after_idle(names: tuple[str, ...], rounds: int, py: Path | None) -> list[dict]:
    """Our plan and the peer's solve (each of its variants) after the same IDLE_S asleep (a request reaching an idle
    planner), interleaved over ``rounds``; CPU ms per call. Rows as ``task_rows`` makes them (ratios to the fastest
    converged peer variant)."""
    from vi_control.planning import load_task, make_system, plan_task

    if py is None:
        return []
    tasks = {n: load_task(f"task_{n}") for n in names}
    systems = {n: make_system(t) for n, t in tasks.items()}
    specs = {k: v for n in names for k, v in peer_specs(n, task_spec(tasks[n], systems[n])).items()}
    variants = peer_variants(names, specs)
    peer = Peer(py, specs)
    runs: dict = {}
    try:
        for n in names:  # (warm-up: compiles, loads)
            plan_task(systems[n], tasks[n])
        load0 = os.getloadavg()
        for _ in range(rounds):
            for n in names:
                for v in variants[n]:
                    time.sleep(IDLE_S)  # (the peer sleeps on its pipe meanwhile)
                    runs.setdefault((n, peer_path(v)), []).append(peer.ask(dict(cmd="solve", task=v)))
                time.sleep(IDLE_S)
                c0 = time.process_time()
                plan, res = plan_task(systems[n], tasks[n])
                cpu = time.process_time() - c0
                runs.setdefault((n, "compiled"), []).append(our_record(plan, res, cpu, tasks[n].goal_q))
    finally:
        peer.close()
    return task_rows(list(names), runs, load0 + os.getloadavg())


def idle_table(rows: list[dict]) -> str:
    out = [
        "| task | ours / peer | CPU min [ms] | CPU median [ms] | × Crocoddyl (median / min; vs) | rounds |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        out.append(
            f"| {r['task']} | {LABELS[r['path']]} | {r['cpu_min']:.1f} | {r['cpu_median']:.1f} | "
            f"{ratio_cell(r.get('ratio'))} | {r['rounds']} |"
        )
    return "\n".join(out)


def task_rows(names, runs: dict, load: tuple) -> list[dict]:
    """One row per (task, path); ours carry the ratio to the fastest converged Crocoddyl configuration (median
    CPU time; and min / min), or to the fastest one when none converged: to its solve alone of the problem built at
    setup (``ratio``), and to its cold plan — the problem rebuilt from the task's numbers, then solved
    (``ratio_built``) — as our plan's time includes building ours (start state, reference, cost, bounds)."""

    def built(x: dict) -> float:
        return x.get("cold_ms", x["cpu_ms"])

    rows = []
    for n in names:
        paths = [p for (m, p) in runs if m == n]
        peers = [p for p in paths if p.startswith("crocoddyl")]
        ok = [p for p in peers if runs[n, p][-1]["converged"]] or peers
        best = min(ok, key=lambda p: np.median([x["cpu_ms"] for x in runs[n, p]])) if ok else None
        best_built = min(ok, key=lambda p: np.median([built(x) for x in runs[n, p]])) if ok else None
        for path in sorted(paths, key=lambda p: (p.startswith("crocoddyl"), p != "compiled", p)):
            rs = runs[n, path]
            cpu = [x["cpu_ms"] for x in rs]
            last = rs[-1]
            its = f"{last['iterations']}" + (f" ({last['outer']})" if last.get("outer") else "")
            ratio = ratio_built = None
            if best is not None and not path.startswith("crocoddyl"):
                pc = [x["cpu_ms"] for x in runs[n, best]]
                ratio = (float(np.median(cpu) / np.median(pc)), min(cpu) / min(pc), best)
                pb = [built(x) for x in runs[n, best_built]]
                ratio_built = (float(np.median(cpu) / np.median(pb)), min(cpu) / min(pb), best_built)
            build = [x["build_ms"] for x in rs if "build_ms" in x]
            opt = [x.get("opt_cpu_ms", x["cpu_ms"]) for x in rs]  # Crocoddyl: the solve is all it does
            in_c = [x["c_passes_ms"] for x in rs if x.get("c_passes_ms") is not None]
            rows.append(
                dict(
                    task=n,
                    path=path,
                    iterations=its,
                    converged=last["converged"],
                    cpu_min=min(cpu),
                    cpu_median=float(np.median(cpu)),
                    opt_min=min(opt),
                    opt_median=float(np.median(opt)),
                    c_min=min(in_c) if in_c else None,
                    c_median=float(np.median(in_c)) if in_c else None,
                    ratio=ratio,
                    ratio_built=ratio_built,
                    build_median=float(np.median(build)) if build else None,
                    goal_error=last["goal_error"],
                    rounds=len(rs),
                    load=load,
                )
            )
    return rows


LABELS = {
    "compiled": "vi_control DDP, compiled kernel (plan incl. gains)",
    "numpy": "vi_control DDP, numpy path (before; plan incl. gains)",
    "crocoddyl": "Crocoddyl (Box)FDDP, Euler, C++ models (solve incl. its K)",
    "crocoddyl|AL": "Crocoddyl BoxFDDP in our AL loop (passive torque R = 1e8)",
    "crocoddyl|stiff Qf": "Crocoddyl BoxFDDP, goal as Qf × 1e6 (passive torque boxed to 0)",
    "crocoddyl|our guess": "Crocoddyl (Box)FDDP from our initial guess (its states and inputs)",
}


def ratio_cell(ratio) -> str:
    """A ratio (median, min, the peer path it is to) as a table cell."""
    if ratio is None:
        return "-"
    peer = ratio[2].split("|")[-1].replace("crocoddyl", "FDDP")
    return f"{ratio[0]:.2f} / {ratio[1]:.2f} ({peer})"


def task_table(rows: list[dict]) -> str:
    out = [
        "| task | ours / peer | iterations (AL outer) | converged | CPU min [ms] | CPU median [ms] | "
        "optimizer alone: CPU min / median [ms] | the plan's compiled passes: min / median [ms] | "
        "× Crocoddyl (median / min; vs) | × Crocoddyl with its problem built (median / min; vs) | q_N − goal (∞) | "
        "rounds |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]

    for r in rows:
        built = ratio_cell(r.get("ratio_built"))
        if r.get("build_median") is not None:
            built = f"its problem built in {r['build_median']:.1f}"
        in_c = "-" if r.get("c_min") is None else f"{r['c_min']:.1f} / {r['c_median']:.1f}"
        out.append(
            f"| {r['task']} | {LABELS[r['path']]} | {r['iterations']} | {r['converged']} | {r['cpu_min']:.1f} | "
            f"{r['cpu_median']:.1f} | {r['opt_min']:.1f} / {r['opt_median']:.1f} | {in_c} | {ratio_cell(r['ratio'])} | "
            f"{built} | "
            f"{r['goal_error']:.1e} | {r['rounds']} |"
        )
    return "\n".join(out)


def ensure_bench_venv() -> tuple[Path | None, str]:
    py = BENCH_VENV / "bin" / "python"
    req = ROOT / "benchmarks" / "requirements-bench-planner.txt"
    try:
        if not py.exists():
            subprocess.run([sys.executable, "-m", "venv", str(BENCH_VENV)], check=True, capture_output=True)
        chk = subprocess.run([str(py), "-c", "import crocoddyl, pydrake"], capture_output=True)
        if chk.returncode != 0:
            r = subprocess.run(
                [str(py), "-m", "pip", "install", "-q", "-r", str(req)], capture_output=True, text=True, timeout=1800
            )
            if r.returncode != 0:
                return py, f"pip install failed: {r.stderr.strip().splitlines()[-1:]}"
        return py, ""
    except (subprocess.SubprocessError, OSError) as e:
        return None, f"cannot set up the benchmark venv: {e}"


def external(py: Path, name: str, script: str, args: list[str]) -> dict:
    try:
        r = subprocess.run(
            [str(py), "-c", script, *args],
            capture_output=True,
            text=True,
            timeout=900,
            env={**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"},
        )
    except subprocess.TimeoutExpired:
        return dict(tool=name, method="-", note="timed out after 900 s")
    if r.returncode != 0:
        err = (r.stderr.strip().splitlines() or [f"exit code {r.returncode}"])[-1]
        sig = f" (signal {-r.returncode})" if r.returncode < 0 else ""
        return dict(tool=name, method="-", note=f"failed{sig}: {err[:160]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def _fmt(r: dict, k: str, fmt: str) -> str:
    return fmt.format(r[k]) if r.get(k) is not None else "-"


def table(rows: list[dict]) -> str:
    out = [
        "| tool | method | iterations | converged | optimize [ms] | total incl. gains [ms] | CPU min [ms] | "
        "CPU median [ms] | final cost | q_N | note |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        out.append(
            f"| {r['tool']} | {r['method']} | {_fmt(r, 'iterations', '{}')} | {_fmt(r, 'converged', '{}')} | "
            f"{_fmt(r, 'optimize_ms', '{:.1f}')} | {_fmt(r, 'total_ms', '{:.1f}')} | "
            f"{_fmt(r, 'cpu_ms', '{:.1f}')} | {_fmt(r, 'cpu_median_ms', '{:.1f}')} | "
            f"{_fmt(r, 'cost', '{:.4f}')} | {_fmt(r, 'q_final', '{:.4f}')} | "
            f"{r.get('note', '').replace('|', chr(92) + '|')} |"
        )  # escaped: a table cell
    return "\n".join(out)


def plots(runs: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from vi_control.planning import load_task, make_system, reference_trajectory
    from vi_control.planning.evaluate import simulate_plan

    task = load_task(str(TASK))
    vi = make_system(task)
    plan = runs["ddp"][0]
    X_ref, _ = reference_trajectory(task, vi)
    Xc, _ = simulate_plan(vi, plan, X0_PERTURBED, feedback=True)
    Xo, _ = simulate_plan(vi, plan, X0_PERTURBED, feedback=False)
    fig, ax = plt.subplots(2, 1, figsize=(7, 5.5), sharex=True)
    t = plan.times
    for i, lab in enumerate(("q [rad]", "p [kg m²/s]")):
        ax[i].plot(t, X_ref[:, i], "k:", label="infeasible reference (eq. 35)")
        ax[i].plot(t, plan.X[:, i], "C0", lw=2, label="feasible reference (DDP)")
        ax[i].plot(t, Xc[:, i], "C2--", label="closed loop from x(0) = [1 1]")
        ax[i].plot(t, Xo[:, i], "C3-.", label="open loop from x(0) = [1 1]")
        ax[i].set_ylabel(lab)
    ax[1].set_xlabel("t [s]")
    ax[0].set_ylim(-2, 8)
    ax[1].set_ylim(-8, 8)
    ax[0].legend(fontsize=8, loc="upper left")
    ax[0].set_title("Pendulum swing-up and TV-LQR (Johnson2015, §VIII-A, Fig. 4)")
    fig.tight_layout()
    fig.savefig(RESULTS / "pendulum_swingup.png", dpi=110)
    fig, ax = plt.subplots(figsize=(7, 4))
    for m, (_, res) in runs.items():
        ax.semilogy(np.abs(res.decrement_history) + 1e-300, label=f"{m} ({res.iterations} it.)")
    ax.axhline(1e-6, color="k", lw=0.8, ls=":")
    ax.set_xscale("symlog", linthresh=20)
    ax.set_xlim(left=0)
    ax.set_xlabel("iteration")
    ax.set_ylabel("|dJ| along the step")
    ax.set_title("Convergence (Johnson2015, Fig. 3: second order 14, first order 653 iterations)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(RESULTS / "pendulum_convergence.png", dpi=110)


def pin_to_one_cpu(cpu: int | None) -> int | None:
    """Run this process — and the peer, which inherits it — on one CPU: on a shared virtual machine the two CPUs run
    at different speeds from minute to minute (the same plan 5.7 ms on one, 8.2 ms on the other), and two processes
    that alternate may be placed on different ones, which biased the ratio by up to 30 % between runs. Returns the CPU,
    or None (``-1``, or no affinity control here)."""
    if cpu == -1 or not hasattr(os, "sched_setaffinity"):
        return None
    cpu = min(os.sched_getaffinity(0)) if cpu is None else cpu
    os.sched_setaffinity(0, {cpu})
    return cpu


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--task-rounds", type=int, default=7, help="interleaved rounds of the task comparison")
    ap.add_argument("--tasks", nargs="*", default=list(TASKS))
    ap.add_argument("--idle-rounds", type=int, default=5, help="rounds of the after-idle comparison (0: none)")
    ap.add_argument("--no-external", action="store_true")
    ap.add_argument("--gradient-iterations", type=int, default=2000, help="cap for the open-loop baseline")
    ap.add_argument(
        "--cpu",
        type=int,
        default=None,
        help="the one CPU this process and the peer run on (default: the lowest this process may use; -1: unpinned)",
    )
    a = ap.parse_args()
    cpu = pin_to_one_cpu(a.cpu)
    RESULTS.mkdir(parents=True, exist_ok=True)
    py, err = (None, "") if a.no_external else ensure_bench_venv()
    task_rows, peer_note = tasks_vs_peer(tuple(a.tasks), a.task_rounds, None if err else py)
    idle_names = tuple(n for n in ("pendulum_swingup", "panda_reach") if n in a.tasks)
    idle_rows = after_idle(idle_names, a.idle_rounds, None if err else py) if a.idle_rounds else []
    rows, runs = ours(a.rounds, a.gradient_iterations)
    if err:
        rows.append(dict(tool="crocoddyl / drake", method="-", note=err))
    if py is not None and not err:
        rows.append(external(py, "drake", DRAKE, [str(a.rounds)]))
    plots(runs)
    ddp = next(r for r in rows if r["method"] == "ddp")
    load = task_rows[0]["load"] if task_rows else ()
    l0, l1 = load[:3], load[3:]
    lines = [
        f"## Tasks against Crocoddyl ({peer_note or 'no peer'})",
        "",
        f"{a.task_rounds} interleaved rounds (each round: every task by our compiled path, Crocoddyl, and in the "
        f"first 3 rounds our numpy path), CPU time (process time) of one whole plan, hot: each timed call of our "
        f"compiled path and of the peer follows the same call once and then for {HOT_S * 1e3:g} ms of CPU, untimed "
        f"(``HOT_S``); "
        f"{os.cpu_count()} cores, "
        + (f"this process and the peer both on CPU {cpu}" if cpu is not None else "unpinned")
        + ", load "
        f"average {' / '.join(f'{v:.1f}' for v in l0)} before and {' / '.join(f'{v:.1f}' for v in l1)} after "
        "(1 / 5 / 15 min). Peer problems: benchmarks/crocoddyl_peer.py (docstring).",
        "",
        task_table(task_rows),
        "",
        *(
            [
                f"After {IDLE_S:g} s asleep (a request reaching an idle planner; the peer asleep as long before each "
                f"solve), {a.idle_rounds} interleaved rounds, CPU time of one call:",
                "",
                idle_table(idle_rows),
                "",
            ]
            if idle_rows
            else []
        ),
        "## Pendulum swing-up (REFERENCE §2) by every method",
        "",
        f"N = 100, Δt = 0.1 s, from U = 0; fastest of {a.rounds} runs "
        f"(open-loop gradient: one run); CPU min and median over the rounds; load average "
        f"{' / '.join(f'{v:.1f}' for v in os.getloadavg())} (1 / 5 / 15 min) at the end of the run.",
        "",
        table(rows),
        "",
        f"Target: the swing-up planned with gains in under 100 ms: DDP total {ddp['total_ms']:.0f} ms wall, "
        f"{ddp['cpu_ms']:.0f} ms CPU ({'met' if ddp['total_ms'] < 100 else 'NOT met'} in wall time). CPU = "
        "process time, which excludes time the process waited for a core (the machine is shared).",
    ]
    text = "\n".join(lines)
    print(text)
    (RESULTS / "planner.md").write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
