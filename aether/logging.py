"""structlog set-up, called only by entry points.

Console renderer on a TTY, JSON lines otherwise, and always JSON lines into a rotating
file under ``$AETHER_HOME/logs``. Library code only binds context
(``structlog.get_logger().bind(agent=..., session=...)``).
"""

from __future__ import annotations

import io
import logging
import logging.handlers
import os
import sys
from typing import Any

import structlog

from aether.config import LogFormat, Settings
from aether.files import FILE_MODE, log_tightened, private_dir, tighten_home

_SHARED: list[structlog.types.Processor] = [
    structlog.contextvars.merge_contextvars,
    structlog.stdlib.add_log_level,
    structlog.stdlib.add_logger_name,
    structlog.processors.TimeStamper(fmt="iso", utc=True),
    structlog.processors.StackInfoRenderer(),
]


class PrivateRotatingFileHandler(logging.handlers.RotatingFileHandler):
    """A rotating log file created owner-only (0600), the rotated ones too.

    Logs quote memories and messages: they are as private as the memory itself.
    """

    def _open(self) -> io.TextIOWrapper:
        fd = os.open(self.baseFilename, os.O_WRONLY | os.O_APPEND | os.O_CREAT, FILE_MODE)
        os.fchmod(fd, FILE_MODE)
        stream = os.fdopen(fd, "a", encoding=self.encoding, errors=self.errors)
        assert isinstance(stream, io.TextIOWrapper)
        return stream


_LOGGED_ONCE: set[str] = set()


def log_once(logger: Any, key: str, event: str, **fields: Any) -> bool:
    """Log ``event`` as a warning the first time ``key`` comes up in this process.

    For conditions that repeat on every call (a missing module, a fallback in use) and
    would flood the log. Returns whether it logged.
    """
    if key in _LOGGED_ONCE:
        return False
    _LOGGED_ONCE.add(key)
    logger.warning(event, **fields)
    return True


def _not_file_only(record: logging.LogRecord) -> bool:
    """Keep ``file_only=True`` events (a traceback shown as one line) off the console."""
    return not (isinstance(record.msg, dict) and record.msg.get("file_only"))


QUIET_LIBRARIES = ("httpx", "httpx2", "httpcore", "openai")


def routed() -> bool:
    """Whether :func:`configure_logging` routes structlog (``file_only`` events file only).

    A structlog configured otherwise (a test's, a host program's) would print them.
    """
    factory = structlog.get_config()["logger_factory"] if structlog.is_configured() else None
    return isinstance(factory, structlog.stdlib.LoggerFactory)


def configure_logging(
    settings: Settings,
    *,
    console_level: str | None = None,
    stream: object | None = None,
    log_format: LogFormat | None = None,
) -> None:
    """Route structlog and stdlib logging to stderr and the rotating log file.

    Args:
        settings: the effective settings (log level, home directory).
        console_level: level shown on the console (default ``settings.log.console_level``);
            the file always receives ``settings.log.level``.
        stream: where console output goes (default ``sys.stderr``).
        log_format: the console's format (default ``settings.log.format``): ``console``
            lines for people, ``json`` lines for collectors, or ``auto`` (people on a
            terminal, JSON otherwise). The file is always JSON lines.
    """
    out = stream if stream is not None else sys.stderr
    chosen = log_format or settings.log.format
    is_tty = bool(getattr(out, "isatty", lambda: False)())
    for_people = chosen == "console" or (chosen == "auto" and is_tty)
    console_renderer: structlog.types.Processor = (
        structlog.dev.ConsoleRenderer(colors=is_tty)
        if for_people
        else structlog.processors.JSONRenderer()
    )
    json_formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=_SHARED,
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(),
        ],
    )
    console_formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=_SHARED,
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, console_renderer],
    )
    console = logging.StreamHandler(out)  # type: ignore[arg-type]
    console.setFormatter(console_formatter)
    console.setLevel(console_level or settings.log.console_level)
    console.addFilter(_not_file_only)
    handlers: list[logging.Handler] = [console]
    tightened = tighten_home(settings.home)
    try:
        private_dir(settings.log_dir)
        file_handler = PrivateRotatingFileHandler(
            settings.log_dir / "aether.log",
            maxBytes=settings.log.file_max_bytes,
            backupCount=settings.log.file_backups,
            encoding="utf-8",
        )
        file_handler.setFormatter(json_formatter)
        file_handler.setLevel(settings.log.level)
        handlers.append(file_handler)
    except OSError as e:
        print(f"aether: cannot write logs under {settings.log_dir}: {e}", file=sys.stderr)

    root = logging.getLogger()
    root.handlers = handlers
    root.setLevel(logging.DEBUG)
    for chatty in QUIET_LIBRARIES:  # a line per HTTP request: the ledger records each call
        logging.getLogger(chatty).setLevel(logging.WARNING)
    structlog.configure(
        processors=[*_SHARED, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
    log_tightened(settings.home, tightened)
