"""``aether journal verify``: the hash chain and the live state, checked against each other."""

from __future__ import annotations

import typer

from aether.interfaces.commands import Out, command
from aether.interfaces.common import EXIT_ERROR, group, plural
from aether.interfaces.tables import Column
from aether.operations import journal as ops

app = group("The journal: verify its hash chain and the state against it.", order=("verify",))


def _print(found: ops.ChainVerification, out: Out[ops.ChainVerification]) -> None:
    signed = ", head signed by the key" if found.signed and found.ok else ""
    start = "" if found.start == "genesis" else f" (from {found.start})"
    typer.echo(
        f"{plural(found.entries, 'entry')}{start} and {plural(found.keys, 'state key')} "
        f"checked{signed}"
    )
    if found.legacy:
        typer.echo(f"{plural(found.legacy, 'entry')} written before the chain (not checked)")
    for redaction in found.redactions:
        typer.echo(
            f"redacted by {redaction['why']}: {plural(redaction['entries'], 'entry')} re-chained"
        )
    if found.ok:
        typer.echo("ok: no break")
        return
    columns: list[Column[dict[str, str | None]]] = [
        Column("break", lambda b: b["kind"] or "", whole=True),
        Column("entry", lambda b: b["entry"] or "", whole=True),
        Column("key", lambda b: b["key"] or ""),
        Column("detail", lambda b: b["detail"] or ""),
    ]
    out.table(found.breaks, columns, empty="")


@command(app, "verify", ops.journal_verify)
def _verified(found: ops.ChainVerification, out: Out[ops.ChainVerification]) -> None:
    """Recompute the journal's hash chain and the state's digests (exit 0 clean, 1 broken).

    Names each break: a state key edited, planted or deleted outside aether; a journal
    entry forged, deleted, reordered or truncated; with AETHER_JOURNAL__KEY, a head the key
    did not sign. Erasures that rewrote history are listed as redactions.
    """
    out.emit(found, lambda: _print(found, out))
    if not found.ok:
        raise typer.Exit(EXIT_ERROR)
