"""`memwiki hermes-install`: make a memwiki store hermes-agent's memory provider.

hermes loads a memory provider from `$HERMES_HOME/plugins/<name>/` (an `__init__.py` with `register(ctx)`) and
uses the one `memory.provider` in its config.yaml names. This writes that folder; the provider itself is
`memwiki.agents.hermes_provider`, so memwiki must be installed in the Python environment hermes runs in.
"""

from __future__ import annotations

from pathlib import Path

from memwiki.common.textio import atomic_write_text
from memwiki.errors import MemwikiError
from memwiki.store.layout import is_store

PLUGIN_INIT = '''"""memwiki's memory provider for hermes-agent (written by `memwiki hermes-install`)."""

from memwiki.agents.hermes_provider import MemwikiProvider  # a MemoryProvider


def register(ctx):  # noqa: ANN001, ANN201 - hermes's plugin context
    ctx.register_memory_provider(MemwikiProvider())
'''
PLUGIN_YAML = "name: memwiki\nversion: 0.1.0\ndescription: memwiki, a five-layer memory store published as a wiki\n"


def install(hermes_home: Path, store: Path) -> str:
    """Write `plugins/memwiki/` under `hermes_home`; returns what to put in config.yaml."""
    if not is_store(store):
        raise MemwikiError(f"{store}: not a memwiki store (run `memwiki init --store {store}` first)")
    if not hermes_home.is_dir():
        raise MemwikiError(f"{hermes_home}: no hermes home there (set --hermes-home)")
    folder = hermes_home / "plugins" / "memwiki"
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_text(folder / "__init__.py", PLUGIN_INIT)
    atomic_write_text(folder / "plugin.yaml", PLUGIN_YAML)
    return (
        f"wrote {folder}\nadd to {hermes_home / 'config.yaml'}:\n"
        f"memory:\n  provider: memwiki\nplugins:\n  memwiki:\n    store: {store.resolve()}"
    )
