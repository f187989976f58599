"""One name, one meaning: one ``load_robot``, one tolerance keyword, one base of the solvers'
results, and removed names that say what replaced them."""

import inspect
import warnings

import numpy as np
import pytest

import vi_control as vc
from vi_control.control import lqr
from vi_control.model import load_robot, load_urdf
from vi_control.model.bundled import bundled_config, bundled_urdf
from vi_control.model.errors import RemovedNameError
from vi_control.model.rigid_body import load_rigid_body
from vi_control.planning import compiled
from vi_control.planning.dmoc import DMOCProblem, solve_dmoc
from vi_control.planning.dmoc_nlp import solve_ipopt, solve_l1
from vi_control.planning.result import SolverResult
from vi_control.planning.vehicle import maneuver_settings, maneuvers

SPACECRAFT = load_rigid_body("spacecraft")


def _spacecraft_problem(horizon=None):
    st = maneuver_settings(SPACECRAFT)
    _, g0, gT = list(maneuvers(SPACECRAFT))[0]
    return DMOCProblem(SPACECRAFT, g0, gT, horizon or st.horizon, st.duration, st.retraction)


# ---- one load_robot ----------------------------------------------------------------------------------------
def test_one_load_robot_for_every_kind_of_model(tmp_path):
    """``vi_control.model.load_robot('pendulum')`` raised "URDF file not found": the model layer's name was the
    URDF loader. Now both names are one function, and the URDF loader is ``load_urdf``."""
    assert load_robot is vc.load_robot
    by_name = load_robot("pendulum")
    assert by_name.hash == vc.load_bundled("pendulum").hash
    assert by_name.hash == load_urdf(bundled_urdf("pendulum"), bundled_config("pendulum"), name="pendulum").hash
    # a URDF path with its system YAML, XML text, erd:<name>: what load_urdf builds from the same inputs
    path = bundled_urdf("double_pendulum")
    system = {"actuated": [{"joint": "elbow"}]}
    assert load_robot(path, system).hash == load_urdf(path, system).hash
    xml = open(path, encoding="utf-8").read()
    assert load_robot(xml, system, mass_scale=2.0).hash == load_urdf(xml, system, mass_scale=2.0).hash
    assert load_robot("erd:ur5").nq == 6
    # its own checks are the URDF loader's (SystemConfigError, a ModelError), at the boundary
    assert load_robot("pendulum", mass_scale=1e6).total_mass == pytest.approx(1e6 * by_name.total_mass)
    with pytest.raises(vc.SystemConfigError, match=r"^mass_scale: must be a number in \[1e-12, 1e\+06\]"):
        load_robot("pendulum", mass_scale=1.000001e6)
    assert load_robot("pendulum", floating_base=np.bool_(False)).nq == 1  # numpy's bool, as load_urdf takes it
    with pytest.raises(vc.SystemConfigError, match="floating_base: expected true or false, got 1"):
        load_robot("pendulum", floating_base=1)
    with pytest.raises(vc.URDFError, match="URDF file not found: '/nonexistent/robot.urdf'"):
        load_robot("/nonexistent/robot.urdf")
    with pytest.raises(vc.URDFError, match=r"'pendullum' is not a bundled model .*did you mean 'pendulum'"):
        load_robot("pendullum")


# ---- one tolerance keyword ---------------------------------------------------------------------------------
SOLVERS = {
    "ddp": vc.ddp,
    "solve_dmoc": solve_dmoc,
    "solve_ipopt": solve_ipopt,
    "solve_l1": solve_l1,
    "control.lqr.dlqr": lqr.dlqr,
}


@pytest.mark.parametrize("name", sorted(SOLVERS))
def test_every_solver_takes_tolerance_and_tol_only_as_a_deprecated_keyword(name):
    params = inspect.signature(SOLVERS[name]).parameters
    assert params["tolerance"].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    assert "tol" not in params or (
        params["tol"].kind is inspect.Parameter.KEYWORD_ONLY and params["tol"].default is None
    )


def test_dlqr_tol_is_tolerance_with_a_deprecation_warning():
    dlqr = lqr.dlqr
    A, B = np.array([[1.0, 0.1], [0.0, 1.0]]), np.array([[0.005], [0.1]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the new name warns of nothing
        K, P = dlqr(A, B, np.eye(2), np.eye(1), tolerance=1e-13)
    with pytest.warns(DeprecationWarning, match=r"dlqr: tol= is deprecated, use tolerance="):
        K_old, P_old = dlqr(A, B, np.eye(2), np.eye(1), tol=1e-13)
    assert np.array_equal(K, K_old) and np.array_equal(P, P_old)
    # the tolerance is the one used: a loose one stops after fewer doubling sweeps, a different P
    assert not np.array_equal(dlqr(A, B, np.eye(2), np.eye(1), tolerance=0.5)[1], P)
    # the planner's twins are gone (one implementation, control.lqr's C): their names say where it is
    for name in ("dlqr", "tv_lqr"):
        with pytest.raises(
            RemovedNameError, match=rf"planning\.compiled\.{name} was removed: use vi_control\.control\.lqr\.{name}"
        ):
            getattr(compiled, name)


def test_solve_dmoc_tol_is_tolerance_with_a_deprecation_warning():
    prob = _spacecraft_problem()
    new = solve_dmoc(prob, tolerance=1e-9, fallback=None, check=False)
    with pytest.warns(DeprecationWarning, match=r"solve_dmoc: tol= is deprecated, use tolerance="):
        old = solve_dmoc(prob, tol=1e-9, fallback=None, check=False)
    assert new.stationary and np.array_equal(new.xi, old.xi) and new.iterations == old.iterations
    assert new.residual <= 1e-9


# ---- one base of the results -------------------------------------------------------------------------------
def _check_result(res, converged: bool):
    assert isinstance(res, SolverResult)
    assert res.converged is converged
    assert isinstance(res.iterations, int) and res.iterations >= 1
    assert isinstance(res.cost, float) and np.isfinite(res.cost) and res.cost > 0
    assert isinstance(res.solve_time, float) and res.solve_time > 0


def test_the_solvers_results_share_one_base(pendulum_vi):
    _, res = vc.plan_task(pendulum_vi, vc.load_task("task_pendulum_swingup"))
    _check_result(res, True)
    assert res.solve_time == res.cpu_time
    prob = _spacecraft_problem()
    d = solve_dmoc(prob)
    _check_result(d, True)
    ip = solve_ipopt(prob)  # from the geodesic guess, as Newton
    _check_result(ip, True)
    assert ip.converged == ip.success and ip.cost == pytest.approx(d.cost, rel=1e-6)  # the same minimum
    assert issubclass(vc.OptimizerResult, SolverResult) and issubclass(vc.DMOCResult, SolverResult)
    assert issubclass(vc.IpoptResult, SolverResult) and vc.SolverResult is SolverResult


# ---- removed names -----------------------------------------------------------------------------------------
def test_removed_names_say_what_replaced_them():
    with pytest.raises(RemovedNameError, match=r"vi_control\.robots was removed: use vi_control\.model\.bundled"):
        import vi_control.robots  # noqa: F401
    with pytest.raises(ImportError, match=r"vi_control\.robots was removed: use vi_control\.model\.bundled"):
        from vi_control import robots  # noqa: F401
    with pytest.raises(
        ImportError,
        match=r"planning\.task\.plan_task was removed: use "
        r"vi_control\.planning\.pipeline\.plan_task",
    ):
        from vi_control.planning.task import plan_task  # noqa: F401
    task = vc.load_task("task_pendulum_swingup")
    with pytest.raises(AttributeError, match=r"Task\.make_vi was removed: use vi_control\.make_system\(task\)"):
        task.make_vi()
    # other missing names stay plain: AttributeError, so hasattr and getattr defaults work
    assert not hasattr(task, "make_plan") and getattr(vc, "no_such_name", None) is None
    with pytest.raises(ModuleNotFoundError):
        import vi_control.no_such_module  # noqa: F401
    # the replacements exist
    assert vc.make_system(task).nq == 1 and vc.plan_task is vc.planning.pipeline.plan_task
