"""The RABBIT gait in minimal coordinates (MorenoMartin2022, §V-C, Kelly 2017): the stance foot as the root.

``biped5_pinned`` (urdf/biped5_pinned.urdf) is the same robot as ``biped5_stance`` with the stance foot pinned by
construction instead of by a holonomic constraint: q = (stance_ankle, stance_knee, stance_hip, swing_hip,
swing_knee), 5 relative joint angles, no base coordinates in metres. The paper states the gait in the *absolute* link
angles θ = A q (A constant, ``ABSOLUTE``), and its joint error E^[2] (eq. 19) sums over them — all in radians.
Collocation is invariant under a constant linear change of coordinates (the polynomials and the dynamics rows map
one to one), so collocating the relative angles solves the paper's problem, and since ε^[2] = q̈ − g is linear in the
coordinates, ε^[2]_θ = A ε^[2]_q (``dynamic_errors(..., coordinates=ABSOLUTE)``).

The heel-strike is computed through the floating-base model (``BipedGait`` on ``biped5_stance``): the state is
mapped to the floating base (the hip position by forward kinematics, base_pitch = ankle − knee − hip), the plastic
impact and the relabelling act there, and the result is mapped back (the new stance foot is at rest after the
impact, so the floating state is one of the pinned model).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import ClassVar

import casadi as ca
import numpy as np

from ...mechanics.graph_lock import builds_graph
from ...model.bundled import load_bundled
from .dynamics import SecondOrderDynamics
from .gait import BipedGait

PINNED_JOINTS = ["stance_ankle", "stance_knee", "stance_hip", "swing_hip", "swing_knee"]
# floating-base angles (base_pitch, left_hip, left_knee, right_hip, right_knee) = TO_FLOATING @ q_pinned
TO_FLOATING = np.array([[1, -1, -1, 0, 0], [0, 0, 1, 0, 0], [0, 1, 0, 0, 0], [0, 0, 0, 1, 0], [0, 0, 0, 0, 1]], float)
# absolute link angles (stance tibia, stance femur, torso, swing femur, swing tibia) = ABSOLUTE @ q_pinned
ABSOLUTE = np.array([[1, 0, 0, 0, 0], [1, -1, 0, 0, 0], [1, -1, -1, 0, 0], [1, -1, -1, 1, 0], [1, -1, -1, 1, 1]], float)


@dataclass
class PinnedBipedGait(BipedGait):
    """``BipedGait``'s collocation problem (same step, cost, clearance, knee limit, impact) on ``biped5_pinned``.

    Collocation only: the VI replay runs on the floating-base model (``floating``), where the impact re-anchors.
    """

    floating: BipedGait | None = field(default=None, repr=False)
    knees: ClassVar[tuple[int, int]] = (1, 4)

    def __post_init__(self) -> None:
        if self.robot.joint_names != PINNED_JOINTS or self.robot.n_constraints:
            raise ValueError(f"PinnedBipedGait needs the biped5_pinned model (joints {PINNED_JOINTS}, no constraints)")
        self.dynamics = SecondOrderDynamics(self.robot)
        if self.floating is None:
            self.floating = BipedGait(
                load_bundled("biped5_stance"),
                step_length=self.step_length,
                step_time=self.step_time,
                input_limit=self.input_limit,
                leg_length=self.leg_length,
                knee_limit=self.knee_limit,
            )

    def foot(self, side: str, q):
        """(x, z) of the swing ("right") or stance ("left", at the origin) foot."""
        link = "swing_foot" if side == "right" else "stance_foot"
        return self.dynamics.point_position(link, [0.0, 0.0, 0.0], q)[[0, 2]]

    @cached_property
    @builds_graph
    def _maps(self) -> tuple[ca.Function, ca.Function]:
        """(q, v) ↦ floating-base (q_F, v_F), and the floating post-impact relabelled state ↦ pinned (q, v)."""
        q, v = ca.SX.sym("q", 5), ca.SX.sym("v", 5)
        hip = self.dynamics.point_position("torso", [0.0, 0.0, 0.0], q)[[0, 2]]
        qF = ca.vertcat(hip, ca.mtimes(ca.DM(TO_FLOATING), q))
        vF = ca.mtimes(ca.jacobian(qF, q), v)
        to_floating = ca.Function("to_floating", [q, v], [qF, vF])
        qf, vf = ca.SX.sym("qF", 7), ca.SX.sym("vF", 7)
        back = ca.DM(np.linalg.inv(TO_FLOATING))
        q_new, v_new = self.floating.relabel(qf, self.floating.impact(qf, vf))
        impact = ca.Function("impact_pinned", [qf, vf], [ca.mtimes(back, q_new[2:]), ca.mtimes(back, v_new[2:])])
        return to_floating, impact

    def to_floating(self, q, v):
        """The floating-base state (base_x, base_z, base_pitch, hips, knees) of a pinned state, stance foot at 0."""
        return self._maps[0](q, v)

    def impact_relabel(self, q, v):
        """The pinned state after the heel-strike at (q, v⁻), legs relabelled (through the floating base)."""
        return self._maps[1](*self.to_floating(q, v))

    def _periodic(self, q0, v0, qf, vf):
        q_next, v_next = self.impact_relabel(qf, vf)
        return ca.vertcat(q0 - q_next, v0 - v_next, self.foot("right", qf) - ca.DM([self.step_length, 0.0])), 0.0, 0.0

    @cached_property
    def standing_poses(self) -> tuple[np.ndarray, np.ndarray]:
        """The floating model's straight-legged double-support poses in the pinned coordinates."""
        back = np.linalg.inv(TO_FLOATING)
        return tuple(back @ q[2:] for q in self.floating.standing_poses)
