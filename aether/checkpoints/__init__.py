"""Checkpoints: O(1) creation, atomic rollback and undo, retention, PostgreSQL archive."""
