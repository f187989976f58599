"""Integrators: the midpoint VI (seed 000) and the linear-time VI (seed 001), selectable by name."""

from __future__ import annotations

from ..model.robot import RobotModel

INTEGRATORS = ("midpoint", "linear_time")


def make_integrator(name: str, robot: RobotModel, dt: float, **options):
    """MidpointVI for 'midpoint', LinearTimeVI for 'linear_time' (options go to the constructor).

    Both share the state x = (q, p), ``step``/``simulate``/``velocity``/``energy``/``last_result``.
    """
    if name == "midpoint":
        from .midpoint import MidpointVI

        return MidpointVI(robot, dt, **options)
    if name == "linear_time":
        from .linear_time import LinearTimeVI

        return LinearTimeVI(robot, dt, **options)
    raise ValueError(f"unknown integrator {name!r}; choose one of {INTEGRATORS}")
