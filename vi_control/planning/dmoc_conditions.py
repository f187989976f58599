"""The per-step conditions of DMOC (Jimenez2013, §5, eqs. 26–31) as one compiled CasADi function, and the sparsity
structure of the Newton system they assemble into (``planning.dmoc``'s solver fills it every iteration)."""

from __future__ import annotations

from functools import cache

import casadi as ca
import numpy as np

from ..mechanics import codegen
from ..mechanics.codegen import FunctionSet
from ..mechanics.euler_poincare import momenta
from ..mechanics.graph_lock import builds_graph
from ..mechanics.groups import Retraction, get_group

__all__ = ["constraint_size", "step_conditions", "jacobian_pattern", "csc_structure", "unit_scales", "entry_scales"]


# ---- the per-step conditions (symbolic, compiled once per structure) ------------------------------------------
def constraint_size(n: int, r: int, inputs: str) -> int:
    """c, the size of the step's constraint Φ_k and of its multiplier λ_k on an n-dimensional group with r
    unactuated directions: (Φ_k⁻, Φ_k⁺) = N_Bᵀ(W_k⁻, W_k⁺) for ``inputs='split'`` (Jimenez2013, eq. 23), (Φ_k⁻,
    W_k⁻ − W_k⁺) for ``'hold'`` (u_k⁻ = u_k⁺)."""
    return 2 * r if inputs == "split" else r + n


@cache
def step_conditions(group_name: str, kind: str, m: int, r: int, inputs: str) -> FunctionSet:
    """The compiled per-step conditions of DMOC (Jimenez2013, eqs. 26–31) for a group, retraction ``kind``, m inputs,
    r unactuated directions and the ``inputs`` mode; its function ``"step"`` maps (a, p) to one column.

    For a = (ν_k, ξ_k, ν_{k+1}, λ_k): out = ((dτ⁻¹_{−hξ})ᵀ∂_ξS, (dτ⁻¹_{hξ})ᵀ∂_ξS, ∂_νS, ∂_{ν'}S, Φ), ∂out/∂a,
    S₀ (the step's cost), u⁻, u⁺, W⁻, W⁺, μ, μ⁺, τ(hξ) and h·dτ_{hξ} (for the terminal pose and its Jacobian),
    as one column. Parameters p = (𝕀, B⁺, N_B, H, h) (column-major). One compiled library serves every N."""
    f = _step_graph(group_name, kind, m, r, inputs)
    # -O0: gcc needs ~5 s instead of ~25 s for these 17k instructions (dense second derivatives), and a call costs
    # ~20 µs instead of ~10 µs, under 1 ms per evaluation of all N steps: small next to the sparse LU.
    return FunctionSet(f"dmoc{group_name}{kind}{m}{r}{inputs}", {"step": f}, flags=codegen.cflags("-O0"))


@builds_graph
def _step_graph(group_name: str, kind: str, m: int, r: int, inputs: str) -> ca.Function:
    """``step_conditions``' CasADi function (built holding the graph lock; compiled after, without it)."""
    G = get_group(group_name)
    ret = Retraction(G, kind)
    n = G.dim
    c = constraint_size(n, r, inputs)
    nu0, xi, nu1, lam = ca.SX.sym("nu0", n), ca.SX.sym("xi", n), ca.SX.sym("nu1", n), ca.SX.sym("lam", c)
    sizes = [n * n, m * n, n * r, n * n, 1]
    p = ca.SX.sym("p", sum(sizes))
    parts, i = [], 0
    for s_, shape in zip(sizes, [(n, n), (m, n), (n, r), (n, n), (1, 1)]):
        parts.append(ca.reshape(p[i : i + s_], *shape))
        i += s_
    inertia, Bp, NB, H, h = parts
    mu, mu_plus = momenta(ret, inertia, h, xi)
    Wm = (2.0 / h) * (mu - nu0) - H @ xi
    Wp = (2.0 / h) * (nu1 - mu_plus) - H @ xi
    um, up = Bp @ Wm, Bp @ Wp
    C = ca.vertcat(NB.T @ Wm, NB.T @ Wp) if inputs == "split" else ca.vertcat(NB.T @ Wm, Wm - Wp)
    S0 = 0.25 * h * (ca.dot(um, um) + ca.dot(up, up))
    S = S0 + ca.dot(lam, C)
    gx = ca.gradient(S, xi)
    out = ca.vertcat(
        ret.dtau_inv(-h * xi).T @ gx, ret.dtau_inv(h * xi).T @ gx, ca.gradient(S, nu0), ca.gradient(S, nu1), C
    )
    a = ca.vertcat(nu0, xi, nu1, lam)
    # Outputs stacked in one column per step:
    # out, vec ∂out/∂a, S₀, u⁻, u⁺, W⁻, W⁺, μ, μ⁺, vec τ(hξ), vec h·dτ_{hξ}.
    col = ca.vertcat(
        out,
        ca.vec(ca.densify(ca.jacobian(out, a))),
        S0,
        um,
        up,
        Wm,
        Wp,
        mu,
        mu_plus,
        ca.vec(ret.tau(h * xi)),
        ca.vec(h * ret.dtau(h * xi)),
    )
    return ca.Function("dmoc_step", [a, p], [ca.densify(col)])


# ---- the Newton system's sparsity -----------------------------------------------------------------------------
@cache
def jacobian_pattern(N: int, n: int, c: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Where the N steps' local Jacobians ∂out/∂a (``step_conditions``) go in the Newton system's Jacobian J of the
    conditions (31) on an n-dimensional group with c = ``constraint_size`` per step (the terminal block T apart):
    COO rows/cols/signs and positions in the stacked local Jacobians (N, 4n+c, 3n+c) of every entry of J:
    equations ordered E_1…E_{N−1}, T, V_1…V_{N−1}, Φ_0…Φ_{N−1}; unknowns ξ_0…ξ_{N−1}, ν_1…ν_{N−1}, λ_0…λ_{N−1}."""
    off_nu, off_lam = N * n, N * n + (N - 1) * n
    rE = lambda k: np.arange((k - 1) * n, k * n)  # noqa: E731
    rV = lambda k: N * n + np.arange((k - 1) * n, k * n)  # noqa: E731
    rC = lambda k: (2 * N - 1) * n + np.arange(k * c, (k + 1) * c)  # noqa: E731
    nu_idx = lambda k: None if k in (0, N) else off_nu + np.arange((k - 1) * n, k * n)  # noqa: E731
    rows, cols, local, sign = [], [], [], []
    nr, nc = 4 * n + c, 3 * n + c
    for k in range(N):
        col_blocks = [nu_idx(k), np.arange(k * n, (k + 1) * n), nu_idx(k + 1), off_lam + np.arange(k * c, (k + 1) * c)]
        row_blocks = [
            (rE(k + 1), 1.0) if k + 1 <= N - 1 else None,
            (rE(k), -1.0) if k >= 1 else None,
            (rV(k), 1.0) if k >= 1 else None,
            (rV(k + 1), 1.0) if k + 1 <= N - 1 else None,
            (rC(k), 1.0),
        ]
        for bi, rb in enumerate(row_blocks):
            if rb is None or len(rb[0]) == 0:
                continue
            rr, sg = rb
            lr = np.arange(bi * n, bi * n + len(rr))
            for bj, cb in enumerate(col_blocks):
                if cb is None or len(cb) == 0:
                    continue
                lc = bj * n + np.arange(len(cb))
                R_, C_ = np.meshgrid(rr, cb, indexing="ij")
                LR, LC = np.meshgrid(lr, lc, indexing="ij")
                rows.append(R_.ravel())
                cols.append(C_.ravel())
                local.append(k * nr * nc + (LR * nc + LC).ravel())
                sign.append(np.full(R_.size, sg))
    return np.concatenate(rows), np.concatenate(cols), np.concatenate(local), np.concatenate(sign)


@cache
def csc_structure(N: int, n: int, c: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The fixed sparsity of the Newton system's Jacobian J as (inverse, indices, indptr): CSC data of J (the
    per-step blocks of ``jacobian_pattern``, then the dense
    terminal block, row-major) is bincount(inverse, data) with duplicates summed: each Newton iteration fills a
    fixed structure instead of sorting."""
    rows, cols, _, _ = jacobian_pattern(N, n, c)
    R_, C_ = np.meshgrid(np.arange((N - 1) * n, N * n), np.arange(N * n), indexing="ij")
    rows, cols = np.concatenate([rows, R_.ravel()]), np.concatenate([cols, C_.ravel()])
    size = N * n + (N - 1) * n + N * c
    uniq, inverse = np.unique(cols.astype(np.int64) * size + rows, return_inverse=True)
    indptr = np.searchsorted(uniq // size, np.arange(size + 1))
    return inverse, (uniq % size).astype(np.int32), indptr.astype(np.int32)


def unit_scales(N: int, n: int, c: int, p: float) -> tuple[np.ndarray | None, np.ndarray | None]:
    """(row, column) scales of the Newton system for a body whose momentum at unit velocity is p (kg or kg·m²): the
    size of each equation and unknown when every mass and inertia is × p. Rows (``jacobian_pattern``'s order): E_k
    (∂_ξS, with S ∝ ‖u‖², u ∝ p) p², T (a pose) 1, V_k (∂_νS) p, Φ_k (a wrench) p; unknowns ξ 1, ν (a momentum) p,
    λ p. F/rows and w/columns are the same at every p, so ‖F/rows‖∞ ≤ tol is one test for every body: in SI units a
    0.9 µg·m² spacecraft (× 2⁻³⁰) was taken for solved at its initial guess (93 % off), and a 1–2.5 t·m² one (× 2¹⁰)
    was reported unconverged after 30 iterations with the plan right to 1e-15 (E_k ∝ p² cannot reach 1e-11).
    (None, None) for p = 1."""
    if not (p > 0.0 and p != 1.0):
        return None, None
    rows = np.concatenate([np.full((N - 1) * n, p * p), np.ones(n), np.full((N - 1) * n, p), np.full(N * c, p)])
    cols = np.concatenate([np.ones(N * n), np.full((N - 1) * n + N * c, p)])
    return rows, cols


def entry_scales(structure: tuple[np.ndarray, np.ndarray, np.ndarray], rs: np.ndarray, cs: np.ndarray) -> np.ndarray:
    """cs[j]/rs[i] for every stored entry (i, j) of the CSC ``structure`` (``csc_structure``): diag(1/rs)·J·diag(cs)
    by scaling J's data in place. Sparse products would drop the entries that happen to be zero and can leave a
    structurally singular matrix (rank 600 of 602 on a heave goal), on which SuperLU's factorization reads
    uninitialized memory and can crash the process; the fixed structure keeps it on the numerically singular path,
    which reports the singularity."""
    _, indices, indptr = structure
    return cs[np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))] / rs[indices]


def scaled_evaluation(trial: tuple, rs: np.ndarray | None) -> tuple:
    """An evaluation (F, parts) with F divided by the row scales ``rs`` of ``unit_scales`` (None: as it is)."""
    return trial if rs is None else (trial[0] / rs, trial[1])
