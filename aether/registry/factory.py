"""The configured backend: MongoDB when ``AETHER_MONGO_URL`` is set, else Redis."""

from __future__ import annotations

from dataclasses import dataclass

from redis.asyncio import Redis

from aether.config import Settings
from aether.keys import Keyspace
from aether.registry.model import AgentLedger, ToolRegistry
from aether.store.signing import Signer
from aether.store.state import Store


@dataclass
class RegistryAndLedger:
    """The two services and how to close them."""

    registry: ToolRegistry
    ledger: AgentLedger
    backend: str
    _mongo: object | None = None

    async def close(self) -> None:
        """Release the MongoDB connection, when there is one."""
        from aether.registry.mongo_backend import MongoBackend

        if isinstance(self._mongo, MongoBackend):
            await self._mongo.close()


def open_registry(settings: Settings, client: Redis, actor: str = "aether") -> RegistryAndLedger:
    """The registry and ledger of the configured backend."""
    if settings.mongo_url is not None:
        from aether.registry.mongo_backend import MongoAgentLedger, MongoBackend, MongoToolRegistry

        mongo = MongoBackend(settings.mongo_url.get_secret_value(), settings.namespace)
        return RegistryAndLedger(MongoToolRegistry(mongo), MongoAgentLedger(mongo), "mongo", mongo)
    from aether.registry.redis_backend import RedisAgentLedger, RedisToolRegistry

    keys = Keyspace(settings.namespace)
    return RegistryAndLedger(
        RedisToolRegistry(Store(client, keys, actor, signer=Signer.from_settings(settings))),
        RedisAgentLedger(client, keys),
        "redis",
    )
