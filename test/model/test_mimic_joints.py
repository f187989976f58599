"""URDF ``<mimic>`` (model.robot): a joint that mimics another becomes a joints constraint q_j − a·q_m = b that the
midpoint VI keeps along a swing; a joint that mimics itself is refused by name."""

import numpy as np
import pytest

from vi_control.integrators.midpoint import MidpointVI
from vi_control.model import URDFError, load_robot

LINKS = "".join(
    f'<link name="{n}"><inertial><origin xyz="0 0 -0.5"/><mass value="1"/>'
    f'<inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.01"/></inertial></link>'
    for n in ("b", "c")
)


def _urdf(tmp_path, mimicked: str) -> str:
    joint = (
        '<joint name="{}" type="continuous"><parent link="{}"/><child link="{}"/><origin xyz="0 0 {}"/>'
        '<axis xyz="0 1 0"/><limit effort="1" velocity="1"/>{}</joint>'
    )
    text = (
        f'<robot name="t"><link name="a"/>{LINKS}'
        + joint.format("j1", "a", "b", 0.0, "")
        + joint.format("j2", "b", "c", -1.0, f'<mimic joint="{mimicked}" multiplier="2" offset="0.1"/>')
        + "</robot>"
    )
    path = tmp_path / f"mimic_{mimicked}.urdf"
    path.write_text(text)
    return str(path)


def test_a_mimic_joint_is_held_to_its_leader_along_a_swing(tmp_path):
    robot = load_robot(_urdf(tmp_path, "j1"))
    vi = MidpointVI(robot, 0.01)
    i1, i2 = robot.joint_index("j1"), robot.joint_index("j2")
    q = np.zeros(vi.nq)
    q[i1], q[i2] = 0.4, 2 * 0.4 + 0.1
    X = vi.simulate(vi.state_from_configurations(q, q), np.zeros((100, vi.nu)))[0]
    gap = X[:, i2] - (2 * X[:, i1] + 0.1)
    assert np.abs(gap).max() < 1e-9 and np.ptp(X[:, i1]) > 0.1  # (it swings, and the mimic follows)


def test_a_joint_that_mimics_itself_is_refused(tmp_path):
    with pytest.raises(URDFError, match=r"joint 'j2' <mimic>: a joint cannot mimic itself"):
        load_robot(_urdf(tmp_path, "j2"))


def test_a_start_off_the_coupling_is_named_at_the_tolerances_boundary(tmp_path):
    """configuration_violation: |h| ≤ tol·(1 + |q|∞) passes, just beyond it names the constraint and the bound."""
    vi = MidpointVI(load_robot(_urdf(tmp_path, "j1")), 0.01)
    i1, i2 = vi.robot.joint_index("j1"), vi.robot.joint_index("j2")
    q = np.zeros(vi.nq)
    q[i1] = 0.4
    bound = 1e-6 * (1.0 + 0.9)  # (|q|∞ = q_j2 = 0.9)
    for off, named in ((0.9 * bound, False), (1.1 * bound, True)):
        q[i2] = 2 * 0.4 + 0.1 + off
        why = vi.configuration_violation(q)
        assert (why is not None) == named, (off, why)
    assert "joints ['j2', 'j1']" in why and f"> {bound:.3g}" in why
