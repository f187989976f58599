"""The fenced code blocks of README.md and docs/**/*.md, and the checks test_docs_examples.py runs on them.

A block is a fence (``` or ~~~) with a language: python blocks are executed, yaml blocks loaded by the loader
that reads such a file in real use (chosen from the top-level keys by ``classify_yaml``), bash/sh commands checked
against the repository (``shell_problems``), xml parsed; text blocks (output, diagrams) are prose. A line of its
own ``<!-- docs-test: skip (reason) -->`` directly above a fence skips that block.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import importlib.util
import io
import re
import shlex
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
DOC_FILES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
LANGUAGES = {"python", "yaml", "bash", "sh", "xml", "text"}
MARKER = re.compile(r"<!--\s*docs-test:(.*?)-->")
SKIP = re.compile(r"skip\s*\((.*)\)\s*$")
FENCE = re.compile(r"^\s*(`{3,}|~{3,})\s*([^\s`]*)")


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # of the opening fence (1-based); the code starts on the next line
    lang: str
    text: str
    skip: str | None  # the reason of a skip marker directly above, if any

    @property
    def where(self) -> str:
        path = self.path.relative_to(ROOT) if self.path.is_relative_to(ROOT) else self.path
        return f"{path}:{self.line}"


def blocks(path: Path) -> list[Block]:
    """Every fenced block of a Markdown file, in order."""
    lines = path.read_text().split("\n")
    out, open_fence = [], None
    for i, line in enumerate(lines):
        m = FENCE.match(line)
        if open_fence is None and m:
            open_fence, lang, start = m.group(1), m.group(2), i
        elif open_fence is not None and line.strip().startswith(open_fence) and not line.strip(open_fence[0]).strip():
            marker = MARKER.fullmatch(lines[start - 1].strip()) if start else None
            skip = SKIP.match(marker.group(1).strip()) if marker else None
            out.append(
                Block(
                    path,
                    start + 1,
                    lang,
                    "\n".join(lines[start + 1 : i]),
                    (skip.group(1).strip() if skip else "") if marker else None,
                )
            )
            open_fence = None
    assert open_fence is None, f"{path.name}:{start + 1}: a fence is never closed"
    return out


# What an example says it gives, checked after it runs: ``name = ...  # -> [0.247, 0.363]`` (the value to the
# digits shown) and ``print(...)  # text`` (the text's words and its numbers of three or more significant digits appear
# in what the block printed; one-digit figures like "9 iterations" or "5e-20" are orders of magnitude, not claims).
VALUE_CLAIM = re.compile(r"^(\w+)\s*=.*#\s*->\s*(\[[^\]]*\]|[-+]?[\d.]+(?:e[-+]?\d+)?)")
PRINT_CLAIM = re.compile(r"^print\(.*\)\s*#\s*(.+)$")
CLAIM_NUMBER = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?(?![\w.])")


@dataclass(frozen=True)
class Claim:
    line: int  # in the Markdown file
    name: str  # the variable a value claim is about ("" for a print)
    text: str  # the claimed value or printed text


def claims(block: Block) -> list[Claim]:
    """The value and print claims of a python block (see VALUE_CLAIM, PRINT_CLAIM)."""
    out = []
    for i, line in enumerate(block.text.split("\n")):
        if m := VALUE_CLAIM.match(line):
            out.append(Claim(block.line + 1 + i, m.group(1), m.group(2)))
        elif m := PRINT_CLAIM.match(line):
            out.append(Claim(block.line + 1 + i, "", m.group(1).strip()))
    return out


def _significant(number: str) -> int:
    mantissa = number.lstrip("+-").split("e")[0].replace(".", "").lstrip("0")
    return len(mantissa)


def claim_problems(claim: Claim, namespace: dict, printed: str) -> list[str]:
    """Why the block's result contradicts its claim (empty: it holds)."""
    if claim.name:
        want = np.array([float(v) for v in CLAIM_NUMBER.findall(claim.text)])
        decimals = max(
            (len(v.split(".")[1]) for v in CLAIM_NUMBER.findall(claim.text) if "." in v and "e" not in v), default=0
        )
        got = np.atleast_1d(np.asarray(namespace.get(claim.name), dtype=float))
        if got.shape != want.shape or not np.allclose(got, want, rtol=0, atol=0.5 * 10.0**-decimals + 1e-15):
            return [f"line {claim.line}: {claim.name} = {got.tolist()}, the comment says {claim.text}"]
        return []
    text = re.sub(r"\(.*?\)", "", claim.text)  # a parenthesis explains, it is not printed verbatim
    words = re.findall(r"[A-Za-z]{4,}", text)
    numbers = [v for v in CLAIM_NUMBER.findall(text) if "e" not in v and _significant(v) >= 3]
    return [
        f"line {claim.line}: printed {printed.strip()!r}, the comment claims {w!r}"
        for w in words + numbers
        if w not in printed
    ]


def markers(paths: list[Path] = DOC_FILES) -> list[tuple[str, str, bool]]:
    """(file:line, the marker's text, whether a fence follows directly) of every docs-test marker."""
    out = []
    for path in paths:
        lines = path.read_text().split("\n")
        for i, line in enumerate(lines):
            m = MARKER.fullmatch(line.strip())  # a line of its own (one quoted in prose is not a marker)
            if m:
                fence_next = i + 1 < len(lines) and FENCE.match(lines[i + 1]) is not None
                out.append((f"{path.name}:{i + 1}", m.group(1).strip(), fence_next))
    return out


def all_blocks(lang: set[str] | None = None) -> list[Block]:
    return [b for p in DOC_FILES for b in blocks(p) if lang is None or b.lang in lang]


# --- YAML: which loader reads this block in real use -------------------------------------------------------------

# A kind is recognized by any of its signature keys at the top level (a ROS params file by its sections).
YAML_SIGNATURES = {
    "task": {"horizon", "dt", "weights", "optimizer", "reference", "input_limits", "initial_guess"},
    "system": {
        "actuated",
        "damping",
        "prescribed",
        "constraints",
        "nonholonomic",
        "floating_base",
        "locked",
        "inertia_policy",
    },
    "rigid_body": {"group", "thruster_layout", "actuators", "drag", "buoyancy"},
    "robustness": {"perturbations", "samples", "success", "plant"},
    "library": {"goals", "grid"},
}


def classify_yaml(data) -> str:
    """The kind of a parsed YAML block; AssertionError telling the author what to do if it is none or several."""
    if isinstance(data, dict) and data and all(isinstance(v, dict) and "ros__parameters" in v for v in data.values()):
        return "ros_params"
    keys = set(data) if isinstance(data, dict) else set()
    kinds = [k for k, sig in YAML_SIGNATURES.items() if keys & sig]
    what = f"ambiguous between {kinds}" if kinds else "of no known kind"
    assert len(kinds) == 1, (
        f"YAML block with top-level keys {sorted(keys, key=str)} is {what}: add its kind to "
        "YAML_SIGNATURES and _loaders() in test/support/docs_blocks.py, with the loader that "
        "reads such a file in real use"
    )
    return kinds[0]


def _task(text: str) -> None:
    """The planner's path up to the solve: the task, its model, start, limits, reference and every weight."""
    from vi_control.planning import input_limits, load_task, make_system, reference_trajectory, start_state

    task = load_task(text)
    vi = make_system(task, "gni" if task.load_robot().nonholonomic else "midpoint")
    x0 = start_state(task, vi)
    input_limits(task, vi)
    reference_trajectory(task, vi, x0)
    for group in ("weights", "lqr", "hold"):
        task.weight("Q", group, vi.state.ndx, vi.nq)
        task.weight("R", group, vi.nu)


def _library(text: str) -> None:
    # Library goals are a task's goals: the ones in the docs are the pendulum swing-up's (docs/concepts/sweep.md).
    import numpy as np

    from vi_control.sweep.config import load_library_goals

    assert load_library_goals(text, ["theta"], np.array([np.pi]))


def _ros_params(text: str) -> None:
    from vi_control.model.yaml_io import load_yaml
    from vi_control.ros.param_files import parameter_file_errors

    errors = parameter_file_errors(load_yaml(text))
    assert not errors, "\n".join(errors)


def _loaders() -> dict:
    from vi_control.model.rigid_body import load_rigid_body
    from vi_control.model.system_config import load_system_config
    from vi_control.sweep.config import load_robustness_config

    def rigid_body(text: str) -> None:  # read from a file, as the nodes and load_rigid_body(name) do
        with tempfile.TemporaryDirectory() as d:
            (Path(d) / "body.yaml").write_text(text)
            load_rigid_body(str(Path(d) / "body.yaml"))

    return {
        "task": _task,
        "system": load_system_config,
        "rigid_body": rigid_body,
        "robustness": load_robustness_config,
        "library": _library,
        "ros_params": _ros_params,
    }


def check_yaml(text: str) -> str:
    """Load a YAML block by the loader of its kind (raises what that loader raises); return the kind."""
    from vi_control.model.yaml_io import load_yaml

    kind = classify_yaml(load_yaml(text))
    _loaders()[kind](text)
    return kind


# --- shell commands ----------------------------------------------------------------------------------------------

REPO_DIRS = ("config/", "urdf/", "launch/", "benchmarks/", "scripts/", "test/", "docs/")
EXTERNAL = {"export", "cd", "ray", "nproc", "pip", "git", "colcon"}  # other people's programs: not checked
PYTHONS = {"python", "python3", ".venv/bin/python"}
CONFIG_NAME_OPTIONS = {"--task", "--config", "--goals"}  # a bare name here is a file of the package's config/


def console_scripts() -> dict[str, str]:
    from test_ros_launch import _console_scripts

    return _console_scripts()


def commands(text: str) -> list[list[str]]:
    """The simple commands of a shell block (comments dropped, continuation lines joined)."""
    out = []
    for line in text.replace("\\\n", " ").splitlines():
        lex = shlex.shlex(line, posix=True, punctuation_chars=True)
        lex.whitespace_split, lex.commenters = True, "#"
        cmd = []
        for tok in [*lex, ";"]:
            if tok and set(tok) <= set("();<>|&"):
                if cmd:
                    out.append(cmd)
                cmd = []
            else:
                cmd.append(tok)
    return out


def help_text(entry: str, argv: list[str]) -> str:
    module, func = entry.split(":")
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
        try:
            getattr(importlib.import_module(module), func)([*argv, "--help"])
        except SystemExit as e:
            assert e.code in (0, None), f"{entry} {' '.join(argv)} --help exited with {e.code}"
    return buf.getvalue()


def _options(args: list[str]) -> list[str]:
    return [a.split("=")[0] for a in args if a.startswith("--") and a != "--ros-args"]


def _ros_args(args: list[str], module: str) -> list[str]:
    """``--ros-args``: the params file and every ``-p name:=value`` as the node would read them."""
    from vi_control.model.yaml_io import load_yaml
    from vi_control.ros.param_files import parameter_file_errors, section_errors

    problems, rest = [], args[args.index("--ros-args") + 1 :] if "--ros-args" in args else []
    for flag, value in zip(rest, rest[1:]):
        if flag == "--params-file" and value.startswith(REPO_DIRS):
            problems += parameter_file_errors(load_yaml((ROOT / value).read_text()))
        elif flag == "-p":
            name, _, text = value.partition(":=")
            problems += section_errors({name: load_yaml(text)}, importlib.import_module(module).PARAMETERS, "-p")
    return problems


def _launch_arguments(path: Path) -> set[str]:
    return {
        ast.literal_eval(c.args[0])
        for c in ast.walk(ast.parse(path.read_text()))
        if isinstance(c, ast.Call) and getattr(c.func, "id", "") == "DeclareLaunchArgument"
    }


def shell_problems(argv: list[str]) -> list[str]:
    """What is wrong with one documented command: a repository path that does not exist, a program, module,
    console script, option, config name, launch argument or node parameter that is not ours."""
    while argv and re.match(r"^[A-Za-z_]\w*=", argv[0]):  # VAR=value cmd
        argv = argv[1:]
    if not argv:
        return []
    scripts, prog, args = console_scripts(), argv[0], argv[1:]
    problems = [
        f"{a} does not exist in the repository"
        for a in argv
        if a.split("=")[-1].startswith(REPO_DIRS) and not (ROOT / a.split("=")[-1]).exists()
    ]
    problems += [
        f"{opt} {val}: no {val}.yaml in config/"
        for opt, val in zip(args, args[1:])
        if opt in CONFIG_NAME_OPTIONS and re.fullmatch(r"\w+", val) and not (ROOT / "config" / f"{val}.yaml").is_file()
    ]
    name = prog.removeprefix(".venv/bin/")
    entry = scripts.get(name)
    if prog in PYTHONS and args[:1] == ["-m"]:
        module, args = args[1], args[2:]
        if importlib.util.find_spec(module) is None:
            return problems + [f"python -m {module}: no such module"]
        entry = next((e for e in scripts.values() if e.split(":")[0] == module), f"{module}:main")
    elif prog in PYTHONS:
        script = ROOT / args[0]
        if not script.is_file():
            return problems + [f"{args[0]}: no such file"]
        source = script.read_text()  # benchmarks are not run here: their options must at least exist
        return problems + [f"{args[0]} has no option {o}" for o in _options(args[1:]) if f'"{o}"' not in source]
    elif name in ("bash", "sh"):
        return problems + ([] if (ROOT / args[0]).is_file() else [f"{args[0]}: no such script"])
    elif prog == "ros2":
        if args[:2] == ["launch", "vi_control"]:
            launch = ROOT / "launch" / args[2]
            if not launch.is_file():
                return problems + [f"no launch file launch/{args[2]}"]
            declared = _launch_arguments(launch)
            problems += [
                f"{args[2]} declares no argument {a.split(':=')[0]}"
                for a in args[3:]
                if ":=" in a and a.split(":=")[0] not in declared
            ]
        elif args[:2] == ["run", "vi_control"] and args[2] not in scripts:
            problems.append(f"ros2 run vi_control {args[2]}: not a console script of setup.py")
        return problems
    elif name in EXTERNAL:
        return problems
    elif entry is None:
        return problems + [
            f"{prog}: neither one of our console scripts {sorted(scripts)} nor a program listed in "
            "EXTERNAL (test/support/docs_blocks.py): add it there, or check it"
        ]
    module = entry.split(":")[0]
    if module.startswith("vi_control.ros.") and module.endswith("_node"):
        return problems + _ros_args(args, module)  # a node: its --help would start it
    positional = [
        a for a in args[: next((i for i, a in enumerate(args) if a.startswith("-")), len(args))] if a != "..."
    ]
    text = help_text(entry, positional)
    return problems + [
        f"{name} {' '.join(positional)}: no option {o} in its --help"
        for o in _options(args)
        if not re.search(rf"(?<![\w-]){o}(?![\w-])", text)
    ]
