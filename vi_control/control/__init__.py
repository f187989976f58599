"""Control: plans (leaf data), LQR (time-varying and infinite-horizon), the tracking law and the state estimate."""

from .hold import equilibrium_state, hold_gain, holding_input
from .lqr import dlqr, tv_lqr
from .plan import Plan, PlanError, PlanFileError, state_error
from .tracking import HoldLaw, StateEstimator, TrackingController, safe_command, tracking_law

__all__ = [
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
    "safe_command",
    "tracking_law",
    "HoldLaw",
]
