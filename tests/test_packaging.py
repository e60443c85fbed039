"""Packaging facts a user relies on: the version they see, type markers, the changelog."""

from __future__ import annotations

import re
from importlib.metadata import version
from pathlib import Path

import pytest

import c3mpc
from c3mpc.cli import main

ROOT = Path(__file__).resolve().parents[1]


def test_version_flag_prints_the_installed_distribution_version(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"c3mpc {version('c3mpc')}"
    assert c3mpc.__version__ == version("c3mpc")


@pytest.mark.parametrize("package", ["c3mpc", "lcs", "plants", "estimators", "hardware"])
def test_every_package_ships_a_py_typed_marker(package):
    assert (ROOT / package / "py.typed").is_file()


def test_changelog_has_a_section_for_the_current_version():
    text = (ROOT / "CHANGELOG.md").read_text()
    assert "## [Unreleased]" in text
    assert re.search(rf"^## \[{re.escape(version('c3mpc'))}\] - \d{{4}}-\d\d-\d\d$", text, re.M)
