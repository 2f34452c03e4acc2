"""docs/tutorial.ipynb runs top to bottom at its tiny budgets and shows what its text promises.

The notebook is stored without outputs (they hold temporary paths and pids and would change with
every run); this test checks that, then executes it in a fresh kernel of this interpreter with the
repository root as working directory, so the checkout's `zsceval` is the one imported.
"""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "docs" / "tutorial.ipynb"
INSTALL = 'pip install -e ".[test]"'
nbformat = pytest.importorskip("nbformat", reason=f"nbclient is not installed: {INSTALL}")
nbclient = pytest.importorskip("nbclient", reason=f"nbclient is not installed: {INSTALL}")
kernelspec = pytest.importorskip("ipykernel.kernelspec", reason=f"ipykernel is not installed: {INSTALL}")


def _text(cell) -> str:
    """A code cell's printed and displayed text."""
    parts = []
    for output in cell.get("outputs", []):
        parts.append(output.get("text", ""))
        parts.append(output.get("data", {}).get("text/plain", ""))
    return "".join(parts)


def test_tutorial_is_stored_without_outputs():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert code and all(not cell.outputs and cell.execution_count is None for cell in code)


def test_tutorial_trains_scores_plots_and_registers_a_plugin(tmp_path):
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager

    from zsceval import registry

    kernelspec.write_kernel_spec(tmp_path / "kernels" / "zsceval-test")  # argv: this interpreter
    manager = KernelManager(
        kernel_name="zsceval-test",
        kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(tmp_path / "kernels")]),
    )
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(nb, km=manager, timeout=600, resources={"metadata": {"path": str(ROOT)}})
    client.execute()  # raises CellExecutionError, naming the cell, if any cell fails
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    text = "\n".join(_text(cell) for cell in code)
    assert "12,800 env steps" in text  # the SP run trained its two iterations
    assert "zsceval:cramped_room@1/test" in text and "BR-Prox IQM expert" in text
    assert "c002_final" in text  # the per-unit table
    figures = [o for cell in code for o in cell.outputs if "image/png" in o.get("data", {})]
    assert len(figures) == 2  # the baselines' bar chart and the performance profile
    assert "True" in _text(code[-2]) and "sp-sparse: 12,800 env steps" in _text(code[-1])
    assert "sp-sparse" not in registry.names()  # registered in the kernel, not in this process
