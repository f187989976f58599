"""Every example of README.md and docs/**/*.md runs: python blocks are executed, yaml blocks loaded by the loader
that reads them in real use, shell commands checked against the repository (test/support/docs_blocks.py says how).

The python blocks of one file run in order in one namespace (later blocks use earlier blocks' names), in a
temporary working directory, with single-threaded BLAS. A failure names the file and the block's line, and the
traceback points at the line of the Markdown file. ``<!-- docs-test: skip (reason) -->`` directly above a block
skips it (at most MAX_SKIPS in the whole docs tree, each with its reason). What a block's comments say it gives is
checked after it runs: ``x = ...  # -> [values]`` to the digits shown, ``print(...)  # text`` against what it printed
(docs_blocks.claims).
"""

from __future__ import annotations

import contextlib
import io
import traceback
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml
from docs_blocks import (
    DOC_FILES,
    LANGUAGES,
    ROOT,
    Block,
    all_blocks,
    blocks,
    check_yaml,
    claim_problems,
    claims,
    classify_yaml,
    commands,
    console_scripts,
    help_text,
    markers,
    shell_problems,
)

MAX_SKIPS = 5
PYTHON = all_blocks({"python"})


def _id(b: Block) -> str:
    return b.where.removeprefix("docs/")


class _FileRun:
    """The namespace and working directory one Markdown file's python blocks share, and which have run."""

    def __init__(self, cwd: Path) -> None:
        self.ns: dict = {"__name__": "__main__"}  # as when the user runs it
        self.cwd, self.done, self.failed = cwd, set(), None


_RUNS: dict[Path, _FileRun] = {}


def execute(block: Block, run: _FileRun, monkeypatch) -> None:
    """Run one block in the file's namespace; on an exception fail naming the block, with the traceback's lines
    numbered as in the Markdown file."""
    monkeypatch.chdir(run.cwd)
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "1")  # (numpy itself was told in conftest; child processes here)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    code = compile("\n" * block.line + block.text, str(block.path), "exec")
    run.done.add(block.line)
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            exec(code, run.ns)
    except Exception as e:  # any exception of an example is the failure reported
        run.failed = block.where
        tb = "".join(traceback.format_exception(type(e), e, e.__traceback__.tb_next))  # from the block's frame on
    if run.failed == block.where:
        pytest.fail(f"{block.where}: the python block failed\n{tb}", pytrace=False)
    problems = [p for c in claims(block) for p in claim_problems(c, run.ns, printed.getvalue())]
    assert not problems, f"{block.where}: the example does not give what its comments say\n" + "\n".join(problems)


@pytest.mark.parametrize("block", PYTHON, ids=_id)
def test_python_block_runs(block, tmp_path_factory, monkeypatch):
    run = _RUNS.setdefault(block.path, _FileRun(tmp_path_factory.mktemp(block.path.stem)))
    if block.skip is not None:
        pytest.skip(f"{block.where}: {block.skip}")
    for earlier in blocks(block.path):  # those not run yet (a -k selection): they define what this one uses
        if earlier.line >= block.line:
            break
        if earlier.lang == "python" and earlier.skip is None and earlier.line not in run.done:
            execute(earlier, run, monkeypatch)
    if run.failed is not None:
        pytest.skip(f"{block.where} needs the names of {run.failed}, which failed")
    execute(block, run, monkeypatch)


@pytest.mark.parametrize("block", all_blocks({"yaml"}), ids=_id)
def test_yaml_block_loads_by_its_loader(block):
    if block.skip is not None:
        pytest.skip(f"{block.where}: {block.skip}")
    try:
        check_yaml(block.text)
    except (AssertionError, ValueError) as e:
        pytest.fail(f"{block.where}: {e}", pytrace=False)


@pytest.mark.parametrize("block", all_blocks({"bash", "sh"}), ids=_id)
def test_shell_block_names_what_exists(block):
    if block.skip is not None:
        pytest.skip(f"{block.where}: {block.skip}")
    problems = [f"`{' '.join(cmd)}`: {p}" for cmd in commands(block.text) for p in shell_problems(cmd)]
    assert not problems, f"{block.where}:\n" + "\n".join(problems)


@pytest.mark.parametrize("block", all_blocks({"xml"}), ids=_id)
def test_xml_block_is_well_formed(block):
    ET.fromstring(f"<fragment>{block.text}</fragment>")  # a fragment may have several top-level elements


def test_every_block_names_a_language_the_checks_know():
    unknown = [f"{b.where}: ```{b.lang}" for b in all_blocks() if b.lang not in LANGUAGES]
    assert not unknown, (
        f"fenced blocks without a language these tests handle ({sorted(LANGUAGES)}; output and "
        f"diagrams: text): {unknown}"
    )


def _bad_markers(found: list[tuple[str, str, bool]]) -> list[str]:
    return [
        f"{where}: {text!r}"
        for where, text, fence_next in found
        if not fence_next or not text.startswith("skip (") or not text.endswith(")") or not text[6:-1].strip()
    ]


def test_skip_markers_have_reasons_sit_on_a_block_and_are_few():
    found = markers()
    bad = _bad_markers(found)
    assert not bad, f"markers must read `<!-- docs-test: skip (reason) -->` directly above a fence: {bad}"
    assert len(found) <= MAX_SKIPS, f"{len(found)} skipped examples: make them faster instead ({found})"


def test_docs_tree_has_examples_of_every_kind():
    """The parametrized tests above cannot pass by finding nothing."""
    assert DOC_FILES[0].name == "README.md" and len(DOC_FILES) >= 15
    assert len(PYTHON) >= 9 and len(all_blocks({"bash"})) >= 8
    yaml_kinds = {classify_yaml(yaml.safe_load(b.text)) for b in all_blocks({"yaml"})}
    assert yaml_kinds >= {"system", "task", "robustness", "library", "ros_params"}


# --- the checks themselves fail where they should ----------------------------------------------------------------


@pytest.mark.parametrize("path", sorted((ROOT / "config").glob("*.yaml")), ids=lambda p: p.name)
def test_yaml_classifier_reads_every_config_file_as_its_kind(path):
    """Every kind of YAML the package reads is recognized and accepted by its loader (the repository's own
    files); gz_effort_controllers.yaml is ros2_control's, not ours."""
    kind = {"task": "task", "ros": "ros_params", "sweep": "robustness", "library": "library"}.get(
        path.name.split("_")[0],
        "rigid_body" if path.stem in ("vehicle_uuv", "spacecraft", "spacecraft_l1") else "system",
    )
    if path.name == "gz_effort_controllers.yaml":
        with pytest.raises(AssertionError, match="not one of the nodes"):
            check_yaml(path.read_text())
        return
    assert check_yaml(path.read_text()) == kind


@pytest.mark.parametrize(
    "text, error",
    [
        ("actuated: [theta]\ndampnig: {theta: 0.1}\n", "dampnig"),  # a typo in a system YAML
        ("model: pendulum\ndt: 0.1\nhorizon: 10\nweights: {Q: [1.0, 1.0], R: 1.0}\ngoal: {q: [1, 2]}\n", "goal"),
        ("samples: 8\nperturbations: {mass_scale: [1.2, 0.8]}\n", "mass_scale"),
        ("grid: {thetta: [1.0, 2.0]}\n", "thetta"),
        ("/**/vi_controller:\n  ros__parameters: {rate: 500}\n", "rate"),  # an integer for a double
        ("/**/vi_planner:\n  ros__parameters: {expected_solve_time: -1.0}\n", "expected_solve_time"),
        ("horizon: 10\nactuated: [theta]\n", "ambiguous"),
        ("launch: {arguments: 1}\n", "of no known kind: add its kind to YAML_SIGNATURES"),
    ],
)
def test_yaml_check_refuses_a_wrong_block(text, error):
    with pytest.raises((AssertionError, ValueError), match=error):
        check_yaml(text)


@pytest.mark.parametrize(
    "command, problem",
    [
        ("bash scripts/deploy.sh", "no such script"),
        (".venv/bin/python benchmarks/bench_step.py --fast", "no option --fast"),
        (".venv/bin/python benchmarks/bench_warp.py", "no such file"),
        (".venv/bin/vi_sweep robustness --task task_pendulum_swingup --sampels 3 --out x", "no option --sampels"),
        (
            "vi_sweep library --task task_pendulum_swingups --goals library_pendulum --out x",
            "no task_pendulum_swingups",
        ),
        ("vi_inspect urdf/nothing.urdf", "does not exist"),
        ("vi_plot acrobot", "neither one of our console scripts"),
        ("python -m vi_control.model.inspector acrobot", "no such module"),
        ("python -m vi_control.ros.controller_node --ros-args -p trigger:=clock", "trigger"),
        ("ros2 launch vi_control hardware.launch.py modle:=pendulum", "no argument modle"),
    ],
)
def test_shell_check_finds_what_does_not_exist(command, problem):
    found = [p for cmd in commands(command) for p in shell_problems(cmd)]
    assert any(problem in p for p in found), found


def test_shell_check_passes_the_real_commands_and_splits_lists():
    assert commands("A=1 vi_inspect acrobot && vi_inspect erd:panda   # two\nray start --num-cpus=$(nproc)") == [
        ["A=1", "vi_inspect", "acrobot"],
        ["vi_inspect", "erd:panda"],
        ["ray", "start", "--num-cpus=$"],
        ["nproc"],
    ]
    for cmd in (
        ["vi_inspect", "acrobot", "--floating-base"],
        ["vi_sweep", "library", "--task", "task_panda_reach"],
        ["ros2", "launch", "vi_control", "hardware.launch.py", "use_sim_time:=true"],
    ):
        assert shell_problems(cmd) == [], cmd


def _is_node(entry: str) -> bool:
    """A console script that starts a ROS node (``common.run_node``: it takes --ros-args, not --help)."""
    import importlib.util

    module = entry.split(":")[0]
    return module.endswith("_node") or "run_node(" in Path(importlib.util.find_spec(module).origin).read_text()


@pytest.mark.parametrize("script", [s for s, e in console_scripts().items() if not _is_node(e)])
def test_console_script_help_runs(script):
    """The docs point at `<script> --help` for the options (the nodes take --ros-args instead)."""
    assert "usage:" in help_text(console_scripts()[script], [])


def test_a_failing_python_block_is_reported_at_its_markdown_line(tmp_path, monkeypatch):
    md = tmp_path / "page.md"
    md.write_text("# page\n\n```python\nx = 1\ny = x / 0\n```\n")
    (block,) = blocks(md)
    run = _FileRun(tmp_path)
    with pytest.raises(pytest.fail.Exception) as e:
        execute(block, run, monkeypatch)
    assert f'File "{md}", line 5' in str(e.value) and "ZeroDivisionError" in str(e.value)
    assert run.ns["x"] == 1 and run.failed is not None


def test_skip_marker_is_read_from_the_line_above_and_needs_a_reason(tmp_path):
    md = tmp_path / "page.md"
    md.write_text(
        "<!-- docs-test: skip (a 5 min benchmark) -->\n```bash\nx\n```\n\n```yaml\na: 1\n```\n"
        "<!-- docs-test: skip -->\n```text\n```\n<!-- docs-test: skip (not above a block) -->\n\n"
        "quoted in prose: `<!-- docs-test: skip (reason) -->`\n"
    )
    assert [b.skip for b in blocks(md)] == ["a 5 min benchmark", None, ""]
    assert len(markers([md])) == 3 and _bad_markers(markers([md])) == [
        "page.md:9: 'skip'",
        "page.md:12: 'skip (not above a block)'",
    ]


def test_docs_make_claims_the_checks_read():
    """The claims checked are there: README's step value (REFERENCE §1) and planner.md's printed result."""
    found = {(c.name, b.path.name) for b in PYTHON for c in claims(b)}
    assert ("x1", "README.md") in found and ("", "planner.md") in found


@pytest.mark.parametrize(
    "line, value, printed, problem",
    [
        ("x = f()  # -> [0.24713619, 0.36272388]", [0.24713619, 0.36272388], "", None),
        ("x = f()  # -> [0.24713619, 0.36272388]", [0.2471362, 0.36272388], "", "x = "),  # off in the 8th decimal
        ("x = f()  # -> [0.25, 0.36]", [0.2471, 0.3627], "", None),  # to the digits shown
        ("x = f()  # -> 1.5", [1.5, 2.0], "", "x = "),  # shape
        (
            "print(r)  # ddp: converged in 9 iterations (|dJ| = 5e-20), cost 691.647, a few ms",
            None,
            "ddp: converged in 7 iterations (|dJ| = 4.7e-20 < tolerance), cost 691.647, 5 ms",
            None,
        ),
        (
            "print(r)  # ddp: converged in 9 iterations, cost 691.647",
            None,
            "ddp: converged in 9 iterations, cost 691.648",
            "'691.647'",
        ),
        ("print(r)  # ddp: converged, cost 691.647", None, "ddp: stopped at the cap, cost 691.647", "'converged'"),
    ],
)
def test_claim_check_holds_the_shown_digits_and_words(line, value, printed, problem):
    block = Block(Path("doc.md"), 1, "python", line, None)
    (claim,) = claims(block)
    problems = claim_problems(claim, {"x": value}, printed)
    assert (problem is None and not problems) or (problem is not None and len(problems) == 1 and problem in problems[0])
