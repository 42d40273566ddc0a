"""The `fusion` pass package: one module per pattern (group) and the pass itself."""

from rlx.transforms.fusion.fusion import PATTERN_ORDER, FusionPass

__all__ = ["FusionPass", "PATTERN_ORDER"]
