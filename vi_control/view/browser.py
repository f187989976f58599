"""Screenshots of a view in headless Chromium (Debian's ``chromium`` package): tests and the README's picture.

WebGL in a container without a GPU needs Chromium's software renderer (SwiftShader through ANGLE), and running as
root needs ``--no-sandbox``. ``--virtual-time-budget`` lets the page's scripts and first frames finish before the
capture, without a fixed sleep.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--use-angle=swiftshader",
    "--enable-unsafe-swiftshader",
    "--hide-scrollbars",
    "--mute-audio",
    "--no-first-run",
    "--disable-gpu-sandbox",
)


def find_chromium() -> str | None:
    """Path of a Chromium executable, or None."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def screenshot(
    url: str, png: str | Path, size: tuple[int, int] = (800, 600), budget_ms: int = 1500, timeout: float = 120.0
) -> Path:
    """Render ``url`` (``file://…`` or ``http://…``) headless into ``png``; RuntimeError if Chromium fails."""
    exe = find_chromium()
    if exe is None:
        raise RuntimeError("no chromium on PATH (Debian: apt-get install chromium)")
    png = Path(png).resolve()
    with tempfile.TemporaryDirectory(prefix="vi_view_chromium_") as profile:
        cmd = [
            exe,
            *FLAGS,
            f"--user-data-dir={profile}",
            f"--window-size={size[0]},{size[1]}",
            f"--virtual-time-budget={budget_ms}",
            f"--screenshot={png}",
            url,
        ]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    if out.returncode != 0 or not png.is_file():
        raise RuntimeError(f"chromium exited {out.returncode}: {out.stderr[-2000:]}")
    return png


def dump_dom(url: str, budget_ms: int = 1500, timeout: float = 120.0) -> str:
    """The page's DOM after its scripts ran (``--dump-dom``)."""
    exe = find_chromium()
    if exe is None:
        raise RuntimeError("no chromium on PATH (Debian: apt-get install chromium)")
    with tempfile.TemporaryDirectory(prefix="vi_view_chromium_") as profile:
        out = subprocess.run(
            [exe, *FLAGS, f"--user-data-dir={profile}", f"--virtual-time-budget={budget_ms}", "--dump-dom", url],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    if out.returncode != 0:
        raise RuntimeError(f"chromium exited {out.returncode}: {out.stderr[-2000:]}")
    return out.stdout


def screenshot_pages(
    pages: list[str | Path], png: str | Path, size: tuple[int, int] = (800, 600), budget_ms: int = 1500
) -> list:
    """Several HTML files side by side (one iframe each, ``size`` each) in one Chromium run: one image array
    (height, width, RGB) per page. One browser start instead of one per page."""
    import numpy as np
    from PIL import Image

    w, h = size
    frames = "".join(
        f'<iframe src="{Path(p).resolve().as_uri()}" width="{w}" height="{h}" '
        f'style="border:0;position:absolute;left:{i * w}px;top:0"></iframe>'
        for i, p in enumerate(pages)
    )
    wrapper = Path(png).resolve().with_suffix(".panels.html")
    wrapper.write_text(f"<!DOCTYPE html><html><body style='margin:0'>{frames}</body></html>", encoding="utf-8")
    screenshot(wrapper.as_uri(), png, (w * len(pages), h), budget_ms)
    image = np.asarray(Image.open(png).convert("RGB"), dtype=int)
    return [image[:h, i * w : (i + 1) * w] for i in range(len(pages))]
