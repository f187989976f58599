"""A seeded generator of hostile inputs over every input surface, and the contract each case must meet.

Our own generator rather than Hypothesis: the cases are structured mutations of the project's own files (a valid
URDF, system/task/rigid-body/sweep/library YAML, a plan file, a serialized JointState or plan message) plus hostile
numbers for the Python API, so the interesting values are known ahead (1e300, 2⁶³, NaN, '1:30', nested lists, …)
and shrinking buys little; a fixed seed gives the same cases on any machine, and no new pinned dependency.

Contract (``run_case``): each case ends as
- ``valid``: a result that passes the surface's invariants (finite numbers, values within the schema's tables, a
  plan's times t₀ + kΔt, …), or
- ``specific``: one of the package's errors, or a ValueError whose message is ours (not numpy's or Python's),
and never as ``generic`` (TypeError, IndexError, KeyError, ZeroDivisionError, OverflowError, RecursionError, …),
``nonsense`` (a result that fails its invariants), ``hang`` (over the time budget) or ``crash`` (the process died).
Each case runs in a forked child of the process that generated it (models already loaded, so a fork costs
milliseconds), with a watchdog: a hang or a crash is caught, never inherited. ``scripts/fuzz.py`` runs it with any
seed and number of cases; ``test/robustness/test_fuzz_generator.py`` runs a fixed seed in the suite.
"""

from __future__ import annotations

import copy
import json
import math
import os
import re
import select
import signal
import struct
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

CONFIG = Path(__file__).resolve().parents[2] / "config"

# ---- hostile values ----------------------------------------------------------------------------------------------
HOSTILE = [
    0,
    -1,
    1,
    2,
    1e300,
    -1e300,
    1e-300,
    5e-324,
    2**63,
    -(2**63),
    10**400,
    1e6,
    1e10,
    1e-12,
    0.5,
    float("nan"),
    float("inf"),
    -float("inf"),
    -0.0,
    True,
    False,
    None,
    "",
    "x",
    "1:30",
    "pi",
    "pi/0",
    "1e400",
    "nan",
    "inf",
    "yes",
    [],
    {},
    [1.0],
    [[1.0, 2.0]],
    [float("nan")] * 3,
    [1e300] * 3,
    ["a", "b", "c"],
    {"a": 1},
    [[[[[]]]]],
    "9" * 500,
    3.5,
    -3.5,
    100000,
    100001,
    10**9,
]


def hostile_value(rng: np.random.Generator) -> Any:
    v = HOSTILE[int(rng.integers(len(HOSTILE)))]
    return copy.deepcopy(v)


def _leaves(d, path=()) -> list[tuple]:
    out = [path] if path else []
    if isinstance(d, dict):
        for k, v in d.items():
            out += _leaves(v, path + (k,))
    elif isinstance(d, list):
        for i, v in enumerate(d):
            out += _leaves(v, path + (i,))
    return out


def _set(d, path, value) -> None:
    for k in path[:-1]:
        d = d[k]
    d[path[-1]] = value


def _delete(d, path) -> None:
    for k in path[:-1]:
        d = d[k]
    del d[path[-1]]


def mutate_doc(rng: np.random.Generator, doc: Any) -> tuple[Any, str]:
    """1–3 mutations of a YAML/JSON document: a value replaced by a hostile one, a key dropped, an unknown key
    added, a list grown to 10⁵ entries, a scalar scaled by 10^±k."""
    doc = copy.deepcopy(doc)
    what = []
    for _ in range(int(rng.integers(1, 4))):
        paths = _leaves(doc)
        if not paths:
            break
        path = paths[int(rng.integers(len(paths)))]
        op = int(rng.integers(5))
        try:
            if op == 0:
                v = hostile_value(rng)
                _set(doc, path, v)
                what.append(f"{'.'.join(map(str, path))}={v!r:.40}")
            elif op == 1:
                _delete(doc, path)
                what.append(f"del {'.'.join(map(str, path))}")
            elif op == 2 and isinstance(doc, dict):
                node = doc
                for k in path[:-1]:
                    node = node[k]
                if isinstance(node, dict):
                    node["unknown_key"] = 1
                    what.append(f"add {'.'.join(map(str, path[:-1]))}.unknown_key")
            elif op == 3:
                node = doc
                for k in path[:-1]:
                    node = node[k]
                if isinstance(node[path[-1]], list) and node[path[-1]]:
                    node[path[-1]] = node[path[-1]] * 100_000
                    what.append(f"{'.'.join(map(str, path))} × 10⁵")
            else:
                node = doc
                for k in path[:-1]:
                    node = node[k]
                x = node[path[-1]]
                if isinstance(x, (int, float)) and not isinstance(x, bool):
                    s = 10.0 ** float(rng.choice([-300, -12, -6, 3, 6, 12, 300]))
                    node[path[-1]] = x * s
                    what.append(f"{'.'.join(map(str, path))} × {s:g}")
        except (KeyError, IndexError, TypeError):
            pass
    return doc, "; ".join(what) or "unchanged"


def _yaml(name: str) -> Any:
    import yaml

    return yaml.safe_load((CONFIG / name).read_text())


# ---- outcomes ----------------------------------------------------------------------------------------------------
GENERIC = (
    TypeError,
    IndexError,
    KeyError,
    ZeroDivisionError,
    OverflowError,
    RecursionError,
    AttributeError,
    MemoryError,
    AssertionError,
    FloatingPointError,
    NotImplementedError,
    StopIteration,
    UnicodeError,
    struct.error,
    np.linalg.LinAlgError,
)
# ValueErrors raised by numpy or Python itself, naming nothing of ours
FOREIGN_VALUE_ERROR = re.compile(
    r"could not convert|invalid literal|setting an array element|could not be broadcast|buffer is smaller|"
    r"cannot reshape|math domain error|too many values to unpack|not enough values to unpack|zero-size array|"
    r"array must not contain infs|object arrays|Expecting value|Extra data|Unterminated|non-broadcastable|"
    r"negative dimensions|maximum supported dimension|cannot convert float|Out of range float|"
    r"The truth value of an array"
)


def classify_error(e: BaseException) -> str:
    from vi_control.model.errors import ModelError

    if isinstance(e, GENERIC) and not isinstance(e, ValueError):
        return "generic"
    if isinstance(e, ModelError):
        return "specific"
    if isinstance(e, (UnicodeError, np.linalg.LinAlgError)):
        return "generic"
    if isinstance(e, ValueError) or type(e).__name__ in (
        "PlanningError",
        "ConvergenceError",
        "SingularityError",
        "UntrustedStepError",
        "DMOCError",
        "SweepError",
    ):
        if isinstance(e, json.JSONDecodeError) or FOREIGN_VALUE_ERROR.search(str(e)) or not str(e):
            return "generic"
        return "specific"
    return "generic"


@dataclass
class Case:
    surface: str
    index: int
    description: str
    run: Callable[[], Any]
    check: Callable[[Any], str | None] = lambda r: None  # why the result is nonsense, or None


@dataclass
class Outcome:
    kind: str  # valid | specific | generic | nonsense | hang | crash
    detail: str
    seconds: float


def _child(case: Case) -> dict:
    try:
        r = case.run()
        why = case.check(r)
        return {"kind": "nonsense", "detail": why} if why else {"kind": "valid", "detail": ""}
    except BaseException as e:  # noqa: BLE001 - the contract classifies every exception
        return {"kind": classify_error(e), "detail": f"{type(e).__name__}: {str(e)[:300]}"}


def run_case(case: Case, timeout: float = 10.0) -> Outcome:
    """``case`` in a forked child with a watchdog (module docstring)."""
    r, w = os.pipe()
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:  # child
        os.close(r)
        try:
            out = _child(case)
            data = json.dumps(out).encode()
        except BaseException:  # noqa: BLE001
            data = b'{"kind": "generic", "detail": "unserializable outcome"}'
        os.write(w, data)
        os._exit(0)
    os.close(w)
    chunks, deadline = [], t0 + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(r)
            return Outcome("hang", f"over {timeout:g} s", time.monotonic() - t0)
        ready, _, _ = select.select([r], [], [], left)
        if ready:
            b = os.read(r, 65536)
            if not b:
                break
            chunks.append(b)
    os.close(r)
    _, status = os.waitpid(pid, 0)
    dt = time.monotonic() - t0
    if os.WIFSIGNALED(status) or not chunks:
        return Outcome("crash", f"status {status}", dt)
    out = json.loads(b"".join(chunks))
    return Outcome(out["kind"], out["detail"], dt)


# ---- invariants --------------------------------------------------------------------------------------------------
def _finite(*arrays) -> bool:
    return all(np.all(np.isfinite(np.asarray(a, float))) for a in arrays)


def _bounded_by(table: dict, values: dict) -> str | None:
    for key, v in values.items():
        if key in table and not table[key].contains(v):
            return f"{key} = {v!r} outside its table's {table[key]}"
    return None


# ---- surfaces ----------------------------------------------------------------------------------------------------
def _urdf_cases(rng, index) -> Case:
    from vi_control.model import load_robot
    from vi_control.model.bundled import bundled_urdf

    text = Path(bundled_urdf(str(rng.choice(["pendulum", "double_pendulum", "cartpole"])))).read_text()
    attrs = list(re.finditer(r'(\w+)="([^"]*)"', text))
    what = []
    for _ in range(int(rng.integers(1, 3))):
        m = attrs[int(rng.integers(len(attrs)))]
        v = hostile_value(rng)
        v = v if isinstance(v, str) else (" ".join(map(str, v)) if isinstance(v, list) else str(v))
        text = text.replace(m.group(0), f'{m.group(1)}="{v}"', 1)
        what.append(f"{m.group(1)}={v[:30]!r}")

    def check(robot):
        if not _finite(robot.gravity) or np.any(np.isnan(robot.effort_limits)) or np.any(robot.effort_limits < 0):
            return 'non-finite gravity or NaN/negative effort limits (inf: unbounded, as effort="0" states)'
        return None

    return Case("urdf", index, "; ".join(what), lambda: load_robot(text), check)


def _system_case(rng, index) -> Case:
    from vi_control.model import load_robot
    from vi_control.model.bundled import bundled_urdf

    name = str(rng.choice(["acrobot", "fourbar", "cartpole", "pendulum"]))
    urdf = {"acrobot": "double_pendulum"}.get(name, name)
    doc, what = mutate_doc(rng, _yaml(f"{name}.yaml") or {})

    def check(robot):
        if not _finite(robot.gravity) or np.abs(robot.gravity).max() > 1e4:
            return f"gravity {robot.gravity} outside ±1e4"
        return None

    return Case("system", index, f"{name}: {what}", lambda: load_robot(bundled_urdf(urdf), doc), check)


def _task_case(rng, index) -> Case:
    from vi_control.planning.task import TASK_BOUNDS, load_task

    name = str(
        rng.choice(
            ["task_pendulum_swingup", "task_cartpole_swingup_lg2", "task_acrobot_swingup", "task_panda_reach_mpc"]
        )
    )
    doc, what = mutate_doc(rng, _yaml(f"{name}.yaml"))

    def check(t):
        return _bounded_by(
            TASK_BOUNDS,
            {
                "dt": t.dt,
                "horizon": t.horizon,
                "optimizer.max_iterations": t.max_iterations,
                "optimizer.tolerance": t.tolerance,
                "optimizer.regularization": t.regularization,
            },
        )

    return Case("task", index, f"{name}: {what}", lambda: load_task(doc), check)


def _rigid_body_case(rng, index) -> Case:
    from vi_control.mechanics.groups import get_group
    from vi_control.model.rigid_body import load_rigid_body
    from vi_control.planning.vehicle import VEHICLE_BOUNDS, maneuver_settings, maneuvers

    name = str(rng.choice(["vehicle_uuv", "spacecraft"]))
    doc, what = mutate_doc(rng, _yaml(f"{name}.yaml"))

    def run():
        body = load_rigid_body(doc)
        return body, maneuver_settings(body), maneuvers(body)

    def check(r):
        body, st, mans = r
        J = body.spatial_inertia
        if not _finite(J, body.input_matrix, body.damping) or np.linalg.eigvalsh(J).min() <= 0:
            return "inertia not finite positive definite"
        if not (np.all(body.effort_limits > 0)):
            return "non-positive effort limit"
        bad = _bounded_by(VEHICLE_BOUNDS, {"planning.horizon": st.horizon})
        if bad:
            return bad
        G = get_group(body.group)
        for n, g0, gT in mans:
            if G.distance_from_group(g0) > 1e-9 or G.distance_from_group(gT) > 1e-9:
                return f"maneuver {n}: not a group element"
        return None

    return Case("rigid_body", index, f"{name}: {what}", run, check)


def _sweep_case(rng, index) -> Case:
    from vi_control.sweep.config import SWEEP_BOUNDS, load_robustness_config

    doc, what = mutate_doc(rng, _yaml("sweep_pendulum.yaml"))

    def run():
        cfg = load_robustness_config(doc)
        return cfg, [cfg.sample(i, 1) for i in range(3)]

    def check(r):
        cfg, samples = r
        bad = _bounded_by(
            SWEEP_BOUNDS,
            {"samples": cfg.samples, "success.tolerance": cfg.tolerance, "success.hold_time": cfg.hold_time},
        )
        if bad:
            return bad
        for s in samples:
            for k, v in s.items():
                if not _finite(v):
                    return f"sample drew non-finite {k}"
        return None

    return Case("sweep", index, what, run, check)


def _library_case(rng, index) -> Case:
    from vi_control.sweep.config import MAX_LIBRARY_GOALS, load_library_goals

    base = (
        {"grid": {"theta": {"from": 2.2, "to": "pi", "num": 5}}}
        if rng.random() < 0.5
        else {"goals": [[0.5], [1.0], [2.0]]}
    )
    doc, what = mutate_doc(rng, base)

    def check(goals):
        if len(goals) > MAX_LIBRARY_GOALS or not goals:
            return f"{len(goals)} goals"
        if not _finite(goals) or np.asarray(goals).shape[1] != 1:
            return "goals not finite or of the wrong size"
        return None

    return Case("library", index, what, lambda: load_library_goals(doc, ["theta"], np.zeros(1)), check)


_PLAN_BYTES: dict = {}


def _plan_file_bytes() -> bytes:
    if "file" not in _PLAN_BYTES:
        from vi_control.control.plan import Plan

        p = _small_plan()
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "p.npz")
            p.save(path)
            _PLAN_BYTES["file"] = Path(path).read_bytes()
        _PLAN_BYTES["plan"] = p
        assert isinstance(p, Plan)
    return _PLAN_BYTES["file"]


def _small_plan():
    from vi_control.control.plan import Plan

    N = 10
    return Plan(
        times=0.1 * np.arange(N + 1),
        X=np.zeros((N + 1, 2)),
        U=np.zeros((N, 1)),
        K=np.zeros((N, 1, 2)),
        dt=0.1,
        model_name="pendulum",
        model_hash="0123456789abcdef",
        joint_names=["theta"],
        input_names=["theta"],
        K_final=np.zeros((1, 2)),
        U_final=np.zeros(1),
        converged=True,
    )


def _plan_invariants(p) -> str | None:
    if not _finite(p.X, p.U, p.K, p.times):
        return "non-finite plan"
    k = np.arange(len(p.times))
    if np.abs(p.times - (p.times[0] + k * p.dt)).max() > 1e-6 * max(1.0, abs(p.times[-1])):
        return "times not t0 + k dt"
    return None


def _plan_file_case(rng, index, tmpdir: str) -> Case:
    import io
    import zipfile

    from vi_control.control.plan import Plan

    raw = _plan_file_bytes()
    op = int(rng.integers(4))
    if op == 0:  # flip bytes
        b = bytearray(raw)
        for _ in range(int(rng.integers(1, 8))):
            b[int(rng.integers(len(b)))] ^= int(rng.integers(1, 256))
        data, what = bytes(b), "byte flips"
    elif op == 1:
        cut = int(rng.integers(len(raw)))
        data, what = raw[:cut], f"truncated at {cut}"
    else:  # rewrite the meta (JSON) or one array
        zin = zipfile.ZipFile(io.BytesIO(raw))
        members = {n: zin.read(n) for n in zin.namelist()}
        meta_name = next(n for n in members if n.startswith("meta"))
        arr = np.load(io.BytesIO(members[meta_name]), allow_pickle=False)
        meta = json.loads(str(arr))
        if op == 2:
            meta, what = mutate_doc(rng, meta)
            buf = io.BytesIO()
            try:
                np.save(buf, np.array(json.dumps(meta)))
            except (ValueError, TypeError):
                np.save(buf, np.array("{"))
            members[meta_name] = buf.getvalue()
        else:
            name = str(rng.choice([n for n in members if n != meta_name]))
            a = np.load(io.BytesIO(members[name]), allow_pickle=False)
            v = hostile_value(rng)
            try:
                a = np.full(a.shape if rng.random() < 0.7 else (3, 7), v, dtype=float)
            except (ValueError, TypeError, OverflowError):
                a = np.array([str(v)])
            buf = io.BytesIO()
            np.save(buf, a)
            members[name] = buf.getvalue()
            what = f"{name} := {v!r:.30}"
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w") as z:
            for n, b in members.items():
                z.writestr(n, b)
        data = out.getvalue()
    path = os.path.join(tmpdir, f"plan_{index}.npz")
    Path(path).write_bytes(data)
    return Case("plan_file", index, what, lambda: Plan.load(path), _plan_invariants)


def _api_case(rng, index) -> Case:
    import vi_control as vc
    from vi_control.control.lqr import tv_lqr
    from vi_control.planning.dmoc import DMOCProblem, check_dmoc_options
    from vi_control.ros.messages import split_seconds

    a, b = hostile_value(rng), hostile_value(rng)
    op = int(rng.integers(7))
    robot = _PENDULUM["robot"]
    if op == 0:

        def run():
            vi = vc.MidpointVI(robot, a)
            return vi.step(np.zeros(2), np.zeros(1))

        return Case(
            "api",
            index,
            f"MidpointVI(pendulum, dt={a!r:.30}).step",
            run,
            lambda x: None if _finite(x) else "non-finite step",
        )
    if op == 1:
        vi = _PENDULUM["vi"]
        shape = tuple(int(s) for s in rng.choice([0, 1, 2, 3], size=int(rng.integers(1, 3))))

        u = [0.0] if rng.random() < 0.5 else b

        def run():  # (lists, as a user passes them: the conversion is the API's)
            x = (
                a
                if isinstance(a, (list, dict))
                else np.full(shape, None).tolist()
                if a is None
                else (np.zeros(shape) + 0).tolist()
            )
            if not isinstance(a, (list, dict)) and a is not None:
                x = [a] * int(np.prod(shape))
            return vi.step(x, u)

        return Case(
            "api",
            index,
            f"vi.step(x of shape {shape} = {a!r:.20}, u = …)",
            run,
            lambda x: None if _finite(x) else "non-finite step",
        )
    if op == 2:
        return Case(
            "api",
            index,
            f"load_robot(pendulum, mass_scale={a!r:.30})",
            lambda: vc.load_robot("pendulum", mass_scale=a),
            lambda r: None if 1e-12 <= r.total_mass / 1.0 <= 1e6 * 10 else "mass out of range",
        )
    if op == 3:
        body = vc.load_rigid_body("spacecraft")
        return Case(
            "api",
            index,
            f"DMOCProblem(horizon={a!r:.20}, duration={b!r:.20})",
            lambda: DMOCProblem(body, np.eye(3), np.eye(3), a, b),
        )
    if op == 4:
        return Case(
            "api",
            index,
            f"check_dmoc_options(tol={a!r:.20}, max_iterations={b!r:.20})",
            lambda: check_dmoc_options(a, b),
        )
    if op == 5:
        n = int(rng.integers(1, 4))

        def run():  # (numbers as a user passes them, nested lists: the conversion is the API's)
            A = [[[a] * n] * n] * 3 if isinstance(a, (int, float)) else a
            return tv_lqr(A, np.ones((3, n, 1)), np.eye(n), b, np.eye(n))

        return Case(
            "api",
            index,
            f"tv_lqr(A={a!r:.20}, R={b!r:.20})",
            run,
            lambda r: None if _finite(r[0]) else "non-finite gains",
        )

    def check_split(r):
        t = float(a)
        sec, nsec = r
        if not (0 <= nsec < 10**9) or abs(sec + 1e-9 * nsec - t) > 1e-9 * max(1.0, abs(t)):
            return f"split_seconds({t!r}) = {r}"
        return None

    return Case("api", index, f"split_seconds({a!r:.30})", lambda: split_seconds(a), check_split)


_PENDULUM: dict = {}
_MESSAGES: dict = {}


def _messages() -> dict:
    if not _MESSAGES:
        from rclpy.serialization import serialize_message
        from sensor_msgs.msg import JointState

        from vi_control.ros.messages import encode_plan

        m = JointState()
        m.name = ["theta", "other"]
        m.position = [0.5, 1.0]
        m.velocity = [0.1, 0.2]
        m.header.stamp.sec, m.header.stamp.nanosec = 3, 999_999_999
        _MESSAGES["joint_state"] = bytes(serialize_message(m))
        _MESSAGES["plan"] = encode_plan(_small_plan(), 7)
    return _MESSAGES


def _message_case(rng, index) -> Case:
    from vi_control.ros.messages import RawJointStateReader, decode_plan

    kind = str(rng.choice(["joint_state", "plan"]))
    b = bytearray(_messages()[kind])
    op = int(rng.integers(4))
    if op == 0:
        for _ in range(int(rng.integers(1, 6))):
            b[int(rng.integers(len(b)))] = int(rng.integers(256))
        what = "byte changes"
    elif op == 1:
        b = b[: int(rng.integers(len(b)))]
        what = "truncated"
    elif op == 2:  # a 32-bit count or length field set to a huge or odd value
        off = 4 * int(rng.integers(1, len(b) // 4))
        b[off : off + 4] = struct.pack("<I", int(rng.choice([0, 1, 3, 2**31 - 1, 2**32 - 1, 10**6])))
        what = f"u32 at {off}"
    else:  # one double set to a hostile number
        off = 8 * int(rng.integers(1, len(b) // 8))
        b[off : off + 8] = struct.pack("<d", float(rng.choice([np.nan, np.inf, 1e300, -0.0, 5e-324])))
        what = f"f64 at {off}"
    data = bytes(b)
    if kind == "joint_state":

        def run():
            r = RawJointStateReader(["theta"])
            t, vel = r.read_raw(data)
            return t, r.q.copy(), (r.qdot.copy() if vel else None)

        def check(r):
            t, q, v = r
            return None if _finite(q) and (v is None or _finite(v)) and math.isfinite(t) else "non-finite reading"

        return Case("ros_joint_state", index, what, run, check)
    return Case(
        "ros_plan",
        index,
        what,
        lambda: decode_plan(data, "pendulum", "0123456789abcdef", ["theta"], ["theta"])[1],
        _plan_invariants,
    )


SURFACES = ("urdf", "system", "task", "rigid_body", "sweep", "library", "plan_file", "api", "ros_messages")


def prepare() -> None:
    """Load what the cases share once, before forking (children inherit it)."""
    import vi_control as vc

    if not _PENDULUM:
        _PENDULUM["robot"] = vc.load_robot("pendulum")
        _PENDULUM["vi"] = vc.MidpointVI(_PENDULUM["robot"], 0.01)
        _PENDULUM["vi"].step(np.zeros(2), np.zeros(1))
    _plan_file_bytes()
    _messages()
    for name in ("vehicle_uuv", "spacecraft"):
        vc.load_rigid_body(name)


def generate(seed: int, n: int, tmpdir: str, surfaces: tuple[str, ...] = SURFACES) -> Iterator[Case]:
    """``n`` cases, round-robin over ``surfaces``, from ``seed``."""
    rng = np.random.default_rng(seed)
    makers = {
        "urdf": _urdf_cases,
        "system": _system_case,
        "task": _task_case,
        "rigid_body": _rigid_body_case,
        "sweep": _sweep_case,
        "library": _library_case,
        "api": _api_case,
        "ros_messages": _message_case,
        "plan_file": lambda r, i: _plan_file_case(r, i, tmpdir),
    }
    for i in range(n):
        yield makers[surfaces[i % len(surfaces)]](rng, i)


def tally(outcomes: list[tuple[Case, Outcome]]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for case, o in outcomes:
        out.setdefault(case.surface, {}).setdefault(o.kind, 0)
        out[case.surface][o.kind] += 1
    return out


__all__ = ["Case", "Outcome", "SURFACES", "generate", "prepare", "run_case", "tally", "classify_error"]
