"""Time per step of the exact linearization (Johnson2015, §IV–VI) against finite differences of ``step``.

Measured in this process on each model, every figure the fastest of ``--rounds`` batches (the machine is
shared), in ms per time step:

- ``step``: ``MidpointVI.solve`` (the simulation itself, Johnson2015's "simulation" column);
- ``FD``: the Jacobian [A B] by central differences of the same ``step`` (2·(nx+nu) steps, warm-started
  Newton as ``step`` does it) — the baseline the exact derivatives must beat;
- ``first order``: ``linearize`` given the step's ``StepResult`` (A, B exact: eqs. 8–15 / 29–30);
- ``contraction``: ``second_order_contraction`` for one covector (Σᵢ cᵢ ∂²fᵢ, eqs. 16–27 / 31–32),
  what a second-order optimizer needs per step;
- ``full tensor``: ``second_order`` (every ∂²fᵢ), what Johnson2015's 22.15 ms figure computes.

The candidates are timed in turn within each round and each keeps its fastest round, so a ratio compares
figures taken under the same load.

Build times: ``build`` = MidpointVI construction (symbolic build + C of the step functions), ``lazy`` = the
first derivative call, which generates and compiles the "linearize"/"hessian" functions (seconds to minutes
on a cold cache; ``--cold`` uses an empty VI_CONTROL_CACHE to measure it).

Usage: .venv/bin/python benchmarks/bench_linearization.py [--models panda,marionette] [--rounds 5] [--cold]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

# Small dense matrices: a multithreaded OpenBLAS on a loaded 2-core machine stalls for milliseconds in
# dgetrs/dgemm waiting for its worker threads (measured 13 ms instead of 12 µs for panda's solve).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

PAPER_MS = {"step": 2.11, "first": 1.12, "full": 22.15}  # Johnson2015, §VIII-B, marionette, 2011 laptop, C


def fd_jacobian(vi, x: np.ndarray, u: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """[A B] by central differences of step: the baseline (2·(nx+nu) Newton solves)."""
    z = np.concatenate([x, u])
    J = np.empty((vi.nx, z.size))
    for j in range(z.size):
        zp, zm = z.copy(), z.copy()
        zp[j] += eps
        zm[j] -= eps
        J[:, j] = (vi.step(zp[: vi.nx], zp[vi.nx :]) - vi.step(zm[: vi.nx], zm[vi.nx :])) / (2 * eps)
    return J


def interleaved_best_ms(fns: dict, rounds: int, batch_s: float = 0.05) -> dict[str, float]:
    """Fastest per-call time (ms) of each function, timed round by round in turn so that every
    candidate sees the same machine load (the machine is shared; ratios compare the same rounds)."""
    reps = {}
    for name, fn in fns.items():
        fn()
        t = time.perf_counter()
        fn()
        reps[name] = max(1, int(batch_s / max(time.perf_counter() - t, 1e-7)))
    best = dict.fromkeys(fns, np.inf)
    for _ in range(rounds):
        for name, fn in fns.items():
            t = time.perf_counter()
            for _ in range(reps[name]):
                fn()
            best[name] = min(best[name], (time.perf_counter() - t) / reps[name])
    return {k: v * 1e3 for k, v in best.items()}


def setup(name: str):
    from vi_control.integrators.midpoint import MidpointVI
    from vi_control.model import load_robot
    from vi_control.model.bundled import bundled_config, bundled_urdf, example_robot_urdf

    if name == "pendulum":  # REFERENCE §1's state and input: the smallest case (smoke test)
        vi = MidpointVI(load_robot(bundled_urdf("pendulum"), bundled_config("pendulum")), 0.1)
        return vi, np.array([0.2, 0.5]), np.array([0.8])
    if name == "panda":
        robot = load_robot(example_robot_urdf("panda"))
        vi = MidpointVI(robot, 0.01)
        rng = np.random.default_rng(0)
        x = vi.state_from_velocity(np.array([0.1, -0.5, 0.2, -2.0, 0.1, 1.5, 0.7]), rng.normal(size=7))
        return vi, x, rng.normal(size=7)
    if name == "marionette":
        from vi_control.mechanics.constraints import consistent_state
        from vi_control.model import marionette

        robot = load_robot(bundled_urdf("marionette"), bundled_config("marionette"))
        vi = MidpointVI(robot, 0.01)
        x = consistent_state(robot, *marionette.initial_guess(robot))
        rho = x[: vi.nq][vi.idx_k]
        x = vi.step(x, rho + 0.01)  # moving, on the constraint manifold
        return vi, x, rho + 0.02
    raise SystemExit(f"unknown model {name!r} (pendulum, panda, marionette)")


def run(name: str, rounds: int) -> dict:
    from vi_control.linearization import linearize, second_order, second_order_contraction

    t = time.perf_counter()
    vi, x, u = setup(name)
    build = time.perf_counter() - t
    r = vi.solve(x, u)
    t = time.perf_counter()
    lin = linearize(vi, x, u, r)
    second_order_contraction(vi, x, u, np.ones(vi.nx), r)
    lazy = time.perf_counter() - t
    J_fd = fd_jacobian(vi, x, u)
    J = np.hstack([lin.A, lin.B])
    err = np.linalg.norm(J - J_fd) / np.linalg.norm(J_fd)
    cov = np.random.default_rng(1).normal(size=vi.nx)
    row = dict(
        model=name,
        nq=vi.nq,
        nx=vi.nx,
        nu=vi.nu,
        nc=vi.nc,
        build=build,
        lazy=lazy,
        fd_err=err,
        compiled=vi.functions.compiled("linearize"),
    )
    row.update(
        interleaved_best_ms(
            {
                "step": lambda: vi.solve(x, u),
                "fd": lambda: fd_jacobian(vi, x, u),
                "first": lambda: linearize(vi, x, u, r),
                "contraction": lambda: second_order_contraction(vi, x, u, cov, r),
                "full": lambda: second_order(vi, x, u, r),
            },
            rounds,
        )
    )
    return row


def table(rows: list[dict]) -> str:
    out = [
        "| model | nq / nx / nu / nc | step | FD [A B] | first order | FD ÷ first | contraction "
        "| full tensor | ‖J−J_fd‖/‖J_fd‖ |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        out.append(
            f"| {r['model']} | {r['nq']} / {r['nx']} / {r['nu']} / {r['nc']} | {r['step']:.3f} | "
            f"{r['fd']:.2f} | {r['first']:.3f} | **{r['fd'] / r['first']:.0f}×** | {r['contraction']:.3f} | "
            f"{r['full']:.1f} | {r['fd_err']:.1e} |"
        )
    out.append(
        f"| Johnson2015 marionette (2011 i7, C) | 40 / 80 / 18 / 6 | {PAPER_MS['step']} | – | "
        f"{PAPER_MS['first']} | – | – | {PAPER_MS['full']} | – |"
    )
    out.append("")
    out.append(
        f"ms per time step, fastest of the rounds, OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}. "
        "Build (s): "
        + ", ".join(
            f"{r['model']} construction {r['build']:.1f} + first derivative call (lazy C build) {r['lazy']:.1f}"
            f"{'' if r['compiled'] else ' (CasADi VM: not compiled)'}"
            for r in rows
        )
    )
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="panda,marionette")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--cold", action="store_true", help="empty VI_CONTROL_CACHE: measure gcc time too")
    args = ap.parse_args()
    if args.cold:
        os.environ["VI_CONTROL_CACHE"] = tempfile.mkdtemp(prefix="vi_cold_")
    rows = []
    for name in args.models.split(","):
        rows.append(run(name, args.rounds))
        print(f"{name}: done", file=sys.stderr, flush=True)
    print(table(rows))


if __name__ == "__main__":
    main()
