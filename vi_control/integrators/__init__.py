"""Integrators: discrete systems x_{k+1} = f(x_k, u_k) behind one interface (``base.DiscreteSystem``).

``MidpointVI`` (Johnson2015, ``Linearizable``), ``LinearTimeVI`` (Lee2016), the geometric nonholonomic
integrator ``GeometricNonholonomicIntegrator`` (Kobilarov2010, ``Linearizable``) and ``LieGroupVI`` (Jimenez2013: one
rigid body on SO(3)/SE(3), ``Linearizable``), selectable by name with ``make_integrator`` — the one factory
every entry point (task pipeline, ROS nodes, scripts) uses.
"""

from __future__ import annotations

from ..model.rigid_body import RigidBodyModel
from ..model.robot import RobotModel
from .base import (
    ConfigurationMomentumState,
    ConvergenceError,
    DiscreteSystem,
    Linearizable,
    NewtonSettings,
    SingularityError,
    State,
    StepDerivatives,
    StepError,
    StepResult,
    UntrustedStepError,
)

INTEGRATORS = ("midpoint", "linear_time", "gni", "lie_group")

__all__ = [
    "INTEGRATORS",
    "make_integrator",
    "require_linearizable",
    "DiscreteSystem",
    "Linearizable",
    "State",
    "ConfigurationMomentumState",
    "NewtonSettings",
    "StepResult",
    "StepDerivatives",
    "StepError",
    "ConvergenceError",
    "SingularityError",
    "UntrustedStepError",
]


def make_integrator(name: str, robot: RobotModel | RigidBodyModel, dt: float, **options) -> DiscreteSystem:
    """The integrator called ``name`` ('midpoint', 'linear_time', 'gni' or 'lie_group') for ``robot`` at time
    step ``dt``; ``options`` go to its constructor (e.g. ``settings=NewtonSettings(...)``, ``method='riqn'``,
    ``retraction='exp'``). 'lie_group' takes a RigidBodyModel (``model.rigid_body``), the others a RobotModel."""
    wanted = RigidBodyModel if name == "lie_group" else RobotModel
    if name in INTEGRATORS and not isinstance(robot, wanted):  # (a model's name gave "'str' object has no attribute")
        how = "vc.load_rigid_body(...)" if name == "lie_group" else "vc.load_robot(...)"
        raise TypeError(
            f"make_integrator({name!r}): the model must be a {wanted.__name__} ({how}), "
            f"got {type(robot).__name__} {robot!r:.60}"
        )
    if name == "midpoint":
        from .midpoint import MidpointVI

        return MidpointVI(robot, dt, **options)
    if name == "linear_time":
        from .linear_time import LinearTimeVI

        return LinearTimeVI(robot, dt, **options)
    if name == "gni":
        from .gni import GeometricNonholonomicIntegrator

        return GeometricNonholonomicIntegrator(robot, dt, **options)
    if name == "lie_group":
        from .lie_group import LieGroupVI

        return LieGroupVI(robot, dt, **options)
    raise ValueError(f"unknown integrator {name!r}; choose one of {INTEGRATORS}")


# Classes whose instances passed: a runtime Protocol check inspects every member (~40 µs a call, twice per plan).
# Not classes that compute attributes per instance (__getattr__: a wrapper may hide the derivatives).
_LINEARIZABLE_CLASSES: set[type] = set()


def require_linearizable(system: DiscreteSystem, who: str = "this planner") -> None:
    """Raise TypeError, naming the system, if it does not provide exact derivatives (``Linearizable``)."""
    if type(system) in _LINEARIZABLE_CLASSES:
        return
    if isinstance(system, Linearizable):
        cls = type(system)
        if not hasattr(cls, "__getattr__") and cls.__getattribute__ is object.__getattribute__:
            _LINEARIZABLE_CLASSES.add(cls)
    else:
        raise TypeError(
            f"{who} needs the exact linearization of the step, which {type(system).__name__} does not "
            "provide (it is not Linearizable); use the midpoint integrator"
        )
