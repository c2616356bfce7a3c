"""evolve: the ADRS controller."""

__version__ = "0.1.0"
