"""The composition root and the public API, as the README's Python section uses them."""

from __future__ import annotations

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
        async with Aether.open(s, actor="agent") as agent:
            # a fresh namespace: ready, and its indexes wait for the first write
            assert await agent.client.exists(agent.keys.memory_index_schema()) == 0
            assert await agent.search.search("anything") == []
            parts = (agent.memory, agent.search.layer, agent.context.layer, agent.graph.layer)
            assert all(p is agent.memory for p in parts)
            assert agent.identity.checkpoints is agent.checkpoints
            assert agent.memory.client is agent.client
            await agent.identity.ensure(default_identity_dir())
            await DailyLog(agent.memory).log("the NAS has 16 TB of disks")
            assert await agent.client.exists(agent.keys.memory_index_schema()) == 1
            hits = await agent.search.search("NAS disks", limit=5)
            assert [h.content for h in hits] == ["the NAS has 16 TB of disks"]
            assert hits[0].match is not None and hits[0].match > 0
            rt = agent.runtime("main", llm=LLMClient(llm.base_url, "scripted", max_retries=0))
            assert rt.layer is agent.memory and rt.checkpoints is agent.checkpoints
            result = await rt.step("What is on my list today?")
            assert result.reply == "all done"
            cp = await agent.checkpoints.create(label="after the step")
            assert (await agent.checkpoints.resolve(cp.id)).id == cp.id
