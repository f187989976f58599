"""The package installs and declares what it needs: plain `pip install .`, `colcon build`, a wheel into a fresh venv
that resolves its own dependencies, package.xml's exec_depends against the code's imports, and setup.py's ranges
against requirements/'s pins."""

import ast
import importlib
import importlib.metadata
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[2]
DATA_DIRS = {"urdf": "*.urdf", "config": "*.yaml", "launch": "*.py"}


def _assert_share(share: Path) -> None:
    assert (share / "package.xml").is_file()
    for d, pattern in DATA_DIRS.items():
        want = sorted(p.name for p in (REPO / d).glob(pattern))
        assert want and sorted(p.name for p in (share / d).glob(pattern)) == want, d


def _package_xml() -> ET.Element:
    return ET.parse(REPO / "package.xml").getroot()


def test_package_xml_is_format_3_ament_python():
    root = _package_xml()
    assert root.get("format") == "3" and root.findtext("name") == "vi_control"
    assert root.find("export/build_type").text == "ament_python"
    assert (REPO / "resource" / "vi_control").is_file()


# Python libraries the code imports that are not ROS packages: the rosdep key package.xml names for each (None: no
# rosdep key, pip-only, an extra of setup.py), and the distribution setup.py declares.
PYTHON_LIBRARIES = {
    "numpy": ("python3-numpy", "numpy"),
    "scipy": ("python3-scipy", "scipy"),
    "yaml": ("python3-yaml", "PyYAML"),
    "matplotlib": ("python3-matplotlib", "matplotlib"),
    "pinocchio": ("pinocchio", "pin"),
    "casadi": ("casadi", "casadi"),
    "PIL": ("python3-pil", "pillow"),
    "ray": (None, "ray"),
    "mujoco": (None, "mujoco"),
    "meshcat": (None, "meshcat"),
    "mcap": (None, "mcap"),
    "mcap_ros2": (None, "mcap-ros2-support"),
}
# Needed at run time without an import: `model: erd:<name>` reads example-robot-data's URDFs from its share/.
DATA_DEPENDENCIES = {"example-robot-data"}


def imported_top_level_modules(paths: list[Path]) -> dict[str, set[str]]:
    """Top-level module → the files importing it (absolute imports only; the standard library and vi_control left
    out), from the syntax trees of ``paths``."""
    found: dict[str, set[str]] = {}
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module]
                if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
                else []
            )
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top != "vi_control":
                    found.setdefault(top, set()).add(str(path.relative_to(REPO)))
    return found


def _run_time_sources() -> list[Path]:
    return sorted((REPO / "vi_control").rglob("*.py")) + sorted((REPO / "launch").glob("*.py"))


def test_package_xml_exec_depends_are_exactly_what_the_code_imports():
    """Every third-party import of vi_control/ and launch/ is in package.xml: a ROS package by its name, a Python
    library by its rosdep key (or, with no key, as an extra of setup.py); and nothing in package.xml is unused."""
    imports = imported_top_level_modules(_run_time_sources())
    assert {"rclpy", "numpy", "pinocchio", "diagnostic_msgs", "launch_ros"} <= set(imports)  # the parser works
    deps = {e.text for e in _package_xml().findall("exec_depend")}
    want = {PYTHON_LIBRARIES[m][0] if m in PYTHON_LIBRARIES else m for m in imports} - {None} | DATA_DEPENDENCIES
    missing = {m: sorted(imports.get(m, [])) for m in sorted(want - deps)}
    assert not missing, (
        f"imported but not in package.xml's exec_depend (a Python library: add it to "
        f"PYTHON_LIBRARIES here with its rosdep key): {missing}"
    )
    assert deps - want == set(), f"package.xml exec_depends nothing imports: {sorted(deps - want)}"
    assert "example-robot-data" not in {e.text for e in _package_xml().findall("test_depend")}


def _setup_requirements() -> tuple[list[Requirement], dict[str, list[Requirement]]]:
    """setup.py's install_requires and extras_require, read from its syntax tree (setup.py itself calls setup())."""
    tree = ast.parse((REPO / "setup.py").read_text())
    values = {
        t.id: ast.literal_eval(n.value)
        for n in tree.body
        if isinstance(n, ast.Assign)
        for t in n.targets
        if isinstance(t, ast.Name) and t.id in ("RUNTIME", "EXTRAS")
    }
    return (
        [Requirement(r) for r in values["RUNTIME"]],
        {k: [Requirement(r) for r in v] for k, v in values["EXTRAS"].items()},
    )


def _pins(name: str) -> dict[str, str]:
    pins = {}
    for line in (REPO / "requirements" / name).read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            req = Requirement(line)
            (spec,) = req.specifier
            assert spec.operator == "==", f"requirements/{name}: {line} is not a pin"
            pins[req.name.lower()] = spec.version
    return pins


def test_setup_py_declares_every_runtime_pin_as_a_range_holding_it():
    runtime, extras = _setup_requirements()
    declared = {r.name.lower(): r for r in runtime + [r for reqs in extras.values() for r in reqs]}
    pins = _pins("runtime.txt") | _pins("ros.txt")
    assert set(declared) == set(pins), f"setup.py vs requirements/: {set(declared) ^ set(pins)}"
    outside = {n: (str(declared[n].specifier), v) for n, v in pins.items() if v not in declared[n].specifier}
    assert not outside, f"pins outside setup.py's range: {outside}"
    # every imported library is installed by `pip install vi_control` or one of its extras
    imported = {
        PYTHON_LIBRARIES[m][1].lower() for m in imported_top_level_modules(_run_time_sources()) if m in PYTHON_LIBRARIES
    }
    assert imported <= set(declared), imported - set(declared)
    core = {PYTHON_LIBRARIES[m][1].lower() for m in ("numpy", "scipy", "yaml", "pinocchio", "casadi")}
    assert core | {"example-robot-data"} <= {r.name.lower() for r in runtime}
    # the venv's requirements.txt takes all the files
    assert {line for line in (REPO / "requirements.txt").read_text().splitlines() if line.startswith("-r")} == {
        "-r requirements/runtime.txt",
        "-r requirements/ros.txt",
        "-r requirements/test.txt",
    }


def _setup_version() -> str:
    """setup.py's version= (read from its syntax tree, not by running it)."""
    tree = ast.parse((REPO / "setup.py").read_text())
    return next(
        k.value.value for n in ast.walk(tree) if isinstance(n, ast.Call) for k in n.keywords if k.arg == "version"
    )


def test_versions_agree():
    version = _setup_version()
    assert _package_xml().findtext("version") == version
    assert f"## [{version}]" in (REPO / "CHANGELOG.md").read_text()
    assert "BSD 3-Clause" in (REPO / "LICENSE").read_text() and _package_xml().findtext("license") == "BSD-3-Clause"


QUICK_START = """
import importlib.metadata, pathlib, sys
import numpy as np
import vi_control as vc
vi = vc.MidpointVI(vc.load_robot("pendulum"), dt=0.1)
x1 = vi.step(np.array([0.2, 0.5]), np.array([0.8]))
assert np.allclose(x1, [0.24713619, 0.36272388], atol=1e-8), x1   # REFERENCE section 1
X = [np.array([0.2, 0.5])]
for _ in range(20):
    X.append(vi.step(X[-1], np.zeros(1)))
print(importlib.metadata.version("vi_control"), pathlib.Path(vc.__file__).parent, vc.load_robot("erd:ur5").nq,
      np.ptp(np.array(X)[:, 0]) > 0.1)
"""


# pip builds a source tree in its own build/ directory. In the repository that directory is shared: two builds at
# once collided there ("File exists: build/bdist.linux-x86_64/wheel/vi_control-….dist-info"), and one in a CI run,
# on one worker, still lost its build/bdist…/urdf directory between creating it and copying the second URDF into it.
# So each test builds its own copy of the sources (7 MB, what a release would ship: no .git, venv, caches or builds).
SOURCE_IGNORE = shutil.ignore_patterns(
    ".git", ".venv", "build", "out", "site", "*.egg-info", "__pycache__", ".vi_cache", ".pytest_cache", ".ruff_cache"
)


def _source_copy(tmp_path: Path) -> Path:
    """A private copy of the repository's sources to build from (``SOURCE_IGNORE``)."""
    src = tmp_path / "src"
    shutil.copytree(REPO, src, ignore=SOURCE_IGNORE, symlinks=True)
    return src


def _wheel_and_fresh_venv(tmp_path: Path) -> tuple[Path, str, dict]:
    """vi_control's wheel built by `pip wheel`, a new venv's python, and an environment without this repository."""
    dist = tmp_path / "dist"
    res = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dist), str(_source_copy(tmp_path))],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    (wheel,) = dist.glob("vi_control-*.whl")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "AMENT_PREFIX_PATH", "VIRTUAL_ENV")}
    return wheel, str(venv / "bin" / "python"), env


def _pip_install(py: str, wheel: Path, env: dict, *options: str) -> subprocess.CompletedProcess:
    # -c: the pins as constraints (they install nothing themselves: what gets installed is what the wheel
    # declares), so the fresh venv gets the tested versions, from the pip cache after the first time.
    return subprocess.run(
        [
            py,
            "-m",
            "pip",
            "install",
            "-q",
            "--disable-pip-version-check",
            *options,
            str(wheel),
            "-c",
            str(REPO / "requirements" / "runtime.txt"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=1200,
    )


def test_wheel_resolves_its_dependencies_in_a_fresh_venv(tmp_path):
    """What `pip install vi_control-*.whl` into a new venv would install, resolved from the package index by pip
    itself (--dry-run --report: the dependencies' metadata, not their wheels): every run-time dependency at its
    tested pin, Pinocchio's C++ libraries with it, and no extra (the install itself and the quick start there:
    test_wheel_installs_into_a_fresh_venv_and_runs_the_quick_start, ~30 s from pip's cache, 80–160 s on a loaded
    machine)."""
    wheel, py, env = _wheel_and_fresh_venv(tmp_path)
    res = _pip_install(py, wheel, env, "--dry-run", "--ignore-installed", "--report", str(tmp_path / "report.json"))
    assert res.returncode == 0, res.stderr[-3000:]
    import json

    installed = {
        i["metadata"]["name"].lower(): i["metadata"]["version"]
        for i in json.loads((tmp_path / "report.json").read_text())["install"]
    }
    pins = _pins("runtime.txt")
    runtime, _ = _setup_requirements()
    assert {r.name.lower(): installed.get(r.name.lower()) for r in runtime} == {
        r.name.lower(): pins[r.name.lower()] for r in runtime
    }
    assert installed["vi_control"] == _setup_version() and {"libpinocchio", "eigenpy"} <= set(installed)
    assert not {"ray", "mujoco", "meshcat", "ros-rclpy"} & set(installed), "an extra was installed without asking"


def test_wheel_installs_into_a_fresh_venv_and_runs_the_quick_start(tmp_path):
    """The wheel installed into a new venv pulls numpy, Pinocchio, CasADi, … from the package index, and the quick
    start runs there, outside the repository: the bundled pendulum's step (REFERENCE §1), a free swing, an
    example-robot-data model."""
    wheel, py, env = _wheel_and_fresh_venv(tmp_path)
    res = _pip_install(py, wheel, env)
    assert res.returncode == 0, res.stderr[-3000:]
    check = subprocess.run([py, "-m", "pip", "check"], capture_output=True, text=True, env=env, timeout=120)
    assert check.returncode == 0, check.stdout
    out = subprocess.run([py, "-c", QUICK_START], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    version, where, ur5_nq, moved = out.stdout.split()
    assert (
        version == _setup_version()
        and Path(where).is_relative_to(tmp_path / "venv")
        and ur5_nq == "6"
        and moved == "True"
    )


def _installed() -> bool:
    importlib.invalidate_caches()
    try:
        importlib.metadata.distribution("vi_control")
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def test_pip_install_puts_package_data_and_scripts_in_the_prefix(tmp_path):
    prefix = tmp_path / "prefix"
    installed_before = _installed()
    # --ignore-installed: without it pip uninstalls the venv's own (editable) vi_control first.
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--ignore-installed",
            "--prefix",
            str(prefix),
            str(_source_copy(tmp_path)),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    if installed_before:
        assert _installed(), "installing into a prefix removed vi_control from the running environment"
    share = prefix / "share" / "vi_control"
    _assert_share(share)
    assert (prefix / "share" / "ament_index" / "resource_index" / "packages" / "vi_control").is_file()
    for script in ("vi_simulator", "vi_planner", "vi_controller", "vi_inspect", "vi_main_job", "vi_sweep"):
        assert (prefix / "bin" / script).is_file(), script
    # The installed copy finds its bundled models through the prefix (AMENT_PREFIX_PATH), not the source tree.
    site = next(prefix.glob("lib/python3*/site-packages"))
    # compiled on first use by the installed copy
    for c_source in (
        "mechanics/csrc/dense_lu.c",
        "mechanics/csrc/dense_mm.c",
        "mechanics/csrc/newton_driver.c",
        "mechanics/csrc/tree_derivatives.c",
        "integrators/csrc/drnea_step.c",
        "integrators/csrc/rdp_driver.c",
        "integrators/csrc/lu_rcond.c",
        "control/csrc/lqr_kernel.c",
        "planning/csrc/ddp_kernel.c",
    ):
        assert (site / "vi_control" / c_source).is_file(), c_source
    env = dict(os.environ, PYTHONPATH=str(site), AMENT_PREFIX_PATH=str(prefix))
    code = "from vi_control.model.bundled import bundled_urdf; print(bundled_urdf('pendulum'))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert Path(out.stdout.strip()) == share / "urdf" / "pendulum.urdf"


def test_colcon_build_installs_the_ament_python_package(tmp_path):
    colcon = shutil.which("colcon", path=str(Path(sys.executable).parent)) or shutil.which("colcon")
    if colcon is None:
        pytest.skip("colcon is not installed (requirements.txt pins colcon-common-extensions)")
    ws = tmp_path / "ws"
    shutil.copytree(
        REPO,
        ws / "src" / "vi_control",
        ignore=shutil.ignore_patterns(
            ".venv", ".git", "out", "__pycache__", "*.egg-info", "build", "install", "log", "results"
        ),
    )
    res = subprocess.run([colcon, "build", "--base-paths", "src"], cwd=ws, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    share = ws / "install" / "vi_control" / "share" / "vi_control"
    _assert_share(share)
    # setup.cfg puts the node executables where `ros2 run vi_control <node>` looks for them.
    for script in ("vi_simulator", "vi_planner", "vi_controller"):
        assert (ws / "install" / "vi_control" / "lib" / "vi_control" / script).is_file(), script
