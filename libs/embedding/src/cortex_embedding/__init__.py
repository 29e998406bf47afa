"""Text embedders. With none available, Cortex indexes and searches lexically only."""
