"""The composition root and the public API, as the README's Python section uses them."""

from __future__ import annotations

import pytest

import aether
from aether import Aether, LLMClient, Settings
from aether.identity.bootstrap import default_identity_dir
from aether.memory.tiers.daily import DailyLog
from aether.testing.model import ScriptedOpenAI, completion


def test_the_package_exports_its_public_api() -> None:
    for name in aether.__all__:
        assert getattr(aether, name) is not None, name
    assert aether.Aether.__module__ == "aether.app"
    try:
        aether.NotAThing  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as e:
        assert "NotAThing" in str(e)
    else:
        raise AssertionError("an unknown name must raise AttributeError")


async def test_open_wires_every_part_over_one_client(settings: Settings) -> None:
    s = settings.model_copy(update={"embedding": {"provider": "none"}})
    with ScriptedOpenAI(responder=lambda body: completion("all done")) as llm:
        async with Aether.open(s, actor="agent") as parts:
            # a fresh namespace: ready, and its indexes wait for the first write
            assert await parts.client.exists(parts.keys.memory_index_schema()) == 0
            assert await parts.search.search("anything") == []
            memories = (
                parts.memory,
                parts.search.memory,
                parts.assembler.memory,
                parts.graph.memory,
            )
            assert all(m is parts.memory for m in memories)
            assert parts.identity.checkpoints is parts.checkpoints
            assert parts.memory.client is parts.client
            await parts.identity.ensure(default_identity_dir())
            await DailyLog(parts.memory).log("the NAS has 16 TB of disks")
            assert await parts.client.exists(parts.keys.memory_index_schema()) == 1
            hits = await parts.search.search("NAS disks", limit=5)
            assert [h.content for h in hits] == ["the NAS has 16 TB of disks"]
            assert hits[0].match is not None and hits[0].match > 0
            rt = parts.runtime("main", llm=LLMClient(llm.base_url, "scripted", max_retries=0))
            assert rt.memory is parts.memory and rt.checkpoints is parts.checkpoints
            result = await rt.step("What is on my list today?")
            assert result.reply == "all done"
            cp = await parts.checkpoints.create(label="after the step")
            assert (await parts.checkpoints.resolve(cp.id)).id == cp.id


async def test_the_assemblers_old_name_still_answers_with_a_warning(settings: Settings) -> None:
    s = settings.model_copy(update={"embedding": {"provider": "none"}})
    async with Aether.open(s) as parts:
        with pytest.warns(DeprecationWarning, match="Parts.assembler .*0.3.0"):
            old = parts.context
        assert old is parts.assembler
