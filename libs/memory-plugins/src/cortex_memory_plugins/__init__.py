"""Built-in `memory` plugins that read agent memory kept outside Cortex (entry-point group `cortex.memory`)."""
