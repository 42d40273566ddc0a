"""Integer division, remainder and pow follow one rule on every path: x / 0, x % 0,
INT_MIN / -1 (and % -1), a negative integer pow exponent and an integer mean over no
elements are run-time errors naming the op, never SIGFPE and never a silent 0. Checked:
plain `rlx.div` / `rlx.pow`, `rlx.elementwise_region` bodies (written and produced by
fusion), row-parallel chunks on two threads, constant folding, the disk cache, and the
reference interpreter (the same error classes)."""

from __future__ import annotations

import numpy as np
import pytest

import rlx
from rlx.errors import IntegerDivisionError, IntegerPowError
from rlx.interpreter import parse_module, run
from rlx.runtime import parallel

SRC = """
func.func @main(%a: tensor<5xi32>, %b: tensor<5xi32>, %c: tensor<4xi64>, %d: tensor<4xi64>, %u: tensor<3xui8>, %v: tensor<3xui8>) -> (tensor<5xi32>, tensor<4xi64>, tensor<4xi64>, tensor<3xui8>, tensor<5xi32>) {
  %0 = rlx.div %a, %b : (tensor<5xi32>, tensor<5xi32>) -> tensor<5xi32>
  %1 = rlx.elementwise_region %c, %d : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64> {
  ^bb0(%x: i64, %y: i64):
    %q = arith.remsi %x, %y : i64
    %s = arith.floordivsi %x, %y : i64
    %t = arith.addi %q, %s : i64
    rlx.yield %t : i64
  }
  %2 = rlx.pow %c, %d : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  %3 = rlx.div %u, %v : (tensor<3xui8>, tensor<3xui8>) -> tensor<3xui8>
  %4 = rlx.mul %0, %b : (tensor<5xi32>, tensor<5xi32>) -> tensor<5xi32>
  func.return %0, %1, %2, %3, %4 : tensor<5xi32>, tensor<4xi64>, tensor<4xi64>, tensor<3xui8>, tensor<5xi32>
}
"""
GOOD = {
    "a": np.array([7, -7, 9, -(2**31), 2], np.int32),
    "b": np.array([2, 2, -3, 1, 1], np.int32),
    "c": np.array([7, -8, 9, 10]),
    "d": np.array([3, 2, 4, 1]),
    "u": np.array([200, 7, 255], np.uint8),
    "v": np.array([3, 2, 255], np.uint8),
}


def _ins(**bad: np.ndarray) -> list[np.ndarray]:
    return [bad.get(k, v) for k, v in GOOD.items()]


@pytest.fixture(scope="module")
def graph() -> rlx.CompiledGraph:
    return rlx.compile(SRC)


def test_good_values_match_reference(graph: rlx.CompiledGraph) -> None:
    got = graph.run(*_ins())
    want = run(parse_module(SRC), _ins())
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
    np.testing.assert_array_equal(got[0], [3, -3, -3, -(2**31), 2])  # truncation toward zero


MIN32, MIN64 = -(2**31), -(2**63)
CASES = [
    (dict(b=np.array([2, 0, 1, 1, 1], np.int32)), IntegerDivisionError, "3:3: rlx.div",
     "integer division by zero"),
    (dict(a=np.array([MIN32, 1, 1, 1, 1], np.int32), b=np.array([-1, 1, 1, 1, 1], np.int32)),
     IntegerDivisionError, "3:3: rlx.div", rf"overflow \({MIN32} / -1\)"),
    (dict(d=np.array([3, 0, 1, 1])), IntegerDivisionError, "4:3: rlx.elementwise_region",
     "division by zero"),
    (dict(c=np.array([MIN64, 1, 1, 1]), d=np.array([-1, 1, 1, 1])), IntegerDivisionError,
     "4:3: rlx.elementwise_region", "overflow"),
    (dict(d=np.array([3, -2, 1, 1])), IntegerPowError, "11:3: rlx.pow", r"negative exponent \(-2\)"),
    (dict(v=np.array([3, 0, 1], np.uint8)), IntegerDivisionError, "12:3: rlx.div",
     r"division by zero \(dividend 7\)"),
]  # fmt: skip


@pytest.mark.parametrize(("bad", "cls", "where", "msg"), CASES)
def test_rule_is_a_runtime_error(
    graph: rlx.CompiledGraph, bad: dict, cls: type, where: str, msg: str
) -> None:
    if "d" in bad and cls is IntegerDivisionError:
        pass  # the region's remsi and floordivsi both fail; the first one is reported
    with pytest.raises(cls, match=rf"{where}: .*{msg}"):
        graph.run(*_ins(**bad))
    with pytest.raises(cls, match=msg):
        run(parse_module(SRC), _ins(**bad))
    np.testing.assert_array_equal(graph.run(*_ins())[0], [3, -3, -3, MIN32, 2])


def test_errors_are_value_errors_and_zero_division_errors(graph: rlx.CompiledGraph) -> None:
    with pytest.raises(ZeroDivisionError):
        graph.run(*_ins(b=np.zeros(5, np.int32)))
    with pytest.raises(ValueError):
        graph.run(*_ins(b=np.zeros(5, np.int32)))


def test_disk_cache_keeps_the_sites(tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLX_CACHE_DIR", str(tmp_path))
    rlx.compile(SRC)
    g = rlx.compile(SRC)
    assert g.cache_hit
    with pytest.raises(IntegerDivisionError, match="3:3: rlx.div: integer division by zero"):
        g.run(*_ins(b=np.zeros(5, np.int32)))


FUSED = """
func.func @main(%a: tensor<512x512xi32>, %b: tensor<512x512xi32>) -> tensor<512x512xi32> {
  %0 = rlx.div %a, %b : (tensor<512x512xi32>, tensor<512x512xi32>) -> tensor<512x512xi32>
  %1 = rlx.add %0, %a : (tensor<512x512xi32>, tensor<512x512xi32>) -> tensor<512x512xi32>
  func.return %1 : tensor<512x512xi32>
}
"""


def test_fused_and_parallel_chunks_report_the_error() -> None:
    """Fusion turns div + add into one region; 256 Ki elements run as chunks on two threads."""
    g = rlx.compile(FUSED)
    assert "rlx.elementwise_region" in g.ir("rlx") and "parallel_call" in g.ir("loops")
    a = np.arange(512 * 512, dtype=np.int32).reshape(512, 512)
    b = np.full_like(a, 3)
    old = parallel.get_num_threads() if hasattr(parallel, "get_num_threads") else None
    parallel.set_num_threads(2)
    try:
        np.testing.assert_array_equal(g.run(a, b)[0], a // 3 + a)
        for row, col in ((0, 0), (511, 511), (300, 7)):
            bb = b.copy()
            bb[row, col] = 0
            with pytest.raises(
                IntegerDivisionError, match=f"division by zero .dividend {a[row, col]}"
            ):
                g.run(a, bb)
        np.testing.assert_array_equal(g.run(a, b)[0], a // 3 + a)
    finally:
        parallel.set_num_threads(old or 1)


FOLD = """
func.func @main() -> (tensor<2xi32>, tensor<2xi32>) {
  %a = rlx.constant dense<[7, 8]> : tensor<2xi32>
  %z = rlx.constant dense<[1, 0]> : tensor<2xi32>
  %t = rlx.constant dense<2> : tensor<2xi32>
  %0 = rlx.div %a, %z : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  %1 = rlx.div %a, %t : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  func.return %0, %1 : tensor<2xi32>, tensor<2xi32>
}
"""


def test_constant_folding_leaves_the_error_for_run_time() -> None:
    g = rlx.compile(FOLD)
    assert g.ir("rlx").count("rlx.div") == 1  # the good division folded, the bad one kept
    with pytest.raises(IntegerDivisionError, match="6:3: rlx.div: integer division by zero"):
        g.run()
    with pytest.raises(IntegerDivisionError, match="rlx.div: integer division by zero"):
        run(parse_module(FOLD), [])


MEAN = """
func.func @main(%x: tensor<3x0xi32>, %y: tensor<3x0xf32>) -> (tensor<3xi32>, tensor<3xf32>) {
  %0 = rlx.reduce %x {kind = "mean", axes = array<i64: 1>} : (tensor<3x0xi32>) -> tensor<3xi32>
  %1 = rlx.reduce %y {kind = "mean", axes = array<i64: 1>} : (tensor<3x0xf32>) -> tensor<3xf32>
  func.return %0, %1 : tensor<3xi32>, tensor<3xf32>
}
"""


def test_integer_mean_of_nothing() -> None:
    ins = [np.zeros((3, 0), np.int32), np.zeros((3, 0), np.float32)]
    with pytest.raises(
        IntegerDivisionError, match="3:3: rlx.reduce: integer mean over no elements"
    ):
        rlx.compile(MEAN).run(*ins)
    with pytest.raises(IntegerDivisionError, match="rlx.reduce: integer mean over no elements"):
        run(parse_module(MEAN), ins)


FUSED_POW = """
func.func @main(%a: tensor<4xi32>, %b: tensor<4xi32>) -> tensor<4xi32> {
  %0 = rlx.pow %a, %b : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  %1 = rlx.add %0, %a : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  func.return %1 : tensor<4xi32>
}
"""


def test_fused_integer_pow_compiles_and_checks_the_exponent() -> None:
    """Fusion turns pow + add into a region with math.ipowi: square-and-multiply, checked."""
    g = rlx.compile(FUSED_POW)
    assert "math.ipowi" in g.ir("rlx")
    a, b = np.array([2, 3, -4, 5], np.int32), np.array([31, 2, 3, 0], np.int32)
    np.testing.assert_array_equal(g.run(a, b)[0], run(parse_module(FUSED_POW), [a, b])[0])
    with pytest.raises(IntegerPowError, match=r"negative exponent \(-1\)"):
        g.run(a, np.array([3, -1, 1, 0], np.int32))
    with pytest.raises(IntegerPowError, match="negative exponent"):
        run(parse_module(FUSED_POW), [a, np.array([3, -1, 1, 0], np.int32)])
