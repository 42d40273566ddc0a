"""Frontends: importers that turn models from other frameworks into rlx modules.

* `rlx.frontends.onnx` — ONNX models (`import_model(path_or_ModelProto)`).
"""
