"""The controller node's parameters (``ros__parameters`` of ``vi_controller``; the docs' parameter table is generated
from ``PARAMETERS``, vi_control.ros.param_docs) and the joint-state limits they set.

Declared, type-checked and range-checked by ``common.declare_parameters``; those marked live take effect while the
node runs (``ControllerNode.apply_parameter``).
"""

from __future__ import annotations

from ..control.intake import JointLimits
from ..control.runner import HOLD_WEIGHTS
from ..model.robot import RobotModel
from .common import MODEL_PARAMETERS, Param
from .managed import AUTOSTART
from .supervision import COMMAND_CONFLICT_WINDOW
from .vehicle import VEHICLE_PARAMETERS

_LIVE = dict(live=True)
PARAMETERS: dict[str, Param] = {
    **MODEL_PARAMETERS,
    "dt": Param(
        0.01,
        "Δt of the state estimate until a plan arrives (then the plan's Δt is used: a system at another Δt is built "
        "in the background while the loop goes on, and the plan entered once it is ready — set this to the planner's "
        "Δt to have it from the start) [s]",
        range=(1e-5, 10.0),
    ),
    "controller_name": Param("effort_controller", "commands are published on <controller_name>/commands"),
    "joints": Param(None, "joint order of the command (default: the model's actuated joints)", array="string"),
    "planner_name": Param(
        "vi_planner",
        "plans arrive on <planner_name>/plan (relative: in the controller's "
        "namespace, where the planner node's ~/ topics are)",
    ),
    "accept_unconverged": Param(False, "track plans the planner marked as unconverged (best effort)", **_LIVE),
    "trigger": Param(
        "timer",
        "'timer': command at `rate`; 'joint_state': one command per new joint state "
        "(lockstep, or a driver that publishes at the control rate)",
        choices=("timer", "joint_state"),
    ),
    "rate": Param(100.0, "timer trigger: command rate on this node's clock [Hz]", range=(0.1, 10000.0), **_LIVE),
    "state_estimate": Param(
        "configurations",
        "'configurations': p from the last two q (discrete Legendre transform); 'velocities': p from q̇",
        choices=("configurations", "velocities"),
    ),
    "state_timeout": Param(
        0.5,
        "a joint state whose stamp is older than this on the node's clock is stale; "
        "one this far in the future is refused [s]",
        range=(1e-4, 3600.0),
        **_LIVE,
    ),
    "joint_state_merge_age": Param(
        0.05,
        "joints split over several drivers' joint_states: another driver's joints "
        "are interpolated (or extrapolated) to a message's stamp from two of its "
        "samples at most this far apart and old; older: a stale state [s]",
        range=(1e-4, 10.0),
        **_LIVE,
    ),
    "joint_state_conflict_window": Param(
        COMMAND_CONFLICT_WINDOW,
        "joint states of one joint from two publishers within this time of each other (a joint_state_publisher "
        "beside the robot's driver, a second simulator in the same ROS domain) are reported: an error naming the "
        "publishers, its end too, and /diagnostics ERROR meanwhile — the states themselves still go through the "
        "usual checks, which cannot tell the robot's from the other's [s]. 0: not watched",
        range=(0.0, 60.0),
        **_LIVE,
    ),
    "safe_mode": Param(
        "hold",
        "command on stale/invalid joint states and plan faults: 'hold' (arms: the "
        "configuration measured when the hold began, with gravity compensation and the DLQR "
        "hold gain; also before the first plan; a stale or refused state: its gravity torque "
        "alone for stale_hold_time, then zero; a vehicle: damping), 'damping' (−d·q̇ of a "
        "fresh state; a stale or refused one's: zero) or 'zero'",
        choices=("hold", "zero", "damping"),
        **_LIVE,
    ),
    "stale_hold_time": Param(
        1.0,
        "safe_mode hold: how long the last valid state's gravity torque is commanded once "
        "joint states are stale or refused (then zero torque: brakes are the hardware's) "
        "[s]",
        range=(0.0, 3600.0),
        **_LIVE,
    ),
    **{
        name: Param(HOLD_WEIGHTS[name], f"hold gain: DLQR weight of {what}", range=rng, **_LIVE)
        for name, what, rng in (
            ("hold_position_weight", "the position error (Q on q)", (0.0, 1e12)),
            ("hold_momentum_weight", "the momentum error (Q on p)", (0.0, 1e12)),
            ("hold_effort_weight", "the effort (R)", (1e-12, 1e12)),
        )
    },
    "safe_damping": Param(
        1.0,
        "damping d of the safe command [N·m·s/rad]; each joint's capped to "
        "1/(T·Σ_j |(M⁻¹)_ij|), T its hold (1/rate, or the joint states' interval, at least dt), so "
        "a held −d·q̇ never reverses a light joint's velocity",
        range=(0.0, 1e6),
        **_LIVE,
    ),
    "retime_tolerance": Param(
        0.01,
        "a plan that arrives after its start while the robot is still at its X_0 "
        "(|Δq|, |Δq̇| below this) starts when it arrives instead of skipping steps; 0: "
        "never",
        range=(0.0, 1e3),
        **_LIVE,
    ),
    "start_tolerance": Param(
        0.0,
        "a plan entered while none runs (from the hold) is refused when |q_ref − q| at the "
        "step it would be entered at, and at the step before, exceeds this on any joint, as MoveIt's "
        "allowed_start_tolerance [rad or m]; 0: not checked",
        range=(0.0, 1e6),
        **_LIVE,
    ),
    "gain_scale": Param(1.0, "scale of the feedback gains K_k (1: the planner's TV-LQR)", range=(0.0, 10.0), **_LIVE),
    "hold_integral_gain": Param(
        0.0,
        "integral action once the plan has ended: u += k_i Σ(q_N − q)Δt on the actuated "
        "joints, clamped to the effort limits; removes the offset a model or payload "
        "error leaves (joint robots; a change restarts the sum) [N·m/(rad·s)]",
        range=(0.0, 1e6),
        **_LIVE,
    ),
    "path_tolerance": Param(
        0.0,
        "abort the plan (safe command) when |q_ref − q| exceeds this on any joint "
        "during the plan [rad or m]; 0: not checked",
        range=(0.0, 1e6),
        **_LIVE,
    ),
    "goal_tolerance": Param(
        0.0,
        "abort when |q_N − q| is still above this goal_time_tolerance after the plan's end [rad or m]; 0: not checked",
        range=(0.0, 1e6),
        **_LIVE,
    ),
    "goal_time_tolerance": Param(
        1.0, "time allowed after the plan's end to reach goal_tolerance [s]", range=(0.0, 1e6), **_LIVE
    ),
    "position_limit_margin": Param(
        0.25,
        "joint states beyond the URDF position limits by more than this are refused [rad or m]",
        range=(0.0, 1e6),
        **_LIVE,
    ),
    "max_continuous_position": Param(
        1e4, "|q| bound of continuous joints (no URDF limit) [rad]", range=(0.0, 1e300), **_LIVE
    ),
    "velocity_limit_factor": Param(
        1.5, "joint states faster than this × the URDF velocity limit are refused", range=(1.0, 1e6), **_LIVE
    ),
    "max_velocity": Param(
        1e3, "velocity bound of joints without a URDF velocity limit [rad/s or m/s]", range=(0.0, 1e300), **_LIVE
    ),
    "state_publish_rate": Param(50.0, "~/controller_state rate (wall clock) [Hz]; 0: off", range=(0.0, 1e4), **_LIVE),
    "diagnostics_period": Param(1.0, "/diagnostics period (wall clock) [s]", range=(0.01, 3600.0)),
    "realtime_priority": Param(
        0,
        "while active, every thread of the node's process (DDS delivery and executor) "
        "runs SCHED_FIFO at this priority, as ros2_control's thread_priority (1…99); "
        "0: normal scheduling. Refused by the OS (no rtprio limit or CAP_SYS_NICE): a "
        "warning, normal scheduling",
        range=(0, 99),
    ),
    **VEHICLE_PARAMETERS,
    **AUTOSTART,
}

# the parameters that set the intake's JointLimits (a live change rebuilds them)
LIMIT_KEYS = ("position_limit_margin", "max_continuous_position", "velocity_limit_factor", "max_velocity")


def joint_limits(p: dict, robot: RobotModel) -> JointLimits:
    """The joint-state limits of ``robot`` under the values ``p`` of LIMIT_KEYS (control.intake.JointLimits)."""
    return JointLimits(
        robot, p["position_limit_margin"], p["max_continuous_position"], p["velocity_limit_factor"], p["max_velocity"]
    )
