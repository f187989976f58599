"""Robustness sweep: how much model error and noise the TV-LQR closed loop of one plan survives.

``robustness_sweep(task=..., config=...)`` plans the task once (or loads a saved plan), draws N perturbations
of the plant (config.RobustnessConfig), runs every closed loop as a task (engine.run_tasks: Ray or serial),
and summarises success rate, final-error and peak-torque distributions and which parameters matter most
(Spearman rank correlation with the final error). With ``out_dir``: results.jsonl (resumable), summary.json
and robustness.png.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

from ..control.plan import Plan
from ..model.spec import ModelSpec
from ..planning.pipeline import plan_task
from ..planning.task import Task, load_task
from .config import VECTOR_PARAMETERS, RobustnessConfig, load_robustness_config, parameter_value
from .engine import ResultStore, RunStats, run_tasks
from .report import plot_robustness
from .rollout import SweepError, cached_system, portable_spec, robustness_sample, start_pair


@dataclass
class RobustnessResult:
    records: list[dict]
    summary: dict
    stats: RunStats
    config: RobustnessConfig
    plan: Plan


CONTROLLERS = ("tvlqr", "mpc", "oracle")


def plan_digest(plan: Plan) -> str:
    """Content hash of a plan's numbers (the results header ties a results file to one plan)."""
    h = hashlib.sha256()
    for a in (plan.X, plan.U, plan.K, plan.K_final, plan.U_final):
        if a is not None:
            h.update(np.ascontiguousarray(a, float).tobytes())
    h.update(repr(plan.dt).encode())
    return h.hexdigest()[:16]


def resolve_nominal(
    task: str | dict | Task | None, plan: str | Plan | None, model: str | ModelSpec | None, log=print
) -> tuple[ModelSpec, Plan, Task | None]:
    """(portable model spec, plan, task) from a task and/or a saved plan; a plan made for another model
    (hash mismatch) is refused."""
    if task is None and plan is None:
        raise SweepError("give a task (YAML) or a saved plan (.npz)")
    if task is not None and not isinstance(task, Task):
        task = load_task(task)
    if isinstance(plan, (str, Path)):
        plan = Plan.load(str(plan))
    if model is not None:
        spec = ModelSpec.parse(model)
    elif task is not None:
        spec = task.model_spec
    else:
        spec = ModelSpec.parse(plan.model_name)  # a bundled or erd name; else --model is needed
    spec = portable_spec(spec)
    if plan is None:
        vi = cached_system(spec, task.dt)
        plan, res = plan_task(vi, task)
        log(f"[vi_sweep] planned {task.name}: {res.method} {res.iterations} it., converged {res.converged}")
    robot_hash = cached_system(spec, plan.dt).robot.hash
    if robot_hash != plan.model_hash:
        raise SweepError(
            f"the plan was made for model hash {plan.model_hash} ({plan.model_name}) but the model "
            f"{spec.describe()} hashes to {robot_hash}: pass the plan's model (--model)"
        )
    return spec, plan, task


def wilson_interval(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95 % Wilson score interval of a success rate k/n (sensible at 0 and n, unlike k/n ± z·σ)."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    c = (p + z * z / (2 * n)) / (1 + z * z / n)
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, c - h), min(1.0, c + h)


def _percentiles(a: np.ndarray) -> dict:
    if a.size == 0:
        return {}
    return {f"p{q}": float(np.percentile(a, q)) for q in (50, 90, 95)} | {"max": float(a.max())}


def summarize(records: list[dict], cfg: RobustnessConfig, nq: int, effort_limits=None) -> dict:
    """Success rate (with its Wilson interval), final-error and peak-torque distributions, failure reasons,
    and the parameters ranked by |Spearman ρ| with the final error."""
    ok = [r for r in records if "error" not in r]
    n_succ = sum(r["success"] for r in ok)
    err = np.array([r["final_error"] for r in ok], float)
    finite = err[np.isfinite(err)]
    peaks = np.array([r["peak_torque"] for r in ok], float).reshape(len(ok), -1) if ok else np.zeros((0, 0))
    importance = {}
    for name in cfg.varied(nq):
        x = np.array([parameter_value(r, name) for r in ok])
        rho = spearmanr(x, err).statistic if len(ok) > 2 and len(set(err.tolist())) > 1 else 0.0
        importance[name] = 0.0 if not np.isfinite(rho) else float(rho)
    ranked = sorted(importance, key=lambda k: -abs(importance[k]))
    reasons: dict[str, int] = {}
    for r in ok:
        if not r["success"]:
            why = (r["failure"] or "final error above tolerance").split(":")[0]
            reasons[why] = reasons.get(why, 0) + 1
    lo, hi = wilson_interval(n_succ, len(ok))
    return {
        "samples": len(records),
        "errors": len(records) - len(ok),
        "successes": int(n_succ),
        # (no sample ran: every one an error — 0, not NaN; ``errors`` = ``samples`` tells such a sweep apart)
        "success_rate": n_succ / len(ok) if ok else 0.0,
        "success_rate_95ci": [lo, hi],
        "tolerance": cfg.tolerance,
        "final_error": _percentiles(finite),
        "diverged_or_failed_steps": int(np.sum(~np.isfinite(err))),
        "peak_torque": [_percentiles(peaks[:, j]) for j in range(peaks.shape[1])] if len(ok) else [],
        "effort_limits": None if effort_limits is None else [float(v) for v in effort_limits],
        "failure_reasons": reasons,
        "importance": {k: importance[k] for k in ranked},
        "error_messages": sorted({r["error"] for r in records if "error" in r}),
    }


def robustness_sweep(
    task: str | dict | Task | None = None,
    config: str | dict | RobustnessConfig | None = None,
    *,
    plan: str | Plan | None = None,
    model: str | ModelSpec | None = None,
    out_dir: str | Path | None = None,
    samples: int | None = None,
    seed: int | None = None,
    backend: str = "ray",
    address: str | None = None,
    num_cpus: int | None = None,
    max_retries: int = 3,
    progress: bool = True,
    plot: bool = True,
    log=print,
    on_result=None,
    sample_fn=robustness_sample,
    controller: str = "tvlqr",
) -> RobustnessResult:
    """Sample the config's perturbations and run the plan's closed loop for each (module docstring).

    ``controller``: 'tvlqr' (the plan tracked by its TV-LQR gains), 'mpc' (the task re-planned every
    ``mpc.period`` on the nominal model, each cycle's measured solve time as its delay: rollout.mpc_closed_loop) or
    'oracle' (the task planned on each sample's true plant from its true start, under the torque its actuator
    delivers: what no controller of the nominal model can beat — a sample the oracle fails is infeasible).

    ``sample_fn(payload, shared)`` runs one sample (default ``rollout.robustness_sample``; a wrapper may
    instrument it); ``on_result`` sees each record as it arrives (engine.run_tasks)."""
    cfg = config if isinstance(config, RobustnessConfig) else load_robustness_config(config, samples=samples, seed=seed)
    if controller not in CONTROLLERS:
        raise SweepError(f"controller: expected one of {list(CONTROLLERS)}, got {controller!r}")
    spec, plan, task = resolve_nominal(task, plan, model, log)
    if controller != "tvlqr" and task is None:
        raise SweepError(f"controller {controller!r} re-plans the task: give the task (YAML), not only a plan")
    nominal = cached_system(spec, plan.dt)
    nq = nominal.nq
    shared = {
        "spec": spec,
        "plan": plan,
        "q_pair": [list(a) for a in start_pair(nominal, plan.X[0])],
        "task": task,
        "settings": {
            "seed": cfg.seed,
            "hold_time": cfg.hold_time,
            "clamp": cfg.clamp,
            "tolerance": cfg.tolerance,
            "compile_plants": cfg.compile_plants(),
            "controller": controller,
        },
    }
    items = [(i, {"sample": i, "params": cfg.sample(i, nq)}) for i in range(cfg.samples)]
    store = None
    if out_dir is not None:
        out_dir = Path(out_dir)
        header = {
            "kind": "robustness",
            "config": cfg.to_dict(),
            "plan": plan_digest(plan),
            "model": nominal.robot.hash,
            **({"controller": controller} if controller != "tvlqr" else {}),
        }
        store = ResultStore(out_dir / "results.jsonl", header)
    try:
        stats = run_tasks(
            sample_fn,
            items,
            shared,
            store=store,
            backend=backend,
            address=address,
            num_cpus=num_cpus,
            max_retries=max_retries,
            progress=progress,
            label="vi_sweep robustness",
            on_result=on_result,
        )
    finally:
        if store is not None:
            store.close()
    summary = summarize(stats.records, cfg, nq, nominal.robot.effort_limits)
    summary["varied"] = cfg.varied(nq)
    summary["vector_parameters"] = list(VECTOR_PARAMETERS)
    if out_dir is not None:
        (out_dir / "summary.json").write_text(json.dumps(summary, indent=1))
        if plot:
            plot_robustness(stats.records, summary, out_dir / "robustness.png", title=plan.model_name)
    return RobustnessResult(stats.records, summary, stats, cfg, plan)
