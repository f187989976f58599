"""docs/reference/parameters.md's tables are the nodes' PARAMETERS (vi_control.ros.param_docs): a parameter added,
renamed, re-ranged or re-described in a node without its documentation fails here."""

import pytest

pytest.importorskip("rclpy")

from vi_control.ros import param_docs  # noqa: E402
from vi_control.ros.common import Param  # noqa: E402
from vi_control.ros.simulator_node import PARAMETERS as SIMULATOR  # noqa: E402


def test_docs_tables_equal_the_nodes_parameters():
    _, changed = param_docs.update(param_docs.DOC.read_text())
    assert changed == [], f"run `python -m vi_control.ros.param_docs` to regenerate: {changed}"


def test_every_simulator_parameter_has_a_row_with_its_range_and_liveness():
    text = param_docs.DOC.read_text()
    for name, p in SIMULATOR.items():
        row = next((line for line in text.splitlines() if line.startswith(f"| `{name}` |")), None)
        assert row is not None, name
        assert ("| yes |" in row) == p.live, name
    assert "| `end_time` | double | 0.0 | 0 … 1e+09 | yes |" in text


def test_a_stale_table_is_reported_and_rewritten(tmp_path):
    text = param_docs.DOC.read_text()
    stale = text.replace("| `end_time` |", "| `end_tim` |", 1)
    new, changed = param_docs.update(stale)
    assert changed == ["#### Simulator (`vi_control/ros/simulator_node.py`)"]
    assert new == text
    doc = tmp_path / "parameters.md"
    doc.write_text(stale)
    assert param_docs.main(["--check", "--doc", str(doc)]) == 1
    assert doc.read_text() == stale  # --check changes nothing
    assert param_docs.main(["--doc", str(doc)]) == 0
    assert doc.read_text() == text
    with pytest.raises(KeyError, match="Controller"):
        param_docs.update(text.replace("#### Controller", "#### The controller"))


def test_markdown_cells_escape_pipes_and_format_ranges_choices_and_arrays():
    table = {
        "a": Param(0.5, "bound of |q|", range=(0.0, 1e300), live=True),
        "b": Param("x", "choice", choices=("x", "y")),
        "c": Param(None, "list", array="double"),
        "d": Param(3, "int"),
    }
    rows = param_docs.markdown_table(table).splitlines()[2:]
    assert rows == [
        "| `a` | double | 0.5 | 0 … 1e+300 | yes | bound of \\|q\\| |",
        "| `b` | string | 'x' | x / y |  | choice |",
        "| `c` | double[] | [] |  |  | list |",
        "| `d` | int | 3 |  |  | int |",
    ]
    assert param_docs.markdown_table(table, skip={"d": Param(3, "int")}).count("`d`") == 0
    assert param_docs.markdown_table(table, skip={"d": Param(4, "int")}).count("`d`") == 1  # overridden: kept
