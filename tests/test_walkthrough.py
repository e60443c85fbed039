"""examples/walkthrough.ipynb executes top to bottom in a fresh kernel and shows its plots."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "examples" / "walkthrough.ipynb"


def _generator():
    spec = importlib.util.spec_from_file_location("make_walkthrough",
                                                  ROOT / "tools" / "make_walkthrough.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_notebook_is_the_generated_one_and_has_no_outputs():
    committed = nbformat.read(NOTEBOOK, as_version=4)
    generated = _generator().build()
    assert [c.source for c in committed.cells] == [c.source for c in generated.cells], (
        "examples/walkthrough.ipynb is stale: run python tools/make_walkthrough.py")
    assert all(not c.get("outputs") for c in committed.cells if c.cell_type == "code")


def test_walkthrough_executes_and_shows_its_plots(tmp_path):
    from nbclient import NotebookClient

    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    code = [c for c in nb.cells if c.cell_type == "code"]
    errors = [o for c in code for o in c.outputs if o.output_type == "error"]
    assert not errors
    text = "\n".join(o.get("text", "") for c in code for o in c.outputs
                     if o.output_type == "stream")
    assert "SOLVED [1. 0.]" in text                      # the LCP of section 1
    assert "walkthrough-meshcat.html" in text and (tmp_path / "walkthrough-meshcat.html").is_file()
    assert "2 trials; best:" in text
    images = [c for c in code if any("image/png" in o.get("data", {}) for o in c.outputs)]
    assert len(images) == 2                              # the closed loop and the simulator
