"""``ManagedNode``: the lifecycle node the simulator, the planner and the controller are (rclpy.lifecycle).

configure = load the model and build (compile) the discrete system, create publishers and subscriptions;
activate = step / command / plan; deactivate = the safe command, then nothing; cleanup = forget the model;
shutdown (from any state) = deactivate if active, then the process ends.
``autostart`` (default true) runs configure and activate at start-up, as the nodes did before they were
managed, so the main job and scripts need no lifecycle manager. With ``robot_description_topic`` set the
model comes from that latched topic: autostart then configures when the first description arrives.
"""

from __future__ import annotations

from rclpy.lifecycle import LifecycleNode, LifecycleState, TransitionCallbackReturn
from std_msgs.msg import String

from ..model.robot import RobotModel
from .common import LATCHED_QOS, Param, ThrottledLog, declare_parameters, robot_from_parameters, watch_parameters

AUTOSTART = {"autostart": Param(True, "configure and activate at start-up (false: wait for a lifecycle manager)")}


class ManagedNode(LifecycleNode):
    """A lifecycle node with typed parameters (``PARAMETERS``), a per-kind throttled log and the model source.

    ``PARAMETERS`` must include ``AUTOSTART``. Subclasses implement ``configure``/``activate``/``deactivate``/
    ``cleanup`` (no return value; raise to fail a transition) and ``apply_parameter(name, value) -> reason or
    None`` for their live parameters.
    """

    PARAMETERS: dict[str, Param] = {}

    def __init__(self, name: str) -> None:
        super().__init__(name)
        table = self.PARAMETERS  # includes AUTOSTART
        self.p = declare_parameters(self, table)
        self.warn = ThrottledLog(self.get_logger(), self.p["log_throttle_period"])
        watch_parameters(self, table, self.p, self._apply_parameter)
        self.active = self.shutdown_requested = False
        self.description: str | None = None  # URDF received on robot_description_topic
        topic = self.p["robot_description_topic"]
        if topic:
            self.create_subscription(String, topic, self._on_description, LATCHED_QOS)
            self.get_logger().info(f"waiting for the robot description on {self.resolve_topic_name(topic)}")
        elif self.p["autostart"]:
            self._autostart(fail_loudly=True)

    # ---- model -------------------------------------------------------------------------------
    def load_robot(self, mass_scale: float = 1.0) -> tuple[RobotModel, str]:
        if self.p["robot_description_topic"] and self.description is None:
            raise RuntimeError(f"no robot description received yet on {self.p['robot_description_topic']}")
        return robot_from_parameters(self.p, mass_scale, self.description or "")

    def _on_description(self, msg: String) -> None:
        unconfigured = self._state_machine.current_state[1] == "unconfigured"
        if self.description is None or unconfigured:  # (configured: the model in use stays until a cleanup)
            self.get_logger().info(f"robot description received ({len(msg.data)} characters)")
        self.description = msg.data
        # Also after a refused description: a corrected one must not be ignored because it is not the first.
        if self.p["autostart"] and unconfigured:
            self._autostart(fail_loudly=False)

    def _autostart(self, fail_loudly: bool) -> None:
        if (
            self.trigger_configure() != TransitionCallbackReturn.SUCCESS
            or self.trigger_activate() != TransitionCallbackReturn.SUCCESS
        ):
            if fail_loudly:  # a node started with a bad model must not idle silently
                raise RuntimeError(f"{self.get_name()}: autostart failed (see the error above)")

    # ---- lifecycle callbacks: log the reason of a failure, never crash the executor --------------
    def _transition(self, what: str, fn) -> TransitionCallbackReturn:
        try:
            fn()
        except Exception as e:
            self.get_logger().error(f"{what} failed: {type(e).__name__}: {e}")
            return TransitionCallbackReturn.FAILURE
        return TransitionCallbackReturn.SUCCESS

    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        return self._transition("configure", self.configure)

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        self.active = True  # (already while ``activate`` runs: what it starts may check it)
        result = self._transition("activate", self.activate)
        self.active = result == TransitionCallbackReturn.SUCCESS
        return result

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        self.active = False
        return self._transition("deactivate", self.deactivate)

    def on_cleanup(self, state: LifecycleState) -> TransitionCallbackReturn:
        return self._transition("cleanup", self.cleanup)

    def on_shutdown(self, state: LifecycleState | None) -> TransitionCallbackReturn:
        """Deactivate if active; then the process ends (``common.run_node`` sees ``shutdown_requested``)."""
        if self.active:
            self.on_deactivate(state)
        self.shutdown_requested = True
        return TransitionCallbackReturn.SUCCESS

    def destroy_entities(self, timers=(), subscriptions=(), services=(), publishers=()) -> None:
        """What configure created, destroyed (cleanup)."""
        for t in timers:
            self.destroy_timer(t)
        for s in subscriptions:
            self.destroy_subscription(s)
        for s in services:
            self.destroy_service(s)
        for pub in publishers:
            self.destroy_publisher(pub)

    def configure(self) -> None: ...

    def activate(self) -> None: ...

    def deactivate(self) -> None: ...

    def cleanup(self) -> None: ...

    def apply_parameter(self, name: str, value) -> str | None:
        return f"{name} cannot change while the node runs"

    def _apply_parameter(self, name: str, value) -> str | None:
        if name == "log_throttle_period":
            self.warn.period = float(value)
            return None
        return self.apply_parameter(name, value)
