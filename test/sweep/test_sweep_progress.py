"""The sweep's progress lines without a terminal (CI logs): one per 10 %, and one whenever ``every`` seconds
passed since the last, so a slow sweep is never silent for long."""

import io
import re

from vi_control.sweep.engine import Progress


def _lines(every: float) -> list[str]:
    out = io.StringIO()
    bar = Progress(50, "sweep", True, out)
    bar.every = every
    for k in range(50):
        bar.update({"error": "x"} if k == 3 else {})
    return out.getvalue().splitlines()


def test_a_line_per_tenth_when_samples_come_fast():
    lines = _lines(every=1e9)
    assert len(lines) == 11 and lines[-1].startswith("[sweep] |") and "50/50  errors 1" in lines[-1]


def test_a_line_per_sample_once_the_period_has_passed():
    lines = _lines(every=0.0)  # every sample completes after the period: each one is reported
    assert len(lines) == 50 and [int(re.search(r"(\d+)/50", line).group(1)) for line in lines] == list(range(1, 51))
