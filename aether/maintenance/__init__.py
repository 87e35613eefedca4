"""Maintenance: the engine and its schedule."""
