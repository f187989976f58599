"""The documentation site builds with MkDocs in strict mode (every warning an error: a broken link or anchor, a page
left out of the nav, a name mkdocstrings cannot find), its API page documents exactly ``vi_control.__all__``, each
name with a docstring, and its parameter page carries the nodes' own tables."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import vi_control

pytest.importorskip("mkdocs")
pytest.importorskip("mkdocstrings_handlers.python")
griffe = pytest.importorskip("griffe")

REPO = Path(__file__).resolve().parents[2]
API_PAGE = REPO / "docs" / "reference" / "api.md"
COPY_IGNORE = shutil.ignore_patterns(".git", ".venv", "build", "out", "site", "*.egg-info", "__pycache__", ".vi_cache")


def _build(root: Path, site: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(root))  # the hook and mkdocstrings read this tree's vi_control
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(root / "mkdocs.yml"), "-d", str(site)],
        capture_output=True,
        text=True,
        cwd=site.parent,
        env=env,
        timeout=600,
    )


def test_site_builds_strict_with_the_api_and_the_parameter_tables(tmp_path):
    res = _build(REPO, tmp_path / "site")
    assert res.returncode == 0, res.stderr[-4000:]
    api = (tmp_path / "site" / "reference" / "api" / "index.html").read_text()
    missing = [n for n in vi_control.__all__ if f'id="vi_control.{n}"' not in api]
    assert not missing, f"not rendered on the API page: {missing}"
    params = (tmp_path / "site" / "reference" / "parameters" / "index.html").read_text()
    from vi_control.ros.simulator_node import PARAMETERS

    assert all(f"<code>{name}</code>" in params for name in PARAMETERS)
    # a repository file a page links to is in the site, where the link points
    assert (tmp_path / "site" / "repo" / "benchmarks" / "results" / "summary" / "index.html").is_file()


def test_a_broken_link_fails_the_build(tmp_path):
    root = tmp_path / "repo"
    shutil.copytree(REPO, root, ignore=COPY_IGNORE)
    page = root / "docs" / "concepts" / "control.md"
    page.write_text(page.read_text() + "\nSee [the missing page](no_such_page.md).\n")
    res = _build(root, tmp_path / "site")
    assert res.returncode != 0
    assert "concepts/control.md" in res.stderr and "no_such_page.md" in res.stderr


def test_api_page_lists_exactly_the_public_names():
    listed = re.findall(r"^::: vi_control\.(\w+)$", API_PAGE.read_text(), flags=re.M)
    assert len(listed) == len(set(listed)), "a name listed twice"
    assert set(listed) == set(vi_control.__all__), (
        f"missing from docs/reference/api.md: {sorted(set(vi_control.__all__) - set(listed))}; "
        f"not public: {sorted(set(listed) - set(vi_control.__all__))}"
    )


def test_every_public_name_has_a_docstring_as_mkdocstrings_reads_it():
    """Read by griffe (what mkdocstrings renders from), not by runtime introspection: a module attribute such as
    BUNDLED is documented by the string literal after it."""
    package = griffe.load("vi_control", search_paths=[str(REPO)])
    undocumented = [
        n for n in vi_control.__all__ if package[n].docstring is None or not package[n].docstring.value.strip()
    ]
    assert not undocumented, f"public names without a docstring: {undocumented}"
