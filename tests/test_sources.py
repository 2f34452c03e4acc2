"""Every citation a reader meets can be opened: no committed file under zsceval/, algorithms/, docs/,
benchmarks/, layouts/ or tests/ cites a note that is not in the repository, a path outside it, a
numbered paper ("paper 00N") or an issue number. Sources are a paper's title with its section, a
reference repository's file, or a document in this repository (docs/reference-protocol.md and
docs/overcooked-rules.md hold the reference facts)."""

import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCANNED = ("zsceval", "algorithms", "docs", "benchmarks", "layouts", "tests", "README.md")
NOTES = tuple("-".join(parts) for parts in (("algorithms", "facts"), ("overcooked", "spec"),
                                            ("zsceval", "facts"), ("tbs", "facts")))  # fmt: skip
"""Notes the project was built from that live outside the repository (spelled in pieces so that a
plain grep of the tree finds nothing here either)."""
SHARED = "/".join(("..", "shared"))
FORBIDDEN = {
    "outside note": re.compile(r"\b(?:" + "|".join(map(re.escape, NOTES)) + r")\b"),
    "path outside the repository": re.compile(re.escape(SHARED) + r"\b|\bshared/(?:docs|papers)\b"),
    "numbered paper": re.compile(r"\b[Pp]apers? 00\d\b"),
    "issue number": re.compile(r"\b[Ii]ssues? #?\d+\b(?!/)"),
}
"""What a reader cannot resolve. An issue of another repository is cited by its URL."""


def _committed() -> list[Path]:
    try:
        out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", *SCANNED],
                             cwd=REPO, capture_output=True, text=True, check=True).stdout  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the committed files cannot be listed")
    this = Path(__file__).resolve()
    return [REPO / line for line in out.splitlines() if line and (REPO / line).resolve() != this]


def _text(path: Path) -> str | None:
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if b"\0" in data[:4096]:  # binary (parquet, safetensors, png)
        return None
    return data.decode("utf-8", errors="replace")


def _hits(paths: list[Path]) -> list[str]:
    hits = []
    for path in paths:
        text = _text(path)
        if text is None:
            continue
        for what, pattern in FORBIDDEN.items():
            for match in pattern.finditer(text):
                line = text[: match.start()].count("\n") + 1
                hits.append(f"{path.relative_to(REPO)}:{line}: {what}: {match.group(0)!r}")
    return hits


def test_every_citation_resolves_inside_the_repository_or_to_a_named_source():
    hits = _hits(_committed())
    assert not hits, "unresolvable citations (cite the paper, the reference file or docs/):\n" + "\n".join(
        hits
    )


def test_the_scan_finds_each_kind_and_spares_named_sources(tmp_path, monkeypatch):
    monkeypatch.setitem(globals(), "REPO", tmp_path)
    bad = tmp_path / "bad.py"
    bad.write_text(
        f'"""From {NOTES[2]} item 9 and {NOTES[1]} section 4.6,\n'
        f'see {SHARED}/docs, paper {"002"} and issue {"34"}."""\n'
    )
    good = tmp_path / "good.md"
    good.write_text(
        'ZSC-Eval paper, Sec. 4.3; docs/reference-protocol.md "Pipeline" item 9; docs/overcooked-rules.md\n'
        "§4.6; https://github.com/FLAIROx/JaxMARL/issues/167; an algorithms-agnostic facts table.\n"
    )
    binary = tmp_path / "x.parquet"
    binary.write_bytes(b"PAR1\0" + NOTES[0].encode())
    kinds = sorted(h.split(": ")[1] for h in _hits([bad, good, binary]))
    assert kinds == sorted(["outside note", "outside note", "path outside the repository", "numbered paper",
                            "issue number"])  # fmt: skip
    assert all(h.startswith("bad.py:") for h in _hits([bad, good, binary]))
