"""An upstream for the gateway's call tests: ``python _gateway_call_upstream.py
NAME RECORD [PORT]``, a FastMCP server over stdio (over HTTP on PORT) whose tools answer in every shape a result
has (text, structured content, an error, an image, ``_meta``), one that
takes its time, one that reports progress, and one that ends the process in
the middle of its call. Each call appends the tool's name to RECORD first
(what really ran upstream); the slow one, cancelled in its sleep, ``cancelled``.
"""

# No ``from __future__ import annotations``: FastMCP reads the tools' annotations,
# and the names they use are imported inside build().
import asyncio
import os
import sys
from pathlib import Path

SCRIPT = str(Path(__file__).resolve())
#: A 1x1 PNG: the image tool's answer.
PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                    "1f15c4890000000d49444154789c6360f8cfc0f01f0005000201e2212bc2"
                    "0000000049454e44ae426082")


def build(name: str, record: Path):
    from fastmcp import Context, FastMCP
    from fastmcp.exceptions import ToolError
    from fastmcp.tools.base import ToolResult
    from fastmcp.utilities.types import Image
    from mcp_types import TextContent

    server = FastMCP(name)

    def ran(tool: str) -> None:
        with record.open("a", encoding="utf-8") as out:
            out.write(tool + "\n")

    @server.tool
    def echo(text: str) -> str:
        ran("echo")
        return f"{name} {text}"

    @server.tool
    def square(n: int) -> dict[str, int]:
        ran("square")
        return {"n": n, "square": n * n}

    @server.tool
    def refuse(text: str) -> str:
        ran("refuse")
        raise ToolError(f"{name} refuses {text!r}")

    @server.tool
    def picture() -> Image:
        ran("picture")
        return Image(data=PNG, format="png")

    @server.tool
    def with_meta(text: str) -> ToolResult:
        ran("with_meta")
        return ToolResult(content=[TextContent(type="text", text=text)],
                          structured_content={"said": text}, meta={"trace": f"{name}-1"})

    @server.tool
    async def slow_echo(text: str, delay: float) -> str:
        ran("slow_echo")
        try:
            await asyncio.sleep(delay)
        except asyncio.CancelledError:
            ran("cancelled")
            raise
        return text

    @server.tool
    async def steps(ctx: Context) -> str:
        ran("steps")
        for step in (1, 2, 3):
            await ctx.report_progress(step, 3, f"step {step}")
        return "three steps"

    @server.tool
    def die() -> str:
        ran("die")
        os._exit(3)

    @server.tool
    def delete_all() -> str:
        ran("delete_all")
        return "deleted"

    return server


if __name__ == "__main__":
    server = build(sys.argv[1], Path(sys.argv[2]))
    if len(sys.argv) > 3:  # over HTTP on that port
        server.run(transport="http", host="127.0.0.1", port=int(sys.argv[3]),
                   show_banner=False, log_level="WARNING")
    else:
        server.run(transport="stdio", show_banner=False, log_level="WARNING")
