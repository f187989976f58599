"""MkDocs hooks of the vi_control docs (mkdocs.yml ``hooks:``).

- The node parameter page gets its tables from the nodes' ``PARAMETERS`` at every build
  (``vi_control.ros.param_docs.update``), so the site cannot show a stale table.
- Pages link to repository files outside docs/ (benchmark results and plots, configuration files, sources) with
  paths that are right in the repository; the build copies each such file into the site under ``repo/`` and points
  the link there. A link to a file that does not exist is left alone, and ``mkdocs build --strict`` fails on it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from mkdocs.structure.files import File, Files

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
LINK = re.compile(r"(\]\()([^)\s#]+)((?:#[^)\s]*)?\))")
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:")
PARAMETERS_PAGE = "reference/parameters.md"


def _site_uri(path: Path) -> str | None:
    """Where a repository file lives in the site: its docs/ path, or repo/<its path> (None: not a repository file)."""
    if path.is_relative_to(DOCS):
        return path.relative_to(DOCS).as_posix()
    if path.is_relative_to(REPO) and path.is_file():
        return "repo/" + path.relative_to(REPO).as_posix()
    return None


def _linked_files(source: Path) -> list[Path]:
    """Repository files outside docs/ that the Markdown file ``source`` links to."""
    out = []
    for m in LINK.finditer(source.read_text()):
        if EXTERNAL.match(m.group(2)):
            continue
        path = (source.parent / m.group(2)).resolve()
        if path.is_file() and path.is_relative_to(REPO) and not path.is_relative_to(DOCS):
            out.append(path)
    return out


def on_files(files: Files, config) -> Files:
    todo = [Path(f.abs_src_path) for f in files.documentation_pages()]
    while todo:  # a copied Markdown file (a benchmark's results) is a page too, and its links count
        for path in _linked_files(todo.pop()):
            uri = _site_uri(path)
            if files.get_file_from_path(uri) is None:
                files.append(File.generated(config, uri, abs_src_path=str(path)))
                if path.suffix == ".md":
                    todo.append(path)
    return files


def on_page_markdown(markdown: str, page, config, files: Files) -> str:
    if page.file.src_uri == PARAMETERS_PAGE:
        from vi_control.ros import param_docs

        markdown, _ = param_docs.update(markdown)
    source = Path(page.file.abs_src_path)
    here = os.path.dirname(page.file.src_uri)

    def relink(m: re.Match) -> str:
        if EXTERNAL.match(m.group(2)):
            return m.group(0)
        uri = _site_uri((source.parent / m.group(2)).resolve())
        if uri is None:
            return m.group(0)
        return m.group(1) + os.path.relpath(uri, here or ".") + m.group(3)

    return LINK.sub(relink, markdown)
