"""The CLI's reader of times (``--since``, ``--as-of``): relative amounts and ISO-8601."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from aether.errors import InvalidOperationError
from aether.interfaces.parsers import parse_since
from aether.operations import ranges


@pytest.mark.parametrize(
    ("text", "back"),
    [
        ("7d", timedelta(days=7)),
        ("12h", timedelta(hours=12)),
        ("30m", timedelta(minutes=30)),
        ("90s", timedelta(seconds=90)),
        (" 0s ", timedelta(0)),
    ],
)
def test_a_relative_time_is_that_long_ago(text: str, back: timedelta) -> None:
    before = datetime.now(UTC)
    when = parse_since(text, "--as-of")
    assert when is not None
    assert before - back - timedelta(seconds=1) <= when <= datetime.now(UTC) - back


def test_an_iso_time_is_read_as_utc_when_naive() -> None:
    assert parse_since("2026-03-01T09:00") == datetime(2026, 3, 1, 9, tzinfo=UTC)
    assert parse_since("2026-03-01T09:00Z") == datetime(2026, 3, 1, 9, tzinfo=UTC)
    assert parse_since(None) is None


@pytest.mark.parametrize("text", ["1q", "7 d", "-5m", "s", "1.5h", "yesterday", ""])
def test_other_text_is_refused_naming_the_flag(text: str) -> None:
    with pytest.raises(InvalidOperationError, match=r"--as-of .*: use 7d, 12h, 30m, 90s"):
        parse_since(text, "--as-of")


def test_too_far_back_is_refused_in_every_unit() -> None:
    days = ranges.SINCE_MAX_DAYS + 1
    for text in (f"{days}d", f"{days * 86_400}s", "99999999999999s"):
        with pytest.raises(InvalidOperationError, match="too far back"):
            parse_since(text)
