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
