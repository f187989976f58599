"""The nodes' parameter tables of docs/reference/parameters.md, generated from their ``PARAMETERS`` (the docs build
runs ``update`` on that page too, docs/hooks.py).

``python -m vi_control.ros.param_docs`` rewrites the tables of docs/reference/parameters.md in place; ``--check``
exits 1 (naming the table) when a table differs from the code. The test suite runs the check, so a parameter added,
renamed or re-described in a node without its documentation fails a test.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .common import MODEL_PARAMETERS, Param

DOC = Path(__file__).resolve().parents[2] / "docs" / "reference" / "parameters.md"
HEADER = "| parameter | type | default | allowed | live | meaning |\n|---|---|---|---|---|---|"


def _type(p: Param) -> str:
    if p.array is not None:
        return f"{p.array}[]"
    return {bool: "bool", int: "int", float: "double", str: "string"}[type(p.default)]


def _allowed(p: Param) -> str:
    if p.range is not None:
        return f"{p.range[0]:g} … {p.range[1]:g}"
    return " / ".join(p.choices) if p.choices else ""


def markdown_table(table: dict[str, Param], skip: dict[str, Param] | None = None) -> str:
    """The markdown table of ``table`` (rows in its order; parameters that ``skip`` holds unchanged left out;
    '|' escaped)."""
    rows = [HEADER]
    for name, p in table.items():
        if skip is not None and skip.get(name) == p:
            continue
        default = ("[]" if not p.default else repr(list(p.default))) if p.array is not None else repr(p.default)
        cells = (f"`{name}`", _type(p), default, _allowed(p), "yes" if p.live else "", p.description)
        rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(rows)


def tables() -> dict[str, str]:
    """Heading line in docs/reference/parameters.md → the table that must follow it."""
    from . import controller_node, mujoco_plant, planner_node, simulator_node

    return {
        "#### Model parameters (all three nodes)": markdown_table(MODEL_PARAMETERS),
        "#### Simulator (`vi_control/ros/simulator_node.py`)": markdown_table(
            simulator_node.PARAMETERS, MODEL_PARAMETERS
        ),
        "#### Planner (`vi_control/ros/planner_node.py`)": markdown_table(planner_node.PARAMETERS, MODEL_PARAMETERS),
        "#### Controller (`vi_control/ros/controller_node.py`)": markdown_table(
            controller_node.PARAMETERS, MODEL_PARAMETERS
        ),
        "#### MuJoCo plant (`vi_control/ros/mujoco_plant.py`)": markdown_table(
            mujoco_plant.PARAMETERS, MODEL_PARAMETERS
        ),
    }


def update(text: str) -> tuple[str, list[str]]:
    """``text`` with every table replaced by the generated one, and the headings whose table changed.
    KeyError naming a heading that is missing from the text."""
    lines, changed = text.split("\n"), []
    for heading, table in tables().items():
        if heading not in lines:
            raise KeyError(f"docs/reference/parameters.md has no line {heading!r}")
        start = lines.index(heading) + 1
        end = start
        while end < len(lines) and lines[end].startswith("|"):
            end += 1
        new = table.split("\n")
        if lines[start:end] != new:
            changed.append(heading)
            lines[start:end] = new
    return "\n".join(lines), changed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="report differences, change nothing (exit 1 if any)")
    ap.add_argument("--doc", type=Path, default=DOC, help="the markdown file (default: docs/reference/parameters.md)")
    a = ap.parse_args(argv)
    text, changed = update(a.doc.read_text())
    if a.check:
        for h in changed:
            print(
                f"{a.doc}: the table under {h!r} differs from the code's PARAMETERS "
                f"(python -m vi_control.ros.param_docs rewrites it)"
            )
        return 1 if changed else 0
    a.doc.write_text(text)
    print(f"{a.doc}: {len(changed)} table(s) rewritten" + (f": {', '.join(changed)}" if changed else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
