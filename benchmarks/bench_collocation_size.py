"""How large a collocation NLP can be built here: build time and memory against the model and the node count.

Each configuration (model, LG or LG2, nodes N per interval, K intervals) is built in a fresh subprocess — CasADi's
symbolic NLP, then ``nlpsol`` (IPOPT's exact Hessian of the Lagrangian, its sparsity, MUMPS set-up) — and measured:
CPU and wall time of ``Transcription(problem)``, the process's peak resident memory, the NLP's variables and
constraints, and the size estimate the planner bounds (``transcription.nlp_size``: Gauss points × operations of one
dynamics row, × the interval's nodes where the row reads every node of it). A series stops after its first build
beyond ``--stop`` seconds of CPU.

    .venv/bin/python benchmarks/bench_collocation_size.py                # the table of benchmarks/results/summary.md
    .venv/bin/python benchmarks/bench_collocation_size.py --quick        # two small builds (the smoke test)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# (model, method, N, K): two models of the same nq far apart in work per row (ur5 / panda), two cheap ones, and
# each transcription's coupling (LG2 lifted: node-local rows; LG and the pendulum's plain LG2: rows of a whole interval)
SERIES = {
    "panda lg2": [("erd:panda", "lg2", 10, k) for k in (1, 2, 4, 8)],
    "panda lg": [("erd:panda", "lg", n, 1) for n in (5, 10, 20)],
    "ur5 lg2": [("erd:ur5", "lg2", 10, k) for k in (1, 4, 16)],
    "cartpole lg2": [("cartpole", "lg2", 20, k) for k in (2, 8, 32, 128)],
    "cartpole lg": [("cartpole", "lg", n, k) for n, k in ((20, 2), (20, 8), (40, 8), (20, 32))],
    "pendulum lg2": [("pendulum", "lg2", n, k) for n, k in ((50, 4), (200, 1), (50, 40), (25, 400))],
    "panda lg2 free": [("erd:panda", "lg2", 10, k, True) for k in (1, 2, 4)],  # t_f a variable every row reads
    "cartpole lg free": [("cartpole", "lg", 20, k, True) for k in (8, 32)],
    "at the bound": [("erd:panda", "lg2", 10, 11), ("erd:panda", "lg", 10, 5)],  # work 0.92e6, 0.98e6
}
QUICK = {"quick": [("pendulum", "lg2", 10, 2), ("cartpole", "lg", 5, 2)]}

WORKER = """
import json, sys, time
from vi_control.model.spec import ModelSpec
from vi_control.planning.collocation import CollocationProblem, SecondOrderDynamics, Transcription
from vi_control.planning.collocation.size import nlp_size
model, method, N, K, free = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "free"
problem = CollocationProblem(SecondOrderDynamics(ModelSpec(source=model).load()), method=method, nodes=N, intervals=K,
                             free_time=free, cost="time" if free else "effort", size_limit=None)
size = nlp_size(problem)


def peak_mb():  # VmHWM: this process's own peak (ru_maxrss would carry a larger parent's over exec)
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM")) / 1024


rss0 = peak_mb()
c0, w0 = time.process_time(), time.perf_counter()
tr = Transcription(problem)
cpu, wall = time.process_time() - c0, time.perf_counter() - w0
print(json.dumps(dict(model=model, nq=problem.dynamics.nq, method=method, N=N, K=K, free=free, variables=tr.n_variables,
                      constraints=tr.n_constraints, row_ops=size.row_operations, size=size.work,
                      predicted_variables=size.variables, cpu=cpu, wall=wall, rss0_mb=rss0, rss_mb=peak_mb())))
"""


def measure(model: str, method: str, N: int, K: int, free: bool = False, timeout: float = 900.0) -> dict:
    """One build in a fresh interpreter (its peak memory is the build's own); None fields if it timed out."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    try:
        out = subprocess.run(
            [sys.executable, "-c", WORKER, model, method, str(N), str(K), "free" if free else "fixed"],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            cwd=ROOT,
        )
    except subprocess.TimeoutExpired:
        return dict(model=model, method=method, N=N, K=K, free=free, cpu=None, timeout=timeout)
    if out.returncode:
        raise RuntimeError(f"{model} {method} N={N} K={K}: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(series: dict, stop: float) -> list[dict]:
    rows = []
    for name, configs in series.items():
        for cfg in configs:
            row = measure(*cfg)
            row["series"] = name
            rows.append(row)
            print(json.dumps(row), flush=True)
            if row["cpu"] is None or row["cpu"] > stop:
                break
    return rows


def table(rows: list[dict]) -> str:
    """Markdown rows: the build's size, the estimate's predicted CPU (work × SECONDS_PER_WORK) and what was measured."""
    from vi_control.planning.collocation.size import SECONDS_PER_WORK

    out = [
        "| model (nq) | method | N × K | variables | ops per row | work | predicted CPU s | build CPU s | wall s "
        "| peak RSS MB |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        method = r["method"].upper() + (", free t_f" if r.get("free") else "")
        if r["cpu"] is None:
            out.append(f"| {r['model']} | {method} | {r['N']} × {r['K']} | | | | | > {r['timeout']:.0f} | | |")
            continue
        out.append(
            f"| {r['model']} ({r['nq']}) | {method} | {r['N']} × {r['K']} | {r['variables']} | {r['row_ops']} | "
            f"{r['size']:,} | {r['size'] * SECONDS_PER_WORK:.1f} | {r['cpu']:.1f} | {r['wall']:.1f} | "
            f"{r['rss_mb']:.0f} |"
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--stop", type=float, default=60.0, help="end a series after a build above this CPU time")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--series", default=None, help=f"comma-separated subset of {list(SERIES)}")
    args = ap.parse_args(argv)
    chosen = None if args.series is None else [n.strip() for n in args.series.split(",")]
    series = QUICK if args.quick else {k: v for k, v in SERIES.items() if chosen is None or k in chosen}
    rows = run(series, args.stop)
    print(f"load average {os.getloadavg()[0]:.1f}")
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return rows


if __name__ == "__main__":
    main()
