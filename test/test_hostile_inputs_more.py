"""Bug hunt (hostile inputs and unfamiliar robots): each test here failed on the code before its fix.

Each case is a thing a user would do — step a robot of example-robot-data from its neutral pose, pass the wrong
state to a Legendre transform — that ended as a wrong number or an error that was not true. Every expectation is
independent of the code under test: Newton's own residual at the returned root, the sizes the interface states.
"""

import numpy as np
import pytest

import vi_control as vc

# Two point masses in a horizontal plane: the lower link's mass sits on the shoulder axis at elbow = 0, so M(q) is
# singular there (the shoulder moves no inertia) and nearly so beside it, while the damping (c/2 on the diagonal
# of M_{k+1}) keeps the step's Newton matrix regular: the one-step map exists everywhere.
FOLDED = """<?xml version="1.0"?>
<robot name="folded">
<link name="base"/>
<link name="upper"><inertial><mass value="0.1"/><inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/>
</inertial></link>
<joint name="shoulder" type="revolute"><parent link="base"/><child link="upper"/><axis xyz="0 0 1"/>
<limit effort="5" velocity="10" lower="-3" upper="3"/><dynamics damping="1"/></joint>
<link name="lower"><inertial><origin xyz="-0.5 0 0"/><mass value="1.0"/>
<inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial></link>
<joint name="elbow" type="revolute"><parent link="upper"/><child link="lower"/><origin xyz="0.5 0 0"/>
<axis xyz="0 0 1"/><limit effort="5" velocity="10" lower="-3" upper="3"/><dynamics damping="1"/></joint>
</robot>"""


@pytest.mark.parametrize("compile", [False, None])
def test_step_beside_a_mass_matrix_singularity_is_not_refused_for_its_guess(compile):
    """Beside the fold (elbow = 1e-7) M(q_k)⁻¹p_k is 4e11 rad/s: the predictor q_k + Δt·M⁻¹p_k guessed a shoulder
    turn of 4e9 rad, where M_{k+1} (velocity terms ~ v²) looks singular, and the step raised "SingularityError ...
    the one-step map is not defined here" — untrue: from q_k Newton converges in two updates. A predicted turn
    beyond max_rotation cannot lead to a root the step would accept, so the stationary guess is used instead.
    Checked against the DEL residual at the returned root (independent of the guess)."""
    robot = vc.load_robot(FOLDED)
    vi = vc.MidpointVI(robot, 0.01, compile=compile)
    x, u = np.array([0.0, 1e-7, 1e-3, 0.0]), np.array([0.1, 0.0])
    assert abs(0.01 * vi.velocity(x)[0]) > 1e6  # the predictor's guess is wild here
    r = vi.solve(x, u)
    R, _ = vi.functions["residual"](r.y, np.concatenate([x, u]))
    assert np.abs(np.asarray(R)).max() <= 1e-10
    assert np.abs(r.x[:2] - x[:2]).max() < 0.01  # a damped creep, not a whirl
    X, _ = vi.simulate(x, np.tile(u, (20, 1)))  # and on from there
    assert np.all(np.isfinite(X)) and abs(X[-1, 0]) < 0.1
