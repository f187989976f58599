"""Started in every Python process of a coverage-map run (this directory is on PYTHONPATH only then): a process
started by a test — a node, a CLI — records its lines under that test's id, so ``mutate_ast.py --coverage`` knows
which test file reaches code that runs only in a child process."""

import os

_TEST = os.environ.get("PYTEST_CURRENT_TEST")
if _TEST:
    try:
        import coverage

        _cov = coverage.Coverage.current()
        if _cov is not None:
            _cov.switch_context("child:" + _TEST)
    except Exception:  # noqa: BLE001 - measuring must never change what the process does
        pass
