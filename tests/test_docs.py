"""The documentation site builds with ``mkdocs build --strict`` (``make docs``): a broken link,
an anchor that does not exist or a page left out of the nav fails the suite."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.timeout(120)
def test_the_docs_build_strictly(tmp_path: Path) -> None:
    site = tmp_path / "site"
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=110,
    )
    assert built.returncode == 0, built.stderr[-4000:]
    for page in ("tournaments", "plans", "campaigns", "errors", "security", "performance"):
        assert (site / page / "index.html").is_file(), page
    assert "Input bounds" in (site / "security" / "index.html").read_text()
