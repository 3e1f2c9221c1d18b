"""The Policy: the filter, the tool groups, the focus lens and a tool budget,
written once (in one config file) and applied in one call.

``policy`` runs the stages over the Rust-cored parts; ``model`` holds what
it shares with its reference (the focus state, the selection).
"""

from __future__ import annotations

from .model import MODES, STAGES, Dropped, Focus, Selection
from .policy import Policy, PolicyDecision

__all__ = ["MODES", "STAGES", "Dropped", "Focus", "Policy", "PolicyDecision", "Selection"]
