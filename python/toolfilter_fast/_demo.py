"""An embedded example catalog and filter, shown visible and hidden."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._errors import ToolNotFoundError
from ._tool import Tool
from .catalog import ToolCatalog
from .filter import ToolFilter

EXAMPLE_TOOLS = {
    "github": ["create_issue", "list_pull_requests", "Delete-Repo", "DELETE.REPO", "merge_pr"],
    "GitHub": ["create_issue"],
    "fs": ["read_file", "read_dir", "write_file", "delete_file"],
    "slack": ["post_message", "list_channels"],
}


def _admins_only(tool: Tool, ctx: Any) -> bool:
    """Exclude function: merging is for admins."""
    return tool.name == "merge_pr" and (ctx or {}).get("role") != "admin"


EXAMPLE_FILTER = {
    "include": ["github/*", "fs/read_*", "slack/post_message"],
    "exclude": ["*/delete_*", _admins_only],
}


def main(argv: Sequence[str] = ()) -> int:
    f = ToolFilter.compile(**EXAMPLE_FILTER)
    catalog = ToolCatalog(f)
    print(f"filter: {f!r}\n")
    for server_id, names in EXAMPLE_TOOLS.items():
        catalog.refresh(server_id, [Tool(server_id, n) for n in names])
    for role in ("user", "admin"):
        ctx = {"role": role}
        print(f"ctx={ctx}")
        for server_id, names in EXAMPLE_TOOLS.items():
            for name in names:
                shown = f.visible(Tool(server_id, name), ctx)
                print(f"  {'visible' if shown else 'hidden '}  {server_id}/{name}")
        listed = [f"{t.server_id}/{t.name}" for t in catalog.list_tools(ctx)]
        print(f"  catalog.list_tools -> {listed}")
        try:
            catalog.resolve("github", "Delete-Repo", ctx)
        except ToolNotFoundError as err:
            print(f"  catalog.resolve('github', 'Delete-Repo') -> {type(err).__name__}: {err}")
        print()
    return 0
