"""scripts/uv_install.py: uv installs with pip's configuration, or not at all (build.sh uses pip)."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from tests.support.scripts import load_script

uv_install = load_script("uv_install")

# This machine's shape: wheel directory and extra indexes in pip.conf and PIP_* variables.
LISTED = """\
:env:.cert='/etc/ssl/certs/ca-certificates.crt'
:env:.default-timeout='180'
:env:.disable-pip-version-check='1'
:env:.find-links='/opt/wheels'
global.cert='/etc/ssl/certs/other.crt'
global.constraint='/etc/xdg/pip/constraints.txt'
global.extra-index-url='file:///opt/pypi/simple file:///opt/pypi-more/simple'
global.find-links='/elsewhere'
install.index-url='https://mirror.example/simple'
freeze.exclude='pip'
"""


def test_the_higher_scope_wins_and_other_commands_sections_are_left_out() -> None:
    config = uv_install.parse_config_list(LISTED)
    assert config["find-links"] == "/opt/wheels"  # PIP_FIND_LINKS over pip.conf
    assert config["cert"] == "/etc/ssl/certs/ca-certificates.crt"
    assert config["index-url"] == "https://mirror.example/simple"  # [install] applies to install
    assert "exclude" not in config


def test_each_setting_is_passed_uvs_way() -> None:
    call = uv_install.translate(uv_install.parse_config_list(LISTED))
    assert call.options == [
        "--index-strategy", "unsafe-best-match",
        "--constraint", "/etc/xdg/pip/constraints.txt",
        "--extra-index-url", "file:///opt/pypi/simple",
        "--extra-index-url", "file:///opt/pypi-more/simple",
        "--find-links", "/opt/wheels",
        "--index-url", "https://mirror.example/simple",
    ]  # fmt: skip
    assert call.env == {"SSL_CERT_FILE": "/etc/ssl/certs/ca-certificates.crt", "UV_HTTP_TIMEOUT": "180"}


@pytest.mark.parametrize("setting", ["user='true'", "pre='true'", "only-binary=':all:'", "target='/x'"])
def test_a_setting_without_an_exact_uv_equivalent_is_refused(setting: str) -> None:
    with pytest.raises(uv_install.Untranslatable):
        uv_install.translate(uv_install.parse_config_list(f"global.{setting}\n"))


def _executable(path: Path, script: str) -> str:
    path.write_text(f"#!{sys.executable}\n{script}", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def test_main_runs_uv_with_the_translated_options(tmp_path: Path) -> None:
    python = _executable(tmp_path / "python", "print(\"global.find-links='/opt/wheels'\")\n")
    record = tmp_path / "uv-call.json"
    uv = _executable(
        tmp_path / "uv",
        f"import json, os, sys\njson.dump([sys.argv[1:], os.environ.get('SSL_CERT_FILE')], open({str(record)!r}, 'w'))\n",
    )
    assert (
        uv_install.main(["--uv", uv, "--python", python, "--config-from", python, "--", "-e", ".[dev]"]) == 0
    )
    argv, cert = json.loads(record.read_text())
    assert argv == [
        "pip", "install", "--quiet", "--python", python,
        "--index-strategy", "unsafe-best-match", "--find-links", "/opt/wheels", "-e", ".[dev]",
    ]  # fmt: skip
    assert cert == os.environ.get("SSL_CERT_FILE")  # no cert setting: the environment's, untouched


def test_main_installs_nothing_and_exits_3_when_pip_has_a_setting_uv_lacks(tmp_path: Path) -> None:
    python = _executable(tmp_path / "python", "print(\"global.user='true'\")\n")
    uv = _executable(tmp_path / "uv", "raise SystemExit('uv must not run')\n")
    assert (
        uv_install.main(["--uv", uv, "--python", python, "--config-from", python, "--", "boto3"])
        == uv_install.UNTRANSLATABLE
    )
