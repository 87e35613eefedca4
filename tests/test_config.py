"""Configuration: env prefix, nested delimiter, optional TOML file, masked secrets."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from aether.config import Settings, load_settings
from aether.errors import ConfigError


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import os

    for name in list(os.environ):
        if name.startswith("AETHER_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)  # no config/aether.toml here


def test_defaults() -> None:
    s = load_settings()
    assert s.home == Path.home() / ".local" / "share" / "aether"
    assert s.namespace == "aether"
    assert s.redis_url is None and s.postgres_dsn is None
    assert s.redis_appendfsync == "always"
    assert s.checkpoints.keep == 50


def test_environment_and_nested_delimiter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AETHER_HOME", "/srv/agent")
    monkeypatch.setenv("AETHER_NAMESPACE", "{bot}")
    monkeypatch.setenv("AETHER_REDIS_URL", "redis://:pw@10.0.0.1:6380/0")
    monkeypatch.setenv("AETHER_CHECKPOINTS__KEEP", "7")
    s = load_settings()
    assert s.home == Path("/srv/agent") and s.namespace == "{bot}"
    assert s.redis_url is not None and s.redis_url.get_secret_value().endswith("6380/0")
    assert s.checkpoints.keep == 7


def test_toml_file_and_env_precedence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "aether.toml").write_text(
        'namespace = "fromtoml"\nredis_appendfsync = "everysec"\n[checkpoints]\nkeep = 9\n'
    )
    s = load_settings()
    assert (s.namespace, s.redis_appendfsync, s.checkpoints.keep) == ("fromtoml", "everysec", 9)
    monkeypatch.setenv("AETHER_NAMESPACE", "fromenv")
    assert load_settings().namespace == "fromenv"
    other = tmp_path / "other.toml"
    other.write_text('namespace = "explicit"\n')
    monkeypatch.delenv("AETHER_NAMESPACE")
    monkeypatch.setenv("AETHER_CONFIG_FILE", str(other))
    assert load_settings().namespace == "explicit"


@pytest.mark.parametrize("bad", ["has space", "a:b", "", "x" * 65, "ünï"])
def test_invalid_namespace_is_a_clear_error(bad: str) -> None:
    with pytest.raises(ConfigError, match="namespace"):
        load_settings(namespace=bad)


def test_unknown_and_invalid_values(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="redis_appendfsync"):
        load_settings(redis_appendfsync="sometimes")
    with pytest.raises(ConfigError, match=r"checkpoints\.keep"):
        load_settings(checkpoints={"keep": 0})


def test_masked_secrets() -> None:
    s = Settings(
        redis_url="redis://user:s3cret@host:6379/0",  # type: ignore[arg-type]
        postgres_dsn="postgresql://app:pgpass@db/aether?password=again",  # type: ignore[arg-type]
    )
    data = s.masked()
    assert "s3cret" not in json.dumps(data) and "pgpass" not in json.dumps(data)
    assert "again" not in json.dumps(data)
    assert data["redis_url"] == "redis://user:***@host:6379/0"


def test_cli_config_show_masks_and_fails_cleanly(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    env["AETHER_HOME"] = str(tmp_path / "home")
    env["AETHER_POSTGRES_DSN"] = "postgresql://u:topsecret@db/x"
    out = subprocess.run(
        [sys.executable, "-m", "aether", "config", "show", "--json"],
        env=env,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["postgres_dsn"] == "postgresql://u:***@db/x"
    assert "topsecret" not in out.stdout
    assert Path(data["identity_dir"]).name == "identity"  # the default, not None
    assert (Path(data["identity_dir"]) / "USER.md").is_file()
    env["AETHER_NAMESPACE"] = "bad name"
    bad = subprocess.run(
        [sys.executable, "-m", "aether", "config", "show"],
        env=env,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert bad.returncode == 1
    assert "namespace" in bad.stderr and "Traceback" not in bad.stderr


def test_the_readme_never_hard_codes_the_default_home() -> None:
    """Its redis-cli example respects AETHER_HOME (through `aether redis cli` / `url`)."""
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    assert "~/.local/share/aether/run" not in readme
    assert "aether redis cli XADD aether:inbox" in readme


def test_llm_and_embedding_settings_are_groups_and_the_old_names_still_work(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("AETHER_LLM__MODEL", "new-model")
    monkeypatch.setenv("AETHER_LLM__MAX_RETRIES", "1")
    monkeypatch.setenv("AETHER_EMBEDDING__PROVIDER", "none")
    s = load_settings()
    assert (s.llm.model, s.llm.max_retries, s.embedding.provider) == ("new-model", 1, "none")
    # the old flat environment names are read, below the new ones
    monkeypatch.setenv("AETHER_LLM_MODEL", "old-model")
    monkeypatch.setenv("AETHER_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("AETHER_EMBEDDINGS", "openai")
    s = load_settings()
    assert s.llm.model == "new-model" and s.embedding.provider == "none"
    assert s.llm.base_url == "http://127.0.0.1:9/v1"
    monkeypatch.delenv("AETHER_EMBEDDING__PROVIDER")
    monkeypatch.delenv("AETHER_LLM__MODEL")
    s = load_settings()
    assert s.llm.model == "old-model" and s.embedding.provider == "openai"
    # old flat keys in code and in the TOML file land in their groups too
    assert Settings(llm_timeout_s=5, embeddings="local").llm.timeout_s == 5  # type: ignore[call-arg]
    copied = s.model_copy(update={"llm_model": "m", "embedding": {"provider": "none"}})
    assert copied.llm.model == "m" and copied.llm.base_url == s.llm.base_url
    assert copied.embedding.provider == "none" and s.embedding.provider == "openai"
    toml = tmp_path / "flat.toml"
    toml.write_text('llm_model = "from-toml"\nembeddings = "none"\n')
    for name in ("AETHER_LLM_MODEL", "AETHER_EMBEDDINGS"):
        monkeypatch.delenv(name)
    monkeypatch.setenv("AETHER_CONFIG_FILE", str(toml))
    s = load_settings()
    assert s.llm.model == "from-toml" and s.embedding.provider == "none"
    with pytest.raises(ConfigError, match="provider"):
        load_settings(embedding={"provider": "gpu"})


def test_an_old_environment_name_gets_a_deprecation_notice(tmp_path: Path) -> None:
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("AETHER_")}
    env |= {"AETHER_HOME": str(tmp_path), "AETHER_EMBEDDINGS": "none", "AETHER_LLM_MODEL": "m"}
    done = subprocess.run(
        [sys.executable, "-m", "aether", "config", "show", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    assert shown["embedding"]["provider"] == "none" and shown["llm"]["model"] == "m"
    assert "AETHER_EMBEDDINGS is deprecated: use AETHER_EMBEDDING__PROVIDER" in done.stderr
    assert "read until aether 0.3.0" in done.stderr  # the shim names the release that ends it
    assert "AETHER_LLM_MODEL is deprecated: use AETHER_LLM__MODEL" in done.stderr
    new = {k: v for k, v in env.items() if k not in ("AETHER_EMBEDDINGS", "AETHER_LLM_MODEL")}
    quiet = subprocess.run(
        [sys.executable, "-m", "aether", "config", "show", "--json"],
        env=new | {"AETHER_EMBEDDING__PROVIDER": "none"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert quiet.returncode == 0 and "deprecated" not in quiet.stderr
