"""Sweeps on a real local Ray instance (one for the whole module: its start-up takes ~10 s): the same records
as the serial run bit for bit, a worker killed mid-sweep retried with nothing lost or duplicated, raising
tasks recorded, an interrupted Ray sweep resumed, no rclpy in the workers, the library, the CLI and the
benchmark's smoke run."""

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from benchmark_scripts import load_benchmark

ray = pytest.importorskip("ray")
from ray import cloudpickle  # noqa: E402

from vi_control.control.plan import Plan  # noqa: E402
from vi_control.planning import load_task, plan_task  # noqa: E402
from vi_control.sweep import plan_library, ray_session, robustness_sweep  # noqa: E402
from vi_control.sweep.rollout import cached_system, portable_spec, robustness_sample  # noqa: E402

# Workers cannot import this test module: its functions travel by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

TASK = "task_pendulum_swingup"
CFG = {
    "samples": 6,
    "seed": 11,
    "success": {"clamp": False, "hold_time": 1.0},
    "perturbations": {
        "mass_scale": [0.9, 1.1],
        "damping": [0.0, 0.05],
        "actuator_gain": [0.95, 1.05],
        "sensor_noise": [0.0, 0.002],
        "q0_offset": [-0.05, 0.05],
        "qdot0_offset": [-0.1, 0.1],
    },
}


@pytest.fixture(scope="module")
def local_ray():
    with ray_session(num_cpus=2) as startup:
        yield startup


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def ray_head(tmp_path_factory):
    """A one-node cluster started as a user would (`ray start --head`), with its own token; it starts in the
    background while the other tests run, and is stopped by its process group at the end."""
    d = tmp_path_factory.mktemp("ray_head")
    (d / "token").write_text(secrets.token_hex(32))
    env = dict(os.environ, RAY_AUTH_MODE="token", RAY_AUTH_TOKEN_PATH=str(d / "token"))
    port = _free_port()
    ray_cli = Path(sys.executable).parent / "ray"
    log = open(d / "head.log", "w")  # noqa: SIM115 - closed at teardown
    proc = subprocess.Popen(
        [
            str(ray_cli),
            "start",
            "--head",
            "--block",
            f"--port={port}",
            "--num-cpus=1",
            "--include-dashboard=false",
            f"--dashboard-agent-listen-port={_free_port()}",
            "--disable-usage-stats",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,
    )

    def wait_ready(timeout=180.0):
        t0 = time.monotonic()
        while "Ray runtime started" not in (d / "head.log").read_text():
            assert proc.poll() is None, (d / "head.log").read_text()[-2000:]
            assert time.monotonic() - t0 < timeout, "ray start --head did not come up"
            time.sleep(0.5)
        return f"127.0.0.1:{port}", env

    yield wait_ready
    os.killpg(proc.pid, signal.SIGTERM)  # ray start --block stops its GCS and raylet on SIGTERM ...
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:  # ... or they go with their whole process group (all started here)
        os.killpg(proc.pid, signal.SIGKILL)
    log.close()


@pytest.fixture(scope="module")
def plan():
    task = load_task(TASK)
    return plan_task(cached_system(portable_spec(task.model_spec), task.dt), task)[0]


@pytest.fixture(scope="module")
def serial(plan):
    return robustness_sweep(TASK, CFG, plan=plan, backend="serial", progress=False)


def sweep(plan, **kw):
    return robustness_sweep(TASK, CFG, plan=plan, progress=False, **kw)


def test_ray_sweep_equals_the_serial_run_bit_for_bit(local_ray, plan, serial):
    res = sweep(plan)
    assert res.stats.backend == "ray" and res.stats.cluster_cpus == 2.0 and res.stats.startup_s == 0.0
    assert res.records == serial.records  # every float, as JSON keeps them
    assert res.summary == serial.summary
    assert len({r["params"]["mass_scale"] for r in res.records}) == 6  # each sample its own plant


def _die_once(payload, shared):
    """Kill this worker process (SIGKILL, mid-task) the first time sample 2 runs."""
    if payload["sample"] == 2:
        try:
            os.close(os.open(shared["marker"], os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            os.kill(os.getpid(), signal.SIGKILL)
        except FileExistsError:
            pass
    return robustness_sample(payload, shared)


def _with_marker(marker):
    def fn(payload, shared):
        return _die_once(payload, {**shared, "marker": str(marker)})

    return fn


def test_killed_worker_is_retried_and_nothing_is_lost_or_duplicated(local_ray, plan, serial, tmp_path):
    marker = tmp_path / "killed"
    res = sweep(plan, out_dir=tmp_path / "out", plot=False, max_retries=2, sample_fn=_with_marker(marker))
    assert marker.exists()  # a worker did die mid-sweep
    assert res.records == serial.records and res.stats.errors == 0
    keys = [json.loads(line)["key"] for line in (tmp_path / "out" / "results.jsonl").read_text().splitlines()[1:]]
    assert sorted(keys) == list(range(6))  # once each


def test_killed_worker_without_retries_is_an_error_record(local_ray, plan, serial, tmp_path):
    res = sweep(plan, max_retries=0, sample_fn=_with_marker(tmp_path / "killed"))
    assert "WorkerCrashedError" in res.records[2]["error"] and res.stats.errors == 1
    assert [r for i, r in enumerate(res.records) if i != 2] == [r for i, r in enumerate(serial.records) if i != 2]


def _raise_on_three(payload, shared):
    if payload["sample"] == 3:
        raise FloatingPointError("diverged on purpose")
    return robustness_sample(payload, shared)


def test_raising_task_is_recorded_on_ray(local_ray, plan, serial):
    res = sweep(plan, sample_fn=_raise_on_three)
    assert res.records[3]["error"] == "FloatingPointError: diverged on purpose"
    assert "_raise_on_three" in res.records[3]["traceback"]
    assert res.summary["errors"] == 1 and res.summary["samples"] == 6
    assert [r for i, r in enumerate(res.records) if i != 3] == [r for i, r in enumerate(serial.records) if i != 3]


def test_interrupted_ray_sweep_resumes(local_ray, plan, serial, tmp_path):
    seen = []

    def interrupt(rec):
        seen.append(rec)
        if len(seen) == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        sweep(plan, out_dir=tmp_path, plot=False, on_result=interrupt)
    res = sweep(plan, out_dir=tmp_path, plot=False)
    assert res.stats.resumed == 1 and res.stats.computed == 5  # the pending tasks were cancelled, not stored
    assert res.records == serial.records


def _rclpy_loaded(payload, shared):
    rec = robustness_sample(payload, shared)
    return rec | {
        "rclpy": "rclpy" in sys.modules,
        "pid": os.getpid(),
        "ros": sorted(m for m in sys.modules if m.startswith("vi_control.ros")),
    }


def test_workers_never_import_rclpy(local_ray, plan):
    res = robustness_sweep(TASK, {**CFG, "samples": 4}, plan=plan, progress=False, sample_fn=_rclpy_loaded)
    assert all(r["rclpy"] is False and r["ros"] == [] for r in res.records)
    assert all(r["pid"] != os.getpid() for r in res.records)


def _with_build_stats(payload, shared):
    from vi_control.mechanics.codegen import build_stats

    rec = robustness_sample(payload, shared)
    p = payload["params"]
    plant = cached_system(shared["spec"], shared["plan"].dt, p["mass_scale"], p["damping"])
    return rec | {"pid": os.getpid(), "plant": id(plant), "compiled": build_stats["compiled"]}


def test_workers_build_each_model_once_from_the_node_compile_cache(local_ray, plan):
    """A plant shared by all samples (fixed mass scale): built once per worker, its C loaded from the disk
    cache the driver's serial run filled — no worker runs gcc."""
    cfg = {**CFG, "perturbations": {"mass_scale": 1.07, "sensor_noise": [0.0, 1e-3]}}
    serial = robustness_sweep(TASK, cfg, plan=plan, backend="serial", progress=False)
    res = robustness_sweep(TASK, cfg, plan=plan, progress=False, sample_fn=_with_build_stats)
    per_worker = {}
    for r in res.records:
        per_worker.setdefault(r["pid"], set()).add(r["plant"])
        assert r["compiled"] == 0
    assert all(len(ids) == 1 for ids in per_worker.values())
    strip = ("pid", "plant", "compiled")
    assert [{k: v for k, v in r.items() if k not in strip} for r in res.records] == serial.records


def test_library_on_ray_equals_serial(local_ray, tmp_path):
    goals = [["pi"], [-2.8]]
    a = plan_library(TASK, goals, tmp_path / "ray", progress=False)
    b = plan_library(TASK, goals, tmp_path / "serial", backend="serial", progress=False)
    assert a.stats.backend == "ray" and a.index == b.index
    for entry in a.index:
        pa, pb = (Plan.load(str(tmp_path / d / entry["file"])) for d in ("ray", "serial"))
        assert all(np.array_equal(getattr(pa, n), getattr(pb, n)) for n in ("X", "U", "K", "K_final"))


def test_cli_robustness_and_library(local_ray, tmp_path, capsys):
    from vi_control.sweep.cli import main

    cfg = tmp_path / "sweep.yaml"
    cfg.write_text(json.dumps({**CFG, "samples": 3}))
    assert (
        main(["robustness", "--task", TASK, "--config", str(cfg), "--out", str(tmp_path / "r"), "--no-progress"]) == 0
    )
    out = capsys.readouterr().out
    assert "success rate (95 % CI)" in out and "3 rollouts run" in out
    assert (tmp_path / "r" / "robustness.png").exists()
    assert json.loads((tmp_path / "r" / "summary.json").read_text())["samples"] == 3
    assert (
        main(
            [
                "library",
                "--task",
                TASK,
                "--goals",
                "library_pendulum",
                "--out",
                str(tmp_path / "l"),
                "--serial",
                "--no-progress",
            ]
        )
        == 0
    )
    index = json.loads((tmp_path / "l" / "index.json").read_text())["plans"]
    assert len(index) == 5 and index[-1]["goal"] == [np.pi] and index[-1]["converged"]
    bad = tmp_path / "bad.yaml"
    bad.write_text("perturbations: {mass_scale: [0, 1]}")
    assert main(["robustness", "--task", TASK, "--config", str(bad), "--out", str(tmp_path / "x")]) == 2
    assert "perturbations.mass_scale: must stay positive" in capsys.readouterr().err


def test_cli_joins_a_running_cluster_by_address(ray_head, plan, tmp_path):
    """A separate driver process joins the `ray start` cluster with --address: same records as serial."""
    address, env = ray_head()
    cfg = tmp_path / "sweep.yaml"
    cfg.write_text(json.dumps({**CFG, "samples": 2}))
    exe = Path(sys.executable).parent / "vi_sweep"
    out = subprocess.run(
        [
            str(exe),
            "robustness",
            "--task",
            TASK,
            "--config",
            str(cfg),
            "--out",
            str(tmp_path / "o"),
            "--address",
            address,
            "--no-plot",
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "2 rollouts run" in out.stdout and "(ray)" in out.stdout
    lines = (tmp_path / "o" / "results.jsonl").read_text().splitlines()[1:]
    got = sorted((json.loads(line) for line in lines), key=lambda r: r["key"])
    serial = robustness_sweep(TASK, {**CFG, "samples": 2}, plan=plan, backend="serial", progress=False)
    assert got == serial.records


def test_bench_sweep_smoke(local_ray, tmp_path):
    bench_sweep = load_benchmark("bench_sweep")  # (registered in sys.modules: its Ray tasks pickle it by value)
    res = bench_sweep.run(n_pendulum=3, n_panda=1, rounds=1, out=tmp_path)
    assert [c["case"] for c in res["cases"]] == ["pendulum", "panda"]
    assert all(c["identical_to_serial"] and c["errors"] == 0 for c in res["cases"])
    assert (tmp_path / "sweep.md").exists() and (tmp_path / "sweep_panda.png").exists()
    assert all(len(c["ceiling_per_round"]) == 1 and c["ceiling_median"] > 0 for c in res["cases"])
    assert "parallel ceiling" in (tmp_path / "sweep.md").read_text()
    assert bench_sweep.spin({"n": 5}, {})["s"] == 10
