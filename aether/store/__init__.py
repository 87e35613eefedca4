"""The store: client factory, the Redis Functions library and the journaled state API."""
