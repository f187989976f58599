"""``velocities``: a trajectory's q̇ at once (one batched solve; the planner's velocity-limit check), equal to
``velocity`` state by state wherever ``velocity`` answers."""

import numpy as np
import pytest
from test_hostile_inputs_more import FOLDED

import vi_control as vc


def test_velocities_of_a_trajectory_at_once_equal_the_per_state_velocity():
    """``velocities`` (one batched solve, used by the planner's velocity-limit check) is ``velocity`` state by
    state: on a trajectory of the folded arm, through its singular pose (M(q) exactly singular at elbow = 0:
    the least-squares q̇ of ``velocity``), on the marionette (18 prescribed joints: their q̇ is their p, the rest
    M_dd⁻¹(p_d − M_dk q̇_k)), and for the GNI (the projected q̇ of seed 003 eq. 15)."""
    rng = np.random.default_rng(3)
    vi = vc.MidpointVI(vc.load_robot(FOLDED), 0.01)
    X = np.column_stack([rng.uniform(-2, 2, (12, 2)), rng.normal(size=(12, 2))])
    assert np.allclose(vi.velocities(X), [vi.velocity(x) for x in X], rtol=1e-13, atol=1e-13)
    X[5, 1] = 0.0  # the fold
    with pytest.raises(np.linalg.LinAlgError):
        np.linalg.solve(vi.mass_matrix(X[5, :2]), X[5, 2:])
    assert np.array_equal(vi.velocities(X), [vi.velocity(x) for x in X])
    marionette = vc.MidpointVI(vc.load_bundled("marionette"), 0.01)
    sleigh_gni = vc.make_integrator("gni", vc.load_bundled("sleigh"), 0.01)
    assert len(marionette.idx_k) == 18
    for s in (marionette, sleigh_gni):
        Xs = np.column_stack([rng.uniform(-1, 1, (8, s.nq)), rng.normal(size=(8, s.nq))])
        assert np.allclose(s.velocities(Xs), [s.velocity(x) for x in Xs], rtol=1e-13, atol=1e-13)
    with pytest.raises(ValueError, match="states X must be"):
        vi.velocities(X[:, :3])
