"""``NewtonSettings``: the stopping rule of every integrator's root solve (re-exported by ``integrators.base``)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from ..model.scalars import is_integer, is_real


@dataclass(frozen=True)
class NewtonSettings:
    """Stopping rule of every integrator's root solve (one rule, used by the Python and the C loops).

    A step is accepted when the residual's ∞-norm is at most ``max(tol·(p₁ + |p_k|∞), floor)``, where p₁ =
    ``momentum_scale`` is the momentum the model has at unit velocity, capped at 1 (``for_model``: each integrator
    sets it from its model). Below unit scale the rule does not depend on the unit of mass: a model with every mass
    × s steps to the same q with p × s (test_integrator_units.py); under an absolute rule (p₁ = 1, also what None
    means) a model of milligram links (momenta ~1e-6) would stop at a relative error ~1e-6 per step. The cap keeps
    the absolute rule for heavier models: uncapped, a 10-link chain (p₁ = 333) would stop at 3e-10 instead of
    1e-10 and its chord and exact roots drift apart by that much. And
    ``floor`` is the residual's rounding floor ``64·eps·‖J‖₁·(1 + |q_k|∞)`` when the Jacobian J is known
    (``rounding_floor``): R contains q_{k+1} − q_k multiplied by M/Δt, so the rounding of configurations of
    size |q_k| alone leaves ~eps·‖J‖·|q_k| (long chains at small Δt, or joints that turned many times). The
    floor is the configuration's *before* the step: measured from the root Newton wandered to (|y|), it would
    grow with the garbage and excuse it (a chain at p = 1e8 was accepted at a residual of
    2.7e4). ``step_tol`` (relative to 1 + |y|∞) ends iterations whose updates have stopped contracting: the
    residual is then judged by the same rule. With constraints the residual's rows h(q_{k+1}) (length; the GNI's
    velocity rows) count × 2^{2e}, the bordered matrix's equilibration (``integrators.bordered``): in momentum, as
    the rule is. ``rcond_min`` is the reciprocal condition below which the Newton matrix counts as singular (with
    constraints: the equilibrated one's, whose condition does not change with the unit of mass).
    ``max_iterations`` bounds every loop. ``max_rotation`` [rad, default π]: a dynamic
    revolute joint turning more in one step is refused (UntrustedStepError). Half a turn per step is the sampling
    limit of a rotation — beyond it sampled angles alias (the controller's state estimate takes joint increments
    modulo 2π) — and there the DEL equations have further roots whole turns apart, which chord and exact Newton
    reached differently (hundreds of radians apart on a 10-link chain at p ~ 1e4). (A 1 rad limit also refused
    the exploratory rollouts of the acrobot swing-up's DDP, which then failed to converge.) Joints whose angle the
    equations do not see — a wheel on its axle (model.mass_structure.spin_invariant_joints) — have one root
    however far they turn and are exempt.
    """

    tol: float = 1e-12
    max_iterations: int = 30
    rcond_min: float = 1e-13
    step_tol: float = 1e-15
    max_rotation: float = math.pi
    momentum_scale: float | None = None

    def __post_init__(self) -> None:
        for name in ("tol", "rcond_min", "step_tol", "max_rotation", "momentum_scale"):
            v = getattr(self, name)
            if v is None and name == "momentum_scale":
                continue
            if not (is_real(v) and math.isfinite(v) and v > 0):
                raise ValueError(f"NewtonSettings.{name} must be a positive finite number, got {v!r}")
        if not is_integer(self.max_iterations) or not 1 <= self.max_iterations <= 10_000:
            raise ValueError(
                f"NewtonSettings.max_iterations must be an integer in [1, 10000], got {self.max_iterations!r}"
            )

    @staticmethod
    def rounding_floor(jacobian_norm1: float, q_norm_inf: float) -> float:
        """The residual configurations of size |q_k|∞ leave after rounding: 64·eps·‖J‖₁·(1 + |q_k|∞)."""
        return 64.0 * np.finfo(float).eps * jacobian_norm1 * (1.0 + q_norm_inf)

    def for_model(self, unit_momentum: float) -> NewtonSettings:
        """These settings with ``momentum_scale`` = min(1, ``unit_momentum``) (the model's momentum at unit
        velocity, ``model.mass_structure.unit_momentum``; 1 if it is not a positive number) unless it is set."""
        if self.momentum_scale is not None:
            return self
        p1 = min(1.0, float(unit_momentum)) if math.isfinite(unit_momentum) and unit_momentum > 0 else 1.0
        return replace(self, momentum_scale=p1)

    @property
    def p_unit(self) -> float:
        """p₁ of the stopping rule: ``momentum_scale``, 1 when unset."""
        return 1.0 if self.momentum_scale is None else float(self.momentum_scale)

    def scale(self, momentum_norm_inf: float) -> float:
        """p₁ + |p_k|∞: the momentum the residual is measured against."""
        return self.p_unit + momentum_norm_inf

    def tolerance(self, momentum_norm_inf: float, floor: float = 0.0) -> float:
        """The residual ∞-norm a step must reach: max(tol·(p₁ + |p_k|∞), floor)."""
        return max(self.tol * self.scale(momentum_norm_inf), floor)

    def accepts(self, residual: float, momentum_norm_inf: float, floor: float = 0.0) -> bool:
        """True if ``residual`` meets the tolerance (False for NaN)."""
        return bool(residual <= self.tolerance(momentum_norm_inf, floor))
