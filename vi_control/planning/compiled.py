"""Whole-horizon compiled DDP stage passes: one C call per pass over all N stages.

DDP's stage work — the rollout (one Newton step of the implicit map per stage), the linearization along the
trajectory (Johnson2015, eqs. 8–15, 29–30), the second-order contraction V'_x·∂²f (eqs. 16–27) and the Riccati
backward pass with Tassa's regularization (Tassa2012) and the box QP of the input bounds — runs in our own C
(``planning/csrc/ddp_kernel.c``, on mechanics' dense LU and products), which calls the model's
generated functions ('linearize', 'hessian') and its Newton driver through their addresses. That library is the
same for every model: it is compiled once into the cache (``mechanics.codegen``) and needs no gcc time per model.
The iterations themselves — Newton or Gauss–Newton, the regularization updates, the line search's acceptance, the
stopping rule — are ddp's Python loop (``planning/ddp.py``) for every system: these passes accelerate its stages
and decide nothing of the algorithm.

The fast path is chosen by capability, never by class: a system whose ``compiled_stage(second_order)`` returns an
``integrators.base.CompiledStage`` (today MidpointVI and its subclass, the GNI, when their step is generated C)
gets ``CompiledStages``; any other ``Linearizable`` gets ddp's numpy stages, which stay the general ones. The kernel
computes the numpy passes' operations (same algorithm, same branch tests), so the two agree to round-off
(test/planning/test_planning_compiled.py). Built stages are reused per system, thread and box
(``compiled_stages``), their workspaces with them; no value is kept between calls: every pass writes fresh arrays.
``VI_CONTROL_COMPILED_PLANNER=0`` (or ``ENABLED = False``) forces the numpy stages.
"""

from __future__ import annotations

import ctypes
import functools
import math
import os
import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from itertools import repeat

import numpy as np

from ..integrators.base import CompiledStage, Linearizable, SingularityError
from ..linearization import Linearization
from ..mechanics import codegen
from ..mechanics.discrete import DENSE_LU_C, DENSE_MM_C, TREE_DERIVATIVES_C
from ..model.errors import removed_name
from .shooting import local_model, reference_jacobians, rollout

KERNEL_C = (
    DENSE_LU_C + DENSE_MM_C + TREE_DERIVATIVES_C + (resources.files(__package__) / "csrc" / "ddp_kernel.c").read_text()
)

ENABLED = os.environ.get("VI_CONTROL_COMPILED_PLANNER", "1") != "0"

# Removed names and what replaced them: an ImportError naming the replacement for one release, then plain absence.
# (The LQR gains have one implementation, in C, in the control layer: the planner calls it like everyone else.)
_REMOVED = {"tv_lqr": "vi_control.control.lqr.tv_lqr", "dlqr": "vi_control.control.lqr.dlqr"}


def __getattr__(name: str):
    if name in _REMOVED:
        raise removed_name(f"vi_control.planning.compiled.{name}", _REMOVED[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_ROLLOUT, _LINEARIZE, _BACKWARD = 0, 1, 2
_CONTEXT_SLOTS = 18  # vi_plan_unpack's c[0] … c[17]


def _context(ptrs: list) -> ctypes.Array:
    """The kernel's context array: ``ptrs`` (addresses, or arrays for theirs), NULL in every slot after them up to
    ``_CONTEXT_SLOTS`` — vi_plan_unpack reads them all, an unused one must be NULL, never beyond the array."""
    if len(ptrs) > _CONTEXT_SLOTS:
        raise ValueError(f"kernel context: {len(ptrs)} slots, the kernel reads {_CONTEXT_SLOTS}")
    ptrs = [*ptrs, *[0] * (_CONTEXT_SLOTS - len(ptrs))]
    return (ctypes.c_void_p * _CONTEXT_SLOTS)(*[p if isinstance(p, int) else p.ctypes.data for p in ptrs])


_F8, _I8 = np.dtype(np.float64), np.dtype(np.int64)  # (dtype objects are singletons: compared with ``is``)
_ROLLOUT_FAILED, _ROLLOUT_NEEDS_PYTHON = 1, 2
_PREDICT, _STAGEWISE = 1, 2  # vi_plan_rollout's mode bits


def _layouts(N: int, nx: int, nu: int, ny: int, nz: int) -> tuple[tuple, tuple, tuple]:
    """(name, shape, dtype) of each argument of the rollout, linearization and backward pass as ddp_kernel.c reads it
    (``_Arena.pointers`` checks the arrays against them): N stages, nx state (tangent) directions, nu inputs, ny
    unknowns of a step, nz = nx + nu."""
    F, I = _F8, _I8
    X, U, Y = ("X", (N + 1, nx), F), ("U", (N, nu), F), ("Y", (N, ny), F)
    A, B = ("A", (N, nx, nx), F), ("B", (N, nx, nu), F)
    factors = (
        ("LU of R_y", (N, ny, ny), F),
        ("pivots", (N, ny), I),
        ("dy/dz", (N, nz, ny), F),
        ("O_y", (N, ny, nx), F),
    )
    info = ("info", (2,), F)
    rollout = (
        ("x0", (nx,), F),
        U,
        ("X_nom", (N + 1, nx), F),
        ("K", (N, nu, nx), F),
        X,
        ("U applied", U[1], F),
        Y,
        info,
        ("mode", (1,), I),
    )
    linearize = (X, U, Y, A, B, ("rcond", (N,), F), *factors, info)
    local = (("l_x", (N, nx), F), ("l_u", (N, nu), F), ("V_x", (nx,), F), ("V_xx", (nx, nx), F))
    local += (("W_x", (nx, nx), F), ("W_u", (nu, nu), F), ("mu", (1,), F), ("flags", (1,), I))
    backward = (X, U, Y, A, B, *factors, *local, ("k", (N, nu), F), ("K", (N, nu, nx), F), ("d", (2,), F), None)

    def named(what: str, entries: tuple) -> tuple:
        return tuple(None if e is None else (f"{what}: {e[0]}", *e[1:]) for e in entries)

    return named("rollout", rollout), named("linearize", linearize), named("backward pass", backward)


def _pass_flags(second_order: bool, fallback: bool) -> int:
    """vi_plan_backward's flags: bit 0 the second-order pass, bit 1 its Gauss–Newton fallback within the call."""
    return (1 if second_order else 0) | (2 if second_order and fallback else 0)


# The numpy stages' second-order terms, called back by vi_plan_backward: (stage k, V'_x (nx,), Hz (nz, nz) out).
_CONTRACT_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_longlong, ctypes.c_void_p, ctypes.c_void_p)


class BackwardPass:
    """DDP's backward pass over stacked A_k (N, n, n), B_k (N, n, nu) for any system (``vi_plan_backward``, its one
    implementation; ``CompiledStages.backward`` calls the same C over a compiled step's linearization): the Riccati
    recursion, Tassa2012's V'_xx + μI and the box QP of the input bounds. With ``second_order`` the terms V'_x·∂²f of
    stage k come from ``contract(k, V'_x)`` → (H_xx (n, n), H_xu (n, nu), H_uu (nu, nu)), called back from C: the
    numpy stages' ``second_order_contraction``. n is the state's tangent dimension (``vi.state.ndx``)."""

    def __init__(self, lib: ctypes.CDLL, N: int, n: int, nu: int, lo: np.ndarray, hi: np.ndarray):
        self.N, self.n, self.nu = int(N), int(n), int(nu)
        self.lo, self.hi = np.array(lo, float), np.array(hi, float)
        bounded = bool(np.isfinite(self.lo).any() or np.isfinite(self.hi).any())
        nz = n + nu
        kp = np.array([N, 0, 0, 0, 0, 1, n, nu, nz, 0, 0, bounded, 0], dtype=np.int64)
        bufs = [
            kp,
            np.zeros(7),
            np.zeros(1, np.int64),  # idx, int and real work, Newton workspace, pivots: no step is solved here
            np.zeros(1, np.int64),
            np.zeros(1),
            np.zeros(1),
            np.zeros(1, np.int64),
            np.zeros(lib.vi_plan_workspace(n, nu, 1, nz)),
            np.zeros(2 * max(nu, 1), np.int64),
            self.lo,
            self.hi,
            np.zeros(1, np.int64),
        ]
        self._keep = bufs
        self._ctx = _context([bufs[0], bufs[1], 0, 0, 0, *bufs[2:]])
        self._call = lib.vi_plan_call
        self._arena = _Arena()
        self._layout = _layouts(self.N, self.n, self.nu, 1, nz)[2]
        self._scalars, self._flags = self._arena.own((1,)), self._arena.own((1,), np.int64)
        self._contract, self._error = None, None
        self.second_order_taken = False  # (which pass the last call returned: ``__call__``)
        self._callback = _CONTRACT_FN(self._contract_stage)
        self._callback_at = ctypes.cast(self._callback, ctypes.c_void_p).value

    def _contract_stage(self, k: int, vx_at: int, hz_at: int) -> int:
        try:
            n = self.n
            Vx = np.ctypeslib.as_array(ctypes.cast(vx_at, ctypes.POINTER(ctypes.c_double)), (n,)).copy()
            Hz = np.ctypeslib.as_array(ctypes.cast(hz_at, ctypes.POINTER(ctypes.c_double)), (n + self.nu, n + self.nu))
            Hxx, Hxu, Huu = self._contract(int(k), Vx)
            Hz[:n, :n], Hz[:n, n:], Hz[n:, :n], Hz[n:, n:] = Hxx, Hxu, np.transpose(Hxu), Huu
            return 0
        except BaseException as e:  # (an exception cannot cross C: kept, raised after the pass)
            self._error = e
            return 1

    def __call__(
        self,
        A: np.ndarray,
        B: np.ndarray,
        U: np.ndarray,
        local: tuple[np.ndarray, ...],
        mu: float,
        second_order: bool,
        contract=None,
        fallback: bool = False,
    ) -> tuple[np.ndarray, np.ndarray, float, float] | None:
        """(k (N, nu), K (N, nu, n) in the rollout's convention u = U + αk + K(x − X), d1, d2), or None where Q_uu (a
        free block of it) is not positive definite or the result is not finite (ddp changes the model). ``local``:
        ``shooting.local_model``'s (l_x, l_u, V_x(N), V_xx(N), W_x, W_u); ``contract`` as the class says.
        ``fallback``: a second-order pass that fails is taken again as the Gauss–Newton pass with the same μ in the
        same call; ``second_order_taken`` then says which pass the result (or the failure) is of."""
        N, n, nu = self.N, self.n, self.nu
        kff, Kfb, d = self._arena.carve((N, nu), (N, nu, n), (2,))
        self._scalars[0], self._flags[0] = mu, _pass_flags(second_order, fallback)
        self._contract, self._error = contract, None
        args = [None, U, None, A, B, None, None, None, None, *local, self._scalars, self._flags, kff, Kfb, d]
        ptrs = self._arena.pointers([*args, self._callback_at if second_order else None], self._layout)
        try:
            code = self._call(_BACKWARD, self._ctx, ptrs)
        finally:
            self._contract = None
            self.second_order_taken = bool(self._flags[0] & 1)
        if self._error is not None:
            error, self._error = self._error, None
            raise error
        return None if code else (kff, Kfb, float(d[0]), float(d[1]))


def backward_pass(N: int, n: int, nu: int, lo: np.ndarray, hi: np.ndarray) -> BackwardPass:
    """A ``BackwardPass`` over N stages of tangent dimension n and nu inputs in the box [lo, hi];
    ``codegen.CompilerRequiredError`` without a C compiler."""
    codegen.require_compiler("DDP's backward pass (planning/csrc/ddp_kernel.c)")
    lib = kernel_library()
    if lib is None:
        raise codegen.CompilerRequiredError("vi_control: the planner's kernel did not compile (warning above)")
    return BackwardPass(lib, N, n, nu, lo, hi)


@functools.cache
def kernel_library() -> ctypes.CDLL | None:
    """The model-independent kernel library (compiled on first use, then loaded from the cache); None without a
    C compiler."""
    so = codegen.compile_shared_library(KERNEL_C, "vi_ddp", codegen.cflags(), "the planner's compiled kernel")
    if so is None:
        return None
    lib = ctypes.CDLL(str(so))
    lib.vi_plan_call.restype = ctypes.c_int
    lib.vi_plan_call.argtypes = [ctypes.c_longlong, ctypes.c_void_p, ctypes.c_void_p]
    lib.vi_plan_workspace.restype = ctypes.c_longlong
    lib.vi_plan_workspace.argtypes = [ctypes.c_longlong] * 4
    lib.vi_tree_workspace.restype = ctypes.c_longlong
    lib.vi_tree_workspace.argtypes = [ctypes.c_longlong]
    return lib


# Built stages per system (weakly: they go with it) and per (thread, everything their context is built from):
# building one costs ~0.1 ms of ctypes and workspace setup, ~2 % of a panda plan, and a receding-horizon loop
# asks for the same stages every cycle. Per thread, because the passes release the GIL and the context holds
# the workspaces.
_STAGES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_STAGES_PER_SYSTEM = 8


def compiled_stages(
    vi: Linearizable, N: int, lo: np.ndarray, hi: np.ndarray, second_order: bool = True
) -> CompiledStages | None:
    """``CompiledStages`` for this system, horizon and input box, or None (numpy path): no capability, a step that
    is not compiled C, no C compiler, or ``ENABLED`` off. The same stages come back for the same system, kernel,
    settings, horizon and box in the same thread (their context and workspaces reused; every pass still writes
    fresh arrays)."""
    get = getattr(vi, "compiled_stage", None)
    if not ENABLED or get is None:
        return None
    stage = get(second_order)
    if not isinstance(stage, CompiledStage) or stage.kernel.ny < 1 or stage.kernel.nx != vi.state.ndx:
        return None
    lib = kernel_library()
    if lib is None:
        return None
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    k = stage.kernel
    key = (
        lib,
        threading.get_ident(),
        int(N),
        lo.tobytes(),
        hi.tobytes(),
        stage.settings,
        stage.chord,
        stage.chord_rate_max,
        stage.root_check,
        k.newton,
        k.linearize,
        k.hessian,
        k.n_iw,
        k.n_w,
        k.n_ws,
        k.nq,
        k.nd,
        k.nk,
        k.nc,
        k.ny,
        k.nz,
        k.nx,
        k.n_inputs,
        k.dt,
        k.max_configuration,
        k.idx.tobytes(),
        k.rot.tobytes(),
        None if k.tree is None else (k.tree[0].tobytes(), k.tree[1].tobytes()),
        k.second_order,
    )
    try:
        built = _STAGES.setdefault(vi, {})
    except TypeError:  # (a system that cannot be weakly referenced: built afresh every time)
        return CompiledStages(lib, vi, stage, N, lo, hi)
    hit = built.get(key)
    if hit is None:
        if len(built) >= _STAGES_PER_SYSTEM:
            built.pop(next(iter(built)))
        hit = built[key] = CompiledStages(lib, vi, stage, N, lo, hi)
    return hit


class _Chunk(np.ndarray):
    """Memory of the arena (owning its data; a type of its own, see ``_Lease``)."""


class _Lease(np.ndarray):
    """A chunk of the arena while arrays carved from it may live. Each of them is a view of it, and so is every view
    of one (a transpose, a row): numpy collapses a view's base chain only through arrays of the view's own type, and
    stops here, where the next base, the ``_Chunk``, is of another. The lease dies with the last of them, which
    frees the chunk for carving again."""


class _Arena:
    """Arrays whose addresses are known without asking numpy: ``.ctypes.data`` costs ~3.6 µs per array here, more
    than a stage's arithmetic at pendulum size, and every pass passes a dozen arrays. Outputs are carved from
    chunks whose base address is looked up once; inputs that did not come from here are copied into staging
    buffers of their own (``np.copyto``, ~0.5 µs). Only addresses are remembered, never values or arrays (weak
    references): every pass writes fresh output arrays, and a chunk is carved again only once no array carved
    from it, nor any view of one, is alive — then a pass writes to warm memory: new pages cost a panda
    linearization (190 KB of outputs) ~70 µs, almost half of it."""

    CHUNK = 1 << 14  # doubles per chunk (128 KiB)
    KEEP = 512  # entries of ``_known`` before those of dead arrays are dropped
    POOL = 8  # chunks kept for carving again (a panda plan uses 5, an acrobot swing-up 7)

    def __init__(self):
        self._known: dict[int, tuple[weakref.ref, int]] = {}  # id → (a weak reference to the array, its address)
        self._limit = self.KEEP
        self._pool: list[tuple[np.ndarray, int, weakref.ref]] = []  # (memory, its address, its last lease)
        self._lease: _Lease | None = None  # the chunk being carved
        self._base, self._used = 0, 0
        self._staged: dict[tuple, np.ndarray] = {}
        self._plans: dict[tuple, tuple] = {}  # (shapes, int_index) → (total size, (shape, dtype, offset) per array)
        self._args = np.zeros(32, np.int64)  # the argument vector of a call (pointers)
        self._args_at = self._args.ctypes.data

    def own(self, shape: tuple, dtype: type = np.float64) -> np.ndarray:
        """A zeroed array of its own (not from a chunk, so that holding it pins none) whose address is known."""
        a = np.zeros(shape, dtype)
        self._known[id(a)] = (weakref.ref(a), a.ctypes.data, a.shape, a.dtype)
        return a

    def _next_chunk(self, total: int) -> None:
        """Carve on from the start of a pooled chunk no living array uses (a free one too small is replaced by a
        larger one; a new one is pooled while there is room, else left to the garbage collector with its arrays)."""
        self._lease = None  # (the arena's own reference is no use of the chunk)
        free = [i for i, (_, _, lease) in enumerate(self._pool) if lease() is None]
        fits = [i for i in free if len(self._pool[i][0]) >= total]
        if fits:
            slot = fits[0]
            mem, base, _ = self._pool[slot]
        else:
            mem = np.ndarray.__new__(_Chunk, (max(self.CHUNK, total),))
            base = mem.ctypes.data
            slot = free[0] if free else len(self._pool) if len(self._pool) < self.POOL else None
        self._lease = mem.view(_Lease)
        if slot == len(self._pool):
            self._pool.append((mem, base, weakref.ref(self._lease)))
        elif slot is not None:
            self._pool[slot] = (mem, base, weakref.ref(self._lease))
        self._base, self._used = base, 0

    def carve(self, *shapes: tuple, int_index: int | None = None) -> list[np.ndarray]:
        """Fresh arrays of these shapes (float64; the one at ``int_index`` int64), sharing memory with no living
        array. (A pass carves the same shapes every call: their sizes and offsets are worked out once.)"""
        plan = self._plans.get((shapes, int_index))
        if plan is None:
            sizes = [math.prod(sh) for sh in shapes]
            offsets = [sum(sizes[:i]) for i in range(len(sizes))]
            parts = tuple(
                (sh, np.dtype(np.int64 if i == int_index else np.float64), o)
                for i, (sh, o) in enumerate(zip(shapes, offsets))
            )
            plan = self._plans[(shapes, int_index)] = (sum(sizes), parts)
        total, parts = plan
        if self._lease is None or self._used + total > len(self._lease):
            self._next_chunk(total)
        lease, known, base, used = self._lease, self._known, self._base, self._used
        out = []
        for sh, dt, off in parts:
            at = 8 * (used + off)
            a = np.ndarray(sh, dt, lease, at)
            known[id(a)] = (weakref.ref(a), base + at, a.shape, a.dtype)
            out.append(a)
        self._used = used + total
        if len(known) > self._limit:
            self._known = {k: v for k, v in known.items() if v[0]() is not None}
            self._limit = self.KEEP + 2 * len(self._known)
        return out

    def pointers(self, arrays: list, layout: tuple | None = None) -> int:
        """The address of a void* vector holding the arrays' addresses (NULL for None; an int is taken as an address),
        valid until the next call
        (a ctypes array of 20 pointers costs more to build than a pass over a pendulum's stages). Position i of a
        call takes arrays carved here as they are; any other array is copied into the staging buffer of
        (position, shape, dtype). ``layout``: per position, None or (name, shape, dtype) of what the C reads there —
        an array of another shape is refused (ValueError naming it: the C would read past its end, or every row at
        the wrong place), and one of another dtype is staged in that dtype (float64 by default; the pivots are read
        as int64, and a float64 copy of them indexed the C's solves some 4e18 entries away). The shapes and dtypes of
        arrays carved here are remembered from carving: checking them costs no numpy call."""
        ptrs, known = [], self._known
        for i, (a, want) in enumerate(zip(arrays, layout or repeat(None, len(arrays)), strict=True)):
            hit = known.get(id(a))
            if hit is not None and hit[0]() is a:
                if want is None or (hit[2] == want[1] and hit[3] is want[2]):
                    ptrs.append(hit[1])  # (the common case: an array carved here, of the pass's own layout)
                    continue
                shape = hit[2]
            elif a is None:
                ptrs.append(0)
                continue
            elif type(a) is int:  # an address as it is (a function pointer)
                ptrs.append(a)
                continue
            else:
                shape = np.shape(a)
            if want is not None and shape != want[1]:
                raise ValueError(f"{want[0]}: expected shape {want[1]}, got {shape}")
            key = (i, shape, _F8 if want is None else want[2])
            buf = self._staged.get(key)
            if buf is None:
                buf = self._staged[key] = self.own(shape, key[2])
            np.copyto(buf, a, casting="same_kind")  # (float64 into int64 is refused: pivots must be integers)
            ptrs.append(known[id(buf)][1])
        if len(ptrs) > len(self._args):
            self._args = np.zeros(len(ptrs), np.int64)
            self._args_at = self._args.ctypes.data
        self._args[: len(ptrs)] = ptrs
        return self._args_at


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

    def __init__(
        self, lib: ctypes.CDLL, vi: Linearizable, stage: CompiledStage, N: int, lo: np.ndarray, hi: np.ndarray
    ):
        k, st = stage.kernel, stage.settings
        self.vi, self.N, self.nx, self.nu, self.ny, self.nz, self.nd = vi, int(N), k.nx, k.n_inputs, k.ny, k.nz, k.nd
        self.lo, self.hi = np.array(lo, float), np.array(hi, float)
        bounded = bool(np.isfinite(self.lo).any() or np.isfinite(self.hi).any())
        self._second_order_ok = k.second_order and (k.hessian != 0 or k.tree is not None)
        kp = np.array(
            [
                N,
                k.nq,
                k.nd,
                k.nk,
                k.nc,
                k.ny,
                k.nx,
                k.n_inputs,
                k.nz,
                st.max_iterations,
                stage.chord,
                bounded,
                stage.root_check,
            ],
            dtype=np.int64,
        )
        kd = np.array(
            [k.dt, st.tol, st.rcond_min, stage.chord_rate_max, st.max_rotation, k.max_configuration, st.p_unit]
        )
        n_scr = lib.vi_plan_workspace(k.nx, k.n_inputs, k.ny, k.nz)
        bufs = [
            kp,
            kd,
            k.idx,
            np.zeros(max(k.n_iw, 1), np.int64),
            np.zeros(max(k.n_w, 1)),
            np.zeros(k.n_ws),
            np.zeros(max(k.ny, 1), np.int64),
            np.zeros(n_scr),
            np.zeros(2 * max(k.n_inputs, 1), np.int64),
            self.lo,
            self.hi,
            k.rot,
        ]
        if k.tree is not None:  # (derivatives by the tree's recursion: its model and workspace)
            bufs += [*k.tree, np.zeros(lib.vi_tree_workspace(k.nq))]
        self._keep = bufs  # the context points into these
        self._ctx = _context([kp, kd, k.newton, k.linearize, k.hessian, *bufs[2:]])
        self._call = lib.vi_plan_call
        self._arena = _Arena()
        self._layouts = _layouts(self.N, self.nx, self.nu, self.ny, self.nz)
        # μ and the second-order flag (read as int64: it must not go through a float64 staging copy)
        self._scalars, self._flags = self._arena.own((1,)), self._arena.own((1,), np.int64)
        self.second_order_taken = False  # (which pass the last backward call returned: ``backward``)
        self.goal_gains: dict = {}  # (ddp._reference_gains: the feedback guess's gains of recent goal references)
        self._modes = {0: None}
        for mode in (_PREDICT, _STAGEWISE):
            self._modes[mode] = self._arena.own((1,), np.int64)
            self._modes[mode][0] = mode

    def _run(self, which: int, arrays: list) -> int:
        return self._call(which, self._ctx, self._arena.pointers(arrays, self._layouts[which]))

    def rollout(
        self,
        x0: np.ndarray,
        U: np.ndarray,
        X_nom: np.ndarray | None = None,
        K: np.ndarray | None = None,
        predict: bool = False,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """``shooting.rollout(vi, x0, U, X_nom, lo, hi, X_nom, K)`` over all stages in one call; ``predict``: X_nom is
        the feedback reference only, Newton starts at the step's own predictor (``shooting.rollout(vi, x0, U, None, lo,
        hi, X_nom, K)``: a reference that need not satisfy the dynamics is no guess)."""
        N, nx, nu = self.N, self.nx, self.nu
        if np.shape(x0) != (nx,) or np.shape(U) != (N, nu):
            raise ValueError(f"rollout: x0 {np.shape(x0)} and U {np.shape(U)}, expected ({nx},) and ({N}, {nu})")
        if K is not None and X_nom is None:  # (the C would read X_nom through a null pointer)
            raise ValueError("rollout: the gains K act on x − X_nom: give X_nom with them")
        mode = self._modes[_PREDICT if predict and X_nom is not None else 0]
        X, Ua, Y, info = self._arena.carve((N + 1, nx), (N, nu), (N, self.ny), (2,))
        code = self._run(_ROLLOUT, [x0, U, X_nom, K, X, Ua, Y, info, mode])
        if code == 0:
            return X, Ua, Y
        if code == _ROLLOUT_NEEDS_PYTHON:  # M(q_k) singular in the driver's own guess: solve's least-squares retry
            ro = rollout(self.vi, x0, U, None if predict else X_nom, self.lo, self.hi, X_nom, K)
            return None if ro is None else (ro[0], ro[1], np.array([r.y for r in ro[2]]))
        return None

    def reference_jacobians(self, X: np.ndarray, U: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """(A (N, nx, nx), B (N, nx, nu)) of the step from each state X_k of a reference (N+1, nx) under U_k (N, nu),
        which need not satisfy the dynamics — ``linearize(vi, X[k], U[k])`` of every stage, in two calls: each stage's
        step solved from X_k (unclipped, Newton from its predictor), then the linearization pass. None where a step
        fails or R_y is singular (``linearize``'s StepError)."""
        N, nx, nu = self.N, self.nx, self.nu
        if np.shape(X) != (N + 1, nx) or np.shape(U) != (N, nu):
            want = f"expected ({N + 1}, {nx}) and ({N}, {nu})"
            raise ValueError(f"reference: X {np.shape(X)} and U {np.shape(U)}, {want}")
        Xn, Ua, Y, info = self._arena.carve((N + 1, nx), (N, nu), (N, self.ny), (2,))
        code = self._run(_ROLLOUT, [X[0], U, X, None, Xn, Ua, Y, info, self._modes[_STAGEWISE]])
        if code == _ROLLOUT_NEEDS_PYTHON:  # (the least-squares retry of solve: the numpy stages' way)
            return reference_jacobians(self.vi, X, U)
        if code:
            return None
        try:
            lin = self.linearize(X, U, Y)
        except SingularityError:
            return None
        return lin.A, lin.B

    def linearize(self, X: np.ndarray, U: np.ndarray, Y: np.ndarray) -> StageLinearization:
        N, nx, nu, ny, nz = self.N, self.nx, self.nu, self.ny, self.nz
        *parts, info = self._arena.carve(
            (N, nx, nx), (N, nx, nu), (N,), (N, ny, ny), (N, ny), (N, nz, ny), (N, ny, nx), (2,), int_index=4
        )
        lin = StageLinearization(*parts)
        if self._run(_LINEARIZE, [X, U, Y, lin.A, lin.B, lin.rcond, lin.lu, lin.piv, lin.dydz, lin.Oy, info]):
            raise SingularityError(None, float(info[1]), "R_y = ∂R/∂(q_{k+1}, λ_k) in the linearization")
        return lin

    def backward(
        self,
        cost,
        X: np.ndarray,
        U: np.ndarray,
        Y: np.ndarray,
        lin: StageLinearization,
        mu: float,
        second_order: bool,
        metric: tuple[np.ndarray, np.ndarray] | None = None,
        fallback: bool = False,
    ) -> tuple[np.ndarray, np.ndarray, float, float] | None:
        """ddp's backward pass (inputs from the cost: ``shooting.local_model``) over all stages in one call;
        ``fallback`` and ``second_order_taken`` as ``BackwardPass``'s."""
        if second_order and not self._second_order_ok:
            raise ValueError("these compiled stages were built without the Hessian (second_order=False)")
        N, nx, nu = self.N, self.nx, self.nu
        kff, Kfb, d = self._arena.carve((N, nu), (N, nu, nx), (2,))
        self._scalars[0], self._flags[0] = mu, _pass_flags(second_order, fallback)
        code = self._run(
            _BACKWARD,
            [
                X,
                U,
                Y,
                lin.A,
                lin.B,
                lin.lu,
                lin.piv,
                lin.dydz,
                lin.Oy,
                *local_model(cost, X, U, metric),
                self._scalars,
                self._flags,
                kff,
                Kfb,
                d,
                None,  # (the contraction over the generated 'hessian')
            ],
        )
        self.second_order_taken = bool(self._flags[0] & 1)
        return None if code else (kff, Kfb, float(d[0]), float(d[1]))

    @staticmethod
    def linearization(lin: StageLinearization) -> StageLinearizations:
        return StageLinearizations(lin)


class StageLinearizations(Sequence):
    """``OptimizerResult.linearization`` of the compiled path: the ``Linearization`` of stage k on indexing, and the
    stacked ``A`` (N, nx, nx), ``B`` (N, nx, nu), ``rcond`` (N,) for whoever needs all of them (TV-LQR)."""

    def __init__(self, lin: StageLinearization):
        self._lin, self.A, self.B, self.rcond = lin, lin.A, lin.B, lin.rcond

    def __len__(self) -> int:
        return len(self.A)

    def __getitem__(self, k):
        if isinstance(k, slice):
            return [self[i] for i in range(len(self))[k]]
        return Linearization(A=self.A[k], B=self.B[k], dy_dz=self._lin.dydz[k].T, rcond=float(self.rcond[k]))
