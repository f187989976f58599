"""Exact linearization of the GNI step (implicit function theorem on the residual stacked with the nonholonomic
multipliers) against finite differences, and TV-LQR along a DDP plan: the differential-drive robot
parallel-parks (config/task_diffdrive_parking.yaml) and rejects a perturbed start."""

import numpy as np
import pytest
from test_linearization import fd_contraction, fd_first_order, rel_err

from vi_control.control.tracking import TrackingController
from vi_control.integrators import make_integrator
from vi_control.integrators.midpoint import MidpointVI
from vi_control.linearization import linearize, second_order_contraction
from vi_control.model.bundled import fourbar_initial_configuration, load_bundled
from vi_control.planning.pipeline import make_system, plan_task
from vi_control.planning.task import load_task

FD_RTOL = 1e-7


def _allowed_state(gni, rng):
    q = rng.uniform(-1.0, 1.0, gni.nq)
    if "phi" in gni.robot.joint_names:  # the snakeboard's coupled axles (holonomic φ = φ_front)
        q[gni.robot.joint_index("phi_front")] = q[gni.robot.joint_index("phi")]
    return gni.state_from_velocity(q, gni.projector(q) @ rng.normal(size=gni.nq))


@pytest.mark.parametrize("name", ["diffdrive", "snakeboard", "sleigh", "rolling_disk"])
def test_first_order_and_contraction_match_finite_differences(name):
    rng = np.random.default_rng(3)
    gni = make_integrator("gni", load_bundled(name), 0.05)
    x = _allowed_state(gni, rng)
    u = 0.3 * rng.normal(size=gni.nu)
    lin = linearize(gni, x, u)
    A_fd, B_fd = fd_first_order(gni, x, u)
    assert rel_err(lin.A, A_fd) <= FD_RTOL, rel_err(lin.A, A_fd)
    if gni.nu:
        assert rel_err(lin.B, B_fd) <= FD_RTOL, rel_err(lin.B, B_fd)
    if name == "diffdrive":  # configuration-dependent M (the snakeboard's Hessian library costs ~40 s of gcc cold)
        cov = rng.normal(size=gni.nx)
        H = np.block([[a for a in row] for row in _blocks(second_order_contraction(gni, x, u, cov))])
        H_fd = fd_contraction(gni, x, u, cov)
        assert rel_err(H, H_fd) <= FD_RTOL, rel_err(H, H_fd)


def _blocks(c):
    Hxx, Hxu, Huu = c
    return [[Hxx, Hxu], [Hxu.T, Huu]]


def test_gni_without_nonholonomic_constraints_is_the_midpoint_vi():
    robot = load_bundled("fourbar")
    mid, gni = MidpointVI(robot, 0.01), make_integrator("gni", robot, 0.01)
    q0 = fourbar_initial_configuration(0.2)
    x = mid.state_from_configurations(fourbar_initial_configuration(0.19), q0)
    X1, L1 = mid.simulate(x, np.full((50, 1), 0.5))
    X2, L2 = gni.simulate(x, np.full((50, 1), 0.5))
    assert np.abs(X1 - X2).max() < 1e-12 and np.abs(L1 - L2).max() < 1e-10


@pytest.fixture(scope="module")
def parking():
    task = load_task("task_diffdrive_parking")
    vi = make_system(task, "gni")
    plan, res = plan_task(vi, task)
    return task, vi, plan, res


def test_ddp_plans_the_parallel_parking(parking):
    task, vi, plan, res = parking
    assert res.converged
    assert np.linalg.norm(plan.X[-1, :2] - task.goal_q[:2]) < 2e-3 and abs(plan.X[-1, 2]) < 5e-3
    assert np.abs(plan.U).max() <= 0.5 + 1e-12  # the wheels' torque limit
    assert np.abs(plan.X[:, 2]).max() > 0.3  # the sideways shift needs a manoeuvre: turn, drive, turn back
    res_nh = [vi.nonholonomic_residual(plan.X[k], plan.X[k + 1]) for k in range(plan.horizon)]
    assert np.abs(res_nh).max() < 1e-11  # the plan obeys the rolling constraints


def test_tv_lqr_parks_from_a_perturbed_start_where_open_loop_does_not(parking):
    task, vi, plan, _ = parking
    ctl = TrackingController(plan, vi.state, vi.robot.effort_limits, vi.n_torques)
    q0 = np.array([0.03, 0.04, 0.1, 0.0, 0.0])  # 5 cm and 0.1 rad off the start
    x = xo = vi.state_from_velocity(q0, np.zeros(vi.nq))
    for k in range(plan.horizon + 20):
        u, _ = ctl.command(k, x)
        x = vi.step(x, u, k)
        xo = vi.step(xo, plan.U[k] if k < plan.horizon else np.zeros(vi.nu), k)
    goal = task.goal_q[:2]
    assert np.linalg.norm(x[:2] - goal) < 0.01 and abs(x[2]) < 0.02
    assert np.linalg.norm(xo[:2] - goal) > 0.01
