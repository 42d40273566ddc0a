"""Row-chunked kernels (`rlx_rt.parallel_call`) and the runtime thread pool.

Each graph is compiled once and run with 1, 2 and 3 pool threads (3 > the CI's cores: the
pool must cope with oversubscription); every output is compared with the reference
interpreter. The lowering is checked to chunk (or not) as documented.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator

import numpy as np
import pytest

import rlx
from rlx.interpreter import run as reference_run
from rlx.lowering.rlx_to_linalg import parallel as chunking
from rlx.runtime import parallel


@pytest.fixture(autouse=True)
def _restore_threads() -> Iterator[None]:
    before = parallel.get_num_threads()
    yield
    parallel.set_num_threads(before)


def _lowered_text(g: rlx.Graph, parallel_on: bool = True) -> str:
    from xdsl.context import Context

    from rlx.lowering.convert_rlx_to_linalg import ConvertRlxToLinalgPass

    module = g.module.clone()
    ConvertRlxToLinalgPass(parallel=parallel_on).apply(Context(), module)
    return str(module)


def _check(
    build: Callable[[rlx.Graph], None],
    inputs: dict[str, np.ndarray],
    params: dict[str, np.ndarray] | None = None,
    *,
    chunked: bool = True,
    rtol: float = 2e-6,
    atol: float = 2e-6,
) -> None:
    g = rlx.Graph("main")
    build(g)
    text = _lowered_text(g)
    assert ("rlx_rt.parallel_call" in text) is chunked, text[:2000]
    expected = reference_run(g.module, inputs, params or {})
    compiled = rlx.compile(g)
    if params:
        compiled.set_params(params)
    for threads in (1, 2, 3):
        parallel.set_num_threads(threads)
        for _ in range(3):
            got = compiled.run(**inputs)
            for a, b in zip(got, expected, strict=True):
                np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


def _rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_softmax_rows() -> None:
    def build(g: rlx.Graph) -> None:
        g.output(g.softmax(g.input("x", (256, 1024)), axis=-1))

    _check(build, {"x": _rand(256, 1024) * 4})


def test_softmax_middle_axis_splits_leading_dim() -> None:
    def build(g: rlx.Graph) -> None:
        g.output(g.softmax(g.input("x", (64, 32, 48)), axis=1))

    _check(build, {"x": _rand(64, 32, 48)})


def test_layer_norm_and_fused_residual() -> None:
    def build(g: rlx.Graph) -> None:
        x, r = g.input("x", (1024, 384)), g.input("r", (1024, 384))
        gamma, beta = g.param("g", (384,)), g.param("b", (384,))
        h = g.layer_norm(g.add(x, r), gamma, beta, epsilon=1e-5)
        g.output(h)
        g.output(g.rms_norm(h, gamma, epsilon=1e-6))

    params = {"g": _rand(384, seed=1), "b": _rand(384, seed=2)}
    _check(build, {"x": _rand(1024, 384), "r": _rand(1024, 384, seed=3)}, params, atol=1e-5)


def test_elementwise_broadcasts() -> None:
    """Row-sliced, row-broadcast (size 1) and lower-rank operands in one chain."""

    def build(g: rlx.Graph) -> None:
        x = g.input("x", (1, 512, 768))
        col = g.input("col", (1, 512, 1))
        row = g.input("row", (768,))
        y = g.gelu_tanh(g.add(g.mul(x, row), col))
        g.output(g.where(g.compare(y, row, predicate="gt"), y, g.neg(y)))

    _check(build, {"x": _rand(1, 512, 768), "col": _rand(1, 512, 1, seed=4),
                   "row": _rand(768, seed=5)})  # fmt: skip


def test_cast_chunks_with_the_element_size_of_each_buffer() -> None:
    def build(g: rlx.Graph) -> None:
        g.output(g.cast(g.mul(g.input("x", (512, 512)), g.input("x2", (512, 512))), "f16"))

    _check(build, {"x": _rand(512, 512), "x2": _rand(512, 512, seed=6)}, rtol=1e-3, atol=1e-3)


def test_small_and_prime_row_counts_keep_a_plain_call() -> None:
    def small(g: rlx.Graph) -> None:
        g.output(g.softmax(g.input("x", (16, 64)), axis=-1))

    def prime(g: rlx.Graph) -> None:  # 1031 rows of 64: one-row chunks would be too small
        g.output(g.softmax(g.input("x", (1031, 64)), axis=-1))

    _check(small, {"x": _rand(16, 64)}, chunked=False)
    _check(prime, {"x": _rand(1031, 64)}, chunked=False)


def test_plan_chunk_sizes() -> None:
    g = rlx.Graph("main")
    g.output(g.softmax(g.input("x", (2048, 2048)), axis=-1))
    op = next(o for o in g.module.walk() if o.name == "rlx.softmax")
    plan = chunking.plan(op)
    assert plan is not None
    assert plan.operand_types[0].get_shape() == (8, 2048)  # 16K elements a chunk
    assert plan.tasks == 256 and plan.strides == (8 * 2048 * 4,) * 2
    assert plan.max_threads == 64  # 4M elements / 64K per thread


def test_parallel_option_off_keeps_func_call() -> None:
    g = rlx.Graph("main")
    g.output(g.softmax(g.input("x", (256, 1024)), axis=-1))
    text = _lowered_text(g, parallel_on=False)
    assert "rlx_rt.parallel_call" not in text and "func.call" in text


def _softmax_case() -> tuple[rlx.CompiledGraph, np.ndarray, np.ndarray]:
    """A chunked 512x1024 softmax, its input and the reference output."""
    g = rlx.Graph("main")
    g.output(g.softmax(g.input("x", (512, 1024)), axis=-1))
    x = _rand(512, 1024)
    (expected,) = reference_run(g.module, {"x": x})
    return rlx.compile(g), x, expected


def test_concurrent_callers_share_the_pool() -> None:
    compiled, x, expected = _softmax_case()
    parallel.set_num_threads(2)
    errors: list[str] = []

    def worker() -> None:
        for _ in range(20):
            (y,) = compiled.run(x=x)
            if not np.allclose(y, expected, rtol=2e-6, atol=2e-6):
                errors.append("mismatch")

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_set_num_threads_rejects_bad_values(bad: object) -> None:
    with pytest.raises(ValueError, match="positive integer"):
        parallel.set_num_threads(bad)  # type: ignore[arg-type]


def test_backend_and_env_thread_count() -> None:
    assert parallel.backend() in ("pool", "serial")
    code = "from rlx.runtime import parallel; print(parallel.get_num_threads())"
    env = {**os.environ, "RLX_NUM_THREADS": "3"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "3", out.stderr


def test_bad_env_thread_count_is_a_clear_error() -> None:
    code = "from rlx.runtime import parallel; parallel.get_num_threads()"
    env = {**os.environ, "RLX_NUM_THREADS": "many"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode != 0
    assert "RLX_NUM_THREADS must be a positive integer, got 'many'" in out.stderr


def test_attention_runs_on_the_pool() -> None:
    """Attention is not row-chunked by `parallel.plan`, but its flash kernel (no BLAS)
    runs its (batch, head, query block) tasks through one `rlx_rt.parallel_call`."""

    def build(g: rlx.Graph) -> None:
        q, k, v = (g.input(n, (1, 12, 128, 32)) for n in ("q", "k", "v"))
        g.output(g.attention(q, k, v, mask_kind="causal", scale=0.17))

    inputs = {n: _rand(1, 12, 128, 32, seed=i) for i, n in enumerate("qkv")}
    _check(build, inputs, chunked=True, atol=1e-5, rtol=1e-5)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_forked_child_runs_without_the_parents_workers() -> None:
    """After fork() the child has none of the parent's worker threads: its calls run every
    chunk themselves instead of waiting for workers that do not exist."""
    compiled, x, expected = _softmax_case()
    parallel.set_num_threads(2)
    compiled.run(x=x)  # the parent's pool is running
    pid = os.fork()
    if pid == 0:  # child: any exception or mismatch -> non-zero exit
        ok = False
        try:
            (y,) = compiled.run(x=x)
            ok = bool(np.allclose(y, expected, rtol=2e-6, atol=2e-6))
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
