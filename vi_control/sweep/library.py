"""Plan libraries: one task planned over a list or grid of goals, every plan saved (Plan .npz) with an index.

``plan_library(task, goals, out_dir)`` sends the task *mapping* and one goal per task to the workers
(engine.run_tasks); each returns its Plan, which the driver writes to ``plans/goal_NNNN.npz`` as it arrives
(then the record to results.jsonl, so a record always has its file and an interrupted run resumes).
``index.json`` lists goal, file, converged, iterations, cost and the distance of the plan's end from its goal.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..model.yaml_io import load_yaml, read_text_file
from ..planning.task import TaskError, config_file, load_task
from .config import SweepConfigError, load_library_goals
from .engine import ResultStore, RunStats, run_tasks
from .rollout import SweepError, cached_system, library_plan, portable_spec


@dataclass
class LibraryResult:
    index: list[dict]
    stats: RunStats
    out_dir: Path


def task_mapping(task: str | dict) -> tuple[dict, str | None]:
    """The raw task mapping (what travels to workers) and the directory its relative paths refer to."""
    if isinstance(task, dict):
        return dict(task), None
    load_task(task)  # validates (a missing file is a TaskError naming it)
    path = config_file(task) if "\n" not in task and ":" not in task else None
    if path is None:  # YAML text
        return load_yaml(task), None  # (load_task above has already refused what this loader would)
    return load_yaml(read_text_file(path, "task", TaskError)), os.path.dirname(os.path.abspath(path))


def plan_library(
    task: str | dict,
    goals: str | dict | list,
    out_dir: str | Path,
    *,
    backend: str = "ray",
    address: str | None = None,
    num_cpus: int | None = None,
    max_retries: int = 3,
    progress: bool = True,
    on_result=None,
) -> LibraryResult:
    """Plan ``task`` for every goal (a list of configurations, or a library YAML with goals/grid)."""
    mapping, base_dir = task_mapping(task)
    ref = mapping.get("reference") or {}
    if isinstance(ref, dict) and "q_after" in ref:
        raise TaskError("reference.q_after: a library sets the goal per plan; remove q_after from the task")
    task0 = load_task(mapping)
    if base_dir is not None:
        task0.base_dir = base_dir
    spec = portable_spec(task0.model_spec)
    vi = cached_system(spec, task0.dt)
    default_goal = task0.goal_q if task0.goal_q is not None else np.zeros(vi.nq)
    if isinstance(goals, list):
        goals = {"goals": goals}
    goal_list = load_library_goals(goals, vi.robot.joint_names, default_goal)
    out_dir = Path(out_dir)
    (out_dir / "plans").mkdir(parents=True, exist_ok=True)
    header = {
        "kind": "library",
        "task": json.loads(json.dumps(mapping, default=str)),
        "goals": goal_list,
        "model": vi.robot.hash,
    }
    store = ResultStore(out_dir / "results.jsonl", header)

    def save(rec: dict) -> dict:
        plan = rec.pop("plan", None)
        if plan is not None:
            name = f"plans/goal_{rec['key']:04d}.npz"
            plan.save(str(out_dir / name))
            rec["file"] = name
        if on_result is not None:
            rec = on_result(rec) or rec
        return rec

    items = [(i, {"index": i, "goal": g}) for i, g in enumerate(goal_list)]
    shared = {"task": mapping, "spec": spec}
    try:
        stats = run_tasks(
            library_plan,
            items,
            shared,
            store=store,
            backend=backend,
            address=address,
            num_cpus=num_cpus,
            max_retries=max_retries,
            progress=progress,
            label="vi_sweep library",
            on_result=save,
        )
    finally:
        store.close()
    index = [
        {
            k: r.get(k)
            for k in (
                "key",
                "goal",
                "file",
                "converged",
                "iterations",
                "cost",
                "stop_reason",
                "final_goal_error",
                "error",
            )
        }
        for r in stats.records
    ]
    (out_dir / "index.json").write_text(
        json.dumps({"task": task0.name, "model": task0.model_name, "plans": index}, indent=1)
    )
    return LibraryResult(index, stats, out_dir)


__all__ = ["plan_library", "LibraryResult", "SweepConfigError", "SweepError"]
