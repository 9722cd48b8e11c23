"""Modules that are also functions: ``ccbench.sweep(...)`` and ``ccbench.explore(...)``.

Importing a submodule makes it an attribute of its package, which would hide
a function of the same name there; so the module itself is made callable.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from typing import Any

__all__ = ["make_callable"]


class _CallableModule(types.ModuleType):
    def __call__(self, *args: Any, **kw: Any) -> Any:
        return self.__dict__["_call"](*args, **kw)


def make_callable(module_name: str, call: Callable[..., Any]) -> None:
    """Calling module ``module_name`` calls ``call``."""
    module = sys.modules[module_name]
    module.__dict__["_call"] = call
    module.__class__ = _CallableModule
