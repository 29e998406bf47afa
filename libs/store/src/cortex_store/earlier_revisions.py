"""Statements as an earlier migration wrote them, for a later one that replaces or restores them.

A migration is not edited once released (revision 0021 says why three were), so its text is a stable
source: a function body restated by hand in every revision that touches it would be a second copy to keep
equal.
"""

import importlib.util
from pathlib import Path
from types import ModuleType

VERSIONS_DIR = Path(__file__).with_name("migrations") / "versions"


def revision(filename: str) -> ModuleType:
    """The revision file `filename` (e.g. "0010_embedding_space.py"), loaded as a module."""
    path = VERSIONS_DIR / filename
    spec = importlib.util.spec_from_file_location(f"cortex_revision_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def statement(filename: str, name: str) -> str:
    """The module-level string `name` of the revision file `filename`."""
    return str(getattr(revision(filename), name))


def function(filename: str, name: str) -> str:
    """A function as that revision created it, to create it again in the place of a later version."""
    return statement(filename, name).replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1)
