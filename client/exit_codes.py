"""The exit codes every ``ponder`` command uses, defined once in ``workflows.error_codes``
(beside the code table that gives each error code its exit status).

- 0: done (a run completed, a document validated, a query answered).
- ``EXIT_FAILED``: a run ended failed or cancelled, or ponder itself failed.
- ``EXIT_USAGE``: refused: bad input, configuration or state; nothing ran, or the run was left as
  it was.
- ``EXIT_PAUSED``: the run is waiting for someone (a gate, a resume argument, a budget
  extension): the command printed the one that continues it. 75 is ``EX_TEMPFAIL`` of
  ``sysexits.h``, "try again later", which is what a paused run asks of a script.
"""

from __future__ import annotations

from workflows.error_codes import EXIT_FAILED, EXIT_PAUSED, EXIT_USAGE

__all__ = ["EXIT_FAILED", "EXIT_PAUSED", "EXIT_USAGE"]
