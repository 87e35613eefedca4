"""Valid time: when a statement says it holds, told apart from when it was recorded.

"I have lived in Porto since March 2024", "as of May the budget is 40k", "the office is
closed until Friday": the journal knows when each belief was *recorded* (and ``--as-of``
reads that); the statement itself may say when it became or stops being *true*.
:func:`valid_time` reads that from the text, relative to the recording time (UTC):

- a start: ``since``, ``as of``, ``starting``, ``effective``, ``beginning`` followed by a
  date, or ``from DATE to/until DATE``;
- an end: ``until``, ``till``, ``through``, ``up to`` followed by a date;
- a date: ISO (``2024-03-01``), ``March 3, 2024``, ``3 March 2024``, ``March 2024``,
  ``March 3``, ``March``, ``2024``, a weekday, ``today``, ``tomorrow``, ``yesterday``.

A start is rounded down to its date's granularity (``since 2024``: 1 January 2024), an
end up (``until March``: the end of March); a date without a year is the one nearest the
recording on the cue's side (``since March`` said in May: this March; said in January:
last March; ``until Friday``: the coming Friday, the day it was said included).

:func:`holds_at` says which beliefs were true at a time: from their start (stated, or
their recording) to their end (stated, or the start of the belief that superseded them).

A small grammar written here rather than a date library's fuzzy parser: such parsers find
a date in any number ("3 items" is the 3rd of this month) and resolve a bare month or
weekday forwards whatever the cue, where a start must look back and an end forwards.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any, TypeVar

__all__ = ["ValidTime", "holds_at", "valid_time", "validity", "window_text"]

_MONTHS = {
    name: number
    for number in range(1, 13)
    for name in (calendar.month_name[number].lower(), calendar.month_abbr[number].lower())
}
_MONTHS["sept"] = 9
_Doc = TypeVar("_Doc", bound=Mapping[str, Any])
_WEEKDAYS = {calendar.day_name[i].lower(): i for i in range(7)}
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_WEEKDAY = "|".join(_WEEKDAYS)
_ORDINAL = r"(?:st|nd|rd|th)?"
_YEAR = r"(?:19|20|21)\d\d"

_DATE = (
    rf"(?P<iso>{_YEAR}-\d\d-\d\d)"
    rf"|(?P<md_month>{_MONTH})\.?\s+(?P<md_day>\d{{1,2}}){_ORDINAL}(?:,?\s+(?P<md_year>{_YEAR}))?"
    rf"|(?P<dm_day>\d{{1,2}}){_ORDINAL}\s+(?:of\s+)?(?P<dm_month>{_MONTH})\.?(?:,?\s+(?P<dm_year>{_YEAR}))?"
    rf"|(?P<m_month>{_MONTH})\.?(?:\s+(?P<m_year>{_YEAR}))?"
    rf"|(?P<y_year>{_YEAR})"
    rf"|(?:(?:this|next|last)\s+)?(?P<weekday>{_WEEKDAY})"
    r"|(?P<relative>today|tomorrow|yesterday)"
)
_START_CUE = (
    r"since|as\s+of|starting(?:\s+(?:from|on|in))?|effective(?:\s+(?:from|on))?"
    r"|beginning(?:\s+(?:on|in))?"
)
_END_CUE = r"until|till|til|through|up\s+to|up\s+until"
_DATED = rf"(?:the\s+)?(?:{_DATE})(?![\w-])"
_START = re.compile(rf"\b(?:{_START_CUE})\s+{_DATED}", re.I)
_END = re.compile(rf"\b(?:{_END_CUE})\s+(?:the\s+end\s+of\s+|end\s+of\s+)?{_DATED}", re.I)
# "from DATE to DATE": "from" alone is too common ("a message from 2024") to open a window
_FROM = re.compile(rf"\bfrom\s+{_DATED}(?=\s+(?:to|until|till|through)\s)", re.I)
_TO = re.compile(rf"\s+(?:to|until|till|through)\s+(?:the\s+end\s+of\s+)?{_DATED}", re.I)


@dataclass(frozen=True)
class ValidTime:
    """When a statement says it holds (epoch seconds, UTC); ``None``: it does not say.

    Attributes:
        start: it holds from this time.
        end: it holds until this time (exclusive).
    """

    start: float | None = None
    end: float | None = None


@dataclass(frozen=True)
class _Span:
    """A date expression resolved to the days it covers: [first, after)."""

    first: date
    after: date


def _month_span(year: int, month: int) -> _Span:
    after = date(year + 1, 1, 1) if month == 12 else date(year, month + 1, 1)
    return _Span(date(year, month, 1), after)


def _day_span(day: date) -> _Span:
    return _Span(day, day + timedelta(days=1))


def _dated(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None  # "February 30": not a date


def _yearless(month: int, day: int | None, today: date, looking_back: bool) -> _Span | None:
    """The month (or day) nearest ``today`` on the cue's side, today's own included."""
    for year in (today.year, today.year - 1 if looking_back else today.year + 1):
        if day is None:
            span = _month_span(year, month)
        else:
            found = _dated(year, month, day)
            if found is None:
                continue
            span = _day_span(found)
        if (span.first <= today) if looking_back else (span.after > today):
            return span
    return None


def _span(match: re.Match[str], today: date, looking_back: bool) -> _Span | None:
    """The days a matched date expression covers, relative to ``today``."""
    g = match.groupdict()
    if g["iso"]:
        y, mo, d = (int(p) for p in g["iso"].split("-"))
        found = _dated(y, mo, d)
        return _day_span(found) if found else None
    for prefix in ("md", "dm"):
        if g[f"{prefix}_month"]:
            month, day = _MONTHS[g[f"{prefix}_month"].lower()], int(g[f"{prefix}_day"])
            if g[f"{prefix}_year"]:
                found = _dated(int(g[f"{prefix}_year"]), month, day)
                return _day_span(found) if found else None
            return _yearless(month, day, today, looking_back)
    if g["m_month"]:
        month = _MONTHS[g["m_month"].lower()]
        if g["m_year"]:
            return _month_span(int(g["m_year"]), month)
        return _yearless(month, None, today, looking_back)
    if g["y_year"]:
        year = int(g["y_year"])
        return _Span(date(year, 1, 1), date(year + 1, 1, 1))
    if g["weekday"]:
        want = _WEEKDAYS[g["weekday"].lower()]
        if looking_back:
            return _day_span(today - timedelta(days=(today.weekday() - want) % 7))
        return _day_span(today + timedelta(days=(want - today.weekday()) % 7))
    shift = {"today": 0, "tomorrow": 1, "yesterday": -1}[g["relative"].lower()]
    return _day_span(today + timedelta(days=shift))


def _epoch(day: date) -> float:
    return datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp()


def valid_time(statement: str, recorded_at: float) -> ValidTime:
    """When ``statement`` says it holds, its dates read relative to ``recorded_at``.

    Args:
        statement: the belief's text.
        recorded_at: when it was recorded (epoch seconds).

    Returns:
        The start and end it states (either ``None`` when it states none); an end not
        after the start is dropped (a contradiction in the text, not a window).
    """
    today = datetime.fromtimestamp(recorded_at, UTC).date()
    start: float | None = None
    end: float | None = None
    ranged = _FROM.search(statement)
    opening = _START.search(statement) or ranged
    first = None
    if opening:
        span = _span(opening, today, looking_back=True)
        first = span.first if span else None
        start = _epoch(first) if first else None
    if ranged is not None and opening is ranged:
        # "from 2 March to 9 March": the end is the first such date from the start on
        closing = _TO.match(statement, ranged.end())
        span = _span(closing, first or today, looking_back=False) if closing else None
    else:
        closing = _END.search(statement)
        span = _span(closing, today, looking_back=False) if closing else None
    if span is not None:
        end = _epoch(span.after)
    if start is not None and end is not None and end <= start:
        end = None
    return ValidTime(start, end)


def validity(belief: Mapping[str, Any], by_id: Mapping[str, Mapping[str, Any]]) -> ValidTime:
    """The window a belief held in.

    From its stated start (or its recording) to its stated end or the start of the belief
    that superseded it, whichever comes first.

    Args:
        belief: the belief.
        by_id: beliefs by id, where its successor is looked up.
    """
    start = belief.get("valid_from") or belief.get("timestamp")
    end = belief.get("valid_until")
    successor = by_id.get(str(belief.get("superseded_by") or ""))
    if successor is not None:
        replaced = successor.get("valid_from") or successor.get("timestamp")
        if replaced is not None:
            end = replaced if end is None else min(float(end), float(replaced))
    return ValidTime(
        float(start) if start is not None else None, float(end) if end is not None else None
    )


def holds_at(beliefs: Iterable[_Doc], when: float) -> list[_Doc]:
    """The beliefs true at ``when``, in the order given.

    Args:
        beliefs: the candidates, with the beliefs that superseded them among them (a
            successor missing from them does not end a belief's window).
        when: the time asked about (epoch seconds).
    """
    every = list(beliefs)
    by_id = {str(b.get("id")): b for b in every}
    out = []
    for belief in every:
        window = validity(belief, by_id)
        if window.start is not None and when < window.start:
            continue
        if window.end is not None and when >= window.end:
            continue
        out.append(belief)
    return out


def window_text(belief: Mapping[str, Any]) -> str | None:
    """The window a belief's statement gives, by day (UTC): ``from 2024-03-01 to 2024-06-30``.

    What the CLI's and the console's lists show; ``None`` when the statement gives none.
    A stored end is exclusive, so its last day is shown.
    """
    said = []
    for word, name, shift in (("from", "valid_from", 0.0), ("to", "valid_until", -1.0)):
        value = belief.get(name)
        if isinstance(value, int | float):
            said.append(f"{word} {datetime.fromtimestamp(value + shift, UTC).date().isoformat()}")
    return " ".join(said) or None
