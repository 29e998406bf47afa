"""What the plugin runtime raises, each with a message fit to show an operator as it is."""


class PluginChoiceError(ValueError):
    """A category or plugin name that cannot be chosen (unknown, not selectable, or failed to load)."""


class PluginUnavailable(LookupError):
    """No plugin of a category can be used: a pin names a missing or broken plugin, or none loaded."""
