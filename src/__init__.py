"""The project's code. Its version, printed by the report and read by CITATION.cff's and pyproject.toml's tests."""

__version__ = "0.6.0"
