"""Smoke tests of the benchmark scripts: each runs at a small size through the code path that produces
its published table, so a script cannot rot unnoticed. No timing asserts: the figures themselves are the
scripts' job (benchmarks/results/summary.md); here only their structure and the facts that do not depend on speed.
(benchmarks/bench_energy.py: test_integrator_bench_energy.py; bench_ros.py: test_ros_bench_smoke.py; bench_sweep.py:
test_sweep_ray.py, which shares one Ray instance across its tests.)"""

import sys
from pathlib import Path

import numpy as np
import pytest
from benchmark_scripts import BENCHMARKS, load_benchmark


def test_every_benchmark_script_has_a_smoke_test():
    covered = {
        "bench_energy": "test_integrator_bench_energy.py",
        "bench_ros": "test_ros_bench_smoke.py",
        "bench_convergence": "test_planning_convergence.py",
        "bench_sweep": "test_sweep_ray.py",
    }  # shares that module's Ray instance
    here = Path(__file__).read_text()
    for script in sorted(BENCHMARKS.glob("bench_*.py")):
        name = script.stem
        if name in covered:
            assert list(Path(__file__).resolve().parents[1].rglob(covered[name])), name
        else:
            assert f'load_benchmark("{name}")' in here, f"{name} has no smoke test"


def test_step_benchmark_smoke():
    bench = load_benchmark("bench_step")
    from vi_control.model.generate import planar_chain_urdf

    row = bench.bench_model("chain3", planar_chain_urdf(3), None, 0.01, rounds=2, mujoco=None)
    assert row["nq"] == 3 and row["backend"] in ("C Newton", "CasADi VM")
    for key in ("exact", "chord", "quasi", "aba"):
        assert np.isfinite(row[key]) and row[key] > 0 and row[f"{key}_med"] >= row[key]  # min ≤ median
    for key in ("chord/aba", "quasi/aba", "exact/aba", "exact/chord"):
        median, least = row["ratios"][key]
        assert median >= least > 0, key
    assert len(row["load"]) == 2 and row["rounds"] == 2
    assert 1.0 <= row["it_exact"] <= row["it_chord"] + 1e-12 < 30  # chord needs at least exact's updates
    assert 1.0 <= row["it_exact"] <= row["it_quasi"] + 1e-12 < 30
    assert row["cold"] > 0 and row["warm"] > 0
    table = bench.table([row])
    assert "| chain3 | 3 | 10 ms |" in table and "cold build" in table
    if row["backend"] == "C Newton":
        for root_check in (True, False):
            out = bench.breakdown(
                "chain3", planar_chain_urdf(3), None, 0.01, rounds=1, newton="chord", root_check=root_check
            )
            assert "MidpointVI.step" in out and "(= full)" in out and f"root check {root_check}" in out


def test_linearization_benchmark_smoke():
    bench = load_benchmark("bench_linearization")
    row = bench.run("pendulum", rounds=1)
    assert (row["nq"], row["nx"], row["nu"], row["nc"]) == (1, 2, 1, 0)
    assert row["fd_err"] < 1e-6  # exact A, B against central differences of the step
    for key in ("step", "fd", "first", "contraction", "full"):
        assert row[key] > 0
    table = bench.table([row])
    assert table.count("\n| ") == 2 - 1 + 1 and "| pendulum | 1 / 2 / 1 / 0 |" in table


def test_tree_derivatives_benchmark_smoke():
    bench = load_benchmark("bench_tree_derivatives")
    lib = bench._harness()
    row = bench.bench_model("acrobot", bench.MODELS["acrobot"](), lib, rounds=2, batch_s=0.001)
    assert row["nq"] == 2 and row["err"] < 1e-12  # the recursion is the generated functions' numbers
    for key in ("linearize generated", "linearize recursive", "hessian generated", "hessian recursive"):
        median, least = row[key]
        assert median >= least > 0, key
    assert row["linearize choice"] == row["hessian choice"] == "generated"  # 466 and 429 instructions for 2 joints
    plan = bench.bench_plan("task_pendulum_swingup", plans=2, rounds=1)
    assert plan["samples"] == 2 and all(x > 0 for x in plan["ratio"])
    assert bench.discrete.RECURSIVE_DERIVATIVES  # (restored)
    table = bench.table([row], plan)
    assert table.count("\n| ") == 1 and "\n| acrobot | 2 |" in table  # (one row: the model's)
    assert "task_pendulum_swingup, the whole plan" in table
    build, first = bench.cold_first_plan("task_pendulum_swingup", recursive=True)
    assert build > 0 and first > 0
    cold = {"task": "task_pendulum_swingup", True: (build, first), False: (build, first)}
    assert "the first plan on an empty compile cache" in bench.table([row], plan, cold)


def test_linear_time_benchmark_smoke(tmp_path, monkeypatch):
    bench = load_benchmark("bench_linear_time")
    monkeypatch.setattr(bench, "RESULTS", tmp_path)
    monkeypatch.setattr(
        sys,
        "argv",
        [
            "bench_linear_time.py",
            "--steps",
            "20",
            "--sizes",
            "3",
            "--no-midpoint",
            "--backends",
            "c",
            "--name",
            "smoke",
        ],
    )
    monkeypatch.setattr(bench, "per_call", lambda fn, min_time=0.3: (fn(), 1e-6)[1])  # one call each
    bench.main()
    md = (tmp_path / "smoke.md").read_text()
    assert "| 3 |" in md and "IG1" in md
    assert (tmp_path / "smoke.json").stat().st_size > 100 and (tmp_path / "smoke.png").stat().st_size > 1000


def test_planner_benchmark_smoke(tmp_path, monkeypatch):
    bench = load_benchmark("bench_planner")
    monkeypatch.setattr(bench, "RESULTS", tmp_path)
    rows, runs = bench.ours(rounds=1, gradient_iterations=3)
    methods = [r["method"] for r in rows]
    assert methods == ["ddp", "ilqr", "gradient", "open-loop gradient (baseline)"]
    ddp = rows[0]
    # REFERENCE §2: the second-order method converges in at most 14 iterations, to the upright.
    assert ddp["converged"] and ddp["iterations"] <= 14 and ddp["q_final"] == pytest.approx(np.pi, abs=1e-3)
    assert rows[1]["cost"] == pytest.approx(ddp["cost"], rel=1e-8)
    assert rows[3]["iterations"] == 3 and not rows[3]["converged"]
    table = bench.table(rows + [dict(tool="crocoddyl", method="-", note="failed: x|y")])
    assert table.count("\n| ") == 5 and "x\\|y" in table
    bench.plots(runs)
    assert (tmp_path / "pendulum_swingup.png").stat().st_size > 1000
    # The task comparison without its peer (the Crocoddyl venv is the benchmark's, not the suite's).
    rows, note = bench.tasks_vs_peer(("pendulum_swingup",), rounds=1, py=None, numpy_rounds=1)
    assert [r["path"] for r in rows] == ["compiled", "numpy"] and note == ""
    assert rows[0]["iterations"] == rows[1]["iterations"] and rows[0]["converged"]
    assert 0 < rows[0]["opt_min"] <= rows[0]["cpu_min"] and "| pendulum_swingup |" in bench.task_table(rows)
    # the plan's compiled passes: timed on the compiled path only (wall time: no comparison with CPU times), the timer
    # undone after
    from vi_control.planning.compiled import CompiledStages

    assert 0 < rows[0]["c_min"] <= rows[0]["c_median"] and rows[1]["c_min"] is None
    assert not hasattr(CompiledStages._run, "original")
    assert f"| {rows[0]['c_min']:.1f} / {rows[0]['c_median']:.1f} |" in bench.task_table(rows)


def test_planner_benchmark_peer_problems_are_the_tasks():
    """What the Crocoddyl worker is given: the task's horizon, weights, bounds and passive joints, and the URDF with
    continuous joints as revolute ones (one angle each, as in vi_control) — read back here with our Pinocchio."""
    import pinocchio as pin

    from vi_control.planning import load_task, make_system

    bench = load_benchmark("bench_planner")
    peer = load_benchmark("crocoddyl_peer")
    task = load_task("task_cartpole_swingup")
    vi = make_system(task, compile=False)
    spec = bench.task_spec(task, vi)
    assert (spec["N"], spec["dt"], spec["actuated"], spec["limits"]) == (60, 0.05, [0], [20.0])
    assert spec["bounded"] and spec["terminal_constraint"] and np.allclose(spec["goal"], [0, np.pi, 0, 0])
    assert np.array(spec["X_ref"]).shape == (61, 4) and np.array(spec["U0"]).shape == (60, 2)
    variants = bench.peer_specs("cartpole_swingup", spec)
    assert sorted(variants) == ["cartpole_swingup|AL", "cartpole_swingup|stiff Qf"]
    assert variants["cartpole_swingup|stiff Qf"]["Qf"][0] == spec["Qf"][0] * bench.STIFF_QF
    model = pin.buildModelFromXML(peer.revolute(spec["urdf_xml"]))
    assert (model.nq, model.nv) == (2, 2) and list(model.names)[1:] == vi.robot.joint_names


def test_planner_benchmark_gives_the_peer_its_own_guess_and_ours():
    """The panda reach starts from our feedback guess; the peer gets gravity compensation at the start (its
    quasiStatic: our inputs, open loop in its Euler model, diverge) and, as a variant of its own, our guess as
    states and inputs — the rollout of those inputs in our model, in (q, v)."""
    import dataclasses

    from vi_control.planning import load_task, make_system, reference_trajectory, start_state
    from vi_control.planning.pipeline import initial_inputs

    bench = load_benchmark("bench_planner")
    task = load_task("task_panda_reach")
    assert task.initial_guess == "feedback"
    vi = make_system(task)
    x0 = start_state(task, vi)
    X_ref, U_ref = reference_trajectory(task, vi, x0)
    variants = bench.peer_specs("panda_reach", bench.task_spec(task, vi))
    assert sorted(variants) == ["panda_reach", "panda_reach|our guess"]
    own, ours = variants["panda_reach"], variants["panda_reach|our guess"]
    held = initial_inputs(dataclasses.replace(task, initial_guess="hold_start"), vi, x0, X_ref, U_ref)
    assert np.allclose(own["U0"], held) and "X0" not in own
    assert np.allclose(ours["U0"], initial_inputs(task, vi, x0, X_ref, U_ref))
    X0 = np.array(ours["X0"])
    assert X0.shape == (21, 14) and np.allclose(X0[0, :7], x0[:7]) and np.all(X0[-1, 7:] == 0)
    assert np.allclose(np.diff(X0[:, :7], axis=0) / task.dt, X0[:-1, 7:])


def test_planner_benchmark_pins_itself_and_its_peer_to_one_cpu():
    import os

    bench = load_benchmark("bench_planner")
    before = os.sched_getaffinity(0)
    try:
        assert bench.pin_to_one_cpu(-1) is None and os.sched_getaffinity(0) == before
        cpu = bench.pin_to_one_cpu(None)
        assert cpu == min(before) and os.sched_getaffinity(0) == {cpu}
    finally:
        os.sched_setaffinity(0, before)


def test_nonholonomic_benchmark_smoke(tmp_path):
    bench = load_benchmark("bench_nonholonomic")
    result = bench.run(rounds=1, energy_steps=500, sympy=False, out=tmp_path)
    assert [r["what"].split(",")[1].split(":")[0].strip() for r in result["speed"]] == ["sleigh", "diffdrive"]
    assert all(r["us"] > 0 and r["driver_us"] > 0 and r["base_us"] > 0 for r in result["speed"])
    errors = {r["what"]: r["error"] for r in result["snake"]}
    e_rk2 = errors["snakeboard, 128 steps (T = 10 s), rk2"]
    # Kobilarov2010, Fig. 4: GNI and RDP stay on the trajectory, RK2 does not
    for k in ("gni", "rdp exp", "rdp cayley"):
        assert errors[f"snakeboard, 128 steps (T = 10 s), {k}"] < e_rk2 / 10
    # the RDP's in-process baseline (its numpy Newton loop) ends where the C driver does
    base = errors["snakeboard, 128 steps (T = 10 s), rdp exp, numpy Newton loop"]
    assert base == pytest.approx(errors["snakeboard, 128 steps (T = 10 s), rdp exp"], rel=1e-9)
    assert result["energy"]["energy_rel"] < 1e-13 and result["energy"]["constraint"] < 1e-13
    assert "| GNI step, sleigh" in result["table"] and "snakeboard, 512 steps, gni" in result["table"]
    for f in result["files"]:
        assert f.stat().st_size > 10_000
    assert not result["side_by_side"]


def test_nonholonomic_benchmark_sympy_model_is_the_sleigh():
    """The SymPy KanesMethod sleigh (the side-by-side peer) is the same system as the Lagrange–d'Alembert one."""
    pytest.importorskip("sympy")  # benchmark-only dependency (benchmarks/requirements-bench-nonholonomic.txt)
    rhs, energy = load_benchmark("bench_nonholonomic").sympy_sleigh_rhs()
    z = np.array([0.1, 0.2, 0.3, -1.0, 2.0, 1.0])  # (x, y, θ, u1, ω, u2 = aω)
    dz = rhs(0.0, z)
    c, s = np.cos(0.3), np.sin(0.3)
    assert dz[:3] == pytest.approx([c * -1.0 - s * 1.0, s * -1.0 + c * 1.0, 2.0])
    assert energy(z) == pytest.approx(0.5 * (1.0 + 1.0) + 0.5 * 0.2 * 4.0)


def test_collocation_benchmark_smoke(tmp_path):
    """bench_collocation.py at tiny sizes (N = 6, biped N = 4), no Drake: every table, the DDP rows, the gait replay,
    the three figures."""
    import json

    bench = load_benchmark("bench_collocation")
    res = bench.main(["--quick", "--rounds", "1", "--no-external", "--out", str(tmp_path)])
    for key in ("pendulum", "cartpole", "biped", "biped_pinned"):
        (row,) = res[key]
        for m in ("lg", "lg2"):
            assert row[m]["iterations"] > 0 and row[m]["t_med"] > 0
    assert res["pendulum"][0]["lg2"]["success"] and res["pendulum"][0]["lg2"]["E2"] > 0
    (row,) = res["pendulum_starts"]  # every straight-line start solved by both methods
    assert all(len(row[m]["iterations"]) == len(row[m]["tfs"]) == 5 for m in ("lg", "lg2"))
    assert res["cartpole"][0]["lg"]["E2_split"][0][0] > 0 == res["cartpole"][0]["lg2"]["E2_split"][0][0]
    for key, m in (("biped", 7), ("biped_pinned", 5)):  # the split over the table's coordinates (absolute angles)
        lg, lg2 = res[key][0]["lg"]["E2_split"], res[key][0]["lg2"]["E2_split"]
        assert len(lg[0]) == len(lg2[1]) == m and sum(lg[0]) > 0 == sum(lg2[0])
    assert {r["problem"] for r in res["ddp"]} == {"pendulum", "cartpole"}
    assert len(res["replay"]["deviation"]) == 11 and len(res["replay"]["perturbed"]) == 11
    text = (tmp_path / "collocation.md").read_text()
    assert "Pendulum minimum-time swing-up" in text and "| N | E² LG |" in text and "each straight-line start" in text
    assert json.loads((tmp_path / "collocation.json").read_text())["rounds"] == 1
    for png in ("collocation.png", "collocation_error_time.png", "collocation_gait.png"):
        assert (tmp_path / png).stat().st_size > 10_000


def test_model_load_benchmark_smoke():
    bench = load_benchmark("bench_model_load")
    rows = bench.bench([20, 40], rounds=1, dense_max=20)
    assert [r["links"] for r in rows] == [20, 40]
    assert rows[0]["dense"] is not None and rows[1]["dense"] is None and rows[0]["ratio"] > 0
    assert all(r["load"][0] >= r["load"][1] >= 0 for r in rows)
    assert "| 40 |" in bench.table(rows)


def test_collocation_size_benchmark_smoke(tmp_path):
    """bench_collocation_size --quick: two small builds in subprocesses, each row with the estimate's variables equal
    to the built NLP's, and the table."""
    bench = load_benchmark("bench_collocation_size")
    rows = bench.main(["--quick", "--json", str(tmp_path / "rows.json")])
    assert [(r["model"], r["method"]) for r in rows] == [("pendulum", "lg2"), ("cartpole", "lg")]
    assert all(r["variables"] == r["predicted_variables"] and r["cpu"] >= 0 and r["rss_mb"] > 0 for r in rows)
    assert "| cartpole (2) | LG | 5 × 2 |" in bench.table(rows) and (tmp_path / "rows.json").exists()


def test_soak_benchmark_smoke(tmp_path, monkeypatch):
    """bench_soak at 3000 steps on a 4-link chain: structure, bounded energy error, memory figures, files."""
    bench = load_benchmark("bench_soak")
    result = bench.soak(steps=3000, dt=5e-3, n_links=4, sample=10, windows=3)
    assert result["steps_done"] == 3000 and result["failure"] is None
    s = result["series"]
    assert s["t"].shape == s["error"].shape == (301,) and s["t"][-1] == pytest.approx(15.0)
    # E0 of the chain released at rest (potential only): rods at absolute angles φ_i = q_1 + … + q_i
    phi = np.cumsum(bench.initial_configuration(4))
    z = -(np.concatenate([[0.0], np.cumsum(np.cos(phi))[:-1]]) + 0.5 * np.cos(phi))
    assert result["E0"] == pytest.approx(9.81 * z.sum(), rel=1e-9)
    assert result["max_abs_error"] < 1e-2 * abs(result["E0"]) and np.isfinite(result["drift"])
    assert len(result["max_error_per_window"]) == 3 and max(result["max_error_per_window"]) == result["max_abs_error"]
    assert result["rss_end_mb"] > 0 and result["rss_max_mb"] >= result["rss_start_mb"]
    assert "max |E − E0| per window" in bench.report(result)
    monkeypatch.setattr(bench, "RESULTS", tmp_path)
    bench.save(result, "soak_smoke")
    assert (tmp_path / "soak_smoke.json").is_file() and (tmp_path / "soak_smoke.png").is_file()
    # at Δt = 0.5 s the bent chain's step cannot be vouched for: the run ends there, reported, not skipped
    refused = bench.soak(steps=50, dt=0.5, n_links=4, sample=1, windows=1)
    assert refused["steps_done"] < 50 and refused["failure"].startswith(f"step {refused['steps_done']}:")


def test_lie_energy_benchmark_smoke(tmp_path):
    """benchmarks/bench_lie_energy.py: rows, exact momentum and group for the VI, |q| drift."""
    bench = load_benchmark("bench_lie_energy")
    res = bench.run_benchmark(steps=300, dt=0.5)
    vi, rk, rkn = res["rows"]
    assert [r["name"] for r in res["rows"]] == [
        "Lie-group VI (Cayley, SO(3))",
        "RK4 on quaternions",
        "RK4 on quaternions, renormalized each step",
    ]
    for r in res["rows"]:
        assert r["energy"].shape == r["t"].shape == (301,) and r["energy"][0] == 0.0 and r["us_per_step"] > 0
    assert vi["momentum"] <= 1e-13 and vi["off_group"] <= 1e-13  # Noether and the group, to round-off
    assert rk["off_group"] > 1e-6 and rkn["off_group"] <= 1e-15  # |q| drifts unless renormalized
    assert rk["momentum"] > 1e3 * vi["momentum"] and np.isfinite(vi["drift"])
    assert "| Lie-group VI" in bench._table(res)
    bench._plot(res, tmp_path / "lie_energy.png")
    assert (tmp_path / "lie_energy.png").stat().st_size > 1000


def test_dmoc_benchmark_smoke(tmp_path):
    """benchmarks/bench_dmoc.py: one maneuver, one round; rows agree where they must."""
    bench = load_benchmark("bench_dmoc")
    res = bench.run_benchmark(rounds=1, n_maneuvers=1, coast_steps=50)
    name = res["maneuvers"][0]
    rows = {m: res["rows"][name, m] for m in ("dmoc-split", "dmoc-hold", "ipopt", "rk4")}
    assert all(r["converged"] for r in rows.values())
    assert rows["dmoc-split"]["iterations"] <= 10
    assert abs(rows["ipopt"]["cost"] - rows["dmoc-split"]["cost"]) <= 1e-8  # the identical problem
    assert abs(rows["rk4"]["cost"] - rows["dmoc-hold"]["cost"]) <= 0.05 * rows["dmoc-hold"]["cost"]  # same task
    assert rows["dmoc-hold"]["off_group"] <= 1e-13 and 1e-8 < rows["rk4"]["off_group"] < 1e-2
    assert 0 < rows["rk4"]["replay"] < 0.1 and 0 < rows["dmoc-hold"]["replay"] < 0.1
    c = res["coast"]
    assert c["vi"]["rel"].shape == (51,) and c["vi"]["quat"] <= 1e-13 and c["rk4"]["quat"] > 0
    text = bench.table(res)
    assert name in text and "RK4 on quaternions" in text
    l1 = bench.run_l1()
    assert l1["bang_fraction"] >= 0.95
    bench.plot(res, l1, tmp_path)
    for png in ("dmoc.png", "l1_so3.png", "dmoc_uuv.png"):
        assert (tmp_path / png).stat().st_size > 1000


def test_dmoc_scan_smoke():
    """benchmarks/bench_dmoc.py's scan on two goals, held inputs, the other body only: the shares
    add up, every answer is a verified minimum, the goals are within the scan's ranges, the table names its rows."""
    bench = load_benchmark("bench_dmoc")
    goals = bench.random_goals(200, seed=3)
    t = np.array([np.linalg.norm(g[:3, 3]) for g in goals])
    ang = np.array([np.degrees(np.arccos(np.clip((np.trace(g[:3, :3]) - 1) / 2, -1, 1))) for g in goals])
    assert t.max() <= 2.0 and ang.max() <= 60.0 + 1e-9 and t.max() > 1.8 and ang.max() > 55.0
    other = bench.load_rigid_body(bench.OTHER_BODY)
    assert np.abs(other.inertia - np.diag(np.diag(other.inertia))).max() > 0  # a full tensor
    assert np.abs(other.damping - np.diag(np.diag(other.damping))).max() > 0  # a full drag matrix
    assert all(np.linalg.norm(a.position) > 0.1 for a in other.actuators)  # off the centre
    scan = bench.run_scan(count=2, seed=0, modes=("hold",), bodies={"skewed_auv": other}, log=None)
    r = scan["rows"]["skewed_auv", "hold"]
    assert r["n"] == 2 and abs(r["newton_alone"] + r["ipopt"] - 1.0) < 1e-12
    assert abs(r["geodesic"] + r["coarse"] + r["continuation"] - r["newton_alone"]) < 1e-12
    assert r["verified"] == 1.0 and all(
        x.converged and x.check.min_eigenvalue > 0 for x in scan["results"]["skewed_auv", "hold"]
    )
    assert r["dearer"] + r["cheaper"] <= 1.0 and np.isfinite(r["worst"])
    assert "| skewed_auv | hold |" in bench.scan_table(scan)


def test_replan_benchmark_smoke():
    bench = load_benchmark("bench_replan")
    rows = bench.run(tasks=("pendulum_swingup",), offsets=(0.0, 0.05), rounds=1, log=lambda s: None)
    assert [r["offset"] for r in rows] == [0.0, 0.05]
    for r in rows:
        for way in ("cold", "warm"):
            assert r[way]["converged"] and r[way]["cpu_median"] >= r[way]["cpu_min"] > 0
        assert abs(r["warm"]["cost"] - r["cold"]["cost"]) <= 1e-6 * r["cold"]["cost"]  # the same optimum
    assert rows[0]["warm"]["iterations"] <= 2  # the first plan itself, followed from its own start
    assert bench.table(rows).count("| pendulum_swingup |") == 2


def test_requests_benchmark_smoke():
    bench = load_benchmark("bench_requests")
    summary = bench.run(n=4, seed=34, log=lambda s: None)
    assert summary["total"] == 4 and summary["planned"] == 4  # (the first 4 of the published 50)
    assert summary["cpu_max"] >= summary["cpu_median"] >= summary["cpu_min"] > 0
    text = bench.table(summary)
    assert text.startswith("4 of 4 requests planned (task_panda_reach, seed 34)") and text.count("| yes |") == 4


def test_mpc_benchmark_smoke():
    """benchmarks/bench_mpc.py on 3 cycles of the bounded pendulum swing-up at 50 Hz: the task re-timed to Δt = 20 ms
    over the same 10 s (N = 500, the step at 5 s), the cycle times ordered, every cycle accepted, the table's row."""
    bench = load_benchmark("bench_mpc")
    task = bench.retimed("pendulum_swingup_bounded", 50.0)
    assert (task.dt, task.horizon, task.reference["step_index"]) == (0.02, 500, 250)
    rows = bench.run(tasks=("pendulum_swingup_bounded",), rates=(50.0,), cycles=3, log=lambda s: None)
    r = rows[0]
    assert r["cycles"] == 3 and r["accepted"] == 3 and r["converged"]
    assert r["max"] >= r["p99"] >= r["p50"] > 0 and r["cold"] > 0 and 0.0 <= r["within"] <= 1.0
    assert "| pendulum_swingup_bounded | 50 Hz | 500 |" in bench.table(rows)
    # the windows the peer re-plans: each cycle's start on the task's grid (one step on per cycle), its length shrinking
    # to the deadline, its state in the peer's (q, v)
    starts, lengths = [w[0] for w in r["windows"]], [w[1] for w in r["windows"]]
    assert starts == [1, 2, 3] and lengths == [499, 498, 497]
    assert all(x.shape == (2,) and np.isfinite(x).all() for _, _, x in r["windows"])
    assert "| - | - |" in bench.table(rows)  # (no peer here: its columns empty)


def test_mpc_robustness_benchmark_smoke(tmp_path):
    """benchmarks/bench_mpc_robustness.py on 2 samples of the pendulum sweep, serially: the three controllers on
    the same samples, the oracle's feasible samples, the table's row and the figure."""
    bench = load_benchmark("bench_mpc_robustness")
    runs = bench.run_case("pendulum", 2, backend="serial", log=lambda s: None)
    assert set(runs) == {"tvlqr", "mpc", "oracle"} and all(set(r) == {0, 1} for r in runs.values())
    s = bench.summary(runs)
    assert s["oracle"]["n"] == 2 and 0.0 <= s["mpc_of_feasible"] <= 1.0 and s["mpc_solve_p50"] > 0
    assert "| pendulum | 2 |" in bench.table({"pendulum": s})
    bench.plot({"pendulum": runs}, tmp_path / "f.png")
    assert (tmp_path / "f.png").stat().st_size > 1000


def test_planner_benchmark_ratios_with_and_without_the_peers_problem_build():
    """Each of our rows carries two ratios to the fastest converged peer configuration: to its solve alone (the
    problem built at setup), and to its cold plan, the problem rebuilt and then solved (our plan's time builds ours:
    start, reference, cost, bounds); the peer's row shows its build time."""
    bench = load_benchmark("bench_planner")
    ours = [dict(cpu_ms=c, opt_cpu_ms=c - 1, iterations=4, converged=True, goal_error=0.0) for c in (5.0, 6.0, 7.0)]
    peer = [  # (the solve of the problem built at setup; the cold plan: rebuilt, then solved)
        dict(cpu_ms=c, build_ms=b, cold_ms=b + c - 0.5, iterations=6, converged=True, goal_error=0.0)
        for c, b in ((3, 2), (2, 4), (4, 1))
    ]
    slow = [dict(cpu_ms=9.0, build_ms=0.5, cold_ms=9.5, iterations=9, converged=False, goal_error=0.0)] * 3
    runs = {("t", "compiled"): ours, ("t", "crocoddyl"): peer, ("t", "crocoddyl|our guess"): slow}
    rows = bench.task_rows(["t"], runs, (0.0,) * 6)
    mine = next(r for r in rows if r["path"] == "compiled")
    assert mine["ratio"][:2] == (6.0 / 3.0, 5.0 / 2.0) and mine["ratio"][2] == "crocoddyl"  # (the unconverged one: no)
    assert mine["ratio_built"][:2] == (6.0 / 4.5, 5.0 / 4.5)  # cold: median of 4.5, 5.5, 4.5; min 4.5
    table = bench.task_table(rows)
    assert "| 2.00 / 2.50 (FDDP) | 1.33 / 1.11 (FDDP) |" in table and "its problem built in 2.0" in table
    # the after-idle table: the same rows and ratios, CPU only; nothing without the peer's venv
    idle = bench.idle_table(rows)
    assert "| t | vi_control DDP, compiled kernel (plan incl. gains) | 5.0 | 6.0 | 2.00 / 2.50 (FDDP) | 3 |" in idle
    assert bench.after_idle(("pendulum_swingup",), 1, None) == []
