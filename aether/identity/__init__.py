"""Identity layer: markdown bootstrap into Redis, profiles, flags, heartbeat, system prompt."""
