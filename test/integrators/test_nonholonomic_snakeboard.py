"""Snakeboard (Kobilarov2010, §6.2, Fig. 4): GNI and RDP (exp and Cayley) against RK2 and a DOP853 reference of the
Lagrange–d'Alembert equations, with the paper's initial state and inputs; the rotor's momentum balance; a
singular constraint matrix mid-run."""

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from vi_control.integrators import SingularityError, make_integrator
from vi_control.integrators.rdp import (
    SNAKEBOARD,
    SNAKEBOARD_START,
    ReducedDAlembertPontryagin,
    snakeboard_configuration,
    snakeboard_inputs,
    snakeboard_start,
    snakeboard_system,
)
from vi_control.mechanics.lagrange_dalembert import NonholonomicODE, rk2_midpoint
from vi_control.model.bundled import load_bundled

T = 10.0


@pytest.fixture(scope="module")
def board():
    robot = load_bundled("snakeboard")
    system = snakeboard_system(**SNAKEBOARD)
    start = snakeboard_start(system, **SNAKEBOARD_START)
    q0, qd0 = snakeboard_configuration(*start)
    # robot.actuated = (phi, psi): torques in joint order
    ode = NonholonomicODE(robot, torque=lambda t: snakeboard_inputs(t)[::-1])
    ref = solve_ivp(ode.rhs, (0, T), np.concatenate([q0, qd0]), method="DOP853", rtol=1e-12, atol=1e-12)
    assert ref.success
    return dict(robot=robot, system=system, start=start, q0=q0, qd0=qd0, ode=ode, ref=ref.y[:2, -1])


def _gni(board, N):
    h = T / N
    U = snakeboard_inputs(np.arange(N) * h)[:, ::-1]
    gni = make_integrator("gni", board["robot"], h)
    X, nu = gni.simulate(gni.state_from_velocity(board["q0"], board["qd0"], U[0]), U)
    return gni, X, U, nu


def _rdp(board, N, retraction):
    h = T / N
    rdp = ReducedDAlembertPontryagin(board["system"], h, retraction)
    return rdp.simulate(*board["start"], forces=snakeboard_inputs(np.arange(N) * h))


def test_paper_start_state(board):
    """ψ = π/2, φ = π/3, ψ̇ = 2.5, φ̇ = −0.02, θ = 0 and the nonholonomic momentum p₁ = −1."""
    g0, r0, rdot0, xi0 = board["start"]
    rdp = ReducedDAlembertPontryagin(board["system"], 0.1)
    assert rdp.nonholonomic_momentum(r0, rdot0, xi0) == pytest.approx([-1.0], abs=1e-14)
    q0, qd0 = board["q0"], board["qd0"]
    assert np.abs(board["ode"].rows(q0) @ qd0).max() < 1e-15  # the paper's constraints (eq. 34) hold


def test_gni_and_rdp_beat_rk2_at_N128(board):
    """Fig. 4: at N = 128 (h = 0.078 s) RK2 leaves the trajectory; GNI and RDP (exp, cay) end ≥ 10× closer."""
    N = 128
    _, X, _, _ = _gni(board, N)
    ode = board["ode"]
    S = rk2_midpoint(ode.rhs, np.concatenate([board["q0"], board["qd0"]]), T / N, N)
    err_rk2 = np.linalg.norm(S[-1, :2] - board["ref"])
    errs = {"gni": np.linalg.norm(X[-1, :2] - board["ref"])}
    for ret in ("exp", "cayley"):
        errs[ret] = np.linalg.norm(_rdp(board, N, ret).g[-1, 1:] - board["ref"])
    for name, e in errs.items():
        assert err_rk2 >= 10 * e, (name, e, err_rk2)
    assert err_rk2 > 0.3  # RK2 is off by a good fraction of the ~0.85 m travelled


def test_finer_step_second_order(board):
    """h = 0.078 samples u_ψ = cos 20πt below its period; at N = 512 (h = 0.02) both are 16× closer (order 2)."""
    e128 = np.linalg.norm(_gni(board, 128)[1][-1, :2] - board["ref"])
    e512 = np.linalg.norm(_gni(board, 512)[1][-1, :2] - board["ref"])
    r128 = np.linalg.norm(_rdp(board, 128, "exp").g[-1, 1:] - board["ref"])
    r512 = np.linalg.norm(_rdp(board, 512, "exp").g[-1, 1:] - board["ref"])
    assert 4.0**1.9 < e128 / e512 < 4.0**2.1 and 4.0**1.9 < r128 / r512 < 4.0**2.1


def test_gni_constraints_and_rotor_momentum(board):
    """ψ is cyclic and ∂/∂ψ is allowed (a horizontal symmetry): the discrete momentum p_ψ = I(ψ̇ + θ̇) changes by
    exactly Δt u_ψ per step (forced discrete Noether); eq. 5b holds at every step."""
    gni, X, U, _ = _gni(board, 256)
    ipsi, iphi = gni.robot.joint_index("psi"), gni.robot.joint_index("phi")
    p_psi = X[:, gni.nq + ipsi]
    psi_input = list(gni.robot.actuated).index("psi")
    assert np.abs(np.diff(p_psi) - gni.dt * U[:, psi_input]).max() < 1e-13
    res = [gni.nonholonomic_residual(X[k], X[k + 1]) for k in range(len(U))]
    assert np.abs(res).max() < 1e-12
    assert np.abs(X[:, iphi] - X[:, gni.robot.joint_index("phi_front")]).max() < 1e-12  # coupled axles
    assert X[:, iphi].max() > np.pi / 2  # the cusp: φ passes π/2 once (docs/concepts/nonholonomic.md)


def test_singular_constraint_matrix_mid_run_names_the_step(board):
    """Board at rest, steering turning at constant rate: φ reaches π/2 (both axles across the board, the two
    constraints coincide) exactly at step 5 → SingularityError for step 5, not a wrong state."""
    robot, h, rate = board["robot"], 0.01, 0.5
    gni = make_integrator("gni", robot, h)
    q0 = np.zeros(robot.nq)
    q0[[robot.joint_index("phi"), robot.joint_index("phi_front")]] = np.pi / 2 - 5 * h * rate
    qd = np.zeros(robot.nq)
    qd[[robot.joint_index("phi"), robot.joint_index("phi_front")]] = rate
    with pytest.raises(SingularityError) as e:
        gni.simulate(gni.state_from_velocity(q0, qd), np.zeros((10, gni.nu)))
    assert e.value.step == 5 and "step 5" in str(e.value)


def test_rdp_refuses_a_robot_model_with_a_type_error_naming_what_it_needs():
    import vi_control as vc

    with pytest.raises(TypeError, match="needs a ReducedSystem"):
        vc.ReducedDAlembertPontryagin(vc.load_robot("pendulum"), 0.01)
