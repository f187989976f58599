"""Joint stops for simulation: each joint's URDF position limits as an inelastic unilateral constraint on the
midpoint VI's step.

A step is first taken free. Every joint the free step carries beyond a limit is then held at that limit by a
linear constraint q_j = bound (the ``joints`` coupling of the system YAML; Johnson2015, eq. 28, whose constraint force
acts as an impulse within the step) and the step is solved again, until no joint crosses (an active set). A joint
stays held while the free step would push it beyond, and is released as soon as the free step moves it back
inside: the discrete form of λ ≥ 0, q_j ≤ bound, λ·(bound − q_j) = 0 for an inelastic stop. The impact takes the
joint's velocity to zero and keeps the momentum of the motions the stop allows (to O(Δt) the impact map
q̇⁺ = q̇⁻ − M⁻¹e_j (e_jᵀq̇⁻)/(e_jᵀM⁻¹e_j)); at rest against the stop the constraint carries the static load.

For simulation only — what Gazebo's or the hardware's end stops do: the planner and the controller keep the smooth
VI (a plan that needs a stop is a plan to change). A held system is built on first use with the numpy step (~1 ms a
step) and compiled meanwhile in a background thread (a few seconds the first time, ~0.1 s from the disk cache; then
~12 µs a step for the panda), which replaces it when ready: compiling in the step would stall a real-time simulator.
"""

from __future__ import annotations

import threading
from dataclasses import replace

import numpy as np

from ..model.system_config import Constraint
from .midpoint import MidpointVI

# A free step that ends this far beyond a limit counts as crossing it (round-off of a joint held at its bound).
STOP_TOLERANCE = 1e-12


class JointStops:
    """Steps of ``vi`` with inelastic stops at the URDF position limits of its joints that have them (revolute and
    prismatic joints with lower < upper, moving dynamically, not coupled by a ``joints`` constraint)."""

    def __init__(self, vi: MidpointVI, compile_held: bool = True):
        if type(vi) is not MidpointVI:
            raise TypeError(f"joint stops need the midpoint VI (Johnson2015), got {type(vi).__name__}")
        robot = vi.robot
        coupled = {name for c in robot.constraints if c.type == "joints" for name in c.joints}
        self.vi = vi
        self.names = robot.joint_names
        self.lower = np.full(vi.nq, -np.inf)
        self.upper = np.full(vi.nq, np.inf)
        for i in vi.idx_d:
            j = robot.joints[i]
            if j.type in ("revolute", "prismatic") and j.lower < j.upper and j.name not in coupled:
                self.lower[i], self.upper[i] = j.lower, j.upper
        self.stopped = bool(np.isfinite(self.lower).any() or np.isfinite(self.upper).any())
        # The common case (nothing near a limit) in one test of |q − mid| ≤ half; a one-sided limit takes the full test.
        finite = np.isfinite(self.lower) & np.isfinite(self.upper)
        one_sided = np.isfinite(self.lower) != np.isfinite(self.upper)
        lo, hi = np.where(finite, self.lower, 0.0), np.where(finite, self.upper, 0.0)
        self._mid = 0.5 * (lo + hi)
        self._half = np.where(finite, 0.5 * (hi - lo) + STOP_TOLERANCE, np.where(one_sided, -1.0, np.inf))
        self.compile_held = compile_held and vi.compiled_driver  # (as vi: a compiler is there)
        self._held: dict[tuple[tuple[int, float], ...], list[MidpointVI]] = {}  # [numpy, then compiled] system
        self.active: tuple[tuple[int, float], ...] = ()  # (joint index, bound) held in the last step

    def _crossed(self, q0: np.ndarray, q1: np.ndarray) -> set[tuple[int, float]]:
        """(joint, bound) of the joints that start within their limits and end beyond one."""
        inside = (q0 >= self.lower - STOP_TOLERANCE) & (q0 <= self.upper + STOP_TOLERANCE)
        low = inside & (q1 < self.lower - STOP_TOLERANCE)
        high = inside & (q1 > self.upper + STOP_TOLERANCE)
        return {(int(i), float(self.lower[i])) for i in np.flatnonzero(low)} | {
            (int(i), float(self.upper[i])) for i in np.flatnonzero(high)
        }

    def held_system(self, active: tuple[tuple[int, float], ...]) -> MidpointVI:
        """The VI with the joints of ``active`` held at their bounds (built once per active set; the numpy step
        until the compiled one is ready)."""
        entry = self._held.get(active)
        if entry is None:
            robot = self.vi.robot
            holds = tuple(
                Constraint(
                    type="joints",
                    link_a="",
                    point_a=(0.0, 0.0, 0.0),
                    joints=(self.names[i],),
                    coefficients=(1.0,),
                    offset=bound,
                )
                for i, bound in active
            )
            held = replace(robot, constraints=robot.constraints + holds)
            entry = self._held[active] = [MidpointVI(held, self.vi.dt, self.vi.settings, compile=False)]
            if self.compile_held:
                threading.Thread(target=self._compile, args=(entry, held), daemon=True).start()
        return entry[0]

    def _compile(self, entry: list[MidpointVI], held) -> None:
        try:
            compiled = MidpointVI(held, self.vi.dt, self.vi.settings)
        except Exception:  # noqa: BLE001 — a failed build keeps the numpy step, which is correct, only slower
            return
        entry[0] = compiled  # (one reference swapped: atomic for the stepping thread)

    def step(self, x: np.ndarray, u: np.ndarray, step_index: int | None = None) -> np.ndarray:
        """x_{k+1} from x_k under u_k with the stops (StepError as ``MidpointVI.step``)."""
        x1 = self.vi.step(x, u, step_index=step_index)
        active: set[tuple[int, float]] = set()
        if self.stopped and not (np.abs(x1[: self.vi.nq] - self._mid) <= self._half).all():  # (cheap when inside)
            q0 = np.asarray(x, float)[: self.vi.nq]
            crossed = self._crossed(q0, x1[: self.vi.nq])
            while crossed - active:  # a held joint can push another one beyond its limit
                active |= crossed
                x1 = self.held_system(tuple(sorted(active))).step(x, u, step_index=step_index)
                crossed = self._crossed(q0, x1[: self.vi.nq])
        self.active = tuple(sorted(active)) if active else ()
        return x1
