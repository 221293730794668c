"""``python -m worker``: the worker's own entry point (``worker/cli.py``); it imports no client."""

from worker.cli import main

main()
