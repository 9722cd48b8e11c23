"""Where the keys of a TOML text are (``tomllib`` gives no line numbers), and tables written back as TOML."""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ccbench.simulate.api import toml_value

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

Key = tuple[str | int, ...]

def _key_text(key: Key) -> str:
    out = ""
    for seg in key:
        if isinstance(seg, int):
            out += f"[{seg}]"
        else:
            out += ("." if out else "") + (seg if re.fullmatch(r"[A-Za-z0-9_-]+", seg) else f'"{seg}"')
    return out


# --- where keys are: a statement scanner ------------------------------------------------------

_BARE = r"[A-Za-z0-9_-]+"
_KEY_PART = re.compile(rf"\s*({_BARE}|\"(?:[^\"\\]|\\.)*\"|'[^']*')\s*")


@dataclass
class _Statement:
    line: int  # 1-based
    col: int
    kind: str  # "table", "array" (a [[header]]) or "key"
    parts: list[str]  # the dotted key or header, unquoted
    raw_end: int  # index in the line just past the header or the key's '='


def _split_key(text: str, start: int) -> tuple[list[str], int] | None:
    """Dotted key at ``text[start:]``: (parts, index after it), or None."""
    parts = []
    pos = start
    while True:
        m = _KEY_PART.match(text, pos)
        if not m:
            return None
        raw = m.group(1)
        parts.append(raw[1:-1] if raw[0] in "\"'" else raw)
        pos = m.end()
        if pos < len(text) and text[pos] == ".":
            pos += 1
            continue
        return parts, pos


def _statements(text: str) -> list[_Statement]:
    """Headers and key lines that start at the top level (not inside a multi-line value)."""
    out: list[_Statement] = []
    depth = 0
    in_string: str | None = None  # the open multi-line string's delimiter
    for n, line in enumerate(text.splitlines(), 1):
        i = 0
        if in_string is None and depth == 0:
            stripped = line.lstrip()
            indent = len(line) - len(stripped)
            if stripped.startswith("["):
                array = stripped.startswith("[[")
                parsed = _split_key(line, indent + (2 if array else 1))
                close = "]]" if array else "]"
                if parsed and line.startswith(close, parsed[1]):
                    kind = "array" if array else "table"
                    out.append(_Statement(n, indent + 1, kind, parsed[0], parsed[1] + len(close)))
                    continue
            elif stripped and not stripped.startswith("#"):
                parsed = _split_key(line, indent)
                if parsed and line.startswith("=", parsed[1]):
                    out.append(_Statement(n, indent + 1, "key", parsed[0], parsed[1] + 1))
                    i = parsed[1] + 1
        # Track strings and brackets through the rest of the line.
        while i < len(line):
            if in_string is not None:
                end = line.find(in_string, i)
                while end > 0 and in_string == '"""' and _escaped(line, end):
                    end = line.find(in_string, end + 1)
                if end < 0:
                    break
                i = end + 3
                in_string = None
                continue
            c = line[i]
            if c == "#":
                break
            if line.startswith('"""', i) or line.startswith("'''", i):
                in_string = line[i:i + 3]
                i += 3
                continue
            if c in "\"'":
                j = i + 1
                while j < len(line) and line[j] != c:
                    j += 2 if (c == '"' and line[j] == "\\") else 1
                i = j + 1
                continue
            if c in "[{":
                depth += 1
            elif c in "]}":
                depth = max(0, depth - 1)
            i += 1
    return out


def _escaped(line: str, pos: int) -> bool:
    backslashes = 0
    while pos - backslashes - 1 >= 0 and line[pos - backslashes - 1] == "\\":
        backslashes += 1
    return backslashes % 2 == 1


class _Locator:
    """Line and column of each key path of a TOML document (tables, [[arrays]] by index, keys)."""

    def __init__(self, text: str) -> None:
        self.positions: dict[Key, tuple[int, int]] = {}
        counts: dict[Key, int] = {}
        table: Key = ()
        for st in _statements(text):
            if st.kind == "key":
                self.positions.setdefault((*table, *st.parts), (st.line, st.col))
                continue
            resolved: list[str | int] = []
            for j, part in enumerate(st.parts):
                resolved.append(part)
                here = tuple(resolved)
                if st.kind == "array" and j == len(st.parts) - 1:
                    counts[here] = counts.get(here, -1) + 1
                    resolved.append(counts[here])
                elif here in counts:
                    resolved.append(counts[here])
            table = tuple(resolved)
            self.positions.setdefault(table, (st.line, st.col))

    def find(self, key: Key) -> tuple[int | None, int | None]:
        """The position of ``key`` or of its nearest written ancestor."""
        k = tuple(key)
        while k:
            if k in self.positions:
                return self.positions[k]
            k = k[:-1]
        return None, None


def _inline_base(text: str, base: dict[str, Any]) -> str:
    """The [base] table as scenario text with the suite file's line numbering.

    Lines outside [base] are blanked and ``[[base.links]]`` becomes
    ``[[links]]``, so the core's error lines point into the suite file. If
    the base is written in a way this does not reproduce (dotted ``base.x``
    keys, an inline ``base = {...}``), the table is written out afresh instead.
    """
    lines = text.splitlines()
    out = [""] * len(lines)
    inside = False
    statements = {st.line: st for st in _statements(text)}
    for n in range(1, len(lines) + 1):
        st = statements.get(n)
        if st is not None and st.kind != "key":
            inside = st.parts[0] == "base"
            if inside and len(st.parts) > 1:
                inner = ".".join(_quote_key(p) for p in st.parts[1:])
                out[n - 1] = f"[[{inner}]]" if st.kind == "array" else f"[{inner}]"
            continue
        if inside:
            out[n - 1] = lines[n - 1]
    candidate = "\n".join(out) + "\n"
    try:
        if tomllib.loads(candidate) == base:
            return candidate
    except tomllib.TOMLDecodeError:
        pass
    return _write_toml(base)


def _quote_key(k: str) -> str:
    return k if re.fullmatch(_BARE, k) else toml_value(k)


def _write_toml(table: Mapping[str, Any], prefix: str = "") -> str:
    """A table as TOML with [sections] and [[arrays of tables]] (which --set overrides can address)."""
    simple, tables, arrays = [], [], []
    for k, v in table.items():
        if isinstance(v, dict):
            tables.append((k, v))
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            arrays.append((k, v))
        else:
            simple.append(f"{_quote_key(k)} = {toml_value(v)}")
    out = "\n".join(simple) + ("\n" if simple else "")
    for k, v in tables:
        name = prefix + _quote_key(k)
        out += f"\n[{name}]\n" + _write_toml(v, name + ".")
    for k, items in arrays:
        name = prefix + _quote_key(k)
        for item in items:
            out += f"\n[[{name}]]\n" + _write_toml(item, name + ".")
    return out
