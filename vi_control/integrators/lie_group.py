"""Lie-group variational integrator for one rigid body on SO(3) or SE(3) (Jimenez2013, §4, §5, §5.2).

State x_k = (coordinates of g_k, ν_k): the rotation matrix row by row (and the position on SE(3)), then the body
momentum ν_k ∈ 𝔤* at t_k; ``nx`` = 9 + 3 or 12 + 6 numbers, ``ndx`` = 2·dim tangent directions. One step solves the
forced discrete Euler–Poincaré equation ν_k = (dτ⁻¹_{hξ})*𝕀ξ − (h/2) f(g_k, ξ, u_k) for ξ_k by Newton with the exact
Jacobian, then g_{k+1} = g_k τ(hξ_k) and ν_{k+1} = (dτ⁻¹_{−hξ})*𝕀ξ + (h/2) f(g_{k+1}, ξ, u_k) (``mechanics.
euler_poincare``). The input u_k is held over the step (u_k⁻ = u_k⁺, what a zero-order-hold actuator does).

The group element is only ever multiplied by retractions τ(hξ) ∈ G: it stays on the group to round-off without
renormalization; spatial momentum Ad*_{g⁻¹}ν is conserved exactly by an unforced step (discrete Noether).
"""

from __future__ import annotations

from dataclasses import replace
from functools import cached_property

import numpy as np
from scipy.linalg import lapack

from ..mechanics.euler_poincare import pack_parameters, potential_energy, restoring_wrench, step_functions
from ..mechanics.groups import Retraction, get_group
from ..model.rigid_body import RigidBodyModel
from .base import (
    ConvergenceError,
    NewtonSettings,
    SingularityError,
    State,
    StepDerivatives,
    StepResult,
    as_vector,
    check_guess,
    check_time_step,
    input_sequence,
    refuse_complex,
    step_rollout,
)

__all__ = ["LieGroupState", "LieGroupVI"]

_JACOBIAN = "the Euler–Poincaré Jacobian ∂ν_k/∂ξ_k"
# A state whose rotation is further than this from orthonormal was not produced by this integrator.
_ON_GROUP_TOL = 1e-6


class LieGroupState(State):
    """x = (g, ν) on G × 𝔤*: ``diff(x0, x1)`` = (τ⁻¹(g0⁻¹g1), ν1 − ν0), ``integrate(x, dx)`` = (g τ(dξ), ν + dν).

    τ⁻¹ is defined only near the identity (Cayley: not at relative rotations by π): ``diff`` then raises
    ``RetractionDomainError`` naming it. Both act on single states and on stacks (..., nx).
    """

    def __init__(self, group_name: str, retraction: str = "cayley"):
        self.group = get_group(group_name)
        self.retraction = Retraction(self.group, retraction)
        self.nq, self.dim = self.group.nq, self.group.dim
        self.nx, self.ndx = self.nq + self.dim, 2 * self.dim

    def zero(self) -> np.ndarray:
        return np.concatenate([self.group.to_coordinates(self.group.identity()), np.zeros(self.dim)])

    def pose(self, x: np.ndarray) -> np.ndarray:
        return self.group.from_coordinates(np.asarray(x, float)[: self.nq])

    def _map(self, fn, a: np.ndarray, b: np.ndarray, n_out: int) -> np.ndarray:
        a, b = np.asarray(a, float), np.asarray(b, float)
        shape = np.broadcast_shapes(a.shape[:-1], b.shape[:-1])
        if not shape:
            return fn(a, b)
        a2, b2 = np.broadcast_to(a, shape + a.shape[-1:]), np.broadcast_to(b, shape + b.shape[-1:])
        out = np.array([fn(u, v) for u, v in zip(a2.reshape(-1, a.shape[-1]), b2.reshape(-1, b.shape[-1]))])
        return out.reshape(shape + (n_out,))

    def _diff1(self, x0: np.ndarray, x1: np.ndarray) -> np.ndarray:
        G, r = self.group, self.retraction
        d = r.tau_inv(G.inverse(self.pose(x0)) @ self.pose(x1))
        return np.concatenate([d, x1[self.nq :] - x0[self.nq :]])

    def _integrate1(self, x: np.ndarray, dx: np.ndarray) -> np.ndarray:
        g = self.pose(x) @ self.retraction.tau(dx[: self.dim])
        return np.concatenate([self.group.to_coordinates(g), x[self.nq :] + dx[self.dim :]])

    def diff(self, x0: np.ndarray, x1: np.ndarray) -> np.ndarray:
        return self._map(self._diff1, x0, x1, self.ndx)

    def integrate(self, x: np.ndarray, dx: np.ndarray) -> np.ndarray:
        return self._map(self._integrate1, x, dx, self.nx)


class LieGroupVI:
    """Forced Lie-group variational integrator of a RigidBodyModel (a ``Linearizable`` discrete system).

    ``retraction``: 'cayley' (default, Jimenez2013, §6.1) or 'exp'; ``settings``: the Newton stopping rule
    (NewtonSettings, or its fields as keywords). Sizes: nq = 9 (SO(3)) or 12 (SE(3)) stored coordinates of g,
    nx = nq + dim, ``state.ndx`` = 2·dim, nu = number of actuators (thruster efforts or torques: they act through
    the input matrix B, not on coordinates; ``idx_act`` only numbers them), no constraints or prescribed joints.
    ``velocity(x)`` is the body twist ξ = 𝕀⁻¹ν and ``state_from_velocity(q, ξ)`` its inverse (ν = 𝕀ξ, Jimenez2013
    §5's boundary relation).
    """

    DEFAULT_SETTINGS = NewtonSettings(tol=1e-12, max_iterations=30, rcond_min=1e-13, step_tol=1e-15)

    def __init__(
        self,
        robot: RigidBodyModel,
        dt: float,
        settings: NewtonSettings | None = None,
        *,
        retraction: str = "cayley",
        compile: bool | None = None,
        **setting_overrides,
    ):
        if not isinstance(robot, RigidBodyModel):
            raise TypeError(
                f"LieGroupVI needs a RigidBodyModel (vi_control.model.rigid_body), got {type(robot).__name__}"
            )
        self.robot, self.dt = robot, check_time_step(dt)
        self.settings = replace(settings or self.DEFAULT_SETTINGS, **setting_overrides).for_model(robot.unit_momentum)
        self.state = LieGroupState(robot.group, retraction)
        self.group, self.retraction = self.state.group, self.state.retraction
        self.dim, self.nq, self.nx = self.state.dim, self.state.nq, self.state.nx
        self.nu = self.n_torques = len(robot.actuators)
        self.nc, self.nk, self.nd = 0, 0, self.nq
        self.idx_d, self.idx_k, self.idx_act = np.arange(self.nq), np.zeros(0, int), np.arange(self.nu)
        self.functions = step_functions(robot.group, retraction, self.nu, compile)
        self.params = pack_parameters(robot, self.dt)
        self.inertia = robot.spatial_inertia
        self._inertia_inv = np.linalg.inv(self.inertia)
        self.iteration_history: list[int] = []

    # ---- state conversions -------------------------------------------------------------------------------
    def pose(self, x: np.ndarray) -> np.ndarray:
        return self.state.pose(x)

    def state_from_pose(self, g: np.ndarray, twist: np.ndarray | None = None) -> np.ndarray:
        """x = (g, 𝕀ξ) from a group element (matrix) and a body twist (default rest)."""
        return self.state_from_velocity(
            self.group.to_coordinates(np.asarray(g, float)), np.zeros(self.dim) if twist is None else twist
        )

    def state_from_velocity(self, q: np.ndarray, qdot: np.ndarray) -> np.ndarray:
        """x = (q, 𝕀ξ): q the stored coordinates of g, ``qdot`` the body twist ξ (Jimenez2013, §5: ν = ∂l/∂ξ)."""
        q, qdot = as_vector(self, q, self.nq, "q"), as_vector(self, qdot, self.dim, "qdot (the body twist)")
        return np.concatenate([q, self.inertia @ qdot])

    def state_from_configurations(self, q_prev: np.ndarray, q: np.ndarray) -> np.ndarray:
        """Discrete Legendre transform from two configurations Δt apart: ξ = τ⁻¹(g_prev⁻¹g)/h and
        ν = (dτ⁻¹_{−hξ})*𝕀ξ + (h/2)(Hξ + w(g)), i.e. eq. 27 without the (unknown) input, as the midpoint VI's F⁺ = 0."""
        G, h, b = self.group, self.dt, self.robot
        g0, g1 = G.from_coordinates(q_prev), G.from_coordinates(q)
        xi = self.retraction.tau_inv(G.inverse(g0) @ g1) / h
        nu = self.retraction.dtau_inv(-h * xi).T @ (self.inertia @ xi)
        nu = nu + 0.5 * h * (b.drag_matrix @ xi + restoring_wrench(G, g1, b.weight, b.buoyancy, b.buoyancy_center))
        return np.concatenate([np.asarray(q, float), nu])

    def velocity(self, x: np.ndarray) -> np.ndarray:
        """Body twist ξ = 𝕀⁻¹ν."""
        return self._inertia_inv @ as_vector(self, x, self.nx, "state x")[self.nq :]

    def energy(self, x: np.ndarray) -> float:
        """½⟨ν, 𝕀⁻¹ν⟩ + V(g) (gravity and buoyancy)."""
        x = as_vector(self, x, self.nx, "state x")
        nu = x[self.nq :]
        b = self.robot
        return float(
            0.5 * nu @ self._inertia_inv @ nu
            + potential_energy(self.group, self.pose(x), b.weight, b.buoyancy, b.buoyancy_center)
        )

    def spatial_momentum(self, x: np.ndarray) -> np.ndarray:
        """π = Ad*_{g⁻¹} ν, conserved by the unforced flow and by every unforced step (discrete Noether)."""
        g = self.pose(x)
        return self.group.Ad(self.group.inverse(g)).T @ np.asarray(x, float)[self.nq :]

    def potential_gradient(self, q: np.ndarray) -> np.ndarray:
        """l_g*∂V: minus the body wrench of gravity and buoyancy at g (the wrench an actuator must cancel)."""
        b = self.robot
        return -restoring_wrench(self.group, self.group.from_coordinates(q), b.weight, b.buoyancy, b.buoyancy_center)

    def wrap(self, x: np.ndarray) -> np.ndarray:
        return x

    def constraint(self, q: np.ndarray) -> np.ndarray:
        return np.zeros(0)

    # ---- one step --------------------------------------------------------------------------------------------
    def check_inputs(self, x: np.ndarray, u: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """(x, u) as flat float arrays; ValueError naming a wrong size, NaN/inf, or a rotation off SO(3)."""
        refuse_complex(x, "state")
        refuse_complex(u, "input")
        x = np.asarray(x, float).ravel()
        u = np.zeros(self.nu) if u is None else np.asarray(u, float).ravel()
        if x.size != self.nx:
            raise ValueError(
                f"state has size {x.size}, expected {self.nx} = {self.nq} coordinates of g ∈ "
                f"{self.group.name} + {self.dim} momenta"
            )
        if u.size != self.nu:
            raise ValueError(f"input has size {u.size}, expected {self.nu} ({', '.join(self.robot.actuated)})")
        if not (np.all(np.isfinite(x)) and np.all(np.isfinite(u))):
            raise ValueError("state or input contains NaN/inf")
        off = self.group.distance_from_group(x[: self.nq], coordinates=True)
        if off > _ON_GROUP_TOL:
            raise ValueError(
                f"state's rotation is not on SO(3) (‖RᵀR − I‖, |det R − 1| = {off:.2e} > "
                f"{_ON_GROUP_TOL:g}): not a pose this integrator produced"
            )
        return x, u

    def warm_start(self, x_next: np.ndarray, lam: np.ndarray | None = None) -> np.ndarray:
        """y₀ = ξ ≈ 𝕀⁻¹ν_{k+1}: the twist at the end of the step (ξ_k depends on both ends; Newton corrects it)."""
        return self.velocity(x_next)

    def initial_guess(self, x: np.ndarray) -> np.ndarray:
        return self.velocity(x)

    def solve(
        self,
        x: np.ndarray,
        u: np.ndarray | None = None,
        step_index: int | None = None,
        y0: np.ndarray | None = None,
        lam0: np.ndarray | None = None,
    ) -> StepResult:
        """Newton on R(ξ) = 0 with the exact Jacobian; ConvergenceError / SingularityError as every integrator.

        After the tolerance is met, one more Newton update takes the residual to its rounding floor (quadratic
        convergence makes it nearly free): the discrete Noether theorem then holds to round-off over 10⁴ steps.
        """
        x, u = self.check_inputs(x, u)
        y0, _ = check_guess(self, y0, lam0, self.dim)
        st, P, res = self.settings, self.params, self.functions["residual"]
        xi = self.initial_guess(x) if y0 is None else y0
        pnorm = float(np.abs(x[self.nq :]).max())
        rnorm, it = np.inf, 0
        for it in range(st.max_iterations + 1):
            R, J = res(xi, x, u, P)
            rnorm = float(np.abs(R).max())
            floor = st.rounding_floor(np.abs(J).sum(axis=0).max(), np.abs(xi).max())
            if not np.isfinite(rnorm) or st.accepts(rnorm, pnorm, floor) or it == st.max_iterations:
                break
            xi = xi - self._newton_update(J, R, step_index)
        if not (np.isfinite(rnorm) and st.accepts(rnorm, pnorm, floor)):
            raise ConvergenceError(step_index, rnorm, it)
        lu, piv, info = lapack.dgetrf(np.array(J))
        rcond = 0.0 if info > 0 else lapack.dgecon(lu, np.abs(J).sum(axis=0).max(), norm="1")[0]
        if not rcond >= st.rcond_min:
            raise SingularityError(step_index, float(rcond), _JACOBIAN)
        xi = xi - lapack.dgetrs(lu, piv, R.ravel())[0]  # the polishing update (reported residual: before it)
        xn = self.functions["output"](xi, x, u, P)[0].ravel().copy()
        return StepResult(x=xn, lam=np.zeros(0), iterations=it, residual=rnorm, y=xi.copy())

    @staticmethod
    def _newton_update(J: np.ndarray, R: np.ndarray, step_index: int | None) -> np.ndarray:
        try:
            return np.linalg.solve(J, R.ravel())
        except np.linalg.LinAlgError:
            raise SingularityError(step_index, 0.0, _JACOBIAN) from None

    def step(
        self, x: np.ndarray, u: np.ndarray | None = None, step_index: int | None = None, lam0: np.ndarray | None = None
    ) -> np.ndarray:
        return self.solve(x, u, step_index).x

    def simulate(
        self, x0: np.ndarray, inputs: np.ndarray | None = None, steps: int | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """States (N+1, nx) and (empty) multipliers (N, 0); Newton iterations per step in ``iteration_history``."""
        inputs = input_sequence(self, inputs, steps)
        X, self.iteration_history = step_rollout(self, x0, inputs)
        return X, np.zeros((len(inputs), 0))

    # ---- derivatives (the Linearizable interface, tangent coordinates) ----------------------------------------
    def step_derivatives(self, result: StepResult, x: np.ndarray, u: np.ndarray) -> StepDerivatives:
        """R_y, R_z, O_y, O_z at a solved step, z = (δg, δν, u) with x ⊕ δ = (g τ(δg), ν + δν) and the output in
        diff(x_{k+1}, ·) coordinates: A, B of ``linearization.linearize`` act on ``state.diff`` vectors."""
        f = self.functions["linearize"]
        Ry, Rz, Oy, Oz = (
            np.array(a) for a in f(result.y, np.asarray(x, float), np.asarray(u, float).ravel(), result.x, self.params)
        )
        return StepDerivatives(Ry=Ry, Rz=Rz, Oy=Oy, Oz=Oz)

    def step_hessian(
        self, result: StepResult, x: np.ndarray, u: np.ndarray, cov: np.ndarray, mu: np.ndarray
    ) -> np.ndarray:
        return np.array(
            self.functions["hessian"](
                result.y,
                np.asarray(x, float),
                np.asarray(u, float).ravel(),
                result.x,
                np.asarray(cov, float),
                np.asarray(mu, float),
                self.params,
            )[0]
        )

    def curved_outputs(self) -> np.ndarray:
        return self._curved

    @cached_property
    def _curved(self) -> np.ndarray:
        return np.arange(self.state.ndx)  # every output row is nonlinear on a group
