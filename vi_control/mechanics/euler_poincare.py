"""Forced discrete Euler–Poincaré equations of one rigid body on SO(3)/SE(3) (Jimenez2013, §4, §5, §5.2), symbolic.

With ξ_k = τ⁻¹(g_k⁻¹g_{k+1})/h, l_d = h·l(ξ_k), l(ξ) = ½⟨𝕀ξ, ξ⟩ and trapezoidal forces f_k^± = (h/2) f (§5):

    μ_k = (dτ⁻¹_{hξ_k})* 𝕀ξ_k,           μ_k⁺ = Ad*_{τ(hξ_k)} μ_k = (dτ⁻¹_{−hξ_k})* 𝕀ξ_k    (Lemma 8.3)
    ν_k = μ_k − (h/2) f(g_k, ξ_k, u_k⁻),   ν_{k+1} = μ_k⁺ + (h/2) f(g_{k+1}, ξ_k, u_k⁺)          (eqs. 26–27)
    g_{k+1} = g_k τ(hξ_k)

ν_k is the body momentum at t_k (ν₀ = 𝕀ξ(0), §5 boundary conditions), the state's momentum. The force is
f(g, ξ, u) = Hξ + Bu + w(g): drag (§6.1, a(W) = Hτ⁻¹(W)), inputs through B, and the wrench of gravity and
buoyancy (§5.2's −l_g*∂V). One step solves the first line for ξ_k given (g_k, ν_k, u_k), by Newton.

Everything is written once in CasADi (via ``mechanics.groups``), so the step, its exact first and second
derivatives in tangent coordinates, and the optimal-control conditions share one set of formulas. Model numbers
enter as a parameter vector (``pack_parameters``), so one compiled library serves every body of a group.
"""

from __future__ import annotations

from functools import cache

import casadi as ca
import numpy as np

from .codegen import FunctionSet
from .graph_lock import builds_graph
from .groups import LieGroup, Retraction, get_group

__all__ = ["momenta", "restoring_wrench", "potential_energy", "pack_parameters", "unpack_parameters", "step_functions"]


def momenta(ret: Retraction, inertia, h, xi):
    """(μ, μ⁺) = ((dτ⁻¹_{hξ})ᵀ𝕀ξ, (dτ⁻¹_{−hξ})ᵀ𝕀ξ): the momenta at the two ends of a step (Jimenez2013, §5)."""
    p = inertia @ xi
    return ret.dtau_inv(h * xi).T @ p, ret.dtau_inv(-h * xi).T @ p


def restoring_wrench(group: LieGroup, g, weight, buoyancy, center):
    """Body wrench (torque, force) of the world forces weight (at the centre of mass, the body origin) and
    buoyancy (at body point ``center``): −l_g*∂V (Jimenez2013, §5.2). Zero on SO(3)."""
    if group.name == "SO3":
        return ca.SX.zeros(3, 1) if isinstance(g, ca.SX) else np.zeros(3)
    Rt = g[:3, :3].T
    fb = Rt @ buoyancy
    f = Rt @ weight + fb
    if isinstance(g, ca.SX):
        return ca.vertcat(ca.cross(center, fb), f)
    return np.concatenate([np.cross(center, fb), f])


def potential_energy(group: LieGroup, g, weight, buoyancy, center) -> float:
    """V(g) = −weight·x − buoyancy·(x + R c): the potential whose wrench is ``restoring_wrench``."""
    if group.name == "SO3":
        return 0.0
    R, x = np.asarray(g[:3, :3]), np.asarray(g[:3, 3])
    return float(-weight @ x - buoyancy @ (x + R @ center))


# ---- parameters -----------------------------------------------------------------------------------------
def _param_sizes(n: int, m: int) -> list[tuple[str, tuple[int, int]]]:
    return [
        ("inertia", (n, n)),
        ("B", (n, m)),
        ("H", (n, n)),
        ("weight", (3, 1)),
        ("buoyancy", (3, 1)),
        ("center", (3, 1)),
        ("h", (1, 1)),
    ]


def pack_parameters(body, dt: float) -> np.ndarray:
    """The flat parameter vector of ``step_functions`` for a RigidBodyModel at time step dt (column-major)."""
    vals = dict(
        inertia=body.spatial_inertia,
        B=body.input_matrix,
        H=body.drag_matrix,
        weight=body.weight,
        buoyancy=body.buoyancy,
        center=body.buoyancy_center,
        h=np.array([dt]),
    )
    n, m = body.dim, len(body.actuators)
    return np.concatenate(
        [np.asarray(vals[k], float).reshape(s, order="F").ravel(order="F") for k, s in _param_sizes(n, m)]
    )


def unpack_parameters(P, n: int, m: int) -> dict:
    """Symbolic (or numeric) views of the packed parameters, by name."""
    out, i = {}, 0
    for k, (r, c) in _param_sizes(n, m):
        out[k] = ca.reshape(P[i : i + r * c], r, c)
        i += r * c
    return out


def forced_momenta(group: LieGroup, ret: Retraction, prm: dict, g, xi, u_minus, u_plus):
    """(ν_k, ν_{k+1}, g_{k+1}) implied by ξ_k at g_k (eqs. 26–27 with f(g, ξ, u) = Hξ + Bu + w(g))."""
    h = prm["h"]
    mu, mu_plus = momenta(ret, prm["inertia"], h, xi)
    g1 = g @ ret.tau(h * xi)
    drag = prm["H"] @ xi
    w0 = restoring_wrench(group, g, prm["weight"], prm["buoyancy"], prm["center"])
    w1 = restoring_wrench(group, g1, prm["weight"], prm["buoyancy"], prm["center"])
    nu0 = mu - 0.5 * h * (drag + prm["B"] @ u_minus + w0)
    nu1 = mu_plus + 0.5 * h * (drag + prm["B"] @ u_plus + w1)
    return nu0, nu1, g1


# ---- the integrator's functions ----------------------------------------------------------------------------
@cache
def step_functions(group_name: str, kind: str, m: int, compile: bool | None = None) -> FunctionSet:
    """Compiled functions of one step for a body with ``m`` inputs (x = (coordinates of g, ν), y = ξ_k):

    - ``residual(y, x, u, P)`` → (R, ∂R/∂y): R = ν_k(ξ) − ν_k, the first line of the module docstring;
    - ``output(y, x, u, P)`` → x_{k+1};
    - ``linearize(y, x, u, xn, P)`` → (R_y, R_z, O_y, O_z) in tangent coordinates z = (δg, δν, u) at x
      (g = g_k τ(δg), ν = ν_k + δν) and output coordinates diff(xn, x_{k+1}) = (τ⁻¹(g_n⁻¹g_{k+1}), ν_{k+1} − ν_n);
    - ``hessian(y, x, u, xn, c, μ, P)`` → ∇²_{(y,z)}(cᵀO + μᵀR) (what second-order methods contract).
    """
    funcs = _step_graphs(group_name, kind, m)
    return FunctionSet(f"lie{group_name}{kind}{m}", funcs, compile=compile, lazy=("linearize", "hessian"))


@builds_graph
def _step_graphs(group_name: str, kind: str, m: int) -> dict[str, ca.Function]:
    """``step_functions``' CasADi functions (built holding the graph lock; compiled after, without it)."""
    G = get_group(group_name)
    ret = Retraction(G, kind)
    n, nq = G.dim, G.nq
    P = ca.SX.sym("P", sum(r * c for _, (r, c) in _param_sizes(n, m)))
    prm = unpack_parameters(P, n, m)
    y, x, u, xn = ca.SX.sym("y", n), ca.SX.sym("x", nq + n), ca.SX.sym("u", m), ca.SX.sym("xn", nq + n)
    dg, dnu = ca.SX.sym("dg", n), ca.SX.sym("dnu", n)
    gk = G.from_coordinates(x[:nq])

    def parts(g, nu):
        nu0, nu1, g1 = forced_momenta(G, ret, prm, g, y, u, u)
        return nu0 - nu, g1, nu1

    R, g1, nu1 = parts(gk, x[nq:])
    funcs = {
        "residual": ca.Function("lie_residual", [y, x, u, P], [R, ca.jacobian(R, y)]),
        "output": ca.Function("lie_output", [y, x, u, P], [ca.vertcat(G.to_coordinates(g1), nu1)]),
    }
    # Tangent coordinates: perturb the state along the retraction, express the output relative to xn.
    Rt, g1t, nu1t = parts(gk @ ret.tau(dg), x[nq:] + dnu)
    gn = G.from_coordinates(xn[:nq])
    O = ca.vertcat(ret.tau_inv(G.inverse(gn) @ g1t), nu1t - xn[nq:])
    z = ca.vertcat(dg, dnu, u)
    lin = ca.Function(
        "lie_lin_z", [y, z, x, xn, P], [ca.jacobian(Rt, y), ca.jacobian(Rt, z), ca.jacobian(O, y), ca.jacobian(O, z)]
    )
    c, mu = ca.SX.sym("c", 2 * n), ca.SX.sym("mu", n)
    w = ca.vertcat(y, z)
    H = ca.hessian(ca.dot(c, O) + ca.dot(mu, Rt), w)[0]
    hes = ca.Function("lie_hes_z", [y, z, x, xn, c, mu, P], [H])
    # Evaluated at δ = 0: the perturbations become zero inputs of small wrappers.
    zeros = ca.DM.zeros(2 * n)
    zu = ca.vertcat(zeros, u)
    funcs["linearize"] = ca.Function("lie_linearize", [y, x, u, xn, P], lin(y, zu, x, xn, P))
    funcs["hessian"] = ca.Function("lie_hessian", [y, x, u, xn, c, mu, P], [hes(y, zu, x, xn, c, mu, P)])
    # Dense outputs: the compiled call returns buffers shaped like the outputs (codegen._CFunction).
    return {k: ca.Function(f.name(), f.sx_in(), [ca.densify(o) for o in f.call(f.sx_in())]) for k, f in funcs.items()}
