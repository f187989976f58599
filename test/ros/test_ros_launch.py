"""Launch files and parameter files are consistent with the nodes, checked statically (launch_ros is absent here)."""

import ast
import importlib
import importlib.util
from pathlib import Path

import numpy as np
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
LAUNCH_FILES = sorted((ROOT / "launch").glob("*.launch.py"))


def _console_scripts() -> dict[str, str]:
    tree = ast.parse((ROOT / "setup.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values):
                if isinstance(k, ast.Constant) and k.value == "console_scripts":
                    entries = [ast.literal_eval(e) for e in v.elts]
                    return {e.split("=")[0].strip(): e.split("=")[1].strip() for e in entries}
    raise AssertionError("setup.py declares no console_scripts")


def _table(module: str) -> dict:
    pytest.importorskip("rclpy")
    return importlib.import_module(module).PARAMETERS


def _declared(module: str) -> set[str]:
    from vi_control.ros.param_files import RCLPY_PARAMETERS

    return set(_table(module)) | set(RCLPY_PARAMETERS)


def _launched_nodes(path: Path) -> list[dict]:
    """Every launch_ros Node(...) call: executable, name, parameter files and inline parameter keys."""
    out = []
    tree = ast.parse(path.read_text())
    named = {
        a.targets[0].id: a.value
        for a in ast.walk(tree)
        if isinstance(a, ast.Assign) and isinstance(a.targets[0], ast.Name) and isinstance(a.value, ast.Dict)
    }

    def dict_keys(d: ast.Dict) -> list[str]:  # literal keys, and those of a `**name` unpacked into it
        return [
            k
            for key, v in zip(d.keys, d.values)
            for k in ([ast.literal_eval(key)] if key is not None else dict_keys(named[v.id]))
        ]

    for call in ast.walk(tree):
        if not (isinstance(call, ast.Call) and getattr(call.func, "id", getattr(call.func, "attr", None)) == "Node"):
            continue
        kw = {k.arg: k.value for k in call.keywords}
        files, keys = [], []
        for item in getattr(kw.get("parameters"), "elts", []):
            if isinstance(item, ast.Dict):
                keys += dict_keys(item)
            else:
                files += [
                    c.value
                    for c in ast.walk(item)
                    if isinstance(c, ast.Constant) and isinstance(c.value, str) and c.value.endswith(".yaml")
                ]
        out.append(
            dict(
                executable=ast.literal_eval(kw["executable"]),
                name=ast.literal_eval(kw["name"]),
                package=ast.literal_eval(kw["package"]),
                files=files,
                keys=keys,
            )
        )
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
        # Every node is told whether it runs on simulation time
        assert "use_sim_time" in n["keys"], f"{path.name}: {n['name']} gets no use_sim_time"


@pytest.mark.parametrize("path", sorted((ROOT / "config").glob("ros_*.yaml")), ids=lambda p: p.name)
def test_every_ros_parameter_file_matches_its_node(path):
    """Each section is one of the nodes, in any namespace, and the node would take every value: declared, of the
    declared type (500 for a double is refused: rclpy converts nothing), within its range and choices."""
    pytest.importorskip("rclpy")
    from vi_control.ros.param_files import NODE_MODULES, parameter_file_errors

    data = yaml.safe_load(path.read_text())
    for key in data:
        assert key.removeprefix("/**/") in NODE_MODULES, f"{path.name}: unknown node {key}"
    errors = parameter_file_errors(data)
    assert not errors, f"{path.name}:\n" + "\n".join(errors)


def test_gazebo_effort_controller_config_matches_the_controller_defaults():
    """docs/guides/on_your_robot.md: gz_ros2_control's controller_manager runs a JointGroupEffortController named as
    the controller node's default controller_name, on the bundled pendulum's actuated joint."""
    from vi_control.model.bundled import load_bundled

    cfg = yaml.safe_load((ROOT / "config" / "gz_effort_controllers.yaml").read_text())
    name = _table("vi_control.ros.controller_node")["controller_name"].default
    manager = cfg["controller_manager"]["ros__parameters"]
    assert manager[name]["type"] == "effort_controllers/JointGroupEffortController"
    assert manager["joint_state_broadcaster"]["type"] == "joint_state_broadcaster/JointStateBroadcaster"
    assert manager["use_sim_time"] is True
    params = cfg[name]["ros__parameters"]
    assert params["joints"] == list(load_bundled("pendulum").actuated)
    assert params.get("interface_name", "effort") == "effort"


def test_launch_descriptions_build_with_launch_ros():
    pytest.importorskip("launch_ros")
    for path in LAUNCH_FILES:
        spec = importlib.util.spec_from_file_location(path.stem.replace(".", "_"), path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        assert mod.generate_launch_description().entities


def test_hardware_launch_defaults_fit_the_bundled_limits():
    """The default task of hardware.launch.py plans within the default model's effort limits."""
    from vi_control.model.spec import ModelSpec
    from vi_control.planning import load_task

    defaults = {
        ast.literal_eval(c.args[0]): ast.literal_eval(kw.value)
        for c in ast.walk(ast.parse((ROOT / "launch" / "hardware.launch.py").read_text()))
        if isinstance(c, ast.Call) and getattr(c.func, "id", "") == "DeclareLaunchArgument"
        for kw in c.keywords
        if kw.arg == "default_value"
    }
    task = load_task(defaults["task"])
    robot = ModelSpec.parse(defaults["model"]).load()
    assert task.model_spec.load().hash == robot.hash  # the task is about the launched model
    limits = robot.effort_limits if isinstance(task.input_limits, str) else task.input_limits
    assert task.input_limits != "none" and np.all(np.asarray(limits) <= robot.effort_limits)


def test_the_hardware_planner_plans_within_the_urdf_velocity_limits_and_its_task_fits_them():
    """On a robot the URDF velocity limits are the hardware's (past them a Franka stops with a reflex): the hardware
    planner YAML verifies plans at 1 × them, not the simulator default's 1.5 (the controller's bound on measured
    states, noise included) — a goal asked to take 0.3 s plans the panda's joint 4 at 1.36 × its limit
    (test_planning_requests). Its start-up task still fits: the plan it makes is within that factor."""
    from vi_control.planning import load_task, make_system, plan_task
    from vi_control.planning.limits import plan_limit_violation
    from vi_control.ros.planner_parameters import PARAMETERS

    (node,) = yaml.safe_load((ROOT / "config" / "ros_hardware_planner.yaml").read_text()).values()
    p = node["ros__parameters"]
    lo = PARAMETERS["velocity_limit_factor"].range[0]
    assert p["velocity_limit_factor"] == lo == 1.0  # (the smallest factor the parameter takes)
    task = load_task(p["task"])
    vi = make_system(task)
    plan, res = plan_task(vi, task)
    assert res.converged and plan_limit_violation(vi, plan.X, plan.U, velocity_limit_factor=1.0) is None


@pytest.mark.parametrize(
    "controller_yaml, planner_yaml",
    [("ros_controller.yaml", "ros_planner.yaml"), ("ros_hardware_controller.yaml", "ros_hardware_planner.yaml")],
)
def test_shipped_controller_dt_is_its_planners_task_dt(controller_yaml, planner_yaml):
    """A controller whose dt differs from its plans' builds a system when the first plan arrives (tens of ms under
    load: a plan from a held robot, start_delay = 0.05 s ahead, was entered a step late in CI). The YAMLs launched
    together agree, and the planner's and the hardware launch's default task are the same."""
    from vi_control.planning import load_task

    def params(name):
        (node,) = yaml.safe_load((ROOT / "config" / name).read_text()).values()
        return node["ros__parameters"]

    task = params(planner_yaml)["task"]
    assert params(controller_yaml)["dt"] == load_task(task).dt
    if controller_yaml == "ros_hardware_controller.yaml":
        launch = (ROOT / "launch" / "hardware.launch.py").read_text()
        assert f'default_value="{task}"' in launch
