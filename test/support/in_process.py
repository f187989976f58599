"""One node of the package in the test's own process on real rclpy: own domain (from the test's name) and
namespace, destroyed and rclpy shut down afterwards."""

from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def node_in_process(test_name: str, make: Callable, params: list[str]) -> Iterator:
    """``make()`` (a node class) under ``--ros-args`` with ``params`` ("-p", "name:=value", ...)."""
    import rclpy

    from vi_control.ros.launcher import domain_id_for, set_domain

    domain = domain_id_for(test_name)
    set_domain(domain)
    rclpy.init(args=["--ros-args", *params, "-r", f"__ns:=/in_process_{domain}"], domain_id=domain)
    node = None
    try:
        node = make()
        yield node
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()


@contextmanager
def rclpy_context(test_name: str) -> Iterator:
    """A fresh rclpy context on the test's own domain (from its name), shut down afterwards: for nodes a test builds
    itself (``context=``) and spins on its own executor."""
    import rclpy

    from vi_control.ros.launcher import domain_id_for, set_domain

    domain = domain_id_for(test_name)
    set_domain(domain)
    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=domain)
    try:
        yield ctx
    finally:
        rclpy.try_shutdown(context=ctx)


def record_logs(node):
    """The node's logger wrapped by ``log_record.RecordingLogger`` (what ``get_logger`` returns from now on, and what
    its ``warn`` throttle logs to, if it has one): the messages as rclpy received them."""
    from log_record import RecordingLogger

    rec = RecordingLogger(node.get_logger())
    node.get_logger = lambda: rec
    if hasattr(node, "warn"):
        node.warn.logger = rec
    return rec
