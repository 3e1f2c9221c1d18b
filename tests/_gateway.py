"""What the gateway tests share: the servers file and policy over the two test
upstreams, and ``toolfilter serve`` run as a real process.

Every process a test starts is ended by the test (``Served.stop``), and the
upstreams' process ids (written by ``_gateway_upstream.py``) let it check that
none is left behind.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from _gateway_upstream import SCRIPT

#: The policy of the tests: read-only and write tools of alpha and beta's
#: search for everyone, every tool but delete_* for a caller with scope admin.
POLICY = """\
[filter]
include = [
  "alpha/read_*", "alpha/write_*", "beta/search_*",
  {cel = 'ctx != null && "admin" in ctx.scopes'},
]
exclude = ["*/delete_*"]
"""

TOKENS = {
    "token-alice": {"client_id": "alice", "scopes": ["admin"]},
    "token-bob": {"client_id": "bob", "scopes": ["user"]},
}

ADMIN = ["alpha__admin_reset", "alpha__read_file", "alpha__write_file",
         "beta__admin_purge", "beta__fetch_page", "beta__search_docs"]
USER = ["alpha__read_file", "alpha__write_file", "beta__search_docs"]

#: How long a test waits for a gateway to start or stop, at most.
DEADLINE = 90.0


def write_setup(directory: Path) -> dict[str, Path]:
    """The servers file, the policy and the token file in ``directory``."""
    servers = {name: {"command": sys.executable,
                      "args": [SCRIPT, name, str(directory / f"{name}.pid")]}
               for name in ("alpha", "beta")}
    paths = {"servers": directory / "servers.json", "policy": directory / "policy.toml",
             "tokens": directory / "tokens.json"}
    paths["servers"].write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    paths["policy"].write_text(POLICY, encoding="utf-8")
    paths["tokens"].write_text(json.dumps(TOKENS), encoding="utf-8")
    return paths


def upstream_pids(directory: Path) -> dict[str, int]:
    return {name: int((directory / f"{name}.pid").read_text())
            for name in ("alpha", "beta") if (directory / f"{name}.pid").exists()}


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def toolfilter(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "toolfilter_fast", *args],
                          capture_output=True, text=True, timeout=DEADLINE, **kwargs)


@dataclass
class Served:
    """A ``toolfilter serve --transport http`` process and its log."""

    process: subprocess.Popen
    log: Path
    url: str

    def text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def wait_for(self, pattern: str, after: int = 0) -> re.Match:
        """The first match of ``pattern`` in the log past offset ``after``."""
        end = time.monotonic() + DEADLINE
        while time.monotonic() < end:
            found = re.compile(pattern).search(self.text(), after)
            if found:
                return found
            if self.process.poll() is not None:
                raise AssertionError(f"the gateway exited ({self.process.returncode}):\n"
                                     f"{self.text()}")
            time.sleep(0.05)
        raise AssertionError(f"{pattern!r} never came in the log:\n{self.text()}")

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            return self.process.wait(timeout=DEADLINE)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise


def serve_http(directory: Path, *extra: str) -> Served:
    paths = write_setup(directory) if not (directory / "servers.json").exists() else {
        "servers": directory / "servers.json", "policy": directory / "policy.toml",
        "tokens": directory / "tokens.json"}
    log = directory / "serve.log"
    with log.open("w") as err:
        process = subprocess.Popen(
            [sys.executable, "-m", "toolfilter_fast", "serve", "--config", str(paths["policy"]),
             "--servers", str(paths["servers"]), "--transport", "http", "--port", "0",
             "--token-file", str(paths["tokens"]), *extra],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
        )
    served = Served(process, log, "")
    try:
        ready = served.wait_for(r"gateway ready on (http://\S+):")
    except BaseException:
        served.stop()
        raise
    served.url = ready[1]
    return served
