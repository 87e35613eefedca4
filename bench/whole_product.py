"""The whole product as a state machine: every operation against one real namespace.

Hypothesis picks sequences of what an operator and an agent do in a real life (log,
remember and supersede, forget, notes, scratchpads, tasks and goals, identity changes,
checkpoints, rollbacks and undos, erasures, export and import, maintenance, chat turns
through the runtime with the scripted model, tool calls that wait for an approval, and
the adapters of other runtimes: a LangGraph graph's thread, LangGraph store items, an
OpenAI Agents SDK session) and checks, after every step, what must always hold:

- every acknowledged write is present unless rolled back or erased (a model of what
  should be there, restored with each rollback);
- a read changes nothing (a read-only operation between two images of the state);
- rollback then undo restores the state image exactly;
- an erased text is in no key, journal entry or export, nor in what "as of" rebuilds of
  any earlier moment;
- export -> import -> export is the same file;
- an exact phrase finds the entry that holds it;
- nothing is left holding writes (no write hold, no admin lock).

``tests/test_whole_product.py`` runs a bounded, seeded number of examples in the suite;
``bench/simulate.py`` runs many more (and the daemon over simulated weeks).
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
import operator
import tempfile
import threading
import time
import uuid
from collections.abc import Awaitable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, ClassVar, TypeVar

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from langgraph.graph import START, StateGraph
from typing_extensions import TypedDict

from aether.checkpoints.chain import JournalChain
from aether.checkpoints.history import drop_namespace
from aether.config import Settings
from aether.identity.bootstrap import default_identity_dir
from aether.integrations.langgraph import AetherCheckpointSaver, AetherStore
from aether.integrations.openai_agents import AetherSession
from aether.keys import Keyspace
from aether.memory.portable import export_memory, import_memory, read_portable
from aether.operations import REGISTRY, Caller, Parts
from aether.runtime.agent import AgentRuntime
from aether.runtime.llm import CircuitBreaker, LLMClient
from aether.store.client import connect
from aether.testing.image import state_image
from aether.testing.model import ScriptedOpenAI, echo

T = TypeVar("T")

WORDS = ["kestrel", "harbour", "boiler", "lantern", "quartz", "meadow", "ledger", "violet"]
CITIES = ["Lisbon", "Porto", "Braga", "Faro"]
READS = [
    ("memory_search", {"query": "kestrel harbour"}),
    ("belief_list", {"status": "all"}),
    ("task_list", {"status": "all"}),
    ("goal_list", {}),
    ("checkpoint_list", {}),
    ("context_assemble", {"query": "what do I know about the boiler?", "max_tokens": 800}),
    ("identity_get", {}),
    ("chat_list", {}),
    ("erase_log", {}),
    ("approvals_list", {"status": "all"}),
    ("memory_day", {"day": datetime.now(UTC).date().isoformat()}),
    ("task_suggest", {}),
    # the operator's reads the CLI runs through operations
    ("belief_reflect", {}),
    ("belief_stats", {}),
    ("memory_notes", {}),
    ("memory_episodes", {"session": "sim"}),
    ("identity_prompt", {}),
    ("ledger_totals", {}),
    ("tools_list", {}),
]


CHECKED_TAG = "checked"
"""The tag every daily entry the machine logs carries (its filtered searches ask for it)."""


@dataclass
class Expected:
    """What the namespace should hold: restored with a rollback, cut by an erasure."""

    entries: dict[str, str] = field(default_factory=dict)  # daily entry id -> text
    notes: dict[str, str] = field(default_factory=dict)  # long-term note id -> text
    tasks: dict[str, str] = field(default_factory=dict)  # task id -> title
    done: set[str] = field(default_factory=set)  # ids of the tasks done
    city: str | None = None  # the last place the user said they live
    chats: list[str] = field(default_factory=list)  # what was said in session "sim"
    projects: str | None = None  # the operator's projects field
    graph: list[str] = field(default_factory=list)  # the LangGraph thread's notes
    store: dict[str, str] = field(default_factory=dict)  # LangGraph store key -> text
    session: list[str] = field(default_factory=list)  # the Agents SDK session's texts
    named: dict[str, list[str]] = field(default_factory=dict)  # session named after a person


class Notes(TypedDict):
    notes: Annotated[list[str], operator.add]


def _notes_graph(saver: AetherCheckpointSaver) -> Any:
    """A graph that acknowledges each note it is given (one node, one thread)."""

    def acknowledge(state: Notes) -> dict[str, list[str]]:
        return {"notes": [f"ack {state['notes'][-1]}"]}

    builder = StateGraph(Notes)
    builder.add_node("acknowledge", acknowledge)
    builder.add_edge(START, "acknowledge")
    return builder.compile(checkpointer=saver)


GRAPH_THREAD = {"configurable": {"thread_id": "sim-thread"}}


@dataclass
class Counters:
    """Shared by every example of a run (the bench reports them)."""

    steps: int = 0
    examples: int = 0
    by_rule: dict[str, int] = field(default_factory=dict)


class _Loop:
    """One event loop in a thread of its own, for the machine's async calls."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, work: Awaitable[T]) -> T:
        return asyncio.run_coroutine_threadsafe(work, self.loop).result(timeout=300)  # type: ignore[arg-type]


class WholeProduct(RuleBasedStateMachine):
    """See the module docs; :meth:`configure` first (the Redis home to use)."""

    home: ClassVar[Path]
    counters: ClassVar[Counters] = Counters()
    _loop: ClassVar[_Loop | None] = None
    _model: ClassVar[ScriptedOpenAI | None] = None

    @classmethod
    def configure(cls, home: Path) -> None:
        """Point the machine at an embedded Redis's home (started by the caller)."""
        cls.home = home
        if cls._loop is None:
            cls._loop = _Loop()
        if cls._model is None:
            cls._model = ScriptedOpenAI(responder=echo).__enter__()

    @classmethod
    def shutdown(cls) -> None:
        """Stop the scripted model (the loop's thread is a daemon)."""
        if cls._model is not None:
            cls._model.__exit__(None, None, None)
            cls._model = None

    def __init__(self) -> None:
        super().__init__()
        self.expected = Expected()
        self.checkpoints: list[tuple[str, Expected, dict[bytes, object]]] = []
        self.undo: tuple[Expected, dict[bytes, object]] | None = None
        self.erased: list[str] = []
        self.numbers = itertools.count(1)
        self.tmp = Path(tempfile.mkdtemp(prefix="aether-sim-"))

    # -- plumbing ------------------------------------------------------------------------
    def run(self, work: Awaitable[T]) -> T:
        assert self._loop is not None, "WholeProduct.configure() first"
        return self._loop.run(work)

    def op(self, name: str, **values: Any) -> Any:
        operation = REGISTRY[name]
        result = self.run(operation(self.parts, self.caller, operation.parse(values)))
        return operation.dump(result)

    def image(self) -> dict[bytes, object]:
        return self.run(state_image(self.client, self.parts.keys))

    def unique(self, word: str) -> str:
        return f"{word} zq{uuid.uuid4().hex[:8]}x{next(self.numbers)}"

    def counted(self, name: str) -> None:
        by_rule = self.counters.by_rule
        by_rule[name] = by_rule.get(name, 0) + 1

    @initialize()
    def start(self) -> None:
        self.counters.examples += 1
        namespace = f"sim{uuid.uuid4().hex[:10]}"
        self.settings = Settings(
            home=self.home,
            namespace=namespace,
            workspace=self.tmp / "ws",
            embedding={"provider": "none"},  # type: ignore[arg-type]
        )
        (self.tmp / "ws").mkdir(exist_ok=True)
        self.client = self.run(connect(self.settings))
        self.parts = Parts(self.settings, self.client, actor="sim")
        self.caller = Caller("sim")
        self.run(self.parts.ready())
        self.began = time.time()
        self.run(self.parts.identity.ensure(default_identity_dir()))
        assert self._model is not None
        breaker = CircuitBreaker(self._model.base_url, failures=1000)
        self.llm = LLMClient(self._model.base_url, "scripted", max_retries=0, breaker=breaker)

        async def adapters() -> None:  # made on the machine's loop, as an agent would
            self.graph = _notes_graph(AetherCheckpointSaver(self.parts))
            self.store = AetherStore(self.parts)
            self.session = AetherSession("sim-sdk", self.parts)

        self.run(adapters())

    def teardown(self) -> None:
        if hasattr(self, "client"):
            keys = self.parts.keys

            async def clean() -> None:
                await self.drop(keys)
                await self.llm.aclose()
                await self.client.aclose()

            self.run(clean())

    def draw_entry(self, data: st.DataObject) -> tuple[str, str]:
        """An acknowledged daily entry, and the unique token its text holds."""
        entry = data.draw(st.sampled_from(sorted(self.expected.entries)))
        return entry, self.expected.entries[entry].split()[-1]

    async def drop(self, keys: Any) -> None:
        """Delete every key of a namespace (the machine's own, or an import's target)."""
        names = [k async for k in self.client.scan_iter(match=keys.every_key)]
        for start in range(0, len(names), 500):
            await self.client.unlink(*names[start : start + 500])

    def wrote(self) -> None:
        """A write after a rollback: its undo is no longer the contract's to check."""
        self.undo = None

    # -- writes --------------------------------------------------------------------------
    @rule(word=st.sampled_from(WORDS))
    def log(self, word: str) -> None:
        self.counted("log")
        text = self.unique(word)
        entry = self.op(
            "memory_log", content=f"the {text} was checked", source="user", tags=[CHECKED_TAG]
        )
        self.expected.entries[entry["id"]] = text
        self.wrote()

    @rule(word=st.sampled_from(WORDS))
    def note(self, word: str) -> None:
        self.counted("note")
        text = self.unique(word)
        note = self.op("memory_note", content=f"remember that the {text} matters")
        self.expected.notes[note["id"]] = text
        self.wrote()

    @rule(city=st.sampled_from(CITIES))
    def remember_where(self, city: str) -> None:
        self.counted("remember")
        self.op("memory_remember", content=f"I live in {city} now")
        self.expected.city = city
        self.wrote()

    @rule(city=st.sampled_from(CITIES))
    def replace_where(self, city: str) -> None:
        """The operator replaces where the user lives by description (``memory replace``):
        the old belief retired, the new one active, nothing else touched."""
        self.counted("replace")
        done = self.op("memory_replace", target="where I live", content=f"I live in {city} now")
        retired = [r["content"] for r in done["replaced"] if r["kind"] == "belief"]
        assert retired == ([f"I live in {self.expected.city} now"] if self.expected.city else [])
        self.expected.city = city
        self.wrote()

    @rule(name=st.sampled_from(["Marta", "Ivo", "Ren"]))
    def forget_about(self, name: str) -> None:
        """Facts about a person, then ``memory forget --about`` them: theirs go, a
        gym mate's stay, and no acknowledged entry or note is touched."""
        self.counted("forget about")
        mate = "Quill" if name != "Quill" else "Ivo"
        self.op("memory_remember", content=f"{name} climbs at Crux Gym", source="user")
        self.op("memory_remember", content=f"{mate} climbs at Crux Gym", source="user")
        done = self.op("memory_forget", about=name)
        contents = [i["content"] for i in done["items"]]
        assert f"{name} climbs at Crux Gym" in contents and all(mate not in c for c in contents), (
            contents
        )
        found = self.op("memory_search", query=f"{name} climbs", limit=20)["results"]
        assert not any(r["content"].startswith(name) for r in found), found
        assert any(r["content"].startswith(mate) for r in found), found
        self.wrote()

    @precondition(lambda self: bool(self.expected.entries))
    @rule(data=st.data())
    def forget(self, data: st.DataObject) -> None:
        self.counted("forget")
        entry = data.draw(st.sampled_from(sorted(self.expected.entries)))
        self.op("memory_forget", id=entry)
        del self.expected.entries[entry]
        self.wrote()

    @rule(word=st.sampled_from(WORDS), with_goal=st.booleans())
    def task(self, word: str, with_goal: bool) -> None:
        self.counted("task")
        goal = self.op("goal_add", title=f"look after the {word}")["id"] if with_goal else None
        title = self.unique(word)
        task = self.op("task_add", title=f"inspect the {title}", goal=goal)
        self.expected.tasks[task["id"]] = title
        self.wrote()

    @precondition(lambda self: bool(set(self.expected.tasks) - self.expected.done))
    @rule(data=st.data())
    def finish_task(self, data: st.DataObject) -> None:
        self.counted("task_done")
        task = data.draw(st.sampled_from(sorted(set(self.expected.tasks) - self.expected.done)))
        self.op("task_done", id=task[:10])
        self.expected.done.add(task)
        self.wrote()

    @rule(word=st.sampled_from(WORDS))
    def scratchpad(self, word: str) -> None:
        self.counted("scratchpad")
        self.op("scratchpad_set", id="plan", value=f"next: the {word}")
        assert self.op("scratchpad_get", id="plan")["value"] == f"next: the {word}"

    @precondition(lambda self: bool(self.expected.notes))
    @rule(data=st.data())
    def note_deleted(self, data: st.DataObject) -> None:
        """The operator deletes a note (``aether memory longterm delete``): a journaled write
        that a rollback brings back and that meets erasures and exports like any other."""
        self.counted("note delete")
        note = data.draw(st.sampled_from(sorted(self.expected.notes)))
        self.op("memory_note_delete", id=note)
        del self.expected.notes[note]
        self.wrote()

    @rule(word=st.sampled_from(WORDS))
    def identity_set(self, word: str) -> None:
        self.counted("identity")
        self.op("identity_set", target="user", field="projects", value=f"the {word} project")
        self.expected.projects = f"the {word} project"
        self.wrote()

    @rule(word=st.sampled_from(WORDS))
    def chat_turn(self, word: str) -> None:
        self.counted("chat")
        said = f"tell me about the {self.unique(word)}"
        runtime = AgentRuntime(self.parts, session="sim", llm=self.llm, actor="agent")
        result = self.run(runtime.step(said))
        assert "I heard" in result.reply, result.reply
        self.expected.chats.append(said)
        self.wrote()

    @rule(word=st.sampled_from(WORDS), again=st.booleans())
    def named_chat(self, word: str, again: bool) -> None:
        """A chat in a session named after the person it is with (what it says does not
        name them): erasing the name takes the session (its keys are named by it)."""
        self.counted("named chat")
        names = sorted(self.expected.named)
        name = names[-1] if again and names else f"zq{uuid.uuid4().hex[:8]}x{next(self.numbers)}"
        said = f"about the {word}"
        runtime = AgentRuntime(self.parts, session=name, llm=self.llm, actor="agent")
        result = self.run(runtime.step(said))
        assert "I heard" in result.reply, result.reply
        self.expected.named.setdefault(name, []).append(said)
        self.wrote()

    @rule(word=st.sampled_from(WORDS))
    def graph_step(self, word: str) -> None:
        """A LangGraph graph advances its thread (checkpointed in the namespace)."""
        self.counted("graph")
        note = self.unique(word)
        self.run(self.graph.ainvoke({"notes": [note]}, GRAPH_THREAD))
        self.expected.graph += [note, f"ack {note}"]
        self.wrote()

    @rule(word=st.sampled_from(WORDS), slot=st.sampled_from(["a", "b", "c"]))
    def store_put(self, word: str, slot: str) -> None:
        """A LangGraph store item is put (or replaced)."""
        self.counted("store")
        text = self.unique(word)
        value = {"text": f"prefers the {text}", "slot": slot}
        self.run(self.store.aput(("sim", "user"), slot, value))
        self.expected.store[slot] = text
        self.wrote()
        # the filter is applied in the query: the one item of this slot is found
        found = self.run(
            self.store.asearch(("sim",), query=f"prefers the {text}", filter={"slot": slot})
        )
        assert [(h.key, h.value["text"]) for h in found] == [(slot, value["text"])]

    @rule(word=st.sampled_from(WORDS))
    def sdk_turn(self, word: str) -> None:
        """An OpenAI Agents SDK runner adds a turn's items to its session."""
        self.counted("sdk")
        asked = f"where is the {self.unique(word)}"
        self.run(
            self.session.add_items(
                [
                    {"role": "user", "content": asked},
                    {"role": "assistant", "content": [{"type": "output_text", "text": "here"}]},
                ]
            )
        )
        self.expected.session.append(asked)
        self.wrote()

    @rule()
    def approval(self) -> None:
        """A tool call waits; the operator answers it by a prefix of its id."""
        self.counted("approval")
        approvals = self.parts.approvals
        request = self.run(
            approvals.request("bash", {"command": "ls"}, session="sim", reason="sim", timeout_s=60)
        )
        status = self.op("approvals_list", status="pending")
        assert request.id in [a["id"] for a in status["approvals"]]
        short = status["prefixes"][request.id]  # what `approvals list` shows, among older ones
        assert len(short) < len(request.id)
        decided = self.op("approvals_approve", id=short)
        assert decided["status"] == "approved" and decided["id"] == request.id
        waited = self.run(approvals.wait(request.id))
        assert waited.status == "approved"

    @rule()
    def maintenance(self) -> None:
        self.counted("maintenance")
        from aether.maintenance.engine import MaintenanceEngine

        engine = MaintenanceEngine(self.parts.memory, self.parts.checkpoints, actor="sim")
        self.run(engine.run())
        self.wrote()

    # -- checkpoints ---------------------------------------------------------------------
    @rule()
    def checkpoint(self) -> None:
        self.counted("checkpoint")
        cp = self.op("checkpoint_create", label=f"sim {len(self.checkpoints)}")
        self.checkpoints.append((cp["id"], copy.deepcopy(self.expected), self.image()))
        self.checkpoints = self.checkpoints[-8:]

    @precondition(lambda self: bool(self.checkpoints))
    @rule(data=st.data())
    def fork(self, data: st.DataObject) -> None:
        """A fork holds its checkpoint's keys, verifies, and leaves the source as it was."""
        self.counted("fork")
        cp_id, _, image = data.draw(st.sampled_from(self.checkpoints))
        before = self.image()
        to = f"{self.parts.keys.ns}.fork{next(self.numbers)}"
        made = self.op("checkpoint_fork", id=cp_id, to=to)
        forked = Keyspace(to)
        try:
            if image:
                prefix = len(self.parts.keys.prefix)
                assert made["keys"] == len(image), (made["keys"], len(image))
                copied = self.run(state_image(self.client, forked))
                assert {k[len(forked.prefix) :] for k in copied} == {k[prefix:] for k in image}
            chain = self.run(JournalChain(self.client, forked).verify())
            assert chain.ok, chain.breaks[:3]
        finally:
            self.run(drop_namespace(self.client, forked))
            self.run(self.client.hdel(self.parts.keys.forks(), to))
        assert self.image() == before, "a fork changed its source"

    @rule(word=st.sampled_from(WORDS))
    def as_of_now_is_the_live_state(self, word: str) -> None:
        """Read as of now, the past (rebuilt from the journal) is the present."""
        self.counted("as of")
        now = time.time() + 0.002
        for name, values in (
            ("belief_list", {"status": "all"}),
            ("memory_search", {"query": word, "limit": 10}),
        ):
            live, past = self.op(name, **values), self.op(name, **values, as_of=now)
            assert _ids(live) == _ids(past), (name, _ids(live), _ids(past))

    @precondition(lambda self: bool(self.erased))
    @rule(data=st.data())
    def the_past_holds_no_erased_text(self, data: st.DataObject) -> None:
        """As of any earlier moment of the namespace's life (history the erasures redacted),
        neither search nor the beliefs give back an erased text."""
        self.counted("as of erased")
        when = self.began + data.draw(st.floats(0, 1)) * (time.time() - self.began)
        token = data.draw(st.sampled_from(self.erased))
        found = self.op("memory_search", query=token, limit=10, as_of=when)
        beliefs = self.op("belief_list", status="all", limit=2000, as_of=when)
        shown = json.dumps([found, beliefs], ensure_ascii=False)
        assert not any(t in shown for t in self.erased), (when, token, shown[:500])

    @rule()
    def valid_at_now_is_what_is_active(self) -> None:
        """True now, by valid time: the active beliefs (none of the sim's states a window)."""
        self.counted("valid at")
        active = self.op("belief_list", status="active", limit=2000)
        true_now = self.op("belief_list", valid_at=self.caller.clock() + 0.002, limit=2000)
        assert _ids(true_now) == _ids(active), (_ids(true_now), _ids(active))

    @precondition(lambda self: bool(self.checkpoints))
    @rule(data=st.data())
    def rollback(self, data: st.DataObject) -> None:
        self.counted("rollback")
        cp_id, expected, image = data.draw(st.sampled_from(self.checkpoints))
        before = (copy.deepcopy(self.expected), self.image())
        self.op("checkpoint_rollback", id=cp_id[:10])
        if image:
            assert self.image() == image, "a rollback must restore the checkpoint's state exactly"
        self.expected = self.without_erased(copy.deepcopy(expected))
        self.graph_after_erasure(self.expected)
        self.undo = before
        if not image:  # a checkpoint from before an erasure: everything but the erased
            self.nothing_holds_the_erased()

    @precondition(lambda self: self.undo is not None)
    @rule()
    def undo_rollback(self) -> None:
        self.counted("undo")
        assert self.undo is not None
        expected, image = self.undo
        self.op("checkpoint_undo")
        assert self.image() == image, "undo must restore the state before the rollback exactly"
        self.expected = expected
        self.undo = None

    # -- erasure, export and import --------------------------------------------------------
    def erasable(self) -> list[str]:
        """The unique tokens of what is held: entries, and the adapters' texts."""
        texts = [
            *(self.expected.entries[e] for e in sorted(self.expected.entries)),
            *self.expected.store.values(),
            *self.expected.session,
            *self.expected.graph,
        ]
        # in the order they were made (tokens are random: sorting them would make the
        # same draw pick another one in hypothesis's next run of the case)
        tokens = [text.split()[-1] for text in texts] + list(self.expected.named)
        return list(dict.fromkeys(tokens))

    @precondition(lambda self: bool(self.erasable()))
    @rule(data=st.data())
    def erase(self, data: st.DataObject) -> None:
        self.counted("erase")
        token = data.draw(st.sampled_from(self.erasable()))
        if token in self.expected.named:
            self.counted("erase a session's name")
        self.op("erase", text=token)
        self.erased.append(token)
        self.expected = self.without_erased(self.expected)
        self.graph_after_erasure(self.expected)
        # checkpoints stay, but their images held the text: no longer byte-comparable
        self.checkpoints = [(i, e, {}) for i, e, _ in self.checkpoints]
        self.undo = None
        found = self.op("erase_verify", text=token)
        assert found["clean"], found["found"]
        exported = self.tmp / "after-erase.jsonl"
        self.run(export_memory(self.parts.memory, exported))
        assert token not in exported.read_text(), "an erased text must not be exported"

    def without_erased(self, expected: Expected) -> Expected:
        """``expected`` less what an erasure took (a rollback never brings it back)."""
        for token in self.erased:
            for kind in (expected.entries, expected.notes, expected.tasks):
                for key in [k for k, text in kind.items() if token in text]:
                    del kind[key]
            expected.chats = [c for c in expected.chats if token not in c]
            expected.session = [c for c in expected.session if token not in c]
            for slot in [k for k, text in expected.store.items() if token in text]:
                del expected.store[slot]
            expected.named.pop(token, None)
        return expected

    def graph_after_erasure(self, expected: Expected) -> None:
        """The thread after an erasure (or a rollback across one) of a text it held.

        Every checkpoint, channel value and pending write that held the text is gone.
        What the thread holds then depends on how LangGraph stored it (a checkpoint that
        held the text, like an input checkpoint, goes whole; a channel kept as deltas
        loses only the deltas that held it), but it is made only of what it held before:
        its notes are those notes, in order, less some, never the text. The model
        follows them from there.
        """
        if not any(token in note for token in self.erased for note in expected.graph):
            return

        async def notes() -> list[str]:
            return list((await self.graph.aget_state(GRAPH_THREAD)).values.get("notes", []))

        held = self.run(notes())
        rest = iter(expected.graph)
        assert all(note in rest for note in held), (held, expected.graph)  # in order
        assert not any(token in note for token in self.erased for note in held), held
        expected.graph = held

    def nothing_holds_the_erased(self) -> None:
        keys = self.parts.keys

        async def holding() -> list[str]:
            found = []
            async for name in self.client.scan_iter(match=keys.every_key):
                dump = await self.client.dump(name)
                if any(t.encode() in name + (dump or b"") for t in self.erased):
                    found.append(name.decode())  # a value, or a key named after it
            return found

        assert self.run(holding()) == [], "an erased text came back"

    @rule()
    def export_import(self) -> None:
        self.counted("export_import")
        first, second = self.tmp / "first.jsonl", self.tmp / "second.jsonl"
        self.run(export_memory(self.parts.memory, first))
        other = Parts(
            self.settings.model_copy(update={"namespace": self.settings.namespace + "x"}),
            self.client,
            actor="sim",
        )

        async def move() -> None:
            await other.ready()
            entries = read_portable(other.memory, first)
            await import_memory(other.memory, other.checkpoints, entries, actor="sim")
            await export_memory(other.memory, second)
            await self.drop(other.keys)

        self.run(move())
        assert first.read_text() == second.read_text(), "export -> import -> export differs"

    # -- reads and invariants ----------------------------------------------------------------
    @rule(read=st.sampled_from(READS))
    def a_read_changes_nothing(self, read: tuple[str, dict[str, Any]]) -> None:
        self.counted("read")
        name, values = read
        before = self.image()
        self.op(name, **values)
        assert self.image() == before, f"{name} changed the state"

    @precondition(lambda self: bool(self.expected.entries))
    @rule(data=st.data())
    def exact_phrase_is_found(self, data: st.DataObject) -> None:
        self.counted("search")
        entry, token = self.draw_entry(data)
        hits = self.op("memory_search", query=token, limit=10)
        assert entry in [h["id"] for h in hits["results"]], (token, hits)

    @precondition(lambda self: bool(self.expected.entries))
    @rule(data=st.data())
    def a_tag_filtered_search_finds_only_its_tag(self, data: st.DataObject) -> None:
        """The filtered path (the size question, its kept answer, the memory counters that
        answer it) over rollbacks, erasures and imports: the entry is found, nothing else."""
        self.counted("tag search")
        entry, token = self.draw_entry(data)
        hits = self.op("memory_search", query=token, limit=10, tags=[CHECKED_TAG])
        assert entry in [h["id"] for h in hits["results"]], (token, hits)
        assert all(CHECKED_TAG in (h.get("tags") or []) for h in hits["results"]), hits

    @invariant()
    def what_was_acknowledged_is_there(self) -> None:
        if not hasattr(self, "parts"):
            return
        self.counters.steps += 1
        keys = self.parts.keys

        async def check() -> None:
            pipe = self.client.pipeline(transaction=False)
            for entry in self.expected.entries:
                pipe.exists(keys.daily_entry(entry))
            for note in self.expected.notes:
                pipe.exists(keys.longterm(note))
            pipe.exists(keys.write_hold(), keys.admin_lock())
            found = await pipe.execute()
            missing = [
                name
                for name, hit in zip(
                    [*self.expected.entries, *self.expected.notes], found, strict=False
                )
                if not hit
            ]
            assert not missing, f"acknowledged writes missing: {missing}"
            assert found[-1] == 0, "a write hold or admin lock was left behind"

        self.run(check())

    @invariant()
    def the_journal_chain_holds(self) -> None:
        """After every step, the chain and the live state verify (``journal verify``)."""
        if not hasattr(self, "parts"):
            return
        report = self.op("journal_verify")
        assert report["ok"], f"the journal chain is broken: {report['breaks'][:5]}"

    @precondition(lambda self: hasattr(self, "parts"))
    @rule()
    def the_model_agrees(self) -> None:
        """Tasks, the supersede, the chat and the identity are what was done to them."""
        self.counted("agree")
        tasks = self.op("task_list", status="all")["tasks"]
        assert {t["id"] for t in tasks} >= set(self.expected.tasks)
        active = [
            b["content"]
            for b in self.op("belief_list", status="active")["beliefs"]
            if b["content"].startswith("I live in")
        ]
        assert active == ([f"I live in {self.expected.city} now"] if self.expected.city else [])
        said = [
            m["content"]
            for m in self.op("chat_messages", session="sim", limit=1000)["messages"]
            if m["role"] == "user"
        ]
        assert said == self.expected.chats, (said, self.expected.chats)
        sessions = {s["id"] for s in self.op("chat_list")["sessions"]}
        for name, lines in self.expected.named.items():
            got = self.op("chat_messages", session=name, limit=1000)["messages"]
            assert [m["content"] for m in got if m["role"] == "user"] == lines, (name, got)
        assert not sessions & set(self.erased), sessions & set(self.erased)
        projects = self.op("identity_get")["user"].get("projects")
        assert self.expected.projects is None or projects == self.expected.projects

        async def adapters() -> tuple[list[str], dict[str, str], list[str]]:
            state = await self.graph.aget_state(GRAPH_THREAD)
            items = await self.store.asearch(("sim",), limit=100)
            session = await self.session.get_items()
            return (
                list(state.values.get("notes", [])),
                {i.key: i.value["text"].removeprefix("prefers the ") for i in items},
                [i["content"] for i in session if i.get("role") == "user"],
            )

        graph, store, session = self.run(adapters())
        assert graph == self.expected.graph, (graph, self.expected.graph)
        assert store == self.expected.store, (store, self.expected.store)
        assert session == self.expected.session, (session, self.expected.session)


def _ids(found: dict[str, Any]) -> list[tuple[str, str]]:
    """A read's records by id and status (what moves with the clock left out)."""
    rows = found.get("beliefs") or found.get("results") or []
    return sorted((str(r["id"]), str(r.get("status", ""))) for r in rows)


def json_summary(counters: Counters) -> dict[str, Any]:
    """The counters as the bench prints them."""
    return {"steps": counters.steps, "examples": counters.examples, "by_rule": counters.by_rule}


__all__ = ["Counters", "WholeProduct", "json_summary"]
