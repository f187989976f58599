"""``velocities``: a trajectory's q̇ at once (one batched solve; the planner's velocity-limit check), equal to
``velocity`` state by state wherever ``velocity`` answers."""

import numpy as np
import pytest
from test_hostile_inputs import FOLDED

import vi_control as vc


def test_velocities_of_a_trajectory_at_once_equal_the_per_state_velocity():
    """``velocities`` (one batched solve, used by the planner's velocity-limit check) is ``velocity`` state by
    state: on a trajectory of the folded arm, through its singular pose (M(q) exactly singular at elbow = 0:
    the least-squares q̇ of ``velocity``), on the marionette (18 prescribed joints: their q̇ is their p, the rest
    M_dd⁻¹(p_d − M_dk q̇_k)), and for the GNI (the projected q̇ of Kobilarov2010, eq. 15)."""
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


def test_velocity_state_inverts_the_wire_velocity_exactly():
    """control.tracking: the velocity on the wire, q̇_k = M⁻¹(p_k + (Δt/2)Sτ_g(q_k)) (``wire_velocity``, τ_g the
    holding torque), and the 'velocities' state estimate, p = M(q)q̇ − (Δt/2)Sτ_g(q) (``velocity_state``, prescribed
    joints: their q̇), are exact inverses: the panda (7 DOF under gravity), the marionette (prescribed joints) and the
    linear-time VI, at random states. A configuration held still (its discrete state) is at rest on the wire, and a
    measured q̇ = 0 gives it back."""
    from vi_control.control.hold import equilibrium_state
    from vi_control.control.tracking import velocity_state, wire_velocity

    rng = np.random.default_rng(5)
    systems = [
        vc.MidpointVI(vc.load_robot("erd:panda"), 0.01),
        vc.MidpointVI(vc.load_bundled("marionette"), 0.01),
        vc.make_integrator("linear_time", vc.load_bundled("double_pendulum"), 0.01),
    ]
    for vi in systems:
        for _ in range(5):
            x = np.concatenate([rng.uniform(-1, 1, vi.nq), rng.normal(0, 2, vi.nq)])
            back = velocity_state(vi, x[: vi.nq], wire_velocity(vi, x))
            assert np.allclose(back, x, rtol=0, atol=1e-11 * max(1.0, np.abs(x).max())), vi.robot.name
    vi, q = systems[0], np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])
    held = equilibrium_state(vi, q)
    assert np.abs(held[7:]).max() > 0.01  # (its momentum is −(Δt/2)∇V, not 0)
    assert np.abs(wire_velocity(vi, held)).max() < 1e-12
    # (M⁻¹p_k alone would report it moving: the velocity the planner's ~/trajectory publishes today)
    assert np.abs(vi.velocity(held)).max() > 1e-3
    assert np.allclose(velocity_state(vi, q, np.zeros(7)), held, rtol=0, atol=1e-12)
