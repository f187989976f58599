"""A real rclpy logger that also keeps what it was given, and the stamps of a node process's log lines.

rcutils writes log lines to the process's stderr, and a fresh clone's CI did not always flush that stream to capfd
(after an earlier rclpy init/shutdown on the same worker); tests read the messages here, as rclpy received them.
"""

import re

_STAMP = re.compile(r"\[(\d+\.\d+)\]")


def stamped_lines(log: str, text: str = "") -> list[tuple[float, str]]:
    """(wall-clock stamp, line) of each line of a node's log containing ``text`` (rcutils' ``[LEVEL] [t] [node]:``
    prefix); lines without a stamp (a traceback's) are left out."""
    return [(float(m.group(1)), line) for line in log.splitlines() if text in line and (m := _STAMP.search(line))]


class RecordingLogger:
    """Forwards every call to ``logger`` (so rclpy's own rules, e.g. one severity per call site, still apply) and
    keeps ``(level, text)`` in ``messages``."""

    def __init__(self, logger) -> None:
        self.logger, self.messages = logger, []

    # rclpy refuses a call site whose severity changes between calls, and the call site it sees is the line here
    # that calls it: one line per severity
    def debug(self, text: str, **kwargs):
        self.messages.append(("debug", text))
        return self.logger.debug(text, **kwargs)

    def info(self, text: str, **kwargs):
        self.messages.append(("info", text))
        return self.logger.info(text, **kwargs)

    def warning(self, text: str, **kwargs):
        self.messages.append(("warning", text))
        return self.logger.warning(text, **kwargs)

    warn = warning

    def error(self, text: str, **kwargs):
        self.messages.append(("error", text))
        return self.logger.error(text, **kwargs)

    def fatal(self, text: str, **kwargs):
        self.messages.append(("fatal", text))
        return self.logger.fatal(text, **kwargs)

    def __getattr__(self, name):
        return getattr(self.logger, name)

    def text(self) -> str:
        """All messages, one per line."""
        return "\n".join(text for _, text in self.messages)
