"""The package version, in the foundation layer so every layer may read it (tests/test_layers.py)."""

__version__ = "0.1.0"
