"""The servers file: ``{"mcpServers": {"NAME": {...}, ...}}``, as Claude Desktop,
Cursor and other MCP clients write it.

Each entry is a stdio server (``command``, ``args``, ``env``, ``cwd``) or a
remote one (``url``, ``headers``, ``transport``/``type`` of ``http``,
``streamable-http`` or ``sse``). ``"disabled": true`` leaves an entry out; other
keys that clients add are ignored. The entries are checked here, before
anything starts, and every problem is a :class:`ServersError` naming the file,
the server and the field.

A server's name is its ``server_id`` for the policy, and the gateway names its
tools ``NAME__TOOL``, split again at the first ``__``: a name that holds ``__``
or ends in ``_`` could not be split back, and is refused.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import _core
from ..filter.explain import Explainer

__all__ = ["SEPARATOR", "ServerSpec", "ServersError", "check_server_id", "command_error",
           "flat_name",
           "read_servers", "split_flat_name", "unknown_servers"]

#: What joins a server's name and a tool's name in the gateway's flat names.
SEPARATOR = "__"

_REMOTE_TRANSPORTS = ("http", "streamable-http", "sse")


class ServersError(ValueError):
    """A servers file (or a server given on the command line) that cannot be used."""


@dataclass(frozen=True)
class ServerSpec:
    """One server of the file: ``kind`` is ``"stdio"`` or ``"remote"``."""

    name: str
    kind: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    transport: str | None = None

    def describe(self) -> str:
        """The command line or the URL, for log lines."""
        if self.kind == "stdio":
            return " ".join([self.command or "", *self.args])
        return self.url or ""


def check_server_id(name: str, where: str) -> str:
    """``name`` if the gateway can name its tools ``NAME__TOOL`` and split them back."""
    if not name:
        raise ServersError(f"{where}: a server needs a non-empty name")
    if SEPARATOR in name or name.endswith("_"):
        raise ServersError(
            f"{where}: server {name!r}: a server name may not hold '__' or end in '_' "
            "(the gateway names tools SERVER__TOOL and splits them at the first '__')")
    return name


def flat_name(server_id: str, name: str) -> str:
    """The gateway's name of a tool: ``SERVER__TOOL``."""
    return f"{server_id}{SEPARATOR}{name}"


def split_flat_name(flat: str) -> tuple[str, str] | None:
    """``(server_id, name)`` of a flat name, split at the first ``__``; None without one."""
    server_id, sep, name = flat.partition(SEPARATOR)
    if not sep or not server_id:
        return None
    return server_id, name


def _type_name(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
            int: "a number", float: "a number", type(None): "null"}.get(type(value), "a value")


def _strings(where: str, key: str, value: Any, kind: type) -> Any:
    if kind is list:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ServersError(f"{where}: {key!r} must be an array of strings, "
                               f"not {_type_name(value)}")
        return tuple(value)
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise ServersError(f"{where}: {key!r} must be an object of strings, "
                           f"not {_type_name(value)}")
    return dict(value)


def _resolve(command: str, env: Mapping[str, str], cwd: str | None, where: str) -> None:
    """Refuses a command that cannot be run: the error a client would show
    much later, found before anything starts."""
    if os.sep in command:
        path = Path(cwd or ".") / command
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise ServersError(f"{where}: command {command!r} does not exist or is not "
                               "executable")
        return
    search = env.get("PATH", os.environ.get("PATH", os.defpath))
    if shutil.which(command, path=search) is None:
        raise ServersError(f"{where}: command {command!r} not found on PATH")


def parse_server(name: str, entry: Any, where: str, *,
                 check_command: bool = True) -> ServerSpec | None:
    """One entry of ``mcpServers``; None for a disabled one. ``check_command``
    False leaves a stdio server's command unchecked (:func:`command_error`)."""
    where = f"{where}: server {name!r}"
    if not isinstance(entry, dict):
        raise ServersError(f"{where}: an entry is an object, not {_type_name(entry)}")
    if entry.get("disabled") is True:
        return None
    check_server_id(name, where.rpartition(": server")[0])
    kind = entry.get("type", entry.get("transport"))
    if "command" in entry and "url" in entry:
        raise ServersError(f"{where}: give 'command' (a stdio server) or 'url' (a remote "
                           "one), not both")
    if "command" in entry:
        if kind not in (None, "stdio"):
            raise ServersError(f"{where}: a server with 'command' is a stdio server, "
                               f"not {kind!r}")
        command = entry["command"]
        if not isinstance(command, str) or not command:
            raise ServersError(f"{where}: 'command' must be a non-empty string")
        args = _strings(where, "args", entry.get("args", []), list)
        env = _strings(where, "env", entry.get("env", {}), dict)
        cwd = entry.get("cwd")
        if cwd is not None and not isinstance(cwd, str):
            raise ServersError(f"{where}: 'cwd' must be a string, not {_type_name(cwd)}")
        if check_command:
            _resolve(command, env, cwd, where)
        return ServerSpec(name, "stdio", command=command, args=args, env=env, cwd=cwd)
    if "url" in entry:
        url = entry["url"]
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ServersError(f"{where}: 'url' must be an http:// or https:// URL")
        if kind is not None and kind not in _REMOTE_TRANSPORTS:
            raise ServersError(f"{where}: the transport of a remote server is one of "
                               f"{', '.join(_REMOTE_TRANSPORTS)}, not {kind!r}")
        headers = _strings(where, "headers", entry.get("headers", {}), dict)
        return ServerSpec(name, "remote", url=url, headers=headers, transport=kind)
    raise ServersError(f"{where}: an entry needs 'command' (a stdio server) or 'url' "
                       "(a remote one)")


def command_error(spec: ServerSpec) -> str | None:
    """Why a stdio server's command cannot be run (not found on ``PATH``, not
    executable), or None."""
    if spec.kind != "stdio" or spec.command is None:
        return None
    try:
        _resolve(spec.command, spec.env, spec.cwd, f"server {spec.name!r}")
    except ServersError as err:
        return str(err).split(": ", 1)[1]
    return None


def read_servers(path: str, *, check_commands: bool = True) -> list[ServerSpec]:
    """The enabled servers of a servers file, in the file's order (each stdio
    server's command checked, unless ``check_commands`` is False)."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise ServersError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise ServersError(f"{path}: cannot read ({err})") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        raise ServersError(f"{path}: invalid JSON: {err.msg} (line {err.lineno}, "
                           f"column {err.colno})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("mcpServers"), dict):
        raise ServersError(f"{path}: expected an object with an 'mcpServers' object, as "
                           "MCP clients write it")
    servers = [parse_server(name, entry, path, check_command=check_commands)
               for name, entry in doc["mcpServers"].items()]
    enabled = [spec for spec in servers if spec is not None]
    if not enabled:
        raise ServersError(f"{path}: no enabled server in 'mcpServers'")
    return enabled


def unknown_servers(policy: Any, names: Sequence[str]) -> list[str]:
    """The places in a policy that name a server the servers file lacks: a
    filter pattern whose server part has no ``*`` (exclude patterns compared
    loosely, as they match), or a group pattern ``SERVER__...`` whose server
    part has none, or a ``[[rename]]`` of a server it lacks. Each as
    ``filter.include[2] "gitlab/*"``, ``groups[0] 'gitlab__*'`` or
    ``rename[0] 'gitlab'``."""
    exact = set(names)
    loose = {_core.fold_loose(name) for name in names}
    found = []
    explainer = Explainer(policy.filter)
    for option in ("include", "exclude"):
        for ref, _ in explainer.static_patterns(option):
            glob = ref.server_glob
            if glob is None or "*" in glob:
                continue
            known = (_core.fold_loose(glob) in loose) if option == "exclude" else glob in exact
            if not known:
                found.append(f"filter.{ref.label()}")
    for index, group in enumerate(policy.groups.groups):
        for pattern in group.tools:
            server, sep, _ = pattern.partition(SEPARATOR)
            if sep and server and "*" not in server and server not in exact:
                found.append(f"groups[{index}] {pattern!r}")
    for index, rename in enumerate(policy.renames.values()):
        if rename.server not in exact:
            found.append(f"rename[{index}] {rename.server!r}")
    return found
