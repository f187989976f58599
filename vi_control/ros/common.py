"""What the three nodes share: typed parameter tables, the model from parameters or a topic, QoS, logging and
the entry point (EventsExecutor)."""

from __future__ import annotations

import faulthandler
import inspect
import math
import os
import re
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor, ParameterType, SetParametersResult
from rclpy.exceptions import ParameterUninitializedException
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

from ..model.bundled import BUNDLED, bundled_config, bundled_urdf, share_dir
from ..model.errors import unknown_keys
from ..model.robot import RobotModel
from ..model.scalars import is_integer
from ..model.spec import ModelSpec


def _is_float(v) -> bool:
    return isinstance(v, float)


def _is_str(v) -> bool:
    return isinstance(v, str)


# A YAML or `-p` value of each declared kind, as rcl parses it (an integer is not a double, a bool not an integer).
_VALUE_TYPES: dict[str, Callable[[Any], bool]] = {
    "bool": lambda v: isinstance(v, bool),
    "int": is_integer,
    "float": _is_float,
    "str": _is_str,
    "double": lambda v: isinstance(v, list) and all(map(_is_float, v)),
    "string": lambda v: isinstance(v, list) and all(map(_is_str, v)),
}


@dataclass(frozen=True)
class Param:
    """One node parameter: its default (its type), meaning, allowed values and whether it changes live.

    ``array``: element type of a list parameter ('double' or 'string'; default empty list); ``range``:
    inclusive (lo, hi) for numbers; ``choices``: allowed strings; ``live``: a change is applied while the node
    runs (the node's ``apply_parameter``); otherwise the parameter is read-only after start-up.
    """

    default: Any
    description: str
    array: str | None = None
    range: tuple[float, float] | None = None
    choices: tuple[str, ...] | None = None
    live: bool = False

    @property
    def type(self) -> int:
        if self.array is not None:
            return {"double": ParameterType.PARAMETER_DOUBLE_ARRAY, "string": ParameterType.PARAMETER_STRING_ARRAY}[
                self.array
            ]
        return {
            bool: ParameterType.PARAMETER_BOOL,
            int: ParameterType.PARAMETER_INTEGER,
            float: ParameterType.PARAMETER_DOUBLE,
            str: ParameterType.PARAMETER_STRING,
        }[type(self.default)]

    def descriptor(self, name: str) -> ParameterDescriptor:
        d = ParameterDescriptor(name=name, type=self.type, description=self.description, read_only=not self.live)
        if self.range is not None:
            lo, hi = self.range
            if self.type == ParameterType.PARAMETER_INTEGER:
                d.integer_range = [IntegerRange(from_value=int(lo), to_value=int(hi), step=0)]
            else:
                d.floating_point_range = [FloatingPointRange(from_value=float(lo), to_value=float(hi), step=0.0)]
        if self.choices is not None:
            d.additional_constraints = f"one of {list(self.choices)}"
        return d

    def refusal(self, name: str, value) -> str | None:
        """Why a start-up value (a params file's YAML value, a ``-p name:=value``) would be refused, checked
        without a node: its type against the declared one (rclpy converts none: 500 for a double is refused),
        the range rclpy enforces at declaration, then ``check``."""
        kind = self.array or type(self.default).__name__
        if not _VALUE_TYPES[kind](value):
            want = {"double": "a list of doubles", "string": "a list of strings"}.get(kind, kind)
            return f"{name} must be of the declared type {want}, got {value!r}"
        if self.range is not None and not self.range[0] <= value <= self.range[1]:
            return f"{name} must be in [{self.range[0]:g}, {self.range[1]:g}], got {value!r}"
        return self.check(name, value)

    def check(self, name: str, value) -> str | None:
        """Why ``value`` is not allowed (None if it is): the choices; types and ranges ROS checks itself."""
        if self.choices is not None and value not in self.choices:
            return f"{name} must be one of {list(self.choices)}, got {value!r}"
        if isinstance(value, float) and not math.isfinite(value):
            return f"{name} must be finite, got {value!r}"
        return None


MODEL_PARAMETERS: dict[str, Param] = {
    "model": Param(
        "pendulum",
        "bundled model name (acrobot, cartpole, ...: its URDF and system YAML), erd:<name> "
        "(example-robot-data: erd:panda, erd:ur5, ...), or a URDF path; with urdf_path, "
        "robot_description or robot_description_topic it only names the model (and its "
        "bundled system YAML)",
    ),
    "urdf_path": Param("", "URDF file; overrides `model`"),
    "robot_description": Param("", "URDF XML text; overrides `urdf_path` and `model`"),
    "robot_description_topic": Param(
        "",
        "take the URDF from this (latched) topic, e.g. 'robot_description' as "
        "robot_state_publisher publishes it; overrides the three above",
    ),
    "system_yaml": Param(
        "",
        "system YAML file or inline YAML text (vi_control.model.system_config); default config/<model>.yaml if present",
    ),
    "integrator": Param(
        "midpoint",
        "discrete mechanics: 'midpoint' (Johnson2015), 'gni' (Kobilarov2010: models with "
        "nonholonomic constraints) or, simulator only, 'linear_time' (Lee2016: O(n) "
        "DRNEA + RIQN for long chains)",
        choices=("midpoint", "gni", "linear_time"),
    ),
    "log_throttle_period": Param(
        2.0, "each kind of warning is logged at most once per this period [s]", range=(0.0, 3600.0), live=True
    ),
}

# Plans and the URDF are state, not a stream: a late subscriber must still get the latest one.
LATCHED_QOS = QoSProfile(
    depth=1,
    history=HistoryPolicy.KEEP_LAST,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.TRANSIENT_LOCAL,
)
# The plan topic: latched like the above, and every plan reaches the controller, in order. Consecutive MPC plans are
# planned to continue each other's law at the switch (planning.mpc): a plan dropped from a one-deep queue (the
# controller's callback later than the next plan, under load) leaves the controller on the plan before it, whose law
# the next plan's step 0 does not continue — a jump in the command. So 10 deep on the planner's publisher (its
# transient-local history: a late subscriber receives up to the last 10 plans, and the controller's runner enters
# those that have started in one tick, in order) and on the controller's subscription.
PLAN_QOS = QoSProfile(
    depth=10,
    history=HistoryPolicy.KEEP_LAST,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.TRANSIENT_LOCAL,
)
STREAM_QOS = QoSProfile(depth=10, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE)
# Joint states from sensors and drivers are often best effort; a best-effort reader matches both kinds of
# writer. A controller wants the newest state, not a backlog of old ones (depth 1).
SENSOR_QOS = QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.BEST_EFFORT)
# The controller's joint states once several drivers publish one robot's joints on one topic (an arm and a wrist
# driver): a depth-1 cache lets one driver's message displace another's before the executor takes it (measured over
# DDS: a 50 Hz elbow driver beside a 100 Hz shoulder driver lost samples: 60 ms gaps, safe commands). Depth 4 holds
# a few drivers' messages; a controller that fell behind works through at most three older states.
JOINT_STATES_QOS = QoSProfile(depth=4, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.BEST_EFFORT)
SENSOR_STREAM_QOS = QoSProfile(depth=10, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.BEST_EFFORT)
# Publishers of streams someone may record (the simulator's joint states) keep a deeper history, so a slow
# reliable reader (the main job's recorder during a fast lockstep run) catches up instead of losing samples,
# and a recorder that discovers the simulator late (seconds under load) still gets the last 1000 samples.
RECORD_QOS = QoSProfile(
    depth=1000,
    history=HistoryPolicy.KEEP_LAST,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.TRANSIENT_LOCAL,
)
# A recorder of volatile streams (commands): deep, reliable, but no durability a volatile writer cannot offer.
RECORD_VOLATILE_QOS = QoSProfile(depth=1000, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE)


def declare_parameters(node: Node, table: dict[str, Param]) -> dict:
    """Declare every parameter of ``table`` with a typed descriptor; return their values (unset lists -> []).
    A start-up value outside ``choices`` raises ValueError naming the parameter."""
    values = {}
    for name, spec in table.items():
        default = (
            Parameter.Type.DOUBLE_ARRAY
            if spec.array == "double"
            else (Parameter.Type.STRING_ARRAY if spec.array == "string" else spec.default)
        )
        node.declare_parameter(name, default, spec.descriptor(name))
        try:
            v = node.get_parameter(name).value
        except ParameterUninitializedException:
            v = []
        values[name] = list(v) if spec.array is not None else v
        why = spec.check(name, values[name])
        if why is not None:
            raise ValueError(f"parameter {why}")
    _report_undeclared(node, table)
    return values


def _report_undeclared(node: Node, table: dict[str, Param]) -> None:
    """Warn about parameters given to this node (params file, --ros-args -p) that it does not declare: rclpy
    drops them silently, so a typo (`state_timout`) would leave the default in force unnoticed."""
    given = getattr(node, "_parameter_overrides", {})  # (rclpy keeps them there; no public accessor)
    unknown = [n for n in given if not node.has_parameter(n) and not n.startswith("qos_overrides.")]
    if unknown:
        node.get_logger().warning(
            f"ignored parameters: {unknown_keys(unknown, set(table))} for this node "
            "(a params file shared by several nodes may hold other nodes' parameters)"
        )


def watch_parameters(
    node: Node, table: dict[str, Param], values: dict, apply: Callable[[str, Any], str | None]
) -> None:
    """Validate every parameter of a request before any is applied (on-set callback: ``Param.check``; rclpy itself
    checks types, ranges and read-only), then — only once the whole request is accepted — record the values in
    ``values`` and call the node's ``apply`` for each (post-set callback). A request refused as a whole (one bad
    value among good ones, ``set_parameters_atomically``) thus changes nothing, here as in rclpy's own store."""

    def on_set(params: list[Parameter]) -> SetParametersResult:
        for prm in params:
            spec = table.get(prm.name)
            if spec is None:
                continue  # use_sim_time and other parameters of rclpy's own
            why = spec.check(prm.name, list(prm.value) if spec.array is not None else prm.value)
            if why is not None:
                return SetParametersResult(successful=False, reason=why)
        return SetParametersResult(successful=True)

    def after_set(params: list[Parameter]) -> None:
        for prm in params:
            if prm.name not in table:
                continue
            value = list(prm.value) if table[prm.name].array is not None else prm.value
            why = apply(name := prm.name, value)  # (``values`` still holds the old value: apply may compare)
            values[name] = value
            if why is not None:  # (read-only parameters are refused by rclpy before this)
                node.get_logger().error(f"parameter {name}: {why}")

    node.add_on_set_parameters_callback(on_set)
    node.add_post_set_parameters_callback(after_set)


class ThrottledLog:
    """Warnings throttled per kind (not per call site): a new kind is logged at once, a repeated one at most
    once per ``period`` seconds with the number suppressed meanwhile. ``text`` may be a function that builds it,
    called only when the message is logged (a per-step text on a hot path costs nothing while suppressed)."""

    def __init__(self, logger, period: float):
        self.logger, self.period = logger, float(period)
        self._last: dict[str, tuple[float, int]] = {}

    def __call__(self, kind: str, text: str | Callable[[], str], level: str = "warning") -> bool:
        now = time.monotonic()
        last, suppressed = self._last.get(kind, (-math.inf, 0))
        if now - last < self.period:
            self._last[kind] = (last, suppressed + 1)
            return False
        if callable(text):
            text = text()
        more = f" ({suppressed} more since the last report)" if suppressed else ""
        # one call site per severity: rclpy refuses (ValueError) a call site whose severity changes between calls,
        # and a node logs one kind at several severities (a stale-state error, later a warning)
        if level == "error":
            self.logger.error(text + more)
        elif level == "info":
            self.logger.info(text + more)
        elif level == "warning":
            self.logger.warning(text + more)
        else:
            raise ValueError(f"ThrottledLog: unknown level {level!r} (error|warning|info)")
        self._last[kind] = (now, 0)
        return True


def _robot_name(urdf: str) -> str | None:
    """The ``<robot name>`` of URDF text or a file (None if it cannot be read: loading reports why)."""
    try:
        m = re.search(r"<robot\b[^>]*?\bname\s*=\s*[\"']([^\"']*)[\"']", ModelSpec(source=urdf).urdf_text())
    except (ValueError, OSError):
        return None
    return m.group(1) if m else None


def model_spec_from_parameters(p: dict, mass_scale: float = 1.0, description: str = "") -> ModelSpec:
    """The ModelSpec named by the MODEL_PARAMETERS values (vi_control.model.spec: one resolver for all);
    ``description``: URDF text received on ``robot_description_topic``. A description from text or a file
    gets the bundled system YAML of the model it is named after (config/<model>.yaml), if there is one and the
    description is that model's robot (the same ``<robot name>``): another robot's URDF given with the default
    ``model: pendulum`` must not get the pendulum's ``actuated: [theta]``, a joint it lacks."""
    xml = description or p["robot_description"]
    system = p["system_yaml"]
    urdf, own_yaml = BUNDLED.get(p["model"], (None, None))
    if (
        not system
        and (xml or p["urdf_path"])
        and own_yaml
        and _robot_name(xml or p["urdf_path"]) in (None, _robot_name(bundled_urdf(urdf)))
    ):
        system = bundled_config(own_yaml) or ""
    return ModelSpec.from_parameters(
        model=p["model"],
        urdf_path=p["urdf_path"],
        robot_description=xml,
        system_yaml=system or "",
        mass_scale=mass_scale,
    )


def robot_from_parameters(p: dict, mass_scale: float = 1.0, description: str = "") -> tuple[RobotModel, str]:
    """RobotModel and its URDF text from the MODEL_PARAMETERS values (and a received description)."""
    spec = model_spec_from_parameters(p, mass_scale, description)
    return spec.load(), spec.urdf_text()


def parameter_defaults(table: dict[str, Param]) -> dict:
    """{name: default} of a parameter table (lists empty), as a node would see it without overrides."""
    return {k: ([] if v.array is not None else v.default) for k, v in table.items()}


def command_timed_out(steps: int, dt: float, timeout: float) -> bool:
    """A plant's ``command_timeout`` rule: ``timeout`` > 0 (0: off) and ``steps`` of ``dt`` since the last valid
    command more than it (relative 1e-9: a whole number of steps equal to the timeout is within it)."""
    return timeout > 0.0 and steps * dt > timeout * (1.0 + 1e-9)


def command_joints(p: dict, robot: RobotModel) -> list[str]:
    """The `joints` parameter (command entry order), default the actuated joints; must be a permutation."""
    joints = list(p["joints"]) or list(robot.actuated)
    if sorted(joints) != sorted(robot.actuated):
        raise ValueError(f"parameter joints {joints} must be a permutation of the actuated joints {robot.actuated}")
    return joints


def resolve_config(path: str) -> str:
    """A config file given as a path, or by name relative to the package's config/ directory."""
    if os.path.isfile(path):
        return path
    for cand in (share_dir() / path, share_dir() / "config" / path, share_dir() / "config" / f"{path}.yaml"):
        if cand.is_file():
            return str(cand)
    raise FileNotFoundError(f"no config file {path!r} (looked in {share_dir() / 'config'})")


def realtime_scheduling(priority: int, pid: int = 0) -> str:
    """SCHED_FIFO at ``priority`` (1…99; 0: back to SCHED_OTHER) for every thread of process ``pid`` (0: this
    one) — the DDS threads that deliver a message as well as the executor's — as ros2_control's controller
    manager runs its loop. Returns '' or why it was refused (Linux without an rtprio limit or CAP_SYS_NICE)."""
    if not 0 <= priority <= 99:
        raise ValueError(f"realtime priority {priority} not in 0…99")
    pid = pid or os.getpid()
    policy = os.SCHED_FIFO if priority else os.SCHED_OTHER
    try:
        tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError as e:
        return f"cannot list the threads of process {pid}: {e}"
    for tid in tids:
        try:
            os.sched_setscheduler(tid, policy, os.sched_param(priority))
        except ProcessLookupError:
            continue  # the thread ended meanwhile
        except OSError as e:
            return (
                f"SCHED_FIFO priority {priority} refused ({e}); allow it with an rtprio limit "
                "(/etc/security/limits.conf: '<user> - rtprio 98') or CAP_SYS_NICE"
            )
    return ""


def with_message_info(callback: Callable[[Any, dict], None]) -> Callable[..., None]:
    """``callback(msg, info)`` as a subscription callback that gets rclpy's ``MessageInfo`` (the publisher's GID, the
    stamps) under every executor. rclpy decides by the callback's signature whether to pass the info; its
    EventsExecutor (``make_executor``; rclpy 9.x) then passes the pair (msg, info) as *one* argument, which a callback
    of two parameters cannot take (the executor dies with "SystemError: null argument to internal routine"), while the
    other executors pass two. The returned callable states two parameters and takes either form."""

    def receive(*args) -> None:
        msg, info = args[0] if len(args) == 1 else args
        callback(msg, info)

    receive.__signature__ = inspect.Signature(
        [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in ("msg", "info")]
    )
    return receive


def make_executor(context=None):
    """rclpy's EventsExecutor (callbacks dispatched from C++ without the wait-set rebuild of the default
    executor: what lets a Python controller answer 1 kHz joint states), else the single-threaded one."""
    try:
        from rclpy.experimental import EventsExecutor
    except ImportError:  # an rclpy without it
        from rclpy.executors import SingleThreadedExecutor

        return SingleThreadedExecutor(context=context)
    # It calls faulthandler.enable(), which needs a real stderr (not one captured by pytest or a notebook).
    stderr = sys.stderr
    try:
        sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        sys.stderr = sys.__stderr__
    try:
        return EventsExecutor(context=context)
    finally:
        sys.stderr = stderr


def run_node(node_cls: type, args: list[str] | None = None) -> None:
    """Standard entry point: rclpy init with ``--ros-args``, spin on the EventsExecutor until Ctrl-C/SIGTERM or a
    lifecycle shutdown, clean shutdown. A lifecycle node with ``autostart`` configures and activates itself first.

    SIGINT and SIGTERM are this function's, not rclpy's: rclpy's handler shuts the context down under a callback
    being dispatched, which then died with "[FATAL] Exception in 'subscriptions' callback" and a traceback (26 of
    62 stops). Here a signal only ends the loop; node and context are taken down after the last callback returned.
    Before the node exists (loading, compiling) a signal interrupts at once, as Ctrl-C does."""
    import rclpy
    from rclpy.executors import ExternalShutdownException
    from rclpy.signals import SignalHandlerOptions

    # A fatal error's traceback from the first moment, not only once the EventsExecutor enables it (a node killed
    # while still constructing itself left no traceback: CI, 2026-11-23).
    faulthandler.enable(file=sys.__stderr__)
    rclpy.init(args=sys.argv if args is None else args, signal_handler_options=SignalHandlerOptions.NO)
    stop = {"asked": False, "spinning": False}

    def on_signal(signum, _frame) -> None:
        stop["asked"] = True
        if not stop["spinning"]:
            raise KeyboardInterrupt

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    node = executor = None
    try:
        node = node_cls()
        executor = make_executor()
        executor.add_node(node)
        stop["spinning"] = True
        # spin_once in a loop, not spin(): the EventsExecutor's spin() does not return when the context is shut
        # down (rclpy 9.1.2); between spin_once calls the loop sees a signal or a lifecycle shutdown.
        while rclpy.ok(context=node.context) and not stop["asked"] and not getattr(node, "shutdown_requested", False):
            executor.spin_once(timeout_sec=0.1)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        stop["spinning"] = False
        if executor is not None:
            executor.shutdown(timeout_sec=1.0)
        if node is not None:
            if getattr(node, "active", False) and hasattr(node, "on_shutdown"):
                node.on_shutdown(None)  # (a lifecycle node's last word: its deactivate, e.g. the safe command)
            node.destroy_node()
        if rclpy.ok():
            rclpy.try_shutdown()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
