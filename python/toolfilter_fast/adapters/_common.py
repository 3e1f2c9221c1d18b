"""What the framework adapters share: argument checks, tool conversion, fail-closed calls.

Nothing here imports a framework. Framework objects are read by attribute, so
that one code path serves every generation of the MCP SDK (``inputSchema`` in
1.x, ``input_schema`` in 2.x) and every framework's own tool record.

An adapter holds either a filter (``visible``/``filter``/``static_visible``)
or a :class:`~toolfilter_fast.Policy` (``select``), bound by
:class:`BoundFilter` to the functions that read a turn's ``ctx``, user
message and focus from the framework's own context object.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from .._tool import Tool, as_mapping
from ..filter import ToolFilter
from ..policy import Policy
from ..policy.model import check_max_tools as check_count
from ..sdk_hints import hints_as_sent

__all__ = [
    "FOCUS_KEY",
    "MESSAGE_KEY",
    "BoundFilter",
    "CtxFunc",
    "FilteredMethod",
    "FocusFunc",
    "MessageFunc",
    "check_ctx",
    "check_max_tools",
    "check_rules",
    "check_server_id",
    "extras_policy",
    "filter_method",
    "focus_from",
    "is_policy",
    "itself",
    "keep_selected",
    "keep_visible",
    "logger",
    "mapping_or_none",
    "mcp_tool",
    "meta_focus",
    "meta_message",
    "no_turn",
    "raising",
    "tool_label",
    "visible_fail_closed",
]

#: Warnings about tools hidden because something raised inside an adapter.
logger = logging.getLogger("toolfilter_fast.adapters")

#: A function from the framework's own context object to the filter's ``ctx``.
CtxFunc = Callable[[Any], Any]

#: A function from the framework's own context object to the turn's user
#: message (a ``str``, or None for no message).
MessageFunc = Callable[[Any], Any]

#: A function from the framework's own context object to the focus: a
#: :class:`~toolfilter_fast.Focus`, ``"session:widget[:hover]"``, a mapping of
#: the ids, or None (no focus: the lens is off).
FocusFunc = Callable[[Any], Any]

T = TypeVar("T")

#: The request ``_meta`` key of the turn's user message (a ``str``): what the
#: server-side adapters (FastMCP, the MCP SDK's server) read by default.
MESSAGE_KEY = "toolfilter-fast/message"

#: The request ``_meta`` key of the focus (``"session:widget[:hover]"`` or a
#: mapping of ``session_id``, ``focused_id``, ``hover_id``), read by default.
FOCUS_KEY = "toolfilter-fast/focus"


def no_turn(obj: Any) -> None:
    """The default where a framework's hook has no caller to read: no ``ctx``,
    no message, no focus."""
    return None


def itself(obj: Any) -> Any:
    """The default ``ctx`` of the server-side adapters: the request record itself."""
    return obj


def meta_message(request: Any) -> Any:
    """The default message of a server-side adapter: the request's
    ``meta["toolfilter-fast/message"]``, or None."""
    return request.meta.get(MESSAGE_KEY)


def meta_focus(request: Any) -> Any:
    """The default focus of a server-side adapter: the request's
    ``meta["toolfilter-fast/focus"]``, or None."""
    return request.meta.get(FOCUS_KEY)


def raising(error: Exception) -> Callable[..., Any]:
    """A function that raises ``error``: a turn that could not be read, handed
    to the fail-closed guard so that it hides the tools and logs."""
    def failed(*args: Any) -> Any:
        raise error
    return failed


def is_policy(rules: Any) -> bool:
    """Whether ``rules`` is a Policy: :class:`toolfilter_fast.Policy`, the
    reference one, or any object with ``select(tools, ctx, message, focus)``,
    ``filter``, ``focus_lens`` and ``max_tools``."""
    return callable(getattr(rules, "select", None)) and all(
        hasattr(rules, part) for part in ("filter", "focus_lens", "max_tools")
    )


def check_rules(rules: Any) -> Any:
    """``rules`` if it is a Policy (:func:`is_policy`) or a filter; else TypeError.

    Loosely typed on purpose: a :class:`~toolfilter_fast.ToolFilter`, the
    ``reference`` one, or any object with ``visible(tool, ctx)``,
    ``filter(tools, ctx)`` and ``static_visible(tool)`` is a filter.
    """
    if is_policy(rules):
        return rules
    for method in ("visible", "filter", "static_visible"):
        if not callable(getattr(rules, method, None)):
            raise TypeError(
                "tool_filter must be a ToolFilter or a Policy (an object with visible(tool, ctx), "
                "filter(tools, ctx) and static_visible(tool), or with select(tools, ctx, "
                f"message, focus)), got {type(rules).__name__}"
            )
    return rules


def check_server_id(server_id: Any, expected: str = "str") -> str:
    """``server_id`` if it is a ``str``; else TypeError."""
    if not isinstance(server_id, str):
        raise TypeError(f"server_id must be {expected}, not {type(server_id).__name__}")
    return server_id


def check_ctx(ctx: CtxFunc | None) -> CtxFunc | None:
    """``ctx`` if it is None or callable; else TypeError."""
    if ctx is not None and not callable(ctx):
        raise TypeError(
            "ctx must be a function from the framework's context to the filter's ctx, "
            f"not {type(ctx).__name__}"
        )
    return ctx


def _check_func(value: Any, name: str, gives: str) -> Any:
    if value is not None and not callable(value):
        raise TypeError(f"{name} must be a function from the framework's context to {gives}, "
                        f"not {type(value).__name__}")
    return value


def focus_from(obj: Any) -> Any:
    """The default focus: ``obj["focus"]`` of a mapping, else ``obj.focus``,
    else None (so an object without a focus turns the lens off)."""
    if isinstance(obj, Mapping):
        return obj.get("focus")
    return getattr(obj, "focus", None)


def check_max_tools(max_tools: Any) -> int | None:
    """``max_tools`` if it is None or an int >= 0 (not a bool); else TypeError/ValueError."""
    return check_count(max_tools, "max_tools")


def extras_policy(rules: Any) -> Any:
    """The Policy that judges a server's prompts and resources under ``rules``
    (its ``select_prompts`` and ``select_resources``): a Policy itself; for a
    :class:`~toolfilter_fast.ToolFilter` (or the reference one), a Policy with
    that filter and no ``[prompts]`` or ``[resources]`` section, so a prompt or
    resource named like a hidden tool, and those of a server whose every tool is
    hidden, are hidden too. None for a filter object of another kind, or a
    Policy without those methods: its prompts and resources pass."""
    if is_policy(rules):
        methods = (getattr(rules, name, None) for name in ("select_prompts", "select_resources"))
        return rules if all(callable(method) for method in methods) else None
    if isinstance(rules, ToolFilter):
        return Policy(filter=rules)
    if type(rules).__module__.split(".")[:2] == ["toolfilter_fast", "reference"]:
        # The reference, imported only for a reference filter (it brings RE2 for CEL).
        from .. import reference

        if isinstance(rules, reference.ToolFilter):
            return reference.Policy(filter=rules)
    return None


def extra_record(kind: str, item: Any) -> dict[str, Any]:
    """What :meth:`Policy.select_prompts` / :meth:`Policy.select_resources`
    judge of a prompt (``kind`` ``"prompts"``), a resource (``"resources"``) or
    a resource template (``"templates"``): a mapping (the wire's shape) or any
    object with those fields (an SDK model of either generation, a FastMCP
    component), the URI read as a ``str``."""
    def field(*names: str) -> Any:
        for name in names:
            value = item.get(name) if isinstance(item, Mapping) else getattr(item, name, None)
            if value is not None:
                return value
        return None

    record: dict[str, Any] = {"name": field("name")}
    if kind == "resources":
        record["uri"] = _uri(field("uri"))
    elif kind == "templates":
        record["uriTemplate"] = _uri(field("uriTemplate", "uri_template"))
    for name, keys in (("description", ("description",)), ("title", ("title",)),
                       ("_meta", ("_meta", "meta"))):
        value = field(*keys)
        if value is not None:
            record[name] = value
    return record


def _uri(value: Any) -> Any:
    # A pydantic URL (the SDK 1.x's AnyUrl, FastMCP's) read as its text; anything
    # else is left as it is, for the Policy to refuse.
    if isinstance(value, str) or not type(value).__module__.startswith("pydantic"):
        return value
    return str(value)


class BoundFilter:
    """The state an adapter holds: its rules (a filter, or a Policy), the
    server id, and the functions that read a turn from the framework's context.

    Arguments are checked here, at construction (TypeError naming the argument).
    A subclass says what differs per framework and hook, in class attributes:

    * ``DEFAULTS``: the functions that stand in for ``ctx``, ``message`` and
      ``focus`` when they are None (only a Policy reads a message and a focus,
      so giving either with a filter is a TypeError);
    * ``PER_TOOL``: the name of a hook that sees one tool at a time, where a
      Policy whose budget, lens cap or relevance stage needs the whole list is refused
      (TypeError naming ``LIST_HOOK``, the framework's list-level hook) rather
      than silently not cut;
    * ``OPTIONAL_SERVER_ID``: whether ``server_id`` may be None.

    Exactly one of ``_filter`` and ``_policy`` is set.
    """

    __slots__ = ("_ctx", "_extras", "_filter", "_focus", "_message", "_policy", "_server_id")

    DEFAULTS: tuple[CtxFunc, MessageFunc, FocusFunc]
    PER_TOOL: str | None = None
    LIST_HOOK: str = ""
    OPTIONAL_SERVER_ID: bool = False

    def __init__(
        self,
        rules: Any,
        *,
        server_id: str | None = None,
        ctx: CtxFunc | None = None,
        message: MessageFunc | None = None,
        focus: FocusFunc | None = None,
    ) -> None:
        rules = check_rules(rules)
        policy = is_policy(rules)
        self._filter: Any = None if policy else rules
        self._policy: Any = rules if policy else None
        self._extras: Any = extras_policy(rules)
        if self.OPTIONAL_SERVER_ID and server_id is None:
            self._server_id: Any = None
        else:
            self._server_id = check_server_id(server_id, "str or None" if self.OPTIONAL_SERVER_ID
                                              else "str")
        default_ctx, default_message, default_focus = self.DEFAULTS
        self._ctx: CtxFunc = check_ctx(ctx) or default_ctx
        if not policy:
            for name, value in (("message", message), ("focus", focus)):
                if value is not None:
                    raise TypeError(f"{name}= is read by a Policy's stages; a ToolFilter has "
                                    "none (pass a Policy)")
        self._message: MessageFunc = _check_func(message, "message", "the turn's user message") \
            or default_message
        self._focus: FocusFunc = _check_func(focus, "focus", "a Focus, a str or None") \
            or default_focus
        if policy and self.PER_TOOL is not None:
            caps = [f"max_tools={rules.max_tools}"] if rules.max_tools is not None else []
            lens_cap = rules.focus_lens.get("max_tools")
            if lens_cap is not None:
                caps.append(f"focus_lens max_tools={lens_cap}")
            # Relevance ranks a tool against the others of its list: judged alone,
            # a tool is always among the best top_k, so nothing would be cut.
            relevance = getattr(rules, "relevance", None)
            if relevance is not None:
                caps.append(f"relevance top_k={relevance.top_k}")
            if caps:
                raise TypeError(
                    f"{self.PER_TOOL} judges one tool at a time, so it cannot cut the Policy's "
                    f"list ({', '.join(caps)}): use {self.LIST_HOOK}, which sees the whole list"
                )

    @property
    def rules(self) -> Any:
        """The filter or the Policy."""
        return self._filter if self._policy is None else self._policy

    def turn(self, context: Any) -> Callable[[], tuple[Any, Any, Any]]:
        """A function giving ``(ctx, message, focus)`` for the framework's
        ``context``, to be called inside the fail-closed guard."""
        return lambda: (self._ctx(context), self._message(context), self._focus(context))

    def keeps(self, server_id: Any, tool: Any, to_tool: Callable[[Any], Tool], context: Any,
              *, where: str) -> bool:
        """Whether one framework tool is shown, judged alone with the turn
        read from ``context``: :func:`visible_fail_closed` for a filter, a
        one-tool :func:`keep_selected` for a Policy."""
        if self._policy is not None:
            kept, _ = keep_selected(self._policy, server_id, [tool], to_tool, self.turn(context),
                                    where=where)
            return bool(kept)
        return visible_fail_closed(self._filter, server_id, tool, to_tool,
                                   lambda: self._ctx(context), where=where)

    def keep(self, server_id: Any, tools: Iterable[T], to_tool: Callable[[T], Tool],
             context: Any, *, where: str) -> list[T]:
        """The framework tools shown of a whole list, the turn read from
        ``context``: :func:`keep_visible` for a filter, :func:`keep_selected`
        for a Policy."""
        if self._policy is not None:
            kept, _ = keep_selected(self._policy, server_id, tools, to_tool, self.turn(context),
                                    where=where)
            return kept
        return keep_visible(self._filter, server_id, tools, to_tool, lambda: self._ctx(context),
                            where=where)

    def keep_extras(self, kind: str, items: Iterable[T], tools: Callable[[], list[Tool]],
                    ctx: Callable[[], Any], *, where: str,
                    also: Iterable[Mapping[str, Any]] = ()) -> list[T]:
        """The prompts (``kind`` ``"prompts"``), resources (``"resources"``) or
        resource templates (``"templates"``) of ``items`` that the rules let this
        caller see: ``Policy.select_prompts`` / ``select_resources`` of
        :func:`extras_policy` over :func:`extra_record` of each, with every
        tool of the server (``tools()``, as :class:`Tool`) and ``ctx()``. Each
        record of ``also`` (a resource's URI as a template reads it) must be kept
        too, or nothing is. Fails closed: anything that raises inside hides every
        item and logs a warning."""
        listed = list(items)
        policy = self._extras
        if policy is None or not listed:
            return listed
        extra = list(also)
        try:
            records = [extra_record(kind, item) for item in listed]
            if kind == "prompts":
                selection = policy.select_prompts([*records, *extra], tools(), ctx(),
                                                  server_id=self._server_id)
            else:
                selection = policy.select_resources([*records, *extra], tools(), ctx(),
                                                    server_id=self._server_id)
            if any(selection.stage_of(len(records) + i) is not None for i in range(len(extra))):
                return []
            return [item for i, item in enumerate(listed) if selection.stage_of(i) is None]
        except Exception:
            _warn_hidden(f"every {_EXTRA_NOUN[kind]} ({len(listed)})", self._server_id, where)
            return []

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.rules!r}, server_id={self._server_id!r})"


_EXTRA_NOUN = {"prompts": "prompt", "resources": "resource", "templates": "resource template"}


class FilteredMethod:
    """An async listing method of a framework object (``list_tools``,
    ``get_tools``), then a list filter over what it gave, called with the
    tools and the method's own arguments. The method lists inside
    :func:`~toolfilter_fast.sdk_hints.hints_as_sent`, so the MCP SDK's client
    under the framework reads each tool's hints as the server sent them."""

    __slots__ = ("_apply", "_method", "_name", "_owner", "_shown")

    def __init__(self, owner: Any, name: str, method: Callable[..., Any],
                 apply: Callable[..., list[Any]], shown: Any) -> None:
        self._owner, self._name, self._method = owner, name, method
        self._apply, self._shown = apply, shown

    async def __call__(self, *args: Any, **kwargs: Any) -> list[Any]:
        with hints_as_sent():
            tools = await self._method(*args, **kwargs)
        return self._apply(list(tools), *args, **kwargs)

    def __repr__(self) -> str:
        return f"<{self._name} of {type(self._owner).__name__} through {self._shown!r}>"


def filter_method(owner: Any, name: str, apply: Callable[..., list[Any]], what: str,
                  shown: Any = None) -> Any:
    """``owner`` with its async method ``name`` replaced, on the instance, by a
    :class:`FilteredMethod` through ``apply`` (``shown`` in its repr, default
    ``apply``); TypeError naming ``what`` if it has no such method."""
    method = getattr(owner, name, None)
    if not callable(method):
        raise TypeError(f"{what}, got {type(owner).__name__}")
    setattr(owner, name, FilteredMethod(owner, name, method, apply,
                                        apply if shown is None else shown))
    return owner


#: A tool's annotations (or schema) as a mapping with camelCase keys.
mapping_or_none = as_mapping


def mcp_tool(server_id: str, tool: Any) -> Tool:
    """A :class:`Tool` from an MCP tool definition of either SDK generation."""
    return Tool.from_mcp(server_id, tool)


def tool_label(tool: Any) -> str:
    """A tool's name for a log line, whatever the object is (never raises)."""
    try:
        name = tool["name"] if isinstance(tool, Mapping) else tool.name
    except Exception:
        return f"<{type(tool).__name__}>"
    return name if isinstance(name, str) else repr(name)


def _warn_hidden(what: str, server_id: Any, where: str) -> None:
    logger.warning(
        "toolfilter_fast %s adapter: %s of server %r hidden because an error was raised",
        where, what, server_id, exc_info=True,
    )


def visible_fail_closed(
    tool_filter: Any,
    server_id: Any,
    tool: Any,
    to_tool: Callable[[Any], Tool],
    ctx: Callable[[], Any],
    *,
    where: str,
) -> bool:
    """Whether one framework tool is visible; False if anything inside raises.

    ``ctx`` is called here, inside the guard, so a failing ctx function hides
    the tool instead of reaching the framework. Only a real ``True`` from the
    filter shows the tool. BaseExceptions that are not Exceptions (cancellation,
    KeyboardInterrupt, SystemExit) propagate.
    """
    try:
        return tool_filter.visible(to_tool(tool), ctx()) is True
    except Exception:
        _warn_hidden(f"tool {tool_label(tool)!r}", server_id, where)
        return False


def _converted(server_id: Any, tools: Iterable[T], to_tool: Callable[[T], Tool],
               where: str) -> list[tuple[T, Tool]]:
    """Each framework tool with its :class:`Tool`; one that cannot be
    converted is left out, with a warning."""
    pairs: list[tuple[T, Tool]] = []
    for tool in tools:
        try:
            pairs.append((tool, to_tool(tool)))
        except Exception:
            _warn_hidden(f"tool {tool_label(tool)!r}", server_id, where)
    return pairs


def keep_visible(
    tool_filter: Any,
    server_id: Any,
    tools: Iterable[T],
    to_tool: Callable[[T], Tool],
    ctx: Callable[[], Any] | None,
    *,
    where: str,
    on_error: Callable[[], Any] | None = None,
) -> list[T]:
    """The framework tools that the filter keeps, in input order, decided in one
    ``filter(tools, ctx)`` call (or by ``static_visible`` alone when ``ctx`` is None).

    Fails closed at the smallest scope that failed: a tool that cannot be
    converted is hidden alone; a failing ctx function, or a filter call that
    raises, hides the whole list (and calls ``on_error``, if given). The
    filter must return the objects it was given (``ToolFilter`` and the
    reference do): a tool it returns a copy of counts as dropped.
    """
    pairs = _converted(server_id, tools, to_tool, where)
    if not pairs:
        return []
    converted = [converted for _, converted in pairs]
    try:
        if ctx is None:
            kept = [tool for tool in converted if tool_filter.static_visible(tool) is True]
        else:
            kept = tool_filter.filter(converted, ctx())
        kept_ids = {id(tool) for tool in kept}
    except Exception:
        _warn_hidden(f"every tool ({len(pairs)})", server_id, where)
        if on_error is not None:
            on_error()
        return []
    return [tool for tool, converted_tool in pairs if id(converted_tool) in kept_ids]


def keep_selected(
    policy: Any,
    server_id: Any,
    tools: Iterable[T],
    to_tool: Callable[[T], Tool],
    turn: Callable[[], tuple[Any, Any, Any]],
    *,
    where: str,
) -> tuple[list[T], Any]:
    """The framework tools that the policy keeps this turn, in input order, and
    the :class:`~toolfilter_fast.Selection` (None when it failed), decided in
    one ``select(tools, ctx, message, focus)`` call with ``turn()``'s values.

    Fails closed as :func:`keep_visible` does: a tool that cannot be converted
    is dropped alone, before the policy sees the list; a failing ``turn`` (the
    ctx, message or focus function) or a policy that raises drops the whole
    list. A tool is kept by its index in the selection, so the policy may
    return the tools it was given or not.
    """
    pairs = _converted(server_id, tools, to_tool, where)
    try:
        ctx, message, focus = turn()
        selection = policy.select([converted for _, converted in pairs], ctx, message, focus)
        kept = [tool for i, (tool, _) in enumerate(pairs) if selection.stage_of(i) is None]
    except Exception:
        _warn_hidden(f"every tool ({len(pairs)})", server_id, where)
        return [], None
    return kept, selection
