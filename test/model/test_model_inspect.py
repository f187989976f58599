"""The ``vi_inspect`` console script: report contents checked against the loaded model and Pinocchio."""

import re
import subprocess
import sys
from pathlib import Path

import pinocchio as pin
import pytest

from vi_control.model import load_robot
from vi_control.model.bundled import bundled_models, example_robot_urdf, load_bundled
from vi_control.model.inspect import main


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_bundled_fourbar_report(capsys):
    code, out, err = run(capsys, "fourbar")
    robot = load_bundled("fourbar")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0] == "robot: fourbar"
    assert "DOF: 3 (3 dynamic, 0 prescribed)" in out and "root link: ground" in out
    assert "crank_joint (continuous) ground -> crank  axis [0, 1, 0]  limits [-inf, inf]  effort 10" in out
    assert "rocker_tip_joint (fixed) rocker -> rocker_tip" in out
    # Masses: per link as in the URDF, the moving total equals Pinocchio's computeTotalMass.
    assert re.search(r"^  coupler\s+1\.8$", out, re.M)
    moving = float(re.search(r"total ([\d.]+) kg, moving ([\d.]+) kg", out).group(2))
    assert moving == pytest.approx(pin.computeTotalMass(robot.pin_model), rel=1e-6)
    assert re.search(r"^  crank_joint\s+effort limit 10$", out, re.M)
    assert "constraints (2 equations):" in out
    assert "coincident: rocker[0.7, 0, 0] == world[1, 0, 0] along x,z" in out
    assert lines[-1] == f"model hash: {robot.hash}"


@pytest.mark.parametrize("name", ["arm7", "biped5", "cartpole", "acrobot"])
def test_every_joint_and_mass_is_reported(capsys, name):
    code, out, _ = run(capsys, name)
    robot = load_bundled(name)
    assert code == 0
    for j in robot.joints:
        assert f"{j.name} ({j.type}) {j.parent} -> {j.child}" in out
    for n in robot.actuated:
        assert re.search(rf"^  {n}\s+effort limit", out, re.M)
    moving = float(re.search(r"moving ([\d.]+) kg", out).group(1))
    assert moving == pytest.approx(pin.computeTotalMass(robot.pin_model), rel=1e-6)


def test_urdf_path_with_system_and_floating_base(capsys):
    urdf, _ = bundled_models()["double_pendulum"]
    code, out, _ = run(capsys, urdf, "--system", bundled_models()["acrobot"][1])
    assert code == 0 and "inputs: 1 efforts + 0 prescribed positions" in out
    code, out, _ = run(capsys, "erd:panda", "--floating-base")
    robot = load_robot(example_robot_urdf("panda"), floating_base=True)
    assert code == 0 and "DOF: 13 (13 dynamic, 0 prescribed)  [floating base: 6 virtual joints]" in out
    assert "floating_base_rx (continuous) floating_base_link_ry -> panda_link0" in out
    assert out.splitlines()[-1] == f"model hash: {robot.hash}"


@pytest.mark.parametrize(
    "argv, message",
    [
        (["no_such_model"], r"model 'no_such_model' is not a bundled model \(acrobot, .*erd:<name>"),
        (["erd:no_such_robot"], r"unknown example robot 'no_such_robot'"),
        (["acrobot", "--system", "/nonexistent/x.yaml"], r"system YAML file not found"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and re.search(message, err)


def test_bad_model_exits_2(capsys, tmp_path):
    bad = tmp_path / "bad.urdf"
    bad.write_text(
        '<robot name="b"><link name="a"/><link name="b"><inertial><mass value="1"/>'
        '<inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>'
        '<joint name="j" type="planar"><parent link="a"/><child link="b"/></joint></robot>'
    )
    code, out, err = run(capsys, str(bad))
    assert code == 2 and out == ""
    assert (
        err.strip() == f"vi_inspect: error: {bad}: joint 'j' has unsupported type 'planar'; supported: "
        "revolute, continuous, prismatic, fixed"
    )


def _script() -> list[str]:
    exe = Path(sys.executable).with_name("vi_inspect")
    return [str(exe)] if exe.is_file() else [sys.executable, "-m", "vi_control.model.inspect"]


def test_console_script_subprocess(tmp_path):
    ok = subprocess.run([*_script(), "cartpole"], capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0, ok.stderr
    assert "slider (prismatic) rail -> cart  axis [1, 0, 0]  limits [-2, 2]  effort 20" in ok.stdout
    assert f"model hash: {load_bundled('cartpole').hash}" in ok.stdout
    bad = tmp_path / "loop.urdf"
    bad.write_text("<robot name='x'><link name='a'/>")
    res = subprocess.run([*_script(), str(bad)], capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and res.stdout == ""
    assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1
    assert "malformed URDF XML" in res.stderr
