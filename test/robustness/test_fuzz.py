"""Fuzz suite: a few hundred seeded mutations of URDFs, system YAMLs, task YAMLs and
plan files. Each must end as a valid model/task/plan or as the package's own error naming what is wrong —
never a generic exception (KeyError, UnicodeDecodeError, OverflowError, LinAlgError, YAML or zip errors...),
never Pinocchio's anonymous "The XML stream does not contain a valid URDF model".

Independent references: every mutated URDF is also given to Pinocchio itself. Where its parser (urdfdom)
refuses the model or logs an error on stderr (it then drops the element: a massless link), ours must refuse
it too; where ours accepts it, Pinocchio's bodies must carry the same total mass. Accepted plans must be
finite with times t_0 + k·Δt. ``TABLES`` holds the outcome counts of the last run (docs/reliability.md:
``python -c "import sys, pytest; sys.path.insert(0, 'test/robustness');
pytest.main(['-q', 'test/robustness/test_fuzz.py']); import test_fuzz; print(test_fuzz.TABLES)"``).
"""

from __future__ import annotations

import copy
import json
import re
import xml.etree.ElementTree as ET
import zipfile
from collections import Counter
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
import yaml

from vi_control.control.plan import Plan, PlanFileError
from vi_control.model import SystemConfigError, URDFError, load_robot
from vi_control.model.bundled import bundled_config, bundled_urdf, example_robot_urdf, share_dir
from vi_control.model.yaml_io import load_yaml
from vi_control.planning.pipeline import input_limits, reference_trajectory, start_state
from vi_control.planning.task import TaskError, load_task

SEED = 20260514
TABLES: dict[str, dict] = {}  # category -> {outcome: count}; category + " by operator" -> {(op, outcome): count}
N_URDF, N_SYSTEM, N_TASK, N_PLAN = 240, 120, 120, 100

HOSTILE_NUMBERS = [
    " 1.0 ",
    "1.0 ",
    "1_0",
    "\u0661.5",
    "\uff11",
    "inf",
    "-inf",
    "nan",
    "1e400",
    "1e300",
    "-1e300",
    "0x10",
    "",
    "abc",
    "1,5",
    "--1",
    "1e",
    "\t0.5",
    "0.5\t",
    "-1",
    "0",
    "1e-400",
    "+.5",
    "5.",
    "1e-300",
]
HOSTILE_VECTORS = [
    "1 2",
    "1 2 3 4",
    "1\t2 3",
    "1 2 x",
    "inf 0 0",
    "1e300 0 0",
    "",
    "  1 2 3  ",
    "1,2,3",
    "0 0 0",
    "nan nan nan",
    "1e-400 0 1",
]
HOSTILE_YAML = [
    ".nan",
    ".inf",
    "-.inf",
    "1:30",
    "yes",
    "no",
    "on",
    "0x1F",
    "0o17",
    "1_000",
    "2024-01-01",
    "1e300",
    "-1e300",
    "1e400",
    "~",
    "''",
    "[]",
    "{}",
    "[1, 2]",
    "{a: 1}",
    "!!python/object/apply:os.system [true]",
    "!!binary aGk=",
    "&a [*a]",
    "*undefined",
    "'5'",
    "true",
    "-1",
    "0",
    "100000000000000000000000",
    '"\\u0661"',
    "[1, [2, [3]]]",
    "!!set {a}",
    "2.5",
    "pi/2",
]

# A URDF with every element urdfdom parses: materials, visuals of each shape, collisions, limits, dynamics,
# safety controller, calibration and a mimic joint.
RICH = """<robot name="rich">
  <material name="blue"><color rgba="0 0 1 1"/></material>
  <material name="skin"><texture filename="skin.png"/></material>
  <link name="base"><visual><origin xyz="0 0 0.1" rpy="0 0 0"/><geometry><box size="0.2 0.2 0.2"/></geometry>
    <material name="blue"/></visual></link>
  <link name="arm"><inertial><origin xyz="0 0 -0.25" rpy="0 0.1 0"/><mass value="1.5"/>
    <inertia ixx="0.03" ixy="0" ixz="0.001" iyy="0.03" iyz="0" izz="0.002"/></inertial>
    <visual><geometry><cylinder radius="0.03" length="0.5"/></geometry><material name="red">
      <color rgba="1 0 0 1"/></material></visual>
    <collision><origin xyz="0 0 -0.25"/><geometry><sphere radius="0.05"/></geometry></collision></link>
  <link name="hand"><inertial><mass value="0.5"/><inertia ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0"
    izz="0.001"/></inertial><visual><geometry><mesh filename="hand.stl" scale="1 1 1"/></geometry></visual></link>
  <link name="finger"><inertial><origin xyz="0.02 0 0"/><mass value="0.1"/><inertia ixx="1e-5" ixy="0" ixz="0"
    iyy="1e-5" iyz="0" izz="1e-5"/></inertial></link>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="arm"/><origin xyz="0 0 0.2" rpy="0 0 0"/>
    <axis xyz="0 1 0"/><limit lower="-2" upper="2" effort="30" velocity="5"/><dynamics damping="0.1" friction="0"/>
    <safety_controller soft_lower_limit="-1.9" soft_upper_limit="1.9" k_position="10" k_velocity="5"/>
    <calibration rising="0.0"/></joint>
  <joint name="wrist" type="continuous"><parent link="arm"/><child link="hand"/><origin xyz="0 0 -0.5"/>
    <axis xyz="0 0 1"/><limit effort="5" velocity="10"/></joint>
  <joint name="finger_joint" type="prismatic"><parent link="hand"/><child link="finger"/><origin xyz="0 0 -0.05"/>
    <axis xyz="1 0 0"/><limit lower="0" upper="0.04" effort="10" velocity="0.1"/>
    <mimic joint="wrist" multiplier="0.01" offset="0.02"/></joint>
</robot>"""


def _urdf_bases() -> dict[str, str]:
    return {
        "rich": RICH,
        "cartpole": Path(bundled_urdf("cartpole")).read_text(),
        "fourbar": Path(bundled_urdf("fourbar")).read_text(),
        "ur5": example_robot_urdf("ur5"),
    }


# ---- outcome bookkeeping -------------------------------------------------------------------------------
class Outcomes:
    def __init__(self):
        self.table: Counter = Counter()
        self.by_operator: Counter = Counter()  # (mutation operator, outcome)
        self.failures: list[str] = []

    def record(self, kind: str, case: str, ok: bool, detail: str = "") -> None:
        self.table[kind] += 1
        self.by_operator[(case.split("/")[-1].split()[-1], kind)] += 1
        if not ok:
            self.failures.append(f"{case}: {kind}: {detail}")

    def check(self, category: str) -> None:
        """Publish the counts in TABLES, then fail with the first failures, if any."""
        TABLES[category], TABLES[category + " by operator"] = dict(self.table), dict(self.by_operator)
        assert not self.failures, (
            f"{len(self.failures)} of {sum(self.table.values())} cases failed "
            f"({dict(self.table)}):\n" + "\n".join(self.failures[:25])
        )


def _names_something(msg: str, names: set[str], path: str | None = None) -> bool:
    """The message names an element, a key or a place: a quoted name from the input, a <tag>, a line, or the
    file and the byte."""
    return (
        any(f"'{n}'" in msg or f"[{n!r}" in msg for n in names)
        or re.search(r"<[!\w]", msg) is not None
        or re.search(r"\bline \d+", msg) is not None
        or (path is not None and path in msg and re.search(r"\bbyte \d+", msg) is not None)
    )


# ---- URDF -----------------------------------------------------------------------------------------------
def _mutate_urdf(rng: np.random.Generator, xml: str) -> tuple[str, str | bytes]:
    """(operator name, mutated XML text — or raw bytes for the encoding mutation)."""
    root = ET.fromstring(xml)
    elements = [e for e in root.iter() if e is not root]
    op = rng.choice(
        [
            "number",
            "number",
            "number",
            "vector",
            "vector",
            "drop_attr",
            "drop_elem",
            "dup",
            "ref",
            "type",
            "unknown",
            "mimic",
            "truncate",
            "bytes",
            "entity",
            "inertia",
            "root",
        ]
    )
    if op in ("number", "vector"):
        cands = []
        for e in root.iter():
            for k, v in e.attrib.items():
                parts = v.split()
                if all(re.fullmatch(r"[-+.\deE]+", p) for p in parts) and parts:
                    if (len(parts) == 1) == (op == "number"):
                        cands.append((e, k))
        e, k = cands[rng.integers(len(cands))]
        pool = HOSTILE_NUMBERS if op == "number" else HOSTILE_VECTORS
        e.set(k, pool[rng.integers(len(pool))])
    elif op == "drop_attr":
        e = [e for e in elements if e.attrib][rng.integers(len([e for e in elements if e.attrib]))]
        del e.attrib[list(e.attrib)[rng.integers(len(e.attrib))]]
    elif op == "drop_elem":
        e = elements[rng.integers(len(elements))]
        for parent in root.iter():
            if e in list(parent):
                parent.remove(e)
                break
    elif op == "dup":
        e = [e for e in root if e.tag in ("link", "joint", "material")][
            rng.integers(len(root)) % len([e for e in root if e.tag in ("link", "joint", "material")])
        ]
        root.append(copy.deepcopy(e))
    elif op == "ref":
        refs = [e for e in root.iter() if e.tag in ("parent", "child")]
        links = [lk.get("name") for lk in root.findall("link")] + ["ghost", ""]
        refs[rng.integers(len(refs))].set("link", links[rng.integers(len(links))])
    elif op == "type":
        joints = root.findall("joint")
        types = ["revolute", "continuous", "prismatic", "fixed", "floating", "planar", "ball", "", "REVOLUTE"]
        joints[rng.integers(len(joints))].set("type", types[rng.integers(len(types))])
    elif op == "unknown":
        e = elements[rng.integers(len(elements))]
        ET.SubElement(e, "gazebo_extension", reference="x", value="1_0")
    elif op == "mimic":
        joints = root.findall("joint")
        j = joints[rng.integers(len(joints))]
        names = [x.get("name") for x in joints] + ["nowhere"]
        for m in j.findall("mimic"):
            j.remove(m)
        ET.SubElement(
            j, "mimic", joint=names[rng.integers(len(names))], multiplier=["1", "-0.5", "abc", "1e300"][rng.integers(4)]
        )
    elif op == "inertia":
        inertias = root.findall("link/inertial/inertia")
        if inertias:
            e = inertias[rng.integers(len(inertias))]
            e.set(["ixx", "iyy", "izz", "ixy"][rng.integers(4)], ["10", "-0.01", "0", "1e11"][rng.integers(4)])
    elif op == "root":
        root.tag = ["sdf", "Robot", "robot"][rng.integers(3)]
    text = ET.tostring(root, encoding="unicode")
    if op == "truncate":
        text = xml[: int(rng.integers(1, len(xml)))]
    elif op == "bytes":
        raw = xml.encode()
        at = int(rng.integers(len(raw)))
        return op, raw[:at] + bytes([0xFF, 0xC3, 0x28][: int(rng.integers(1, 4))]) + raw[at:]
    elif op == "entity":
        text = '<?xml version="1.0"?><!DOCTYPE robot [<!ENTITY m "1.0">]>' + text.replace('value="', 'value="&m;', 1)
    return op, text


def _pinocchio_refuses(text: str, capfd) -> tuple[bool, float | None]:
    """(urdfdom refused or logged an error, total mass of the bodies Pinocchio built or None)."""
    capfd.readouterr()
    try:
        model = pin.buildModelFromXML(text)
    except (RuntimeError, ValueError):
        capfd.readouterr()
        return True, None
    logged = "Error" in capfd.readouterr().err
    return logged, sum(b.mass for b in model.inertias)


def test_urdf_mutations(tmp_path, capfd):
    rng = np.random.default_rng(SEED)
    bases = _urdf_bases()
    out = Outcomes()
    for i in range(N_URDF):
        base = list(bases)[i % len(bases)]
        op, mutated = _mutate_urdf(rng, bases[base])
        case = f"urdf#{i} {base}/{op}"
        src: str = mutated if isinstance(mutated, str) else str(tmp_path / f"case{i}.urdf")
        if isinstance(mutated, bytes):
            Path(src).write_bytes(mutated)
        names = set(re.findall(r'name="([^"]*)"', bases[base]))
        try:
            robot = load_robot(src)
        except URDFError as e:
            msg = str(e)
            ok = (
                _names_something(msg, names, src)
                and "does not contain a valid URDF" not in msg
                and "Pinocchio could not build" not in msg
            )
            out.record("URDFError", case, ok, msg)
            continue
        except Exception as e:  # noqa: BLE001 — the point: nothing generic may escape
            out.record(f"generic {type(e).__name__}", case, False, str(e)[:300])
            continue
        if isinstance(mutated, bytes):
            out.record("valid", case, False, "non-UTF-8 file accepted")
            continue
        refused, mass = _pinocchio_refuses(mutated, capfd)
        same_mass = mass is not None and abs(mass - robot.total_mass) <= 1e-9 * max(1.0, mass)
        out.record(
            "valid", case, not refused and same_mass, f"Pinocchio refused={refused}, mass {mass} vs {robot.total_mass}"
        )
    out.check("URDF")
    assert out.table["valid"] >= 20 and out.table["URDFError"] >= 100  # both outcomes are exercised


# ---- YAML text mutations shared by the system and the task files ------------------------------------------
def _leaves(d, path=()):
    if isinstance(d, dict):
        for k, v in d.items():
            yield from _leaves(v, path + (k,))
    elif isinstance(d, list):
        for i, v in enumerate(d):
            yield from _leaves(v, path + (i,))
    yield path


def _set_path(d, path, value):
    for p in path[:-1]:
        d = d[p]
    d[path[-1]] = value


def _mutate_yaml(rng: np.random.Generator, text: str, protected: tuple = ()) -> tuple[str, str | bytes]:
    data = load_yaml(text)
    op = rng.choice(
        [
            "value",
            "value",
            "value",
            "value",
            "drop",
            "unknown",
            "truncate",
            "tab",
            "duplicate",
            "bytes",
            "deep",
            "alias_bomb",
            "wrong_type",
        ]
    )
    if op in ("value", "drop", "wrong_type"):
        paths = [p for p in _leaves(data) if p and p[0] not in protected]
        path = paths[rng.integers(len(paths))]
        if op == "drop":
            parent = data
            for p in path[:-1]:
                parent = parent[p]
            del parent[path[-1]]
            return op, yaml.safe_dump(data, sort_keys=False)
        if op == "wrong_type":
            _set_path(data, path, [None, {"x": 1}, [1, 2, 3], "text", True][rng.integers(5)])
            return op, yaml.safe_dump(data, sort_keys=False)
        marker = "@@HOSTILE@@"  # dumped quoted; replaced, quotes included, by the raw hostile text
        _set_path(data, path, marker)
        dumped = yaml.safe_dump(data, sort_keys=False, default_flow_style=True, width=10_000)
        assert f"'{marker}'" in dumped
        return op, dumped.replace(f"'{marker}'", HOSTILE_YAML[rng.integers(len(HOSTILE_YAML))])
    if op == "unknown":
        return op, text + "\nsurprise_key: 1\n"
    if op == "truncate":
        return op, text[: int(rng.integers(1, len(text)))]
    if op == "tab":
        return op, text.replace("\n", "\n\t", 1)
    if op == "duplicate":
        first = next(ln for ln in text.splitlines() if re.match(r"^\w", ln))
        return op, text + "\n" + first + "\n"
    if op == "bytes":
        raw = text.encode()
        at = int(rng.integers(len(raw)))
        return op, raw[:at] + b"\xff\xfe" + raw[at:]
    if op == "deep":
        return op, "gravity: " + "[" * 3000 + "]" * 3000 + "\n"
    return (
        op,
        "a: &a [1]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b]\n"
        "d: [*c, *c, *c, *c, *c, *c, *c, *c]\n",
    )


def _system_bases() -> dict[str, tuple[str, str]]:
    rich = (
        "name: rich_acrobot\nfloating_base: false\ngravity: [0, 0, -9.81]\ninertia_policy: strict\n"
        "actuated:\n  - {joint: elbow, effort_limit: 5.0}\ndamping: {shoulder: 0.1, elbow: 0.05}\n"
        "prescribed: []\nconstraints:\n"
        "  - {type: distance, link_a: lower_link, point_a: [0, 0, -1], link_b: world, point_b: [0, 0, 0],"
        " distance: 1.5}\n"
    )
    return {
        "pendulum": (bundled_urdf("pendulum"), Path(bundled_config("pendulum")).read_text()),
        "acrobot": (bundled_urdf("double_pendulum"), Path(bundled_config("acrobot")).read_text()),
        "fourbar": (bundled_urdf("fourbar"), Path(bundled_config("fourbar")).read_text()),
        "rich": (bundled_urdf("double_pendulum"), rich),
    }


SYSTEM_KEYS = {
    "gravity",
    "actuated",
    "damping",
    "prescribed",
    "constraints",
    "name",
    "floating_base",
    "inertia_policy",
    "system YAML",
    "joint '",
    "link '",
    "unknown key",
    "mass_scale",
}


def _yaml_cases(rng, texts: dict[str, str], n: int, tmp_path: Path, kind: str, protected: tuple = ()):
    """(case label, base name, mutated YAML text — or the path of a file holding mutated bytes) × n."""
    for i in range(n):
        base = list(texts)[i % len(texts)]
        op, mutated = _mutate_yaml(rng, texts[base], protected)
        if isinstance(mutated, bytes):
            src = tmp_path / f"{kind}{i}.yaml"
            src.write_bytes(mutated)
            mutated = str(src)
        yield f"{kind}#{i} {base}/{op}", base, op, mutated


def test_system_yaml_mutations(tmp_path):
    bases = _system_bases()
    out = Outcomes()
    texts = {name: text for name, (_, text) in bases.items()}
    for case, base, op, mutated in _yaml_cases(np.random.default_rng(SEED + 1), texts, N_SYSTEM, tmp_path, "system"):
        urdf = bases[base][0]
        try:
            load_robot(urdf, mutated)
        except SystemConfigError as e:
            out.record("SystemConfigError", case, any(k in str(e) for k in SYSTEM_KEYS), str(e))
        except URDFError as e:  # e.g. a constraint making the model singular names its joint
            out.record("URDFError", case, "joint '" in str(e) or "link '" in str(e), str(e))
        except Exception as e:  # noqa: BLE001
            out.record(f"generic {type(e).__name__}", case, False, str(e)[:300])
        else:
            out.record("valid", case, op not in ("bytes", "deep"), "a non-UTF-8 or too deep file accepted")
    out.check("system YAML")
    assert out.table["valid"] >= 5 and out.table["SystemConfigError"] >= 50


TASK_KEYS = {
    "name",
    "model",
    "dt",
    "horizon",
    "start",
    "goal",
    "reference",
    "weights",
    "input_limits",
    "optimizer",
    "lqr",
    "hold",
    "initial_guess",
    "task YAML",
    "task file",
    "task",
}


def test_task_yaml_mutations(tmp_path, pendulum_vi):
    rng = np.random.default_rng(SEED + 2)
    bases = {
        n: (share_dir() / "config" / f"{n}.yaml").read_text()
        for n in ("task_pendulum_swingup", "task_pendulum_swingup_bounded")
    }
    out = Outcomes()
    for case, _, op, mutated in _yaml_cases(rng, bases, N_TASK, tmp_path, "task", protected=("model",)):
        try:
            task = load_task(mutated)
            # resolved against the pendulum as the pipeline does before optimizing (cheap: no solve)
            x0 = start_state(task, pendulum_vi)
            input_limits(task, pendulum_vi)
            reference_trajectory(task, pendulum_vi, x0)
            for group in ("weights", "lqr", "hold"):
                for w, n in (("Q", 2), ("R", 1), ("Qf", 2)):
                    if not (group == "hold" and w == "Qf"):
                        task.weight(w, group, n, 1)
        except TaskError as e:
            out.record("TaskError", case, any(k in str(e) for k in TASK_KEYS), str(e))
        except Exception as e:  # noqa: BLE001
            out.record(f"generic {type(e).__name__}", case, False, str(e)[:300])
        else:
            out.record(
                "valid",
                case,
                op not in ("bytes", "deep") and bool(np.all(np.isfinite(x0))),
                "a non-UTF-8 or too deep file accepted, or a non-finite start",
            )
    out.check("task YAML")
    assert out.table["valid"] >= 5 and out.table["TaskError"] >= 50


# ---- plan files -------------------------------------------------------------------------------------------
def _plan_fields(plan: Plan) -> dict:
    meta = dict(
        dt=plan.dt,
        model_name=plan.model_name,
        model_hash=plan.model_hash,
        joint_names=plan.joint_names,
        input_names=plan.input_names,
        weights=plan.weights,
        converged=plan.converged,
    )
    return dict(times=plan.times, X=plan.X, U=plan.U, K=plan.K, meta=json.dumps(meta))


HOSTILE_JSON = ["abc", -1, None, [], {}, float("inf"), float("nan"), True, "x" * 1000, 1e308, [["a"]], 0, -0.0]


def _mutate_plan(rng: np.random.Generator, plan: Plan, path: Path) -> str:
    fields = _plan_fields(plan)
    op = rng.choice(
        ["flip", "flip", "truncate", "meta", "meta", "nan", "shape", "dtype", "missing", "extra", "times", "garbage"]
    )
    if op == "meta":
        meta = json.loads(fields["meta"])
        key = list(meta)[rng.integers(len(meta))]
        meta[key] = HOSTILE_JSON[rng.integers(len(HOSTILE_JSON))]
        fields["meta"] = json.dumps(meta)
    elif op == "nan":
        name = ["X", "U", "K", "times"][rng.integers(4)]
        a = np.array(fields[name], float)
        a.flat[rng.integers(a.size)] = [np.nan, np.inf, -np.inf][rng.integers(3)]
        fields[name] = a
    elif op == "shape":
        name = ["X", "U", "K", "times"][rng.integers(4)]
        fields[name] = np.asarray(fields[name])[:-1]
    elif op == "dtype":
        name = ["X", "U", "K", "times", "meta"][rng.integers(5)]
        fields[name] = [
            np.asarray(fields[name]).astype(np.float32) if name != "meta" else np.zeros(2),
            np.array(["a", "b"]),
            np.zeros(3, complex),
            np.array([object()], dtype=object),
        ][rng.integers(4)]
    elif op == "missing":
        fields.pop(["X", "U", "K", "times", "meta"][rng.integers(5)])
    elif op == "extra":
        fields["notes"] = np.arange(3.0)
    elif op == "times":
        t = np.array(fields["times"])
        t[rng.integers(1, len(t))] += [0.05, -0.2, 1e-3][rng.integers(3)]
        fields["times"] = t
    np.savez(path, **fields)
    raw = path.read_bytes()
    if op == "flip":
        data = bytearray(raw)
        for _ in range(int(rng.integers(1, 9))):
            data[rng.integers(len(data))] ^= 1 << int(rng.integers(8))
        path.write_bytes(bytes(data))
    elif op == "truncate":
        path.write_bytes(raw[: int(rng.integers(0, len(raw)))])
    elif op == "garbage":
        path.write_bytes(rng.bytes(int(rng.integers(0, 3000))))
    return op


def test_plan_file_mutations(tmp_path, pendulum_vi):
    from test_ros_tracking import _hold_upright_plan

    rng = np.random.default_rng(SEED + 3)
    plan = _hold_upright_plan(pendulum_vi, 30)
    out = Outcomes()
    for i in range(N_PLAN):
        path = tmp_path / f"plan{i}.npz"
        op = _mutate_plan(rng, plan, path)
        case = f"plan#{i} /{op}"
        try:
            loaded = Plan.load(str(path))
        except PlanFileError as e:
            out.record("PlanFileError", case, str(path) in str(e) and len(str(e)) > len(str(path)) + 3, str(e))
        except Exception as e:  # noqa: BLE001
            out.record(f"generic {type(e).__name__}", case, False, str(e)[:300])
        else:
            steps = np.diff(loaded.times)
            ok = (
                all(np.all(np.isfinite(a)) for a in (loaded.X, loaded.U, loaded.K, loaded.times))
                and np.allclose(steps, loaded.dt)
                and loaded.dt > 0
            )
            out.record("valid", case, ok, "invalid plan accepted")
    out.check("plan file")
    assert out.table["PlanFileError"] >= 50


def test_zip_bombs_and_pickles_are_not_unpacked(tmp_path):
    """Two mutations the random ones rarely hit: a member declaring 10^12 doubles and a pickled object array."""
    bomb = tmp_path / "bomb.npz"
    with zipfile.ZipFile(bomb, "w") as z:
        header = b"{'descr': '<f8', 'fortran_order': False, 'shape': (1000000, 1000000), }"
        z.writestr("times.npy", b"\x93NUMPY\x01\x00" + (len(header) + 1).to_bytes(2, "little") + header + b"\n")
    with pytest.raises(PlanFileError, match="times"):
        Plan.load(str(bomb))
