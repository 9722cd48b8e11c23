"""Metric expressions: what a cell of a suite's report table shows.

A cell is a small expression evaluated over one run's results (its
``summary.json`` and, for the interval forms, its tables). It is parsed by the
tokenizer and recursive-descent parser below, never by ``eval``: the only
things an expression can do are the functions listed here.

Examples::

    jain                                     Jain's fairness index the core computed
    goodput_mbps(flow="cubic")               one flow's goodput (Mbit/s)
    mean(goodput_mbps, flows="cubic*")       mean over the flows whose ids match a glob
    sum(goodput_mbps())                      total goodput of every TCP flow
    ratio(goodput_mbps, "short", "long")     goodput(short) / goodput(long)
    share(goodput_mbps, "short")             goodput(short) / total goodput of all flows
    rtt_p99_ms(probe="ping")                 a probe's 99th percentile RTT (ms)
    sojourn_p99_ms(link="bottleneck")        a link's 99th percentile queue delay (ms)
    utilization(link="bottleneck") * 100     arithmetic: + - * / and parentheses
    mean_goodput(flow="x", from="20s", to="40s")   goodput of x between 20 s and 40 s

Grammar::

    expr  := term (("+" | "-") term)*
    term  := unary (("*" | "/") unary)*
    unary := "-" unary | atom
    atom  := NUMBER | STRING | NAME | NAME "(" [arg ("," arg)* [","]] ")" | "(" expr ")"
    arg   := NAME "=" expr | expr

Strings are in double or single quotes; numbers are decimal (``1``, ``0.5``,
``1e-3``).

Values
------
A metric gives one number per selected flow, link or probe (a list). A cell
must come to one number: a one-element list counts as its element, an empty
list (nothing selected had samples) shows as "no data", and a list of several
is an error that asks for an aggregate such as ``mean(...)``.

Summary metrics
---------------
Any numeric field of an entry of ``summary.json``'s ``flows``, ``links`` or
``probes``, with nested statistics flattened as in :attr:`Result.flows`
(``rtt_ms.p99`` is ``rtt_p99_ms``, ``sojourn_ms.max`` is ``sojourn_max_ms``):

- flows: ``goodput_mbps``, ``rtt_mean_ms``, ``rtt_p50_ms``, ``rtt_p95_ms``,
  ``rtt_p99_ms``, ``retransmits``, ``rto_count``, ``ce_marks``,
  ``delivered_bytes``, ...
- links: ``rate_mbps`` (the line rate), ``capacity_mbps`` (what limits the
  link: the slower of the line rate and its qdisc's shaper, such as Cake's
  bandwidth or an HTB rate), ``rate_mean_mbps`` (the capacity's mean after
  the warm-up, following a schedule), ``utilization`` (0..1, bits sent over
  that capacity), ``sojourn_mean_ms``, ``sojourn_p50_ms``, ``sojourn_p99_ms``,
  ``sojourn_max_ms``, ``drops``, ``marks``, ``lost``, ... (a stage that only
  delays, such as a netem ``delay`` without a rate, has ``pure_delay``
  true: its sojourn is that delay, not a queue's)
- probes: ``rtt_mean_ms``, ``rtt_p50_ms``, ``rtt_p95_ms``, ``rtt_p99_ms``,
  ``min_ms``, ``max_ms``, ``sent``, ``received``.

``METRIC(flow="SEL")``, ``METRIC(link="SEL")`` and ``METRIC(probe="SEL")``
select by id (``flows=``, ``links=``, ``probes=`` are the same); a positional
``METRIC("SEL")`` looks in the flows, links and probes that have the metric, in
that order, for ids that match; ``METRIC()`` or a bare ``METRIC`` selects every
entry that has it; so does the selector ``"*"`` (with no entries it gives
no data rather than an error). A selector with ``*``, ``?`` or ``[`` is a glob; any other
selector matches the id exactly or, if there is no such id, the copies a
``count`` made of it (``cubic`` matches ``cubic.1``, ``cubic.2``, ...). A
plain selector that matches nothing is an error that lists the ids; a glob
that matches nothing gives no data (a flow the sweep left out of this run). Statistics
without samples (null in summary.json) are left out.

A bare name that is a top-level number of ``summary.json`` is that number:
``jain``, ``duration_s``, ``warmup_s``, ``seed``. In a suite's report, a bare
name that is one of the suite's axes with a numeric value is the run's value
on it: ``sum(mean_goodput(from="5s")) / bw`` with an axis ``bw`` in Mbit/s.

Functions
---------
- ``mean``, ``median``, ``sum``, ``min``, ``max``, ``count``: over their
  arguments' values (``max(a, b)`` works on numbers too). ``AGG(METRIC, flows=SEL)``
  is short for ``AGG(METRIC(flows=SEL))``.
- ``jain(X)``: Jain's fairness index (sum x)^2 / (n sum x^2) of X's values;
  ``jain(goodput_mbps, flows="cubic*")`` like the aggregates. A bare ``jain`` is the
  core's index over all TCP flows.
- ``ratio(A, B)``: A / B. ``ratio(METRIC, "a", "b")`` is
  ``ratio(METRIC("a"), METRIC("b"))``.
- ``share(METRIC, "a")``: sum of METRIC over the entries matching ``a`` divided by
  its sum over every entry of that kind.

Interval metrics (computed from the run's tables, for a time window; ``from``
and ``to`` are seconds or strings with a unit, ``"500ms"``, ``"20s"``,
``"2min"``; they default to the start and the end of the run):

- ``mean_goodput(flow=SEL, from=, to=)``: mean of ``flow_series.goodput_mbps`` over
  the sample intervals that end in (from, to], per selected flow (Mbit/s).
- ``mean_series("COLUMN", flow=SEL, from=, to=)``: the same for any
  ``flow_series`` column (``cwnd_pkts``, ``srtt_ms``, ``alpha``, ``classic``, …),
  skipping the intervals where it is NaN.
- ``max_series("COLUMN", flow=SEL, from=, to=)``: the highest sample of that
  column in the window instead of the mean (a peak: ``max_series("goodput_mbps",
  flow="x", from="150s")`` is the fastest interval after 150 s).
- ``mean_rtt(flow=SEL | probe=SEL, from=, to=)``: mean RTT sample (ms) taken in
  [from, to), per flow (``rtt`` table) or probe (``probes`` table).
- ``rtt_percentile(Q, flow=SEL | probe=SEL, from=, to=)``: the Q-th percentile
  (0..100) of those samples.
- ``mean_sojourn(link=SEL, from=, to=)`` and ``sojourn_percentile(Q, link=SEL,
  from=, to=)``: queue delay (ms) of the packets dequeued in [from, to).
- ``rtt_spike_ms(flow=SEL | probe=SEL, from=, to=)``: the highest RTT sample in
  the window minus the lowest (a slow-start or event spike above the floor);
  ``rtt_spike_s(...)``: its width in seconds at half its height (from the first
  to the last sample at or above floor + height/2).
- ``recovery_s(flow=SEL, from=EVENT, to=, hold="1s")``: seconds after ``from``
  until the flow's goodput is back at 90 % of its settled rate (its mean over
  the second half of the window) and stays there for ``hold``: the end of
  the first ``flow_series`` sample of a run of samples, each at or above
  that level, that spans at least ``hold``; no data if there is none. A
  single sample is not enough: the first samples after an event still
  carry the data sent before it (a window of it arrives over the next
  round trip, and a queue that drains adds its own), so goodput can read
  normal for a moment and then collapse. ``hold`` must outlast that, so it
  should be longer than an RTT plus the queue delay; 1 s covers both at
  usual Internet RTTs.

A division by zero, like any other problem, is an :class:`ExprError`; a report
shows it under its table.
"""

from __future__ import annotations

import fnmatch
import math
import re
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import polars as pl

from ccbench.simulate.results import _flatten

__all__ = ["Expr", "ExprError", "RunData", "evaluate", "parse"]

KINDS = ("flows", "links", "probes")
_KIND_KEYWORDS = {"flow": "flows", "flows": "flows", "link": "links", "links": "links",
                  "probe": "probes", "probes": "probes"}
_TOP_LEVEL = ("jain", "duration_s", "warmup_s", "seed")


class ExprError(ValueError):
    """A metric expression is malformed or cannot be evaluated on a run. ``col`` is 1-based or None."""

    def __init__(self, message: str, col: int | None = None) -> None:
        super().__init__(message, col)
        self.message = message
        self.col = col

    def __str__(self) -> str:
        return f"column {self.col}: {self.message}" if self.col else self.message


class RunData(Protocol):
    """What an expression reads: summary.json and, on demand, a table."""

    @property
    def summary(self) -> Mapping[str, Any]: ...

    def table(self, name: str) -> pl.DataFrame: ...


# --- syntax -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Num:
    value: float
    col: int


@dataclass(frozen=True)
class Str:
    value: str
    col: int


@dataclass(frozen=True)
class Name:
    name: str
    col: int


@dataclass(frozen=True)
class Call:
    name: str
    args: tuple[Node, ...]
    kwargs: tuple[tuple[str, Node], ...]
    col: int


@dataclass(frozen=True)
class BinOp:
    op: str
    left: Node
    right: Node
    col: int


@dataclass(frozen=True)
class Neg:
    operand: Node
    col: int


Node = Num | Str | Name | Call | BinOp | Neg


@dataclass(frozen=True)
class Expr:
    """A parsed expression; ``text`` is its source."""

    text: str
    root: Node

    def __str__(self) -> str:
        return self.text


_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
  | (?P<op>[-+*/(),=])
""", re.VERBOSE)


def _tokens(text: str) -> list[tuple[str, str, int]]:
    out = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise ExprError(f"unexpected {text[pos]!r}", pos + 1)
        kind = m.lastgroup or ""
        if kind != "ws":
            out.append((kind, m.group(), pos + 1))
        pos = m.end()
    out.append(("end", "", len(text) + 1))
    return out


def parse(text: str) -> Expr:
    """Parse an expression, checking function names and arguments; raises ExprError."""
    parser = _Parser(_tokens(text))
    root = parser.expr()
    kind, value, col = parser.peek()
    if kind != "end":
        raise ExprError(f"unexpected {value!r} after the expression", col)
    _check(root)
    return Expr(text, root)


class _Parser:
    def __init__(self, tokens: list[tuple[str, str, int]]) -> None:
        self.tokens = tokens
        self.i = 0

    def peek(self) -> tuple[str, str, int]:
        return self.tokens[self.i]

    def take(self) -> tuple[str, str, int]:
        tok = self.tokens[self.i]
        self.i += 1
        return tok

    def expect(self, value: str) -> None:
        kind, got, col = self.take()
        if got != value or kind not in ("op",):
            raise ExprError(f"expected {value!r}, got {got or 'the end'!r}", col)

    def expr(self) -> Node:
        node = self.term()
        while self.peek()[1] in ("+", "-") and self.peek()[0] == "op":
            _, op, col = self.take()
            node = BinOp(op, node, self.term(), col)
        return node

    def term(self) -> Node:
        node = self.unary()
        while self.peek()[1] in ("*", "/") and self.peek()[0] == "op":
            _, op, col = self.take()
            node = BinOp(op, node, self.unary(), col)
        return node

    def unary(self) -> Node:
        kind, value, col = self.peek()
        if kind == "op" and value == "-":
            self.take()
            return Neg(self.unary(), col)
        return self.atom()

    def atom(self) -> Node:
        kind, value, col = self.take()
        if kind == "num":
            return Num(float(value), col)
        if kind == "str":
            return Str(_unquote(value), col)
        if kind == "op" and value == "(":
            node = self.expr()
            self.expect(")")
            return node
        if kind == "name":
            if self.peek()[1] != "(" or self.peek()[0] != "op":
                return Name(value, col)
            self.take()
            args: list[Node] = []
            kwargs: list[tuple[str, Node]] = []
            while not (self.peek()[0] == "op" and self.peek()[1] == ")"):
                k, v, c = self.peek()
                if k == "name" and self.tokens[self.i + 1][1] == "=":
                    self.i += 2
                    if v in dict(kwargs):
                        raise ExprError(f"{value}(): argument {v!r} given twice", c)
                    kwargs.append((v, self.expr()))
                else:
                    if kwargs:
                        raise ExprError(f"{value}(): positional argument after a keyword argument", c)
                    args.append(self.expr())
                if self.peek()[1] == ",":
                    self.take()
                elif self.peek()[1] != ")":
                    k, v, c = self.peek()
                    raise ExprError(f"expected ',' or ')', got {v or 'the end'!r}", c)
            self.take()
            return Call(value, tuple(args), tuple(kwargs), col)
        raise ExprError(f"unexpected {value or 'end of expression'!r}", col)


def _unquote(token: str) -> str:
    body = token[1:-1]
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), body)


# --- functions ------------------------------------------------------------------------------

Value = float | list[float] | str | None

_AGGREGATES: dict[str, Callable[[list[float]], float]] = {
    "mean": statistics.fmean,
    "median": statistics.median,
    "sum": math.fsum,
    "min": min,
    "max": max,
    "count": len,
}
_WINDOWED = ("mean_goodput", "mean_series", "max_series", "mean_rtt", "rtt_percentile", "mean_sojourn", "sojourn_percentile",
             "rtt_spike_ms", "rtt_spike_s", "recovery_s")
#: The windowed functions of any flow_series column.
_SERIES = ("mean_series", "max_series")
FUNCTIONS = (*_AGGREGATES, "jain", "ratio", "share", *_WINDOWED)
_WINDOW_KWARGS = {"from", "to"}
#: Keyword arguments of one windowed function only.
_OWN_KWARGS = {"recovery_s": {"hold"}}


def _check(node: Node) -> None:
    """Static checks: argument shapes of the known functions, selector keywords of metrics."""
    if isinstance(node, BinOp):
        _check(node.left)
        _check(node.right)
    elif isinstance(node, Neg):
        _check(node.operand)
    elif isinstance(node, Call):
        name, nargs, kw = node.name, len(node.args), dict(node.kwargs)
        selectors = [k for k in kw if k in _KIND_KEYWORDS]
        if len(selectors) > 1:
            raise ExprError(f"{name}(): give one of {', '.join(selectors)}, not several", node.col)
        bad = set(kw) - set(_KIND_KEYWORDS) - (_WINDOW_KWARGS if name in _WINDOWED else set()) \
            - _OWN_KWARGS.get(name, set())
        if bad:
            raise ExprError(f"{name}(): unknown argument {sorted(bad)[0]!r}", node.col)
        if name in _AGGREGATES or name == "jain":
            if nargs == 0:
                raise ExprError(f"{name}() needs an argument", node.col)
            if any(isinstance(a, Str) for a in node.args):
                raise ExprError(f"{name}() takes numbers or metrics, not strings", node.col)
            if selectors and not (nargs == 1 and isinstance(node.args[0], Name)):
                raise ExprError(f"{name}(METRIC, {selectors[0]}=...) takes one metric name before the selector",
                                node.col)
        elif name in ("ratio", "share") and kw:
            raise ExprError(f"{name}() takes no keyword arguments", node.col)
        elif name == "ratio":
            if nargs not in (2, 3):
                raise ExprError("ratio() takes (A, B) or (METRIC, \"a\", \"b\")", node.col)
            if nargs == 3 and not (isinstance(node.args[0], Name) and all(isinstance(a, Str) for a in node.args[1:])):
                raise ExprError("ratio(METRIC, \"a\", \"b\"): a metric name, then two selectors", node.col)
            if nargs == 2 and any(isinstance(a, Str) for a in node.args):
                raise ExprError("ratio(A, B) divides two numbers; ratio(METRIC, \"a\", \"b\") compares two "
                                "selections", node.col)
        elif name == "share":
            if nargs != 2 or not isinstance(node.args[0], Name) or not isinstance(node.args[1], Str):
                raise ExprError("share() takes (METRIC, \"selector\")", node.col)
        elif name in ("rtt_percentile", "sojourn_percentile"):
            if nargs not in (1, 2):
                raise ExprError(f"{name}() takes the percentile (0..100), then a selector", node.col)
        elif name in _SERIES:
            if nargs not in (1, 2) or not all(isinstance(a, Str) for a in node.args):
                raise ExprError(f'{name}() takes a flow_series column, e.g. {name}("cwnd_pkts", '
                                'flow="x")', node.col)
        elif name in _WINDOWED:
            if nargs > 1:
                raise ExprError(f"{name}() takes at most one selector", node.col)
        elif nargs > 1 or (nargs == 1 and not isinstance(node.args[0], Str)):
            raise ExprError(f"{name}(): a metric takes one selector string, e.g. {name}(flow=\"x\")", node.col)
        for a in node.args:
            _check(a)
        for _, v in node.kwargs:
            _check(v)


def evaluate(expr: Expr | str, run: RunData, values: Mapping[str, Any] | None = None) -> float | None:
    """The expression's number on one run, or None if there is no data; raises ExprError.

    ``values`` are the run's axis values in a suite: a bare name that is a
    numeric axis is its value."""
    if isinstance(expr, str):
        expr = parse(expr)
    value = _Eval(run, values).node(expr.root)
    return _scalar(value, expr.root, "the expression")


class _Eval:
    def __init__(self, run: RunData, values: Mapping[str, Any] | None = None) -> None:
        self.run = run
        self.values = values or {}
        self.summary = run.summary
        self._entries: dict[str, list[dict[str, Any]]] = {}

    def entries(self, kind: str) -> list[dict[str, Any]]:
        if kind not in self._entries:
            self._entries[kind] = [_flatten(e) for e in self.summary.get(kind, []) or []]
        return self._entries[kind]

    # -- nodes --

    def node(self, n: Node) -> Value:
        if isinstance(n, Num):
            return n.value
        if isinstance(n, Str):
            return n.value
        if isinstance(n, Neg):
            v = _scalar(self.node(n.operand), n.operand, "'-'")
            return None if v is None else -v
        if isinstance(n, BinOp):
            return self.binop(n)
        if isinstance(n, Name):
            return self.name(n)
        return self.call(n)

    def binop(self, n: BinOp) -> float | None:
        a = _scalar(self.node(n.left), n.left, f"'{n.op}'")
        b = _scalar(self.node(n.right), n.right, f"'{n.op}'")
        if a is None or b is None:
            return None
        if n.op == "+":
            return a + b
        if n.op == "-":
            return a - b
        if n.op == "*":
            return a * b
        if b == 0:
            raise ExprError("division by zero", n.col)
        return a / b

    def name(self, n: Name) -> Value:
        if n.name in self.values and not isinstance(self.values[n.name], bool) \
                and isinstance(self.values[n.name], (int, float)):
            return float(self.values[n.name])
        if n.name in _TOP_LEVEL or (n.name in self.summary and _is_number(self.summary[n.name])):
            v = self.summary.get(n.name)
            return float(v) if isinstance(v, (int, float)) and _is_number(v) else None
        return self.metric(n.name, None, None, n.col)

    def call(self, n: Call) -> Value:
        kw = dict(n.kwargs)
        if n.name in _AGGREGATES:
            return self.aggregate(n, _AGGREGATES[n.name])
        if n.name == "jain":
            return self.aggregate(n, _jain)
        if n.name == "ratio":
            if len(n.args) == 3:
                metric = n.args[0]
                assert isinstance(metric, Name)
                a, b = (Call(metric.name, (s,), (), s.col) for s in n.args[1:])
                num_s, den_s = _scalar(self.node(a), a, "ratio()"), _scalar(self.node(b), b, "ratio()")
            else:
                num_s = _scalar(self.node(n.args[0]), n.args[0], "ratio()")
                den_s = _scalar(self.node(n.args[1]), n.args[1], "ratio()")
            if num_s is None or den_s is None:
                return None
            if den_s == 0:
                raise ExprError("ratio(): division by zero", n.col)
            return num_s / den_s
        if n.name == "share":
            metric, chosen = n.args
            assert isinstance(metric, Name) and isinstance(chosen, Str)
            of = self.kind_of(metric.name, chosen.value, n.col)
            part = self.metric(metric.name, of, chosen.value, chosen.col)
            whole = self.metric(metric.name, of, None, n.col)
            total = math.fsum(whole)
            if not part or not whole:
                return None
            if total == 0:
                raise ExprError("share(): the total is zero", n.col)
            return math.fsum(part) / total
        if n.name in _WINDOWED:
            return self.windowed(n, kw)
        keyword = self.kind_keyword(n)
        selector = self.string(kw[keyword]) if keyword else (self.string(n.args[0]) if n.args else None)
        return self.metric(n.name, _KIND_KEYWORDS[keyword] if keyword else None, selector, n.col)

    def aggregate(self, n: Call, fn: Callable[[list[float]], float]) -> float | None:
        kind = self.kind_keyword(n)
        if kind:
            metric = n.args[0]
            assert isinstance(metric, Name)
            values = self.metric(metric.name, _KIND_KEYWORDS[kind], self.string(dict(n.kwargs)[kind]), metric.col)
        else:
            values = []
            for a in n.args:
                v = self.node(a)
                if isinstance(v, str):
                    raise ExprError(f"{n.name}(): expected numbers, got the string {v!r}", _col(a))
                values += v if isinstance(v, list) else ([] if v is None else [v])
        assert isinstance(values, list)
        if not values:
            return None
        return float(fn(values))

    def kind_keyword(self, n: Call) -> str | None:
        return next((k for k, _ in n.kwargs if k in _KIND_KEYWORDS), None)

    def string(self, node: Node) -> str:
        v = self.node(node)
        if not isinstance(v, str):
            raise ExprError("expected a string selector like \"cubic*\"", _col(node))
        return v

    # -- metrics --

    def kind_of(self, metric: str, selector: str | None, col: int) -> str:
        """The kind (flows, links, probes) a metric name refers to, given an optional selector."""
        having = [k for k in KINDS if any(_is_number(e.get(metric)) or (metric in e and e[metric] is None)
                                          for e in self.entries(k))]
        if not having:
            known = {k: sorted({m for e in self.entries(k) for m, v in e.items() if _is_number(v)}) for k in KINDS}
            listing = "; ".join(f"{k}: {', '.join(v)}" for k, v in known.items() if v)
            raise ExprError(f"unknown metric {metric!r} (metrics of this run: {listing})", col)
        if selector is not None:
            for k in having:
                if _select([e["id"] for e in self.entries(k)], selector):
                    return k
        return having[0]

    def metric(self, metric: str, kind: str | None, selector: str | None, col: int) -> list[float]:
        kind = kind or self.kind_of(metric, selector, col)
        entries = self.entries(kind)
        ids = [str(e.get("id")) for e in entries]
        chosen = entries if selector is None else [entries[i] for i in _indices(ids, selector, kind, col)]
        with_metric = [e for e in chosen if metric in e]
        if chosen and not with_metric:
            have = sorted(m for m, v in chosen[0].items() if _is_number(v))
            raise ExprError(f"{kind} have no metric {metric!r} (they have: {', '.join(have)})", col)
        return [float(e[metric]) for e in with_metric if _is_number(e[metric])]

    def windowed(self, n: Call, kw: dict[str, Node]) -> list[float]:
        duration = float(self.summary.get("duration_s") or 0.0)
        start = self.time(kw["from"]) if "from" in kw else 0.0
        end = self.time(kw["to"]) if "to" in kw else duration
        if end < start:
            raise ExprError(f"{n.name}(): 'to' ({end:g} s) is before 'from' ({start:g} s)", n.col)
        args = list(n.args)
        q: float | None = None
        column = self.string(args.pop(0)) if n.name in _SERIES else None
        if n.name.endswith("_percentile"):
            qv = self.node(args.pop(0))
            if not isinstance(qv, float) or not 0 <= qv <= 100:
                raise ExprError(f"{n.name}(): the percentile must be a number 0..100", n.col)
            q = qv
        hold = self.time(kw["hold"]) if "hold" in kw else RECOVERY_HOLD
        kind_kw = self.kind_keyword(n)
        kind = _KIND_KEYWORDS[kind_kw] if kind_kw else None
        sel = self.string(kw[kind_kw]) if kind_kw else (self.string(args[0]) if args else None)
        if n.name in ("mean_goodput", "recovery_s", *_SERIES):
            kind, table, key = self._want(n, kind, "flows", ("flows",)), "flow_series", "flow"
            value = column or "goodput_mbps"
        elif n.name in ("mean_rtt", "rtt_percentile", "rtt_spike_ms", "rtt_spike_s"):
            kind = self._want(n, kind, "flows", ("flows", "probes"))
            table, key, value = ("rtt", "flow", "rtt_ms") if kind == "flows" else ("probes", "probe", "rtt_ms")
        else:
            kind, table, key, value = self._want(n, kind, "links", ("links",)), "sojourn", "link", "sojourn_ms"
        ids = [str(e.get("id")) for e in self.entries(kind)]
        chosen = range(len(ids)) if sel is None else _indices(ids, sel, kind, n.col)
        try:  # only the three columns needed, from a run that reads projections (report.StoredRun)
            df = self.run.table(table, ["time_s", key, value])  # type: ignore[call-arg]
        except TypeError:
            df = self.run.table(table)
        if value not in df.columns:
            have = [c for c in self.run.table(table).columns if c not in ("time_s", key)]
            raise ExprError(f"{n.name}(): {table} has no column {value!r} (it has: {', '.join(have)})", n.col)
        import numpy as np
        import polars as pl

        # NumPy rather than a Polars query per flow: a report evaluates this for every cell of every run.
        t = df["time_s"].to_numpy()
        ids_col = df[key].to_numpy()
        values = df[value].cast(pl.Float64).to_numpy()
        inside = (t > start) & (t <= end) if table == "flow_series" else (t >= start) & (t < end)
        out = []
        for i in chosen:
            rows = inside & (ids_col == i)
            if column is not None:  # a series may be NaN where it does not apply (α of CUBIC)
                rows &= ~np.isnan(values)
            v = values[rows]
            if v.size == 0:
                continue
            if n.name in ("rtt_spike_ms", "rtt_spike_s", "recovery_s"):
                x = _event_measure(n.name, t[rows], v, start, end, hold)
            elif n.name == "max_series":
                x = float(v.max())
            else:
                x = float(v.mean()) if q is None else float(np.quantile(v, q / 100))
            if isinstance(x, (int, float)):
                out.append(float(x))
        return out

    def _want(self, n: Call, kind: str | None, default: str, allowed: tuple[str, ...]) -> str:
        kind = kind or default
        if kind not in allowed:
            raise ExprError(f"{n.name}() selects {' or '.join(a[:-1] for a in allowed)}, not {kind[:-1]}", n.col)
        return kind

    def time(self, node: Node) -> float:
        v = self.node(node)
        if isinstance(v, float):
            return v
        if isinstance(v, str):
            return parse_seconds(v, _col(node))
        raise ExprError("expected a time like \"20s\" or a number of seconds", _col(node))


_TIME_UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0, "h": 3600.0}


def parse_seconds(text: str, col: int | None = None) -> float:
    """``"20s"``, ``"500ms"``, ``"2min"`` or a bare number, in seconds."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?\d+)?)\s*([a-z]*)\s*", text)
    if not m or m.group(2) not in (*_TIME_UNITS, ""):
        raise ExprError(f"expected a time like \"20s\" or \"500ms\", got {text!r}", col)
    return float(m.group(1)) * _TIME_UNITS.get(m.group(2) or "s", 1.0)


#: recovery_s: the goodput level, as a fraction of the settled rate, that counts as recovered.
RECOVERED = 0.9
#: recovery_s: how long (s) the goodput must stay at that level, by default.
RECOVERY_HOLD = 1.0


def _event_measure(name: str, t: Any, v: Any, start: float, end: float,
                   hold: float = RECOVERY_HOLD) -> float | None:
    """The event functions on one flow's or probe's samples (times ``t``, values ``v``) in the window.

    rtt_spike_ms: highest minus lowest RTT sample (the spike above the floor);
    rtt_spike_s: its full width at half height, from the first to the last
    sample at or above floor + height/2 (0 without a spike); recovery_s: how
    long after ``start`` until the goodput reaches RECOVERED x its mean over
    the second half of the window (the settled rate) and holds it for
    ``hold`` seconds: the end time of the first sample of a run of samples
    at or above that level whose span (from the start of its first sample
    to the end of its last) is at least ``hold``; None if there is none.
    """
    if name == "rtt_spike_ms":
        return float(v.max() - v.min())
    if name == "rtt_spike_s":
        lo, hi = float(v.min()), float(v.max())
        if hi <= lo:
            return 0.0
        above = t[v >= lo + (hi - lo) / 2]
        return float(above.max() - above.min())
    import numpy as np

    order = np.argsort(t, kind="stable")
    t, v = t[order], v[order]
    settled = v[t > (start + end) / 2]
    if settled.size == 0:
        return None
    # A sample covers the interval since the previous one: its span is the sampling step.
    step = float(np.median(np.diff(t))) if t.size > 1 else float(t[0] - start)
    ok = v >= RECOVERED * float(settled.mean())
    first = None
    for i in range(t.size):
        if not ok[i]:
            first = None
            continue
        if first is None:
            first = i
        if t[i] - t[first] + step >= hold - 1e-9:
            return float(t[first] - start)
    return None


def _select(ids: Sequence[str], selector: str) -> list[int]:
    if any(c in selector for c in "*?["):
        return [i for i, x in enumerate(ids) if fnmatch.fnmatchcase(x, selector)]
    exact = [i for i, x in enumerate(ids) if x == selector]
    if exact:
        return exact
    copies = re.compile(re.escape(selector) + r"\.\d+")
    return [i for i, x in enumerate(ids) if copies.fullmatch(x)]


def _indices(ids: Sequence[str], selector: str, kind: str, col: int | None) -> list[int]:
    if selector == "*":  # every entry, possibly none
        return list(range(len(ids)))
    found = _select(ids, selector)
    # A glob may legitimately match nothing in some runs (a flow a sweep
    # left out): no data. A plain id that matches nothing is a typo.
    if not found and not any(c in selector for c in "*?["):
        raise ExprError(f"no {kind[:-1]} matches {selector!r} ({kind}: {', '.join(ids) or 'none'})", col)
    return found


def _jain(values: list[float]) -> float:
    squares = math.fsum(x * x for x in values)
    if squares == 0:
        raise ExprError("jain(): every value is zero")
    return math.fsum(values) ** 2 / (len(values) * squares)


def _scalar(value: Value, node: Node, where: str) -> float | None:
    if isinstance(value, str):
        raise ExprError(f"{where}: expected a number, got the string {value!r}", _col(node))
    if isinstance(value, list):
        if not value:
            return None
        if len(value) > 1:
            raise ExprError(f"{where}: {_describe(node)} gives {len(value)} values; "
                            "wrap it in mean(), sum(), min() or max(), or select one", _col(node))
        return value[0]
    return value


def _describe(node: Node) -> str:
    if isinstance(node, Call):
        return f"{node.name}(...)"
    if isinstance(node, Name):
        return node.name
    return "the operand"


def _col(node: Node) -> int:
    return node.col


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)
