"""Seeing a run: a browser 3-D view of robots, plans and recordings (meshcat via Pinocchio's MeshcatVisualizer).

Not imported by ``import vi_control``; meshcat itself is imported only when a view is made. The live view of a
running robot over DDS is ``vi_control.ros.view_node`` (``vi_view`` without a file).

    from vi_control.view import load_replay, view_replay
    view = view_replay(load_replay("plan.npz"))   # or a recording, run.mcap
    print(view.url)                               # open it; or view.static_html() for an offline page
"""

from __future__ import annotations

from pathlib import Path

from .replay import Replay, load_replay, replay_from_plan, replay_from_recording
from .scene import RobotView, visual_model


def view_replay(replay: Replay, view: RobotView | None = None) -> RobotView:
    """A view (new, or ``view``) playing ``replay``: the robot along its motion, the plan as the ghost."""
    view = view or RobotView(replay.robot)
    view.animate(replay.times, replay.q, replay.plan_times, replay.plan_q)
    return view


def write_html(replay: Replay, path: str | Path) -> Path:
    """A self-contained HTML replay (opens offline, without a server): robot, ghost, animation controls."""
    view = RobotView(replay.robot, ghost=replay.plan_q is not None)
    try:
        view_replay(replay, view)
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(view.static_html(), encoding="utf-8")
    finally:
        view.close()
    return path


__all__ = [
    "Replay",
    "RobotView",
    "load_replay",
    "replay_from_plan",
    "replay_from_recording",
    "view_replay",
    "visual_model",
    "write_html",
]
