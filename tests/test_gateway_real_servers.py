"""``toolfilter serve`` in front of the official MCP servers from PyPI, each a
real subprocess: ``mcp-server-time``, ``mcp-server-git`` (on a repository made
here) and ``mcp-server-fetch`` (fetching only from an HTTP server on
127.0.0.1 run by the test), talked to by FastMCP's client over stdio and HTTP.

The policy shows read-only tools and hides the fetch server whole: git's
write tools (``git_commit``, ``git_reset``, ...) and ``fetch`` are left out of
the list, a call of one is answered word for word as a name that never
existed, and it does not run (the repository keeps its commits, its staged
change and its branches; the local HTTP server gets no request); the fetch
server's ``fetch`` prompt is hidden too (issue 31: no side door). The control
test shows the same calls do run when the policy shows them, so "nothing
happened" is something these tests can see fail.

The servers may need an MCP SDK the package's own venv cannot hold, so they
live in a venv of their own (``.ci/run`` makes ``.venv-ci-servers``), found
by ``TOOLFILTER_TEST_SERVERS_BIN``: the directory of their executables.
"""

from __future__ import annotations

import asyncio
import http.server
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

fastmcp = pytest.importorskip("fastmcp", reason="needs the gateway extra")

from _gateway import (  # noqa: E402
    DEADLINE,
    alive,
    processes_with,
    serve_http,
    stdio_gateway,
    write_files,
)
from fastmcp import Client  # noqa: E402
from test_mcp_roundtrip import failure  # noqa: E402

SERVERS = ("mcp-server-time", "mcp-server-git", "mcp-server-fetch")
BIN = os.environ.get("TOOLFILTER_TEST_SERVERS_BIN", "")
_missing = [name for name in SERVERS if not BIN or not (Path(BIN) / name).is_file()]
_why = (f"TOOLFILTER_TEST_SERVERS_BIN={BIN or '(unset)'} lacks {', '.join(_missing)}: set it "
        "to the bin directory of a venv with the official MCP servers from PyPI "
        "(.ci/run makes .venv-ci-servers)")
if _missing and os.environ.get("CI"):
    # In CI a missing venv is .ci/run's fault, not a reason to skip.
    raise RuntimeError(_why)
if _missing:
    pytest.skip(_why, allow_module_level=True)
if shutil.which("git") is None:
    pytest.skip("mcp-server-git needs the git command, not on PATH", allow_module_level=True)

#: Read-only tools of every server (every tool for a caller with scope
#: admin), but none of fetch's.
POLICY = """\
[filter]
include = [
  {annotations = {readOnlyHint = true}},
  {cel = 'ctx != null && "admin" in ctx.scopes'},
]
exclude = ["fetch/*"]
"""

#: The same, with git_commit and the fetch server shown (the control).
SHOWN = """\
[filter]
include = [{annotations = {readOnlyHint = true}}, "git/git_commit"]
"""

#: What POLICY lists: servers in the file's order, each one's tools by name.
LISTED = ["time__convert_time", "time__get_current_time",
          "git__git_branch", "git__git_diff", "git__git_diff_staged",
          "git__git_diff_unstaged", "git__git_log", "git__git_show", "git__git_status"]

#: The fetch server's user agent here: each request to the local server shows it.
AGENT = "toolfilter-fast-tests"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True, timeout=60).stdout


@pytest.fixture
def repo(tmp_path) -> Path:
    """A repository with one commit and one staged change (what a hidden
    ``git_commit`` would record and a hidden ``git_reset`` would unstage)."""
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.email", "tests@example.invalid")
    git(path, "config", "user.name", "tests")
    (path / "notes.txt").write_text("one\n", encoding="utf-8")
    git(path, "add", "notes.txt")
    git(path, "commit", "-q", "-m", "first")
    (path / "notes.txt").write_text("one\ntwo\n", encoding="utf-8")
    git(path, "add", "notes.txt")
    return path


def repo_state(path: Path) -> tuple[str, str, str, str]:
    """Commits, staged files, branches, the current branch."""
    return (git(path, "rev-list", "--all"), git(path, "diff", "--cached", "--name-only"),
            git(path, "branch", "--list"), git(path, "rev-parse", "--abbrev-ref", "HEAD"))


class Web:
    """An HTTP server on 127.0.0.1 (a port the system picks) that records each
    request's path and user agent and answers a line of plain text (the fetch
    server hands plain text back as it is; HTML it would simplify with
    readabilipy, which runs Node.js when Node is installed, slow or stuck
    where it cannot fetch its packages)."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str]] = []
        seen = self.requests

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                seen.append((self.path, self.headers.get("User-Agent", "")))
                body = b"Local page, served here\n"
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/page"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def web() -> Iterator[Web]:
    server = Web()
    try:
        yield server
    finally:
        server.close()


def setup(directory: Path, repo: Path, policy: str) -> dict[str, Path]:
    """The servers file of the three servers, the policy and the tokens. The
    fetch server ignores robots.txt (it would ask the local server for it),
    may reach 127.0.0.1 (it refuses private addresses by default, which would
    hide a call that went through), sends its own user agent and no proxy."""
    bin_dir = Path(BIN)
    servers = {
        "time": {"command": str(bin_dir / "mcp-server-time"),
                 "args": ["--local-timezone", "UTC"]},
        "git": {"command": str(bin_dir / "mcp-server-git"),
                "args": ["-v", "--repository", str(repo)]},
        "fetch": {"command": str(bin_dir / "mcp-server-fetch"),
                  "args": ["--ignore-robots-txt", "--allow-private-ips", "--user-agent", AGENT],
                  "env": {"NO_PROXY": "*", "no_proxy": "*"}},
    }
    return write_files(directory, servers, policy)


def text(result) -> str:
    return "".join(getattr(part, "text", "") for part in result.content)


async def prompt_failure(client: Client, name: str, arguments: dict) -> tuple:
    """How ``prompts/get`` fails, with the name taken out."""
    with pytest.raises(Exception) as raised:
        await client.get_prompt(name, arguments)
    return type(raised.value), str(raised.value).replace(repr(name), "NAME").replace(name, "NAME")


async def hidden_session(client: Client, repo: Path, web: Web) -> dict:
    """Everything the tests check through one client of the gateway."""
    where = {"repo_path": str(repo)}
    listed = [tool.name for tool in await client.list_tools()]
    prompts = [prompt.name for prompt in await client.list_prompts()]
    now = await client.call_tool_mcp("time__get_current_time", {"timezone": "UTC"})
    status = await client.call_tool_mcp("git__git_status", where)
    unknown = await failure(client, "git__never_existed", {**where, "message": "m"})
    hidden = {
        "git_commit": await failure(client, "git__git_commit", {**where, "message": "m"}),
        "git_reset": await failure(client, "git__git_reset", where),
        "git_add": await failure(client, "git__git_add", {**where, "files": ["notes.txt"]}),
        "git_create_branch": await failure(client, "git__git_create_branch",
                                           {**where, "branch_name": "b"}),
        "git_checkout": await failure(client, "git__git_checkout",
                                      {**where, "branch_name": "main"}),
        "fetch": await failure(client, "fetch__fetch", {"url": web.url}),
    }
    fetch_unknown = await failure(client, "fetch__never_existed", {"url": web.url})
    prompt_hidden = await prompt_failure(client, "fetch__fetch", {"url": web.url})
    prompt_unknown = await prompt_failure(client, "fetch__never_existed", {"url": web.url})
    return {"listed": listed, "prompts": prompts, "now": now, "status": status,
            "unknown": unknown, "hidden": hidden, "fetch_unknown": fetch_unknown,
            "prompt_hidden": prompt_hidden, "prompt_unknown": prompt_unknown}


def check_hidden(seen: dict, repo: Path, web: Web, before: tuple, log: str) -> None:
    assert seen["listed"] == LISTED
    assert seen["prompts"] == []
    # Visible tools run.
    assert seen["now"].is_error is False
    assert '"timezone": "UTC"' in text(seen["now"]) or '"timezone":"UTC"' in text(seen["now"])
    assert seen["status"].is_error is False
    assert "Repository status" in text(seen["status"]) and "notes.txt" in text(seen["status"])
    # Hidden ones are answered as names that never existed, and do not run.
    for name, answer in seen["hidden"].items():
        expected = seen["fetch_unknown"] if name == "fetch" else seen["unknown"]
        assert answer == expected, name
    assert seen["unknown"][1] == "Unknown tool: NAME"
    assert seen["prompt_hidden"] == seen["prompt_unknown"]
    assert "Unknown prompt" in seen["prompt_hidden"][1]
    assert repo_state(repo) == before
    assert web.requests == []
    # The log names each hidden call; the upstreams' stderr comes with their names.
    assert "hidden tool called: client" in log and "tool 'git__git_commit'" in log
    assert "upstream 'git': INFO:mcp_server_git.server:Using repository at" in log
    assert "Traceback" not in log


def assert_no_server_left() -> None:
    """No process of the servers' venv outlives the gateway that started it."""
    end = time.monotonic() + DEADLINE
    while time.monotonic() < end and any(alive(pid) for pid in processes_with(BIN)):
        time.sleep(0.1)
    assert processes_with(BIN) == []


def test_stdio_hides_git_writes_and_fetch_from_the_real_servers(tmp_path, repo, web):
    paths = setup(tmp_path, repo, POLICY)
    before = repo_state(repo)
    log = tmp_path / "serve.log"

    async def main():
        async with stdio_gateway(paths, log) as client:
            return await hidden_session(client, repo, web)

    seen = asyncio.run(main())
    check_hidden(seen, repo, web, before, log.read_text(encoding="utf-8", errors="replace"))
    assert_no_server_left()


def test_http_hides_git_writes_and_fetch_from_the_real_servers(tmp_path, repo, web):
    setup(tmp_path, repo, POLICY)
    before = repo_state(repo)
    served = serve_http(tmp_path)
    try:
        async def main():
            async with Client(served.url, auth="token-alice", timeout=DEADLINE) as client:
                admin = [tool.name for tool in await client.list_tools()]
            async with Client(served.url, auth="token-bob", timeout=DEADLINE) as client:
                return admin, await hidden_session(client, repo, web)

        admin, seen = asyncio.run(main())
    finally:
        code = served.stop()
    assert code == 0
    check_hidden(seen, repo, web, before, served.text())
    # Per token: the admin scope sees git's write tools, and still no fetch.
    assert set(LISTED) < set(admin)
    assert {"git__git_commit", "git__git_reset"} <= set(admin)
    assert [name for name in admin if name.startswith("fetch__")] == []
    assert "stopped by SIGTERM" in served.text()
    assert_no_server_left()


def test_control_the_same_calls_run_when_the_policy_shows_them(tmp_path, repo, web):
    """Without this, "no commit, no request" could hold because the calls
    never could have run here."""
    paths = setup(tmp_path, repo, SHOWN)
    commits = git(repo, "rev-list", "--all").split()
    log = tmp_path / "serve.log"

    async def main():
        async with stdio_gateway(paths, log) as client:
            listed = [tool.name for tool in await client.list_tools()]
            prompts = [prompt.name for prompt in await client.list_prompts()]
            fetched = await client.call_tool_mcp("fetch__fetch", {"url": web.url})
            committed = await client.call_tool_mcp(
                "git__git_commit", {"repo_path": str(repo), "message": "through the gateway"})
            prompted = await client.get_prompt("fetch__fetch", {"url": web.url + "?prompt"})
            return listed, prompts, fetched, committed, prompted

    listed, prompts, fetched, committed, prompted = asyncio.run(main())
    assert "fetch__fetch" in listed and "git__git_commit" in listed
    assert prompts == ["fetch__fetch"]
    assert fetched.is_error is False and "Local page" in text(fetched)
    assert committed.is_error is False
    assert git(repo, "rev-list", "--all").split()[1:] == commits
    assert git(repo, "log", "-1", "--format=%s").strip() == "through the gateway"
    assert "Local page" in "".join(getattr(m.content, "text", "") for m in prompted.messages)
    assert web.requests == [("/page", AGENT), ("/page?prompt", AGENT)]
    assert_no_server_left()
