"""object_bundle: several object files in one blob (a parallel compile's code), one object
file passes through unchanged (every older cache entry), corrupt bundles are ValueErrors."""

from __future__ import annotations

import pytest

from rlx.runtime import object_bundle


def test_round_trip_and_single_object_passthrough() -> None:
    objs = [b"\x7fELF one", b"", b"\x7fELF three" * 100]
    blob = object_bundle.pack(objs)
    assert blob.startswith(object_bundle.MAGIC)
    assert object_bundle.unpack(blob) == objs
    single = b"\x7fELF\x02\x01\x01 an object file"
    assert object_bundle.pack([single]) == single  # the format of a serial compile
    assert object_bundle.unpack(single) == [single]


@pytest.mark.parametrize("cut", [9, 13, 20, -1])
def test_truncated_bundle_is_a_value_error(cut: int) -> None:
    blob = object_bundle.pack([b"abc", b"defg"])
    with pytest.raises(ValueError, match="object bundle"):
        object_bundle.unpack(blob[:cut])


def test_bad_count_and_empty_pack() -> None:
    with pytest.raises(ValueError, match="count"):
        object_bundle.unpack(object_bundle.MAGIC + b"\0\0\0\0")
    with pytest.raises(ValueError, match="no object"):
        object_bundle.pack([])
