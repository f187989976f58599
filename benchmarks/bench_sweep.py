"""Robustness sweeps on a local Ray instance vs the serial run in this process (REFERENCE §8).

Cases: 64 closed-loop rollouts of the bounded pendulum swing-up and 16 of the panda reach, each with its own
perturbed plant (config/sweep_pendulum.yaml, config/sweep_panda.yaml: mass, damping, actuator gain, noise,
initial offsets drawn per sample). Rounds interleave serial and Ray runs of the same samples; every Ray run's
records must equal the serial run's bit for bit. Wall-clock time (a parallel speed-up is a wall-clock claim),
median and min over rounds, with the machine's load average before and after. Ray start-up (ray.init) and the
workers' warm-up (imports, nominal models from the compile cache) are measured separately and excluded. Each
round also measures the machine's parallel ceiling: the same number of pure-Python loops run serially and as Ray
tasks — on a shared machine the speed-up granted to perfectly parallel work, which bounds the sweep's.

    .venv/bin/python benchmarks/bench_sweep.py [--pendulum 64] [--panda 16] [--num-cpus 2] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


_TIMING = ("cpu_s", "pid")


def _load() -> list[float]:
    return [round(v, 2) for v in os.getloadavg()]


def timed_sample(payload: dict, shared: dict) -> dict:
    """robustness_sample plus the CPU time it took in its process (stripped before comparing records)."""
    from vi_control.sweep.rollout import robustness_sample

    t = time.process_time()
    rec = robustness_sample(payload, shared)
    return rec | {"cpu_s": time.process_time() - t, "pid": os.getpid()}


def spin(payload: dict, shared: dict) -> dict:
    """A pure-Python CPU loop: the control task for the machine's parallel ceiling."""
    s = 0
    for i in range(payload["n"]):
        s += i
    return {"s": s, "pid": os.getpid()}


def parallel_ceiling(tasks: int, n: int = 3_000_000) -> tuple[float, float]:
    """(serial s, Ray s) of ``tasks`` equal pure-Python loops: the speed-up this machine grants right now to
    perfectly parallel work on the same Ray instance (on a shared machine this, not the core count, bounds the
    sweep's speed-up)."""
    from vi_control.sweep import run_tasks

    t = time.perf_counter()
    for _ in range(tasks):
        spin({"n": n}, {})
    serial = time.perf_counter() - t
    t = time.perf_counter()
    run_tasks(spin, [(i, {"n": n}) for i in range(tasks)], {}, progress=False)
    return serial, time.perf_counter() - t


def _strip(records: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in _TIMING} for r in records]


def _cases(n_pendulum: int, n_panda: int) -> list[dict]:
    from vi_control.planning import load_task, make_system, plan_task
    from vi_control.sweep import load_robustness_config
    from vi_control.sweep.rollout import cached_system, portable_spec

    cases = []
    # Panda's plan takes its derivatives on CasADi's VM (no minute-long gcc build of its Hessian on a cold cache);
    # the sweep's plants use the compiled step or the VM as the config says.
    for name, task_name, cfg_name, n, compile in (
        ("pendulum", "task_pendulum_swingup_bounded", "sweep_pendulum", n_pendulum, None),
        ("panda", "task_panda_reach", "sweep_panda", n_panda, False),
    ):
        if n <= 0:
            continue
        task = load_task(task_name)
        plan, res = plan_task(make_system(task, compile=compile), task)
        spec = portable_spec(task.model_spec)
        cached_system(spec, task.dt)  # the serial run's nominal model, built before any timing
        cases.append(
            {
                "name": name,
                "task": task_name,
                "plan": plan,
                "spec": spec,
                "dt": task.dt,
                "config": load_robustness_config(cfg_name, samples=n),
                "converged": res.converged,
            }
        )
    return cases


def run(
    n_pendulum: int = 64,
    n_panda: int = 16,
    num_cpus: int = 2,
    rounds: int = 3,
    out: Path | None = RESULTS,
    plots: bool = True,
) -> dict:
    from ray import cloudpickle

    from vi_control.sweep import ray_session, robustness_sweep, run_tasks
    from vi_control.sweep.report import plot_robustness
    from vi_control.sweep.rollout import warm_worker

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers cannot import this script
    cases = _cases(n_pendulum, n_panda)
    if out is not None:
        Path(out).mkdir(parents=True, exist_ok=True)
    load_before = _load()
    t0 = time.perf_counter()
    with ray_session(num_cpus=num_cpus) as init_s:
        t1 = time.perf_counter()
        import ray

        cpus = int(ray.cluster_resources().get("CPU", num_cpus))
        warm = run_tasks(
            warm_worker,
            [(i, None) for i in range(2 * cpus)],
            {"models": [(c["spec"], c["dt"]) for c in cases]},
            progress=False,
        )
        warm_s = time.perf_counter() - t1
        rows = []
        for c in cases:
            times = {"serial": [], "ray": []}
            cpu = {"serial": [], "ray": []}
            loads, identical, last, workers, ceiling = [], True, None, set(), []
            for _ in range(rounds):
                loads.append(round(os.getloadavg()[0], 2))
                ser, par = parallel_ceiling(cpus)
                ceiling.append(ser / par)
                for backend in ("serial", "ray"):
                    r = robustness_sweep(
                        None,
                        c["config"],
                        plan=c["plan"],
                        model=c["spec"],
                        backend=backend,
                        progress=False,
                        log=lambda s: None,
                        sample_fn=timed_sample,
                    )
                    times[backend].append(r.stats.run_s)
                    cpu[backend].append(sum(x["cpu_s"] for x in r.records))
                    if backend == "serial":
                        ref = _strip(r.records)
                    else:
                        identical &= _strip(r.records) == ref
                        workers |= {x["pid"] for x in r.records}
                        last = r
            med = {b: statistics.median(v) for b, v in times.items()}
            rows.append(
                {
                    "case": c["name"],
                    "task": c["task"],
                    "rollouts": c["config"].samples,
                    "steps_per_rollout": last.records[0].get("steps"),
                    "serial_s_median": med["serial"],
                    "serial_s_min": min(times["serial"]),
                    "ray_s_median": med["ray"],
                    "ray_s_min": min(times["ray"]),
                    "speedup_median": med["serial"] / med["ray"],
                    "speedup_best": min(times["serial"]) / min(times["ray"]),
                    "identical_to_serial": bool(identical),
                    "success_rate": last.summary["success_rate"],
                    "errors": last.summary["errors"],
                    "times": times,
                    "cpu_s": cpu,
                    "load_1min_per_round": loads,
                    "cpu_serial_median": statistics.median(cpu["serial"]),
                    "cpu_ray_median": statistics.median(cpu["ray"]),
                    "ray_workers_used": len(workers),
                    "ceiling_per_round": [round(x, 2) for x in ceiling],
                    "ceiling_median": statistics.median(ceiling),
                }
            )
            if plots and out is not None:
                plot_robustness(last.records, last.summary, Path(out) / f"sweep_{c['name']}.png", title=c["name"])
    total_s = time.perf_counter() - t0
    result = {
        "ray_init_s": init_s,
        "worker_warmup_s": warm_s,
        "workers": len({r["pid"] for r in warm.records}),
        "num_cpus": cpus,
        "rounds": rounds,
        "load_before": load_before,
        "load_after": _load(),
        "total_s": total_s,
        "cases": rows,
    }
    if out is not None:
        (Path(out) / "sweep.json").write_text(json.dumps(result, indent=1))
        (Path(out) / "sweep.md").write_text(table(result))
    return result


def table(res: dict) -> str:
    lines = [
        f"Ray start-up (ray.init, {res['num_cpus']} CPUs): {res['ray_init_s']:.1f} s; worker warm-up "
        f"(imports, nominal models): {res['worker_warmup_s']:.1f} s on {res['workers']} workers; "
        f"load average before {res['load_before']}, after {res['load_after']}; {res['rounds']} rounds.",
        "",
        "| case | rollouts × steps | serial s (median / min) | Ray s (median / min) | speed-up median (best) "
        "| machine's parallel ceiling per round (pure-Python loops, serial / Ray) "
        "| CPU s serial / Ray workers (median) | 1-min load per round | identical to serial | success rate |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in res["cases"]:
        lines.append(
            f"| {r['case']} | {r['rollouts']} × {r['steps_per_rollout']} | {r['serial_s_median']:.2f} / "
            f"{r['serial_s_min']:.2f} | {r['ray_s_median']:.2f} / {r['ray_s_min']:.2f} | "
            f"**{r['speedup_median']:.2f}×** ({r['speedup_best']:.2f}×) | {r['ceiling_per_round']} | "
            f"{r['cpu_serial_median']:.2f} / "
            f"{r['cpu_ray_median']:.2f} | {r['load_1min_per_round']} | {r['identical_to_serial']} | "
            f"{r['success_rate']:.2f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pendulum", type=int, default=64)
    ap.add_argument("--panda", type=int, default=16)
    ap.add_argument("--num-cpus", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default=str(RESULTS))
    a = ap.parse_args()
    res = run(a.pendulum, a.panda, a.num_cpus, a.rounds, Path(a.out))
    print(table(res))


if __name__ == "__main__":
    main()
