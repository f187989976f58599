"""Geometric nonholonomic integrator (GNI, Kobilarov2010, §4): the midpoint discrete Lagrangian under the discrete
Lagrange–d'Alembert equations (eq. 5; forced and projected as eq. 16) for the velocity constraints A(q)q̇ = 0 of
the system YAML, combinable with holonomic constraints and forcing.

The state is the midpoint VI's x_k = (q_k, p_k) with p_k = D₂L_d(q_{k−1}, q_k), the post-momentum p⁺_k of
Kobilarov2010, §4 (for constant M and V = 0 the paper's p_{k−1/2} of eq. 14). One step solves, for
y = (q_{k+1}, λ_k, ν_k),

    p_k + D₁L_d(q_k, q_{k+1}) + F⁻_d − Dh(q_k)ᵀλ_k + A(q_k)ᵀν_k = 0      (eq. 5a with forcing, eq. 16)
    h(q_{k+1}) = 0                                                        (holonomic, Johnson2015, eq. 28b)
    A(q_k) M(q_k)⁻¹ (p_k + p⁻_k) = 0,  p⁻_k = −D₁L_d(q_k, q_{k+1})        (eq. 5b)

so p⁻_k = (𝒫* − 𝒬*)p⁺_k + 𝒫*F (eq. 6: the momentum is reflected in the constraint distribution, plus the
projected impulse) and x_{k+1} = (q_{k+1}, p_k + impulses + (D₁L_d + D₂L_d)(q_k, q_{k+1})). ν_k (in
``StepResult.lam`` after the holonomic λ_k) is the constraint impulse over the step: A(q_k)ᵀν_k/Δt ≈ the
Lagrange–d'Alembert force λ_aμᵃ of eq. 4. Everything else — the compiled Newton driver, the exact derivatives of
R(y, z) and O(y, z) by AD, ``vi_control.linearization`` — is the midpoint VI's machinery, so planners,
controllers and nodes use a GNI like any ``Linearizable`` system. With no nonholonomic constraint the GNI is the
midpoint VI (to round-off: only the output is written as a momentum update).
"""

from __future__ import annotations

import logging

import numpy as np

from ..model.robot import RobotModel
from .base import NewtonSettings, as_vector
from .midpoint import MidpointVI, solve_or_lstsq

__all__ = ["GeometricNonholonomicIntegrator", "CONSTRAINT_VIOLATION"]

log = logging.getLogger("vi_control.gni")

# What state_from_velocity does with an initial velocity violating A(q)q̇ = 0.
CONSTRAINT_VIOLATION = ("project", "raise")


class GeometricNonholonomicIntegrator(MidpointVI):
    """GNI of Kobilarov2010 (eqs. 5, 10, 16) for a RobotModel with nonholonomic constraints, at time step ``dt``.

    Options as ``MidpointVI``; ``on_constraint_violation``: 'project' (default) an initial velocity with
    |A(q)q̇| above ``violation_tol``·(1 + |q̇|) onto the constraints (the metric's orthogonal projection 𝒫 of
    eq. 12, with a logged warning), or 'raise' ValueError.
    """

    NONHOLONOMIC = True

    def __init__(
        self,
        robot: RobotModel,
        dt: float,
        settings: NewtonSettings | None = None,
        *,
        on_constraint_violation: str = "project",
        violation_tol: float = 1e-10,
        **options,
    ):
        if on_constraint_violation not in CONSTRAINT_VIOLATION:
            raise ValueError(
                f"on_constraint_violation must be one of {CONSTRAINT_VIOLATION}, got {on_constraint_violation!r}"
            )
        super().__init__(robot, dt, settings, **options)
        self.on_constraint_violation, self.violation_tol = on_constraint_violation, float(violation_tol)
        self.n_holonomic, self.n_nonholonomic = self.structure.n_holonomic, self.structure.n_nonholonomic
        self.jacobian_name = (
            "the GNI Jacobian (M_{k+1} bordered by Dh(q_k), Dh(q_{k+1}) and the nonholonomic rows "
            "A(q_k), A(q_k)M(q_k)^-1 M_{k+1}/dt): M_{k+1} or the constraint matrix [Dh; A] is "
            "singular"
        )

    # ---- constraint geometry (Kobilarov2010, eq. 12) ----------------------------------------------------
    def constraint_rows(self, q: np.ndarray) -> np.ndarray:
        """C(q) = [Dh(q); A(q)] (nc, nq): every velocity constraint row at q."""
        return np.array(self.functions["constraint_rows"](np.asarray(q, float))[0]).reshape(self.nc, self.nq)

    def nonholonomic_matrix(self, q: np.ndarray) -> np.ndarray:
        """A(q) (m, nq) of the nonholonomic constraints A(q)q̇ = 0."""
        return self.constraint_rows(q)[self.n_holonomic :]

    def projector(self, q: np.ndarray) -> np.ndarray:
        """𝒫(q) = I − M⁻¹Cᵀ(CM⁻¹Cᵀ)⁻¹C (eq. 12b with μ = C): the M-orthogonal projector onto the allowed
        velocities; 𝒫ᵀ projects momenta (𝒬 = I − 𝒫 is eq. 12a). Where M or CM⁻¹Cᵀ is singular (constraints that
        coincide: the snakeboard's wheels parallel) the least-squares solutions, as ``velocity``: the step's guess
        must not fail there — its Newton matrix decides (SingularityError; the numpy loop raised numpy's
        LinAlgError from the guess, the C driver a SingularityError)."""
        M, C = self.mass_matrix(q), self.constraint_rows(q)
        if not len(C):
            return np.eye(self.nq)
        MiCt = solve_or_lstsq(M, C.T)
        return np.eye(self.nq) - MiCt @ solve_or_lstsq(C @ MiCt, C)

    def velocity(self, x: np.ndarray) -> np.ndarray:
        """q̇ = 𝒫(q)M(q)⁻¹p: the allowed velocity of the momentum p (eq. 15 without the ½Δt force term)."""
        return self.projector(x[: self.nq]) @ super().velocity(x)

    def velocities(self, X: np.ndarray) -> np.ndarray:
        """``velocity`` of every state of X (K, nx) → (K, nq)."""
        return np.array([self.velocity(x) for x in np.asarray(X, float)]).reshape(len(X), self.nq)

    def energy(self, x: np.ndarray) -> float:
        """T(q, M⁻¹p) + V(q) of the state's momentum p_k = p_{k−1/2}: the quantity ⟨M v_{k−1/2}, v_{k−1/2}⟩/2
        that the GNI preserves exactly on the sleigh and the snakeboard (Kobilarov2010, §6.1, Theorem 1)."""
        return float(self.functions["energy"](x[: self.nq], super().velocity(x))[0].item())

    def mean_velocity(self, x: np.ndarray, x_next: np.ndarray) -> np.ndarray:
        """M(q_k)⁻¹(p⁺_k + p⁻_k)/2 of a solved step x_k → x_{k+1}: eq. 5b makes it satisfy A(q_k)v = 0.

        p⁻_k = p_{k+1} − (D₁L_d + D₂L_d)(q_k, q_{k+1}) (the output map's momentum update read backwards).
        """
        q0, q1 = x[: self.nq], x_next[: self.nq]
        force = self.functions["D1Ld"](q0, q1)[0].ravel() + self.functions["D2Ld"](q0, q1)[0].ravel()
        return np.linalg.solve(self.mass_matrix(q0), 0.5 * (x[self.nq :] + x_next[self.nq :] - force))

    def nonholonomic_residual(self, x: np.ndarray, x_next: np.ndarray) -> np.ndarray:
        """A(q_k)·mean_velocity: the discrete nonholonomic constraint (eq. 5b, 10c) of a solved step."""
        return self.nonholonomic_matrix(x[: self.nq]) @ self.mean_velocity(x, x_next)

    # ---- states ---------------------------------------------------------------------------------------
    def velocity_violation(self, q: np.ndarray, qdot: np.ndarray) -> float:
        """|C(q)q̇|∞ if it exceeds ``violation_tol``·(1 + |q̇|∞) — a velocity the constraints do not allow —
        else 0.0."""
        viol = float(np.abs(self.constraint_rows(q) @ qdot).max(initial=0.0))
        return viol if viol > self.violation_tol * (1.0 + float(np.abs(qdot).max(initial=0.0))) else 0.0

    def state_from_velocity(self, q: np.ndarray, qdot: np.ndarray, u: np.ndarray | None = None) -> np.ndarray:
        """x_0 from q(0), q̇(0) (and the first input ``u``, default no torque), projected onto the constraints if
        q̇ violates them (see the class docstring).

        The state's momentum is a post-momentum, p_k = D₂L_d(q_{k−1}, q_k) ≈ p(t_k) − (Δt/2)(f + Cᵀλ)(t_k): the
        half step of the forces that are not in L_d, as eq. 16 starts from p_{1/2} = p_0 + (Δt/2)𝒫ᵀf(q_0, u_0).
        Here λ is the continuous Lagrange–d'Alembert multiplier at t_0 (eq. 4; with the constraints' curvature
        term Ċq̇, which 𝒫ᵀf alone leaves out). Starting from p = M q̇ instead puts an O(Δt) momentum into the
        scheme's alternating (reflected) mode: the multipliers then zig-zag about the force by ~100 %, though the
        configuration stays second-order accurate.
        """
        q, qdot = as_vector(self, q, self.nq, "q"), as_vector(self, qdot, self.nq, "qdot")
        C = self.constraint_rows(q)
        viol = self.velocity_violation(q, qdot)
        if viol:
            msg = f"{self.robot.name}: the initial velocity violates the constraints (|C(q)q̇|∞ = {viol:.3e})"
            if self.on_constraint_violation == "raise":
                raise ValueError(msg + "; give an allowed velocity or use on_constraint_violation='project'")
            log.warning(msg + "; projected onto them (Kobilarov2010, eq. 12)")
            qdot = self.projector(q) @ qdot
        M = self.mass_matrix(q)
        _, u = self.check_inputs(np.concatenate([q, qdot]), u)
        f = np.zeros(self.nq)
        f[self.idx_act] = u[: self.n_torques]
        f -= self.robot.damping * qdot
        fn = self.functions
        rhs = -fn["constraint_drift"](q, qdot)[0].ravel() - C @ np.linalg.solve(M, f - fn["bias"](q, qdot)[0].ravel())
        lam = np.linalg.solve(C @ np.linalg.solve(M, C.T), rhs) if len(C) else np.zeros(0)
        p = M @ qdot - 0.5 * self.dt * (f + C.T @ lam)
        return np.concatenate([q, p])
