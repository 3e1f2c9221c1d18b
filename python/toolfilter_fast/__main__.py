"""``python -m toolfilter_fast``: the ``toolfilter`` command."""

from __future__ import annotations

import os
import sys

if __name__ == "__main__":
    # `python -m` puts the working directory first on sys.path; the command
    # imports modules lazily (`bench` imports `platform` and `statistics`),
    # and a `./platform.py` must not run. A config's callables are still
    # found there: the config reader searches that directory for them alone.
    if sys.path and sys.path[0] in ("", os.getcwd()):
        del sys.path[0]

    from toolfilter_fast.cli import main

    sys.exit(main())
