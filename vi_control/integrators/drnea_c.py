"""Compiled LinearTimeVI step (Lee2016): DRNEA (Alg. 2), RIQN (Alg. 3, eq. 25) and exact Newton (Alg. 4).

The same equations as ``drnea.BodyTree`` / ``LinearTimeVI.solve``, written once more as plain C (our own
code, no libraries) so one step is one ctypes call: the numpy version is dominated by ~50 numpy calls per
DRNEA evaluation, which hides the O(n) vs O(n²)/O(n³) arithmetic the paper compares. Bodies are visited
in index order, parents before children (Pinocchio's numbering), so every tree recursion is one loop.

- Forward pass: T_i = T_λ X_i exp([S_i]q_i) (eq. 18); the one-step displacement W_i = W_λ exp([Sw_i]Δq_i)
  carried as (R − I, t) like ``BodyTree.displacement`` (keeps digits relative to Δq), ξ_i = log ΔT_i (eq. 10).
- Backward pass in the world frame (subtree sums), μ_i = dlogᵀ_ξ G ξ / Δt by Horner's rule (eqs. 12, 21b).
- RIQN: q ← q − Δt M(q_k)⁻¹ f (eq. 25) by an articulated-body recursion in world coordinates (Featherstone's
  ABA); the articulated inertias depend on q_k only, so they are formed once per step and each iteration
  costs two O(n) vector passes.
- Newton: the exact Jacobian, either Σ J_i(q_k)ᵀ N_i J_i(q_{k+1}) + diag(c) from subtree sums (ours, O(n)
  6×6 work + O(n²) dot products) or column by column as the paper's Alg. 4 prints it (n forward/backward
  passes, O(n²) with the full per-body work in every pass); dense LU (O(n³)).

Compiled with the system C compiler once, cached in codegen.cache_dir() under the hash of source and flags.
"""

from __future__ import annotations

import ctypes
from importlib import resources

import numpy as np

from ..mechanics import lie
from ..mechanics.codegen import CompilerRequiredError, cflags, compile_shared_library, compiler, require_compiler
from ..mechanics.drnea import BodyTree

# Return codes of ltvi_step (LinearTimeVI raises ConvergenceError for every non-zero one).
OK, NOT_CONVERGED, LOG_NEAR_PI, SINGULAR_JACOBIAN, LINE_SEARCH_FAILED, STAGNATED, ALIASED = range(7)
MAX_DEPTH = 10  # substeps of the last fallback: Δt/2 … Δt/2^MAX_DEPTH (drnea_step.c)
_BODY = 72  # doubles per body in the model array
_WORK = 192  # doubles per body in the work array
OPT_LEVEL = "-O2"  # (codegen.cflags: the user's other flags kept) no -ffast-math: the same IEEE operations as written

DRNEA_C = (resources.files(__package__) / "csrc" / "drnea_step.c").read_text()

# What each non-zero code means, and what the fallback chain did (its record fb, ltvi_chain): the words of
# LinearTimeVI's log and errors.
REASONS = {
    NOT_CONVERGED: "max_iterations reached or a non-finite residual",
    LOG_NEAR_PI: "a relative rotation reached π (log map)",
    SINGULAR_JACOBIAN: "singular Jacobian",
    LINE_SEARCH_FAILED: "no decrease of the residual along the update (line search)",
    STAGNATED: "the residual stagnated (less than 2-fold smaller over 3 updates)",
    ALIASED: "its root turns a joint more than max_rotation, an aliased root",
}


def fallback_reason(method: str, fb: np.ndarray) -> str:
    """What the fallback chain did, from its record (first failure code, Newton's code or -1, substeps, division)."""
    first, newton, substeps, division = (int(v) for v in fb)
    name = "RIQN" if method == "riqn" else "Newton"
    text = f"{name} did not converge at Δt ({REASONS.get(first, first)})"
    if newton >= 0:
        text += (
            "; solved by Newton with the exact Jacobian"
            if newton == OK
            else f"; Newton with the exact Jacobian neither ({REASONS.get(newton, newton)})"
        )
    if substeps:
        text += f"; solved as {substeps} substeps (finest Δt/{division})"
    return text


_lib: ctypes.CDLL | None = None


def load_library() -> ctypes.CDLL | None:
    """Compile DRNEA_C once per source hash (cached on disk), load it; None without a C compiler."""
    global _lib
    if _lib is not None:
        return _lib
    so = compile_shared_library(DRNEA_C, "drnea", cflags(OPT_LEVEL), "the DRNEA step")
    if so is None:
        return None
    lib = ctypes.CDLL(str(so))
    ptr = ctypes.c_void_p
    lib.ltvi_step.argtypes = [ptr] * 11
    lib.ltvi_step.restype = ctypes.c_int
    lib.ltvi_rollout.argtypes = [ptr] * 4 + [ctypes.c_longlong] + [ptr] * 6
    lib.ltvi_rollout.restype = ctypes.c_int
    lib.ltvi_jacobian.argtypes = [ptr] * 7
    lib.ltvi_jacobian.restype = ctypes.c_int
    lib.ltvi_aba.argtypes = [ptr] * 6 + [ctypes.c_longlong, ptr, ptr]
    lib.ltvi_aba.restype = ctypes.c_int
    _lib = lib
    return lib


# What needs the compiler, for codegen.require_compiler's message.
NEEDS_COMPILER = "LinearTimeVI's step (integrators/csrc/drnea_step.c)"


def available() -> bool:
    """True where the step can be built: a C compiler is there (the library is model-independent, so
    VI_CONTROL_NO_COMPILE, which concerns a model's generated functions, does not apply)."""
    return compiler() is not None


class CompiledStep:
    """Model arrays of a BodyTree packed once; ``step`` is one ctypes call (module docstring)."""

    def __init__(
        self,
        tree: BodyTree,
        dt: float,
        damping: np.ndarray,
        method: str,
        initial_guess: str,
        tol: float,
        step_tol: float,
        max_iterations: int,
        jacobian: str = "subtree",
        fallback: bool = True,
        rotational: np.ndarray | None = None,
        max_rotation: float = np.pi,
        momentum_scale: float = 1.0,
    ):
        require_compiler(NEEDS_COMPILER)
        self.lib = load_library()
        if self.lib is None:
            raise CompilerRequiredError(f"vi_control: {NEEDS_COMPILER} did not compile (warning above)")
        n = self.n = tree.n
        self._guess_code = {"IG1": 1, "IG2": 2, "IG3": 3}[initial_guess]
        code = 0 if method == "riqn" else (2 if jacobian == "alg4" else 1)
        rot = np.zeros(n) if rotational is None else np.asarray(rotational)  # joints whose turn per step is limited
        self.ip = np.concatenate(
            [[n, code, self._guess_code, max_iterations], tree.parents, [int(fallback), self._guess_code], rot]
        ).astype(np.int64)
        self.dp = np.concatenate(
            [[dt, tol, step_tol], tree.gravity, lie.C_EVEN, [max_rotation, momentum_scale]]
        ).astype(float)
        body = np.zeros((n, _BODY))
        body[:, 0:9] = tree.XR.reshape(n, 9)
        body[:, 9:12] = tree.Xp
        body[:, 12:18] = tree.S
        body[:, 18:54] = tree.G.reshape(n, 36)
        body[:, 54] = tree.mass
        body[:, 55:58] = tree.com
        body[:, 58] = damping
        body[:, 59] = tree.revolute
        body[:, 60:69] = np.array([tree.model.inertias[i + 1].inertia for i in range(n)]).reshape(n, 9)  # about the CoM
        self.body = np.ascontiguousarray(body)
        self.work = np.zeros(n * _WORK + 6 * n + n * n + 48 * n + 3 * n + 2 * n * MAX_DEPTH)
        self.iwork = np.zeros(max(n, 1), dtype=np.int64)
        self.info = np.zeros(3)
        # (first failure code, Newton's code or -1, substeps taken, finest division): ltvi_chain in drnea_step.c
        self.fallback = np.zeros(4)
        # Preallocated argument buffers and their addresses: the call itself then costs ~2 µs of Python.
        self._x, self._tau, self._xn, self._guess = np.zeros(2 * n), np.zeros(n), np.zeros(2 * n), np.zeros(n)
        self._ptrs = [a.ctypes.data for a in (self.ip, self.dp, self.body)]
        self._args = [
            *self._ptrs,
            self._x.ctypes.data,
            self._tau.ctypes.data,
            None,
            self._xn.ctypes.data,
            self.info.ctypes.data,
            self.work.ctypes.data,
            self.iwork.ctypes.data,
            self.fallback.ctypes.data,
        ]
        self._args_guess = list(self._args)
        self._args_guess[5] = self._guess.ctypes.data

    def step(
        self, x: np.ndarray, tau: np.ndarray, guess: np.ndarray | None = None
    ) -> tuple[int, np.ndarray, float, int]:
        """(return code, x_{k+1}, residual ∞-norm, iterations) for state x = (q, p) and joint torques tau."""
        self._x[:] = x
        self._tau[:] = tau
        if guess is None:
            code = self.lib.ltvi_step(*self._args)
        else:
            self._guess[:] = guess
            self.ip[2] = 0  # use the given q_{k+1} guess
            try:
                code = self.lib.ltvi_step(*self._args_guess)
            finally:
                self.ip[2] = self._guess_code
        return code, self._xn.copy(), float(self.info[0]), int(self.info[1])

    def rollout(self, x0: np.ndarray, taus: np.ndarray) -> tuple[int, np.ndarray, np.ndarray, float, int, int]:
        """N steps in one call: (return code, states (N+1, 2n), iterations (N,), residual, iterations and
        index of the last step attempted, fallback rows (N, 4) as ``fallback``). Stops at the first failing step;
        later rows stay zero."""
        taus = np.ascontiguousarray(taus, dtype=float).reshape(-1, self.n)
        N = len(taus)
        X = np.zeros((N + 1, 2 * self.n))
        X[0] = x0
        iters = np.zeros(N)
        fbs = np.zeros((N, 4))
        self.info[:] = (np.nan, 0, N - 1)
        code = self.lib.ltvi_rollout(
            *self._ptrs,
            taus.ctypes.data,
            N,
            X.ctypes.data,
            iters.ctypes.data,
            self.info.ctypes.data,
            self.work.ctypes.data,
            self.iwork.ctypes.data,
            fbs.ctypes.data,
        )
        return code, X, iters.astype(int), float(self.info[0]), int(self.info[1]), int(self.info[2]), fbs

    def jacobian(self, q0: np.ndarray, q1: np.ndarray, alg4: bool = False) -> np.ndarray:
        """∂f/∂q_{k+1} at (q_k, q_{k+1}) by Alg. 4 or by subtree sums (with the damping term)."""
        q0, q1 = (np.ascontiguousarray(a, dtype=float) for a in (q0, q1))
        ip = self.ip.copy()
        ip[1] = 2 if alg4 else 1
        J = np.zeros((self.n, self.n))
        if self.lib.ltvi_jacobian(
            ip.ctypes.data, *self._ptrs[1:], q0.ctypes.data, q1.ctypes.data, J.ctypes.data, self.work.ctypes.data
        ):
            raise ValueError("relative rotation near π in one step (log map)")
        return J

    def aba(self, q: np.ndarray, qdot: np.ndarray, tau: np.ndarray, gravity: bool = True) -> np.ndarray:
        """Articulated-body forward dynamics M⁻¹(τ − C q̇ − g), the recursion RIQN and IG3 use."""
        q, qdot, tau = (np.ascontiguousarray(a, dtype=float) for a in (q, qdot, tau))
        out = np.zeros(self.n)
        self.lib.ltvi_aba(
            *self._ptrs,
            q.ctypes.data,
            qdot.ctypes.data,
            tau.ctypes.data,
            int(gravity),
            out.ctypes.data,
            self.work.ctypes.data,
        )
        return out
