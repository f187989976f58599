"""``vi_sweep``: robustness sweeps and plan libraries from the command line (docs/concepts/sweep.md).

    vi_sweep robustness --task task_pendulum_swingup --config sweep.yaml --out out/sweep
    vi_sweep robustness --plan plan.npz --model pendulum --config sweep.yaml --out out/sweep
    vi_sweep library --task task_pendulum_swingup --goals goals.yaml --out out/library

A local Ray instance with this machine's CPUs by default; ``--address`` joins a running cluster
(``auto``: the one ``ray start`` made on this node); ``--serial`` runs in this process (same results).
Re-running with the same ``--out`` resumes: finished tasks are read from results.jsonl, not run again.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from ..model.errors import ModelError
from ..planning.task import TaskError
from .config import SweepConfigError


def _common(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--out", required=True, help="output directory (results.jsonl is resumed if present)")
    ap.add_argument("--address", default=None, help="Ray cluster address (default: a new local instance)")
    ap.add_argument("--num-cpus", type=int, default=None, help="CPUs of the local Ray instance (default: all)")
    ap.add_argument("--serial", action="store_true", help="no Ray: run every task in this process")
    ap.add_argument("--max-retries", type=int, default=3, help="re-runs of a task whose worker died")
    ap.add_argument("--no-progress", action="store_true", help="no progress bar")


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="vi_sweep", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("robustness", help="closed-loop success under sampled model perturbations and noise")
    r.add_argument("--task", help="task YAML (path or a name in the package's config/)")
    r.add_argument("--plan", help="a saved plan (.npz); planned from --task if absent")
    r.add_argument(
        "--model",
        help="the plan's model (bundled name, erd:<name>, URDF path); default: the task's or the plan's model name",
    )
    r.add_argument("--config", help="perturbation YAML (docs/concepts/sweep.md); default: no perturbation")
    r.add_argument("--samples", type=int, default=None, help="override the config's samples")
    r.add_argument("--seed", type=int, default=None, help="override the config's seed")
    r.add_argument(
        "--controller",
        choices=("tvlqr", "mpc", "oracle"),
        default="tvlqr",
        help="tvlqr: the plan tracked by TV-LQR; mpc: the task re-planned every mpc.period (each cycle's "
        "solve time its delay); oracle: planned on each sample's true plant (infeasible samples)",
    )
    r.add_argument("--no-plot", action="store_true")
    _common(r)
    lib = sub.add_parser("library", help="plan a task over a list or grid of goals; save every plan")
    lib.add_argument("--task", required=True, help="task YAML (path or a name in the package's config/)")
    lib.add_argument("--goals", required=True, help="library YAML: goals (list) or grid (joint -> values)")
    _common(lib)
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if os.path.exists(args.out) and not os.path.isdir(args.out):
        print(f"vi_sweep: error: --out {args.out!r} exists and is not a directory", file=sys.stderr)
        return 2
    backend = "serial" if args.serial else "ray"
    opts = dict(
        out_dir=args.out,
        backend=backend,
        address=args.address,
        num_cpus=args.num_cpus,
        max_retries=args.max_retries,
        progress=not args.no_progress,
    )
    try:
        if args.command == "robustness":
            from .report import summary_table
            from .robustness import robustness_sweep

            res = robustness_sweep(
                args.task,
                args.config,
                plan=args.plan,
                model=args.model,
                samples=args.samples,
                seed=args.seed,
                plot=not args.no_plot,
                controller=args.controller,
                **opts,
            )
            print(summary_table(res.summary))
            st = res.stats
            print(
                f"[vi_sweep] {st.computed} rollouts run, {st.resumed} resumed; Ray start-up {st.startup_s:.1f} s, "
                f"sweep {st.run_s:.1f} s ({st.backend}); results in {args.out}"
            )
            if res.summary["samples"] and res.summary["errors"] == res.summary["samples"]:
                print(
                    f"vi_sweep: error: every sample failed to run: {res.summary['error_messages'][:1]}", file=sys.stderr
                )
                return 1
        else:
            from .library import plan_library

            out = opts.pop("out_dir")
            res = plan_library(args.task, args.goals, out, **opts)
            conv = sum(bool(p["converged"]) for p in res.index)
            print(
                json.dumps(
                    {
                        "plans": len(res.index),
                        "converged": conv,
                        "errors": res.stats.errors,
                        "index": f"{out}/index.json",
                    }
                )
            )
    except (SweepConfigError, TaskError, ModelError, ValueError, OSError) as e:
        print(f"vi_sweep: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
