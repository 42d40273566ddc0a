"""Peers running one ONNX file: onnxruntime and OpenVINO sessions, timing and cosine.

Shared by bench/cnn.py and bench/transformer_exports.py. Each runner takes the feeds by
input name and returns the first output; a peer that is not installed gives None (its
column stays empty). Timing is `common.race`. Threads follow `BENCH_THREADS` (bench/common.py).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from common import THREADS

import numpy as np  # isort: skip

Runner = Callable[[], np.ndarray]
Feeds = dict[str, np.ndarray]


def ort_runner(path: Path, feeds: Feeds) -> Runner | None:
    """onnxruntime (ORT_ENABLE_ALL, CPU provider) on `path`."""
    try:
        import onnxruntime as ort
    except ImportError:
        return None
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    if THREADS:
        so.intra_op_num_threads = so.inter_op_num_threads = THREADS
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    return lambda: sess.run(None, feeds)[0]


def ov_runner(path: Path, feeds: Feeds) -> Runner | None:
    """OpenVINO (CPU plugin, LATENCY hint, f32 inference precision) on `path`."""
    try:
        import openvino as ov
    except ImportError:
        return None
    core = ov.Core()
    config = {"PERFORMANCE_HINT": "LATENCY", "INFERENCE_PRECISION_HINT": "f32"}
    if THREADS:
        config["INFERENCE_NUM_THREADS"] = str(THREADS)
    req = core.compile_model(core.read_model(str(path)), "CPU", config).create_infer_request()

    def run() -> np.ndarray:
        req.infer(feeds)
        return np.array(req.get_output_tensor(0).data)

    return run


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-300))
