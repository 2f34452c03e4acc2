"""Built-in algorithm plug-ins, installed as ``zsceval.algorithms``."""
