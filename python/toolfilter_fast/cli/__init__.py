"""The ``toolfilter`` command (``python -m toolfilter_fast`` too).

``command`` parses the arguments and runs ``check``, ``explain``, ``demo`` and
``bench``; ``catalog_files`` reads tool catalogs from files; ``term`` draws
colours, tables and a progress bar; ``demo`` is the example that ``demo`` runs.
"""

from __future__ import annotations

from .command import main

__all__ = ["main"]
