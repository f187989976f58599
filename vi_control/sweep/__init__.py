"""Robustness sweeps and plan libraries, run as independent tasks on Ray (local by default) or serially.

Layer: uses planning, control, integrators and model; never ros (no rclpy in a worker). Tasks carry
descriptions (ModelSpec, task mappings, plan arrays), each worker builds and keeps the compiled models it
needs. ``robustness_sweep`` and ``plan_library`` are the Python API of the ``vi_sweep`` command.
"""

from .config import RobustnessConfig, SweepConfigError, load_library_goals, load_robustness_config
from .engine import ResultStore, RunStats, ray_session, run_tasks
from .library import LibraryResult, plan_library
from .robustness import RobustnessResult, robustness_sweep, summarize
from .rollout import SweepError, closed_loop

__all__ = [
    "RobustnessConfig",
    "SweepConfigError",
    "load_library_goals",
    "load_robustness_config",
    "ResultStore",
    "RunStats",
    "ray_session",
    "run_tasks",
    "LibraryResult",
    "plan_library",
    "RobustnessResult",
    "robustness_sweep",
    "summarize",
    "SweepError",
    "closed_loop",
]
