"""A plan is data: times, states, inputs, gains, model identity, Δt, cost weights — saved as .npz.

This module is a leaf of the control layer: planners produce Plans, controllers and nodes consume them,
and nothing here depends on how a plan was made. ``state_error`` is the one definition of "reference minus
measured state" that planner and controller share.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
import zipfile
from dataclasses import dataclass, field

import numpy as np

from ..model.robot import wrap_angle
from ..model.scalars import is_integer, is_real
from ..model.yaml_io import open_regular_file


def state_error(x_ref: np.ndarray, x: np.ndarray, continuous_mask: np.ndarray | None = None) -> np.ndarray:
    """x_ref − x with the configuration part of continuous joints taken modulo 2π, in [−π, π).

    Only q of continuous (unbounded revolute) joints is wrapped: p is a momentum, never an angle.
    Works on single states (nx,), on configurations alone (nq,), and on stacks (..., nx) / (..., nq).
    """
    e = np.asarray(x_ref, float) - np.asarray(x, float)
    if continuous_mask is None or not np.any(continuous_mask):
        return e
    mask = np.asarray(continuous_mask, bool)
    nq = mask.size
    if e.shape[-1] not in (nq, 2 * nq):
        raise ValueError(f"size {e.shape[-1]} is neither nq = {nq} nor 2·nq = {2 * nq} of the continuous mask")
    e = e.copy()
    eq = e[..., :nq]
    eq[..., mask] = wrap_angle(eq[..., mask])
    return e


class PlanError(ValueError):
    """A plan that is inconsistent (shapes, non-finite values, times) or does not fit the system it is bound to."""


class PlanFileError(PlanError):
    """A plan file that cannot be read as a plan; the message names the file and the field."""


# Meta fields of a saved plan and their types; arrays and their element limit (a file cannot make us allocate
# more than this before the shapes have been checked).
_META = {
    "dt": float,
    "model_name": str,
    "model_hash": str,
    "joint_names": list,
    "input_names": list,
    "weights": dict,
    "converged": bool,
}
_ARRAYS = ("times", "X", "U", "K")
_OPTIONAL_ARRAYS = ("K_final", "U_final")
_MAX_VALUES = 50_000_000


def _finite(name: str, a: np.ndarray) -> None:
    if not np.isfinite(a).all():  # (the method: np.all's dispatch costs ~1 µs of a plan's six checks each)
        bad = np.argwhere(~np.isfinite(a))[0].tolist()
        raise PlanError(f"{name}: entry {bad} is {a[tuple(bad)]} (values must be finite)")


def _check_times(times: np.ndarray, dt: float) -> None:
    """PlanError unless ``times`` (finite) are t₀ + k·dt, told apart at their magnitude."""
    t_max = float(np.abs(times).max())
    if np.spacing(t_max) > 0.1 * dt:  # t₀ + k·dt must be told apart at that magnitude (1e17 s: 16 s apart)
        raise PlanError(
            f"times: |t| up to {t_max:.6g} s cannot resolve dt = {dt:g} s (doubles there are "
            f"{np.spacing(t_max):.3g} s apart); start the plan's clock nearer 0"
        )
    steps = np.diff(times)
    off = np.abs(steps - dt) > 1e-9 * dt + 4 * np.spacing(t_max)  # (rounding of t₀ + k·dt at |t| ≤ t_max)
    if off.any():
        k = int(np.flatnonzero(off)[0])
        raise PlanError(f"times: t[{k + 1}] − t[{k}] = {steps[k]:.9g}, not dt = {dt:g} (times must be t_0 + k·dt)")


@dataclass
class Plan:
    """Reference trajectory with time-varying feedback gains.

    ``X``: (N+1, nx) states x_k = (q_k, p_k); ``U``: (N, nu) inputs; ``K``: (N, nu, ndx) gains of
    u_k = U_k + K_k (X_k ⊖ x_k) (the controller's sign convention), acting on tangent vectors of the state
    manifold (ndx = nx for (q, p) states; 2·dim for a Lie-group state of ``integrators.lie_group``, whose nx
    stores a rotation matrix); ``times``: (N+1,) seconds;
    ``K_final`` (nu, ndx): equilibrium (infinite-horizon) gain to hold X_N after the plan ends, with
    ``U_final`` its input; ``converged``: False for a best-effort plan whose optimizer stopped early.
    Construction checks everything (PlanError naming the field): shapes, finite values, Δt > 0, times
    increasing by Δt. ``check_compatible(system)`` checks the model and Δt a plan is run with.
    """

    times: np.ndarray
    X: np.ndarray
    U: np.ndarray
    K: np.ndarray
    dt: float
    model_name: str
    model_hash: str
    joint_names: list[str]
    input_names: list[str]
    weights: dict = field(default_factory=dict)
    K_final: np.ndarray | None = None
    U_final: np.ndarray | None = None
    converged: bool = True

    def __post_init__(self) -> None:
        try:
            self.X, self.U, self.K = (np.asarray(a, float) for a in (self.X, self.U, self.K))
            self.times = np.asarray(self.times, float)
            if self.K_final is not None:
                self.K_final = np.asarray(self.K_final, float)
            if self.U_final is not None:
                self.U_final = np.asarray(self.U_final, float)
        except (TypeError, ValueError) as e:
            raise PlanError(f"plan arrays must be numeric: {e}") from None
        if self.X.ndim != 2 or self.U.ndim != 2 or self.times.ndim != 1 or len(self.U) < 1:
            raise PlanError(
                f"plan shapes: X {self.X.shape} must be (N+1, nx), U {self.U.shape} (N, nu) with "
                f"N >= 1, times {self.times.shape} (N+1,)"
            )
        n = len(self.U)
        if self.X.shape[0] != n + 1 or self.times.shape[0] != n + 1:
            raise PlanError(f"plan shapes disagree: X {self.X.shape}, U {self.U.shape}, times {self.times.shape}")
        nu, nx = self.U.shape[1], self.X.shape[1]
        if self.K.ndim != 3 or self.K.shape[:2] != (n, nu) or not 1 <= self.K.shape[2] <= nx:
            raise PlanError(f"gains K must have shape ({n}, {nu}, ndx) with 1 ≤ ndx ≤ nx = {nx}, got {self.K.shape}")
        ndx = self.K.shape[2]
        if self.K_final is not None and self.K_final.shape != (nu, ndx):
            raise PlanError(f"K_final must have shape {(nu, ndx)}, got {self.K_final.shape}")
        if self.U_final is not None and self.U_final.shape != (nu,):
            raise PlanError(f"U_final must have shape {(nu,)}, got {self.U_final.shape}")
        try:  # (an integer of 400 digits is real but no float: OverflowError)
            dt = float(self.dt) if is_real(self.dt) else math.nan
        except OverflowError:
            dt = math.inf
        if not (math.isfinite(dt) and dt > 0):
            shown = (
                f"an integer of {len(str(abs(self.dt)))} digits"
                if isinstance(self.dt, int) and abs(self.dt) > 10**20
                else repr(self.dt)
            )
            raise PlanError(f"dt: must be a positive finite number, got {shown}")
        self.dt = dt
        for name in ("times", "X", "U", "K", "K_final", "U_final"):
            if getattr(self, name) is not None:
                _finite(name, getattr(self, name))
        _check_times(self.times, dt)
        for name in ("model_name", "model_hash"):
            if not isinstance(getattr(self, name), str):
                raise PlanError(f"{name}: expected a string, got {getattr(self, name)!r}")
        for name, size in (("joint_names", None), ("input_names", nu)):  # empty: not known (a recorder's view)
            v = getattr(self, name)
            if (
                not isinstance(v, (list, tuple))
                or not all(isinstance(x, str) for x in v)
                or (size is not None and v and len(v) != size)
            ):
                raise PlanError(f"{name}: expected a list of {size if size is not None else 'joint'} names, got {v!r}")
        if not isinstance(self.converged, (bool, np.bool_)):
            raise PlanError(f"converged: expected true or false, got {self.converged!r}")
        self.converged = bool(self.converged)

    def check_compatible(self, system, allow_mismatch: bool = False) -> None:
        """PlanError unless this plan was made for ``system`` (a DiscreteSystem): the same model (content
        hash: URDF, gravity, inputs, constraints, damping, mass scale), Δt, joints and sizes.

        ``allow_mismatch=True`` is the explicit override for running a plan on a deliberately different model
        (robustness studies: a heavier plant); sizes, joints and Δt must still agree.
        """
        robot = system.robot
        if self.X.shape[1] != system.nx or self.U.shape[1] != system.nu:
            raise PlanError(
                f"plan has nx={self.X.shape[1]}, nu={self.U.shape[1]}; the system has nx={system.nx}, nu={system.nu}"
            )
        if self.K.shape[2] != system.state.ndx:
            raise PlanError(
                f"K: the plan's gains act on {self.K.shape[2]} state-tangent entries, the system's "
                f"state has ndx = {system.state.ndx}"
            )
        if list(self.joint_names) != list(robot.joint_names):
            raise PlanError(f"joint_names: plan {list(self.joint_names)}, system {list(robot.joint_names)}")
        if abs(self.dt - system.dt) > 1e-12 * self.dt:
            raise PlanError(f"dt: the plan was made with dt = {self.dt:g} s, the system steps dt = {system.dt:g} s")
        if self.model_hash != robot.hash and not allow_mismatch:
            raise PlanError(
                f"model_hash: the plan was made for {self.model_name!r} ({self.model_hash}), the "
                f"system runs {robot.name!r} ({robot.hash}) — a different model (pass "
                "allow_mismatch=True to run it anyway)"
            )

    @property
    def horizon(self) -> int:
        return len(self.U)

    def _derived(self, times: np.ndarray, **arrays: np.ndarray) -> Plan:
        """A copy with new ``times`` (checked: t₀ + k·dt, resolved at their magnitude) and ``arrays`` (X, U, K) that
        are rows of this plan's own (its hold repeated past its end), so finite and of its shapes by construction:
        the other checks of construction are not run again (~35 µs a plan; an MPC cycle derives ~4)."""
        _finite("times", times)
        _check_times(times, self.dt)
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__, times=times, **arrays)
        return new

    def shifted(self, t0: float) -> Plan:
        """The same plan starting at time ``t0`` (a copy; times t₀ + k·dt). The times are made anew, not moved: on a
        wall clock (|t| ~ 1.8e9 s, doubles 2.4e-7 s apart) ``times − times[0]`` keeps that rounding, which a plan
        starting near 0 refuses as steps that are not dt (the planner's MPC mode on the system clock once planned
        nothing). PlanError for a t0 that is not finite or too large to resolve Δt."""
        try:
            t0 = float(t0)
        except (TypeError, ValueError, OverflowError):
            raise PlanError(f"t0: expected a number of seconds, got {t0!r}") from None
        return self._derived(t0 + self.dt * np.arange(len(self.times)))

    def receded(self, steps: int) -> Plan:
        """The plan from step ``steps`` on, padded to the same horizon with the hold after its end (X_N, U_final,
        K_final; the last input and gain where those are missing): a receding-horizon warm start for a re-plan
        that starts ``steps`` steps into this one. Times start at times[steps]."""
        n = self.horizon
        if not is_integer(steps) or not 0 <= steps < n:
            raise ValueError(f"steps: expected an integer in [0, {n}), got {steps!r}")
        return self._held(int(steps), n)

    def fitted(self, N: int) -> Plan:
        """The plan cut to its first N steps, or padded past its end to N steps with the hold (X_N, U_final, K_final;
        the last input and gain where those are missing); this plan itself where N is its horizon."""
        n = self.horizon
        if not is_integer(N) or N < 1:
            raise ValueError(f"N: expected an integer ≥ 1, got {N!r}")
        if N == n:
            return self
        if N < n:
            return self._derived(self.times[: N + 1], X=self.X[: N + 1], U=self.U[:N], K=self.K[:N])
        return self._held(0, int(N))

    def _held(self, start: int, N: int) -> Plan:
        """Steps ``start`` … end, then the hold to N steps in all; times t₀ + (start + k)·dt."""
        pad = start + N - self.horizon
        u_hold = self.U[-1] if self.U_final is None else self.U_final
        k_hold = self.K[-1] if self.K_final is None else self.K_final
        return self._derived(
            self.times[0] + (np.arange(N + 1) + start) * self.dt,
            X=np.concatenate([self.X[start:], np.repeat(self.X[-1:], pad, axis=0)]),
            U=np.concatenate([self.U[start:], np.repeat(u_hold[None], pad, axis=0)]),
            K=np.concatenate([self.K[start:], np.repeat(k_hold[None], pad, axis=0)]),
        )

    def save(self, path: str | os.PathLike) -> None:
        """Write the plan to exactly ``path`` (numpy's savez appended ".npz" to any other name, so ``save(p)`` then
        ``load(p)`` failed, and ``save("/tmp")`` wrote /tmp.npz). Written to a temporary file beside it and renamed
        into place: an interrupted save leaves the previous file whole. PlanFileError for a directory or another
        non-regular file (a device or FIFO would be replaced by the rename) or a directory that does not exist."""
        path = os.fspath(path)
        if os.path.lexists(path) and not os.path.isfile(path):
            raise PlanFileError(f"plan file {path!r} is not a regular file")
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder):
            raise PlanFileError(f"plan file {path!r}: directory {folder!r} does not exist")
        meta = dict(
            dt=self.dt,
            model_name=self.model_name,
            model_hash=self.model_hash,
            joint_names=list(self.joint_names),
            input_names=list(self.input_names),
            weights=self.weights,
            converged=bool(self.converged),
        )
        extra = {}
        if self.K_final is not None:
            extra["K_final"] = self.K_final
        if self.U_final is not None:
            extra["U_final"] = self.U_final
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".plan-", suffix=".npz.part")
        try:
            with os.fdopen(fd, "wb") as f:
                np.savez(f, times=self.times, X=self.X, U=self.U, K=self.K, meta=json.dumps(meta), **extra)
            os.chmod(tmp, 0o666 & ~_umask())
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    @classmethod
    def load(cls, path: str) -> Plan:
        """A plan saved by ``save``; PlanFileError naming the file and the field for anything else."""
        try:
            arrays, meta = _read_plan_file(path)
            return cls(**arrays, **meta)
        except PlanFileError:
            raise
        except PlanError as e:
            raise PlanFileError(f"{path}: {e}") from None


def _umask() -> int:
    """The process umask, read from /proc (os.umask would change it for every thread while it reads it); 0o022
    where /proc does not tell. mkstemp creates 0600: a plan file gets the mode a plain open() would give it."""
    try:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1], 8) for line in f if line.startswith("Umask:"))
    except (OSError, StopIteration, ValueError, IndexError):
        return 0o022


def _read_plan_file(path: str) -> tuple[dict, dict]:
    """Arrays and meta of a plan file, each checked before use (sizes before allocation, types after)."""
    with open_regular_file(path, "plan", PlanFileError) as file:  # (not /dev/zero, a FIFO or a directory)
        arrays = _read_plan_arrays(file, path)
    try:
        meta = json.loads(str(arrays.pop("meta")))
    except (ValueError, RecursionError) as e:
        raise PlanFileError(f"{path}: meta: not valid JSON: {e}") from None
    if not isinstance(meta, dict):
        raise PlanFileError(f"{path}: meta: expected a JSON object, got {type(meta).__name__}")
    for key, kind in _META.items():
        if key not in meta:
            raise PlanFileError(f"{path}: meta.{key}: missing")
        if not (is_real(meta[key]) if kind is float else isinstance(meta[key], kind)):  # (an int is a float here)
            raise PlanFileError(f"{path}: meta.{key}: expected {kind.__name__}, got {meta[key]!r}")
    unknown = set(meta) - set(_META)
    if unknown:
        raise PlanFileError(f"{path}: meta: unknown key(s) {sorted(unknown)}")
    return arrays, meta


def _read_plan_arrays(file, path: str) -> dict:
    """The members of a plan file's zip, each header read before its array is allocated."""
    try:
        zf = zipfile.ZipFile(file)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as e:
        raise PlanFileError(f"{path}: not a plan file (.npz): {e}") from None
    with zf:
        members = set(zf.namelist())
        arrays: dict = {}
        for name in (*_ARRAYS, *_OPTIONAL_ARRAYS, "meta"):
            if f"{name}.npy" not in members:
                if name in _OPTIONAL_ARRAYS:
                    continue
                raise PlanFileError(f"{path}: {name}: missing")
            try:
                with zf.open(f"{name}.npy") as f:
                    version = np.lib.format.read_magic(f)
                    read_header = {
                        (1, 0): np.lib.format.read_array_header_1_0,
                        (2, 0): np.lib.format.read_array_header_2_0,
                    }.get(version)
                    if read_header is None:
                        raise ValueError(f".npy format version {version} is not one numpy.savez writes")
                    shape, _, dtype = read_header(f)
                    n = int(np.prod(shape)) if shape else 1
                    if n > _MAX_VALUES or dtype.hasobject:
                        raise ValueError(f"{shape} of {dtype} is not a plan array")
                    if name == "meta" and dtype.kind != "U":
                        raise ValueError(f"expected a JSON string, got {dtype}")
                    if name != "meta" and dtype != np.dtype("<f8"):
                        raise ValueError(f"expected float64, got {dtype}")
                with zf.open(f"{name}.npy") as f:
                    arrays[name] = np.lib.format.read_array(f, allow_pickle=False)
            except (ValueError, OSError, EOFError, zipfile.BadZipFile, KeyError, RuntimeError) as e:
                raise PlanFileError(f"{path}: {name}: {e}") from None
    return arrays
