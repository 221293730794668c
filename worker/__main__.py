"""``python -m worker``: the worker's own entry point (``worker/cli.py``); it imports no client."""

from worker.startup import start_process

start_process()  # before worker.cli imports the worker's modules, numpy among them

from worker.cli import main  # noqa: E402

main()
