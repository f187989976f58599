"""Planning: tasks (YAML schema), the pipeline that turns a task into a Plan, and the optimizers.

Crocoddyl's split: the dynamics is a ``Linearizable`` discrete system, the cost a QuadraticTrackingCost,
the solvers (``ddp``: DDP/iLQR; ``projection_gradient``, ``steepest_descent``: first order) are free
functions over (system, cost).
"""

from .cost import QuadraticTrackingCost, weight_matrix
from .ddp import ddp
from .errors import PlanLimitsError, PlanningError
from .evaluate import simulate_plan, tracking_error
from .gradient import projection_gradient, steepest_descent
from .mpc import MPCSettings, RecedingHorizon, mpc_settings
from .pipeline import initial_inputs, input_limits, make_system, plan_task, reference_trajectory, start_state
from .shooting import OptimizerResult, rollout
from .task import Task, TaskError, load_task

__all__ = [
    "QuadraticTrackingCost",
    "weight_matrix",
    "ddp",
    "projection_gradient",
    "steepest_descent",
    "simulate_plan",
    "tracking_error",
    "OptimizerResult",
    "rollout",
    "Task",
    "TaskError",
    "load_task",
    "plan_task",
    "PlanningError",
    "PlanLimitsError",
    "make_system",
    "start_state",
    "input_limits",
    "reference_trajectory",
    "initial_inputs",
    "RecedingHorizon",
    "MPCSettings",
    "mpc_settings",
]
