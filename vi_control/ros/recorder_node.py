"""``vi_recorder``: a run's topics into an MCAP file (``bag.BagRecorder``) until Ctrl-C, as a node of its own.

vi_recorder --ros-args -p path:=run.mcap -r __ns:=/my_run
"""

from __future__ import annotations

from rclpy.node import Node

from .bag import BagRecorder
from .common import Param, declare_parameters, run_node

PARAMETERS = {
    "path": Param("run.mcap", "the MCAP file to write (replaced if it exists; readable once the node stops)"),
    "controller_name": Param("effort_controller", "the effort controller whose <name>/commands are recorded"),
    "planner_name": Param("vi_planner", "the planner node whose trajectory, plan and request_status are recorded"),
}


class RecorderNode(BagRecorder):
    """``BagRecorder`` configured by its ROS parameters (``PARAMETERS``)."""

    def __init__(self):
        Node.__init__(self, "vi_recorder")
        p = declare_parameters(self, PARAMETERS)
        self._open(p["path"], p["controller_name"], p["planner_name"])


def main(args: list[str] | None = None) -> None:
    run_node(RecorderNode, args)


if __name__ == "__main__":
    main()
