"""The compiled CEL module of common-expression-language, without the package's command line.

`import cel` runs cel/__init__.py, which imports cel.cli and with it typer, rich, prompt_toolkit and
pydantic (0.1-0.2 s per process); the pipeline needs only the compiled extension `cel.cel`, so it is
loaded on its own when the installed package has that layout, and through `import cel` otherwise.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
from types import ModuleType
from typing import TYPE_CHECKING


def _extension() -> ModuleType:
    loaded = sys.modules.get("cel.cel")
    if loaded is not None:
        return loaded
    found = importlib.util.find_spec("cel")
    for directory in (found.submodule_search_locations or []) if found is not None else []:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(directory, f"cel{suffix}")
            if not os.path.isfile(path):
                continue
            loader = importlib.machinery.ExtensionFileLoader("cel.cel", path)
            spec = importlib.util.spec_from_loader("cel.cel", loader, origin=path)
            if spec is None:
                continue
            module = importlib.util.module_from_spec(spec)
            sys.modules["cel.cel"] = module
            loader.exec_module(module)
            return module
    import cel

    return cel


if TYPE_CHECKING:
    import cel as cel
else:
    cel = _extension()
