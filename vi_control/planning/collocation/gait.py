"""Periodic walking of the five-link RABBIT biped (MorenoMartin2022, §V-C): one step in single support, the heel-strike
impact map, legs relabelled — collocated by LG/LG2, then replayed in the midpoint VI under TV-LQR.

Model: ``biped5_stance`` (urdf/biped5.urdf with config/biped5_stance.yaml): q = (base_x, base_z, base_pitch,
left_hip, left_knee, right_hip, right_knee), the stance (left) foot pinned at the origin by a holonomic constraint,
passive ankle, |u| ≤ 100 N·m on hips and knees. A step lasts T; the swing (right) foot lands at (D, 0) with a
plastic impact (Hurmuzlu–Marghitu: M(q̇⁺ − q̇⁻) = J_swᵀΛ, J_sw q̇⁺ = 0, the trailing foot lifts off), and the legs
are relabelled: q⁺ = S q + (−D, 0, …), q̇⁺ ← S q̇⁺ with S swapping left and right joints, so one step is the period.
Cost ∫uᵀu dt (eq. 24); path constraints: the swing foot stays above the ground, and neither knee hyperextends
(Kelly 2017's knee-joint limit; without it the simple guess reaches hyperextended-swing-knee gaits at some N).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import ClassVar

import casadi as ca
import numpy as np

from ...control.lqr import tv_lqr
from ...integrators.base import Linearizable, StepError
from ...linearization import linearize_trajectory
from ...mechanics.graph_lock import OwnsGraphs, builds_graph
from ...model.robot import RobotModel
from ..cost import weight_matrix
from .dynamics import SecondOrderDynamics
from .solution import CollocationSolution
from .transcription import CollocationProblem, Guess, Transcription

LEG_SWAP = (0, 1, 2, 5, 6, 3, 4)  # q indices after relabelling: left (3, 4) <-> right (5, 6)


def _diagonal(W, n: int, name: str) -> np.ndarray:
    """The diagonal of a weight given as a scalar, a vector or a matrix (``cost.weight_matrix``'s forms, checked)."""
    return np.diagonal(weight_matrix(W, n, name)).copy()


@dataclass
class GaitCycle:
    """A periodic VI step: states X (N+1, nx) with discrete_impact(X_N) = X₀, inputs U (N, nu), periodic TV-LQR
    gains K; ``polish_mismatch`` how far the polished step was from closing, ``residuals`` the Newton history of
    ``close_cycle``, ``shift`` the deviation of X₀ from the polished step's start."""

    X: np.ndarray
    U: np.ndarray
    K: np.ndarray
    polish_mismatch: float
    residuals: list[float]
    shift: float


@dataclass
class BipedGait(OwnsGraphs):
    """The gait problem of one robot: step length D [m], step time T [s], input bound [N·m]; ``knee_limit`` [rad]
    the smallest knee angle along the step (0: the knees may bend but not hyperextend, as in Kelly 2017's biped and
    RABBIT; None: only the URDF's limits, which allow 0.5 rad of hyperextension)."""

    robot: RobotModel
    step_length: float = 0.5
    step_time: float = 0.8
    input_limit: float = 100.0
    leg_length: float = 0.8
    knee_limit: float | None = 0.0
    knees: ClassVar[tuple[int, int]] = (4, 6)  # q indices of the stance and swing knee (bent > 0)

    def __post_init__(self) -> None:
        if (
            self.robot.joint_names
            != ["base_x", "base_z", "base_pitch", "left_hip", "left_knee", "right_hip", "right_knee"]
            or self.robot.n_constraints != 2
        ):
            raise ValueError("BipedGait needs the biped5_stance model (planar base, two legs, stance foot pinned)")
        self.dynamics = SecondOrderDynamics(self.robot)
        self.S = np.eye(7)[list(LEG_SWAP)]
        self.offset = np.zeros(7)
        self.offset[0] = -self.step_length

    # ---- kinematics and the impact map -------------------------------------------------------------
    def foot(self, side: str, q):
        """(x, z) of a foot (expression or numbers)."""
        return self.dynamics.point_position(f"{side}_foot", [0.0, 0.0, 0.0], q)[[0, 2]]

    def impact(self, q, v):
        """q̇⁺ after the swing (right) foot strikes, before relabelling (symbolic or numeric)."""
        return self.dynamics.impact(q, v, lambda qq: self.foot("right", qq))[0]

    def relabel(self, q, v, offset=None):
        """(S q + offset, S v): the new stance leg is called left again, the world re-anchored at its foot."""
        off = self.offset if offset is None else offset
        if isinstance(q, (ca.SX, ca.MX)):
            off = off if isinstance(off, (ca.SX, ca.MX)) else ca.DM(off)
            return ca.mtimes(ca.DM(self.S), q) + off, ca.mtimes(ca.DM(self.S), v)
        return self.S @ q + off, self.S @ v

    # ---- the collocation problem ---------------------------------------------------------------------
    def _periodic(self, q0, v0, qf, vf):
        """Periodicity through the impact map, the stance foot still down and the swing foot at (D, 0) at t_f."""
        q_next, v_next = self.relabel(qf, self.impact(qf, vf))
        e = ca.vertcat(
            q0 - q_next, v0 - v_next, self.foot("right", qf) - ca.DM([self.step_length, 0.0]), self.foot("left", qf)
        )
        return e, 0.0, 0.0

    def _clearance(self, q, v, u):
        return self.foot("right", q)[1], 0.0, np.inf

    def _no_hyperextension(self, q, v, u):
        return ca.vertcat(*(q[i] for i in self.knees)), self.knee_limit, np.inf

    def problem(self, method: str, nodes: int, intervals: int = 1, **options) -> CollocationProblem:
        """The periodic gait as a CollocationProblem (all boundary values free: the impact map ties them)."""
        return CollocationProblem(
            self.dynamics,
            method=method,
            nodes=nodes,
            intervals=intervals,
            cost="effort",
            fix_q0=False,
            fix_v0=False,
            fix_qf=False,
            fix_vf=False,
            input_limits=np.full(4, self.input_limit),
            path_constraints=(self._clearance,) + (() if self.knee_limit is None else (self._no_hyperextension,)),
            boundary_constraints=(self._periodic,),
            consistent_start=False,
            **options,
        )

    @cached_property
    def standing_poses(self) -> tuple[np.ndarray, np.ndarray]:
        """Straight-legged double-support poses at the start and the end of a step (legs ±α, torso upright)."""
        a = np.arcsin(0.5 * self.step_length / self.leg_length)
        q_start = np.array([-0.5 * self.step_length, self.leg_length * np.cos(a), 0.0, -a, 0.0, a, 0.0])
        q_end = self.S @ (q_start - self.offset)
        return q_start, q_end

    def guess(self) -> Guess:
        """The simple interpolated guess: a straight line between the two double-support poses, u = 0."""
        q_start, q_end = self.standing_poses
        return Guess.linear(q_start, q_end, self.step_time, 4)

    def solve(
        self, method: str, nodes: int, intervals: int = 1, raise_on_failure: bool = True, **options
    ) -> CollocationSolution:
        tr = Transcription(self.problem(method, nodes, intervals, **options))
        return tr.solve(tf=self.step_time, guess=self.guess(), raise_on_failure=raise_on_failure)

    # ---- the discrete (VI) cycle ---------------------------------------------------------------------
    def discrete_impact(self, vi: Linearizable, x: np.ndarray, anchor: bool = True) -> np.ndarray:
        """The impact map on VI states: q̇⁻ = M⁻¹(p + (Δt/2)∇V) (the midpoint rule's velocity), the impact,
        relabelled, then x⁺ = (q⁺, D₂L_d(q⁺ − Δt q̇⁺, q⁺)) — the conversions ``plan_task`` uses for start states.

        ``anchor``: re-anchor the world at the landing foot's actual position (x and z), so the stance constraint
        holds at q⁺ even when the foot lands off (D, 0); else the nominal shift by −D.
        """
        return np.array(self._impact_function(vi, anchor)(x)).ravel()

    @builds_graph  # (the Jacobian's function is built, evaluated and released under the lock)
    def impact_jacobian(self, vi: Linearizable, x: np.ndarray) -> np.ndarray:
        """∂x⁺/∂x of ``discrete_impact`` (anchored) by automatic differentiation, (nx, nx)."""
        f = self._impact_function(vi, True)
        xs = ca.SX.sym("x", vi.nx)
        return np.array(ca.Function("dimpact", [xs], [ca.jacobian(f(xs), xs)])(x))

    @builds_graph
    def _impact_function(self, vi: Linearizable, anchor: bool) -> ca.Function:
        key = (id(vi), anchor)
        cache = self.__dict__.setdefault("_impact_cache", {})
        if key in cache:
            return cache[key]
        nq, dt, dyn = vi.nq, vi.dt, self.dynamics
        xs = ca.SX.sym("x", 2 * nq)
        q, p = xs[:nq], xs[nq:]
        V = ca.Function("V", [dyn.tree.q], [dyn.tree.potential])
        grad_V = ca.gradient(V(q), q)
        v = ca.solve(dyn.mass(q), p + 0.5 * dt * grad_V)
        J = dyn.constraint_jacobian(q)  # the stance foot's velocity is zero before the impact
        MiJt = ca.solve(dyn.mass(q), J.T)
        v = v - ca.mtimes(MiJt, ca.solve(ca.mtimes(J, MiJt), ca.mtimes(J, v)))
        off = ca.DM(self.offset)
        if anchor:
            foot = self.foot("right", q)
            off = ca.vertcat(-foot[0], -foot[1], ca.SX.zeros(nq - 2))
        q_new, v_new = self.relabel(q, self.impact(q, v), off)
        q1 = ca.SX.sym("q1", nq)
        L = ca.Function("L", [dyn.tree.q, dyn.tree.v], [dyn.tree.kinetic - dyn.tree.potential])
        q0s = ca.SX.sym("q0", nq)
        Ld = dt * L((q0s + q1) / 2, (q1 - q0s) / dt)
        D2 = ca.Function("D2Ld", [q0s, q1], [ca.gradient(Ld, q1)])
        x_new = ca.vertcat(q_new, D2(q_new - dt * v_new, q_new))
        cache[key] = ca.Function("impact_map", [xs], [x_new])
        return cache[key]

    def vi_step(
        self, vi: Linearizable, sol: CollocationSolution, Q, R, Qf, polish_iterations: int = 10
    ) -> tuple[np.ndarray, np.ndarray, float]:
        """The collocated step on the VI: resampled onto its grid (as ``plan_task`` does), polished by DDP (tracking
        the collocated states with Q, R, Qf, from a TV-LQR-stabilized rollout: the step is unstable open loop).
        Returns (X, U, mismatch): mismatch = ``deviation`` of impact(X_N) from X₀, how far the VI step is from
        closing the cycle by itself."""
        from ..cost import QuadraticTrackingCost
        from ..ddp import ddp, reference_feedback_guess
        from .planner import resample

        steps = int(round(sol.tf / vi.dt))
        if abs(steps * vi.dt - sol.tf) > 1e-9:
            raise ValueError(f"the step time {sol.tf} is not a multiple of the VI's dt {vi.dt}")
        limits = np.full(4, self.input_limit)
        x0 = vi.state_from_configurations(sol.q([-vi.dt])[0], sol.q([0.0])[0])
        X_ref, U_ref = resample(vi, sol, x0, steps, limits, sol.Q[-1], rest_at_end=False)  # it ends in a stride
        U0 = reference_feedback_guess(vi, x0, X_ref, U_ref, (Q, R, Qf), limits)
        res = ddp(
            vi,
            QuadraticTrackingCost(X_ref, U_ref, Q, R, Qf),
            x0,
            U0,
            input_limits=limits,
            max_iterations=polish_iterations,
        )
        return res.X, res.U, self.deviation(vi, self.discrete_impact(vi, res.X[-1]), res.X[0])

    def close_cycle(
        self,
        vi: Linearizable,
        X: np.ndarray,
        U: np.ndarray,
        K: np.ndarray,
        weights=None,
        tol: float = 1e-11,
        max_iterations: int = 20,
    ) -> tuple[np.ndarray, np.ndarray, list[float]]:
        """The periodic VI step next to the polished (X, U): a VI rollout whose end state maps through
        ``discrete_impact`` exactly onto its start.

        Newton on r(z, Ū) = x_N − z, z the pre-impact state (nx unknowns) and Ū a feedforward (N·nu unknowns), where
        x₀ = impact(z) and x_{k+1} = f(x_k, Ū_k + K_k(X_k − x_k)) — the rollout stabilized by the gains K about the
        polished X (single shooting open loop is hopeless: the step amplifies a 0.1 start error to ~100). The
        system is underdetermined (nx equations); the correction is the minimum-norm one in the metric ``weights`` =
        (W_x, W_u) (default identity), δ = −W⁻¹Jᵀ(JW⁻¹Jᵀ)⁻¹r: the smallest change of the polished step that closes the
        cycle, converging quadratically. z, not x₀, is the unknown because impact(z) is a valid constrained VI state
        for any z (stance foot re-anchored on the ground, p from D₂L_d), and ∂r/∂z contains −I (full row rank).
        Returns the rollout X*, the inputs it applied U* (so X*_{k+1} = vi.step(X*_k, U*_k)), and ‖r‖∞ per iteration.
        """
        nx, nu, N = vi.nx, vi.nu, len(U)
        Wx, Wu = (1.0, 1.0) if weights is None else weights
        Wx_inv, Wu_inv = np.diag(1.0 / _diagonal(Wx, nx, "W_x")), np.diag(1.0 / _diagonal(Wu, nu, "W_u"))
        X_ref = np.asarray(X, float)

        def rollout(z, Uff):
            x, Xs, Us = self.discrete_impact(vi, z), [], []
            for k in range(N):
                u = Uff[k] + K[k] @ (X_ref[k] - x)
                Xs.append(x)
                Us.append(u)
                x = vi.step(x, u, step_index=k)
            return np.array(Xs + [x]), np.array(Us)

        z, Uff = X_ref[-1].copy(), np.array(U, float)
        Xs, Us = rollout(z, Uff)
        history = [float(np.abs(Xs[-1] - z).max())]
        for _ in range(max_iterations):
            if history[-1] <= tol:
                break
            traj = linearize_trajectory(vi, Xs, Us)
            Phi, JU = np.eye(nx), np.zeros((nx, N, nu))
            for k in range(N - 1, -1, -1):  # Φ = Π(A_j − B_j K_j) for j > k: ∂x_N/∂Ū_k = Φ B_k
                JU[:, k] = Phi @ traj.B[k]
                Phi = Phi @ (traj.A[k] - traj.B[k] @ K[k])
            Jz = Phi @ self.impact_jacobian(vi, z) - np.eye(nx)
            JWJ = Jz @ Wx_inv @ Jz.T + np.einsum("ikj,jl,mkl->im", JU, Wu_inv, JU)
            y = np.linalg.solve(JWJ, z - Xs[-1])
            dz, dU = Wx_inv @ Jz.T @ y, np.einsum("jl,ikl,i->kj", Wu_inv, JU, y)
            for alpha in (1.0, 0.5, 0.25, 0.125):
                try:
                    trial = rollout(z + alpha * dz, Uff + alpha * dU)
                except StepError:
                    continue
                if np.abs(trial[0][-1] - z - alpha * dz).max() < history[-1]:
                    z, Uff, (Xs, Us) = z + alpha * dz, Uff + alpha * dU, trial
                    break
            else:
                break
            history.append(float(np.abs(Xs[-1] - z).max()))
        return Xs, Us, history

    def periodic_gains(self, vi: Linearizable, X: np.ndarray, U: np.ndarray, Q, R, cycles: int = 20) -> np.ndarray:
        """TV-LQR gains of one step that are optimal over repeated steps: the Riccati recursion (Johnson2015, eq. 36)
        run backwards through the step and through the impact map's linearization until P₀ is periodic."""
        traj = linearize_trajectory(vi, X, U)
        Dx = self.impact_jacobian(vi, X[-1])
        P0 = weight_matrix(Q, vi.nx, "Q")
        for _ in range(cycles):
            K, P = tv_lqr(traj.A, traj.B, Q, R, Dx.T @ P0 @ Dx)
            done = np.abs(P[0] - P0).max() <= 1e-9 * np.abs(P[0]).max()  # (relative: P is in units of the cost)
            P0 = P[0]
            if done:
                break
        return K

    def periodic_step(
        self, vi: Linearizable, sol: CollocationSolution, Q, R, Qf, polish_iterations: int = 10
    ) -> GaitCycle:
        """The reference the VI walks on: the collocated step polished on the VI (``vi_step``), closed into an exact
        cycle (``close_cycle``, minimum-norm in the polish's weights diag Q, diag R, rolled out under the polished
        step's periodic gains), and the periodic TV-LQR gains of the closed cycle."""
        X, U, mismatch = self.vi_step(vi, sol, Q, R, Qf, polish_iterations)
        K = self.periodic_gains(vi, X, U, Q, R)
        Xc, Uc, residuals = self.close_cycle(vi, X, U, K, weights=(_diagonal(Q, vi.nx, "Q"), _diagonal(R, vi.nu, "R")))
        return GaitCycle(
            X=Xc,
            U=Uc,
            K=self.periodic_gains(vi, Xc, Uc, Q, R),
            polish_mismatch=mismatch,
            residuals=residuals,
            shift=self.deviation(vi, Xc[0], X[0]),
        )

    def constrained_velocity(self, vi: Linearizable, x: np.ndarray) -> np.ndarray:
        """q̇ of a VI state with the stance foot at rest: M⁻¹(p + (Δt/2)∇V) projected M-orthogonally onto Dh q̇ = 0.

        A constrained VI state's p is defined modulo Dh(q)ᵀμ (the step's multipliers absorb such a change, Johnson2015
        eq. 28a): this velocity is what the state means physically.
        """
        q = x[: vi.nq]
        M = np.array(self.dynamics.mass(q))
        v = np.linalg.solve(M, x[vi.nq :] + 0.5 * vi.dt * vi.potential_gradient(q))
        J = np.array(self.dynamics.constraint_jacobian(q)).reshape(2, vi.nq)
        MiJt = np.linalg.solve(M, J.T)
        return v - MiJt @ np.linalg.solve(J @ MiJt, J @ v)

    def deviation(self, vi: Linearizable, x: np.ndarray, y: np.ndarray) -> float:
        """max(|q_x − q_y|∞, |q̇_x − q̇_y|∞) with ``constrained_velocity``: the distance between two gait states."""
        nq = vi.nq
        return float(
            max(
                np.abs(x[:nq] - y[:nq]).max(),
                np.abs(self.constrained_velocity(vi, x) - self.constrained_velocity(vi, y)).max(),
            )
        )

    def replay(
        self,
        vi: Linearizable,
        X: np.ndarray,
        U: np.ndarray,
        K: np.ndarray | None,
        steps: int = 10,
        x0: np.ndarray | None = None,
    ) -> tuple[np.ndarray, list[np.ndarray]]:
        """Walk ``steps`` steps in the VI: each step u = U_k + K_k(X_k − x) (K = None: open loop), clamped to the
        input bound, then the impact map. Returns the start-of-step ``deviation`` from X₀ (steps + 1,) and the
        states of every step."""
        x = X[0].copy() if x0 is None else np.asarray(x0, float).copy()
        dev, walked = [self.deviation(vi, x, X[0])], []
        for _ in range(steps):
            Xs = [x]
            for k in range(len(U)):
                u = U[k] + (K[k] @ (X[k] - x) if K is not None else 0.0)
                x = vi.step(x, np.clip(u, -self.input_limit, self.input_limit), step_index=k)
                Xs.append(x)
            walked.append(np.array(Xs))
            x = self.discrete_impact(vi, x)
            dev.append(self.deviation(vi, x, X[0]))
        return np.array(dev), walked
