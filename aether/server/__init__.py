"""The embedded Redis Stack server: binaries, lifecycle and compatibility checks."""
