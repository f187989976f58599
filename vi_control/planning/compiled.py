"""Whole-horizon compiled DDP stages (issue 13 item 1): per iteration, one C call per pass over all N stages.

DDP's stage work — the rollout (one Newton step of the implicit map per stage), the linearization along the
trajectory (seed 000 eqs. 8–15, 29–30), the second-order contraction V'_x·∂²f (eqs. 16–27) and the Riccati
backward pass with Tassa's regularization and the box QP of the input bounds — runs in our own C
(``mechanics/csrc/ddp_kernel.c``), which calls the model's generated functions ('linearize', 'hessian') and its
Newton driver through their addresses. That library is the same for every model: it is compiled once into the
cache (``mechanics.codegen``) and needs no gcc time per model. Python keeps what ``ddp`` decides: iterations,
the Newton/Gauss–Newton fallback, regularization updates, line-search acceptance and reporting.

The fast path is chosen by capability, never by class: a system whose ``compiled_stage(second_order)`` returns an
``integrators.base.CompiledStage`` (today MidpointVI and its subclass, the GNI, when their step is generated C)
gets ``CompiledStages``; any other ``Linearizable`` takes ddp's numpy path, which stays the general one. The kernel
computes the numpy path's operations (same algorithm, same branch tests), so the two agree to round-off
(test/test_planning_compiled.py). Nothing is kept between calls: every pass writes fresh arrays.
``VI_CONTROL_COMPILED_PLANNER=0`` (or ``ENABLED = False``) forces the numpy path.
"""

from __future__ import annotations

import ctypes
import functools
import os
from dataclasses import dataclass
from importlib import resources

import numpy as np

from ..integrators.base import CompiledStage, Linearizable, SingularityError
from ..linearization import Linearization
from ..mechanics import codegen
from ..mechanics.discrete import DENSE_LU_C
from .shooting import local_model, rollout

KERNEL_C = DENSE_LU_C + (resources.files("vi_control.mechanics") / "csrc" / "ddp_kernel.c").read_text()

ENABLED = os.environ.get("VI_CONTROL_COMPILED_PLANNER", "1") != "0"

_ROLLOUT, _LINEARIZE, _BACKWARD = 0, 1, 2
_ROLLOUT_FAILED, _ROLLOUT_NEEDS_PYTHON = 1, 2


@functools.cache
def kernel_library() -> ctypes.CDLL | None:
    """The model-independent kernel library (compiled on first use, then loaded from the cache); None without a
    C compiler (the planner then takes the numpy path)."""
    flags = os.environ.get("VI_CONTROL_CFLAGS", codegen._DEFAULT_CFLAGS).split()
    so = codegen.compile_shared_library(KERNEL_C, "vi_ddp", flags, "the planner's compiled kernel (using numpy)")
    if so is None:
        return None
    lib = ctypes.CDLL(str(so))
    lib.vi_plan_call.restype = ctypes.c_int
    lib.vi_plan_call.argtypes = [ctypes.c_longlong, ctypes.c_void_p, ctypes.c_void_p]
    lib.vi_plan_workspace.restype = ctypes.c_longlong
    lib.vi_plan_workspace.argtypes = [ctypes.c_longlong] * 4
    return lib


def compiled_stages(vi: Linearizable, N: int, lo: np.ndarray, hi: np.ndarray,
                    second_order: bool = True) -> CompiledStages | None:
    """``CompiledStages`` for this system, horizon and input box, or None (numpy path): no capability, a step that
    is not compiled C, no C compiler, or ``ENABLED`` off."""
    get = getattr(vi, "compiled_stage", None)
    if not ENABLED or get is None:
        return None
    stage = get(second_order)
    if not isinstance(stage, CompiledStage) or stage.kernel.ny < 1 or stage.kernel.nx != vi.state.ndx:
        return None
    lib = kernel_library()
    return None if lib is None else CompiledStages(lib, vi, stage, N, lo, hi)


def _c(a: np.ndarray | None) -> np.ndarray | None:
    return None if a is None else np.ascontiguousarray(a, dtype=float)


@dataclass
class StageLinearization:
    """A_k, B_k of all stages, rcond of R_y, and what the second-order contraction reuses: R_y's LU, dy/dz, O_y
    (column-major per stage, as the generated code writes them)."""

    A: np.ndarray  # (N, nx, nx)
    B: np.ndarray  # (N, nx, nu)
    rcond: np.ndarray  # (N,)
    lu: np.ndarray  # (N, ny, ny)
    piv: np.ndarray  # (N, ny) int64
    dydz: np.ndarray  # (N, nz, ny): dy/dz transposed
    Oy: np.ndarray  # (N, ny, nx): O_y transposed


class CompiledStages:
    """DDP's stage passes for one (system, horizon N, input box) in C. Trajectory data are arrays: X (N+1, nx),
    U (N, nu) and the solved unknowns Y (N, ny) of every step (what ``StepResult.y`` holds on the numpy path).

    ``rollout`` → (X, U_applied, Y) or None (a step failed: the trial is rejected, as ``shooting.rollout``);
    ``linearize`` → StageLinearization (SingularityError where R_y is singular, as ``linearize``);
    ``backward`` → (k, K, d1, d2) or None (the regularized Q_uu is not positive definite: ddp changes the model);
    ``linearization`` → the ``Linearization`` list ``OptimizerResult.linearization`` carries.
    """

    compiled = True

    def __init__(self, lib: ctypes.CDLL, vi: Linearizable, stage: CompiledStage, N: int, lo: np.ndarray,
                 hi: np.ndarray):
        k, st = stage.kernel, stage.settings
        self.vi, self.N, self.nx, self.nu, self.ny, self.nz = vi, int(N), k.nx, k.n_inputs, k.ny, k.nz
        self.lo, self.hi = np.array(lo, float), np.array(hi, float)
        bounded = bool(np.isfinite(self.lo).any() or np.isfinite(self.hi).any())
        self._second_order_ok = k.hessian != 0
        kp = np.array([N, k.nq, k.nd, k.nk, k.nc, k.ny, k.nx, k.n_inputs, k.nz, st.max_iterations, stage.chord,
                       bounded], dtype=np.int64)
        kd = np.array([k.dt, st.tol, st.rcond_min, stage.chord_rate_max])
        n_scr = lib.vi_plan_workspace(k.nx, k.n_inputs, k.ny, k.nz)
        bufs = [kp, kd, k.idx, np.zeros(max(k.n_iw, 1), np.int64), np.zeros(max(k.n_w, 1)), np.zeros(k.n_ws),
                np.zeros(max(k.ny, 1), np.int64), np.zeros(n_scr), np.zeros(2 * max(k.n_inputs, 1), np.int64),
                self.lo, self.hi]
        self._keep = bufs  # the context points into these
        ptrs = [kp, kd, k.newton, k.linearize, k.hessian, *bufs[2:]]
        self._ctx = (ctypes.c_void_p * len(ptrs))(*[p if isinstance(p, int) else p.ctypes.data for p in ptrs])
        self._call = lib.vi_plan_call

    def _run(self, which: int, arrays: list) -> int:
        args = (ctypes.c_void_p * len(arrays))(*[None if a is None else a.ctypes.data for a in arrays])
        return self._call(which, self._ctx, args)

    def rollout(self, x0: np.ndarray, U: np.ndarray, X_nom: np.ndarray | None = None, K: np.ndarray | None = None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """``shooting.rollout(vi, x0, U, X_nom, lo, hi, X_nom, K)`` over all stages in one call."""
        N, nx, nu = self.N, self.nx, self.nu
        x0, U, X_nom, K = _c(x0), _c(U), _c(X_nom), _c(K)
        if x0.shape != (nx,) or U.shape != (N, nu):
            raise ValueError(f"rollout: x0 {x0.shape} and U {U.shape}, expected ({nx},) and ({N}, {nu})")
        X, Ua, Y, info = np.empty((N + 1, nx)), np.empty((N, nu)), np.empty((N, self.ny)), np.empty(2)
        code = self._run(_ROLLOUT, [x0, U, X_nom, K, X, Ua, Y, info])
        if code == 0:
            return X, Ua, Y
        if code == _ROLLOUT_NEEDS_PYTHON:  # M(q_k) singular in the driver's own guess: solve's least-squares retry
            ro = rollout(self.vi, x0, U, X_nom, self.lo, self.hi, X_nom, K)
            return None if ro is None else (ro[0], ro[1], np.array([r.y for r in ro[2]]))
        return None

    def linearize(self, X: np.ndarray, U: np.ndarray, Y: np.ndarray) -> StageLinearization:
        N, nx, nu, ny, nz = self.N, self.nx, self.nu, self.ny, self.nz
        lin = StageLinearization(A=np.empty((N, nx, nx)), B=np.empty((N, nx, nu)), rcond=np.empty(N),
                                 lu=np.empty((N, ny, ny)), piv=np.empty((N, ny), np.int64),
                                 dydz=np.empty((N, nz, ny)), Oy=np.empty((N, ny, nx)))
        info = np.empty(2)
        if self._run(_LINEARIZE, [_c(X), _c(U), _c(Y), lin.A, lin.B, lin.rcond, lin.lu, lin.piv, lin.dydz, lin.Oy,
                                  info]):
            raise SingularityError(None, float(info[1]), "R_y = ∂R/∂(q_{k+1}, λ_k) in the linearization")
        return lin

    def backward(self, cost, X: np.ndarray, U: np.ndarray, Y: np.ndarray, lin: StageLinearization, mu: float,
                 second_order: bool, metric: tuple[np.ndarray, np.ndarray] | None = None
                 ) -> tuple[np.ndarray, np.ndarray, float, float] | None:
        """ddp's ``_backward`` (same inputs from the cost: ``shooting.local_model``) over all stages in one call."""
        if second_order and not self._second_order_ok:
            raise ValueError("these compiled stages were built without the Hessian (second_order=False)")
        N, nx, nu = self.N, self.nx, self.nu
        LX, LU, Vx, Vxx, Wx, Wu = (_c(a) for a in local_model(cost, X, U, metric))
        kff, Kfb, d = np.empty((N, nu)), np.empty((N, nu, nx)), np.empty(2)
        code = self._run(_BACKWARD, [_c(X), _c(U), _c(Y), lin.A, lin.B, lin.lu, lin.piv, lin.dydz, lin.Oy, LX, LU,
                                     Vx, Vxx, Wx, Wu, np.array([float(mu)]),
                                     np.array([1 if second_order else 0], np.int64), kff, Kfb, d])
        return None if code else (kff, Kfb, float(d[0]), float(d[1]))

    @staticmethod
    def linearization(lin: StageLinearization) -> list[Linearization]:
        return [Linearization(A=lin.A[k], B=lin.B[k], dy_dz=lin.dydz[k].T, rcond=float(lin.rcond[k]))
                for k in range(len(lin.A))]
