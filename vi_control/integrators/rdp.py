"""Reduced d'Alembert–Pontryagin integrator (RDP, Kobilarov2010, §5) on Q = M × SE(2) for the sleigh and the snakeboard.

A ``ReducedSystem`` gives the reduced Lagrangian ℓ(u, ξ) = ½(u, ξ)ᵀ𝕄(u, ξ) (shape velocity u, body velocity
ξ = g⁻¹ġ; 𝕄 constant: ℓ independent of r, as for both systems), the body-fixed basis e_b(r) of the constrained
symmetry directions 𝔤ʳ and the nonholonomic connection A(r). One step (α-point r_{k+α} = r_k + αΔt u_k) solves
for u_k and Ω_k = Σ_b s_b e_b(r_{k+α}), with ξ_k = Ω_k − A(r_{k+α})u_k,

    ∂_uℓ_k − ∂_uℓ_{k−1} + A(r_k)ᵀ(μ⁻_k − μ⁺_k) = Δt f_k,   e_b(r_k)ᵀ(μ⁻_k − μ⁺_k) = 0      (eq. 27)
    μ⁻_k = [dτ⁻¹_{Δtξ_k}]ᵀ∂_ξℓ_k,  μ⁺_k = [dτ⁻¹_{−Δtξ_{k−1}}]ᵀ∂_ξℓ_{k−1}
    g_{k+1} = g_k τ(Δt ξ_k),  r_{k+1} = r_k + Δt u_k                                          (eq. 28)

with τ = exp or cay ('cayley'; exact dτ⁻¹ of ``mechanics.se2``) by Newton on the exact (AD) Jacobian; the whole
rollout is one C call (``integrators/csrc/rdp_driver.c``, the one implementation of the iteration), over the
generated functions compiled with it or, where they run in the CasADi VM, calling them back
(``mechanics.codegen.FunctionSet``). The carried state (g_k, r_k, π⁺_k = ∂_uℓ_{k−1}, μ⁺_k) starts from a
continuous state as eq. 16 does: μ⁺_0 = ∂_ξℓ(0), π⁺_0 = ∂_uℓ(0) − (Δt/2) f_0. For both bundled systems
A(r)δ ∥ e₁(r), so the A(r_k)ᵀ term vanishes (the paper's remark before the snakeboard's simplified equations).
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources

import casadi as ca
import numpy as np

from ..mechanics import se2
from ..mechanics.codegen import FunctionSet
from ..mechanics.discrete import DENSE_LU_C
from ..mechanics.graph_lock import OwnsGraphs, builds_graph
from ..model.scalars import is_integer
from .base import ConvergenceError, NewtonSettings, SingularityError, check_time_step

# The whole simulation as one C call (csrc/rdp_driver.c), compiled into the library of the generated functions (or
# once for any system, over the VM's functions).
RDP_C = DENSE_LU_C + (resources.files(__package__) / "csrc" / "rdp_driver.c").read_text()

__all__ = ["ReducedSystem", "ReducedDAlembertPontryagin", "sleigh_system", "snakeboard_system"]


@dataclass(frozen=True)
class ReducedSystem:
    """ℓ(u, ξ) = ½(u, ξ)ᵀ𝕄(u, ξ) on M × SE(2) with ``n_shape`` shape variables r, constrained symmetry basis
    ``basis(r)`` (3, c) and connection ``connection(r)`` (3, n_shape), both CasADi expressions of r."""

    name: str
    inertia: np.ndarray  # 𝕄 (n_shape + 3, n_shape + 3) in the order (u, ξ), ξ = (ω, v_x, v_y)
    n_shape: int
    basis: Callable[[ca.SX], ca.SX]
    connection: Callable[[ca.SX], ca.SX]

    def __post_init__(self) -> None:
        """ℓ must be a kinetic energy: 𝕄 finite, symmetric and positive definite, of size n_shape + 3."""
        if not is_integer(self.n_shape) or self.n_shape < 0:
            raise ValueError(
                f"ReducedSystem {self.name!r}: n_shape must be a non-negative integer, got {self.n_shape!r}"
            )
        n = self.n_shape + 3
        M = np.asarray(self.inertia, float)
        if M.shape != (n, n) or not np.isfinite(M).all():
            raise ValueError(
                f"ReducedSystem {self.name!r}: inertia must be a finite ({n}, {n}) matrix (shape "
                f"variables u, then ξ = (ω, v_x, v_y)), got shape {M.shape}"
            )
        if not np.allclose(M, M.T, rtol=1e-12, atol=0.0):
            raise ValueError(f"ReducedSystem {self.name!r}: inertia must be symmetric")
        try:
            np.linalg.cholesky(M)
        except np.linalg.LinAlgError:
            raise ValueError(
                f"ReducedSystem {self.name!r}: inertia must be positive definite (eigenvalues {np.linalg.eigvalsh(M)})"
            ) from None
        object.__setattr__(self, "inertia", M)


def sleigh_system(I: float, m: float, a: float) -> ReducedSystem:
    """Chaplygin sleigh (Kobilarov2010, §6.1): no shape, 𝕄 = diag(I, m, m) at the centre of mass, skate at distance a
    behind it: 𝔤^q = span{e₁ = (1, 0, a), e₂ = (0, 1, 0)}."""
    return ReducedSystem(
        "sleigh",
        np.diag([I, m, m]),
        0,
        basis=lambda r: ca.SX(ca.DM([[1.0, 0.0], [0.0, 1.0], [a, 0.0]])),
        connection=lambda r: ca.SX.zeros(3, 0),
    )


def snakeboard_system(m: float, l: float, I: float, J: float) -> ReducedSystem:
    """Snakeboard (Kobilarov2010, §6.2): r = (ψ, φ), 𝕄 = the paper's M with ξ in the body frame (2J for the two
    coupled axles), e₁(r) = 2l cos²φ (tan φ/l, −1, 0) and A(r) = [[I sin²φ/(ml²), 0], [−I sin 2φ/(2ml), 0], [0, 0]]."""
    Mm = np.zeros((5, 5))
    Mm[0, 0], Mm[0, 2], Mm[2, 0], Mm[1, 1], Mm[2, 2] = I, I, I, 2 * J, m * l**2
    Mm[3, 3] = Mm[4, 4] = m

    def basis(r):
        ph = r[1]
        return ca.vertcat(ca.sin(2 * ph), -2 * l * ca.cos(ph) ** 2, 0)

    def connection(r):
        ph = r[1]
        return ca.vertcat(
            ca.horzcat(I / (m * l**2) * ca.sin(ph) ** 2, 0),
            ca.horzcat(-I / (2 * m * l) * ca.sin(2 * ph), 0),
            ca.horzcat(0, 0),
        )

    return ReducedSystem("snakeboard", Mm, 2, basis, connection)


@dataclass
class RDPTrajectory:
    """g (N+1, 3) = (θ, x, y), r (N+1, n_shape), shape velocities u (N, n_shape), body velocities ξ (N, 3) =
    (ω, v_x, v_y), Newton iterations per step. The pose order (θ, x, y) is Kobilarov2010, App. B's (``mechanics.se2``);
    ``poses_xytheta`` is the same poses in the order of the URDF models' joints, which the GNI's states use."""

    g: np.ndarray
    r: np.ndarray
    u: np.ndarray
    xi: np.ndarray
    iterations: np.ndarray

    @property
    def poses_xytheta(self) -> np.ndarray:
        """(N+1, 3) poses as (x, y, θ): the GNI's configuration order (the sleigh's and snakeboard's URDFs)."""
        return self.g[:, [1, 2, 0]]


class ReducedDAlembertPontryagin(OwnsGraphs):
    """RDP (eqs. 27–28) of a ReducedSystem at time step ``dt`` with retraction 'exp' or 'cayley' and α ∈ [0, 1]."""

    def __init__(
        self,
        system: ReducedSystem,
        dt: float,
        retraction: str = "exp",
        alpha: float = 0.5,
        settings: NewtonSettings | None = None,
        compile: bool | None = None,
    ):
        if not isinstance(system, ReducedSystem):  # (a RobotModel got an AttributeError from deep inside)
            raise TypeError(
                f"ReducedDAlembertPontryagin needs a ReducedSystem (the reduced Lagrangian's shape space "
                f"and group: vi_control.integrators.rdp.ReducedSystem), got {type(system).__name__}"
            )
        dt = check_time_step(dt)
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"alpha must be in [0, 1], got {alpha}")
        tau, dtau_inv = se2.retraction(retraction)
        self.system, self.dt, self.retraction, self.alpha = system, float(dt), retraction, float(alpha)
        self.settings = settings or NewtonSettings(tol=1e-13)
        ns, h = system.n_shape, self.dt

        @builds_graph  # (one build at a time in the process, its temporaries released within: mechanics.graph_lock)
        def symbolic() -> dict[str, ca.Function]:
            E0 = system.basis(ca.SX.zeros(ns))
            c = E0.size2()
            self.n_shape, self.n_basis = ns, c
            # unknowns z = (u_k, s_k); parameters P = (r_k, π⁺_k, μ⁺_k, f_k); carried g_k
            u, s = ca.SX.sym("u", ns), ca.SX.sym("s", c)
            r, pi_p, mu_p, f = ca.SX.sym("r", ns), ca.SX.sym("pi", ns), ca.SX.sym("mu", 3), ca.SX.sym("f", ns)
            g = ca.SX.sym("g", 3)
            Mm = ca.DM(system.inertia)
            ra = r + self.alpha * h * u
            xi = ca.mtimes(system.basis(ra), s) - (ca.mtimes(system.connection(ra), u) if ns else 0)
            w = ca.vertcat(u, xi)
            dl = ca.mtimes(Mm, w)
            dl_u, dl_xi = dl[:ns], dl[ns:]
            mu_minus = ca.mtimes(dtau_inv(h * xi).T, dl_xi)
            jump = mu_minus - mu_p
            R_group = ca.mtimes(system.basis(r).T, jump)
            R = ca.vertcat(dl_u - pi_p + ca.mtimes(system.connection(r).T, jump) - h * f, R_group) if ns else R_group
            z, P = ca.vertcat(u, s), ca.vertcat(r, pi_p, mu_p, f)
            new = ca.vertcat(se2.compose(g, tau(h * xi)), r + h * u, dl_u, ca.mtimes(dtau_inv(-h * xi).T, dl_xi), xi)
            # initial state from a continuous one (r, ṙ, ξ): the body momentum and the nonholonomic momenta
            rdot, xi0 = ca.SX.sym("rdot", ns), ca.SX.sym("xi0", 3)
            dl0 = ca.mtimes(Mm, ca.vertcat(rdot, xi0))
            funcs = {
                "residual": ca.Function("rdp_residual", [z, P], [ca.densify(R), ca.densify(ca.jacobian(R, z))]),
                "update": ca.Function("rdp_update", [z, P, g], [ca.densify(new)]),
                "momentum": ca.Function(
                    "rdp_momentum",
                    [r, rdot, xi0],
                    [ca.densify(dl0[:ns]), ca.densify(dl0[ns:]), ca.densify(ca.mtimes(system.basis(r).T, dl0[ns:]))],
                ),
            }
            rr = ca.SX.sym("r", ns)
            self._basis = ca.Function("E", [rr], [system.basis(rr)])
            self._connection = ca.Function("A", [rr], [system.connection(rr)])
            return funcs

        funcs = symbolic()
        self.functions = FunctionSet(
            f"rdp_{system.name}_{retraction}_{h!r}_{alpha!r}",
            funcs,
            compile=compile,
            driver=RDP_C,
            driver_needs=("residual", "update"),
        )
        self._P = np.zeros(3 * ns + 3)

    def nonholonomic_momentum(self, r: np.ndarray, rdot: np.ndarray, xi: np.ndarray) -> np.ndarray:
        """p_b = ⟨∂_ξℓ, e_b(r)⟩ (§6.1: the sleigh's (p₁, p₂); §6.2: the snakeboard's p₁)."""
        return np.array(
            self.functions["momentum"](np.asarray(r, float), np.asarray(rdot, float), np.asarray(xi, float))[2]
        ).ravel()

    @property
    def compiled(self) -> bool:
        """True if the driver (csrc/rdp_driver.c) is compiled with the generated functions; False where it calls the
        CasADi VM back (``compile=False``, ``VI_CONTROL_NO_COMPILE=1``)."""
        return self.functions.driver_generated

    def simulate(
        self,
        g0: np.ndarray,
        r0: np.ndarray,
        rdot0: np.ndarray,
        xi0: np.ndarray,
        forces: np.ndarray | None = None,
        steps: int | None = None,
    ) -> RDPTrajectory:
        """N steps from the continuous state (g₀, r₀, ṙ₀, ξ₀) under shape forces ``forces`` (N, n_shape)
        (f_k applied at t_k, as eq. 16); raises ConvergenceError / SingularityError with the step index.
        One C call (``rollout``)."""
        ns = self.n_shape
        if steps is not None and (not is_integer(steps) or steps < 0):
            raise ValueError(f"simulate: steps must be a non-negative integer, got {steps!r}")
        if forces is None:
            if steps is None:
                raise ValueError("simulate needs forces (N, n_shape) or steps=N")
            forces = np.zeros((steps, ns))
        forces = np.asarray(forces, float)
        if forces.ndim != 2 or forces.shape[1] != ns:
            raise ValueError(f"forces must have shape (N, {ns}), got {forces.shape}")
        g0, r0, rdot0, xi0 = (
            _start_vector(name, v, n)
            for name, v, n in (("g0", g0, 3), ("r0", r0, ns), ("rdot0", rdot0, ns), ("xi0", xi0, 3))
        )
        N = len(forces)
        G, Rr = np.zeros((N + 1, 3)), np.zeros((N + 1, ns))
        U, XI, its = np.zeros((N, ns)), np.zeros((N, 3)), np.zeros(N, np.int64)
        G[0], Rr[0] = g0, r0
        dl_u, dl_xi, _ = self.functions["momentum"](r0, rdot0, xi0)
        pi_p = np.array(dl_u).ravel() - 0.5 * self.dt * forces[0] if N else np.array(dl_u).ravel()
        mu_p = np.array(dl_xi).ravel()
        z = np.concatenate([rdot0, np.zeros(self.n_basis)])
        omega0 = xi0 + (np.array(self._connection(r0)) @ rdot0 if ns else 0)
        z[ns:] = np.linalg.lstsq(np.array(self._basis(r0)).reshape(3, -1), omega0, rcond=None)[0]
        P = self._P
        P[ns : 2 * ns], P[2 * ns : 2 * ns + 3] = pi_p, mu_p
        self.rollout(np.ascontiguousarray(forces), z, P, G, Rr, U, XI, its)
        return RDPTrajectory(g=G, r=Rr, u=U, xi=XI, iterations=its)

    def rollout(self, forces, z, P, G, Rr, U, XI, its) -> None:
        """``simulate``'s steps in place, in one call of vi_rdp_simulate (csrc/rdp_driver.c, whose header gives the
        arrays' layout): Newton on eq. 27 from the previous step's root, then eq. 28."""
        lib, st, nz = self.functions.lib, self.settings, len(z)
        iw_n, w_n = self.functions.work_sizes(("residual", "update"))
        lib.vi_rdp_workspace.restype = ctypes.c_longlong
        n_ws = lib.vi_rdp_workspace(ctypes.c_longlong(self.n_shape), ctypes.c_longlong(nz))
        iw, w, info = np.zeros(nz + iw_n, np.int64), np.zeros(n_ws + w_n), np.zeros(3)
        ip = np.array([len(forces), self.n_shape, nz, st.max_iterations], np.int64)
        dp = np.array([st.tol, st.p_unit])
        simulate = self.functions.driver_function("vi_rdp_simulate")
        getattr(simulate, "c_function", simulate).restype = ctypes.c_int
        code = simulate(
            *(a.ctypes.data_as(ctypes.c_void_p) for a in (ip, dp, P, forces, z, G, Rr, U, XI, its, iw, w, info))
        )
        k, rnorm, it = int(info[0]), float(info[1]), int(info[2])
        if code == 2:
            raise SingularityError(k, 0.0, "the RDP Jacobian (eq. 27)")
        if code != 0:
            raise ConvergenceError(
                k, rnorm, it, "RDP (Kobilarov2010, eq. 27)" + (": a generated function failed" if code == 3 else "")
            )


def _start_vector(name: str, value, n: int) -> np.ndarray:
    """A start vector of length n, finite: the RDP's (g₀, r₀, ṙ₀, ξ₀)."""
    v = np.asarray(value, float).ravel()
    if v.size != n:
        raise ValueError(f"simulate: {name} must have {n} entries, got shape {np.shape(value)}")
    if not np.isfinite(v).all():
        raise ValueError(f"simulate: {name} must be finite, got {v}")
    return v


# The bundled snakeboard (urdf/snakeboard.urdf) and Kobilarov2010, §6.2's initial state and inputs.
SNAKEBOARD = dict(m=2.0, l=1.0, I=0.1, J=0.8)
SNAKEBOARD_START = dict(psi=np.pi / 2, phi=np.pi / 3, p1=-1.0, psi_dot=2.5, phi_dot=-0.02, theta=0.0)


def snakeboard_inputs(t: np.ndarray) -> np.ndarray:
    """Kobilarov2010, §6.2's torques (u_ψ, u_φ) = (cos 20πt, sin 2πt), shape (len(t), 2) in the RDP's r = (ψ, φ)
    order."""
    t = np.asarray(t, float)
    return np.stack([np.cos(20 * np.pi * t), np.sin(2 * np.pi * t)], axis=-1)


def snakeboard_start(
    system: ReducedSystem,
    psi: float,
    phi: float,
    p1: float,
    psi_dot: float,
    phi_dot: float,
    theta: float = 0.0,
    x: float = 0.0,
    y: float = 0.0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(g₀, r₀, ṙ₀, ξ₀) from the paper's data: ξ = Ω − A(r)ṙ with Ω = s e₁(r) and p₁ = ⟨∂_ξℓ, e₁(r)⟩."""
    r, u = np.array([psi, phi]), np.array([psi_dot, phi_dot])
    e1 = np.array(ca.DM(system.basis(ca.DM(r)))).ravel()
    A = np.array(ca.DM(system.connection(ca.DM(r))))
    Mm = system.inertia
    Mxu, Mxx = Mm[2:, :2], Mm[2:, 2:]
    s = (p1 - e1 @ (Mxu @ u - Mxx @ A @ u)) / (e1 @ Mxx @ e1)
    return np.array([theta, x, y]), r, u, s * e1 - A @ u


def snakeboard_configuration(
    g: np.ndarray, r: np.ndarray, rdot: np.ndarray | None = None, xi: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray | None]:
    """q (and q̇) of urdf/snakeboard.urdf, joint order (x, y, θ, φ, φ_front, ψ), from (g, r) (and ṙ, ξ)."""
    q = np.array([g[1], g[2], g[0], r[1], r[1], r[0]])
    if rdot is None:
        return q, None
    c, s = np.cos(g[0]), np.sin(g[0])
    return q, np.array([c * xi[1] - s * xi[2], s * xi[1] + c * xi[2], xi[0], rdot[1], rdot[1], rdot[0]])
