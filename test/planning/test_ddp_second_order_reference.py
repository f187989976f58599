"""DDP's backward pass against one written here with the dynamics' second derivatives by finite differences
(dropping the cross term H_xu = Σᵢ V'_x,i ∂²fᵢ/∂x∂u went unnoticed on the pendulum, where it is ~H_xx/200).

On the cart-pole from a random input sequence the cross term moves the first iteration's gains by ~30 %; the
compiled kernel (the default path) and the numpy path must both give the gains of Mayne's recursion (Tassa, Erez,
Todorov 2012 regularization, as ``planning/ddp.py`` documents) whose ∂²f comes from central differences of the
exact linearization A(x, u), B(x, u) — independent of the symbolic second-order terms (Johnson2015, eqs. 16–27).
"""

import numpy as np
import pytest

from vi_control.integrators.midpoint import MidpointVI
from vi_control.linearization import linearize
from vi_control.model.bundled import load_bundled
from vi_control.planning import compiled
from vi_control.planning.cost import QuadraticTrackingCost
from vi_control.planning.ddp import ddp

N, MU = 20, 1e-6  # horizon; ddp's initial regularization (its default)


@pytest.fixture(scope="module")
def problem():
    vi = MidpointVI(load_bundled("cartpole"), 0.05)
    x0 = vi.state_from_configurations(np.zeros(2), np.zeros(2))
    up = vi.state_from_configurations(np.array([0.0, np.pi]), np.array([0.0, np.pi]))
    cost = QuadraticTrackingCost(
        np.tile(up, (N + 1, 1)),
        np.zeros((N, vi.nu)),
        np.diag([1.0, 10.0, 0.1, 0.1]),
        0.1 * np.eye(vi.nu),
        np.diag([10.0, 100.0, 1.0, 1.0]),
    )
    U0 = np.random.default_rng(3).normal(0.0, 3.0, (N, vi.nu))
    return vi, cost, x0, U0, vi.simulate(x0, U0)[0]


def _second_derivatives(vi, x, u, eps=1e-6):
    """∂A/∂x_b (b, i, a), ∂A/∂u_j (j, i, a), ∂B/∂u_l (l, i, j) by central differences of the exact A, B."""

    def d(i, n, which, wrt):
        e = np.zeros(n)
        e[i] = eps
        plus = linearize(vi, x + e, u) if wrt == "x" else linearize(vi, x, u + e)
        minus = linearize(vi, x - e, u) if wrt == "x" else linearize(vi, x, u - e)
        return (getattr(plus, which) - getattr(minus, which)) / (2 * eps)

    return (
        np.array([d(b, len(x), "A", "x") for b in range(len(x))]),
        np.array([d(j, len(u), "A", "u") for j in range(len(u))]),
        np.array([d(j, len(u), "B", "u") for j in range(len(u))]),
    )


def reference_gains(vi, cost, X, U, cross_term=True):
    """Feedback gains (rollout convention δu = K δx) of one regularized DDP backward pass along (X, U)."""
    Vx, Vxx = cost.Qf @ (X[-1] - cost.X_ref[-1]), cost.Qf
    K = np.zeros((len(U), vi.nu, vi.nx))
    for k in range(len(U) - 1, -1, -1):
        lin = linearize(vi, X[k], U[k])
        A, B = lin.A, lin.B
        dAx, dAu, dBu = _second_derivatives(vi, X[k], U[k])
        Hxx = np.einsum("i,bia->ab", Vx, dAx)
        Hxu = np.einsum("i,jia->aj", Vx, dAu)
        Huu = np.einsum("i,lij->jl", Vx, dBu)
        Qx, Qu = cost.Q @ (X[k] - cost.X_ref[k]) + A.T @ Vx, cost.R @ (U[k] - cost.U_ref[k]) + B.T @ Vx
        Qxx = cost.Q + A.T @ Vxx @ A + 0.5 * (Hxx + Hxx.T)
        Qux = B.T @ Vxx @ A + (Hxu.T if cross_term else 0.0)
        Quu = cost.R + B.T @ Vxx @ B + Huu
        Quu_r, Qux_r = 0.5 * (Quu + Quu.T) + MU * B.T @ B, Qux + MU * B.T @ A
        kk, K[k] = -np.linalg.solve(Quu_r, Qu), -np.linalg.solve(Quu_r, Qux_r)
        Vx = Qx + K[k].T @ (Quu @ kk + Qu) + Qux.T @ kk
        Vxx = Qxx + K[k].T @ (Quu @ K[k] + Qux) + Qux.T @ K[k]
        Vxx = 0.5 * (Vxx + Vxx.T)
    return K


@pytest.mark.parametrize("path", ["compiled", "numpy"])
def test_ddp_gains_include_the_cross_term_where_it_matters(problem, path, monkeypatch):
    vi, cost, x0, U0, X0 = problem
    monkeypatch.setattr(compiled, "ENABLED", path == "compiled")
    res = ddp(vi, cost, x0, U0, max_iterations=1, regularization=MU)
    assert res.compiled == (path == "compiled") and res.step_kinds == ["newton"]
    K_ref = reference_gains(vi, cost, X0, U0)
    scale = np.abs(K_ref).max()
    assert np.abs(-res.K - K_ref).max() <= 1e-5 * scale  # OptimizerResult.K is u = U + K (X − x)
    # on this problem the cross term is no rounding detail: without it the gains are ~30 % off
    assert np.abs(reference_gains(vi, cost, X0, U0, cross_term=False) - K_ref).max() > 0.05 * scale
