"""The chaos soak in short: ``bench/chaos.py`` with 3 cycles must keep every promise."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench" / "chaos.py"


@pytest.mark.soak
@pytest.mark.timeout(400)
def test_a_short_chaos_soak_loses_nothing_and_answers_every_message_once() -> None:
    out = subprocess.run(
        [sys.executable, str(BENCH), "--cycles", "3", "--seed", "3", "--max-seconds", "240"],
        capture_output=True,
        text=True,
        timeout=380,
        check=False,
    )
    assert out.stdout, out.stderr[-3000:]
    report = json.loads(out.stdout)
    assert out.returncode == 0, report
    assert report["cycles"] == 3 and report["redis_kills"] + report["daemon_kills"] == 3
    assert report["acked_writes"] > 0 and report["lost_writes"] == 0
    assert report["inbox_sent"] > 0
    assert report["answered_once"] == report["inbox_sent"]
    assert report["answered_twice"] == 0 and report["unanswered"] == 0
    assert report["rollback_undo_identical"] is True and report["rollback_ops"] > 0
