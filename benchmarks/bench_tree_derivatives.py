"""The midpoint step's derivatives by recursion over the tree (mechanics/csrc/tree_derivatives.c) against the
generated functions ('linearize', 'hessian'), and what the choice does to a plan.

Per model, in this process, interleaved rounds: one call of each function in C (a loop of calls compiled with the
recursion; the generated function through its address, as the DDP kernel calls it), µs per call, median and min over
the rounds; and which of the two the DDP kernel uses (``DiscreteSystemStructure.recursive``: the generated function's
instructions against ``TREE_INSTRUCTIONS_PER_JOINT`` per joint). Then the panda reach plan (``plan_task``, CPU time,
hot) with the recursion and with the generated functions (``RECURSIVE_DERIVATIVES`` toggled), interleaved.

With ``--cold``: the task's first plan on an empty compile cache (a fresh process each, wall time: what a user waits
for on a new robot), with the recursion and without — the generated functions the recursion replaces are not compiled.

Usage: .venv/bin/python benchmarks/bench_tree_derivatives.py [--rounds 7] [--plans 40] [--models panda,arm7,...]
       [--cold]
Writes benchmarks/results/tree_derivatives.md.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from vi_control.integrators.midpoint import MidpointVI  # noqa: E402
from vi_control.mechanics import codegen, discrete  # noqa: E402
from vi_control.mechanics.discrete import TREE_DERIVATIVES_C, tree_model  # noqa: E402
from vi_control.model.bundled import example_robot_urdf, load_bundled  # noqa: E402
from vi_control.model.generate import planar_chain_urdf  # noqa: E402
from vi_control.model.spec import load_robot  # noqa: E402
from vi_control.planning import load_task, make_system, plan_task  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"

# Loops of calls, so that a call is timed without ctypes' own cost (~1 µs, more than the smallest functions).
HARNESS_C = r"""
typedef int (*vi_casadi_fn)(const double** arg, double** res, long long* iw, double* w, int mem);
void bench_generated(void* f, long long reps, const double** arg, double** res, long long* iw, double* w) {
  for (long long r = 0; r < reps; r++) ((vi_casadi_fn)f)(arg, res, iw, w, 0);
}
void bench_linearize(long long reps, const long long* ti, const double* td, double dt, const double* q0,
                     const double* q1, double* Ry, double* Rz, double* Oy, double* Oz, double* w) {
  for (long long r = 0; r < reps; r++) vi_tree_linearize(ti, td, dt, q0, q1, Ry, Rz, Oy, Oz, w);
}
void bench_hessian(long long reps, const long long* ti, const double* td, double dt, const double* q0,
                   const double* q1, const double* mu, const double* nu, double* H, long long nw, long long y_at,
                   long long z_at, double* w) {
  for (long long r = 0; r < reps; r++) vi_tree_hessian(ti, td, dt, q0, q1, mu, nu, H, nw, y_at, z_at, w);
}
"""

MODELS = {
    "pendulum": lambda: load_bundled("pendulum"),
    "cartpole": lambda: load_bundled("cartpole"),
    "acrobot": lambda: load_bundled("acrobot"),
    "chain7 (planar)": lambda: load_robot(planar_chain_urdf(7)),
    "biped5": lambda: load_bundled("biped5"),
    "arm7": lambda: load_bundled("arm7"),
    "panda": lambda: load_robot(example_robot_urdf("panda")),
}


def _harness() -> ctypes.CDLL:
    so = codegen.compile_shared_library(TREE_DERIVATIVES_C + HARNESS_C, "vi_bench_tree", codegen.cflags(), "harness")
    lib = ctypes.CDLL(str(so))
    P, L, D = ctypes.c_void_p, ctypes.c_longlong, ctypes.c_double
    lib.bench_generated.argtypes = [P, L, P, P, P, P]
    lib.bench_linearize.argtypes = [L, P, P, D, P, P, P, P, P, P, P]
    lib.bench_hessian.argtypes = [L, P, P, D, P, P, P, P, P, L, L, L, P]
    lib.vi_tree_workspace.restype = L
    lib.vi_tree_workspace.argtypes = [L]
    return lib


def bench_model(name: str, robot, lib: ctypes.CDLL, rounds: int, batch_s: float = 0.02) -> dict:
    """µs per call of the generated 'linearize' / 'hessian' and of the recursion (median, min over ``rounds``),
    their instruction counts and the kernel's choice; the two agree to round-off (checked here too)."""
    s = MidpointVI(robot, 0.05).structure
    fns = s.functions
    rng = np.random.default_rng(0)
    y, z, cov, mu = (rng.standard_normal(k) for k in (s.ny, s.nz, s.nx, s.ny))
    n_iw, n_w = fns.work_sizes(("linearize", "hessian"))
    iw, w = np.zeros(max(n_iw, 1), np.int64), np.zeros(max(n_w, 1))
    nw = s.ny + s.nz
    lin_out = [np.zeros(a * b) for a, b in ((s.ny, s.ny), (s.ny, s.nz), (s.nx, s.ny), (s.nx, s.nz))]
    tree_out = [np.zeros_like(o) for o in lin_out]
    H_gen, H_tree = np.zeros(nw * nw), np.zeros(nw * nw)
    ints, reals = tree_model(robot)
    work = np.zeros(lib.vi_tree_workspace(s.nq))
    q0, q1, nu = z[: s.nq].copy(), y[: s.nq].copy(), cov[s.nq :].copy()
    keep = []

    def ptrs(arrays):
        keep.append((ctypes.c_void_p * len(arrays))(*[a.ctypes.data for a in arrays]))
        return ctypes.cast(keep[-1], ctypes.c_void_p)

    a = lambda x: x.ctypes.data  # noqa: E731
    lin_gen, hess_gen = fns["linearize"].address, fns["hessian"].address
    args_l, res_l = ptrs([y, z]), ptrs(lin_out)
    args_h, res_h = ptrs([y, z, cov, mu]), ptrs([H_gen])
    calls = {
        "linearize generated": lambda r: lib.bench_generated(lin_gen, r, args_l, res_l, a(iw), a(w)),
        "linearize recursive": lambda r: lib.bench_linearize(
            r, a(ints), a(reals), s.dt, a(q0), a(q1), *[a(o) for o in tree_out], a(work)
        ),
        "hessian generated": lambda r: lib.bench_generated(hess_gen, r, args_h, res_h, a(iw), a(w)),
        "hessian recursive": lambda r: lib.bench_hessian(
            r, a(ints), a(reals), s.dt, a(q0), a(q1), a(mu), a(nu), a(H_tree), nw, 0, s.ny, a(work)
        ),
    }
    reps = {}
    for key, f in calls.items():  # calls per batch of ~batch_s
        f(10)
        t = time.perf_counter()
        f(100)
        reps[key] = max(10, int(batch_s / max((time.perf_counter() - t) / 100, 1e-9)))
    times = {key: [] for key in calls}
    for _ in range(rounds):
        for key, f in calls.items():
            t = time.process_time()
            f(reps[key])
            times[key].append((time.process_time() - t) / reps[key] * 1e6)
    err_l = max(np.abs(g - t).max() / max(1.0, np.abs(g).max()) for g, t in zip(lin_out, tree_out, strict=True))
    err_h = np.abs(H_gen - H_tree).max() / max(1.0, np.abs(H_gen).max())
    row = dict(name=name, nq=s.nq, rounds=rounds, err=max(err_l, err_h))
    for key, ts in times.items():
        row[key] = (statistics.median(ts), min(ts))
    for fn in ("linearize", "hessian"):
        row[f"{fn} instructions"] = fns.raw[fn].n_instructions()
        row[f"{fn} choice"] = "recursive" if s.recursive(fn) else "generated"
    return row


def bench_plan(task_name: str, plans: int, rounds: int) -> dict:
    """The task's plan (CPU ms, hot) with the recursion and with the generated functions, interleaved rounds."""
    task = load_task(task_name)
    vi = make_system(task)
    out = {True: [], False: []}
    try:
        for flag in (True, False):
            discrete.RECURSIVE_DERIVATIVES = flag
            for _ in range(5):
                plan_task(vi, task)
        for _ in range(rounds):
            for flag in (True, False):
                discrete.RECURSIVE_DERIVATIVES = flag
                for _ in range(3):
                    plan_task(vi, task)
                for _ in range(plans):
                    t = time.process_time()
                    plan_task(vi, task)
                    out[flag].append((time.process_time() - t) * 1e3)
    finally:
        discrete.RECURSIVE_DERIVATIVES = True
    med = {f: statistics.median(v) for f, v in out.items()}
    low = {f: min(v) for f, v in out.items()}
    return dict(
        task=task_name,
        recursive=(med[True], low[True]),
        generated=(med[False], low[False]),
        ratio=(med[True] / med[False], low[True] / low[False]),
        samples=len(out[True]),
    )


_COLD = """
import sys, time
t0 = time.perf_counter()
from vi_control.planning import load_task, make_system, plan_task
task = load_task(sys.argv[1]); vi = make_system(task)
t1 = time.perf_counter()
plan_task(vi, task)
print(t1 - t0, time.perf_counter() - t1)
"""


def cold_first_plan(task_name: str, recursive: bool) -> tuple[float, float]:
    """(model build, first plan) wall seconds of ``task_name`` in a fresh process on an empty compile cache."""
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, VI_CONTROL_CACHE=cache, VI_CONTROL_RECURSIVE_DERIVATIVES="1" if recursive else "0")
        out = subprocess.run(
            [sys.executable, "-c", _COLD, task_name], env=env, capture_output=True, text=True, check=True, timeout=1800
        )
    build, first = (float(x) for x in out.stdout.split()[-2:])
    return build, first


def table(rows: list[dict], plan: dict | None, cold: dict | None = None) -> str:
    lines = [
        "| model | joints | 'linearize': generated / recursive, µs (median, min) | instructions | kernel uses | "
        "'hessian': generated / recursive, µs (median, min) | instructions | kernel uses | max rel. difference |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        cells = [r["name"], str(r["nq"])]
        for fn in ("linearize", "hessian"):
            g, t = r[f"{fn} generated"], r[f"{fn} recursive"]
            cells += [
                f"{g[0]:.3f} / {t[0]:.3f} ({g[1]:.3f} / {t[1]:.3f})",
                f"{r[f'{fn} instructions']}",
                r[f"{fn} choice"],
            ]
        cells.append(f"{r['err']:.0e}")
        lines.append("| " + " | ".join(cells) + " |")
    out = "\n".join(lines) + "\n"
    if plan:
        out += (
            f"\n{plan['task']}, the whole plan (`plan_task`, CPU time, hot; {plan['samples']} plans each, "
            "interleaved): "
            f"recursive {plan['recursive'][0]:.2f} ms median / {plan['recursive'][1]:.2f} min, generated "
            f"{plan['generated'][0]:.2f} / {plan['generated'][1]:.2f}: **{plan['ratio'][0]:.2f}× / "
            f"{plan['ratio'][1]:.2f}×** the time.\n"
        )
    if cold:
        (rb, rf), (gb, gf) = cold[True], cold[False]
        out += (
            f"\n{cold['task']}, the first plan on an empty compile cache (fresh processes, wall time): model built in "
            f"{rb:.1f} / {gb:.1f} s, then the first plan **{rf:.1f} s with the recursion, {gf:.1f} s without** (the "
            "generated functions it replaces are never compiled).\n"
        )
    return out


def main(argv: list[str] | None = None) -> str:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--plans", type=int, default=40)
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--task", default="task_panda_reach")
    ap.add_argument("--cold", action="store_true", help="also the first plan on an empty compile cache")
    a = ap.parse_args(argv)
    lib = _harness()
    rows = [bench_model(m, MODELS[m](), lib, a.rounds) for m in a.models.split(",")]
    plan = bench_plan(a.task, a.plans, a.rounds) if a.plans > 0 else None
    cold = {"task": a.task, **{f: cold_first_plan(a.task, f) for f in (True, False)}} if a.cold else None
    load = os.getloadavg()
    text = (
        "## The midpoint step's derivatives: recursion over the tree against the generated functions\n\n"
        f"{a.rounds} interleaved rounds, CPU time per call in C (loops of calls), load average "
        f"{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}. The kernel uses the recursion where the generated function "
        f"has more than {discrete.TREE_INSTRUCTIONS_PER_JOINT} instructions per joint.\n\n" + table(rows, plan, cold)
    )
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "tree_derivatives.md").write_text(text)
    print(text)
    return text


if __name__ == "__main__":
    main(sys.argv[1:])
