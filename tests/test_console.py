"""The operator console: its guards without a browser, then its pages in a real one.

The browser test runs ``aether up`` (a scripted model) and ``aether console`` as
subprocesses and drives Debian's Chromium through selenium and chromedriver: log in,
search and read the score breakdown, send a message and see the reply arrive live, roll
back from the checkpoints page and undo, read a belief's history. A screenshot of each
page is kept in ``build/console/``.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from markupsafe import escape
from redis.asyncio import Redis

from aether.app import Aether
from aether.config import Settings
from aether.errors import ConfigError
from aether.identity.bootstrap import default_identity_dir
from aether.interfaces.console import build_app, console_token
from aether.memory.tiers.daily import DailyLog
from aether.operations import REGISTRY, Caller, erasure
from aether.testing.model import ScriptedOpenAI, completion
from tests.conftest import dump_state, free_port, run_cli

TOKEN = "console-test-token-0123456789"
ROOT = Path(__file__).resolve().parents[1]
SHOTS = ROOT / "build" / "console"
GET_ROUTES = [
    "/",
    "/conversation",
    "/conversation/stream",
    "/memory?q=kestrels",
    "/beliefs",
    "/beliefs/01ABCDEF",
    "/graph?q=Lisbon",
    "/checkpoints",
    "/checkpoints/01ABCDEF/diff",
    "/checkpoints/undo",
    "/ledger",
    "/identity",
    "/approvals",
    "/erasures",
    "/memory/01ABCDEF",
    "/graph",
]
POST_ROUTES = [
    "/conversation/send",
    "/checkpoints/01ABCDEF/rollback",
    "/checkpoints/undo",
    "/approvals/01ABCDEF/approve",
    "/erasures/verify",
    "/logout",
]


@pytest.fixture
async def console(
    settings: Settings, client: Redis
) -> AsyncIterator[tuple[httpx.AsyncClient, Aether]]:
    agent = Aether(settings.model_copy(update={"embedding": {"provider": "none"}}), client)
    await agent.ready()
    await agent.identity.ensure(default_identity_dir())
    transport = httpx.ASGITransport(app=build_app(agent, TOKEN))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
        yield http, agent


async def test_the_overview_shows_what_the_running_daemon_runs(
    console: tuple[httpx.AsyncClient, Aether],
) -> None:
    """The console's own settings have no model; the daemon's record is what it shows."""
    from pydantic import SecretStr

    from aether.runtime.health import Health
    from aether.runtime.lease import DaemonLease, Holder, publish
    from aether.runtime.status import running

    http, agent = console
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    alone = (await http.get("/", headers=bearer)).text
    assert "as configured here: no daemon runs" in alone and 'id="mcp-served"' in alone
    daemon_settings = agent.settings.model_copy(
        update={
            "llm": agent.settings.llm.model_copy(
                update={"base_url": "http://10.0.0.7:8000/v1", "model": "qwen-local"}
            ),
            "mcp": agent.settings.mcp.model_copy(
                update={"port": 8799, "token": SecretStr("secret")}
            ),
        }
    )
    lease = DaemonLease(agent.client, agent.keys, Holder.this_process())
    await lease.acquire()
    try:
        runs = running(daemon_settings, started_at=lease.holder.started_at)
        await publish(lease, Health(ready=True, runs=runs))
        page = (await http.get("/", headers=bearer)).text
        assert "qwen-local" in page and "10.0.0.7:8000" in page and "127.0.0.1:8799" in page
        assert "as configured here" not in page
    finally:
        await lease.release()


async def test_every_page_renders_for_a_fresh_namespace_and_writes_nothing(
    settings: Settings, client: Redis
) -> None:
    """No identity, no daemon, no memory: each page says what to do, none answers 500."""
    agent = Aether(settings.model_copy(update={"embedding": {"provider": "none"}}), client)
    await agent.ready(migrate=False)
    before = await dump_state(client, agent.keys)
    transport = httpx.ASGITransport(app=build_app(agent, TOKEN))
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
        for path in GET_ROUTES:
            if path == "/conversation/stream":
                continue  # a stream that never ends; its page is /conversation
            response = await http.get(path, headers=bearer)
            assert response.status_code in (200, 400, 404, 409), (path, response.text[:300])
            assert response.status_code == 200 or len(response.text.split()) >= 4, path
        overview = await http.get("/", headers=bearer)
        assert "aether up" in overview.text
        for path in ("/graph", "/graph?q=Lisbon", "/checkpoints", "/ledger", "/memory"):
            hinted = await http.get(path, headers=bearer)
            assert 'class="hint"' in hinted.text or "no checkpoints yet" in hinted.text, path
        page = await http.get("/identity", headers=bearer)
        assert 'id="no-identity"' in page.text and "aether identity bootstrap" in page.text
        assert "Aether" in page.text  # the preview shows the folder's identity
    assert await dump_state(client, agent.keys) == before
    assert not await agent.identity.is_bootstrapped()


async def test_the_overview_shows_a_pending_erasure_and_what_waits_on_an_approval(
    console: tuple[httpx.AsyncClient, Aether],
) -> None:
    """The crisis view: a stuck erasure and a parked turn, each with what resolves it."""
    from aether.store.redaction import Needle

    http, agent = console
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    request = await agent.approvals.request(
        "write_file", {"path": "x"}, session="tools", reason="ask", timeout_s=600
    )
    eraser = agent.eraser("operator")
    async with eraser._lock() as lock:
        hold, _ = await eraser._begin(lock, Needle("Quokka-5150"), None, "5a17")
    try:
        page = await http.get("/", headers=bearer)
        assert page.status_code == 200
        assert 'id="erasure-pending"' in page.text and hold["id"] in page.text
        assert "aether erase resume" in page.text
        assert "write_file in session tools" in page.text and request.id[:10] in page.text
        assert "Quokka" not in page.text
    finally:
        await eraser.resume("Quokka-5150")


async def _login(http: httpx.AsyncClient) -> str:
    response = await http.post("/login", data={"token": TOKEN})
    assert response.status_code == 303
    page = await http.get("/checkpoints")
    match = re.search(r'name="csrf-token" content="([^"]+)"', page.text)
    assert match
    return match.group(1)


async def test_no_route_answers_without_auth(
    console: tuple[httpx.AsyncClient, Aether],
) -> None:
    http, _ = console
    for path in GET_ROUTES:
        response = await http.get(path)
        assert response.status_code == 401, path
        assert "kestrels" not in response.text
    for path in POST_ROUTES:
        assert (await http.post(path, data={"content": "x"})).status_code == 401, path
    html = await http.get("/memory", headers={"Accept": "text/html"})
    assert html.status_code == 401 and 'name="token"' in html.text  # the login form
    assert (await http.get("/", headers={"Authorization": "Bearer wrong"})).status_code == 401
    assert (await http.post("/login", data={"token": "wrong"})).status_code == 401
    assert "aether_console" not in http.cookies
    assert (await http.get("/static/console.js")).status_code == 200


async def test_a_login_sets_a_strict_cookie_and_bearer_works(
    console: tuple[httpx.AsyncClient, Aether],
) -> None:
    http, _ = console
    response = await http.post("/login", data={"token": TOKEN})
    cookie = response.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie and "path=/" in cookie
    for path in [p for p in GET_ROUTES if not any(w in p for w in ("01ABCDEF", "stream", "undo"))]:
        page = await http.get(path)
        assert page.status_code == 200, (path, page.text[:300])
        assert "default-src 'none'; script-src 'self'" in page.headers["content-security-policy"]
        assert page.headers["x-frame-options"] == "DENY"
        assert not re.search(r"<script(?![^>]*\bsrc=)", page.text), path  # no inline script
        assert " style=" not in page.text and "<style" not in page.text, path
    http.cookies.clear()
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    assert (await http.get("/ledger", headers=bearer)).status_code == 200


async def test_a_post_without_the_csrf_token_changes_nothing(
    console: tuple[httpx.AsyncClient, Aether],
) -> None:
    http, agent = console
    await DailyLog(agent.memory).log("before the checkpoint")
    checkpoint = await agent.checkpoints.create(label="csrf")
    await DailyLog(agent.memory).log("after the checkpoint")
    journal = await agent.client.xlen(agent.keys.journal())
    csrf = await _login(http)
    url = f"/checkpoints/{checkpoint.id}/rollback"
    assert (await http.post(url)).status_code == 403
    assert (await http.post(url, data={"csrf": "forged"})).status_code == 403
    sent = await http.post("/conversation/send", data={"content": "hello", "session": "main"})
    assert sent.status_code == 403
    assert await agent.client.xlen(agent.keys.journal()) == journal
    assert await agent.client.xlen(agent.keys.inbox()) == 0
    assert "after the checkpoint" in await _today(agent)
    done = await http.post(url, data={"csrf": csrf})
    assert done.status_code == 200 and "Rolled back" in done.text
    assert "after the checkpoint" not in await _today(agent)
    undone = await http.post("/checkpoints/undo", headers={"X-CSRF-Token": csrf})
    assert undone.status_code == 200 and "Undone" in undone.text
    assert "after the checkpoint" in await _today(agent)


async def _today(agent: Aether) -> str:
    return " ".join(str(d["content"]) for d in await DailyLog(agent.memory).recent(1))


async def test_memory_text_is_escaped_and_bad_input_refused(
    console: tuple[httpx.AsyncClient, Aether],
) -> None:
    http, agent = console
    hostile = 'kestrels <script>alert("x")</script><img src=x onerror=alert(1)> {{ 7*7 }}'
    await DailyLog(agent.memory).log(hostile)
    await _login(http)
    page = await http.get("/memory", params={"q": "kestrels"})
    assert page.status_code == 200
    assert "<script>alert" not in page.text and "<img src=x" not in page.text
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in page.text
    # shown whole as text, and the template did not evaluate it (checked on the text itself:
    # a page-wide "49" also matches a clock time such as 19:49)
    assert str(escape(hostile)) in page.text
    assert str(escape(hostile.replace("{{ 7*7 }}", "49"))) not in page.text
    talk = await http.get("/conversation")
    assert 'id="daemon-down"' in talk.text  # no daemon in this test: the page says so
    filtered = await http.get("/memory", params={"q": "kestrels", "tag": "no-such-tag"})
    assert filtered.status_code == 200 and 'id="nothing"' in filtered.text
    later = await http.get("/memory", params={"q": "kestrels", "since": "2999-01-01"})
    assert 'id="nothing"' in later.text
    assert (await http.get("/memory", params={"q": "k", "since": "soon"})).status_code == 400
    huge = await http.get("/memory", params={"q": "x" * 30_000})
    assert huge.status_code == 400 and "over 2000 characters" in huge.text
    bad_day = await http.get("/memory", params={"day": "2026-13-45"})
    assert bad_day.status_code == 400
    unknown = await http.get("/beliefs/no-such-belief")
    assert unknown.status_code in (400, 404)
    assert (await http.get("/graph", params={"q": "%' OR 1=1 --"})).status_code == 200


async def test_the_graph_shows_retired_relations_as_such(
    console: tuple[httpx.AsyncClient, Aether],
) -> None:
    from aether.memory.knowledge.learner import ConversationLearner
    from aether.memory.tiers.chat import ChatSessions
    from aether.operations import Caller, graph

    http, agent = console
    chats = ChatSessions(agent.memory)
    learner = ConversationLearner(agent.memory, agent.beliefs(), speakers={"user": "Melanie"})
    await chats.append("main", "user", "I live in Lisbon.")
    await learner.learn("main")
    await chats.append("main", "user", "I live in Porto now.")
    await learner.learn("main")
    args = graph.ExpandArgs(query="Melanie", include_retired=True)
    rows = (await graph.graph_expand(agent, Caller("test"), args)).relations
    held = {(r["type"], r["target"]) for r in rows if not r["retired"]}
    retired = {(r["type"], r["target"]) for r in rows if r["retired"]}
    assert any(t == "Porto" for _, t in held) and any(t == "Lisbon" for _, t in retired)
    plain = await graph.graph_expand(agent, Caller("test"), graph.ExpandArgs(query="Melanie"))
    assert not any(r["retired"] or r["target"] == "Lisbon" for r in plain.relations)
    await _login(http)
    page = await http.get("/graph", params={"q": "Melanie"})
    assert (
        page.status_code == 200 and "(retired)" in page.text and 'class="edge retired"' in page.text
    )


def test_the_console_refuses_a_wide_host_without_a_token(
    settings: Settings, cli_env: dict[str, str], tmp_path: Path
) -> None:
    wide = settings.model_copy(update={"console": {"host": "0.0.0.0"}})
    with pytest.raises(ConfigError, match="AETHER_CONSOLE__TOKEN"):
        console_token(wide)
    home = settings.model_copy(update={"home": tmp_path / "home"})
    token, generated = console_token(home)
    assert generated and len(token) > 30
    assert (tmp_path / "home" / "console.token").stat().st_mode & 0o777 == 0o600
    assert console_token(home) == (token, False)
    refused = run_cli(cli_env, "console", "--host", "0.0.0.0", timeout=60)
    assert refused.returncode != 0 and "AETHER_CONSOLE__TOKEN" in refused.stderr


# ---------------------------------------------------------------- in a real browser


def _wait_http(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        assert proc.poll() is None, log.read_text()[-3000:]
        try:
            httpx.get(url, timeout=2)
            return
        except httpx.HTTPError:
            time.sleep(0.3)
    raise AssertionError(f"{url} did not answer: " + log.read_text()[-3000:])


@pytest.fixture
def running(cli_env: dict[str, str], tmp_path: Path) -> Iterator[tuple[dict[str, str], str]]:
    def reply(body: dict[str, Any]) -> dict[str, Any]:
        users = [m for m in body["messages"] if m.get("role") == "user"]
        return completion(f"echo: {str(users[-1]['content'])[-60:]}")

    def extraction(body: dict[str, Any]) -> dict[str, Any]:
        if "Caroline" not in json.dumps(body):
            return completion('{"facts": [], "entities": [], "relations": []}')
        found = {
            "facts": [{"statement": "Caroline went to the LGBTQ support group"}],
            "entities": [
                {"name": "Caroline", "type": "person"},
                {"name": "LGBTQ support group", "type": "organisation"},
            ],
            "relations": [
                {"source": "Caroline", "type": "attended", "target": "LGBTQ support group"}
            ],
        }
        return completion(json.dumps(found))

    with ScriptedOpenAI(responder=reply, extractor=extraction) as model:
        port = free_port()
        env = {
            **cli_env,
            "AETHER_EMBEDDING__PROVIDER": "none",
            "AETHER_LLM__BASE_URL": model.base_url,
            "AETHER_LLM__MODEL": "scripted",
            "AETHER_DAEMON__HEARTBEAT_INTERVAL_S": "3600",
            "AETHER_DAEMON__MAINTENANCE_INTERVAL_S": "3600",
            "AETHER_WORKSPACE": str(tmp_path / "ws"),
            "AETHER_CONSOLE__TOKEN": TOKEN,
        }
        procs = []
        try:
            for name, args in (("up", ["up"]), ("console", ["console", "--port", str(port)])):
                log = tmp_path / f"{name}.log"
                proc = subprocess.Popen(
                    [sys.executable, "-m", "aether", *args],
                    env=env,
                    stdout=log.open("ab"),
                    stderr=subprocess.STDOUT,
                )
                procs.append(proc)
                if name == "up":
                    deadline = time.monotonic() + 90
                    while run_cli(env, "status").returncode != 0:
                        assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
                        time.sleep(0.3)
                else:
                    _wait_http(f"http://127.0.0.1:{port}/login", proc, log)
            yield env, f"http://127.0.0.1:{port}"
        finally:
            for proc in procs:
                proc.terminate()
                try:
                    proc.wait(15)
                except subprocess.TimeoutExpired:
                    proc.kill()


@pytest.fixture
def browser() -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    assert chromium and driver, "Debian's chromium and chromium-driver: make browser-tool"
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--window-size=1280,900",
    ):
        options.add_argument(flag)
    session = webdriver.Chrome(service=Service(driver), options=options)
    session.set_page_load_timeout(60)
    try:
        yield session
    finally:
        session.quit()


def _shot(browser: Any, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(SHOTS / f"{name}.png"))


def test_the_console_in_a_browser(running: tuple[dict[str, str], str], browser: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    env, base = running
    wait = WebDriverWait(browser, 30)
    # state to look at: memories, a belief that gets superseded, a checkpoint
    assert run_cli(env, "memory", "log", "the kestrels nest on the church tower").returncode == 0
    assert run_cli(env, "remember", "I live in Lisbon").returncode == 0
    cp = json.loads(run_cli(env, "--json", "checkpoint", "create", "--label", "before").stdout)
    assert run_cli(env, "remember", "I live in Porto now").returncode == 0
    # and 120 memories since the checkpoint: a confirmation an operator must read at once
    lines = [
        json.dumps({"kind": "daily", "content": f"note {n}: the boiler " + "pressure " * 40})
        for n in range(120)
    ]
    bulk = ROOT / "build" / "console-bulk.jsonl"
    bulk.parent.mkdir(parents=True, exist_ok=True)
    bulk.write_text("\n".join(lines) + "\n")
    imported = run_cli(env, "memory", "import", str(bulk))
    assert imported.returncode == 0, imported.stderr
    # log in
    browser.get(base + "/")
    assert "token" in browser.page_source.lower()
    browser.find_element(By.ID, "token").send_keys(TOKEN)
    browser.find_element(By.ID, "login").click()
    wait.until(ec.presence_of_element_located((By.ID, "daemon-state")))
    assert browser.find_element(By.ID, "daemon-state").text.split("\n")[1] in ("up", "degraded")
    _shot(browser, "overview")
    # search, and read the breakdown
    browser.get(base + "/memory")
    browser.find_element(By.ID, "q").send_keys("where do the kestrels nest")
    browser.find_element(By.ID, "search").click()
    row = wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "tr.result")))
    assert "church tower" in row.text and row.find_element(By.CLASS_NAME, "floor").text
    _shot(browser, "memory")
    # send a message; the reply arrives live
    browser.get(base + "/conversation")
    browser.find_element(By.ID, "content").send_keys("Caroline went to the support group")
    browser.find_element(By.ID, "send").click()
    wait.until(ec.text_to_be_present_in_element((By.ID, "send-status"), "sent to"))
    wait.until(ec.text_to_be_present_in_element((By.ID, "messages"), "echo:"))
    assert not browser.find_elements(By.ID, "daemon-down")
    assert "Caroline went to" in browser.find_element(By.ID, "messages").text
    _shot(browser, "conversation")
    # a belief and its history
    browser.get(base + "/beliefs?status=all")
    _shot(browser, "beliefs")
    browser.find_element(By.PARTIAL_LINK_TEXT, "Porto").click()
    history = wait.until(ec.presence_of_element_located((By.ID, "history")))
    assert "create" in history.text
    assert "Lisbon" in browser.find_element(By.CLASS_NAME, "chain").text
    _shot(browser, "belief")

    # the graph the daemon learned from the conversation, drawn
    def drawn(_: Any) -> bool:
        browser.get(base + "/graph?q=Caroline")
        return len(browser.find_elements(By.CSS_SELECTOR, "svg.graph circle")) >= 2

    wait.until(drawn)
    assert "attended" in browser.find_element(By.CSS_SELECTOR, "svg.graph").text
    _shot(browser, "graph")
    # roll back from the checkpoints page (its confirmation shows the change), then undo
    browser.get(base + "/checkpoints")
    _shot(browser, "checkpoints")
    browser.get(f"{base}/checkpoints/{cp['id']}/diff")
    assert "Porto" in browser.find_element(By.ID, "changes").text
    _shot(browser, "rollback-confirmation")
    # 120+ changes: the page fits in three screens, its button in the first
    summary = browser.find_element(By.ID, "summary").text
    assert "daily" in summary and "beliefs" in summary
    height = browser.execute_script("return document.documentElement.scrollHeight")
    assert height <= 3 * 900, height
    button = browser.find_element(By.ID, "confirm-rollback")
    assert button.rect["y"] + button.rect["height"] <= 900, button.rect
    browser.find_element(By.ID, "confirm-rollback").click()
    wait.until(ec.presence_of_element_located((By.ID, "done")))
    beliefs = json.loads(run_cli(env, "--json", "belief", "list", "--status", "all").stdout)
    assert not any("Porto" in b["content"] for b in beliefs)
    browser.get(base + "/checkpoints")
    browser.find_element(By.ID, "undo-link").click()
    assert "Porto" in wait.until(ec.presence_of_element_located((By.ID, "changes"))).text
    _shot(browser, "undo-confirmation")
    browser.find_element(By.ID, "confirm-undo").click()
    wait.until(ec.presence_of_element_located((By.ID, "done")))
    beliefs = json.loads(run_cli(env, "--json", "belief", "list").stdout)
    assert any("Porto" in b["content"] for b in beliefs)
    for name in ("ledger", "identity", "approvals", "erasures"):
        browser.get(f"{base}/{name}")
        assert "Traceback" not in browser.page_source
        _shot(browser, name)
    # the conversation opens at its newest message
    for n in range(6):
        sent = run_cli(env, "send", f"message {n} " + "wide " * 80, "--timeout", "60")
        assert sent.returncode == 0, sent.stderr
    browser.get(base + "/conversation")
    box = browser.find_element(By.ID, "messages")
    at_end = browser.execute_script(
        "var b = arguments[0]; return b.scrollTop + b.clientHeight >= b.scrollHeight - 4;", box
    )
    assert at_end, "the newest message is in view on open"
    # no page scrolls sideways at 1280 px
    for path in (
        "/",
        "/conversation",
        "/memory?q=boiler",
        "/beliefs?status=all",
        "/graph?q=Caroline",
        "/graph?q=nobody",
        "/checkpoints",
        f"/checkpoints/{cp['id']}/diff",
        "/ledger",
        "/identity",
        "/approvals",
        "/erasures",
    ):
        browser.get(base + path)
        wide = browser.execute_script(
            "return document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        assert wide <= 0, (path, wide)
    assert len(list(SHOTS.glob("*.png"))) >= 10
    _a_busy_day_stays_usable(env, base, browser)


def _a_busy_day_stays_usable(env: dict[str, str], base: str, browser: Any) -> None:
    """3,000 notes in a day: each list is a page of at most three screens, loaded quickly."""
    from selenium.webdriver.common.by import By

    lines = [
        json.dumps({"kind": "daily", "content": f"busy note {n}: the pump " + "cycles " * 12})
        for n in range(3000)
    ]
    bulk = ROOT / "build" / "console-busy.jsonl"
    bulk.write_text("\n".join(lines) + "\n")
    assert run_cli(env, "memory", "import", str(bulk), timeout=300).returncode == 0
    for n in range(42):  # long beliefs: the table's headers must not break mid-word
        said = f"Harbour crane {n:02d} was repainted " + "in a long and careful way " * 6
        assert run_cli(env, "remember", said).returncode == 0
    namespace = env["AETHER_NAMESPACE"]
    for path in ("/memory", "/beliefs?status=all", "/ledger"):
        browser.get(base + path)
        took = browser.execute_script(
            "var t = performance.getEntriesByType('navigation')[0];"
            "return t.responseEnd - t.requestStart;"
        )
        height = browser.execute_script("return document.documentElement.scrollHeight")
        assert height <= 3 * 900, (path, height)
        assert took < 3000, (path, took)  # 13 s before the lists were paged
        assert browser.find_element(By.ID, "namespace").text == namespace
    browser.get(base + "/memory")
    pager = browser.find_element(By.ID, "timeline-pager").text
    total = int(re.search(r"of (\d+) ·", pager).group(1))  # type: ignore[union-attr]
    assert pager.startswith("1–30 of") and total > 3000, pager
    browser.get(base + "/beliefs?status=all")
    for header in browser.find_elements(By.CSS_SELECTOR, "table.beliefs th"):
        assert header.rect["height"] < 32, (header.text, header.rect)  # one line each
    lines = browser.execute_script(  # a status ("superseded") on one line, never cut
        "return Array.from(document.querySelectorAll('table.beliefs td:nth-child(3)'))"
        ".map(td => { var r = document.createRange(); r.selectNodeContents(td);"
        " return r.getClientRects().length; });"
    )
    assert lines and set(lines) == {1}, lines
    _shot(browser, "beliefs-busy")
    browser.get(base + "/ledger")
    unit = browser.find_element(By.CSS_SELECTOR, "svg .axis.unit").rect
    for tick in browser.find_elements(By.CSS_SELECTOR, "svg .axis.tick"):
        box = tick.rect
        apart = (
            box["y"] >= unit["y"] + unit["height"]
            or box["x"] >= unit["x"] + unit["width"]
            or box["y"] + box["height"] <= unit["y"]
        )
        assert apart, (tick.text, box, unit)
    _shot(browser, "ledger-busy")


async def test_approvals_are_answered_from_the_console(
    console: tuple[httpx.AsyncClient, Aether],
) -> None:
    http, agent = console
    first = await agent.approvals.request(
        "bash",
        {"command": "du -sh ."},
        session="main",
        reason="autonomy mode supervised",
        timeout_s=60,
    )
    second = await agent.approvals.request(
        "fs__delete", {"path": "/"}, session="main", reason="r", timeout_s=60
    )
    csrf = await _login(http)
    page = await http.get("/approvals")
    assert "du -sh ." in page.text and page.text.count('class="approve"') == 2
    overview = await http.get("/")
    assert "2 pending" in overview.text
    forged = await http.post(f"/approvals/{first.id}/approve")
    assert forged.status_code == 403 and (await agent.approvals.get(first.id)).status == "pending"
    ok = await http.post(f"/approvals/{first.id}/approve", data={"csrf": csrf})
    assert ok.status_code == 303
    no = await http.post(
        f"/approvals/{second.id}/deny", data={"csrf": csrf, "reason": "never <b>that</b>"}
    )
    assert no.status_code == 303
    assert (await agent.approvals.get(first.id)).decided_by == "console"
    denied = await agent.approvals.get(second.id)
    assert denied.status == "denied" and denied.note == "never <b>that</b>"
    again = await http.post(f"/approvals/{first.id}/deny", data={"csrf": csrf})
    assert again.status_code == 400 and "approved already" in again.text
    listed = await http.get("/approvals")
    assert "never &lt;b&gt;that&lt;/b&gt;" in listed.text and 'class="approve"' not in listed.text
    bad = await http.post(f"/approvals/{first.id}/maybe", data={"csrf": csrf})
    assert bad.status_code == 400


async def test_a_confirmation_counts_items_and_the_result_repeats_them(
    console: tuple[httpx.AsyncClient, Aether],
) -> None:
    """50 memory writes: one row per item (vectors merged), pages of 40, same count after."""
    http, agent = console
    checkpoint = await agent.checkpoints.create(label="before fifty")
    log = DailyLog(agent.memory)
    for n in range(45):
        await log.log(f"entry number {n} about the boiler " + "long " * 60)
    await agent.memory.store.apply(
        __import__("aether.store.state", fromlist=["Mutation"])
        .Mutation()
        .hset(agent.keys.tasks(), {"t1": '{"title": "check the boiler"}'}),
        "test",
    )
    csrf = await _login(http)
    page = await http.get(f"/checkpoints/{checkpoint.id}/diff")
    assert page.status_code == 200
    html = page.text
    assert html.index('id="confirm-rollback"') < html.index('id="changes"'), "button first"
    items = re.search(r"changes <b>(\d+) items</b>", html)
    assert items, html[:2000]
    count = int(items.group(1))
    # 45 entries, their day's list, the task hash, and the index's counters (listed last)
    assert 47 < count < 55
    assert f"of {count} (counters" in html
    assert html.count('<details class="item') == 40 and "items 1–40 of" in html
    assert "entry number" in html and "goes" in html
    second = await http.get(f"/checkpoints/{checkpoint.id}/diff?page=2")
    assert second.status_code == 200 and '<details class="item' in second.text
    assert (await http.get(f"/checkpoints/{checkpoint.id}/diff?page=x")).status_code == 400
    done = await http.post(f"/checkpoints/{checkpoint.id}/rollback", data={"csrf": csrf})
    assert done.status_code == 200 and f"<b>{count} items</b> changed back" in done.text
    assert 'id="undo-link"' in done.text and ">went<" in done.text  # the entries went
    undo = await http.get("/checkpoints/undo")
    assert f"<b>{count} items</b> change back" in undo.text
    undone = await http.post("/checkpoints/undo", data={"csrf": csrf})
    assert undone.status_code == 200 and f"<b>{count} items</b> changed back" in undone.text
    assert 'id="undo-link"' not in undone.text  # an undo is not undone from here


async def test_errors_are_pages_for_people_and_lines_for_scripts(
    console: tuple[httpx.AsyncClient, Aether],
) -> None:
    http, _ = console
    await _login(http)
    html = {"Accept": "text/html"}
    short = await http.get("/checkpoints/01/diff", headers=html)
    assert short.status_code == 400 and 'id="error"' in short.text and "invalid" in short.text
    assert "<nav>" in short.text and 'href="/checkpoints"' in short.text
    missing = await http.get("/checkpoints/01ZZZZZZZZ/diff", headers=html)
    assert missing.status_code == 404 and "not_found" in missing.text and "<nav>" in missing.text
    plain = await http.get("/checkpoints/01ZZZZZZZZ/diff")
    assert plain.status_code == 404 and plain.text.startswith("not_found:")
    assert plain.headers["content-type"].startswith("text/plain")
    assert (await http.get("/memory/01NOSUCHMEMORY", headers=html)).status_code == 404


async def test_ids_link_to_pages_that_answer(console: tuple[httpx.AsyncClient, Aether]) -> None:
    http, agent = console
    await _login(http)
    await DailyLog(agent.memory).log("I live in Lisbon", source="user")
    await agent.beliefs().remember("I live in Lisbon")
    await agent.beliefs().remember("I live in Porto now")
    await agent.checkpoints.create(label="linked")
    for listing in ("/beliefs?status=all", "/checkpoints", "/ledger"):
        page = await http.get(listing)
        assert page.status_code == 200
        for href in set(re.findall(r'href="(/(?:beliefs|memory|checkpoints)/[^"?#]+)"', page.text)):
            target = await http.get(href.replace("&amp;", "&"))
            assert target.status_code in (200, 303), (listing, href, target.text[:200])
            if "/beliefs/" in href:
                for inner in set(re.findall(r'href="(/(?:beliefs|memory)/[^"]+)"', target.text)):
                    answered = await http.get(inner)
                    assert answered.status_code in (200, 303), (href, inner)


async def test_the_conversation_shows_tool_calls_and_the_console_sends_as_itself(
    console: tuple[httpx.AsyncClient, Aether],
) -> None:
    from aether.memory.tiers.chat import ChatSessions

    http, agent = console
    csrf = await _login(http)
    chats = ChatSessions(agent.memory)
    await chats.append("main", "user", "what is in the workspace?")
    call = {
        "id": "call_42",
        "type": "function",
        "function": {"name": "fs__list", "arguments": '{"path": "."}'},
    }
    await chats.append_tool_exchange(
        "main",
        "",
        [call],
        [{"role": "tool", "tool_call_id": "call_42", "name": "fs__list", "content": "notes.md"}],  # type: ignore[list-item]
    )
    from aether.registry.model import new_entry

    await agent.ledger().append(
        new_entry(
            "tool_call",
            session="main",
            summary="fs__list: ok",
            detail={
                "tool": "fs__list",
                "call_id": "call_42",
                "approval": {"id": "01APPROVAL", "decision": "approved", "by": "console"},
            },
        )
    )
    page = await http.get("/conversation?session=main")
    assert "fs__list" in page.text and "{&#34;path&#34;: &#34;.&#34;}" in page.text
    assert '<span class="approval">approved by console</span>' in page.text
    assert 'href="/ledger?call=call_42"' in page.text and 'href="#call-call_42"' in page.text
    ledger = await http.get("/ledger?call=call_42")
    assert ledger.status_code == 200 and "fs__list: ok" in ledger.text
    assert 'id="call-filter"' in ledger.text
    sent = await http.post(
        "/conversation/send", data={"content": "hello", "session": "main", "csrf": csrf}
    )
    assert sent.status_code == 200
    (_, fields), *_ = await agent.client.xrange(agent.keys.inbox())
    assert fields[b"sender"] == b"console"


async def test_the_erasures_page_lists_and_verifies(
    console: tuple[httpx.AsyncClient, Aether],
) -> None:
    http, agent = console
    csrf = await _login(http)
    assert "no erasure yet" in (await http.get("/erasures")).text
    await DailyLog(agent.memory).log("Quentavia Holloway called about the lease")
    report = await agent.eraser().erase(subject="Quentavia Holloway")
    page = await http.get("/erasures")
    assert page.status_code == 200 and "Quentavia" not in page.text
    said = erasure.describe_counts(report.counts)  # the CLI's words for the same counts
    assert said.startswith("1 item removed") and said in page.text and "clean" in page.text
    forged = await http.post("/erasures/verify", data={"text": "Quentavia Holloway"})
    assert forged.status_code == 403
    clean = await http.post("/erasures/verify", data={"text": "Quentavia Holloway", "csrf": csrf})
    assert clean.status_code == 200 and "the text is gone" in clean.text
    await DailyLog(agent.memory).log("the lease ends in May")
    found = await http.post("/erasures/verify", data={"text": "lease ends", "csrf": csrf})
    assert "Still found" in found.text
    empty = await http.post("/erasures/verify", data={"text": " ", "csrf": csrf})
    assert empty.status_code == 400


async def test_the_overview_refreshes_and_names_the_model(
    console: tuple[httpx.AsyncClient, Aether],
) -> None:
    http, _ = console
    await _login(http)
    page = await http.get("/")
    assert 'hx-trigger="every 5s"' in page.text and 'id="llm"' in page.text
    assert "AETHER_LLM__BASE_URL" in page.text  # no model configured in this namespace
    live = await http.get("/?live=1", headers={"HX-Request": "true"})
    assert live.status_code == 200 and live.text.lstrip().startswith('<section class="cards"')
    ledger = await http.get("/ledger")
    assert 'id="no-price"' in ledger.text and 'class="axis tick"' in ledger.text


async def test_a_belief_is_replaced_from_its_page(
    console: tuple[httpx.AsyncClient, Aether],
) -> None:
    http, agent = console
    caller = Caller("test")
    remember = REGISTRY["memory_remember"]
    made = await remember(
        agent, caller, remember.parse({"content": "Marta works at Globex", "source": "user"})
    )
    await remember(agent, caller, remember.parse({"content": "Marta lives in Braga"}))
    old = made["beliefs"][0]["id"]
    csrf = await _login(http)
    page = await http.get(f"/beliefs/{old}")
    assert 'id="replace-form"' in page.text
    forged = await http.post(f"/beliefs/{old}/replace", data={"content": "Marta works at Initech"})
    assert forged.status_code == 403
    done = await http.post(
        f"/beliefs/{old}/replace", data={"csrf": csrf, "content": "Marta works at Initech"}
    )
    assert done.status_code == 303
    new = await http.get(done.headers["location"])
    assert "Marta works at Initech" in new.text
    held = [b["content"] for b in await agent.beliefs().select("active")]
    assert sorted(held) == ["Marta lives in Braga", "Marta works at Initech"]
    empty = await http.post(f"/beliefs/{old}/replace", data={"csrf": csrf, "content": ""})
    assert empty.status_code == 400


async def test_a_model_that_repeats_its_call_ids_gets_each_call_kept_apart(
    console: tuple[httpx.AsyncClient, Aether],
) -> None:
    """Two turns whose calls are both ``call_0``: two calls in the page, the ledger, the context."""
    from aether.runtime.agent import AgentRuntime
    from aether.runtime.llm import LLMClient

    http, agent = console
    await DailyLog(agent.memory).log("kestrels nest on the tower")
    await DailyLog(agent.memory).log("pelicans fish at the pier")
    replies = [
        completion(tool_calls=[("call_0", "memory_search", {"query": "kestrels"})]),
        completion("first done"),
        completion(tool_calls=[("call_0", "memory_search", {"query": "pelicans"})]),
        completion("second done"),
    ]
    with ScriptedOpenAI(replies=replies) as server:
        llm = LLMClient(server.base_url, "scripted", max_retries=0)
        runtime = AgentRuntime(agent, session="repeats", llm=llm, ledger=agent.ledger())
        await runtime.step("look for kestrels")
        await runtime.step("look for pelicans")
        await llm.aclose()
        second_request = server.chat_requests()[-1]["messages"]
    results = [m for m in second_request if m.get("role") == "tool"]
    calls = [c for m in second_request for c in m.get("tool_calls") or []]
    assert [c["id"] for c in calls] == ["call_0", "call_0"] and all("call" not in c for c in calls)
    assert "kestrels" in results[0]["content"] and "pelicans" in results[1]["content"]
    messages = await runtime.chats.messages("repeats")
    stored = [c for m in messages for c in m.get("tool_calls") or []]
    own = [c["call"] for c in stored]
    assert len(set(own)) == 2 and {c["id"] for c in stored} == {"call_0"}
    answered = [m["call"] for m in messages if m["role"] == "tool"]
    assert answered == own
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    page = (await http.get("/conversation?session=repeats", headers=bearer)).text
    assert page.count('id="call-') == 2 and all(f'id="call-{c}"' in page for c in own)
    assert all(f'href="#call-{c}"' in page for c in own)
    for c in own:
        ledger = (await http.get(f"/ledger?call={c}", headers=bearer)).text
        assert ledger.count("memory_search: ok") == 1


async def test_lists_are_paged_and_every_page_names_its_namespace(
    console: tuple[httpx.AsyncClient, Aether],
) -> None:
    from datetime import UTC, datetime

    from aether.registry.model import new_entry

    http, agent = console
    bearer = {"Authorization": f"Bearer {TOKEN}", "Accept": "text/html"}
    day = datetime(2026, 11, 20, tzinfo=UTC)
    daily = DailyLog(agent.memory)
    for n in range(70):  # out of order: the timeline sorts by time, not by writing
        await daily.log(f"harbour note {n:03d}", timestamp=day.timestamp() + 60 * ((n * 37) % 70))
    first = (await http.get("/memory?day=2026-11-20", headers=bearer)).text
    assert first.count("<li") - first.count('<li class="inactive"') >= 30
    assert 'id="timeline-pager"' in first and "1–30 of 70" in first
    assert 'href="/memory?day=2026-11-20&amp;page=2"' in first
    third = (await http.get("/memory?day=2026-11-20&page=3", headers=bearer)).text
    assert "61–70 of 70" in third and "harbour note" in third
    shown = re.findall(r"harbour note (\d{3})", third)
    in_time = sorted(range(70), key=lambda n: (n * 37) % 70)[60:]
    assert [int(n) for n in shown] == in_time
    bad = await http.get("/memory?page=zero", headers=bearer)
    assert bad.status_code == 400
    learner = agent.beliefs()
    for n in range(45):
        await learner.remember(f"Guest{n:02d} stays in room {100 + n}")
    total = len(await learner.select("active"))
    assert total > 40
    beliefs_page = (await http.get("/beliefs", headers=bearer)).text
    assert beliefs_page.count('<tr class="belief">') == 40 and f"1–40 of {total}" in beliefs_page
    second = (await http.get("/beliefs?page=2", headers=bearer)).text
    assert second.count('<tr class="belief">') == total - 40
    for n in range(45):
        await agent.ledger().append(new_entry("action", summary=f"ledger action {n:02d}"))
    newest = (await http.get("/ledger", headers=bearer)).text
    assert newest.count("ledger action") == 40 and "ledger action 44" in newest
    older = re.search(r'href="/ledger\?before=([0-9.e+]+)"', newest)
    assert older is not None
    rest = (await http.get(f"/ledger?before={older.group(1)}", headers=bearer)).text
    assert rest.count("ledger action") == 5 and "ledger action 00" in rest
    for path in ("/", "/memory", "/beliefs", "/ledger", "/checkpoints", "/beliefs/01NOSUCH"):
        shown = (await http.get(path, headers=bearer)).text
        assert (
            f'id="namespace" title="the namespace these pages show">{agent.settings.namespace}<'
            in shown
        ), path


async def test_nothing_to_undo_and_a_wrong_token_are_said_as_such(
    console: tuple[httpx.AsyncClient, Aether],
) -> None:
    http, _ = console
    bearer = {"Authorization": f"Bearer {TOKEN}", "Accept": "text/html"}
    page = await http.get("/checkpoints/undo", headers=bearer)
    assert page.status_code == 409 and "nothing to undo" in page.text
    assert "malformed" not in page.text and "checkpoints page" in page.text
    csrf = await _login(http)
    posted = await http.post("/checkpoints/undo", data={"csrf": csrf})
    assert posted.status_code == 409 and "nothing to undo" in posted.text


async def test_the_checkpoints_page_lists_forks_and_a_fork_names_its_source(
    console: tuple[httpx.AsyncClient, Aether],
) -> None:
    from aether.operations import Caller
    from aether.operations.checkpoints import ForkArgs, checkpoint_fork

    http, agent = console
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    assert "Forks" not in (await http.get("/checkpoints", headers=bearer)).text
    checkpoint = await agent.checkpoints.create(label="before the trial")
    trial = agent.keys.ns + ".trial"
    await checkpoint_fork(agent, Caller("operator"), ForkArgs(id=checkpoint.id, to=trial))
    page = (await http.get("/checkpoints", headers=bearer)).text
    assert "Forks" in page and f"<code>{trial}</code>" in page and checkpoint.id in page
    fork = Aether(agent.settings.model_copy(update={"namespace": trial}), agent.client)
    transport = httpx.ASGITransport(app=build_app(fork, TOKEN))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as other:
        seen = (await other.get("/checkpoints", headers=bearer)).text
    assert f"a fork of <code>{agent.keys.ns}</code>" in seen and checkpoint.id in seen


async def test_the_beliefs_page_shows_the_valid_time_a_statement_gives(
    console: tuple[httpx.AsyncClient, Aether],
) -> None:
    http, agent = console
    remember = REGISTRY["memory_remember"]
    said = "Since March 2026 the staging deploys go through Argo"
    await remember(agent, Caller("test"), remember.parse({"content": said}))
    await remember(agent, Caller("test"), remember.parse({"content": "Marta lives in Braga"}))
    await _login(http)
    page = await http.get("/beliefs")
    assert page.status_code == 200
    row = next(r for r in page.text.split('<tr class="belief">') if "Argo" in r)
    assert '<small class="valid">from 2026-03-01</small>' in row
    braga = next(r for r in page.text.split('<tr class="belief">') if "Braga" in r)
    assert 'class="valid"' not in braga
