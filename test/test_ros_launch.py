"""Launch files and parameter files are consistent with the nodes, checked statically (launch_ros is absent here)."""

import ast
import importlib
import importlib.util
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
LAUNCH_FILES = sorted((ROOT / "launch").glob("*.launch.py"))
NODE_NAMES = {"vi_simulator": "simulator_node", "vi_planner": "planner_node", "vi_controller": "controller_node"}


def _console_scripts() -> dict[str, str]:
    tree = ast.parse((ROOT / "setup.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values):
                if isinstance(k, ast.Constant) and k.value == "console_scripts":
                    entries = [ast.literal_eval(e) for e in v.elts]
                    return {e.split("=")[0].strip(): e.split("=")[1].strip() for e in entries}
    raise AssertionError("setup.py declares no console_scripts")


def _declared(module: str) -> set[str]:
    pytest.importorskip("rclpy")
    return set(importlib.import_module(module).PARAMETERS)


def _launched_nodes(path: Path) -> list[dict]:
    """Every launch_ros Node(...) call: executable, name, parameter files and inline parameter keys."""
    out = []
    for call in ast.walk(ast.parse(path.read_text())):
        if not (isinstance(call, ast.Call) and getattr(call.func, "id", getattr(call.func, "attr", None)) == "Node"):
            continue
        kw = {k.arg: k.value for k in call.keywords}
        files, keys = [], []
        for item in getattr(kw.get("parameters"), "elts", []):
            if isinstance(item, ast.Dict):
                keys += [ast.literal_eval(k) for k in item.keys]
            else:
                files += [c.value for c in ast.walk(item) if isinstance(c, ast.Constant)
                          and isinstance(c.value, str) and c.value.endswith(".yaml")]
        out.append(dict(executable=ast.literal_eval(kw["executable"]), name=ast.literal_eval(kw["name"]),
                        package=ast.literal_eval(kw["package"]), files=files, keys=keys))
    return out


def test_three_launch_files_exist():
    assert {p.name for p in LAUNCH_FILES} >= {"sim_only.launch.py", "swingup.launch.py", "hardware.launch.py"}


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: p.name)
def test_launch_file_names_real_executables_files_and_parameters(path):
    scripts = _console_scripts()
    nodes = _launched_nodes(path)
    assert nodes, f"{path.name} launches no node"
    for n in nodes:
        assert n["package"] == "vi_control"
        assert n["executable"] in scripts, f"{n['executable']} is not a console script in setup.py"
        module = scripts[n["executable"]].split(":")[0]
        declared = _declared(module)
        assert set(n["keys"]) <= declared, f"undeclared inline parameter(s) {set(n['keys']) - declared}"
        for f in n["files"]:
            cfg = ROOT / "config" / f
            assert cfg.is_file(), f"{path.name} names missing parameter file config/{f}"
            data = yaml.safe_load(cfg.read_text())
            section = data.get(n["name"]) or data.get(f"/**/{n['name']}") or data.get("/**")
            assert section is not None, f"config/{f} has no section for node {n['name']}"
            unknown = set(section["ros__parameters"]) - declared
            assert not unknown, f"config/{f}: parameter(s) {unknown} are not declared by {module}"


@pytest.mark.parametrize("path", sorted((ROOT / "config").glob("ros_*.yaml")), ids=lambda p: p.name)
def test_every_ros_parameter_file_matches_its_node(path):
    data = yaml.safe_load(path.read_text())
    for key, section in data.items():
        node_name = key.removeprefix("/**/")  # "/**/vi_simulator": that node in any namespace
        assert node_name in NODE_NAMES, f"{path.name}: unknown node {node_name}"
        declared = _declared(f"vi_control.ros.{NODE_NAMES[node_name]}")
        assert set(section["ros__parameters"]) <= declared


def test_launch_descriptions_build_with_launch_ros():
    pytest.importorskip("launch_ros")
    for path in LAUNCH_FILES:
        spec = importlib.util.spec_from_file_location(path.stem.replace(".", "_"), path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        assert mod.generate_launch_description().entities
