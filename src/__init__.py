"""Layer transferability by partial reinitialisation."""

__version__ = "0.6.0"
