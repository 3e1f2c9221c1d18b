"""A small real MCP server written with the ``mcp`` SDK itself, for the adapter tests
of the frameworks that sit on the SDK's client (LangChain, CrewAI, smolagents,
LlamaIndex) and of the SDK adapters.

It runs on both SDK generations: ``MCPServer`` in mcp 2.x, ``FastMCP`` in mcp 1.x
(the generation that langchain-mcp-adapters, CrewAI and smolagents pin). Run as a
script it serves stdio: ``_mcp_sdk_server.py [name] [extras] [lowlevel
[unknown=ANSWER]] [filtered MODULE:FACTORY]``; ``extras`` serves the tools, prompts
and resources of :func:`build_extras_server` instead; ``lowlevel`` serves the same
tools from the SDK's low-level ``Server`` (``ANSWER``: how its call handler answers
a name it has not got, one of :data:`UNKNOWN_ANSWERS`), and with ``filtered`` the server filters
itself through ``toolfilter_fast.adapters.mcp_server.filter_server``, given the arguments that
``FACTORY()`` returns. Each tool answers with its own name, so a test can see
which tool really ran.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

#: The tools this server offers, in the order it lists them (as the policy demo
#: server of ``_mcp_demo_server.py``: every hint spelled out, and a UI session's
#: widget tools for the focus lens).
TOOL_NAMES = (
    "read_file", "write_file", "delete_repo", "admin_reset",
    "demo.search.type_text", "demo.search.clear", "demo.submit.click",
)

SCRIPT = str(Path(__file__).resolve())


def _modern() -> bool:
    try:
        import mcp.server.mcpserver  # noqa: F401
    except ImportError:
        return False
    return True


#: Whether the installed SDK is 2.x (``MCPServer``, middleware) rather than 1.x.
MODERN = _modern()


def sdk_server_class():
    """The SDK's high-level server class of the installed generation."""
    if MODERN:
        from mcp.server.mcpserver import MCPServer

        return MCPServer
    from mcp.server.fastmcp import FastMCP

    return FastMCP


def build_server(name: str = "demo", **kwargs):
    from mcp.types import ToolAnnotations

    server = sdk_server_class()(name, **kwargs)

    def hints(read_only: bool, destructive: bool):
        return ToolAnnotations(readOnlyHint=read_only, destructiveHint=destructive)

    @server.tool(annotations=hints(True, False))
    def read_file(path: str) -> str:
        """Reads a file."""
        return f"read_file {path}"

    @server.tool(annotations=hints(False, False))
    def write_file(path: str, text: str = "") -> str:
        """Writes a file."""
        return f"write_file {path}"

    @server.tool(annotations=hints(False, True))
    def delete_repo(repo: str) -> str:
        """Deletes a repository."""
        return f"delete_repo {repo}"

    @server.tool(annotations=hints(False, False))
    def admin_reset() -> str:
        """Resets everything."""
        return "admin_reset"

    @server.tool(name="demo.search.type_text", annotations=hints(False, False))
    def type_text(text: str = "") -> str:
        """Types into the search box."""
        return "demo.search.type_text"

    @server.tool(name="demo.search.clear", annotations=hints(False, False))
    def clear() -> str:
        """Clears the search box."""
        return "demo.search.clear"

    @server.tool(name="demo.submit.click", annotations=hints(False, False))
    def click() -> str:
        """Clicks the submit button."""
        return "demo.submit.click"

    return server


#: How a low-level server's call handler can answer a name it has not got:
#: ``mcp-error`` raises the SDK's JSON-RPC error, as the MCP specification's example
#: does; ``value-error`` raises ``ValueError(f"Unknown tool: {name}")``, as the SDK's
#: own examples do; ``error-result`` returns an error result; ``name-check`` first
#: refuses a name the SDK's tool-name rule (``[A-Za-z0-9._-]{1,128}``) does not allow,
#: with other words, then raises as ``value-error``; ``custom-error`` raises an
#: exception of its own whose text is made from an attribute, not its arguments.
UNKNOWN_ANSWERS = ("mcp-error", "value-error", "error-result", "name-check", "custom-error")


class ToolMissing(LookupError):
    """A server's own exception: its text is made from ``self.tool`` when it is shown."""

    def __init__(self, tool):
        super().__init__()
        self.tool = tool

    def __str__(self):
        return f"no tool is called {self.tool!r} here"


def build_lowlevel_server(name: str = "demo", unknown: str = "mcp-error", **kwargs):
    """The same tools on the SDK's low-level ``Server``, whose call handler
    answers a name it has not got as ``unknown`` says (:data:`UNKNOWN_ANSWERS`).
    Output schemas are left out (the handler answers text)."""
    import re

    from mcp.server.lowlevel import Server
    from mcp.types import INVALID_PARAMS, CallToolResult, ListToolsResult, TextContent

    if unknown not in UNKNOWN_ANSWERS:
        raise ValueError(f"unknown must be one of {UNKNOWN_ANSWERS}, not {unknown!r}")
    high_level = build_server(name)

    async def tools():
        return [tool.model_copy(update={"output_schema" if MODERN else "outputSchema": None})
                for tool in await high_level.list_tools()]

    if MODERN:
        from mcp.shared.exceptions import MCPError

        def sdk_error(message):
            return MCPError(INVALID_PARAMS, message)
    else:  # mcp 1.x: errors as McpError(ErrorData)
        from mcp.shared.exceptions import McpError
        from mcp.types import ErrorData

        def sdk_error(message):
            return McpError(ErrorData(code=INVALID_PARAMS, message=message))

    async def answer(tool_name):
        if tool_name in {tool.name for tool in await tools()}:
            return CallToolResult(content=[TextContent(type="text", text=tool_name)])
        message = f"Unknown tool: {tool_name}"
        if unknown == "mcp-error":
            raise sdk_error(message)
        if unknown == "error-result":
            return CallToolResult(content=[TextContent(type="text", text=message)], isError=True)
        if unknown == "name-check" and not re.fullmatch(r"[A-Za-z0-9._-]{1,128}", tool_name):
            raise ValueError("Invalid tool name")
        if unknown == "custom-error":
            raise ToolMissing(tool_name)
        raise ValueError(message)

    if not MODERN:  # mcp 1.x: handlers by decorator
        server = Server(name, **kwargs)

        @server.list_tools()
        async def list_v1():
            return await tools()

        @server.call_tool(validate_input=False)
        async def call_v1(tool_name, arguments):
            return await answer(tool_name)

        return server

    async def list_tools(ctx, params):
        return ListToolsResult(tools=await tools())

    async def call_tool(ctx, params):
        return await answer(params.name)

    return Server(name, on_list_tools=list_tools, on_call_tool=call_tool, **kwargs)


#: The prompts, resources and resource templates of :func:`build_extras_server`, some
#: named like its tool ``fetch``: ``(uri or template, name)`` for the last two.
EXTRA_TOOLS = ("fetch", "read_file")
EXTRA_PROMPTS = ("fetch", "summary", "debug_dump")
EXTRA_RESOURCES = (("docs://readme", "readme"), ("secret://key", "key"),
                   ("data://fetch", "fetch"))
EXTRA_TEMPLATES = (("notes://{key}", "note"), ("secret://{key}", "secret"))


def build_extras_server(name: str = "demo", lowlevel: bool = False):
    """A server of :data:`EXTRA_TOOLS`, :data:`EXTRA_PROMPTS`, :data:`EXTRA_RESOURCES`
    and :data:`EXTRA_TEMPLATES`: the SDK's high-level server, or with ``lowlevel`` its
    low-level ``Server``, whose handlers answer an unknown prompt or resource by
    raising ``ValueError(f"Unknown prompt: {name}")`` (``resource``), as the SDK's
    examples do. A prompt answers its name, a resource its URI."""
    import re

    from mcp import types

    if not lowlevel:
        server = sdk_server_class()(name)

        def answering(text):
            def answer() -> str:
                return text
            return answer

        def templated(key: str) -> str:
            return f"the resource {key}"

        for tool in EXTRA_TOOLS:
            server.tool(name=tool)(answering("ran"))
        for prompt in EXTRA_PROMPTS:
            server.prompt(name=prompt)(answering(f"the prompt {prompt}"))
        for uri, resource in EXTRA_RESOURCES:
            server.resource(uri, name=resource)(answering(f"the resource {uri}"))
        server.resource("notes://{key}", name="note")(templated)
        server.resource("secret://{key}", name="secret")(templated)
        return server

    def listed(kind):
        wire = {
            "tools": [{"name": tool, "inputSchema": {"type": "object"}} for tool in EXTRA_TOOLS],
            "prompts": [{"name": prompt} for prompt in EXTRA_PROMPTS],
            "resources": [{"uri": uri, "name": name} for uri, name in EXTRA_RESOURCES],
            "resourceTemplates": [{"uriTemplate": uri, "name": name}
                                  for uri, name in EXTRA_TEMPLATES],
        }[kind]
        result = {"tools": types.ListToolsResult, "prompts": types.ListPromptsResult,
                  "resources": types.ListResourcesResult,
                  "resourceTemplates": types.ListResourceTemplatesResult}[kind]
        return result.model_validate({kind: wire})

    def prompt_answer(prompt):
        if prompt not in EXTRA_PROMPTS:
            raise ValueError(f"Unknown prompt: {prompt}")
        return types.GetPromptResult.model_validate({"messages": [
            {"role": "user", "content": {"type": "text", "text": f"the prompt {prompt}"}}]})

    def resource_text(uri):
        if uri in dict(EXTRA_RESOURCES) or any(
                re.fullmatch(template.replace("{key}", "[^/]+"), uri)
                for template, _ in EXTRA_TEMPLATES):
            return f"the resource {uri}"
        raise ValueError(f"Unknown resource: {uri}")

    def call_answer(tool):
        if tool not in EXTRA_TOOLS:
            raise ValueError(f"Unknown tool: {tool}")
        return types.CallToolResult.model_validate(
            {"content": [{"type": "text", "text": "ran"}]})

    from mcp.server.lowlevel import Server

    if MODERN:
        async def on(kind, ctx, params):
            return listed(kind)

        async def read(ctx, params):
            return types.ReadResourceResult.model_validate({"contents": [
                {"uri": str(params.uri), "text": resource_text(str(params.uri))}]})

        async def get_prompt(ctx, params):
            return prompt_answer(params.name)

        async def call_tool(ctx, params):
            return call_answer(params.name)

        import functools

        return Server(name, on_list_tools=functools.partial(on, "tools"),
                      on_call_tool=call_tool,
                      on_list_prompts=functools.partial(on, "prompts"),
                      on_get_prompt=get_prompt,
                      on_list_resources=functools.partial(on, "resources"),
                      on_list_resource_templates=functools.partial(on, "resourceTemplates"),
                      on_read_resource=read)

    from mcp.server.lowlevel.helper_types import ReadResourceContents

    server = Server(name)

    @server.list_tools()
    async def list_v1():
        return listed("tools").tools

    @server.call_tool(validate_input=False)
    async def call_v1(tool, arguments):
        return call_answer(tool)

    @server.list_prompts()
    async def prompts_v1():
        return listed("prompts").prompts

    @server.get_prompt()
    async def prompt_v1(prompt, arguments):
        return prompt_answer(prompt)

    @server.list_resources()
    async def resources_v1():
        return listed("resources").resources

    @server.list_resource_templates()
    async def templates_v1():
        return listed("resourceTemplates").resourceTemplates

    @server.read_resource()
    async def read_v1(uri):
        return [ReadResourceContents(content=resource_text(str(uri)), mime_type="text/plain")]

    return server


#: The policy of the prompts and resources tests: the tool fetch hidden, the debug
#: prompts, and the secret:// and notes://private* resources (their templates too).
EXTRAS_POLICY = {
    "filter": {"exclude": ["*/fetch"]},
    "prompts": {"exclude": ["*/debug_*"]},
    "resources": {"exclude": ["*/secret://*", "*/notes://private*"]},
}


def extras_policy():
    """:data:`EXTRAS_POLICY`, as ``filter_server`` arguments."""
    import toolfilter_fast

    return {"tool_filter": toolfilter_fast.Policy.from_config(EXTRAS_POLICY)}


def role_from_meta(request):
    """A ctx function: the caller's role, sent in the request's ``_meta``."""
    return {"role": request.meta.get("role")}


def demo_policy():
    """The policy of ``_mcp_demo_server``, ctx the role in ``_meta``."""
    from _mcp_demo_server import POLICY_CONFIG

    import toolfilter_fast

    return {"tool_filter": toolfilter_fast.Policy.from_config(POLICY_CONFIG),
            "ctx": role_from_meta}


def is_admin(tool, ctx):
    """A function pattern: the caller's ctx says it is an admin."""
    return ctx is not None and ctx["role"] == "admin"


def role_rules():
    """A filter: annotations say which tools destroy, and only admins (a ctx of
    ``{"role": "admin"}``) reset."""
    import toolfilter_fast

    return toolfilter_fast.compile(
        exclude=[toolfilter_fast.Annotations(destructiveHint=True)],
        include=["*/read_*", "*/write_*", "*/demo.*", is_admin],
    )


def no_destructive_tools():
    """:func:`role_rules`, ctx the role in ``_meta``."""
    return {"tool_filter": role_rules(), "ctx": role_from_meta}


def broken_ctx():
    """A filter whose ctx function raises."""
    import toolfilter_fast

    def ctx(request):
        raise LookupError("no user")

    return {"tool_filter": toolfilter_fast.compile(), "ctx": ctx}


if __name__ == "__main__":
    server_name = sys.argv[1] if len(sys.argv) > 1 else "demo"
    build = build_lowlevel_server if "lowlevel" in sys.argv[2:] else build_server
    answers = [arg.partition("=")[2] for arg in sys.argv[2:] if arg.startswith("unknown=")]
    if "extras" in sys.argv[2:]:
        server = build_extras_server(server_name, lowlevel=build is build_lowlevel_server)
        build = build_extras_server if build is build_server else build
    else:
        server = build(server_name, *answers)
    if "filtered" in sys.argv[2:]:
        from toolfilter_fast.adapters.mcp_server import filter_server

        module_name, _, factory = sys.argv[-1].partition(":")
        filter_server(server, server_id=server_name,
                      **getattr(importlib.import_module(module_name), factory)())
    if hasattr(server, "run") and build in (build_server, build_extras_server):
        server.run("stdio")
    else:
        import anyio
        from mcp.server.stdio import stdio_server

        async def serve():
            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())

        anyio.run(serve)
