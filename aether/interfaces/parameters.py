"""An operation's arguments as the parameters of a face: one reading of the model for all.

MCP's tools and the CLI's commands are built from the same reading of an arguments
model: each field's name, type, default, description and range, and the CLI's hints
(:func:`aether.operations.base.for_the_cli`). Nothing is declared twice.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from aether.operations.base import FOR_THE_CLI

__all__ = ["CliHint", "Parameter", "parameters"]


@dataclass(frozen=True)
class CliHint:
    """How the CLI offers one argument (see :func:`aether.operations.base.for_the_cli`)."""

    argument: str | None = None
    flags: tuple[str, ...] = ()
    metavar: str | None = None
    parser: str | None = None
    hidden: bool = False
    default: str | int | float | None = None

    @classmethod
    def of(cls, info: FieldInfo) -> CliHint:
        """The hint a field carries (the defaults when it carries none)."""
        extra = info.json_schema_extra
        raw = extra.get(FOR_THE_CLI) if isinstance(extra, Mapping) else None
        if not isinstance(raw, Mapping):
            return cls()
        flags = raw.get("flags")
        return cls(
            argument=_text(raw.get("argument")),
            flags=tuple(str(f) for f in flags) if isinstance(flags, list) else (),
            metavar=_text(raw.get("metavar")),
            parser=_text(raw.get("parser")),
            hidden=bool(raw.get("hidden")),
            default=_scalar(raw.get("default")),
        )


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _scalar(value: object) -> str | int | float | None:
    return value if isinstance(value, str | int | float) else None


@dataclass(frozen=True)
class Parameter:
    """One argument of an operation, as every face offers it.

    Attributes:
        name: the field's name (the argument's name on MCP and in the model).
        annotation: the field's type without its constraints (``int``, ``str | None``).
        constrained: the type with its constraints, for a face that validates by pydantic.
        required: whether it has no default.
        default: its default (``None`` when the model builds it, as for a list).
        description: what it is: the help of its option, the description of its schema.
        low: the least value accepted, if any.
        high: the greatest value accepted, if any.
        cli: how the CLI offers it.
    """

    name: str
    annotation: Any
    constrained: Any
    required: bool
    default: Any
    description: str
    low: int | float | None = None
    high: int | float | None = None
    cli: CliHint = field(default_factory=CliHint)


def parameters(model: type[BaseModel]) -> list[Parameter]:
    """The parameters of an arguments model, in the order of its fields."""
    return [_parameter(name, info) for name, info in model.model_fields.items()]


def _parameter(name: str, info: FieldInfo) -> Parameter:
    low = high = None
    for bound in info.metadata:
        if isinstance(bound, annotated_types.Ge | annotated_types.Gt):
            low = bound.ge if isinstance(bound, annotated_types.Ge) else bound.gt
        elif isinstance(bound, annotated_types.Le | annotated_types.Lt):
            high = bound.le if isinstance(bound, annotated_types.Le) else bound.lt
    required = info.is_required()
    return Parameter(
        name=name,
        annotation=info.annotation,
        constrained=info.rebuild_annotation(),
        required=required,
        default=None if required or info.default_factory is not None else info.default,
        description=info.description or "",
        low=low if isinstance(low, int | float) else None,
        high=high if isinstance(high, int | float) else None,
        cli=CliHint.of(info),
    )
