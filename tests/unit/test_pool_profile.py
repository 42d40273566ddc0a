"""`RLX_POOL_PROFILE=1`: the pool records one timing record per `rlx_parallel_for` call."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from rlx.runtime import pool_profile

_SCRIPT = textwrap.dedent(
    """
    import numpy as np, rlx
    from rlx.runtime import pool_profile
    g = rlx.Graph(); x = g.input("x", (256, 1024)); g.output(g.softmax(g.mul(x, x), axis=-1))
    c = rlx.compile(g); a = np.random.default_rng(0).random((256, 1024), np.float32)
    ref = c.run(a)[0]
    for t in (1, 2):
        rlx.set_num_threads(t)
        pool_profile.reset()
        np.testing.assert_array_equal(c.run(a)[0], ref)
        recs = pool_profile.records()
        assert recs and pool_profile.dropped() == 0, recs
        for r in recs:
            assert set(r) == set(pool_profile.FIELDS)
            assert r["start"] <= r["mid"] <= r["end"], r
            assert 0 <= r["mine"] <= r["chunks"] <= r["tasks"], r
            assert (r["chunks"] == 0) == (t == 1), r
    print("ok", len(recs))
    """
)


def _run(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _SCRIPT], env={**os.environ, "RLX_CACHE": "0", **env},
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip


@pytest.mark.skipif(sys.platform != "linux", reason="the pool needs Linux futexes")
def test_profile_records_each_call_at_1_and_2_threads() -> None:
    out = _run({pool_profile.ENV: "1", "RLX_NUM_THREADS": "2"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("ok")


def test_records_without_profile_is_a_clear_error() -> None:
    from rlx.runtime import parallel

    if "profile" in parallel._STATE:
        pytest.skip("this process was started with the profile on")
    with pytest.raises(RuntimeError, match="RLX_POOL_PROFILE=1"):
        pool_profile.records()
