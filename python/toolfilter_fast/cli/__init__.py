"""The ``toolfilter`` command (``python -m toolfilter_fast`` too).

``command`` parses the arguments and runs ``check``, ``explain``, ``demo`` and
``bench``; ``gateway`` adds ``serve``, ``fetch``, ``export`` and ``pin``;
``options`` is what both read alike (``--ctx``, the catalogs, the usage
error); ``catalog_files`` reads tool catalogs from files; ``term`` draws
colours, tables and a progress bar; ``demo`` is the example that ``demo`` runs.
"""

from __future__ import annotations

from .command import main

__all__ = ["main"]
