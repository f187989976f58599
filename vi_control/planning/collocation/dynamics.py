"""The continuous second-order dynamics q̈ = g(q, q̇, u) of a RobotModel, from the symbolic tree
(MorenoMartin2022, eq. 2).

Euler–Lagrange equations of L = T(q, v) − V(q) (``mechanics.symbolic``), with the joint damping c and the actuated
joints' torques u entering through the selection matrix B:

    M(q) q̈ + b(q, q̇) = B u + Dh(q)ᵀ λ,   b = (∂²T/∂v∂q) q̇ − ∂T/∂q + ∂V/∂q + c ⊙ q̇
    Dh(q) q̈ + (∂(Dh q̇)/∂q) q̇ = 0         (holonomic constraints h(q) = 0, at acceleration level)

Without constraints g = M⁻¹(Bu − b); with them, the bordered (KKT) system gives q̈ and λ. The same expressions are
what the midpoint VI discretizes (its forcing F⁻_d = Δt(Bu − c⊙q̇_mid)), so a collocated trajectory and a VI
rollout describe one model.
"""

from __future__ import annotations

import casadi as ca
import numpy as np

from ...mechanics.graph_lock import OwnsGraphs, builds_graph
from ...mechanics.symbolic import build_tree, constraint_expr
from ...model.robot import RobotModel


class SecondOrderDynamics(OwnsGraphs):
    """Symbolic (CasADi SX) and numeric M(q), b(q, q̇), B, h(q), Dh(q), and the forward dynamics g(q, q̇, u).

    ``explicit(q, v, u)`` / ``implicit(q, v, a, u, lam)`` return SX expressions for any SX arguments (the
    transcriptions call them node by node); ``acceleration(Q, V, U)`` evaluates g numerically on stacks of
    samples (the error metrics of MorenoMartin2022, eqs. 17–21).
    """

    @builds_graph
    def __init__(self, robot: RobotModel):
        if robot.prescribed:
            raise ValueError(
                f"collocation needs every joint dynamic; prescribed joints {list(robot.prescribed)} "
                "are kinematic inputs (use the DDP planner)"
            )
        self.robot = robot
        tree = build_tree(robot)
        q, v = tree.q, tree.v
        nq = robot.nq
        names = robot.joint_names
        self.nq, self.nc = nq, robot.n_constraints
        self.idx_act = np.array([names.index(n) for n in robot.actuated], dtype=int)
        self.nu = len(self.idx_act)
        self.B = np.eye(nq)[:, self.idx_act]
        M = ca.hessian(tree.kinetic, v)[0]
        dTdv = ca.gradient(tree.kinetic, v)
        bias = (
            ca.mtimes(ca.jacobian(dTdv, q), v)
            - ca.gradient(tree.kinetic, q)
            + ca.gradient(tree.potential, q)
            + ca.DM(robot.damping) * v
        )
        h = constraint_expr(robot, tree)
        Dh = ca.jacobian(h, q) if self.nc else ca.SX.zeros(0, nq)
        drift = ca.mtimes(ca.jacobian(ca.mtimes(Dh, v), q), v) if self.nc else ca.SX.zeros(0)
        dens = ca.densify
        self._M = ca.Function("M", [q], [dens(M)])
        self._bias = ca.Function("bias", [q, v], [dens(bias)])
        self._h = ca.Function("h", [q], [dens(h)])
        self._Dh = ca.Function("Dh", [q], [dens(Dh)])
        self._drift = ca.Function("drift", [q, v], [dens(drift)])  # (d/dt Dh) q̇
        self._fk: dict[tuple, ca.Function] = {}
        self.tree = tree
        self._energy = ca.Function("E", [q, v], [tree.kinetic + tree.potential])
        self._g: ca.Function | None = None  # numeric g(q, v, u), built on first use
        self.velocity_dependent = bool(ca.depends_on(bias, v))  # Coriolis/centrifugal terms or damping

    # ---- symbolic pieces (SX in, SX out) --------------------------------------------------------
    def mass(self, q):
        return self._M(q)

    def bias(self, q, v):
        return self._bias(q, v)

    def constraint(self, q):
        return self._h(q)

    def constraint_jacobian(self, q):
        return self._Dh(q)

    def constraint_drift(self, q, v):
        return self._drift(q, v)

    def torque(self, u):
        return ca.mtimes(ca.DM(self.B), u) if self.nu else ca.SX.zeros(self.nq)

    def explicit(self, q, v, u):
        """g(q, v, u) as an expression: M⁻¹(Bu − b), or the q̈ block of the KKT solve with constraints."""
        rhs = self.torque(u) - self.bias(q, v)
        M = self.mass(q)
        if not self.nc:
            return ca.solve(M, rhs)
        J = self.constraint_jacobian(q)
        K = ca.blockcat([[M, -J.T], [J, ca.SX.zeros(self.nc, self.nc)]])
        return ca.solve(K, ca.vertcat(rhs, -self.constraint_drift(q, v)))[: self.nq]

    def implicit(self, q, v, a, u, lam):
        """Residual of the dynamics in inverse form: (M a + b − Bu − Dhᵀλ, Dh a + drift) — zero on solutions."""
        r = ca.mtimes(self.mass(q), a) + self.bias(q, v) - self.torque(u)
        if not self.nc:
            return r
        J = self.constraint_jacobian(q)
        return ca.vertcat(r - ca.mtimes(J.T, lam), ca.mtimes(J, a) + self.constraint_drift(q, v))

    @builds_graph  # (an expression for SX q; a lookup and an evaluation for numeric q)
    def point_position(self, link: str, point, q):
        """World position of a point fixed in ``link`` (expression in q; numeric for numeric q)."""
        key = (link, tuple(np.asarray(point, float)))
        if key not in self._fk:
            self._fk[key] = ca.Function(
                "fk", [self.tree.q], [self.tree.point_position(self.robot.pin_model, link, point)]
            )
        return self._fk[key](q)

    # ---- numeric ----------------------------------------------------------------------------------
    def acceleration(self, Q: np.ndarray, V: np.ndarray, U: np.ndarray) -> np.ndarray:
        """g at each sample: rows of Q, V (n, nq) and U (n, nu) → (n, nq), one vectorized call (CasADi map)."""
        Q, V = np.atleast_2d(np.asarray(Q, float)), np.atleast_2d(np.asarray(V, float))
        U = np.asarray(U, float).reshape(len(Q), self.nu)
        return np.array(self._mapped_dynamics(len(Q))(Q.T, V.T, U.T)).T

    @builds_graph
    def _mapped_dynamics(self, n: int) -> ca.Function:
        if self._g is None:
            q, v, u = ca.SX.sym("q", self.nq), ca.SX.sym("v", self.nq), ca.SX.sym("u", self.nu)
            self._g = ca.Function("g", [q, v, u], [self.explicit(q, v, u)])
        return self._g.map(n)

    def energy(self, q: np.ndarray, v: np.ndarray) -> float:
        return float(self._energy(q, v))

    def constraint_value(self, q: np.ndarray) -> np.ndarray:
        return np.array(self._h(q)).ravel()

    @builds_graph
    def impact(self, q: np.ndarray, v_minus: np.ndarray, contact) -> tuple:
        """Plastic impact (Hurmuzlu–Marghitu): M(v⁺ − v⁻) = Jᵀ Λ, J v⁺ = 0 for the new contact's Jacobian J.

        ``contact(q)`` is an expression of the contact point's constrained coordinates (e.g. a foot's x, z); works
        symbolically (SX q, v⁻) and numerically. Returns (v⁺, Λ).
        """
        numeric = not isinstance(q, (ca.SX, ca.MX))
        qs = ca.SX.sym("q", self.nq) if numeric else q
        vs = ca.SX.sym("v", self.nq) if numeric else v_minus
        c = contact(qs)
        J = ca.jacobian(c, qs)
        m = c.numel()
        M = self.mass(qs)
        K = ca.blockcat([[M, -J.T], [J, ca.SX.zeros(m, m)]])
        sol = ca.solve(K, ca.vertcat(ca.mtimes(M, vs), ca.SX.zeros(m)))
        if not numeric:
            return sol[: self.nq], sol[self.nq :]
        f = ca.Function("impact", [qs, vs], [sol[: self.nq], sol[self.nq :]])
        vp, lam = f(np.asarray(q, float), np.asarray(v_minus, float))
        return np.array(vp).ravel(), np.array(lam).ravel()
