from client.cli import run_command
from worker.main import worker_command

run_command(worker_command, prog_name="python -m worker")
