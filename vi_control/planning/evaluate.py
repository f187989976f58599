"""Running a plan: closed loop u = U_k + K_k (X_k − x) (Johnson2015, eq. 37) or open loop u = U_k, on the VI."""

from __future__ import annotations

import numpy as np

from ..control.plan import Plan, state_error
from ..control.tracking import TrackingController
from ..integrators.base import DiscreteSystem, as_vector
from ..model.scalars import is_integer


def simulate_plan(
    vi: DiscreteSystem,
    plan: Plan,
    x0: np.ndarray,
    feedback: bool = True,
    extra_steps: int = 0,
    clamp: bool = False,
    allow_mismatch: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Simulate the plan from x0 with a discrete system (the plant): returns states (N+1+extra, nx) and inputs.

    ``feedback``: the plan's tracking law (TrackingController: TV-LQR gains, then K_final about X_N for
    ``extra_steps`` more steps); otherwise the open-loop inputs U_k (then U_final). ``clamp`` applies
    the model's effort limits to the commanded torques. The plan must have been made for ``vi``'s model and Δt
    (``Plan.check_compatible``); ``allow_mismatch=True`` runs it on a deliberately different model.
    """
    ctl = TrackingController(
        plan,
        vi.state,
        vi.robot.effort_limits if clamp else None,
        n_torques=vi.n_torques,
        system=vi,
        allow_mismatch=allow_mismatch,
    )
    if not is_integer(extra_steps) or extra_steps < 0:
        raise ValueError(f"simulate_plan: extra_steps must be a non-negative integer, got {extra_steps!r}")
    steps = plan.horizon + extra_steps
    X = np.zeros((steps + 1, vi.nx))
    U = np.zeros((steps, vi.nu))
    X[0] = as_vector(vi, x0, vi.nx, "x0")
    for k in range(steps):
        if feedback:
            U[k] = ctl.command(k, X[k])[0]
        else:
            U[k] = ctl.reference(k)[1]
        X[k + 1] = vi.step(X[k], U[k], step_index=k)
    return X, U


def tracking_error(vi: DiscreteSystem, plan: Plan, X: np.ndarray) -> np.ndarray:
    """‖X_k − x_k‖∞ per step (continuous angles modulo 2π) over the plan's horizon."""
    n = min(len(X), len(plan.X))
    return np.abs(state_error(plan.X[:n], X[:n], vi.robot.continuous_mask)).max(axis=1)
