"""A mobile robot's base pose and body twist from (q, q̇), with Pinocchio: what a simulator publishes as odometry."""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from .robot import RobotModel


def odometry_link(robot: RobotModel, choice: str = "") -> str | None:
    """The link whose pose is the robot's odometry: ``choice`` if it names a link, None for 'none'; by default
    (''), for a mobile model (nonholonomic constraints or a floating base) the first link with mass in the
    tree's joint order (the chassis after the planar-base joints), else None."""
    if choice == "none":
        return None
    if choice:
        if choice not in robot.links:
            raise ValueError(f"odometry link {choice!r} is not a link of {robot.name} (links: {list(robot.links)})")
        return choice
    if not (robot.nonholonomic or robot.floating_base):
        return None
    model = robot.pin_model
    for i in range(1, model.njoints):
        if model.inertias[i].mass > 0:
            for f in model.frames:
                if f.parentJoint == i and f.type == pin.FrameType.BODY:
                    return f.name
    return None


class Odometer:
    """World pose (position, quaternion x, y, z, w) and body-frame twist (linear, angular) of one link."""

    def __init__(self, robot: RobotModel, link: str):
        self.model, self.data = robot.pin_model, robot.pin_model.createData()
        self.link, self.fid = link, robot.pin_model.getFrameId(link, pin.FrameType.BODY)

    def __call__(self, q: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        pin.forwardKinematics(self.model, self.data, np.asarray(q, float), np.asarray(v, float))
        M = pin.updateFramePlacement(self.model, self.data, self.fid)
        twist = pin.getFrameVelocity(self.model, self.data, self.fid, pin.ReferenceFrame.LOCAL)
        quat = pin.Quaternion(M.rotation).coeffs()  # (x, y, z, w)
        return M.translation.copy(), np.array(quat), twist.linear.copy(), twist.angular.copy()
