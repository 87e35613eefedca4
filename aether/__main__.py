"""``python -m aether`` runs the CLI."""

from aether.interfaces.cli import main

main()
