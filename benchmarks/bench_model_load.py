"""Loading long chains: the mass-matrix validation in O(n) against the dense one it replaced.

For planar chains of N links (vi_control.model.generate.planar_chain_urdf) this measures, in one process and
in interleaved rounds (CPU time, median and min):
  - the full ``load_robot`` (parse, Pinocchio, cross-check, validation);
  - the regularity test of M(q) alone: articulated-body pivots (crba.articulated_pivots, what load_robot runs)
    against forming M(q) with our numpy CRBA and factoring it (what it ran before: O(n·depth) Python work —
    400/800/1600 links took 4.8/15.5/112 s to load). The baseline is skipped above --dense-max links.
Also every example-robot-data URDF, loaded with the settings of test/model/test_model_example_robots.py.

    .venv/bin/python benchmarks/bench_model_load.py                  # N = 400, 800, 1600, 3000
    .venv/bin/python benchmarks/bench_model_load.py --sizes 50,100 --rounds 2
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

from vi_control.model import load_robot
from vi_control.model.crba import articulated_pivots, mass_matrix
from vi_control.model.generate import planar_chain_urdf


def _cpu(fn) -> float:
    t = time.process_time()
    fn()
    return time.process_time() - t


def dense_check(model, q: np.ndarray) -> None:
    """The former validation: M(q) by the numpy CRBA, then a Cholesky factorization."""
    np.linalg.cholesky(mass_matrix(model, q))


def bench(sizes: list[int], rounds: int = 3, dense_max: int = 800) -> list[dict]:
    rows = []
    for n in sizes:
        xml = planar_chain_urdf(n)
        robot = load_robot(xml)
        q = np.random.default_rng(0).uniform(-1.0, 1.0, robot.nq)
        times: dict[str, list[float]] = {"load": [], "pivots": [], "dense": []}
        for _ in range(rounds):  # interleaved: the machine's load affects all three alike
            times["load"].append(_cpu(lambda xml=xml: load_robot(xml)))
            times["pivots"].append(_cpu(lambda m=robot.pin_model, q=q: articulated_pivots(m, q)))
            if n <= dense_max:
                times["dense"].append(_cpu(lambda m=robot.pin_model, q=q: dense_check(m, q)))
        row = {"links": n}
        for k, v in times.items():
            row[k] = (statistics.median(v), min(v)) if v else None
        row["ratio"] = row["dense"][0] / row["pivots"][0] if row["dense"] else None
        rows.append(row)
    return rows


def example_robots() -> tuple[int, float]:
    """(number of example-robot-data URDFs loaded, total CPU seconds) with the robot test's settings."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "test" / "model"))
    import pinocchio as pin
    from test_model_example_robots import ROOT, URDFS, _system

    count, total = 0, 0.0
    for rel in URDFS:
        xml = (ROOT / rel).read_text(encoding="utf-8")
        try:
            pin.buildModelFromXML(xml)
        except (RuntimeError, ValueError):
            continue
        total += _cpu(lambda: load_robot(str(ROOT / rel), _system(rel, xml)))  # noqa: B023
        count += 1
    return count, total


def table(rows: list[dict]) -> str:
    out = [
        "| links | load_robot (CPU s, median / min) | pivot test (s) | dense M(q) + Cholesky (s) | dense / pivots |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        dense = f"{r['dense'][0]:.3g} / {r['dense'][1]:.3g}" if r["dense"] else "—"
        ratio = f"{r['ratio']:.0f}×" if r["ratio"] else "—"
        out.append(
            f"| {r['links']} | {r['load'][0]:.3g} / {r['load'][1]:.3g} | {r['pivots'][0]:.3g} / "
            f"{r['pivots'][1]:.3g} | {dense} | {ratio} |"
        )
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="400,800,1600,3000")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--dense-max", type=int, default=800)
    args = ap.parse_args()
    rows = bench([int(s) for s in args.sizes.split(",")], args.rounds, args.dense_max)
    print(table(rows))
    count, total = example_robots()
    print(f"example-robot-data: {count} URDFs loaded in {total:.2f} s CPU; load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
