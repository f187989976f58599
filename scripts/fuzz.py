#!/usr/bin/env python3
"""Long fuzz runs of the input-surface generator (test/support/fuzz_gen.py; the suite runs a fixed seed in
test/robustness/test_fuzz_generator.py): every case must end valid or with the package's own error — never a generic
exception, nonsense, a hang or a crash. Prints the tally per surface and every failing case with its seed and index,
so a failure reproduces with ``--seed S --only I``.

    python scripts/fuzz.py --seed random --cases 2000
    python scripts/fuzz.py --seed 12345 --cases 300 --surfaces task,rigid_body --timeout 20
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test", "support"))

import fuzz_gen  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", default="random", help="an integer, or 'random' (printed, to reproduce)")
    ap.add_argument("--cases", type=int, default=300)
    ap.add_argument("--surfaces", default=",".join(fuzz_gen.SURFACES))
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds per case before it counts as a hang")
    ap.add_argument("--only", type=int, default=None, help="run only the case of this index")
    args = ap.parse_args(argv)
    seed = secrets.randbits(32) if args.seed == "random" else int(args.seed)
    surfaces = tuple(s for s in args.surfaces.split(",") if s)
    unknown = set(surfaces) - set(fuzz_gen.SURFACES)
    if unknown or args.cases < 1:
        ap.error(f"unknown surfaces {sorted(unknown)} (known: {fuzz_gen.SURFACES})" if unknown else "--cases ≥ 1")
    print(f"[fuzz] seed {seed}, {args.cases} cases over {', '.join(surfaces)}", flush=True)
    fuzz_gen.prepare()
    t0, results = time.monotonic(), []
    with tempfile.TemporaryDirectory() as tmp:
        for case in fuzz_gen.generate(seed, args.cases, tmp, surfaces):
            if args.only is not None and case.index != args.only:
                continue
            out = fuzz_gen.run_case(case, args.timeout)
            results.append((case, out))
            if out.kind not in ("valid", "specific"):
                print(
                    f"[fuzz] FAIL {out.kind}: seed {seed} case {case.index} ({case.surface}: {case.description})"
                    f" -> {out.detail}",
                    flush=True,
                )
    for surface, kinds in fuzz_gen.tally(results).items():
        print(f"[fuzz] {surface:16s} " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))
    bad = sum(o.kind not in ("valid", "specific") for _, o in results)
    print(f"[fuzz] {len(results)} cases in {time.monotonic() - t0:.1f} s: {bad} failed the contract")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
