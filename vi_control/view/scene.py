"""A robot in a browser: Pinocchio's MeshcatVisualizer on a meshcat server (its web client served offline).

``RobotView`` draws a ``RobotModel``'s visual geometry (the URDF's ``<visual>`` elements, meshes included) twice:
the executed robot, opaque, and the planned motion as a translucent ghost in the same place. ``show`` poses both,
``animate`` loads a replay as a meshcat animation (play button and time slider under "Animations" in the
viewer's controls), ``static_html`` is the whole scene — client, geometry, animation — as one offline HTML file.
"""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pinocchio as pin

from ..model.robot import RobotModel

GHOST_RGBA = (0.35, 0.65, 1.0, 0.35)  # the planned motion: translucent blue
BACKGROUND = ((0.93, 0.94, 0.96), (0.72, 0.75, 0.80))  # top, bottom (RGB in [0, 1])


def visual_model(robot: RobotModel) -> pin.GeometryModel:
    """Pinocchio's visual geometry of a robot from its URDF text (example-robot-data meshes found by package)."""
    dirs = []
    with contextlib.suppress(FileNotFoundError):
        from ..model.bundled import example_robot_data_dir

        dirs.append(str(example_robot_data_dir().parents[1]))  # .../share, which holds example-robot-data/
    return pin.buildGeomFromUrdfString(robot.pin_model, robot.urdf_xml, pin.GeometryType.VISUAL, package_dirs=dirs)


class RobotView:
    """A meshcat scene with a robot (``robot``) and, if ``ghost``, its planned motion (``plan``) as a ghost.

    ``zmq_url``: an existing ``meshcat-server`` (else one is started, in a subprocess that ends with this
    process). ``url`` is the page to open."""

    def __init__(self, robot: RobotModel, ghost: bool = True, zmq_url: str | None = None):
        import meshcat
        from pinocchio.visualize import MeshcatVisualizer

        self.robot = robot
        with contextlib.redirect_stdout(io.StringIO()):  # meshcat prints its URL; callers print it themselves
            self.viewer = meshcat.Visualizer(zmq_url=zmq_url)
        geometry = visual_model(robot)
        self._vizs: dict[str, MeshcatVisualizer] = {}
        for root, color in (("robot", None), ("plan", list(GHOST_RGBA)))[: 2 if ghost else 1]:
            viz = MeshcatVisualizer(robot.pin_model, None, geometry.copy())
            viz.initViewer(viewer=self.viewer)
            viz.loadViewerModel(rootNodeName=root, visual_color=color)
            self._vizs[root] = viz
        self.viewer["/Background"].set_property("top_color", list(BACKGROUND[0]))
        self.viewer["/Background"].set_property("bottom_color", list(BACKGROUND[1]))
        self.viewer["/Axes"].set_property("visible", False)
        self.show(robot.neutral(), robot.neutral() if ghost else None)
        self.frame([robot.neutral()])

    @property
    def url(self) -> str:
        """The page that shows the scene (the meshcat server's, on this machine)."""
        return self.viewer.url()

    def _place(self, root: str, q: np.ndarray, target=None) -> None:
        """Pose every visual of ``root`` at configuration q, in the live scene or an animation frame."""
        viz = self._vizs[root]
        target = self.viewer if target is None else target
        pin.forwardKinematics(viz.model, viz.data, np.asarray(q, float))
        pin.updateGeometryPlacements(viz.model, viz.data, viz.visual_model, viz.visual_data)
        for i, obj in enumerate(viz.visual_model.geometryObjects):
            T = viz.visual_data.oMg[i].homogeneous.copy()
            T[:3, :3] = T[:3, :3] @ np.diag(obj.meshScale)
            target[viz.getViewerNodeName(obj, pin.GeometryType.VISUAL)].set_transform(T)

    def show(self, q: np.ndarray, q_plan: np.ndarray | None = None) -> None:
        """The robot at q and, if given (and a ghost is drawn), the ghost at q_plan; a ghost without q_plan hides."""
        self._place("robot", q)
        if "plan" in self._vizs:
            self.viewer["plan"].set_property("visible", q_plan is not None)
            if q_plan is not None:
                self._place("plan", q_plan)

    def frame(self, configurations: list[np.ndarray]) -> None:
        """Aim the camera at the robot over these configurations (looking along +y, the bundled robots' swing
        plane x–z) and put the floor grid just below the lowest point they reach."""
        viz = self._vizs["robot"]
        points = []
        for q in configurations[:: max(1, len(configurations) // 60)]:
            pin.forwardKinematics(viz.model, viz.data, np.asarray(q, float))
            pin.updateGeometryPlacements(viz.model, viz.data, viz.visual_model, viz.visual_data)
            points += [np.array(m.translation) for m in viz.visual_data.oMg]  # copies: the data is reused
            points += [np.array(viz.data.oMi[j].translation) for j in range(viz.model.njoints)]
        pts = np.array(points)
        lo, hi = pts.min(axis=0) - 0.1, pts.max(axis=0) + 0.1
        center, size = (lo + hi) / 2, float(max(np.max(hi - lo), 0.5))
        # The camera orbits the scene's origin: the robots move so that their centre is there.
        shift = np.eye(4)
        shift[:3, 3] = -center
        for root in self._vizs:
            self.viewer[root].set_transform(shift)
        # The camera's offset from its target, in three.js's y-up frame: world (x, y, z) is (x, z, −y) there.
        offset = np.array([0.2, -0.9, 0.15]) * size
        self.viewer["/Cameras/default/rotated/<object>"].set_property("position", [offset[0], offset[2], -offset[1]])
        grid = np.diag([1.5 * size / 20] * 3 + [1.0])  # meshcat's grid is 20 m wide: 1.5 robot sizes
        grid[2, 3] = lo[2] - center[2]
        self.viewer["/Grid"].set_transform(grid)

    def animate(
        self,
        times: np.ndarray,
        q: np.ndarray,
        plan_times: np.ndarray | None = None,
        q_plan: np.ndarray | None = None,
        fps: float = 30.0,
    ) -> None:
        """Load a replay: the robot along (times, q), the ghost along (plan_times, q_plan), sampled at ``fps``
        on the union of both time ranges (each held at its ends). Paused at the start; play it with the viewer's
        "Animations" controls (play, time slider)."""
        import meshcat.animation

        times, q = np.asarray(times, float), np.asarray(q, float)
        t0, t1 = times[0], times[-1]
        if q_plan is not None:
            plan_times, q_plan = np.asarray(plan_times, float), np.asarray(q_plan, float)
            t0, t1 = min(t0, plan_times[0]), max(t1, plan_times[-1])
        n = max(2, int(np.ceil((t1 - t0) * fps)) + 1)
        anim = meshcat.animation.Animation(default_framerate=fps)
        grid = np.linspace(t0, t1, n)
        for k, t in enumerate(grid):
            with anim.at_frame(self.viewer, k) as frame:
                self._place("robot", sample(times, q, t), frame)
                if q_plan is not None and "plan" in self._vizs:
                    self._place("plan", sample(plan_times, q_plan, t), frame)
        self.show(q[0], None if q_plan is None else q_plan[0])
        self.frame(list(q) + ([] if q_plan is None else list(q_plan)))
        self.viewer.set_animation(anim, play=False)

    def static_html(self) -> str:
        """The scene as one self-contained HTML page (client, geometry, animation): opens offline, no server."""
        return self.viewer.static_html()

    def close(self) -> None:
        """Stop the meshcat server this view started."""
        with contextlib.suppress(Exception):
            self.viewer.window.server_proc.kill()
            self.viewer.window.server_proc.wait(timeout=5)


def sample(times: np.ndarray, q: np.ndarray, t: float) -> np.ndarray:
    """q at time t, linear between samples and held beyond the ends (angles are not unwrapped)."""
    return np.array([np.interp(t, times, q[:, j]) for j in range(q.shape[1])])
