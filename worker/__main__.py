"""``python -m worker``: the worker's own entry point (``worker/cli.py``); it imports no client."""

from worker.numerics import use_one_blas_thread

use_one_blas_thread()  # before worker.cli imports the worker's modules, numpy among them

from worker.cli import main  # noqa: E402

main()
