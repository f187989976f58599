"""vi_control: simulate, plan and control robots with variational integrators (flat public API).

    import vi_control as vc
    robot = vc.load_robot(vc.ModelSpec.parse("pendulum"))        # or vc.load_bundled("pendulum")
    vi = vc.MidpointVI(robot, dt=0.1)
    plan, result = vc.plan_task(vi, vc.load_task("task_pendulum_swingup"))
    body = vc.load_rigid_body("vehicle_uuv")                      # Jimenez2013: a rigid body on SE(3)
    plan, dmoc = vc.plan_maneuver(vc.make_integrator("lie_group", body, 0.25), goal_pose, horizon=40)  # T = N·dt
    l1 = vc.solve_l1(vc.DMOCProblem(vc.load_rigid_body("spacecraft_l1"), R0, RT, 40, 6.0))   # Jimenez2013, §6.2

Everything here is numerical and imports no ROS; the nodes live in ``vi_control.ros``.
"""

import sys as _sys

from .control import (
    HoldLaw,
    Plan,
    PlanError,
    PlanFileError,
    StateEstimator,
    TrackingController,
    dlqr,
    equilibrium_state,
    hold_gain,
    holding_input,
    state_error,
    tv_lqr,
)
from .integrators import (
    ConvergenceError,
    DiscreteSystem,
    Linearizable,
    NewtonSettings,
    SingularityError,
    State,
    StepError,
    StepResult,
    UntrustedStepError,
    make_integrator,
)
from .integrators.gni import GeometricNonholonomicIntegrator
from .integrators.lie_group import LieGroupVI
from .integrators.linear_time import LinearTimeVI
from .integrators.midpoint import MidpointVI
from .integrators.rdp import ReducedDAlembertPontryagin
from .integrators.stops import JointStops
from .linearization import Linearization, linearize, linearize_trajectory, second_order, second_order_contraction
from .model import ModelError, ModelSpec, RobotModel, SystemConfigError, URDFError, load_robot
from .model.bundled import BUNDLED, load_bundled
from .model.errors import removed_name
from .model.rigid_body import RigidBodyConfigError, RigidBodyModel, load_rigid_body
from .planning import (
    MPCSettings,
    OptimizerResult,
    PlanningError,
    QuadraticTrackingCost,
    RecedingHorizon,
    Task,
    TaskError,
    ddp,
    load_task,
    make_system,
    plan_task,
    simulate_plan,
)
from .planning.dmoc import DMOCProblem, DMOCResult, solve_dmoc
from .planning.dmoc_check import SecondOrderCheck
from .planning.dmoc_nlp import IpoptResult, solve_ipopt, solve_l1
from .planning.result import SolverResult
from .planning.vehicle import plan_maneuver

__all__ = [
    "load_robot",
    "load_bundled",
    "BUNDLED",
    "ModelSpec",
    "RobotModel",
    "ModelError",
    "URDFError",
    "SystemConfigError",
    "DiscreteSystem",
    "Linearizable",
    "State",
    "NewtonSettings",
    "StepResult",
    "StepError",
    "ConvergenceError",
    "SingularityError",
    "UntrustedStepError",
    "make_integrator",
    "MidpointVI",
    "LinearTimeVI",
    "GeometricNonholonomicIntegrator",
    "ReducedDAlembertPontryagin",
    "LieGroupVI",
    "JointStops",
    "load_rigid_body",
    "RigidBodyModel",
    "RigidBodyConfigError",
    "DMOCProblem",
    "DMOCResult",
    "solve_dmoc",
    "SecondOrderCheck",
    "solve_ipopt",
    "solve_l1",
    "IpoptResult",
    "plan_maneuver",
    "Linearization",
    "linearize",
    "linearize_trajectory",
    "second_order",
    "second_order_contraction",
    "Plan",
    "PlanError",
    "PlanFileError",
    "state_error",
    "tv_lqr",
    "dlqr",
    "equilibrium_state",
    "holding_input",
    "hold_gain",
    "TrackingController",
    "StateEstimator",
    "Task",
    "TaskError",
    "load_task",
    "plan_task",
    "make_system",
    "ddp",
    "QuadraticTrackingCost",
    "OptimizerResult",
    "SolverResult",
    "simulate_plan",
    "PlanningError",
    "RecedingHorizon",
    "MPCSettings",
    "HoldLaw",
]


# Removed modules and names and what replaced them: an ImportError naming the replacement for one release.
_REMOVED = {"robots": "vi_control.model.bundled (bundled_urdf, load_bundled, BUNDLED) or vi_control.load_robot"}


class _RemovedModuleFinder:
    """``import vi_control.robots`` (a removed module) raises the ImportError naming its replacement."""

    @staticmethod
    def find_spec(fullname: str, path=None, target=None):
        head, _, tail = fullname.partition(".")
        if head == __name__ and tail in _REMOVED:
            raise removed_name(fullname, _REMOVED[tail])
        return None


if not any(isinstance(f, _RemovedModuleFinder) for f in _sys.meta_path):
    _sys.meta_path.append(_RemovedModuleFinder())


def __getattr__(name: str):
    if name in _REMOVED:
        raise removed_name(f"{__name__}.{name}", _REMOVED[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
