"""The package layers import downward only (import-linter's `layers` contract in
pyproject.toml), and every module imports on its own, first, in a fresh interpreter
(an import cycle that depends on which module comes first fails here)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_EACH_MODULE_FIRST = """
import importlib, pathlib, sys
mods = sorted('.'.join(p.with_suffix('').parts).removesuffix('.__init__')
              for p in pathlib.Path('rlx').rglob('*.py'))
bad = []
for m in mods:
    for k in [k for k in sys.modules if k == 'rlx' or k.startswith('rlx.')]:
        del sys.modules[k]
    try:
        importlib.import_module(m)
    except Exception as e:
        bad.append(f'{m}: {e!r}')
print('\\n'.join(bad))
sys.exit(1 if bad else 0)
"""


def test_layers_contract() -> None:
    exe = Path(sys.executable).with_name("lint-imports")
    r = subprocess.run([str(exe)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr


def test_every_module_imports_first() -> None:
    r = subprocess.run(
        [sys.executable, "-c", _EACH_MODULE_FIRST],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stdout + r.stderr
