"""The planner node's parameters (``ros__parameters`` of ``vi_planner``; the docs' parameter table is generated from
``PARAMETERS``, vi_control.ros.param_docs).

Declared, type-checked and range-checked by ``common.declare_parameters``; those marked live take effect while the
node runs (read when used, or through ``PlannerNode._apply_parameter``).
"""

from __future__ import annotations

from ..model.limits import MAX_DMOC_HORIZON
from .common import MODEL_PARAMETERS, Param
from .controller_parameters import PARAMETERS as CONTROLLER_PARAMETERS
from .managed import AUTOSTART
from .vehicle import ODOM_FRAME_PARAMETER, VEHICLE_PARAMETERS

# The controller's default: a state it calls stale is one the planner does not plan from (mode mpc).
STATE_TIMEOUT = float(CONTROLLER_PARAMETERS["state_timeout"].default)

PARAMETERS: dict[str, Param] = {
    **MODEL_PARAMETERS,
    "model": Param("", "as for the other nodes; empty (default): the task's own model"),
    "task": Param(
        "task_pendulum_swingup_bounded",
        "task YAML (path, or name in config/) for vi_control.planning.task: model, Δt, horizon, weights, goal",
    ),
    "plan_on_startup": Param(True, "plan once at start-up"),
    "mode": Param(
        "plan",
        "'plan': plan on start-up and on requests; 'mpc': after the task's first plan, re-plan it "
        "every mpc.period of the task YAML from the latest state, warm from the executing plan "
        "(planning.mpc: receding or shrinking horizon, an iteration cap per cycle); after a goal "
        "or trajectory request the cycles re-plan that request's plan instead, until ~/replan (not in "
        "vehicle mode: refused at configure)",
        choices=("plan", "mpc"),
    ),
    "diagnostics_period": Param(1.0, "/diagnostics period (wall clock) [s]", range=(0.01, 3600.0)),
    "startup_wait": Param(
        1.0,
        "at start-up (and for a goal or trajectory before any joint state), wait this long "
        "for a joint state to plan from [s]",
        range=(0.0, 3600.0),
    ),
    "state_estimate": Param(
        "configurations",
        "'configurations' (last two q) or 'velocities' (q̇) for x_0",
        choices=("configurations", "velocities"),
    ),
    "joint_state_merge_age": Param(
        0.05,
        "joints split over several drivers' joint_states: merged as the "
        "controller does (its parameter of this name) [s]",
        range=(1e-4, 10.0),
        live=True,
    ),
    "joint_state_conflict_window": Param(
        CONTROLLER_PARAMETERS["joint_state_conflict_window"].default,
        "joint states of one joint from two publishers within this time of each other (a joint_state_publisher beside "
        "the robot's driver, a second simulator in the same ROS domain): a request is refused (an MPC cycle skipped) "
        "with their names rather than planned from a state that may be the other's [s]. 0: not watched",
        range=(0.0, 60.0),
        live=True,
    ),
    "state_timeout": Param(
        STATE_TIMEOUT,
        "mode mpc: a cycle whose newest joint state is older than this on the node's clock is "
        "skipped (warned, counted in /diagnostics' mpc_stale): the controller (its parameter of "
        "this name) holds the arm on such a state, and a plan predicted from it would correct "
        "nothing [s]",
        range=(1e-4, 3600.0),
        live=True,
    ),
    "use_measured_state": Param(
        True, "plan from the latest joint state when there is one (else the task's x_0)", live=True
    ),
    "expected_solve_time": Param(
        2.0,
        "wall time a solve is expected to take before any solve was timed [s] (then "
        "1.5 × the longest of the last five, the first not counted: it compiles): a "
        "plan made while another of this planner's runs starts this much later (in the "
        "clock's units) than the state it was planned from",
        range=(0.0, 3600.0),
        live=True,
    ),
    "start_delay": Param(
        0.05,
        "a plan made while the robot is held (no plan of this planner running) starts this "
        "long (in the clock's units) after it is ready: its delivery to the controller [s]",
        range=(0.0, 60.0),
        live=True,
    ),
    "rest_velocity": Param(
        0.05,
        "a plan made while no plan of this planner runs starts from the measured state, start_delay and the solve "
        "after it was measured: if the robot moves then (a plan it did not make: a planner restarted mid-motion), "
        "the request waits until every joint is slower than this, said once, rather than hand over from where the "
        "robot was [rad/s, m/s]; above the joint states' velocity noise (a state under it is taken). 0: never waits",
        range=(0.0, 100.0),
        live=True,
    ),
    "velocity_limit_factor": Param(
        1.5,
        "a plan whose velocities q̇ = M⁻¹p exceed this × the URDF velocity limits "
        "(or whose inputs exceed the effort limits) is refused with the reason: the "
        "controller's parameter of this name refuses such plans",
        range=(1.0, 1e6),
        live=True,
    ),
    "republish_period": Param(
        1.0,
        "re-publish the latest plan this often [s] (0: never): a controller that "
        "missed the transient-local sample of a restarted planner still gets the plan",
        range=(0.0, 3600.0),
    ),
    "controller_name": Param(
        "vi_controller",
        "the controller that runs these plans: its <controller_name>/plan_entered says where each "
        "started (it re-times a plan that arrives late while the robot is at rest), and the "
        "prediction and MPC cycles continue that timeline — mode mpc cycles only once it entered "
        "the task's first plan; empty: a controller that does not say (the stated starts hold)",
    ),
    "warm_start": Param(
        True,
        "re-plans of the task start from the plan being executed, receded to the new start "
        "(Plan.receded; plan_task's warm_start: its inputs under its gains, the goal "
        "multiplier estimated there) instead of the task's initial guess",
        live=True,
    ),
    "publish_unconverged": Param(
        False,
        "publish a plan whose optimizer stopped before its tolerance, marked as "
        "unconverged (controllers refuse it unless told otherwise); default: log "
        "and publish nothing",
        live=True,
    ),
    **VEHICLE_PARAMETERS,
    **ODOM_FRAME_PARAMETER,
    "goal": Param(
        None,
        "vehicle mode: a goal pose [x, y, z, qx, qy, qz, qw] to plan toward at start-up (else wait for ~/goal)",
        array="double",
    ),
    "horizon": Param(
        0, "vehicle mode: N steps of the maneuver (0: the vehicle YAML's planning.horizon)", range=(0, MAX_DMOC_HORIZON)
    ),
    "duration": Param(
        0.0, "vehicle mode: T of the maneuver [s] (0: the vehicle YAML's planning.duration)", range=(0.0, 1e6)
    ),
    **AUTOSTART,
}
