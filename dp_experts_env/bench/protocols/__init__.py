"""The shipped protocols (``TEXT``: TOML), one module per version, and bench-v2's adversary."""
