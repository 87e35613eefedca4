"""Helpers for trying and testing aether without outside services (a scripted model)."""
