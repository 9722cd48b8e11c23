"""The terminal: rich consoles for every command's output and progress bars.

Ids, names and paths are any string a user wrote, so no console turns their
``:emoji:`` codes into emoji (a flow ``web:thumbs_up:`` stays as written).
rich loads only when a console is made.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["console"]


def console(**options: Any) -> Console:
    """A rich ``Console`` with ``options`` (``stderr``, ``markup``, ``highlight``...), emoji codes off."""
    from rich.console import Console

    return Console(emoji=False, **options)
