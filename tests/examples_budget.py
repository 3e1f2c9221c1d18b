"""How many Hypothesis examples the equivalence tests draw (after conftest loaded a profile)."""

from hypothesis import settings

#: At least 10,000 in CI (profile ``ci``); 1,000 in the quicker ``dev`` profile.
EQUIVALENCE_EXAMPLES = 10_000 if settings().max_examples >= 500 else 1_000
