"""The simulator node's parameters (``ros__parameters`` of ``vi_simulator``; the docs' parameter table is generated from
``PARAMETERS``, vi_control.ros.param_docs).

Declared, type-checked and range-checked by ``common.declare_parameters``; those marked live take effect while the
node runs (``SimulatorNode``'s parameter callback).
"""

from __future__ import annotations

from .common import MODEL_PARAMETERS, Param
from .managed import AUTOSTART
from .supervision import COMMAND_CONFLICT_WINDOW
from .vehicle import BASE_FRAME_PARAMETER, VEHICLE_PARAMETERS

PARAMETERS: dict[str, Param] = {
    **MODEL_PARAMETERS,
    "dt": Param(0.01, "time step Δt of the variational integrator [s]", range=(1e-5, 10.0)),
    "mode": Param(
        "realtime",
        "'realtime': step on a timer at Δt; 'lockstep': one step per received command (one "
        "that names another joint state than the current one, a controller's repeated answer, is "
        "ignored)",
        choices=("realtime", "lockstep"),
    ),
    "max_speed": Param(False, "realtime mode: step as fast as possible instead of every Δt of wall time"),
    "real_time_factor": Param(
        1.0,
        "realtime mode: simulated seconds per wall-clock second, a step every "
        "Δt/real_time_factor (as Gazebo's; < 1 gives the other nodes more wall time per "
        "step: a slow or shared machine, debugging)",
        range=(0.01, 100.0),
        live=True,
    ),
    "controller_name": Param("effort_controller", "commands are read from <controller_name>/commands"),
    "joints": Param(None, "joint order of the command (default: the model's actuated joints)", array="string"),
    "initial_positions": Param(
        None,
        "q_0 in the model's joint order (default: zeros — with holonomic constraints projected onto them)",
        array="double",
    ),
    "initial_velocities": Param(None, "q̇_0 in the model's joint order (default zeros)", array="double"),
    "joint_stops": Param(
        True,
        "hold joints at their URDF position limits as inelastic end stops, as hardware and "
        "Gazebo do (midpoint integrator; vi_control.integrators.stops)",
    ),
    "on_constraint_violation": Param(
        "project",
        "an initial velocity violating the nonholonomic constraints "
        "A(q)q̇ = 0 (GNI): 'project' it onto them with a warning, or 'raise' "
        "(configure fails)",
        choices=("project", "raise"),
    ),
    "on_bad_command": Param(
        "hold",
        "NaN or wrong-sized command: 'hold' the last valid one or apply 'zero'",
        choices=("hold", "zero"),
        live=True,
    ),
    "command_conflict_window": Param(
        COMMAND_CONFLICT_WINDOW,
        "commands from two publishers (two controllers on one robot, a command published by hand beside the "
        "controller) within this time of each other are refused, all of them, as bad commands are (on_bad_command; "
        "command_timeout brakes), said once naming the publishers, until one publisher alone has commanded for this "
        "long [s]. 0: every publisher's commands applied as they come",
        range=(0.0, 60.0),
        live=True,
    ),
    "position_noise_std": Param(
        0.0,
        "standard deviation of Gaussian noise added to published positions [rad or m]",
        range=(0.0, 10.0),
        live=True,
    ),
    "noise_seed": Param(
        0, "seed of the measurement noise (a change restarts the noise sequence)", range=(0, 2**31 - 1), live=True
    ),
    "mass_scale": Param(
        1.0, "multiply every link mass and inertia (model mismatch against planner/controller)", range=(1e-3, 1e3)
    ),
    "brake_until_command": Param(
        False,
        "realtime/max_speed: the joints held where they are (brakes, the clock "
        "running) from activation until the first valid command — a robot does "
        "not fall while its controller is still discovering the simulator",
    ),
    "command_timeout": Param(
        0.0,
        "realtime/max_speed: when no valid command has come for this long on the simulation clock, the "
        "brakes engage (the joints held at rest where they are), as a real arm's driver stops when its "
        "controller does; the next valid command releases them [s]. 0: the last command stays applied "
        "(ros2_control's forward command controllers)",
        range=(0.0, 1e6),
        live=True,
    ),
    "actuator_gain": Param(
        1.0,
        "multiply every applied joint torque after the effort-limit saturation: a weaker "
        "(< 1) or stronger actuator than the controller's model (model mismatch)",
        range=(1e-3, 1e3),
    ),
    "idle_publish_period": Param(
        0.2,
        "lockstep: republish the current state when no command came for this long [s]",
        range=(0.001, 60.0),
        live=True,
    ),
    "end_time": Param(
        0.0,
        "stop stepping once the simulation time reaches this [s] (0: never); the node stays "
        "active and republishes its last state every idle_publish_period (a run of fixed length "
        "that a recorder can keep whole)",
        range=(0.0, 1e9),
        live=True,
    ),
    "diagnostics_period": Param(
        1.0, "/diagnostics period (wall clock) [s]: real-time factor, late commands", range=(0.01, 3600.0), live=True
    ),
    "publish_clock": Param(
        True,
        "publish the simulation time on `clock` (relative: /clock in the root namespace, "
        "<ns>/clock in a namespace; other nodes there read it with -r /clock:=clock)",
    ),
    "odometry_link": Param(
        "",
        "link published as nav_msgs/Odometry on `odom`: '' = the chassis of a mobile "
        "model (nonholonomic constraints or a floating base: its first link with mass), "
        "'none' = off",
    ),
    "odom_frame": Param("odom", "frame_id of the odometry (the world frame of the simulation)"),
    **VEHICLE_PARAMETERS,
    **BASE_FRAME_PARAMETER,
    "initial_pose": Param(None, "vehicle mode: g_0 as [x, y, z, qx, qy, qz, qw] (default identity)", array="double"),
    "initial_twist": Param(None, "vehicle mode: body twist ξ_0 = (ω, v) (default rest)", array="double"),
    "drag_scale": Param(
        1.0, "vehicle mode: multiply the drag (model mismatch; mass_scale keeps the trim)", range=(1e-3, 1e3)
    ),
    **AUTOSTART,
}
