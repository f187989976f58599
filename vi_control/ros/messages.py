"""Plans and joint states <-> standard messages.

A Plan travels as one ``std_msgs/UInt8MultiArray`` on ``<planner>/plan`` (exact: the controller rebuilds it bit
for bit) plus a ``trajectory_msgs/JointTrajectory`` on ``<planner>/trajectory`` for other tools. The byte layout
(``layout.dim[0].label`` = ``PLAN_FORMAT``; all numbers little-endian):

| offset | type | field |
|---|---|---|
| 0 | char[8] | magic: ``VIPLAN`` and two zero bytes |
| 8 | uint32 | format version (``PLAN_VERSION``) |
| 12 | uint32 | flags: bit 0 converged (the optimizer met its tolerance), bit 1 start on receipt |
| 16 | uint64 | sequence number (unique per plan, across planner restarts) |
| 24 | char[16] | model content hash (``RobotModel.hash``: a controller running another model refuses the plan) |
| 40 | uint32 ×4 | N (steps), nx (state size), nu (inputs), ndx (gain columns: state tangent size) |
| 56 | float64 | Δt [s] |
| 64 | float64 | t₀: time of X_0 on the publisher's clock [s] (ignored with "start on receipt") |
| 72 | float64[(N+1)·nx] | X_0 … X_N |
| … | float64[N·nu] | U_0 … U_{N−1} |
| … | float64[N·nu·ndx] | K_0 … K_{N−1} (u = U_k + K_k (X_k ⊖ x)) |
| … | float64[nu] | U_final (input that holds X_N) |
| … | float64[nu·ndx] | K_final (gain that holds X_N) |

Times are t₀ + k·Δt. "Start on receipt" marks a plan made without a measurement: it starts at the first joint
state the controller answers after accepting it.

The controller answers on ``<controller>/plan_entered`` (``std_msgs/Header``, latched): ``frame_id`` the entered
plan's sequence number in decimal, ``stamp`` its t₀ as the controller runs it — the stated one, or later where it
re-timed a late plan (``plan_entered_message``, ``plan_entered_from_message``).
"""

from __future__ import annotations

import array
import math
import struct

import numpy as np
from builtin_interfaces.msg import Duration
from diagnostic_msgs.msg import DiagnosticStatus, KeyValue
from sensor_msgs.msg import JointState
from std_msgs.msg import Header, MultiArrayDimension, UInt8MultiArray
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from ..control.plan import Plan
from ..model.scalars import is_real

PLAN_FORMAT = "vi_control/plan"
PLAN_VERSION = 1
PLAN_MAGIC = b"VIPLAN\0\0"
FLAG_CONVERGED = 1
FLAG_START_ON_RECEIPT = 2
_HEADER = struct.Struct("<8sIIQ16sIIIIdd")  # 72 bytes
_MAX_VALUES = 50_000_000  # 400 MB of float64: refuse anything larger before allocating


class PlanModelMismatch(ValueError):
    """A complete plan, but made for another model (different content hash); ``seq`` its sequence number."""

    def __init__(self, message: str, seq: int):
        super().__init__(message)
        self.seq = seq


def encode_plan(plan: Plan, seq: int, start_on_receipt: bool = False) -> bytes:
    """The byte layout of the module docstring; ValueError if the plan's times are not t₀ + k·Δt."""
    N, nu, ndx = plan.K.shape
    nx = plan.X.shape[1]
    times = np.asarray(plan.times, float)
    if not np.allclose(times, times[0] + plan.dt * np.arange(N + 1), rtol=0.0, atol=1e-9 * max(1.0, abs(times[-1]))):
        raise ValueError("plan times are not uniform (t0 + k·dt): cannot encode")
    h = plan.model_hash.encode("ascii")
    if len(h) != 16:
        raise ValueError(f"model hash must be 16 characters, got {plan.model_hash!r}")
    U_final = plan.U[-1] if plan.U_final is None else np.asarray(plan.U_final, float)
    K_final = plan.K[-1] if plan.K_final is None else np.asarray(plan.K_final, float)
    flags = (FLAG_CONVERGED if plan.converged else 0) | (FLAG_START_ON_RECEIPT if start_on_receipt else 0)
    head = _HEADER.pack(PLAN_MAGIC, PLAN_VERSION, flags, int(seq), h, N, nx, nu, ndx, float(plan.dt), float(times[0]))
    body = np.concatenate([a.ravel() for a in (plan.X, plan.U, plan.K, U_final, K_final)]).astype("<f8")
    return head + body.tobytes()


def decode_plan(
    buf: bytes, model_name: str, model_hash: str, joint_names: list[str], input_names: list[str]
) -> tuple[int, Plan, int]:
    """(sequence number, Plan, flags) from the bytes; ValueError naming the field if anything is off,
    PlanModelMismatch if the plan was made for another model (an empty ``model_hash`` accepts any)."""
    buf = bytes(buf)
    if len(buf) < _HEADER.size:
        raise ValueError(f"plan message has {len(buf)} bytes, fewer than the {_HEADER.size}-byte header")
    magic, version, flags, seq, h, N, nx, nu, ndx, dt, t0 = _HEADER.unpack_from(buf)
    if magic != PLAN_MAGIC:
        raise ValueError(f"not a vi_control plan (magic {magic!r})")
    if version != PLAN_VERSION:
        raise ValueError(f"plan format version {version}, this node reads version {PLAN_VERSION}")
    plan_hash = h.decode("ascii", errors="replace")
    if model_hash and plan_hash != model_hash:
        raise PlanModelMismatch(
            f"plan {seq} was made for model {plan_hash}, this node runs {model_name} ({model_hash})", seq
        )
    if N < 1 or nx < 1 or ndx < 1:
        raise ValueError(f"plan {seq}: needs N >= 1 steps and nx, ndx >= 1 (N={N}, nx={nx}, ndx={ndx})")
    n_values = (N + 1) * nx + N * nu + N * nu * ndx + nu + nu * ndx
    if n_values > _MAX_VALUES or len(buf) != _HEADER.size + 8 * n_values:
        raise ValueError(
            f"plan {seq}: {len(buf) - _HEADER.size} data bytes, expected {8 * n_values} for "
            f"N={N}, nx={nx}, nu={nu}, ndx={ndx}"
        )
    if not (np.isfinite(dt) and dt > 0 and np.isfinite(t0)):
        raise ValueError(f"plan {seq}: dt = {dt} and t0 = {t0} must be finite, dt > 0")
    v = np.frombuffer(buf, dtype="<f8", offset=_HEADER.size).astype(float)
    if not np.all(np.isfinite(v)):
        raise ValueError(f"plan {seq}: states, inputs or gains are not finite")
    parts, i = [], 0
    for shape in ((N + 1, nx), (N, nu), (N, nu, ndx), (nu,), (nu, ndx)):
        n = int(np.prod(shape))
        parts.append(v[i : i + n].reshape(shape))
        i += n
    X, U, K, U_final, K_final = parts
    plan = Plan(
        times=t0 + dt * np.arange(N + 1),
        X=X,
        U=U,
        K=K,
        dt=dt,
        model_name=model_name,
        model_hash=plan_hash,
        joint_names=list(joint_names),
        input_names=list(input_names),
        K_final=K_final,
        U_final=U_final,
        converged=bool(flags & FLAG_CONVERGED),
    )
    return int(seq), plan, int(flags)


def plan_to_message(plan: Plan, seq: int, start_on_receipt: bool = False) -> UInt8MultiArray:
    msg = UInt8MultiArray()
    payload = encode_plan(plan, seq, start_on_receipt)
    msg.layout.dim.append(MultiArrayDimension(label=PLAN_FORMAT, size=len(payload), stride=len(payload)))
    msg.data = array.array("B", payload)
    return msg


def plan_from_message(
    msg: UInt8MultiArray, model_name: str, model_hash: str, joint_names: list[str], input_names: list[str]
) -> tuple[int, Plan, int]:
    """``decode_plan`` of a message (its layout label must be ``PLAN_FORMAT``)."""
    labels = [d.label for d in msg.layout.dim]
    if labels != [PLAN_FORMAT]:
        raise ValueError(f"layout labels {labels}, expected [{PLAN_FORMAT!r}]")
    return decode_plan(msg.data, model_name, model_hash, joint_names, input_names)


def plan_entered_message(seq: int, t0: float) -> Header:
    """The controller's word that it entered plan ``seq`` with X_0 at ``t0`` (its clock)."""
    msg = Header(frame_id=str(int(seq)))
    msg.stamp.sec, msg.stamp.nanosec = split_seconds(t0)
    return msg


def plan_refused_message(seq: int, why: str, kind: str = "") -> DiagnosticStatus:
    """The controller's word that it does not run plan ``seq`` (rejected on arrival, or not entered), why, and the
    kind of refusal (``control.runner``'s: "plan ended" for a plan that reached it after its end, ...)."""
    values = [KeyValue(key="plan", value=str(seq))] + ([KeyValue(key="kind", value=kind)] if kind else [])
    return DiagnosticStatus(level=DiagnosticStatus.ERROR, name="plan_refused", message=why, values=values)


def plan_refused_kind(msg: DiagnosticStatus) -> str:
    """The kind of refusal a ``plan_refused_message`` states ("" where it states none)."""
    return next((kv.value for kv in msg.values if kv.key == "kind"), "")


def plan_refused_from_message(msg: DiagnosticStatus) -> tuple[int, str]:
    """(seq, why) of a ``plan_refused_message``; ValueError if it names no plan sequence number."""
    seq = next((kv.value for kv in msg.values if kv.key == "plan"), "")
    if not (seq.isascii() and seq.isdigit()):
        raise ValueError(f"plan_refused: plan {seq!r} is not a plan sequence number")
    return int(seq), msg.message


def plan_entered_from_message(msg: Header) -> tuple[int, float]:
    """(seq, t₀) of a ``plan_entered_message``; ValueError if ``frame_id`` is not a plan's sequence number."""
    if not (msg.frame_id.isascii() and msg.frame_id.isdigit()):
        raise ValueError(f"plan_entered: frame_id {msg.frame_id!r} is not a plan sequence number")
    return int(msg.frame_id), time_seconds(msg.stamp)


def plan_to_trajectory(plan: Plan, velocities: np.ndarray, input_joints: list[int], stamp) -> JointTrajectory:
    """JointTrajectory: positions q_k, velocities q̇_k, efforts U_k placed on the actuated joints."""
    msg = JointTrajectory()
    msg.header.stamp = stamp
    msg.joint_names = list(plan.joint_names)
    nq = len(plan.joint_names)
    for k, t in enumerate(plan.times):
        u = plan.U[k] if k < plan.horizon else (plan.U_final if plan.U_final is not None else plan.U[-1])
        effort = np.zeros(nq)
        effort[input_joints] = u[: len(input_joints)]
        sec, nsec = split_seconds(float(t - plan.times[0]))
        msg.points.append(
            JointTrajectoryPoint(
                positions=plan.X[k, :nq].tolist(),
                velocities=np.asarray(velocities[k], float).tolist(),
                effort=effort.tolist(),
                time_from_start=Duration(sec=sec, nanosec=nsec),
            )
        )
    return msg


def _name_index(names) -> dict[str, int]:
    """{joint name: its entry in a message}; ValueError if a name repeats (which of its values would be meant?)."""
    index = {n: i for i, n in enumerate(names)}
    if len(index) != len(names):
        twice = sorted({n for n in names if list(names).count(n) > 1})
        raise ValueError(f"joint state names joint(s) {twice} more than once (got {list(names)})")
    return index


def split_seconds(t: float) -> tuple[int, int]:
    """(sec, nanosec) of a time in seconds, for stamps and durations: nanosec in [0, 10⁹), sec + 10⁻⁹·nanosec the
    time to the nearest nanosecond; ValueError for a time that is not a finite real number whose sec fits the int32
    of builtin_interfaces/Time and Duration."""
    if not is_real(t) or not -(2.0**31) <= t <= 2.0**31 - 1:  # (NaN fails the comparison; big ints compare exactly)
        raise ValueError(f"time t: expected finite seconds in [-2^31, 2^31 - 1] (an int32 sec), got {t!r}")
    # whole seconds and the fraction apart (t − ⌊t⌋ is exact): round(t·1e9) rounded t·1e9 to a double first,
    # 128 ns off at wall-clock times (1.8e9 s)
    sec = math.floor(t)
    nsec = round((float(t) - sec) * 1e9)
    return (sec + 1, 0) if nsec == 10**9 else (int(sec), int(nsec))


def time_seconds(t) -> float:
    """A builtin_interfaces/Time (a header's stamp) or Duration (a point's ``time_from_start``) in seconds."""
    return t.sec + 1e-9 * t.nanosec


def stamp_seconds(msg: JointState) -> float:
    """The header stamp of a stamped message (JointState, Odometry, JointTrajectory, …) in seconds."""
    return time_seconds(msg.header.stamp)


class ForeignJointState(ValueError):
    """A JointState that names none of the model's joints: another driver on the same topic (a gripper, a mobile
    base's wheels), not a fault of ours — to be ignored, unlike one that lacks only some of them."""


def _index_of_ours(names: list[str], joint_names: list[str]) -> tuple[dict[str, int], list[str]]:
    """({name: entry}, the model joints the message lacks); ForeignJointState if it names none of them (checked
    first: another driver's message is not ours to judge), ValueError if a name repeats."""
    if not any(n in names for n in joint_names):
        raise ForeignJointState(f"joint state names none of the model's joints (got {list(names)})")
    index = _name_index(names)
    return index, [n for n in joint_names if n not in index]


def joint_state_arrays(msg: JointState, joint_names: list[str]) -> tuple[np.ndarray, np.ndarray | None]:
    """(q, q̇ or None) in ``joint_names`` order; ValueError naming missing joints or non-finite values
    (ForeignJointState if it names none of them)."""
    index, missing = _index_of_ours(msg.name, joint_names)
    if missing:
        raise ValueError(f"joint state lacks joint(s) {missing} (got {list(msg.name)})")
    if len(msg.position) != len(msg.name):
        raise ValueError(f"joint state has {len(msg.position)} positions for {len(msg.name)} names")
    order = [index[n] for n in joint_names]
    q = np.asarray(msg.position, float)[order]
    if not np.all(np.isfinite(q)):
        raise ValueError("joint state positions contain NaN/inf")
    v = None
    if len(msg.velocity) == len(msg.name):
        v = np.asarray(msg.velocity, float)[order]
        if not np.all(np.isfinite(v)):
            v = None
    return q, v


class JointStateReader:
    """Joint states -> q and q̇ in a fixed joint order, into preallocated arrays (the controller's hot path).

    The name -> index order is computed once and reused while a message's names equal the previous ones (a
    driver sends the same list every time). ``read`` returns whether the message had usable velocities;
    ValueError names missing joints, size mismatches and non-finite positions; ForeignJointState (a ValueError)
    a message with none of the model's joints (another driver publishing on the same topic). With ``partial``, a
    message with only some of them is read too: ``carried`` is then the mask of those (None: all), and only their
    entries of ``q`` and ``qdot`` are meaningful (one driver of several: ``control.joint_merge``).
    """

    def __init__(self, joint_names: list[str], partial: bool = False):
        self.joint_names, self.partial = list(joint_names), partial
        self.q = np.zeros(len(joint_names))
        self.qdot = np.zeros(len(joint_names))
        self.carried: np.ndarray | None = None
        self._names: list[str] | None = None
        self._order = np.zeros(len(joint_names), int)

    @property
    def joint_names_in_message(self) -> list[str]:
        return self._names or []

    def read_names(self, names: list[str]) -> None:
        """The order of ``joint_names`` in a message with these names (cached while they stay the same)."""
        if names != self._names:
            index, missing = _index_of_ours(names, self.joint_names)  # (foreign: the cached order stays)
            if missing and not self.partial:
                self._names = None
                raise ValueError(f"joint state lacks joint(s) {missing} (got {list(names)})")
            # (a joint the message lacks reads entry 0: a value nobody uses, see `carried`)
            self._order[:] = [index.get(n, 0) for n in self.joint_names]
            self.carried = np.array([n in index for n in self.joint_names]) if missing else None
            self._names = list(names)

    def _finite(self, values: np.ndarray) -> bool:
        return bool(np.isfinite(values if self.carried is None else values[self.carried]).all())

    def read(self, msg: JointState) -> bool:
        names = msg.name
        self.read_names(names)
        n = len(names)
        if len(msg.position) != n:
            raise ValueError(f"joint state has {len(msg.position)} positions for {n} names")
        np.frombuffer(msg.position, float).take(self._order, out=self.q)
        if not self._finite(self.q):
            raise ValueError("joint state positions contain NaN/inf")
        if len(msg.velocity) != n:
            return False
        np.frombuffer(msg.velocity, float).take(self._order, out=self.qdot)
        return self._finite(self.qdot)


class RawJointStateReader(JointStateReader):
    """``JointStateReader`` on the serialized message (a ``raw=True`` subscription): rclpy's deserialization of a
    JointState builds a Python string per joint name and a list per field (~70 µs for 7 joints, most of a 1 kHz
    budget on a loaded core); here the XCDR1 little-endian bytes are read in place: stamp, the name section
    compared as bytes with the last one (parsed only when it changes), positions and velocities through numpy.
    Layout (alignment relative to the byte after the 4-byte encapsulation header): int32 sec, uint32 nanosec,
    string frame_id, sequence<string> name, then sequence<float64> position, velocity, effort."""

    HEAD = struct.Struct("<iII")

    def __init__(self, joint_names: list[str], partial: bool = False):
        super().__init__(joint_names, partial)
        self._name_bytes: bytes | None = None
        self._foreign: tuple[bytes, str] | None = None  # the last foreign name section and its error
        self.stamp: tuple[int, int] = (0, 0)  # header stamp (sec, nanosec) of the last message with our joints

    def read_raw(self, buf: bytes) -> tuple[float, bool]:
        """(stamp [s], whether usable velocities came) from the serialized JointState; ValueError if malformed."""
        try:
            if buf[:2] != b"\x00\x01":
                raise ValueError("not a little-endian CDR message")
            sec, nsec, flen = self.HEAD.unpack_from(buf, 4)
            start = _align(4 + 12 + flen, 4)
            end = start + len(self._name_bytes) if self._name_bytes is not None else -1
            if self._name_bytes is None or buf[start:end] != self._name_bytes:
                if self._foreign is not None and buf[start : start + len(self._foreign[0])] == self._foreign[0]:
                    raise ForeignJointState(self._foreign[1])
                end, names = _read_names(buf, start)
                try:
                    self.read_names(names)
                except ForeignJointState as e:
                    self._foreign = (bytes(buf[start:end]), str(e))
                    raise
                except ValueError:
                    self._name_bytes = None
                    raise
                self._name_bytes = bytes(buf[start:end])
            self.stamp = (sec, nsec)  # (a message of ours: a command answering it names this stamp)
            n = len(self.joint_names_in_message)
            off, q = _read_doubles(buf, end)
            if len(q) != n:
                raise ValueError(f"joint state has {len(q)} positions for {n} names")
            q.take(self._order, out=self.q)
            if not self._finite(self.q):
                raise ValueError("joint state positions contain NaN/inf")
            _, v = _read_doubles(buf, off)
        except (struct.error, IndexError, UnicodeDecodeError) as e:
            raise ValueError(f"malformed joint state message ({type(e).__name__})") from None
        t = sec + 1e-9 * nsec
        if len(v) != n:
            return t, False
        v.take(self._order, out=self.qdot)
        return t, self._finite(self.qdot)


def _align(offset: int, n: int) -> int:
    """``offset`` (absolute, after the 4-byte encapsulation) rounded up to a multiple of n from the payload start."""
    return 4 + ((offset - 4 + n - 1) // n) * n


def _read_names(buf: bytes, offset: int) -> tuple[int, list[str]]:
    (count,) = struct.unpack_from("<I", buf, offset)
    offset += 4
    names = []
    for _ in range(count):
        offset = _align(offset, 4)
        (length,) = struct.unpack_from("<I", buf, offset)
        names.append(bytes(buf[offset + 4 : offset + 3 + length]).decode("utf-8"))
        offset += 4 + length
    return offset, names


def _read_doubles(buf: bytes, offset: int) -> tuple[int, np.ndarray]:
    offset = _align(offset, 4)
    (count,) = struct.unpack_from("<I", buf, offset)
    offset = _align(offset + 4, 8) if count else offset + 4
    if offset + 8 * count > len(buf):  # (a count beyond the message: numpy's "buffer is smaller" named nothing)
        raise struct.error(f"{count} doubles declared at byte {offset}, the message has {len(buf)} bytes")
    return offset + 8 * count, np.frombuffer(buf, float, count, offset)


# A controller's command names the joint state it answers: layout.dim[0].label = "answers t=<sec>.<nanosec>" (sec as
# 11 digits with sign, nanosec as 9: a fixed width, written in place per command), size = stride = the value count,
# so the layout stays a plain vector's. Tools that read only ``data`` (ros2_control's forward_command_controller)
# see an ordinary command; a lockstep simulator steps only on the answer to the state it is at (simulator_node).
COMMAND_STAMP_PREFIX = "answers t="
_STAMP_TEXT = "{:011d}.{:09d}"


def command_stamp(msg) -> tuple[int, int] | None:
    """(sec, nanosec) of the joint state a Float64MultiArray command answers, or None if it names none (a command
    from another tool) or names it in another form."""
    for d in msg.layout.dim:
        if d.label.startswith(COMMAND_STAMP_PREFIX):
            sec, _, nsec = d.label[len(COMMAND_STAMP_PREFIX) :].partition(".")
            try:
                return int(sec), int(nsec)
            except ValueError:
                return None
    return None


class RawFloat64MultiArray:
    """A std_msgs/Float64MultiArray of ``n`` values serialized once; ``data`` is a numpy view on its values: fill
    it (and ``set_stamp``: the joint state it answers, ``COMMAND_STAMP_PREFIX``) and publish ``bytes(message)``
    with no per-tick serialization."""

    def __init__(self, n: int):
        # CDR little endian: encapsulation; layout.dim: count 1, {label: length incl. NUL, chars, NUL, pad to 4;
        # size; stride}; data_offset = 0; data: count n, pad to 8, values
        label = (COMMAND_STAMP_PREFIX + _STAMP_TEXT.format(0, 0)).encode() + b"\0"
        head = b"\x00\x01\x00\x00" + struct.pack("<II", 1, len(label)) + label
        head += bytes(-(len(head) - 4) % 4) + struct.pack("<IIII", n, n, 0, n)
        head += bytes(-(len(head) - 4) % 8 if n else 0)
        self._stamp_at = 12 + len(COMMAND_STAMP_PREFIX)
        self.buf = bytearray(head + bytes(8 * n))
        self.data = np.frombuffer(self.buf, float, n, len(head))

    def set_stamp(self, sec: int, nanosec: int) -> None:
        """Name the joint state stamped (sec, nanosec) as the one this command answers."""
        sec, nanosec = sec + nanosec // 10**9, nanosec % 10**9  # (a malformed stamp must not widen the label)
        self.buf[self._stamp_at : self._stamp_at + 21] = _STAMP_TEXT.format(sec, nanosec).encode()[:21]

    def __bytes__(self) -> bytes:
        return bytes(self.buf)
