"""No committed file under docs/, zsceval/ or benchmarks/ holds an absolute path of the machine it
was written on (a run folder, the checkout, the home folder): records and docs must read the same
on every machine, so they name files relative to the repository or through a placeholder."""

import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FIXED = ("/work/runs", "/work/main", "/work/.mirror", "/root/")
"""The folders this project's runs were made in (a CI clone lives elsewhere, so these are named)."""


def _committed() -> list[Path]:
    try:
        out = subprocess.run(["git", "ls-files", "docs", "zsceval", "benchmarks"], cwd=REPO,
                             capture_output=True, text=True, check=True).stdout  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the committed files cannot be listed")
    return [REPO / line for line in out.splitlines() if line]


def _text(path: Path) -> str | None:
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if b"\0" in data[:4096]:  # binary (parquet, safetensors, png)
        return None
    return data.decode("utf-8", errors="replace")


# Folders every machine has: a checkout cloned straight into one of them (``/tmp/<clone>``) must
# not turn every scratch path of the docs (``/tmp/sets``) into a hit.
SYSTEM_FOLDERS = {"/", "/tmp", "/var/tmp", "/root", "/home"}


def _needles() -> set[str]:
    needles = {*FIXED, str(Path.home()) + "/"}
    if str(REPO.parent) not in SYSTEM_FOLDERS:
        needles.add(str(REPO.parent) + "/")
    needles.discard("//")
    return needles


def _hits(paths: list[Path], needles: set[str]) -> list[str]:
    hits = []
    for path in paths:
        text = _text(path)
        for needle in sorted(needles) if text is not None else ():
            if needle in text:
                line = text[: text.index(needle)].count("\n") + 1
                hits.append(f"{path}:{line}: {needle}")
    return hits


def test_no_committed_file_holds_a_machine_path():
    hits = _hits(_committed(), _needles())
    assert not hits, "machine paths in committed files:\n" + "\n".join(hits)


def test_the_scan_finds_a_planted_path_and_skips_binaries(tmp_path):
    planted, binary = tmp_path / "x.json", tmp_path / "y.parquet"
    planted.write_text(f'{{"run": "{Path.home()}/runs/s12"}}\n')
    binary.write_bytes(b"PAR1\0" + f"{Path.home()}/runs".encode())
    assert [h.split(":")[0] for h in _hits([planted, binary], _needles())] == [str(planted)]
