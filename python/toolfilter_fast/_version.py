"""The release: one place, read by the package, the pickle errors and ``--version``."""

__version__ = "0.1.0"
