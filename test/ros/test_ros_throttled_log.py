"""ThrottledLog over a real rclpy logger: kinds throttled independently, and one instance may log at several
severities (rclpy refuses a call site whose severity changes; that crashed a controller mid-run)."""

import time

import pytest

pytest.importorskip("rclpy")

from log_record import RecordingLogger  # noqa: E402
from rclpy.logging import get_logger  # noqa: E402

from vi_control.ros.common import ThrottledLog  # noqa: E402

# Long enough that calls one after the other always fall within it: with 0.2 s, two consecutive calls were once
# 0.2 s apart on a loaded machine (flakehunt: the "suppressed" check failed once in 19 files' worth of ROS tests).
PERIOD = 60.0


def test_one_throttle_logs_errors_warnings_and_info_through_rclpy():
    log = ThrottledLog(get_logger("vi_test_throttle"), period=PERIOD)
    assert log("stale", "stale state", level="error")
    assert log("late", "late plan")  # a warning right after an error: must not raise
    assert log("plan", "plan entered", level="info")
    assert not log("stale", "stale state", level="error")  # the same kind within the period: suppressed
    assert not log("late", "late plan")
    log.period = 0.05  # (as the nodes' live log_throttle_period) then wait it out: at least that long has passed
    time.sleep(0.1)
    assert log("late", "late plan") and log("stale", "stale again", level="error")
    log.period = PERIOD
    with pytest.raises(ValueError, match="unknown level"):
        log("other", "x", level="critical")
    assert not log("stale", "stale state", level="error")  # the same kind within the period: suppressed


def test_a_text_builder_runs_only_when_its_message_is_logged():
    """The simulator's end-stop notice is built on every held step; given as a function, the text is built only for
    the messages the throttle lets through, and those say what it built."""
    logger = RecordingLogger(get_logger("vi_test_throttle_lazy"))
    log = ThrottledLog(logger, period=PERIOD)
    built = []

    def text() -> str:
        built.append(len(built) + 1)
        return f"held by its end stop, text {len(built)}"

    assert log("joint stop", text, level="info") and built == [1]
    assert not any(log("joint stop", text, level="info") for _ in range(100))
    assert built == [1]  # 100 suppressed, none built
    log.period = 0.05  # then wait it out (suppression above: within PERIOD, whatever the load)
    time.sleep(0.1)
    assert log("joint stop", text, level="info") and built == [1, 2]
    assert logger.messages == [
        ("info", "held by its end stop, text 1"),
        ("info", "held by its end stop, text 2 (100 more since the last report)"),
    ]
