"""Adversarial files: import lines, export targets, identity folders and repositories."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from tests.adversarial.conftest import Agent, new_agent

GOOD = {"kind": "longterm", "content": "the boiler was serviced", "timestamp": 1_700_000_000.0}


def line(**changes: object) -> str:
    doc = {**GOOD, **changes}
    return json.dumps({k: v for k, v in doc.items() if v is not ...})


BAD_LINES = [
    ("not json", "{not json"),
    ("array", "[1, 2]"),
    ("number", "5"),
    ("string", '"hello"'),
    ("null", "null"),
    ("nested", "[" * 100_000),
    ("nested object", '{"a":' * 50_000 + "1" + "}" * 50_000),
    ("id int", line(id=5)),
    ("id spaces", line(id="a b")),
    ("id too long", line(id="x" * 129)),
    ("id path", line(id="../../etc/passwd")),
    ("timestamp huge", line(timestamp=1e300)),
    ("timestamp negative", line(timestamp=-1)),
    ("timestamp year 10000", line(timestamp=253_402_300_800.0)),
    ("timestamp string", line(timestamp="yesterday")),
    ("timestamp bool", line(timestamp=True)),
    ("timestamp NaN", '{"kind": "longterm", "content": "x", "timestamp": NaN}'),
    ("timestamp Infinity", '{"kind": "longterm", "content": "x", "timestamp": Infinity}'),
    ("score 2", line(score=2)),
    ("score negative", line(score=-0.5)),
    ("score string", line(score="0.5")),
    ("score null", line(score=None)),
    ("tags string", line(tags="infra")),
    ("tags ints", line(tags=[1, 2])),
    ("tags too many", line(tags=[f"t{i}" for i in range(33)])),
    ("tag newline", line(tags=["a\nb"])),
    ("tag too long", line(tags=["t" * 65])),
    ("content empty", line(content="")),
    ("content blank", line(content="   ")),
    ("content list", line(content=["a"])),
    ("content missing", line(content=...)),
    ("kind unknown", line(kind="gossip")),
    ("kind belief", line(kind="belief")),
    ("unknown field", line(colour="blue")),
    ("sources on daily", line(kind="daily", sources=["01ABC"])),
    ("session on longterm", line(session="s1")),
    ("bad source id", line(sources=["a b"])),
    ("bad session", line(kind="daily", session="../x")),
    ("day impossible", line(kind="daily", day="2024-13-99")),
    ("day mismatch", line(kind="daily", day="2001-01-01")),
    ("source unknown", line(source="martian")),
]


@pytest.mark.parametrize("bad", [b for _, b in BAD_LINES], ids=[n for n, _ in BAD_LINES])
def test_a_bad_line_refuses_the_whole_file(seeded: Agent, tmp_path: Path, bad: str) -> None:
    path = tmp_path / "in.jsonl"
    path.write_text(line(content="a good first line") + "\n" + bad + "\n")
    out = seeded.refuses("memory", "import", str(path), codes=(1,))
    assert "line 2" in out.text and "nothing was imported" in out.text


def test_notes_from_another_tool_import_as_long_term_notes(
    redis_home: Path, tmp_path: Path
) -> None:
    agent = new_agent(redis_home)  # a namespace of its own: this import writes
    path = tmp_path / "notes.jsonl"
    path.write_text('{"content": "the boiler was serviced in March"}\n{"content": "x"}\n')
    assert agent("memory", "import", str(path)).code == 0
    listed = agent("memory", "longterm", "list", "--json")
    assert listed.code == 0 and "the boiler was serviced in March" in listed.text
    path.write_text('{"content": "a turn", "session": "s1"}\n')  # a daily field, no kind
    refused = agent.refuses("memory", "import", str(path), codes=(1,))
    assert "session" in refused.text and "nothing was imported" in refused.text


BAD_FILES = [
    ("directory", lambda d: d),
    ("missing", lambda d: d / "missing.jsonl"),
    ("fifo", lambda d: _fifo(d / "pipe.jsonl")),
    ("device", lambda d: Path("/dev/zero")),
    (
        "not utf-8",
        lambda d: _write(d / "latin.jsonl", b'{"kind": "longterm", "content": "caf\xe9"}\n'),
    ),
    ("huge line", lambda d: _write(d / "big.jsonl", b'{"content": "' + b"x" * 7_000_000 + b'"}\n')),
    ("dangling link", lambda d: _link(d / "gone.jsonl", d / "nowhere")),
]


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def _link(path: Path, target: Path) -> Path:
    path.symlink_to(target)
    return path


@pytest.mark.parametrize("make", [m for _, m in BAD_FILES], ids=[n for n, _ in BAD_FILES])
def test_an_unreadable_import_file_is_refused(seeded: Agent, tmp_path: Path, make: object) -> None:
    path = make(tmp_path)  # type: ignore[operator]
    seeded.refuses(
        "memory", "import", str(path), codes=(1,), AETHER_MEMORY__MAX_CONTENT_BYTES="1024"
    )


def test_duplicate_ids_refuse_the_file_with_their_lines(seeded: Agent, tmp_path: Path) -> None:
    path = tmp_path / "dup.jsonl"
    lines = [
        line(id="M1", content="first"),
        line(id="M2", content="x"),
        line(id="M1", content="second"),
    ]
    path.write_text("\n".join(lines) + "\n")
    out = seeded.refuses("memory", "import", str(path), codes=(1,))
    assert "'M1' on lines 1, 3" in out.text


@pytest.mark.parametrize(("policy", "kept"), [("keep-first", "first"), ("keep-last", "second")])
def test_duplicate_ids_keep_one_when_asked(
    fresh: Agent, tmp_path: Path, policy: str, kept: str
) -> None:
    path = tmp_path / "dup.jsonl"
    lines = [line(id="M1", content="first"), line(id="M1", content="second", tags=["x"])]
    path.write_text("\n".join(lines) + "\n")
    out = fresh("memory", "import", str(path), "--on-duplicate", policy, "--json")
    assert out.code == 0, out.text
    report = json.loads(out.stdout)
    assert (report["imported"], report["duplicate_ids"]) == (1, 1)
    shown = json.loads(fresh("memory", "longterm", "list", "--json").stdout)
    assert [doc["content"] for doc in shown] == [kept]
    fresh.counters_match()


def test_skip_invalid_skips_and_counts(fresh: Agent, tmp_path: Path) -> None:
    path = tmp_path / "mixed.jsonl"
    path.write_text(
        "\n".join([line(content="one"), "{bad", line(timestamp=1e300), line(content="two")]) + "\n"
    )
    out = fresh("memory", "import", str(path), "--skip-invalid", "--json")
    assert out.code == 0, out.text
    report = json.loads(out.stdout)
    assert (report["imported"], report["invalid"]) == (2, 2)
    assert [r["line"] for r in report["invalid_lines"]] == [2, 3]
    fresh.counters_match()


def test_reimporting_an_export_adds_nothing_and_counters_hold(
    seeded: Agent, fresh: Agent, tmp_path: Path
) -> None:
    path = tmp_path / "out.jsonl"
    assert seeded("memory", "export", str(path)).code == 0
    for _ in range(2):
        assert fresh("memory", "import", str(path)).code == 0
        fresh.counters_match()
    before = fresh.image()
    out = fresh("memory", "import", str(path), "--json")
    report = json.loads(out.stdout)
    assert (report["created"], report["merged"], report["checkpoint"]) == (0, 0, None)
    assert fresh.image() == before


def test_an_import_racing_a_writer_of_the_same_id_never_double_counts(
    fresh: Agent, tmp_path: Path
) -> None:
    from aether.memory.storage.layer import MemoryLayer
    from aether.memory.transfer import import_records, read_records
    from aether.store.client import connect
    from aether.store.state import Mutation

    async def race() -> None:
        client = await connect(fresh.settings)
        try:
            layer = MemoryLayer.open(fresh.settings, client)
            import io

            read = read_records(layer, io.StringIO(line(id="RACE1") + "\n"))
            doc = dict(read.records[0], content="written by someone else")
            # the other writer creates the same id after the import looked, before it wrote
            await layer.store.apply(Mutation().json_set(layer.keys.longterm("RACE1"), doc), "t")
            report = await import_records(layer, read.records)
            assert report.imported == 0 and report.duplicates == 1
        finally:
            await client.aclose()

    import asyncio

    asyncio.run(race())


EXPORT_TARGETS = [
    ("directory", lambda d: d),
    ("missing folder", lambda d: d / "missing" / "x.jsonl"),
    ("full disk", lambda d: Path("/dev/full")),
    ("null device", lambda d: Path("/dev/null")),
    ("fifo", lambda d: _fifo(d / "pipe.jsonl")),
]


@pytest.mark.parametrize("make", [m for _, m in EXPORT_TARGETS], ids=[n for n, _ in EXPORT_TARGETS])
def test_a_failed_export_leaves_nothing(seeded: Agent, tmp_path: Path, make: object) -> None:
    target = make(tmp_path)  # type: ignore[operator]
    listing = sorted(p.name for p in tmp_path.iterdir())
    seeded.refuses("memory", "export", str(target), codes=(1,))
    assert sorted(p.name for p in tmp_path.iterdir()) == listing  # no partial or temp file


def test_export_is_owner_only_whatever_the_umask(seeded: Agent, tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        path = tmp_path / "out.jsonl"
        assert seeded("memory", "export", str(path)).code == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    lines = path.read_text().splitlines()
    assert json.loads(lines[0])["keys"] == len(lines) - 1


def test_export_replaces_an_existing_file_whole(seeded: Agent, tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    path.write_text("old content that is longer than nothing\n" * 1000)
    assert seeded("memory", "export", str(path)).code == 0
    header, *keys = [json.loads(x) for x in path.read_text().splitlines()]
    assert header["format"] == "aether-memory" and header["keys"] == len(keys)
    assert all({"key", "type", "value"} == set(x) for x in keys)


# --- identity folders ---------------------------------------------------------------

VALID_AGENT = "---\nname: Probe\n---\n# Probe\n\n## Guardrails\n- be careful\n"


def _identity(d: Path, **files: object) -> Path:
    folder = d / "identity"
    folder.mkdir()
    for name, content in files.items():
        path = folder / name.replace("__", ".")
        if isinstance(content, bytes):
            path.write_bytes(content)
        elif isinstance(content, str):
            path.write_text(content)
        elif callable(content):
            content(path)
    return folder


IDENTITY_CASES = [
    ("missing folder", lambda d: d / "nope"),
    ("empty folder", lambda d: _identity(d)),
    (
        "agent file links out",
        lambda d: _identity(d, AETHER_ESSENCE__md=lambda p: p.symlink_to("/etc/passwd")),
    ),
    (
        "user file links out",
        lambda d: _identity(
            d, AETHER_ESSENCE__md=VALID_AGENT, USER__md=lambda p: p.symlink_to("/etc/hostname")
        ),
    ),
    ("agent file is a fifo", lambda d: _identity(d, AETHER_ESSENCE__md=lambda p: os.mkfifo(p))),
    ("agent file is a folder", lambda d: _identity(d, AETHER_ESSENCE__md=lambda p: p.mkdir())),
    ("empty file", lambda d: _identity(d, AETHER_ESSENCE__md="")),
    ("invalid utf-8", lambda d: _identity(d, AETHER_ESSENCE__md=b"---\nname: \xff\n---\n")),
    (
        "over 1 MB",
        lambda d: _identity(d, AETHER_ESSENCE__md="---\nname: x\n---\n" + "x" * 1_100_000),
    ),
    ("unclosed front matter", lambda d: _identity(d, AETHER_ESSENCE__md="---\nname: x\n# body\n")),
    ("no name", lambda d: _identity(d, AETHER_ESSENCE__md="# nobody\n")),
    (
        "front-matter value of 300 KB",
        lambda d: _identity(
            d, AETHER_ESSENCE__md="---\nname: x\nvoice_style: " + "v" * 300_000 + "\n---\n"
        ),
    ),
    (
        "dangling core link",
        lambda d: _identity(d, Core_Self__md=lambda p: p.symlink_to(d / "gone")),
    ),
]


@pytest.mark.parametrize("make", [m for _, m in IDENTITY_CASES], ids=[n for n, _ in IDENTITY_CASES])
def test_a_bad_identity_folder_writes_nothing(seeded: Agent, tmp_path: Path, make: object) -> None:
    folder = make(tmp_path)  # type: ignore[operator]
    out = seeded.refuses("identity", "bootstrap", str(folder), "--force", codes=(1,))
    assert "root:" not in out.text  # nothing of /etc/passwd is echoed


def test_a_huge_front_matter_value_names_its_file_and_field(seeded: Agent, tmp_path: Path) -> None:
    huge = "---\nname: x\nvoice_style: " + "v" * 300_000 + "\n---\n"
    folder = _identity(tmp_path, AETHER_ESSENCE__md=huge)
    out = seeded.refuses("identity", "bootstrap", str(folder), "--force", codes=(1,))
    assert "AETHER_ESSENCE.md" in out.text and "'voice_style'" in out.text
    assert "65,536-byte limit" in out.text


def test_a_link_inside_the_identity_folder_is_read(fresh: Agent, tmp_path: Path) -> None:
    folder = _identity(
        tmp_path, real__md=VALID_AGENT, AETHER_ESSENCE__md=lambda p: p.symlink_to("real.md")
    )
    out = fresh("identity", "bootstrap", str(folder))
    assert out.code == 0, out.text
    assert "Probe" in fresh("identity", "show").stdout


# --- repositories ---------------------------------------------------------------------


@pytest.fixture
def hostile_repo(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret_mod.py").write_text("SECRET_TOKEN = 'hunter2'\ndef leak(): pass\n")
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "__init__.py").write_text("")
    (repo / "pkg" / "main.py").write_text("import pkg.util\n\ndef main(): pass\n")
    (repo / "pkg" / "util.py").write_text("def helper(): pass\n")
    (repo / "leak.py").symlink_to(outside / "secret_mod.py")
    (repo / "linked_dir").symlink_to(outside)
    (repo / "alias.py").symlink_to(repo / "pkg" / "util.py")  # inside: fine
    (repo / "dangling.py").symlink_to(tmp_path / "gone.py")
    (repo / "loop.py").symlink_to(repo / "loop.py")
    os.mkfifo(repo / "pipe.py")
    return repo


def test_repo_index_stays_inside_the_root(fresh: Agent, hostile_repo: Path) -> None:
    out = fresh("repo", "index", str(hostile_repo), "--json")
    assert out.code == 0, out.text
    report = json.loads(out.stdout)
    assert sorted(report["changed"]) == [
        "alias.py",
        "pkg/__init__.py",
        "pkg/main.py",
        "pkg/util.py",
    ]
    assert report["skipped"] == {"outside_root": 2, "not_regular": 1}
    assert sorted(report["skipped_paths"]) == ["leak.py", "linked_dir", "pipe.py"]
    with fresh.client() as r:
        for key in r.scan_iter(match=f"{fresh.namespace}:*"):
            if r.type(key) == b"ReJSON-RL":
                assert b"SECRET_TOKEN" not in (r.execute_command("JSON.GET", key) or b"")
                assert b"leak" not in (r.execute_command("JSON.GET", key, "$.symbols") or b"")
    human = fresh("repo", "index", str(hostile_repo))
    assert "skipped 3 (1 not regular, 2 outside root)" in human.stdout


def test_repo_index_of_a_git_checkout_skips_links_out(fresh: Agent, hostile_repo: Path) -> None:
    import subprocess

    os.unlink(hostile_repo / "pipe.py")
    subprocess.run(["git", "init", "-q", str(hostile_repo)], check=True)
    subprocess.run(["git", "-C", str(hostile_repo), "add", "-A"], check=True)
    out = fresh("repo", "index", str(hostile_repo), "--json")
    report = json.loads(out.stdout)
    assert "leak.py" in report["skipped_paths"] and "leak.py" not in report["changed"]
    assert "linked_dir" in report["skipped_paths"]


@pytest.mark.parametrize("target", ["/no/such/dir", "/etc/hostname", "/dev/null"])
def test_repo_index_of_a_non_directory_is_refused(seeded: Agent, target: str) -> None:
    seeded.refuses("repo", "index", target, codes=(1,))


def test_an_export_cut_short_by_the_disk_leaves_nothing(seeded: Agent, tmp_path: Path) -> None:
    """A write that fails midway (here the file-size limit, as a full disk would)."""
    import resource
    import signal
    import subprocess
    import sys

    def small_disk() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a failed write, not a killed process
        resource.setrlimit(resource.RLIMIT_FSIZE, (200, 200))

    target = tmp_path / "out.jsonl"
    target.write_text("the previous export\n")
    done = subprocess.run(
        [sys.executable, "-m", "aether", "memory", "export", str(target)],
        env=seeded.env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        preexec_fn=small_disk,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "cannot write" in done.stderr and "Traceback" not in done.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["out.jsonl"]  # no temporary file left
    assert target.read_text() == "the previous export\n"  # the old one is untouched
