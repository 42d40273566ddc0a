"""RLX: an ML compiler and runtime built on xDSL and llvmlite."""

__version__ = "0.1.0"
