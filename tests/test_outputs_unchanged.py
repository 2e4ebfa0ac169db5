"""Every report, page and JSON document archzoo makes from the shipped registry is the one recorded in
tests/data/outputs.sha256.json: a refactor that changes an output, by a byte, fails here.

The record is written by ``python tests/output_snapshot.py`` and changed only on purpose (a new entry, a new
page, a corrected figure), in the commit that says why.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_every_output_is_the_recorded_one():
    done = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "output_snapshot.py"), "--check"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=900,
    )
    assert done.returncode == 0, (
        "outputs differ from tests/data/outputs.sha256.json (if the change is meant, run "
        f"`python tests/output_snapshot.py` and say why in the commit):\n{done.stdout[-4000:]}{done.stderr[-4000:]}"
    )
