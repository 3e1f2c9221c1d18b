"""A JSON-RPC client of an MCP server over stdio that sends and reads the wire
form itself: what the SDKs' typed clients drop (``params.filter``, a
capability's ``filtering``) is sent and seen as it is.

``RawStdio(command)`` starts the server, ``initialize()`` does the handshake
and returns the server's result, ``request(method, params)`` returns the
result or raises :class:`RpcError` with the JSON-RPC error, ``exchange(message)``
returns the answer's line as written; ``close()`` ends
the process (also as a context manager).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import threading
from pathlib import Path

DEADLINE = 90.0


class RpcError(Exception):
    def __init__(self, error: dict) -> None:
        super().__init__(f"{error.get('code')}: {error.get('message')}")
        self.code = error.get("code")
        self.message = error.get("message")


class RawStdio:
    def __init__(self, command: list[str], log: Path | None = None, cwd: str | None = None):
        self._log = log.open("w") if log is not None else subprocess.DEVNULL
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=self._log, env=dict(os.environ), cwd=cwd)
        self._next = 0

    def __enter__(self) -> RawStdio:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _send(self, message: dict) -> None:
        self.process.stdin.write((json.dumps(message) + "\n").encode())
        self.process.stdin.flush()

    def _read_line(self) -> bytes:
        answer: list[bytes] = []
        reader = threading.Thread(target=lambda: answer.append(self.process.stdout.readline()),
                                  daemon=True)
        reader.start()
        reader.join(DEADLINE)
        if not answer or not answer[0]:
            raise AssertionError("the server did not answer")
        return answer[0]

    def _read(self) -> dict:
        return json.loads(self._read_line())

    def exchange(self, message: dict) -> bytes:
        """Sends ``message`` (a request, its id chosen by the caller) and returns
        the line that answers it, as the server wrote it."""
        self._send(message)
        while True:
            line = self._read_line()
            answer = json.loads(line)
            if answer.get("id") == message["id"] and "method" not in answer:
                return line

    def request(self, method: str, params: dict | None = None) -> dict:
        self._next += 1
        message = {"jsonrpc": "2.0", "id": self._next, "method": method}
        if params is not None:
            message["params"] = params
        self._send(message)
        while True:
            answer = self._read()
            if answer.get("id") == self._next and "method" not in answer:
                break
        if "error" in answer:
            raise RpcError(answer["error"])
        return answer["result"]

    def initialize(self) -> dict:
        result = self.request("initialize", {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw test client", "version": "1"}})
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return result

    def close(self) -> int:
        # Both pipes are closed, the server gone or not: a pipe left to the
        # collector is a ResourceWarning in whichever later test it runs in
        # (one landed in a test that records every warning of a call).
        with contextlib.suppress(OSError):  # a server gone: nothing to flush to
            self.process.stdin.close()
        if self.process.poll() is None:
            try:
                self.process.wait(timeout=DEADLINE)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process.stdout.close()
        if self._log is not subprocess.DEVNULL:
            self._log.close()
        return self.process.returncode
