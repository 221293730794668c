"""``python -m worker``: the entry point of ``ponder worker``, whose command lives in the client
(it connects, leases the embedded server, parses flags); ``worker`` itself never imports client."""

from client.cli import run_command
from client.worker_cli import worker_command

run_command(worker_command, prog_name="python -m worker")
