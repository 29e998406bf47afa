"""The plugin categories, each an entry-point group `cortex.<category>`, and each one's built-in default.

Defaults are named here, in one table, rather than claimed by the plugins: installing a package never
changes what an organization gets; an environment pin or the organization's choice does.
"""

from dataclasses import dataclass

from cortex_plugins.errors import PluginChoiceError

ENV_PREFIX = "CORTEX_PLUGIN_"


@dataclass(frozen=True)
class Category:
    name: str
    default: str | None  # the built-in default's entry-point name
    selectable: bool = True  # False: every loaded plugin is used (extractors, each for its media types)
    per_organization: bool = True  # False: one choice for the whole deployment (env pin or default)
    methods: tuple[str, ...] = ()  # what the services call on a plugin of this category

    @property
    def group(self) -> str:
        return f"cortex.{self.name}"


CATEGORIES: tuple[Category, ...] = (
    Category("extractor", default=None, selectable=False, methods=("extract",)),
    Category("chunker", default="heading-paragraph", methods=("chunk",)),
    # One embedding space and one vector index per database: an organization cannot choose its own.
    Category("embedder", default="local", per_organization=False, methods=("embed",)),
    Category("vector_store", default="pgvector", per_organization=False, methods=("upsert", "search")),
    Category("reranker", default="none", methods=("rerank",)),
    Category("rag", default="hybrid"),
    Category("memory", default="postgres"),
    Category("summarizer", default="extractive", methods=("summarize",)),
)
_BY_NAME = {c.name: c for c in CATEGORIES}


def category(name: str) -> Category:
    found = _BY_NAME.get(name)
    if found is None:
        raise PluginChoiceError(f"unknown plugin category {name!r}; categories: {', '.join(_BY_NAME)}")
    return found


def env_var(category_name: str) -> str:
    """The environment pin of a category, e.g. CORTEX_PLUGIN_VECTOR_STORE."""
    return ENV_PREFIX + category_name.upper()
