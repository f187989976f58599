"""Weights and poses the Riccati gains cannot be computed for are refused, naming what is wrong.

- ``tv_lqr``, ``dlqr`` and ``hold_gain`` used to accept indefinite weights: the recursion then
  returned finite gains of a saddle point. The independent witness is the LQ problem itself, solved as one batch
  least-squares problem (z = Φz₀ + Γμ): with an indefinite R its Hessian in μ is indefinite and its cost has no
  minimum, while the recursion (eq. 36) claimed one.
- ``hold_gain`` at a pose where the step is singular used to raise the step's bare "M_{k+1} is singular … at step
  None"; it now names the pose, the joint or constraint, why, and which joint to move (Pinocchio's M(q) at that
  pose is the independent check that the named direction is the singular one).
"""

import numpy as np
import pytest

from vi_control import tv_lqr as vc_tv_lqr
from vi_control.control.hold import SingularPoseError, hold_gain
from vi_control.control.lqr import dlqr, tv_lqr
from vi_control.integrators import make_integrator
from vi_control.integrators.base import SingularityError
from vi_control.model import load_robot
from vi_control.model.bundled import bundled_urdf
from vi_control.model.crba import mass_matrix
from vi_control.planning.pipeline import plan_task
from vi_control.planning.task import TaskError, load_task

N, A1, B1 = 30, np.array([[1.0, 0.1], [0.98, 1.0]]), np.array([[0.0], [0.1]])  # an inverted pendulum, Δt = 0.1
A, B = np.tile(A1, (N, 1, 1)), np.tile(B1, (N, 1, 1))


def _batch(A1, B1, Q, R, Qf):
    """Φ, Γ, Q̄, R̄ and the Hessian in μ of the LQ cost J = Σ zᵀQz + μᵀRμ + z_NᵀQf z_N over z = Φz₀ + Γμ."""
    nx, nu = B1.shape
    Phi, Gam = np.zeros(((N + 1) * nx, nx)), np.zeros(((N + 1) * nx, N * nu))
    Phi[:nx] = np.eye(nx)
    for k in range(N):
        Phi[(k + 1) * nx : (k + 2) * nx] = A1 @ Phi[k * nx : (k + 1) * nx]
        Gam[(k + 1) * nx : (k + 2) * nx] = A1 @ Gam[k * nx : (k + 1) * nx]
        Gam[(k + 1) * nx : (k + 2) * nx, k * nu : (k + 1) * nu] = B1
    Qbar = np.kron(np.eye(N + 1), Q)
    Qbar[N * nx :, N * nx :] = Qf
    Rbar = np.kron(np.eye(N), R)
    return Phi, Gam, Qbar, Rbar, Gam.T @ Qbar @ Gam + Rbar


def _unchecked_riccati(A1, B1, Q, R, Qf):
    """Eq. 36 as tv_lqr computes it, without the weight checks: what an indefinite R used to return."""
    P = Qf
    for _ in range(N):
        K = np.linalg.solve(R + B1.T @ P @ B1, B1.T @ P @ A1)
        Acl = A1 - B1 @ K
        P = Q + Acl.T @ P @ Acl + K.T @ R @ K
    return K, P


def test_an_indefinite_input_weight_has_no_minimum_and_is_refused():
    Ad, Bd = np.array([[1.0, 0.1], [0.0, 1.0]]), np.array([[0.005], [0.1]])  # a double integrator, Δt = 0.1
    Q, R, Qf = np.eye(2), np.array([[-0.05]]), np.eye(2)
    K0, P0 = _unchecked_riccati(Ad, Bd, Q, R, Qf)
    z0 = np.array([0.1, 0.0])
    claimed = z0 @ P0 @ z0
    assert np.all(np.isfinite(K0)) and np.isfinite(claimed)  # before: finite "optimal" gains and cost z₀ᵀP₀z₀ ...
    Phi, Gam, Qbar, Rbar, H = _batch(Ad, Bd, Q, R, Qf)
    lam, vec = np.linalg.eigh(H)
    assert lam[0] < 0  # ... but the LQ problem's Hessian is indefinite: J(μ) is unbounded below
    g, c = Gam.T @ Qbar @ Phi @ z0, z0 @ Phi.T @ Qbar @ Phi @ z0  # J(μ) = μᵀHμ + 2μᵀg + c
    v = -np.sign(vec[:, 0] @ g or 1.0) * vec[:, 0]  # the negative-curvature direction, downhill
    t = np.sqrt((c - claimed + 1.0) / -lam[0])  # J(tv) ≤ c + t²λ₀ = claimed − 1: the claimed minimum is beaten
    mu = t * v
    z = Phi @ z0 + Gam @ mu
    assert z @ Qbar @ z + mu @ Rbar @ mu <= claimed - 1.0 + 1e-9 * abs(c)
    A, B = np.tile(Ad, (N, 1, 1)), np.tile(Bd, (N, 1, 1))
    for solve in (tv_lqr, vc_tv_lqr):
        with pytest.raises(
            ValueError,
            match=r"^R: must be symmetric positive definite, got smallest eigenvalue "
            r"-0\.05 .*unbounded below",
        ):
            solve(A, B, Q, R, Qf)
    with pytest.raises(ValueError, match=r"^R: must be symmetric positive definite, got smallest eigenvalue -0\.05 "):
        dlqr(Ad, Bd, Q, R)
    # with R = +0.05 the same harness finds the recursion's cost to be the batch problem's minimum
    K, P = tv_lqr(A, B, Q, -R, Qf)
    Phi, Gam, Qbar, Rbar, H = _batch(Ad, Bd, Q, -R, Qf)
    mu = -np.linalg.solve(H, Gam.T @ Qbar @ Phi @ z0)
    z = Phi @ z0 + Gam @ mu
    assert z @ Qbar @ z + mu @ Rbar @ mu == pytest.approx(z0 @ P[0] @ z0, rel=1e-9)


PSD = r"Q: must be symmetric positive semidefinite, got smallest eigenvalue -1 "
BAD_WEIGHTS = [  # (which argument, its value, the error's start)
    ("Q", np.diag([1.0, -1.0]), PSD),
    ("Q", np.array([[1.0, 2.0], [2.0, 1.0]]), PSD),
    ("Q", np.array([[1.0, 0.5], [0.0, 1.0]]), r"Q: must be symmetric, got entry \[0, 1\] = 0\.5 but \[1, 0\] = 0"),
    ("Q", [1.0, 2.0, 3.0], r"Q: expected 2 diagonal entries"),
    ("Q", np.eye(2) * (1 + 0j), r"Q: expected real numbers, got dtype complex128"),
    ("R", np.array([[np.nan]]), r"R: entries must be finite, got nan at index \(0, 0\)"),
    ("R", np.eye(2), r"R: expected a scalar, 1 diagonal entries or a \(1, 1\) array, got shape \(2, 2\)"),
    ("R", 0.0, r"R: must be symmetric positive definite, got smallest eigenvalue 0 .*singular input weight"),
    ("Qf", -np.eye(2), r"Qf: must be symmetric positive semidefinite"),
]


@pytest.mark.parametrize("which, value, message", BAD_WEIGHTS)
def test_every_bad_weight_is_named(which, value, message):
    W = {"Q": np.eye(2), "R": 1.0, "Qf": np.eye(2), which: value}
    with pytest.raises(ValueError, match="^" + message):
        tv_lqr(A, B, W["Q"], W["R"], W["Qf"])
    if which != "Qf":
        with pytest.raises(ValueError, match="^" + message):
            dlqr(A1, B1, W["Q"], W["R"])


def test_stacked_weights_name_the_stage_and_the_system_is_checked():
    Rs = np.ones((N, 1, 1))
    Rs[3] = -1.0
    with pytest.raises(ValueError, match=r"^R\[3\]: must be symmetric positive definite, got smallest eigenvalue -1"):
        tv_lqr(A, B, np.eye(2), Rs, np.eye(2))
    with pytest.raises(ValueError, match=r"^R: expected a scalar, 1 diagonal entries or a \(30, 1, 1\) array"):
        tv_lqr(A, B, np.eye(2), Rs[:5], np.eye(2))
    A_nan = A.copy()
    A_nan[7, 1, 0] = np.nan
    with pytest.raises(ValueError, match=r"^A: entries must be finite, got nan at index \(7, 1, 0\)"):
        tv_lqr(A_nan, B, np.eye(2), 1.0, np.eye(2))
    with pytest.raises(ValueError, match=r"^A: expected shape \(30, 2, 2\)"):
        tv_lqr(A[:, :1], B, np.eye(2), 1.0, np.eye(2))
    with pytest.raises(ValueError, match=r"^A, B: expected 2-D arrays"):
        dlqr(A, B, np.eye(2), 1.0)


def test_round_off_and_wide_scales_are_not_refused(rng):
    """A PSD weight computed as a product (eigenvalues −1e-17, entries asymmetric in the last bit) and a PD R
    spanning 12 decades are weights, not errors; the gains equal those of the exactly symmetric weight."""
    D = rng.standard_normal((2, 1))
    Q = D @ D.T @ np.diag([1.0, 1.0 + 1e-15])  # rank one, asymmetric by ~1e-16
    assert np.linalg.eigvalsh(0.5 * (Q + Q.T))[0] <= 1e-15 and not np.array_equal(Q, Q.T)
    K, _ = tv_lqr(A, B, Q, 1.0, np.eye(2))
    K_sym, _ = tv_lqr(A, B, 0.5 * (Q + Q.T), 1.0, np.eye(2))
    assert np.allclose(K, K_sym, rtol=1e-9, atol=1e-12)
    B2 = np.tile(np.array([[0.0, 1.0], [0.1, 0.0]]), (N, 1, 1))
    tv_lqr(A, B2, np.eye(2), np.diag([1e-6, 1e6]), np.eye(2))  # cond 1e12, positive definite


def test_hold_gain_refuses_weights_before_linearizing(pendulum_vi):
    for Q, R, message in (
        (np.diag([1.0, -1.0]), 1.0, "^Q: must be symmetric positive semidefinite"),
        (np.eye(2), -1.0, "^R: must be symmetric positive definite"),
        (np.eye(3), 1.0, r"^Q: expected a scalar, 2 diagonal entries or a \(2, 2\) array"),
    ):
        with pytest.raises(ValueError, match=message):
            hold_gain(pendulum_vi, np.array([0.5]), Q, R)


def test_a_task_whose_lqr_input_weight_is_singular_is_refused_by_key(tmp_path, pendulum_vi):
    text = tmp_path / "t.yaml"
    base = (
        "name: t\nmodel: pendulum\ndt: 0.1\nhorizon: 10\nstart: {q: [0.0]}\ngoal: {q: [0.5]}\n"
        "optimizer: {max_iterations: 3}\n"
    )
    for weights, message in (
        (
            "weights: {Q: 1.0, R: 0.0}\n",
            r"lqr\.R \(from weights\.R\): must be symmetric "
            r"positive definite",
        ),
        (
            "weights: {Q: 1.0, R: 1.0}\nhold: {R: 0.0}\n",
            r"hold\.R: must be symmetric positive "
            r"definite",
        ),
        ("weights: {Q: 1.0, R: -1.0}\n", r"weights\.R: weight must be positive semidefinite"),
    ):
        text.write_text(base + weights)
        with pytest.raises(TaskError, match=message):
            plan_task(pendulum_vi, load_task(str(text)))


# ---- hold_gain at a singular pose -----------------------------------------------------------------------------
def test_hold_gain_at_a_coordinate_singularity_names_the_pose_the_joint_and_the_cure():
    """The spherical pendulum (Johnson2015, §VII-A, M(q) = diag(sin²θ, 1), eq. 33) actuated, held hanging straight down:
    the azimuth φ moves no inertia there."""
    robot = load_robot(bundled_urdf("spherical_pendulum"), {"gravity": [0.0, 0.0, -9.8]})
    vi = make_integrator("midpoint", robot, 0.01)
    q = np.array([0.3, 0.0])
    M = mass_matrix(robot.pin_model, q)  # Pinocchio's model: singular along φ exactly there (independent)
    assert abs(M[0, 0]) < 1e-12 and M[1, 1] == pytest.approx(1.0)
    with pytest.raises(SingularPoseError) as info:
        hold_gain(vi, q, 1.0, 1.0)
    e = info.value
    assert isinstance(e, SingularityError) and e.what == "M_{k+1}"  # still what callers catch, with its fields
    msg = str(e)
    assert "pose (phi = 0.3, theta = 0)" in msg and "moving joint 'phi' moves no inertia at this pose" in msg
    assert "moving joint 'theta' by 0.01 makes it regular" in msg
    K, _, _ = hold_gain(vi, np.array([0.3, 0.01]), 1.0, 1.0)  # the cure it names works
    from vi_control.control.hold import equilibrium_state, holding_input
    from vi_control.linearization import linearize

    x_eq = equilibrium_state(vi, np.array([0.3, 0.01]))
    lin = linearize(vi, x_eq, holding_input(vi, np.array([0.3, 0.01]))[0])
    assert np.abs(np.linalg.eigvals(lin.A - lin.B @ K)).max() < 1.0


def test_hold_gain_where_a_constraint_row_vanishes_names_the_constraint():
    """A double pendulum whose tip must stay on the plane z = −2: only the straight-down pose meets it, and there
    the tip cannot move vertically (Dh(q) = 0)."""
    robot = load_robot(
        bundled_urdf("double_pendulum"),
        {
            "constraints": [
                {"type": "plane", "link": "lower_link", "point": [0, 0, -1.0], "normal": [0, 0, 1], "offset": -2.0}
            ]
        },
    )
    vi = make_integrator("midpoint", robot, 0.01)
    with pytest.raises(
        SingularPoseError,
        match=r"pose \(shoulder = 0, elbow = 0\).*constrained DEL Jacobian.*"
        r"constraints\[0\]: its row of Dh\(q\) vanishes at this pose",
    ):
        hold_gain(vi, np.zeros(2), 1.0, 1.0)


@pytest.mark.parametrize("definite", [False, True])
def test_a_diagonal_weight_is_refused_at_the_boundaries_of_its_fast_path(definite):
    """``check_weight``'s path for diagonal weights (most of a plan's ~10 checks) decides as the full check does: a
    NaN or ±inf on the diagonal or a NaN off it is refused as not finite; a diagonal just inside the tolerance
    (PSD: −0.5·WEIGHT_TOL·norm; PD: 2·DEFINITE_TOL·norm) is accepted as it is, just outside refused."""
    from vi_control.control.lqr import DEFINITE_TOL, WEIGHT_TOL, check_weight

    for bad in (np.inf, -np.inf, np.nan):
        with pytest.raises(ValueError, match="entries must be finite"):
            check_weight(np.diag([bad, 1.0]), 2, "W", definite=definite)
    with pytest.raises(ValueError, match=r"entries must be finite, got nan at index \(0, 1\)"):
        check_weight(np.array([[1.0, np.nan], [np.nan, 1.0]]), 2, "W", definite=definite)
    norm = 4.0
    edge = 2 * DEFINITE_TOL * norm if definite else -0.5 * WEIGHT_TOL * norm
    W = np.diag([edge, norm])
    assert np.array_equal(check_weight(W, 2, "W", definite=definite), W)
    outside = 0.5 * DEFINITE_TOL * norm if definite else -2 * WEIGHT_TOL * norm
    with pytest.raises(ValueError, match="must be symmetric positive"):
        check_weight(np.diag([outside, norm]), 2, "W", definite=definite)
