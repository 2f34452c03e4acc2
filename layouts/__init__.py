"""Overcooked layout files (data), installed as ``zsceval.layouts``. See README.md here."""
