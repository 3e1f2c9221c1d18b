"""The subset of the Common Expression Language the project's patterns use, spelled out.

A small parser and tree-walking evaluator written from the language definition
(github.com/google/cel-spec, ``doc/langdef.md``), so that the property tests and
the conformance run compare the core's engine with a second one, not with itself.
What it covers:

- literals: ``null``, ``true``/``false``, int (decimal and ``0x``), uint (``u``),
  double, strings and bytes (quotes, triple quotes, ``r`` raw and ``b`` prefixes,
  every escape of the definition), lists and maps;
- the operators, by the definition's precedence: ``?:``, ``||``, ``&&``, the
  relations (``== != < <= > >= in``), ``+ -``, ``* / %``, unary ``!`` and ``-``,
  field selection ``e.f``, indexing ``e[k]`` and calls;
- the macros ``has``, ``all``, ``exists``, ``exists_one``, ``map`` (two and three
  arguments) and ``filter``;
- the functions ``size``, ``contains``, ``startsWith``, ``endsWith``, ``matches``
  (RE2, with the ``google-re2`` package), the conversions ``int``, ``uint``,
  ``double``, ``string``, ``bytes``, ``bool``, ``dyn`` and ``type``, and the
  type names (``int``, ``string``, ...).

It has no type checker, timestamps, durations, protocol buffer messages,
optional values or extension libraries: an expression using them is refused
when it is compiled (a message literal, optional syntax) or is an error when it
runs (an unknown function: ``f(1) || true`` is true).

The rules that matter to a pattern, as the definition gives them:

- errors are values: ``a || b`` is true when either side is true (whichever side
  errs), false when both are false and an error otherwise; ``&&`` likewise with
  false; ``all`` and ``exists`` absorb errors the same way; every other
  operator and function passes an error on;
- equality is heterogeneous: values of different types are unequal (``true == 1``
  is false, ``null`` equals only ``null``), except that int, uint and double
  compare by their numeric value (``1 == 1.0``, ``2u in [1, 2]``); the ordering
  relations compare numbers across the three types too (an int or uint meets a
  double as a double, as the conformance tests have it), and are errors on NaN
  and on other mixed types;
- int and uint are 64-bit: an overflow (the smallest int ``% -1`` too), a
  division by zero, an index out of range (``[1, 2][-1]``), a missing map key or
  a wrong operand type (``"abc"[0]``, ``1 + 1u``) is an error;
- ``int("0x10")`` is an error: conversions from strings read decimal numbers only.

Evaluation has a step budget (:data:`STEP_BUDGET` steps: one per node evaluated
and per macro iteration, and one per element ``in`` or a concatenation walks,
plus one per 64 characters a string function reads). An evaluation that runs out raises
:class:`BudgetExhausted`, which no ``||`` absorbs: the pattern fails closed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "MAX_DEPTH",
    "MAX_SOURCE",
    "STEP_BUDGET",
    "BudgetExhausted",
    "CelError",
    "CelMap",
    "CelSyntaxError",
    "CelType",
    "Program",
    "UInt",
    "compile_cel",
    "equal",
    "type_name",
]

#: The longest source compiled, in bytes of UTF-8 (the core's limit too).
MAX_SOURCE = 100_000
#: The deepest tree compiled, counted in this parser's nodes.
MAX_DEPTH = 64
#: The steps one evaluation may take before it is stopped (fails closed).
STEP_BUDGET = 1_000_000

INT_MIN, INT_MAX = -(2**63), 2**63 - 1
UINT_MAX = 2**64 - 1


class CelSyntaxError(ValueError):
    """The source is not an expression of the supported subset."""


class CelError(Exception):
    """An error value: the result of an operation that has no value."""


class BudgetExhausted(Exception):
    """The evaluation took more than its step budget; not a CEL value, never absorbed."""


class UInt(int):
    """A CEL uint (a Python int in 0 .. 2**64-1, told apart from an int by its type)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"{int(self)}u"


@dataclass(frozen=True)
class CelType:
    """A type value, as ``type(1)`` or the identifier ``int`` gives it."""

    name: str


class CelMap:
    """A CEL map. Keys are bool, int, uint or string; int and uint keys of the same
    numeric value are one key (the equality of numbers is heterogeneous)."""

    __slots__ = ("entries",)

    def __init__(self) -> None:
        self.entries: dict[tuple[str, Any], tuple[Any, Any]] = {}

    def __len__(self) -> int:
        return len(self.entries)

    def keys(self) -> Iterator[Any]:
        return (key for key, _ in self.entries.values())

    def items(self) -> Iterator[tuple[Any, Any]]:
        return iter(self.entries.values())

    def __repr__(self) -> str:
        return "{" + ", ".join(f"{k!r}: {v!r}" for k, v in self.items()) + "}"


def _key_tag(key: Any) -> tuple[str, Any] | None:
    """A map key's identity: None for a value that is no key (a double counts when
    it is a whole number, as the heterogeneous lookups of the definition say)."""
    kind = type_name(key)
    if kind == "bool":
        return ("b", bool(key))
    if kind in ("int", "uint"):
        return ("n", int(key))
    if kind == "string":
        return ("s", key)
    if kind == "double" and math.isfinite(key) and key == int(key):
        return ("n", int(key))
    return None


def type_name(value: Any) -> str:
    """The CEL type of a value this module made."""
    if value is None:
        return "null_type"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, UInt):
        return "uint"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bytes):
        return "bytes"
    if isinstance(value, tuple):
        return "list"
    if isinstance(value, CelMap):
        return "map"
    if isinstance(value, CelType):
        return "type"
    raise TypeError(f"not a CEL value: {type(value).__name__}")


_NUMERIC = ("int", "uint", "double")


def equal(left: Any, right: Any) -> bool:
    """CEL's ``==``: heterogeneous; numbers compare by value, lists and maps by
    their elements, every other pair of different types is unequal."""
    lt, rt = type_name(left), type_name(right)
    if lt in _NUMERIC and rt in _NUMERIC:
        return _numeric_compare(left, right) == 0
    if lt != rt:
        return False
    if lt == "list":
        return len(left) == len(right) and all(
            equal(a, b) for a, b in zip(left, right, strict=True))
    if lt == "map":
        if len(left) != len(right):
            return False
        for tag, (_, value) in left.entries.items():
            other = right.entries.get(tag)
            if other is None or not equal(value, other[1]):
                return False
        return True
    return bool(left == right)


def _numeric_compare(left: Any, right: Any) -> int | None:
    """-1, 0 or 1 comparing two numbers by value; None if one is NaN. An int or a
    uint meets a double as a double (rounded), as the conformance tests have it:
    ``9223372036854775807 >= 9223372036854775808.0``; int and uint compare exactly."""
    if any(isinstance(side, float) and math.isnan(side) for side in (left, right)):
        return None
    if isinstance(left, float) or isinstance(right, float):
        left, right = float(left), float(right)
    return int(left > right) - int(left < right)


def _order(left: Any, right: Any) -> int:
    """The comparison of ``<`` and friends: an error for NaN (unordered, as cel-go
    and the cel crate have it), for types with no ordering and for two different
    non-numeric types."""
    lt, rt = type_name(left), type_name(right)
    if lt in _NUMERIC and rt in _NUMERIC:
        order = _numeric_compare(left, right)
        if order is None:
            raise CelError("NaN values cannot be ordered")
        return order
    if lt == rt and lt in ("bool", "string", "bytes"):
        return int(left > right) - int(left < right)
    raise CelError(f"no such overload: {lt} compared with {rt}")


# --- the lexer ------------------------------------------------------------------------

_RESERVED = frozenset(
    "as break const continue else for function if import let loop package namespace "
    "return var void while".split()
)

_TOKEN = re.compile(
    r"""
    (?P<space>[ \t\n\r\f]+|//[^\n]*)
  | (?P<float>[0-9]+\.[0-9]+(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+
              |\.[0-9]+(?:[eE][+-]?[0-9]+)?)
  | (?P<uint>(?:0x[0-9a-fA-F]+|[0-9]+)[uU])
  | (?P<int>0x[0-9a-fA-F]+|[0-9]+)
  | (?P<string>(?:[rR]|[bB][rR]?)?(?:\"\"\"|'''|\"|'))
  | (?P<ident>[_a-zA-Z][_a-zA-Z0-9]*)
  | (?P<op>==|!=|<=|>=|&&|\|\||[-+*/%!<>?:.,()\[\]{}])
    """,
    re.VERBOSE,
)

_SIMPLE_ESCAPES = {
    "a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v",
    "\\": "\\", "?": "?", '"': '"', "'": "'", "`": "`",
}


@dataclass
class _Token:
    kind: str
    text: str
    value: Any
    at: int


def _read_string(source: str, at: int, prefix_and_quote: str) -> tuple[Any, int]:
    """A string or bytes literal starting at ``at``: its value and where it ends."""
    quote_at = len(prefix_and_quote.rstrip("\"'"))
    prefix = prefix_and_quote[:quote_at].lower()
    quote = prefix_and_quote[quote_at:]
    raw, is_bytes = "r" in prefix, "b" in prefix
    i = at + len(prefix_and_quote)
    out: list[str | int] = []  # characters; ints are bytes (from \x and octal in bytes)
    while True:
        if i >= len(source):
            raise CelSyntaxError(f"a string literal at {at} is not closed")
        if source.startswith(quote, i):
            i += len(quote)
            break
        char = source[i]
        if len(quote) == 1 and char in "\r\n":
            raise CelSyntaxError(f"a string literal at {at} runs past the end of its line")
        if char != "\\" or raw:  # a raw literal has no escapes at all
            out.append(char)
            i += 1
            continue
        if i + 1 >= len(source):
            raise CelSyntaxError(f"a string literal at {at} ends in a backslash")
        esc = source[i + 1]
        if esc in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[esc])
            i += 2
        elif esc in "xX":
            digits = source[i + 2 : i + 4]
            if not re.fullmatch(r"[0-9a-fA-F]{2}", digits):
                raise CelSyntaxError(f"a bad \\x escape at {i}")
            out.append(int(digits, 16) if is_bytes else chr(int(digits, 16)))
            i += 4
        elif esc in "uU":
            width = 4 if esc == "u" else 8
            digits = source[i + 2 : i + 2 + width]
            if is_bytes or not re.fullmatch(f"[0-9a-fA-F]{{{width}}}", digits):
                raise CelSyntaxError(f"a bad \\{esc} escape at {i}")
            code = int(digits, 16)
            if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
                raise CelSyntaxError(f"\\{esc}{digits} is not a Unicode scalar value")
            out.append(chr(code))
            i += 2 + width
        elif esc in "0123":
            digits = source[i + 1 : i + 4]
            if not re.fullmatch(r"[0-3][0-7]{2}", digits):
                raise CelSyntaxError(f"a bad octal escape at {i}")
            out.append(int(digits, 8) if is_bytes else chr(int(digits, 8)))
            i += 4
        else:
            raise CelSyntaxError(f"an unknown escape \\{esc} at {i}")
    if is_bytes:
        data = bytearray()
        for part in out:
            data += bytes([part]) if isinstance(part, int) else part.encode("utf-8")
        return bytes(data), i
    return "".join(str(part) for part in out), i


def _tokens(source: str) -> list[_Token]:
    found: list[_Token] = []
    i = 0
    while i < len(source):
        match = _TOKEN.match(source, i)
        if match is None:
            raise CelSyntaxError(f"unexpected character {source[i]!r} at {i}")
        kind = match.lastgroup or ""
        text = match.group()
        if kind == "space":
            i = match.end()
            continue
        if kind == "string":
            literal, end = _read_string(source, i, text)
            found.append(_Token("literal", source[i:end], literal, i))
            i = end
            continue
        value: Any = None
        if kind == "int":
            value = int(text, 16) if text.startswith("0x") else int(text)
        elif kind == "uint":
            digits = text[:-1]
            value = int(digits, 16) if digits.startswith("0x") else int(digits)
            if value > UINT_MAX:
                raise CelSyntaxError(f"the uint literal {text} is out of range")
            value = UInt(value)
            kind = "literal"
        elif kind == "float":
            value = float(text)
            kind = "literal"
        elif kind == "ident" and text in ("true", "false", "null"):
            value = {"true": True, "false": False, "null": None}[text]
            kind = "literal"
        found.append(_Token(kind, text, value, i))
        i = match.end()
    found.append(_Token("end", "", None, len(source)))
    return found


# --- the tree ---------------------------------------------------------------------------


@dataclass
class Node:
    """One node: ``op`` names it; ``args`` are its children or data."""

    op: str
    args: tuple[Any, ...]


_MACROS = {"all": 2, "exists": 2, "exists_one": 2, "filter": 2}
_GLOBALS = frozenset(
    ["size", "int", "uint", "double", "string", "bytes", "bool", "dyn", "type", "matches"]
)
_MEMBERS = frozenset(["size", "contains", "startsWith", "endsWith", "matches"])
_TYPE_NAMES = frozenset(
    ["int", "uint", "double", "bool", "string", "bytes", "list", "map", "null_type", "type"]
)


class _Parser:
    def __init__(self, source: str) -> None:
        self.tokens = _tokens(source)
        self.pos = 0
        self.depth = 0

    def peek(self, offset: int = 0) -> _Token:
        return self.tokens[min(self.pos + offset, len(self.tokens) - 1)]

    def at(self, *texts: str) -> bool:
        token = self.peek()
        return token.kind == "op" and token.text in texts

    def take(self) -> _Token:
        token = self.peek()
        self.pos += 1
        return token

    def expect(self, text: str) -> None:
        token = self.take()
        if token.kind != "op" or token.text != text:
            shown = token.text or "the end"
            raise CelSyntaxError(f"expected {text!r} at {token.at}, found {shown!r}")

    def enter(self) -> None:
        """One more level of the parser's recursion (brackets, operands of a unary
        operator, a conditional's branches): refused past the limit before Python's
        own stack is at risk."""
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise CelSyntaxError(f"the expression nests more than {MAX_DEPTH} levels deep")

    def parse(self) -> Node:
        node = self.expr()
        if self.peek().kind != "end":
            token = self.peek()
            raise CelSyntaxError(f"unexpected {token.text!r} at {token.at}")
        return node

    def expr(self) -> Node:
        self.enter()
        cond = self.binary(0)
        if self.at("?"):
            self.take()
            yes = self.binary(0)
            self.expect(":")
            no = self.expr()
            cond = Node("?:", (cond, yes, no))
        self.depth -= 1
        return cond

    _LEVELS: tuple[tuple[str, ...], ...] = (
        ("||",), ("&&",), ("==", "!=", "<", "<=", ">", ">=", "in"), ("+", "-"), ("*", "/", "%"),
    )

    def binary(self, level: int) -> Node:
        if level == len(self._LEVELS):
            return self.unary()
        ops = self._LEVELS[level]
        left = self.binary(level + 1)
        while True:
            token = self.peek()
            is_op = (token.kind == "op" and token.text in ops) or (
                token.kind == "ident" and token.text == "in" and "in" in ops)
            if not is_op:
                return left
            # A chain of operators is parsed in a loop: the tree it makes is as
            # deep as it is long, which compile_cel measures after parsing.
            self.take()
            right = self.binary(level + 1)
            left = Node(token.text, (left, right))

    def unary(self) -> Node:
        # The grammar's Unary: a run of `!` or a run of `-`, then a Member (`-!x` and
        # `!-x` are not expressions). Each operator of the run applies: `!!x` is an
        # error for a string x (cel-go's parser drops pairs instead).
        if not self.at("!", "-"):
            return self.member()
        op = self.take().text
        count = 1
        while self.at(op):
            self.take()
            count += 1
        node: Node
        # A minus before a number literal is the literal's sign: it lets the
        # smallest int be written, as -9223372036854775808.
        token = self.peek()
        if op == "-" and token.kind == "int" and self.peek(1).text not in (".", "["):
            self.take()
            if -token.value < INT_MIN:
                raise CelSyntaxError(f"the int literal -{token.text} is out of range")
            node, count = Node("lit", (-token.value,)), count - 1
        elif (op == "-" and token.kind == "literal" and isinstance(token.value, float)
              and self.peek(1).text not in (".", "[")):
            self.take()
            node, count = Node("lit", (-token.value,)), count - 1
        else:
            node = self.member()
        for _ in range(count):
            node = Node(op, (node,))
        return node

    def member(self) -> Node:
        node = self.primary()
        while self.at(".", "["):  # a loop too, measured after parsing
            if self.take().text == ".":
                name = self.take()
                if name.kind != "ident":
                    raise CelSyntaxError(f"expected a field name at {name.at}")
                if self.at("("):
                    node = self.call(name.text, node)
                else:
                    node = Node("select", (node, name.text))
            else:
                index = self.expr()
                self.expect("]")
                node = Node("index", (node, index))
        return node

    def arguments(self, closing: str) -> list[Node]:
        """A call's arguments: expressions between commas, none after the last."""
        items: list[Node] = []
        if not self.at(closing):
            items.append(self.expr())
            while self.at(","):
                self.take()
                items.append(self.expr())
        self.expect(closing)
        return items

    def elements(self, closing: str, entry: Callable[[], Any]) -> list[Any]:
        """A list's elements or a map's entries: the grammar allows one comma after
        the last, and a lone comma (``[,]`` is an empty list)."""
        items: list[Any] = []
        if not self.at(closing, ","):
            items.append(entry())
            while self.at(",") and self.peek(1).text != closing:
                self.take()
                items.append(entry())
        if self.at(","):
            self.take()
        self.expect(closing)
        return items

    def map_entry(self) -> tuple[Node, Node]:
        key = self.expr()
        self.expect(":")
        return key, self.expr()

    def call(self, name: str, target: Node | None) -> Node:
        self.expect("(")
        args = self.arguments(")")
        if target is None and name == "has":
            if len(args) != 1 or args[0].op != "select":
                raise CelSyntaxError("has() takes one field selection, as has(e.f)")
            return Node("has", (args[0].args[0], args[0].args[1]))
        if target is not None and (name in _MACROS or name == "map"):
            arity = (2, 3) if name == "map" else (_MACROS[name],)
            if len(args) in arity:
                if args[0].op != "ident":
                    raise CelSyntaxError(f"{name}() takes a variable name first")
                return Node("macro", (name, target, args[0].args[0], *args[1:]))
            raise CelSyntaxError(f"{name}() takes {' or '.join(map(str, arity))} arguments")
        # An unknown function is an error when it runs, not when it compiles:
        # ``f(1) || true`` is true.
        return Node("call", (name, target, tuple(args)))

    def primary(self) -> Node:
        token = self.take()
        if token.kind == "literal":
            return Node("lit", (token.value,))
        if token.kind == "int":
            if token.value > INT_MAX:
                raise CelSyntaxError(f"the int literal {token.text} is out of range")
            return Node("lit", (token.value,))
        if token.kind == "op" and token.text == ".":
            token = self.take()  # a leading dot: the name in the root scope
            if token.kind != "ident":
                raise CelSyntaxError(f"expected a name at {token.at}")
        if token.kind == "ident":
            if token.text in _RESERVED or token.text == "in":
                raise CelSyntaxError(f"{token.text!r} is a reserved word")
            if self.at("("):
                return self.call(token.text, None)
            if self.at("{"):
                raise CelSyntaxError("message literals are not supported")
            return Node("ident", (token.text,))
        if token.kind == "op" and token.text == "(":
            inner = self.expr()
            self.expect(")")
            return inner
        if token.kind == "op" and token.text == "[":
            self.enter()
            items = self.elements("]", self.expr)
            self.depth -= 1
            return Node("list", tuple(items))
        if token.kind == "op" and token.text == "{":
            self.enter()
            entries = self.elements("}", self.map_entry)
            self.depth -= 1
            return Node("map", tuple(entries))
        raise CelSyntaxError(f"unexpected {token.text or 'end'!r} at {token.at}")


def _tree_depth(root: Node) -> int:
    deepest, pending = 0, [(root, 1)]
    while pending:
        node, level = pending.pop()
        deepest = max(deepest, level)
        for child in _children(node):
            pending.append((child, level + 1))
    return deepest


def _children(node: Node) -> Iterator[Node]:
    for arg in node.args:
        if isinstance(arg, Node):
            yield arg
        elif isinstance(arg, tuple):
            for item in arg:
                if isinstance(item, Node):
                    yield item
                elif isinstance(item, tuple):
                    yield from (x for x in item if isinstance(x, Node))


# --- evaluation -------------------------------------------------------------------------


class _Run:
    """One evaluation: its variables and its remaining steps."""

    def __init__(self, variables: Mapping[str, Any], budget: int) -> None:
        self.variables = variables
        self.steps = budget

    def charge(self, steps: int = 1) -> None:
        self.steps -= steps
        if self.steps < 0:
            raise BudgetExhausted("the expression ran out of its step budget")


def _check_int(value: int) -> int:
    if not INT_MIN <= value <= INT_MAX:
        raise CelError("int overflow")
    return value


def _check_uint(value: int) -> UInt:
    if not 0 <= value <= UINT_MAX:
        raise CelError("uint overflow")
    return UInt(value)


def _truncated_div(a: int, b: int) -> int:
    quotient = abs(a) // abs(b)
    return quotient if (a < 0) == (b < 0) else -quotient


def _arith(op: str, left: Any, right: Any, run: _Run) -> Any:
    lt, rt = type_name(left), type_name(right)
    if lt != rt:
        raise CelError(f"no such overload: {lt} {op} {rt}")
    if lt in ("int", "uint"):
        check = _check_int if lt == "int" else _check_uint
        a, b = int(left), int(right)
        if op == "+":
            return check(a + b)
        if op == "-":
            return check(a - b)
        if op == "*":
            return check(a * b)
        if b == 0:
            raise CelError("division by zero" if op == "/" else "modulus by zero")
        # The quotient's overflow is the remainder's too: the smallest int
        # % -1 is an error, as in cel-go and the cel crate.
        quotient = check(_truncated_div(a, b))
        return quotient if op == "/" else check(a - b * quotient)
    if lt == "double":
        if op == "+":
            return left + right
        if op == "-":
            return left - right
        if op == "*":
            return left * right
        if op == "/":
            if right == 0:
                if math.isnan(left) or left == 0:
                    return math.nan
                return math.copysign(math.inf, left) * math.copysign(1.0, right)
            return left / right
        raise CelError("no such overload: double % double")
    if op == "+" and lt in ("string", "bytes", "list"):
        run.charge(len(left) + len(right))
        return left + right
    raise CelError(f"no such overload: {lt} {op} {rt}")


def _as_index(key: Any) -> int:
    kind = type_name(key)
    if kind in ("int", "uint"):
        return int(key)
    if kind == "double" and math.isfinite(key) and key == int(key):
        return int(key)
    raise CelError(f"a list index must be a whole number, not a {kind}")


def _index(container: Any, key: Any) -> Any:
    kind = type_name(container)
    if kind == "list":
        at = _as_index(key)
        if not 0 <= at < len(container):
            raise CelError(f"index {at} out of range for a list of {len(container)}")
        return container[at]
    if kind == "map":
        tag = _key_tag(key)
        if tag is None:
            raise CelError(f"a map key cannot be a {type_name(key)}")
        found = container.entries.get(tag)
        if found is None:
            raise CelError(f"no such key: {key!r}")
        return found[1]
    raise CelError(f"no such overload: a {kind} indexed")


def _contains(container: Any, item: Any, run: _Run) -> bool:
    kind = type_name(container)
    if kind == "list":
        run.charge(len(container))
        return any(equal(item, element) for element in container)
    if kind == "map":
        tag = _key_tag(item)
        return tag is not None and tag in container.entries
    raise CelError(f"no such overload: in a {kind}")


def _need(value: Any, kind: str, what: str) -> Any:
    if type_name(value) != kind:
        raise CelError(f"no such overload: {what} of a {type_name(value)}")
    return value


_RE2_OPTIONS: Any = None


def _regex(pattern: str) -> Any:
    """The pattern compiled by RE2 (google-re2), as CEL specifies; an error value
    when RE2 refuses it."""
    global _RE2_OPTIONS
    try:
        # google-re2: imported when a pattern first calls matches().
        import re2  # type: ignore[import-untyped,unused-ignore]
    except ImportError as err:  # pragma: no cover - the reference extra installs it
        raise ImportError(
            "the reference runs matches() with RE2: pip install 'toolfilter_fast[reference]' "
            "(the google-re2 package)") from err

    if _RE2_OPTIONS is None:
        options = re2.Options()
        options.log_errors = False
        _RE2_OPTIONS = options
    found = _REGEXES.get(pattern)
    if found is None:
        try:
            found = re2.compile(pattern, _RE2_OPTIONS)
        except re2.error as err:
            raise CelError(f"invalid regular expression {pattern!r}: {err}") from None
        if len(_REGEXES) > 256:
            _REGEXES.clear()
        _REGEXES[pattern] = found
    return found


_REGEXES: dict[str, Any] = {}


_DECIMAL_INT = re.compile(r"[+-]?[0-9]+")
_DECIMAL_UINT = re.compile(r"\+?[0-9]+")
_DECIMAL_DOUBLE = re.compile(
    r"[+-]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf(?:inity)?|nan)",
    re.IGNORECASE,
)
_BOOL_TEXT = {"true": True, "True": True, "TRUE": True, "t": True, "1": True,
              "false": False, "False": False, "FALSE": False, "f": False, "0": False}


def _double_text(value: float) -> str:
    """A double as string(): the shortest text that reads back as the same double."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    text = repr(value)
    if text.endswith(".0"):
        text = text[:-2]
    if "e" in text:
        mantissa, _, exponent = text.partition("e")
        sign = exponent[0] if exponent[0] in "+-" else "+"
        digits = exponent.lstrip("+-").rjust(2, "0")
        mantissa = mantissa[:-2] if mantissa.endswith(".0") else mantissa
        text = f"{mantissa}e{sign}{digits}"
    return text


def _convert(name: str, value: Any) -> Any:
    kind = type_name(value)
    if name == "dyn":
        return value
    if name == "type":
        return CelType(kind)
    if name == "int":
        if kind in ("int", "uint"):
            return _check_int(int(value))
        if kind == "double":
            # Doubles at or past 2**63 (and NaN) are out of the int range.
            if not (math.isfinite(value) and -(2.0**63) < value < 2.0**63):
                raise CelError("double out of the int range")
            return _check_int(int(value))
        if kind == "string" and _DECIMAL_INT.fullmatch(value):
            return _check_int(int(value))
        raise CelError(f"int() of a {kind}: {value!r}")
    if name == "uint":
        if kind in ("int", "uint"):
            return _check_uint(int(value))
        if kind == "double":
            # A negative double is out of range, even one that truncates to 0.
            if not (math.isfinite(value) and 0.0 <= value < 2.0**64):
                raise CelError("double out of the uint range")
            return _check_uint(int(value))
        if kind == "string" and _DECIMAL_UINT.fullmatch(value):
            return _check_uint(int(value))
        raise CelError(f"uint() of a {kind}: {value!r}")
    if name == "double":
        if kind in ("int", "uint", "double"):
            return float(value)
        if kind == "string" and _DECIMAL_DOUBLE.fullmatch(value):
            return float(value)
        raise CelError(f"double() of a {kind}: {value!r}")
    if name == "string":
        if kind == "string":
            return value
        if kind == "bool":
            return "true" if value else "false"
        if kind in ("int", "uint"):
            return str(int(value))
        if kind == "double":
            return _double_text(value)
        if kind == "bytes":
            try:
                return value.decode("utf-8")
            except UnicodeDecodeError:
                raise CelError("string() of bytes that are not UTF-8") from None
        raise CelError(f"string() of a {kind}")
    if name == "bytes":
        if kind == "bytes":
            return value
        if kind == "string":
            return value.encode("utf-8")
        raise CelError(f"bytes() of a {kind}")
    if name == "bool":
        if kind == "bool":
            return value
        if kind == "string" and value in _BOOL_TEXT:
            return _BOOL_TEXT[value]
        raise CelError(f"bool() of a {kind}: {value!r}")
    raise CelError(f"undeclared reference to the function {name!r}")


def _call(name: str, target: Any, args: list[Any], run: _Run) -> Any:
    if name not in (_GLOBALS if target is _NO_TARGET else _MEMBERS):
        raise CelError(f"undeclared reference to the function {name!r}")
    if target is _NO_TARGET and name != "matches":
        if len(args) != 1:
            raise CelError(f"{name}() takes one argument")
        if name == "size":
            target, args = args[0], []
        else:
            return _convert(name, args[0])
    if target is _NO_TARGET:  # matches(text, regex)
        if len(args) != 2:
            raise CelError("matches() takes two arguments")
        target, args = args[0], args[1:]
    if name == "size":
        if args:
            raise CelError("size() takes no argument")
        kind = type_name(target)
        if kind not in ("string", "bytes", "list", "map"):
            raise CelError(f"no such overload: size of a {kind}")
        return len(target)
    if len(args) != 1:
        raise CelError(f"{name}() takes one argument")
    text = _need(target, "string", name)
    other = _need(args[0], "string", name)
    run.charge(1 + len(text) // 64)
    if name == "contains":
        return other in text
    if name == "startsWith":
        return text.startswith(other)
    if name == "endsWith":
        return text.endswith(other)
    return _regex(other).search(text) is not None


_NO_TARGET = object()


class _Evaluator:
    def __init__(self, run: _Run) -> None:
        self.run = run

    def value(self, node: Node, scope: dict[str, Any]) -> Any:
        """The node's value; raises CelError for an error value."""
        self.run.charge()
        op, args = node.op, node.args
        if op == "lit":
            return args[0]
        if op == "ident":
            name = args[0]
            if name in scope:
                return scope[name]
            if name in self.run.variables:
                return self.run.variables[name]
            if name in _TYPE_NAMES:
                return CelType(name)
            raise CelError(f"undeclared reference to {name!r}")
        if op in ("||", "&&"):
            return self.logic(op, args[0], args[1], scope)
        if op == "?:":
            cond = self.value(args[0], scope)
            if type_name(cond) != "bool":
                raise CelError(f"a condition must be a bool, not a {type_name(cond)}")
            return self.value(args[1] if cond else args[2], scope)
        if op == "!":
            return not _need(self.value(args[0], scope), "bool", "!")
        if op == "-" and len(args) == 1:
            operand = self.value(args[0], scope)
            kind = type_name(operand)
            if kind == "int":
                return _check_int(-operand)
            if kind == "double":
                return -operand
            raise CelError(f"no such overload: -{kind}")
        if op == "select":
            target = self.value(args[0], scope)
            if type_name(target) != "map":
                raise CelError(f"no such field {args[1]!r} on a {type_name(target)}")
            return _index(target, args[1])
        if op == "has":
            target = self.value(args[0], scope)
            if type_name(target) != "map":
                raise CelError(f"has() of a field of a {type_name(target)}")
            return ("s", args[1]) in target.entries
        if op == "index":
            return _index(self.value(args[0], scope), self.value(args[1], scope))
        if op == "list":
            return tuple(self.value(item, scope) for item in args)
        if op == "map":
            result = CelMap()
            for key_node, value_node in args:
                key = self.value(key_node, scope)
                tag = _key_tag(key)
                if tag is None or type_name(key) == "double":
                    raise CelError(f"a map key cannot be a {type_name(key)}")
                if tag in result.entries:
                    raise CelError(f"a map literal repeats the key {key!r}")
                result.entries[tag] = (key, self.value(value_node, scope))
            return result
        if op == "call":
            name, target_node, arg_nodes = args
            target = _NO_TARGET if target_node is None else self.value(target_node, scope)
            values = [self.value(arg, scope) for arg in arg_nodes]
            return _call(name, target, values, self.run)
        if op == "macro":
            return self.macro(args, scope)
        left = self.value(args[0], scope)
        right = self.value(args[1], scope)
        if op == "==":
            return equal(left, right)
        if op == "!=":
            return not equal(left, right)
        if op == "in":
            return _contains(right, left, self.run)
        if op in ("<", "<=", ">", ">="):
            order = _order(left, right)
            return {"<": order < 0, "<=": order <= 0, ">": order > 0, ">=": order >= 0}[op]
        return _arith(op, left, right, self.run)

    def outcome(self, node: Node, scope: dict[str, Any]) -> Any:
        """The node's value, or the CelError it is."""
        try:
            return self.value(node, scope)
        except CelError as err:
            return err

    def logic(self, op: str, left_node: Node, right_node: Node, scope: dict[str, Any]) -> Any:
        # Commutative: either side decides; an error matters only if none does.
        decisive = op == "||"
        left = self.outcome(left_node, scope)
        if left is decisive:
            return decisive
        result = _combine(decisive, left, self.outcome(right_node, scope))
        if isinstance(result, CelError):
            raise result
        return result

    def macro(self, args: tuple[Any, ...], scope: dict[str, Any]) -> Any:
        name, range_node, var = args[0], args[1], args[2]
        target = self.value(range_node, scope)
        kind = type_name(target)
        if kind == "list":
            elements = list(target)
        elif kind == "map":
            elements = list(target.keys())
        else:
            raise CelError(f"{name}() over a {kind}")
        inner = dict(scope)

        def at(element: Any, node: Node) -> Any:
            self.run.charge()
            inner[var] = element
            return self.value(node, inner)

        if name in ("all", "exists"):
            decisive = name == "exists"
            accu: Any = not decisive
            for element in elements:
                if accu is decisive:
                    break
                self.run.charge()
                inner[var] = element
                accu = _combine(decisive, accu, self.outcome(args[3], inner))
            if isinstance(accu, CelError):
                raise accu
            return accu
        if name == "exists_one":
            count = 0
            for element in elements:
                if _need(at(element, args[3]), "bool", "exists_one"):
                    count += 1
            return count == 1
        if name == "filter":
            return tuple(e for e in elements if _need(at(e, args[3]), "bool", "filter"))
        # map(x, t) or map(x, p, t)
        out = []
        for element in elements:
            if len(args) == 5 and not _need(at(element, args[3]), "bool", "map"):
                continue
            out.append(at(element, args[-1]))
        return tuple(out)


def _combine(decisive: bool, left: Any, right: Any) -> Any:
    """``||`` (decisive True) or ``&&`` (decisive False) of two outcomes (values or
    errors): the decisive value wins whichever side it is on."""
    if left is decisive or right is decisive:
        return decisive
    for side in (left, right):
        if isinstance(side, CelError):
            return side
        if type_name(side) != "bool":
            operator = "||" if decisive else "&&"
            return CelError(f"no such overload: {operator} of a {type_name(side)}")
    return not decisive


class Program:
    """A compiled expression."""

    def __init__(self, source: str, tree: Node) -> None:
        self.source = source
        self.tree = tree

    def mentions(self, name: str) -> bool:
        """Whether the identifier ``name`` stands anywhere as a variable (a macro's
        own variable of that name too: a pattern that might read ``ctx`` is dynamic)."""
        pending = [self.tree]
        while pending:
            node = pending.pop()
            if node.op == "ident" and node.args[0] == name:
                return True
            if node.op == "macro" and node.args[2] == name:
                return True
            pending.extend(_children(node))
        return False

    def evaluate(self, variables: Mapping[str, Any], budget: int | None = None) -> Any:
        """The expression's value with ``variables`` bound (values of this module:
        tuples for lists, :class:`CelMap`, :class:`UInt`, ...); raises CelError for an
        error value and BudgetExhausted when it takes more than ``budget`` steps."""
        run = _Run(variables, STEP_BUDGET if budget is None else budget)
        return _Evaluator(run).value(self.tree, {})


def compile_cel(source: str) -> Program:
    """Parses ``source``; CelSyntaxError when it is not an expression of the subset."""
    if len(source.encode("utf-8", "surrogatepass")) > MAX_SOURCE:
        raise CelSyntaxError(f"the expression is longer than {MAX_SOURCE} bytes")
    if any("\ud800" <= c <= "\udfff" for c in source):
        raise CelSyntaxError("the expression holds a lone surrogate")
    tree = _Parser(source).parse()
    depth = _tree_depth(tree)
    if depth > MAX_DEPTH:
        raise CelSyntaxError(f"the expression nests {depth} levels deep (at most {MAX_DEPTH})")
    _check_literal_patterns(tree)
    return Program(source, tree)


def _check_literal_patterns(root: Node) -> None:
    """A ``matches()`` whose pattern is a string literal is compiled with the
    expression: a pattern RE2 refuses is a syntax error then, not an error value
    at every run (the core does the same)."""
    pending = [root]
    while pending:
        node = pending.pop()
        if node.op == "call" and node.args[0] == "matches":
            _name, target, args = node.args
            pattern = args[0] if target is not None else (args[1] if len(args) > 1 else None)
            if pattern is not None and pattern.op == "lit" and isinstance(pattern.args[0], str):
                try:
                    _regex(pattern.args[0])
                except CelError as err:
                    raise CelSyntaxError(f"matches: {err}") from None
        pending.extend(_children(node))

