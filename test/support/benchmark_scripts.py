"""The benchmark scripts (benchmarks/*.py) as modules, for their smoke tests: one loader for every test file."""

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def load_benchmark(script: str, module_name: str | None = None) -> ModuleType:
    """benchmarks/<script>.py executed as a module named ``module_name`` (default the script's name) and registered
    in sys.modules, where dataclasses and Ray's cloudpickle look a module up."""
    name = module_name or script
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{script}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
