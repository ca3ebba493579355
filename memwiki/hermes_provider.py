"""Where `memwiki hermes-install` pointed hermes plugins before memwiki's modules moved into folders: a plugin it
wrote then (`$HERMES_HOME/plugins/memwiki/__init__.py`) imports the provider from here. The provider is
`memwiki.agents.hermes_provider`."""

from memwiki.agents.hermes_provider import MemwikiProvider

__all__ = ["MemwikiProvider"]
