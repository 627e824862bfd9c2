"""Humanoid pair behind a bridge interface (see bridge.py)."""
