"""What a package leaves out, and which runtimes it can be built for (no pip run here)."""

from __future__ import annotations

import pytest
from serverless_retry_tools.bundling.installs import Installed, normalize
from serverless_retry_tools.bundling.provided import left_out
from serverless_retry_tools.bundling.targets import (
    Target,
    TargetError,
    parse_arch,
    parse_python,
    pip_target_args,
)

X86 = Target("3.12", "x86_64")


def _item(name: str, *requires: str, requested: bool = False) -> Installed:
    return Installed(name, "1", requested, tuple(requires))


BOTO = [
    _item("boto3", "botocore", "s3transfer"),
    _item("botocore", "jmespath", "urllib3; python_version >= '3.10'", "python-dateutil"),
    _item("s3transfer", "botocore"),
    _item("jmespath"),
    _item("urllib3"),
    _item("python-dateutil", "six"),
    _item("six"),
]


def test_boto3_pulled_in_by_a_library_is_left_out_with_what_only_it_needs() -> None:
    installed = [_item("mylib", "boto3", "urllib3", requested=True), *BOTO]
    assert left_out(installed, X86) == {
        "boto3",
        "botocore",
        "s3transfer",
        "jmespath",
        "python-dateutil",
        "six",
    }


def test_boto3_named_by_the_requirements_comes_with_its_whole_family() -> None:
    installed = [_item("mylib", requested=True), *BOTO]
    installed[1] = _item("boto3", "botocore", "s3transfer", requested=True)
    assert left_out(installed, X86) == set()


def test_a_dropped_distribution_goes_even_when_named_and_takes_its_own_dependencies() -> None:
    installed = [
        _item("aws-lambda-powertools", "jmespath", "typing-extensions", requested=True),
        _item("google-re2", requested=True),
        _item("jmespath"),
        _item("typing_extensions"),
    ]
    assert left_out(installed, X86, dropped=["aws-lambda-powertools"]) == {
        "aws-lambda-powertools",
        "jmespath",
        "typing-extensions",
    }


def test_markers_are_evaluated_for_the_lambda_runtime_not_this_machine() -> None:
    installed = [
        _item(
            "app",
            "winonly; sys_platform == 'win32'",
            "armonly; platform_machine == 'aarch64'",
            requested=True,
        ),
        _item("winonly"),
        _item("armonly"),
    ]
    assert left_out(installed, X86) == {"winonly", "armonly"}
    assert left_out(installed, Target("3.12", "aarch64")) == {"winonly"}


def test_names_compare_normalized() -> None:
    assert normalize("Typing_Extensions") == normalize("typing.extensions") == "typing-extensions"


@pytest.mark.parametrize(("text", "version"), [("3.12", "3.12"), ("python3.11", "3.11"), (" 3.13 ", "3.13")])
def test_runtime_pythons(text: str, version: str) -> None:
    assert parse_python(text) == version


@pytest.mark.parametrize("text", ["3.10", "3.9", "3", "3.12.1", "python3", "pypy3.12", ""])
def test_pythons_lambda_does_not_run_are_refused(text: str) -> None:
    with pytest.raises(TargetError, match=r"Lambda runtimes supported here are 3\.11, 3\.12, 3\.13"):
        parse_python(text)


def test_architectures() -> None:
    assert parse_arch("arm64") == parse_arch("aarch64") == "aarch64"
    assert parse_arch("x86_64") == "x86_64"
    with pytest.raises(TargetError, match="Lambda runs x86_64 or arm64"):
        parse_arch("amd64")


def test_pip_is_asked_for_wheels_of_the_runtimes_platform() -> None:
    args = pip_target_args(Target("3.11", "aarch64"))
    assert args[args.index("--python-version") + 1] == "3.11"
    assert "--only-binary=:all:" in args
    platforms = [args[i + 1] for i, a in enumerate(args) if a == "--platform"]
    assert platforms[0] == "manylinux_2_26_aarch64"  # Amazon Linux 2's glibc
    assert platforms[-1] == "manylinux2014_aarch64"
