"""Discrete LQR about a trajectory (Johnson2015, §VIII-A, eq. 36) and about an equilibrium.

Sign convention of the whole project (Plan, controller): u = u_ref + K (x_ref − x), so K here is
the seed's 𝒦(k) = [R + BᵀP_{k+1}B]⁻¹ BᵀP_{k+1}A (the text after eq. 36 prints BᵀPB, a typo: the
gain that minimizes the cost of eq. 36's LQ problem has A on the right).

The recursions themselves have one implementation, our C (``control/csrc/lqr_kernel.c``, on mechanics' dense LU and
products), compiled on first use into the cache (``mechanics.codegen``) as this layer's own library: in Python the
DLQR's ~18 small solves cost ~0.5 ms, a tenth of a panda plan, and the control layer (hold gains, tracking) and the
planner share this one path. The tests compare it with an independent numpy oracle of the same formulas
(``test/support/lqr_oracle.py``) and with scipy's ``solve_discrete_are``. Without a C compiler ``tv_lqr`` and
``dlqr`` refuse at first use with ``codegen.CompilerRequiredError``, which names the fix.
This module also holds the checks every caller of the recursions shares (``check_weight``, ``check_system``).
"""

from __future__ import annotations

import ctypes
import math
from importlib import resources

import numpy as np

from ..mechanics import codegen
from ..mechanics.discrete import DENSE_LU_C, DENSE_MM_C
from ..model.errors import renamed_keyword
from ..model.scalars import as_real_array

LQR_C = DENSE_LU_C + DENSE_MM_C + (resources.files(__package__) / "csrc" / "lqr_kernel.c").read_text()

# What needs the compiler, for codegen.require_compiler's message.
NEEDS_COMPILER = "the LQR recursions (tv_lqr, dlqr: control/csrc/lqr_kernel.c)"

# Tolerances of the weight checks, relative to the weight's norm: a PSD weight's eigenvalues may reach −WEIGHT_TOL·‖W‖
# (round-off of a weight computed as a product, e.g. DxᵀPDx) and its entries be asymmetric by WEIGHT_TOL·max|W|; a
# PD weight's smallest eigenvalue must exceed DEFINITE_TOL·‖W‖ (~64 eps: what eigvalsh resolves — so R = diag(1e-6,
# 1e6) is accepted, R = 0 or a rank-deficient R is not).
WEIGHT_TOL = 1e-10
DEFINITE_TOL = 64 * np.finfo(float).eps


def _first(mask: np.ndarray) -> int | None:
    hits = np.flatnonzero(mask)
    return int(hits[0]) if len(hits) else None


def check_weight(
    W: np.ndarray | float, n: int, name: str, definite: bool = False, stack: int | None = None
) -> np.ndarray:
    """A weight as an (n, n) matrix — or (stack, n, n) if ``stack`` and W is 3-D — checked for what the Riccati
    recursion (Johnson2015, eq. 36) needs: finite, symmetric, positive semidefinite (Q, Q_f) or positive definite (R:
    R + BᵀPB must be invertible for any P ⪰ 0, and DLQR inverts R itself). Scalar → w·I, vector → diag(w).

    An indefinite weight makes the LQ problem unbounded below: the recursion would still return gains — of a saddle
    point, not of a minimum — so it is refused here. ValueError naming ``name``, what it must be and what it got.
    """
    W = np.asarray(W)
    if W.dtype.kind not in "biuf":
        raise ValueError(f"{name}: expected real numbers, got dtype {W.dtype}")
    W = W.astype(float)
    if W.ndim == 0:
        W = float(W) * np.eye(n)
    elif W.ndim == 1:
        if W.size != n:
            raise ValueError(
                f"{name}: expected {n} diagonal entries (or a scalar, or an ({n}, {n}) matrix), got {W.size}"
            )
        W = np.diag(W)
    want = (n, n) if stack is None or W.ndim < 3 else (stack, n, n)
    if W.shape != want:
        raise ValueError(f"{name}: expected a scalar, {n} diagonal entries or a {want} array, got shape {W.shape}")
    if W.ndim == 2 and n:  # the usual weight, diagonal (~30 numpy calls below, ~30 µs, on each of a plan's 7 checks)
        d = W.diagonal()
        lowest, highest = float(d.min()), float(d.max())  # (NaN or ±inf in d makes one of them so)
        if math.isfinite(lowest) and math.isfinite(highest) and np.count_nonzero(W) == np.count_nonzero(d):
            norm = max(-lowest, highest)  # (a NaN off the diagonal counts as nonzero: the full check below)
            if (lowest > DEFINITE_TOL * norm) if definite else (lowest >= -WEIGHT_TOL * norm):
                return W
    _check_finite(W, name)
    if n == 0:  # no inputs (or no state): nothing to weigh
        return W
    Ws = W.reshape(-1, n, n)  # one check for a stack: a horizon of 10⁵ weights costs one batched eigvalsh
    which = (lambda k: name) if W.ndim == 2 else (lambda k: f"{name}[{k}]")
    asym = np.abs(Ws - Ws.transpose(0, 2, 1))
    k = _first(asym.max(axis=(1, 2)) > WEIGHT_TOL * np.abs(Ws).max(axis=(1, 2)))
    if k is not None:
        i, j = np.unravel_index(int(np.argmax(asym[k])), (n, n))
        raise ValueError(
            f"{which(k)}: must be symmetric, got entry [{i}, {j}] = {Ws[k, i, j]:.6g} but "
            f"[{j}, {i}] = {Ws[k, j, i]:.6g}"
        )
    diagonals = np.einsum("kii->ki", Ws)
    if np.any(Ws - diagonals[:, :, None] * np.eye(n)):
        eig = np.linalg.eigvalsh(Ws)
    else:  # diagonal weights (the usual ones): their eigenvalues are their diagonals, no eigvalsh (~50 µs each)
        eig = np.sort(diagonals, axis=1)
    lowest, norm = eig[:, 0], np.abs(eig).max(axis=1)  # (norm: the spectral norm of a symmetric matrix)
    k = _first(~(lowest > DEFINITE_TOL * norm) if definite else lowest < -WEIGHT_TOL * norm)
    if k is not None:
        why = (
            "an indefinite weight makes the LQ cost unbounded below: the Riccati recursion would return a "
            "saddle point's gains, not a minimum's"
            if lowest[k] < -WEIGHT_TOL * norm[k]
            else "a singular input weight leaves R + BᵀPB singular wherever B loses rank, and DLQR inverts R"
        )
        must = "positive definite" if definite else "positive semidefinite"
        raise ValueError(
            f"{which(k)}: must be symmetric {must}, got smallest eigenvalue {lowest[k]:.6g} (norm {norm[k]:.6g}): {why}"
        )
    return W


def check_system(A: np.ndarray, B: np.ndarray, stacked: bool) -> tuple[np.ndarray, np.ndarray]:
    """(A, B) as float arrays of shapes (N, nx, nx), (N, nx, nu) if ``stacked`` else (nx, nx), (nx, nu), finite."""
    A, B = as_real_array(A, "A"), as_real_array(B, "B")
    ndim = 3 if stacked else 2
    if B.ndim != ndim or A.ndim != ndim:
        shapes = "(N, nx, nx) and (N, nx, nu)" if stacked else "(nx, nx) and (nx, nu)"
        raise ValueError(f"A, B: expected {ndim}-D arrays {shapes}, got shapes {A.shape} and {B.shape}")
    if A.shape != B.shape[:-1] + (B.shape[-2],):
        raise ValueError(f"A: expected shape {B.shape[:-1] + (B.shape[-2],)} to match B {B.shape}, got {A.shape}")
    _check_finite(A, "A")
    _check_finite(B, "B")
    return A, B


def _check_finite(M: np.ndarray, name: str) -> None:
    if np.isfinite(M).all():
        return
    bad = np.argwhere(~np.isfinite(M))[0]
    raise ValueError(f"{name}: entries must be finite, got {M[tuple(bad)]} at index {tuple(bad.tolist())}")


_lib: ctypes.CDLL | None = None


def load_library() -> ctypes.CDLL:
    """The LQR library (``LQR_C``), compiled on first use and then loaded from the cache (flags
    ``VI_CONTROL_CFLAGS`` or ``codegen.DEFAULT_CFLAGS``). ``codegen.CompilerRequiredError`` without a C compiler
    or when the build fails (whose message ``codegen`` has already warned): the gains have no other implementation to
    fall back to. Only a loaded library is kept: a compiler installed (or CC set) later is used by the next call."""
    global _lib
    if _lib is not None:
        return _lib
    lib = codegen.load_our_library(LQR_C, "vi_lqr", NEEDS_COMPILER)
    lib.vi_lqr_tv.restype = ctypes.c_int
    lib.vi_lqr_tv.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    lib.vi_lqr_dare.restype = ctypes.c_int
    lib.vi_lqr_dare.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    _lib = lib
    return lib


def _packed(inputs: list[np.ndarray], shapes: list[tuple]) -> tuple[list[int], list[np.ndarray]]:
    """One buffer for a call's inputs (copied in) and its fresh outputs: one address lookup (``.ctypes.data``, a
    few µs) instead of one per array. Returns (the addresses of inputs then outputs, the outputs); an output the C
    code treats as int64 (sizes, pivots) is just its 8-byte slots."""
    sizes = [a.size for a in inputs] + [math.prod(sh) for sh in shapes]
    buf = np.empty(sum(sizes))
    offs = np.cumsum([0] + sizes[:-1]).tolist()
    views = [buf[o : o + n] for o, n in zip(offs, sizes)]
    for v, a in zip(views, inputs):
        v[:] = a.ravel()
    base = buf.ctypes.data
    return [base + 8 * o for o in offs], [v.reshape(sh) for v, sh in zip(views[len(inputs) :], shapes)]


def tv_lqr(
    A: np.ndarray, B: np.ndarray, Q: np.ndarray | float, R: np.ndarray | float, Qf: np.ndarray | float
) -> tuple[np.ndarray, np.ndarray]:
    """Finite-horizon time-varying LQR by the discrete Riccati recursion (Johnson2015, eq. 36a–b), in C.

    A: (N, nx, nx), B: (N, nx, nu); Q, R: one weight for all k (scalar, diagonal or matrix) or a
    stack (N, n, n); Qf terminal. Returns K (N, nu, nx) with u = u_ref + K (x_ref − x) and the
    cost-to-go P (N+1, nx, nx), P_N = Qf. Per stage, from k = N−1 down: K_k = [R + BᵀP_{k+1}B]⁻¹ BᵀP_{k+1}A by an LU
    solve of the symmetrized R + BᵀPB (positive definite: R ≻ 0 is checked, P ⪰ 0 by the form below), and eq. 36a
    in the Joseph-like form P_k = Q + (A−BK)ᵀP_{k+1}(A−BK) + KᵀRK, symmetrized: the same value, and it stays
    symmetric positive semidefinite.

    ValueError naming the argument for what ``check_weight``/``check_system`` refuse, or when P_k or K_k leave double
    range; LinAlgError if R + BᵀPB is singular; ``codegen.CompilerRequiredError`` without a C compiler.
    """
    A, B = check_system(A, B, stacked=True)
    N, nx, nu = B.shape
    Qs, Rs = check_weight(Q, nx, "Q", stack=N), check_weight(R, nu, "R", definite=True, stack=N)
    Qf = check_weight(Qf, nx, "Qf")
    lib = load_library()
    at, (sizes, K, P, _, _, step) = _packed(
        [A, B, Qs, Rs, Qf],
        [(5,), (N, nu, nx), (N + 1, nx, nx), (5 * nx * nx + 2 * nx * nu + 2 * nu * nu,), (max(nu, 1),), (1,)],
    )
    # A weight's stride per stage: 0 reads the one weight at every stage, n² walks a stack (N, n, n).
    sizes.view(np.int64)[:] = N, nx, nu, nx * nx * (Qs.ndim == 3), nu * nu * (Rs.ndim == 3)
    code = lib.vi_lqr_tv(at[5], (ctypes.c_void_p * 10)(*at[:5], *at[6:]))
    if code == 1:
        raise np.linalg.LinAlgError("Singular matrix")
    if code:
        k = int(step.view(np.int64)[0])
        raise ValueError(
            f"A, B: the Riccati recursion (Johnson2015, eq. 36) leaves double range at step {k} "
            f"(max |A_k| = {np.abs(A[k]).max():.3g}, max |B_k| = {np.abs(B[k]).max():.3g}): no finite "
            "gains for these dynamics and weights; rescale the problem"
        )
    return K, P


def dlqr(
    A: np.ndarray,
    B: np.ndarray,
    Q: np.ndarray | float,
    R: np.ndarray | float,
    max_iterations: int = 60,
    tolerance: float = 1e-13,
    *,
    tol: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Infinite-horizon discrete LQR: P the fixed point of eq. 36a (Johnson2015), K = [R + BᵀPB]⁻¹BᵀPA, in C.

    P is found by the structure-preserving doubling algorithm (Chu, Fan, Lin 2005), which squares
    the horizon of the Riccati recursion (36a) each sweep: after j sweeps P equals the 2ʲ-step
    cost-to-go, so it converges quadratically for stabilizable (A, B) and detectable (A, Q^½).
    Stops when a sweep changes P by at most ``tolerance`` (``tol``: its deprecated name) relative to P: K depends on
    the weights' ratio only, so the test must not depend on their scale (an absolute floor tolerance·(1 + |P|) would
    stop weights of 1e-18 after one sweep, with K wrong by 100 %).
    Returns (K, P); ValueError naming the argument for what ``check_weight``/``check_system`` refuse; LinAlgError if
    a solve meets a singular matrix or the iteration does not converge; ``codegen.CompilerRequiredError`` without a C
    compiler.
    """
    tol = renamed_keyword("dlqr", "tol", tol, "tolerance", tolerance)
    A, B = check_system(A, B, stacked=False)
    nx, nu = B.shape
    Qm, Rm = check_weight(Q, nx, "Q"), check_weight(R, nu, "R", definite=True)
    lib = load_library()
    at, (sizes, K, P, _, _) = _packed(
        [np.array([tol], dtype=float), A, B, Qm, Rm],
        [(3,), (nu, nx), (nx, nx), (9 * nx * nx + 2 * nx * nu + 2 * nu * nu,), (nx + nu,)],
    )
    sizes.view(np.int64)[:] = nx, nu, max_iterations
    code = lib.vi_lqr_dare(at[5], at[0], (ctypes.c_void_p * 8)(*at[1:5], *at[6:]))
    if code == 1:
        raise np.linalg.LinAlgError("Singular matrix")
    if code:
        raise np.linalg.LinAlgError("discrete Riccati (doubling) did not converge: is (A, B) stabilizable?")
    return K, P
