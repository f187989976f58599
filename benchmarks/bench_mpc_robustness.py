"""Robustness of MPC against TV-LQR tracking and an oracle: ``vi_sweep robustness --controller tvlqr|mpc|oracle``.

The bundled pendulum sweep (task_pendulum_swingup_bounded under config/sweep_pendulum.yaml: ±20 % mass, damping,
±10 % actuator gain, sensor noise, start offsets) and the same kind of sweep of the cart-pole swing-up
(``CARTPOLE_SWEEP``), each run by three controllers on the same samples (same seed):

- ``tvlqr``: the task's plan on the nominal model tracked by its TV-LQR gains;
- ``mpc``: the task re-planned on the nominal model every ``mpc.period`` (``MPC``: the settings per task), each
  cycle's measured solve time its delay (sweep.rollout.mpc_closed_loop);
- ``oracle``: the task planned on each sample's true plant from its true start under the torque its actuator
  really delivers, then tracked: a sample the oracle fails is infeasible for a plan of this task, so MPC's failures
  beyond the oracle's are the controller's.

Writes benchmarks/results/mpc_robustness.md (success rates with Wilson 95 % intervals, per-sample agreement) and
docs/mpc_robustness.png (success against the mass scale, the three side by side).

Usage: .venv/bin/python benchmarks/bench_mpc_robustness.py [--samples 64] [--serial] [--tasks pendulum cartpole]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from vi_control.planning import load_task  # noqa: E402
from vi_control.sweep.robustness import robustness_sweep, wilson_interval  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
FIGURE = ROOT / "docs" / "mpc_robustness.png"
CONTROLLERS = ("tvlqr", "mpc", "oracle")
CARTPOLE_SWEEP = {
    "samples": 64,
    "seed": 0,
    "success": {"tolerance": 0.05, "hold_time": 2.0, "clamp": True},
    "perturbations": {
        "mass_scale": [0.8, 1.2],
        "damping": [0.0, 0.05],
        "actuator_gain": [0.9, 1.1],
        "sensor_noise": [0.0, 0.005],
        "q0_offset": [-0.05, 0.05],
        "qdot0_offset": [-0.1, 0.1],
    },
}
# task name, sweep config, the task's mpc: section for the MPC runs (a deadline: the horizon shrinks toward it)
CASES = {
    "pendulum": (
        "task_pendulum_swingup_bounded",
        str(ROOT / "config" / "sweep_pendulum.yaml"),
        {"period": 0.1, "shrinking": True, "min_horizon": 20, "max_iterations": 20},
    ),
    "cartpole": (
        "task_cartpole_swingup",
        CARTPOLE_SWEEP,
        {"period": 0.2, "shrinking": True, "min_horizon": 30, "max_iterations": 20},
    ),
}
# (the cart-pole's windows past its deadline stay 1.5 s long: at 0.5 s (min_horizon 10) the terminal constraint
# over so short a window overreached and MPC held fewer samples than TV-LQR, 23 of 64 against 30)


def run_case(name: str, samples: int, backend: str = "ray", log=print) -> dict:
    """The three controllers on ``samples`` samples of case ``name``: {controller: records by sample}."""
    task_name, config, mpc = CASES[name]
    task = dataclasses.replace(load_task(task_name), mpc=mpc)
    out = {}
    for c in CONTROLLERS:
        res = robustness_sweep(
            task, config, samples=samples, backend=backend, progress=False, plot=False, log=lambda s: None, controller=c
        )
        out[c] = {r["sample"]: r for r in res.records}
        log(f"[bench_mpc_robustness] {name} {c}: {sum(r['success'] for r in res.records)}/{len(res.records)}")
    return out


def summary(runs: dict) -> dict:
    """Per controller: successes, n, Wilson interval; and the samples MPC fails that the oracle swings up."""
    n = len(runs["oracle"])
    rows = {}
    for c in CONTROLLERS:
        k = sum(bool(r["success"]) for r in runs[c].values())
        rows[c] = dict(k=k, n=n, rate=k / n, ci=wilson_interval(k, n))
    feasible = [s for s, r in runs["oracle"].items() if r["success"]]
    rows["mpc_of_feasible"] = sum(bool(runs["mpc"][s]["success"]) for s in feasible) / max(1, len(feasible))
    rows["mpc_fails_oracle_holds"] = sorted(s for s in feasible if not runs["mpc"][s]["success"])
    rows["mpc_solve_p50"] = float(np.median([r["solve_p50"] for r in runs["mpc"].values() if "solve_p50" in r]))
    return rows


def table(summaries: dict) -> str:
    out = [
        "| sweep | samples | TV-LQR | MPC | oracle (true plant) | MPC on the oracle's feasible samples | "
        "MPC cycle solve p50 [ms] |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, s in summaries.items():
        cells = [
            f"{100 * s[c]['rate']:.0f} % [{100 * s[c]['ci'][0]:.0f}, {100 * s[c]['ci'][1]:.0f}]" for c in CONTROLLERS
        ]
        out.append(
            f"| {name} | {s['tvlqr']['n']} | "
            + " | ".join(cells)
            + f" | {100 * s['mpc_of_feasible']:.0f} % | {1e3 * s['mpc_solve_p50']:.1f} |"
        )
    return "\n".join(out)


def plot(all_runs: dict, path: Path) -> None:
    """Success against the sampled mass scale (bins), one panel per sweep, the three controllers side by side."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(all_runs), figsize=(5.5 * len(all_runs), 3.6), squeeze=False)
    edges = np.linspace(0.8, 1.2, 5)
    for ax, (name, runs) in zip(axes[0], all_runs.items()):
        centers = 0.5 * (edges[1:] + edges[:-1])
        for i, c in enumerate(CONTROLLERS):
            m = np.array([r["params"]["mass_scale"] for r in runs[c].values()])
            ok = np.array([bool(r["success"]) for r in runs[c].values()])
            idx = np.clip(np.digitize(m, edges) - 1, 0, len(centers) - 1)
            rate = [ok[idx == b].mean() if np.any(idx == b) else np.nan for b in range(len(centers))]
            ax.bar(
                centers + (i - 1) * 0.025,
                rate,
                width=0.025,
                label={"tvlqr": "TV-LQR", "mpc": "MPC", "oracle": "oracle"}[c],
            )
        ax.set_xlabel("plant mass scale (sampled)")
        ax.set_ylabel("success rate")
        ax.set_ylim(0, 1.05)
        ax.set_title(f"{name}: {len(runs['oracle'])} samples")
        ax.legend(loc="lower left", fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=64)
    ap.add_argument("--serial", action="store_true", help="no Ray: one process")
    ap.add_argument("--tasks", nargs="+", default=list(CASES))
    ap.add_argument("--figure", default=str(FIGURE))
    a = ap.parse_args()
    all_runs = {name: run_case(name, a.samples, "serial" if a.serial else "ray") for name in a.tasks}
    summaries = {name: summary(runs) for name, runs in all_runs.items()}
    text = (
        "# MPC robustness (benchmarks/bench_mpc_robustness.py)\n\nSuccess rate [Wilson 95 %] of the same samples "
        "under each controller; the oracle plans on each sample's true plant.\n\n" + table(summaries) + "\n"
    )
    for name, s in summaries.items():
        text += f"\n{name}: samples MPC fails that the oracle holds: {s['mpc_fails_oracle_holds']}\n"
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "mpc_robustness.md").write_text(text)
    plot(all_runs, Path(a.figure))
    print(text)


if __name__ == "__main__":
    main()
