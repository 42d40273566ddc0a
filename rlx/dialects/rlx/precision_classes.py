"""Names of the op precision classes (see `traits.PrecisionClass`); plain constants so
that option validation can use them without importing xDSL."""

COMPUTE, REDUCTION, ELEMENTWISE, DATA_MOVEMENT, BOUNDARY, PINNED = (
    "compute", "reduction", "elementwise", "data-movement", "boundary", "pinned",
)  # fmt: skip
PRECISION_CLASSES = (COMPUTE, REDUCTION, ELEMENTWISE, DATA_MOVEMENT, BOUNDARY, PINNED)
