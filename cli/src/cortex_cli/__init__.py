"""The `cortex` command line."""
