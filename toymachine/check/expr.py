"""The expected-value language of problem files: parsed and evaluated here, never by Python.

An ``expect:`` entry is a small expression over the problem's input arrays (``a @ b``,
``softmax(x)``, ``var(x)``, ``softmax(Q @ K.T) @ V``, ``max(x, axis=0)``), of bounded size
(``toymachine.limits``: its characters, its depth, the arrays it builds).

Grammar (precedence low → high; left-associative)::

    expr    := term (("+" | "-") term)*
    term    := unary (("*" | "/" | "@") unary)*
    unary   := "-" unary | postfix
    postfix := atom (".T")*
    atom    := NUMBER | NAME | CALL | "(" expr ")"
    CALL    := FUNCTION "(" expr ("," expr)* ("," KEYWORD "=" expr)* ")"

Names are the problem's inputs. Functions (numpy semantics, float64):

==============  =================================================================
``exp(x)``      elementwise eˣ; also ``log(x)``, ``sqrt(x)``
``max(x)``      the largest element; ``max(x, axis=k)`` along an axis; ``max(x, y)``
                the elementwise maximum
``sum(x)``      the sum of all elements; ``sum(x, axis=k)``
``mean(x)``     the mean; ``mean(x, axis=k)``
``var(x)``      the *sample* variance, ddof = 1 (divides by n − 1, as seed 000's
                Welford quiz does); ``var(x, ddof=0)`` divides by n; ``axis=k``
``softmax(x)``  e^(x − max) / Σ e^(x − max) along the last axis (``axis=k`` for another)
==============  =================================================================

``@`` is the matrix product, ``.T`` the transpose, ``*`` and ``/`` elementwise with numpy
broadcasting. Nothing else exists: an attribute (``x.shape``), an index (``x[0]``), a
string, ``**``, or any other name is refused with an error naming the token — the text is
tokenised and parsed here, so no Python code ever runs.
"""

from __future__ import annotations

__all__ = ["Node", "Num", "Name", "Unary", "Binary", "Transpose", "Call", "FUNCTIONS", "parse_expr",
           "names_in", "ExprError"]

import re
from dataclasses import dataclass
from typing import NoReturn

from ..errors import Words
from ..limits import LIMITS


class ExprError(Exception):
    """A bad expression: ``pos`` (0-based offset) and ``length`` locate the token."""

    def __init__(self, message: str, pos: int, length: int = 1, hint: Words | None = None):
        super().__init__(message)
        self.message, self.pos, self.length, self.hint = message, pos, max(1, length), hint


@dataclass(frozen=True)
class Num:
    value: float
    pos: int


@dataclass(frozen=True)
class Name:
    name: str
    pos: int


@dataclass(frozen=True)
class Unary:
    op: str
    operand: Node
    pos: int


@dataclass(frozen=True)
class Binary:
    op: str
    left: Node
    right: Node
    pos: int


@dataclass(frozen=True)
class Transpose:
    operand: Node
    pos: int


@dataclass(frozen=True)
class Call:
    function: str
    args: tuple[Node, ...]
    keywords: tuple[tuple[str, Node], ...]
    pos: int
    length: int


Node = Num | Name | Unary | Binary | Transpose | Call

# function → (positional arguments min, max; keywords allowed)
FUNCTIONS: dict[str, tuple[int, int, tuple[str, ...]]] = {
    "exp": (1, 1, ()), "log": (1, 1, ()), "sqrt": (1, 1, ()),
    "max": (1, 2, ("axis",)), "sum": (1, 1, ("axis",)), "mean": (1, 1, ("axis",)),
    "var": (1, 1, ("axis", "ddof")), "softmax": (1, 1, ("axis",)),
}

_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<tr>\.T\b)
  | (?P<attr>\.[A-Za-z_]\w*)
  | (?P<name>[A-Za-z_]\w*)
  | (?P<bad>\*\*|//|==|!=|<=|>=|->|[^\s\w.+\-*/@(),=]|\.)
  | (?P<op>[-+*/@(),=])
""", re.VERBOSE)


@dataclass(frozen=True)
class _Tok:
    kind: str  # num | name | tr | op | end
    text: str
    pos: int


def _tokens(text: str) -> list[_Tok]:
    """Tokens; text outside the language becomes a ``bad`` token that the parser refuses
    where it meets it (so ``__import__("os")`` is refused for ``__import__``, its first word)."""
    out: list[_Tok] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            out.append(_Tok("bad", text[pos], pos))
            pos += 1
            continue
        kind = m.lastgroup  # every alternative of _TOKEN is a named group
        if kind is not None and kind != "ws":
            out.append(_Tok(kind, m.group(kind), pos))
        pos = m.end()
    out.append(_Tok("end", "", len(text)))
    return out


def _refuse(t: _Tok):
    if t.kind == "attr":
        raise ExprError(f"attribute access '{t.text}' is not allowed", t.pos, len(t.text),
                        hint="only .T (transpose) may follow a value; " + _LANGUAGE)
    hint = _LANGUAGE
    if t.text == "[":
        hint = "indexing is not supported: the expected array's key can name a cell or block, e.g. `c[0][1]: a @ b`"
    raise ExprError(f"'{t.text}' is not part of the expression language", t.pos, len(t.text), hint=hint)


_LANGUAGE = ("expressions use the inputs' names, numbers, + - * / @, unary minus, .T and "
             + ", ".join(f"{f}()" for f in FUNCTIONS))


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.toks = _tokens(text)
        self.i = 0
        self.depth = 0  # open parentheses, calls and unary minuses (each costs Python frames)
        self.max_depth = int(LIMITS["expr_depth"].value())

    def nest(self, t: _Tok) -> None:
        self.depth += 1
        if self.depth > self.max_depth:
            raise ExprError(f"the expression nests deeper than {self.max_depth} levels", t.pos, len(t.text),
                            hint=LIMITS["expr_depth"].lift_hint())

    @property
    def tok(self) -> _Tok:
        return self.toks[self.i]

    def take(self) -> _Tok:
        self.i += 1
        return self.toks[self.i - 1]

    def expect(self, text: str, what: str) -> _Tok:
        if self.tok.text != text:
            self.unexpected(what)
        return self.take()

    def unexpected(self, what: str) -> NoReturn:
        t = self.tok
        if t.kind in ("bad", "attr"):
            _refuse(t)
        if t.kind == "end":
            raise ExprError(f"the expression ends where {what} should follow", t.pos)
        raise ExprError(f"unexpected '{t.text}' where {what} should be", t.pos, len(t.text))

    def parse(self) -> Node:
        if self.tok.kind == "end":
            raise ExprError("empty expression", 0, hint=_LANGUAGE)
        node = self.expr()
        if self.tok.kind != "end":
            self.unexpected("an operator")
        return node

    def expr(self) -> Node:
        node = self.term()
        while self.tok.text in ("+", "-"):
            op = self.take()
            node = Binary(op.text, node, self.term(), op.pos)
        return node

    def term(self) -> Node:
        node = self.unary()
        while self.tok.text in ("*", "/", "@"):
            op = self.take()
            node = Binary(op.text, node, self.unary(), op.pos)
        return node

    def unary(self) -> Node:
        if self.tok.text == "-":
            op = self.take()
            self.nest(op)
            node, self.depth = Unary("-", self.unary(), op.pos), self.depth - 1
            return node
        return self.postfix()

    def postfix(self) -> Node:
        node = self.atom()
        while self.tok.kind == "tr":
            node = Transpose(node, self.take().pos)
        return node

    def atom(self) -> Node:
        t = self.tok
        if t.kind == "num":
            self.take()
            return Num(float(t.text), t.pos)
        if t.text == "(":
            self.take()
            self.nest(t)
            node = self.expr()
            self.expect(")", "')'")
            self.depth -= 1
            return node
        if t.kind == "name":
            self.take()
            if self.tok.text == "(":
                self.nest(t)
                return self.call(t)  # call() closes the level
            if t.text in FUNCTIONS:
                raise ExprError(f"'{t.text}' is a function: call it, e.g. {t.text}(x)", t.pos, len(t.text))
            return Name(t.text, t.pos)
        self.unexpected("a value (a name, a number or '(')")

    def call(self, name: _Tok) -> Call:
        if name.text not in FUNCTIONS:
            raise ExprError(f"unknown function '{name.text}'", name.pos, len(name.text), hint=_LANGUAGE)
        lo, hi, allowed = FUNCTIONS[name.text]
        self.expect("(", "'('")
        args: list[Node] = []
        keywords: list[tuple[str, Node]] = []
        while True:
            if self.tok.kind == "name" and self.toks[self.i + 1].text == "=":
                key = self.take()
                self.take()
                if key.text not in allowed:
                    ok = f"it takes {', '.join(k + '=' for k in allowed)}" if allowed else "it takes no keywords"
                    raise ExprError(f"{name.text}() has no keyword '{key.text}'", key.pos, len(key.text), hint=ok)
                if any(k == key.text for k, _ in keywords):
                    raise ExprError(f"keyword '{key.text}' given twice", key.pos, len(key.text))
                keywords.append((key.text, self.expr()))
            else:
                if keywords:
                    self.unexpected("a keyword argument (positional arguments come first)")
                args.append(self.expr())
            if self.tok.text == ",":
                self.take()
                continue
            end = self.expect(")", "',' or ')'")
            break
        self.depth -= 1
        if not lo <= len(args) <= hi:
            want = str(lo) if lo == hi else f"{lo} or {hi}"
            raise ExprError(f"{name.text}() takes {want} argument{'s' if hi > 1 else ''}, got {len(args)}",
                            name.pos, end.pos + 1 - name.pos)
        if name.text == "max" and len(args) == 2 and keywords:
            raise ExprError("max(x, y) is elementwise and takes no axis", name.pos, end.pos + 1 - name.pos)
        return Call(name.text, tuple(args), tuple(keywords), name.pos, end.pos + 1 - name.pos)


def parse_expr(text: str) -> Node:
    """Parse an expression (raises ``ExprError`` with the offending token's position). Its length
    and depth are bounded (``limits.expr_chars``, ``limits.expr_depth``): a 1,000-term sum is a tree
    1,000 levels deep, which evaluation would walk recursively."""
    chars = LIMITS["expr_chars"]
    if len(text) > chars.value():
        raise ExprError(f"the expression is {len(text):,} characters long; the limit is {int(chars.value()):,}",
                        0, 1, hint=chars.lift_hint(len(text)))
    node = _Parser(text).parse()
    _check_depth(node)
    return node


def _children(node: Node) -> tuple:
    if isinstance(node, (Unary, Transpose)):
        return (node.operand,)
    return (node.left, node.right) if isinstance(node, Binary) else \
        node.args + tuple(v for _, v in node.keywords) if isinstance(node, Call) else ()


def _check_depth(root: Node) -> None:
    """Refuse a tree deeper than ``limits.expr_depth`` (walked without recursion)."""
    cap = int(LIMITS["expr_depth"].value())
    stack = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > cap:
            raise ExprError(f"the expression is more than {cap} operations deep (split a long sum with sum() "
                            f"or parentheses)", node.pos, 1, hint=LIMITS["expr_depth"].lift_hint())
        stack.extend((kid, depth + 1) for kid in _children(node))


def names_in(node: Node) -> list[Name]:
    """Every name the expression reads, in order."""
    if isinstance(node, Name):
        return [node]
    return [n for kid in _children(node) for n in names_in(kid)]
