"""ROS 2 parameter files checked against the nodes' declared parameter tables, without starting a node.

A params file maps node names to ``{ros__parameters: {...}}``: ``vi_controller``, ``/**/vi_controller`` (that
node in any namespace), ``/ns/vi_controller`` or ``/**`` (every node). rclpy refuses, at start-up, a value of
another type than the declared one or outside its range, and this package refuses values outside a parameter's
choices; a name no node declares is dropped with only a warning (``common._report_undeclared``). Here all of
them are errors, so a params file in a document or a repository is checked before any node reads it.
"""

from __future__ import annotations

import importlib
from typing import Any

from ..model.errors import unknown_keys
from .common import Param

NODE_MODULES = {"vi_simulator": "simulator_node", "vi_planner": "planner_node", "vi_controller": "controller_node"}
# Parameters every rclpy node declares itself.
RCLPY_PARAMETERS = {"use_sim_time": Param(False, "the node's clock is /clock (rclpy's own parameter)")}


def node_tables() -> dict[str, dict[str, Param]]:
    """{node name: its PARAMETERS table} of the three nodes."""
    return {
        name: importlib.import_module(f"{__package__}.{module}").PARAMETERS for name, module in NODE_MODULES.items()
    }


def _flatten(d: dict, prefix: str = "") -> dict[str, Any]:
    """Nested mappings as rcl reads them: ``{a: {b: 1}}`` is the parameter ``a.b``."""
    out = {}
    for k, v in d.items():
        name = f"{prefix}{k}"
        out.update(_flatten(v, name + ".") if isinstance(v, dict) else {name: v})
    return out


def section_errors(params: Any, table: dict[str, Param], where: str) -> list[str]:
    """What a node declaring ``table`` would refuse or ignore in one ``ros__parameters`` mapping."""
    if not isinstance(params, dict):
        return [f"{where}: ros__parameters must be a mapping, got {type(params).__name__}"]
    table = table | RCLPY_PARAMETERS
    errors = []
    for name, value in _flatten(params).items():
        if name.startswith("qos_overrides."):  # rclpy's QoS overrides, not node parameters
            continue
        spec = table.get(name)
        why = (
            spec.refusal(name, value)
            if spec is not None
            else f"{unknown_keys([name], set(table))}: not declared by this node (rclpy would drop it)"
        )
        if why is not None:
            errors.append(f"{where}: {why}")
    return errors


def parameter_file_errors(data: Any, tables: dict[str, dict[str, Param]] | None = None) -> list[str]:
    """Every error of a parsed params file (empty: each node accepts its section). ``tables``: node name →
    parameter table (default: the three nodes'). A ``/**`` section's parameters must be declared by some node
    and accepted by every node that declares them."""
    if not isinstance(data, dict) or not data:
        return ["a parameter file maps node names to {ros__parameters: {...}}"]
    tables = node_tables() if tables is None else tables
    errors = []
    for key, section in data.items():
        where = str(key)
        if not isinstance(section, dict) or set(section) != {"ros__parameters"}:
            errors.append(f"{where}: expected exactly one key, ros__parameters")
            continue
        node = where.rstrip("/").rsplit("/", 1)[-1]
        if node in tables:
            errors += section_errors(section["ros__parameters"], tables[node], where)
        elif node == "**":
            params = section["ros__parameters"] if isinstance(section["ros__parameters"], dict) else {}
            declared = set(RCLPY_PARAMETERS).union(*tables.values())
            for name, value in _flatten(params).items():
                owners = [n for n, t in tables.items() if name in t or name in RCLPY_PARAMETERS]
                if not owners and not name.startswith("qos_overrides."):
                    errors.append(f"{where}: {unknown_keys([name], declared)}: declared by none of the nodes")
                errors += [e for n in owners for e in section_errors({name: value}, tables[n], f"{where} ({n})")]
        else:
            errors.append(f"{where}: not one of the nodes {sorted(tables)}")
    return errors
