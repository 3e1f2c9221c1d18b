"""The benchmark workload is the same in every process (spec/performance.md:
fixed seeds, generated), whatever the interpreter's string hash seed."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys

from toolfilter_fast.bench import workload as _workload

_DIGEST = """
import hashlib
from toolfilter_fast.bench import workload as _workload
tools = _workload.catalog(5_000)
text = repr([(t.server_id, t.name) for t in tools])
text += repr([p if isinstance(p, str) else (p[0], p[1].pattern)
              for option in ("include", "exclude") for p in _workload.patterns(500, option, tools)])
print(hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest())
"""


def _digest(hash_seed: str) -> str:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    done = subprocess.run([sys.executable, "-c", _DIGEST], env=env, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_the_workload_does_not_depend_on_the_hash_seed():
    digests = {_digest(seed) for seed in ("0", "1", "12345")}
    assert len(digests) == 1
    assert len(digests.pop()) == len(hashlib.sha256().hexdigest())


def test_a_distinct_catalog_shares_no_name_and_keeps_the_servers():
    plain = _workload.catalog(4_000, servers=40, layout="in-order", interleaved=True)
    distinct = _workload.catalog(4_000, servers=40, layout="in-order", interleaved=True,
                                 distinct=True)
    assert len({t.name for t in distinct}) == len(distinct) == len(plain)
    assert len({t.name for t in plain}) < len(plain)
    assert {t.server_id for t in distinct} == {t.server_id for t in plain}
