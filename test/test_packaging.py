"""The ament_python package installs: plain `pip install .` and `colcon build` (issue 2, item 1)."""

import importlib
import importlib.metadata
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DATA_DIRS = {"urdf": "*.urdf", "config": "*.yaml", "launch": "*.py"}


def _assert_share(share: Path) -> None:
    assert (share / "package.xml").is_file()
    for d, pattern in DATA_DIRS.items():
        want = sorted(p.name for p in (REPO / d).glob(pattern))
        assert want and sorted(p.name for p in (share / d).glob(pattern)) == want, d


def test_package_xml_is_format_3_with_real_dependencies():
    root = ET.parse(REPO / "package.xml").getroot()
    assert root.get("format") == "3" and root.findtext("name") == "vi_control"
    deps = {e.text for e in root.findall("exec_depend")}
    assert {"rclpy", "sensor_msgs", "std_msgs", "trajectory_msgs", "std_srvs", "pinocchio"} <= deps
    assert root.find("export/build_type").text == "ament_python"
    assert (REPO / "resource" / "vi_control").is_file()


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
    res = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--ignore-installed",
                          "--prefix", str(prefix), str(REPO)], capture_output=True, text=True, timeout=600)
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
    for c_source in ("mechanics/csrc/dense_lu.c", "mechanics/csrc/newton_driver.c", "integrators/csrc/drnea_step.c",
                     "integrators/csrc/rdp_driver.c", "control/csrc/lqr_kernel.c", "planning/csrc/ddp_kernel.c",
                     "planning/csrc/ddp_loop.c"):
        assert (site / "vi_control" / c_source).is_file(), c_source
    env = dict(os.environ, PYTHONPATH=str(site), AMENT_PREFIX_PATH=str(prefix))
    code = "from vi_control.model.bundled import bundled_urdf; print(bundled_urdf('pendulum'))"
    out = subprocess.run([sys.executable, "-c", code],
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert Path(out.stdout.strip()) == share / "urdf" / "pendulum.urdf"


def test_colcon_build_installs_the_ament_python_package(tmp_path):
    colcon = shutil.which("colcon", path=str(Path(sys.executable).parent)) or shutil.which("colcon")
    if colcon is None:
        pytest.skip("colcon is not installed (requirements.txt pins colcon-common-extensions)")
    ws = tmp_path / "ws"
    shutil.copytree(REPO, ws / "src" / "vi_control",
                    ignore=shutil.ignore_patterns(".venv", ".git", "out", "__pycache__", "*.egg-info", "build",
                                                  "install", "log", "results"))
    res = subprocess.run([colcon, "build", "--base-paths", "src"], cwd=ws, capture_output=True, text=True,
                         timeout=600)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    share = ws / "install" / "vi_control" / "share" / "vi_control"
    _assert_share(share)
    # setup.cfg puts the node executables where `ros2 run vi_control <node>` looks for them.
    for script in ("vi_simulator", "vi_planner", "vi_controller"):
        assert (ws / "install" / "vi_control" / "lib" / "vi_control" / script).is_file(), script
