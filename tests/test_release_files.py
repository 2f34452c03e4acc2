"""The files a release needs: a license, a citation file that validates against the Citation File
Format schema, and a changelog, all at the version the package reports."""

import re
from pathlib import Path

import yaml

import zsceval

REPO = Path(__file__).resolve().parents[1]


def test_the_license_is_mit_and_the_package_metadata_says_so():
    text = (REPO / "LICENSE").read_text()
    assert text.startswith("MIT License") and "Permission is hereby granted, free of charge" in text
    assert 'license="MIT"' in (REPO / "setup.py").read_text()


def test_the_citation_file_validates_against_the_cff_schema_at_the_package_version():
    from cffconvert.cli.create_citation import create_citation

    create_citation(str(REPO / "CITATION.cff"), None).validate()  # raises on a schema violation
    data = yaml.safe_load((REPO / "CITATION.cff").read_text())
    assert str(data["version"]) == zsceval.__version__ and data["license"] == "MIT"


def test_a_broken_citation_file_fails_the_validation(tmp_path):
    import pytest
    from cffconvert.cli.create_citation import create_citation

    bad = tmp_path / "CITATION.cff"
    text = (REPO / "CITATION.cff").read_text()
    bad.write_text(text.replace("cff-version: 1.2.0", "cff-version: 1.2.0\nauthor: x"))  # not a CFF key
    citation = create_citation(str(bad), None)
    with pytest.raises(Exception):  # noqa: B017 (jsonschema's or pykwalify's error, by version)
        citation.validate()


def test_the_changelog_has_a_section_for_the_package_version():
    text = (REPO / "CHANGELOG.md").read_text()
    assert re.search(rf"^## \[{re.escape(zsceval.__version__)}\] - \d{{4}}-\d{{2}}-\d{{2}}$", text, re.M)
    assert "## [Unreleased]" in text
