"""Robustness sweeps run serially: the perturbed closed loop against independent references (the plain
closed loop of planning.evaluate, the mass-scaling symmetry of the Lagrangian, a hanging and a damped free
pendulum), error records, resumable results, saved plans. Ray is in test_sweep_ray.py."""

import json

import numpy as np
import pytest

from vi_control.control.plan import Plan
from vi_control.planning import load_task, plan_task, simulate_plan
from vi_control.sweep import SweepError, robustness_sweep, run_tasks
from vi_control.sweep.rollout import cached_system, closed_loop, portable_spec, start_pair

TASK = "task_pendulum_swingup"  # Johnson2015, §VIII-A swing-up, unbounded torque: so the sweeps do not clamp
NOCLAMP = {"success": {"clamp": False, "hold_time": 1.0}}


@pytest.fixture(scope="module")
def nominal():
    task = load_task(TASK)
    spec = portable_spec(task.model_spec)
    vi = cached_system(spec, task.dt)
    plan, res = plan_task(vi, task)
    assert res.converged
    return spec, vi, plan


def sweep(plan, cfg, **kw):
    return robustness_sweep(
        TASK, {**NOCLAMP, **cfg}, plan=plan, backend="serial", progress=False, log=lambda s: None, **kw
    )


def test_start_pair_inverts_the_discrete_legendre_transform(nominal):
    _, vi, plan = nominal
    q_prev, q0 = start_pair(vi, plan.X[0])
    assert np.abs(q_prev - q0).max() < 1e-12  # the task starts at rest: (q0 − Δt·0, q0)
    qa, qb = np.array([0.3]), np.array([0.42])  # a moving start: (q_{-1}, q_0) recovered from x_0 alone
    q_prev, q0 = start_pair(vi, vi.state_from_configurations(qa, qb))
    assert np.abs(q_prev - qa).max() < 1e-10 and np.array_equal(q0, qb)


def test_unperturbed_loop_from_measured_configurations_is_the_plain_closed_loop(nominal):
    """Controller fed by the state estimator (positions only) = simulate_plan fed the true state."""
    _, vi, plan = nominal
    run = closed_loop(vi, vi, plan, start_pair(vi, plan.X[0]), hold_steps=10, clamp=False)
    X, U = simulate_plan(vi, plan, plan.X[0], feedback=True, extra_steps=10)
    assert run["failure"] is None
    assert np.abs(run["X"] - X).max() < 1e-9 and np.abs(run["U"] - U).max() < 1e-7


def test_heavier_plant_with_proportionally_stronger_actuator_moves_identically(nominal):
    """L scales with the masses (T and V both ∝ m): a plant with masses ×s driven by s·u has the nominal
    plant's configurations (momenta ×s), so its final error equals the nominal one and its torque is ×s."""
    _, _, plan = nominal
    base = sweep(plan, {"samples": 1, "perturbations": {"q0_offset": 0.3}}).records[0]
    for backend in ("vm", "compiled"):
        rec = sweep(
            plan,
            {
                "samples": 1,
                "plant": backend,
                "perturbations": {"q0_offset": 0.3, "mass_scale": 1.3, "actuator_gain": 1.3},
            },
        ).records[0]
        assert rec["final_error_q"] == pytest.approx(base["final_error_q"], abs=1e-9)
        assert rec["rms_tracking"] == pytest.approx(base["rms_tracking"], abs=1e-9)
        assert rec["peak_torque"][0] == pytest.approx(1.3 * base["peak_torque"][0], rel=1e-8)
    wrong = sweep(plan, {"samples": 1, "perturbations": {"q0_offset": 0.3, "mass_scale": 1.3}}).records[0]
    assert abs(wrong["rms_tracking"] - base["rms_tracking"]) > 1e-3  # the mass perturbation does reach the plant


def test_dead_actuator_leaves_the_pendulum_hanging(nominal):
    """No torque: the pendulum stays at rest at the bottom, its final error is the plan's end angle (≈ π)."""
    _, _, plan = nominal
    res = sweep(plan, {"samples": 3, "perturbations": {"actuator_gain": 0.0, "sensor_noise": [0.0, 0.01]}})
    assert abs(plan.X[-1, 0] - np.pi) < 1e-6
    for rec in res.records:
        assert rec["final_error"] == pytest.approx(plan.X[-1, 0], abs=1e-12) and rec["peak_torque"] == [0.0]
        assert not rec["success"] and rec["failure"] is None
    assert res.summary["success_rate"] == 0.0 and res.summary["failure_reasons"] == {"final error above tolerance": 3}


def test_added_damping_decays_the_free_swing_at_the_analytic_rate(nominal):
    """Light viscous damping c on a unit point pendulum (I = m l² = 1): energy ∝ exp(−c t)."""
    spec, vi, plan = nominal
    c = 0.1
    plant = cached_system(spec, plan.dt, damping=c, compile=False)
    assert plant.robot.damping.tolist() == [c] and plant.robot.hash != vi.robot.hash
    q = np.array([0.05])
    run = closed_loop(plant, vi, plan, (q, q), actuator_gain=0.0, hold_steps=20)
    X, T = run["X"], len(run["X"]) * plan.dt - plan.dt
    rest = vi.energy(np.zeros(2))
    ratio = (plant.energy(X[-1]) - rest) / (plant.energy(X[0]) - rest)
    # averaged over the last period: the energy of a discrete orbit oscillates within a step
    assert -np.log(ratio) / (c * T) == pytest.approx(1.0, abs=0.1)


def test_importance_ranks_the_parameter_that_decides(nominal):
    _, _, plan = nominal
    res = sweep(
        plan, {"samples": 10, "seed": 1, "perturbations": {"actuator_gain": [0.0, 1.0], "sensor_noise": [0.0, 1e-6]}}
    )
    imp = res.summary["importance"]
    assert list(imp)[0] == "actuator_gain" and imp["actuator_gain"] < -0.8  # more gain, less error
    ok = [r["success"] for r in res.records]
    gains = [r["params"]["actuator_gain"] for r in res.records]
    assert min(g for g, s in zip(gains, ok) if s) > max(g for g, s in zip(gains, ok) if not s)  # a threshold


def test_a_raising_task_is_recorded_and_the_rest_completes():
    def fn(payload, shared):
        if payload == 2:
            raise RuntimeError("sample two is broken")
        return {"value": payload * shared["k"]}

    stats = run_tasks(fn, [(i, i) for i in range(4)], {"k": 10}, backend="serial", progress=False)
    assert [r.get("value") for r in stats.records] == [0, 10, None, 30]
    assert stats.records[2]["error"] == "RuntimeError: sample two is broken" and stats.errors == 1


def test_summary_and_plot_of_a_sweep_whose_every_task_failed(tmp_path):
    from vi_control.sweep import load_robustness_config, summarize
    from vi_control.sweep.report import plot_robustness, summary_table

    records = [{"key": i, "error": "WorkerCrashedError: gone"} for i in range(3)]
    s = summarize(records, load_robustness_config({"perturbations": {"mass_scale": [0.9, 1.1]}}), 1)
    # (0, not NaN: nothing succeeded; errors = samples tells a sweep where nothing ran)
    assert (s["samples"], s["errors"], s["successes"]) == (3, 3, 0) and s["success_rate"] == 0.0
    assert s["error_messages"] == ["WorkerCrashedError: gone"] and "task error" in summary_table(s)
    assert plot_robustness(records, s, tmp_path / "p.png").exists()


def test_interrupted_sweep_resumes_with_nothing_lost_or_run_twice(nominal, tmp_path):
    _, _, plan = nominal
    cfg = {
        "samples": 6,
        "seed": 4,
        "perturbations": {"mass_scale": 1.05, "sensor_noise": [0, 1e-3], "q0_offset": [-0.05, 0.05]},
    }
    full = sweep(plan, cfg, out_dir=tmp_path / "full", plot=False)
    seen = []

    def interrupt(rec):
        seen.append(rec["key"])
        if len(seen) == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        sweep(plan, cfg, out_dir=tmp_path / "part", on_result=interrupt)
    path = tmp_path / "part" / "results.jsonl"
    assert len(path.read_text().splitlines()) == 1 + 2  # header + the two records stored before the interrupt
    with open(path, "a") as f:
        f.write('{"key": 4, "sample": 4, "suc')  # a torn write from the killed process
    res = sweep(plan, cfg, out_dir=tmp_path / "part")
    assert (res.stats.resumed, res.stats.computed) == (2, 4)
    assert res.records == full.records
    keys = [json.loads(line)["key"] for line in path.read_text().splitlines()[1:]]
    assert sorted(keys) == list(range(6))
    assert json.loads((tmp_path / "part" / "summary.json").read_text())["samples"] == 6
    assert (tmp_path / "part" / "robustness.png").stat().st_size > 10_000
    with pytest.raises(SweepError, match=r"different sweep \(differs in \['config'\]\)"):
        sweep(plan, {**cfg, "seed": 5}, out_dir=tmp_path / "part")


def test_saved_plan_sweeps_like_its_task_and_a_foreign_model_is_refused(nominal, tmp_path):
    _, _, plan = nominal
    path = tmp_path / "swingup.npz"
    plan.save(str(path))
    cfg = {**NOCLAMP, "samples": 2, "perturbations": {"q0_offset": [-0.1, 0.1]}}
    from_plan = robustness_sweep(None, cfg, plan=str(path), backend="serial", progress=False)
    assert from_plan.records == sweep(plan, cfg).records
    assert isinstance(from_plan.plan, Plan)
    with pytest.raises(SweepError, match="hashes to"):
        robustness_sweep(None, cfg, plan=str(path), model="acrobot", backend="serial", progress=False)
    with pytest.raises(SweepError, match="give a task"):
        robustness_sweep(None, cfg, backend="serial")


def test_mpc_and_the_oracle_hold_what_one_plans_tracking_drops():
    """``--controller``: the first two samples of the bundled pendulum sweep (the bounded swing-up, ±20 % mass,
    ±10 % actuator gain, damping, noise, start offsets). The oracle — the task planned on each sample's true plant
    under its true torque — swings both up: both are feasible. TV-LQR tracking of the nominal plan drops sample 0;
    MPC (re-planned every 0.1 s over the horizon shrinking to the task's end, 20 iterations a cycle, each cycle's
    measured solve time its delay) holds both."""
    import dataclasses

    task = dataclasses.replace(
        load_task("task_pendulum_swingup_bounded"),
        mpc={"period": 0.1, "shrinking": True, "min_horizon": 20, "max_iterations": 20},
    )
    ok = {}
    for c in ("tvlqr", "oracle", "mpc"):
        res = robustness_sweep(
            task,
            "sweep_pendulum.yaml",
            samples=2,
            backend="serial",
            progress=False,
            plot=False,
            log=lambda s: None,
            controller=c,
        )
        recs = sorted(res.records, key=lambda r: r["sample"])
        assert all(r["controller"] == c and r["failure"] is None for r in recs), recs
        ok[c] = [r["success"] for r in recs]
        if c == "mpc":
            assert all(0 < r["solve_p50"] <= r["solve_max"] for r in recs)
    assert ok == {"tvlqr": [False, True], "oracle": [True, True], "mpc": [True, True]}, ok
    with pytest.raises(SweepError, match="controller: expected one of"):
        robustness_sweep(task, "sweep_pendulum.yaml", samples=1, backend="serial", controller="lqr")


class _StepClock:
    """A solve clock on which every MPC cycle takes ``solve`` seconds: ``mpc_closed_loop`` reads it before and after
    each cycle."""

    def __init__(self, solve: float):
        self.t, self.solve, self.calls = 0.0, solve, 0

    def __call__(self) -> float:
        self.calls += 1
        if self.calls % 2 == 0:
            self.t += self.solve
        return self.t


def test_the_mpc_loop_delays_each_plan_by_its_solve_time_and_leads_by_the_solves_before(nominal):
    """The sweep's MPC loop (``mpc_closed_loop``) on a clock where each cycle takes 0.25 s (2.5 steps of Δt = 0.1 s):
    the first cycle (no solve measured yet) plans one step ahead and its plan is entered 3 steps on, once its solve
    time has passed (late: its first steps skipped); every later cycle leads by ceil(1.5 × 0.25 / Δt) = 4 steps,
    and is entered 4 steps on; no cycle starts while a plan waits to be entered — each starts at the step its
    predecessor's plan is entered (a cycle every step, period Δt)."""
    import dataclasses

    from vi_control.sweep.rollout import mpc_closed_loop

    spec, vi, plan = nominal
    task = dataclasses.replace(
        load_task(TASK), mpc={"period": 0.1, "shrinking": True, "min_horizon": 10, "max_iterations": 5}
    )
    run = mpc_closed_loop(vi, vi, task, start_pair(vi, plan.X[0]), clamp=False, clock=_StepClock(0.25))
    assert run["failure"] is None and run["solves"] == [0.25] * len(run["cycles"])
    cycles = run["cycles"]
    assert len(cycles) >= 10 and cycles[0] == (1, 1, 4), cycles[:3]
    for (_, _, ready), (k_next, _, _) in zip(cycles, cycles[1:]):
        assert ready is not None and k_next == ready, cycles
    assert all(lead == 4 and ready == k + 4 for k, lead, ready in cycles[1:] if ready is not None), cycles
