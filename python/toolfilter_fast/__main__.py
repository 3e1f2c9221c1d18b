"""``python -m toolfilter_fast``: the demo on an embedded example catalog."""

from __future__ import annotations

import sys

from ._demo import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
