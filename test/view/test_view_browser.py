"""The browser view in a real browser: headless Chromium renders the meshcat page with WebGL, and the
pixels show the robot — they differ from the empty scene, and two poses of a plan differ where the moving links
are (every changed pixel is one that either pose's robot covers), not elsewhere.

Chromium comes from Debian's packages (``scripts/setup_env.sh`` installs it when run as root); without it these
tests skip, saying so.
"""

from pathlib import Path

import numpy as np
import pytest

import vi_control as vc
from vi_control.control.plan import Plan
from vi_control.view import RobotView, load_replay, write_html
from vi_control.view.browser import dump_dom, find_chromium, screenshot_pages

pytestmark = [
    pytest.mark.skipif(
        find_chromium() is None,
        reason="no chromium on PATH: apt-get install chromium (Debian), as scripts/setup_env.sh does when run as root",
    ),
    # a browser's software renderer takes a core: with the DDS tests, one at a time (conftest.py)
    pytest.mark.xdist_group("processes"),
]

THRESHOLD = 40  # a pixel "differs" when a channel differs by more than this (of 255)


def _differs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.abs(a - b).max(axis=2) > THRESHOLD


def _plan(robot, q_start, q_end, n: int = 20) -> Plan:
    nq, nu = robot.nq, len(robot.actuated)
    X = np.zeros((n + 1, 2 * nq))
    X[:, :nq] = np.linspace(q_start, q_end, n + 1)
    return Plan(
        times=0.1 * np.arange(n + 1),
        X=X,
        U=np.zeros((n, nu)),
        K=np.zeros((n, nu, 2 * nq)),
        dt=0.1,
        model_name=robot.name,
        model_hash=robot.hash,
        joint_names=robot.joint_names,
        input_names=list(robot.actuated),
    )


def _page(view: RobotView, tmp_path: Path, name: str) -> Path:
    html = tmp_path / f"{name}.html"
    html.write_text(view.static_html(), encoding="utf-8")
    return html


@pytest.fixture(scope="module")
def cartpole_shots(tmp_path_factory):
    """Screenshots of one cart-pole view: empty scene, plan start, plan end (the cart moved, the pole swung)."""
    tmp = tmp_path_factory.mktemp("view")
    robot = vc.load_robot("cartpole")
    plan = _plan(robot, [0.0, 0.0], [0.6, 2.2])
    plan.save(str(tmp / "plan.npz"))
    replay = load_replay(tmp / "plan.npz")
    assert np.allclose(replay.q, plan.X[:, :2])
    view = RobotView(replay.robot, ghost=False)
    try:
        view.frame(list(replay.q))
        view.viewer["robot"].set_property("visible", False)
        pages = [_page(view, tmp, "empty")]
        view.viewer["robot"].set_property("visible", True)
        view.show(replay.q[0])
        pages.append(_page(view, tmp, "start"))
        view.show(replay.q[-1])
        pages.append(_page(view, tmp, "end"))
    finally:
        view.close()
    return screenshot_pages(pages, tmp / "poses.png")


def test_the_robot_is_drawn(cartpole_shots):
    empty, start, _ = cartpole_shots
    robot = _differs(start, empty)
    assert robot.sum() > 1500, f"only {robot.sum()} pixels differ from the empty scene"
    # its own colors: the cart's blue (0.18, 0.42, 0.78) is on screen
    blue = (np.abs(start - [46, 107, 199]).max(axis=2) < 60) & robot
    assert blue.sum() > 300


def test_two_poses_differ_where_the_moving_links_are(cartpole_shots):
    empty, start, end = cartpole_shots
    moved = _differs(start, end)
    covered = _differs(start, empty) | _differs(end, empty)
    assert moved.sum() > 1000, f"only {moved.sum()} pixels differ between the two poses"
    outside = moved & ~covered
    assert outside.sum() <= 0.01 * moved.sum(), f"{outside.sum()} changed pixels lie where neither pose draws"


def test_ghost_and_animation_page(tmp_path):
    """write_html's offline page: robot and translucent ghost drawn, meshcat's animation controls present."""
    robot = vc.load_robot("double_pendulum")
    plan = _plan(robot, [0.0, 0.0], [2.0, 1.0])
    from vi_control.view import Replay

    replay = Replay(robot, plan.times, plan.X[:, :2] * 0.5, plan.times, plan.X[:, :2])
    page = write_html(replay, tmp_path / "replay.html")
    html = page.read_text()
    assert "set_animation" in html and "<script" in html and "http" not in html.split("<script", 1)[0]
    dom = dump_dom(page.as_uri())
    assert "Animations" in dom and "play" in dom  # the time controls of the replay
    view = RobotView(robot, ghost=True)
    try:
        view.frame([np.zeros(2), plan.X[-1, :2]])
        view.show(np.zeros(2), None)
        pages = [_page(view, tmp_path, "alone")]
        view.show(np.zeros(2), plan.X[-1, :2])
        pages.append(_page(view, tmp_path, "ghost"))
    finally:
        view.close()
    alone, with_ghost = screenshot_pages(pages, tmp_path / "ghost.png")
    ghost = _differs(with_ghost, alone)
    assert ghost.sum() > 300
    # translucent: where the ghost is drawn over the background, the background shows through (lighter than the
    # opaque robot's own colour would be)
    assert with_ghost[ghost].mean() > 110
