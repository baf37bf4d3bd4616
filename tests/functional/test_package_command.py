"""``serverless-retry package``: function and layer zips through the CLI, with pip resolving from a
directory of hand-made wheels (offline), and once from the real package index for Lambda's arm64."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import zipfile
from pathlib import Path

import pytest
import serverless_retry
from serverless_retry_tools import cli
from serverless_retry_tools.bundling import bytecode
from serverless_retry_tools.bundling.bytecode import find_interpreter, pyc_name

from tests.support.wheels import make_wheel

VERSION = serverless_retry.__version__
LIBRARY = Path(serverless_retry.__file__).parent


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small index: a user's library needing boto3 (whose family the runtime has) and a helper, and
    stand-ins for serverless-retry's own dependencies."""
    d = tmp_path_factory.mktemp("wheels")
    make_wheel(d, "mylib", "1.0", ["boto3>=1", "helper", "winonly; sys_platform == 'win32'"])
    make_wheel(d, "helper", "2.0")
    make_wheel(d, "winonly", "1.0")
    make_wheel(d, "boto3", "1.40.0", ["botocore>=1", "s3transfer"])
    make_wheel(d, "botocore", "1.40.0", ["jmespath", "urllib3"])
    make_wheel(d, "s3transfer", "0.14.0", ["botocore"])
    make_wheel(d, "jmespath", "1.0.1")
    make_wheel(d, "urllib3", "2.5.0")
    make_wheel(d, "aws-lambda-powertools", "3.0.0", ["jmespath"], {"aws_lambda_powertools/__init__.py": ""})
    make_wheel(d, "google-re2", "1.1.20250722", [], {"re2/__init__.py": ""})
    return d


@pytest.fixture
def source(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    (src / "orders" / "__pycache__").mkdir(parents=True)
    (src / "app.py").write_text(
        "from orders import handle\n\ndef handler(event, context):\n    return handle(event)\n"
    )
    (src / "orders" / "__init__.py").write_text("def handle(event):\n    return event\n")
    (src / "orders" / "__pycache__" / "x.cpython-312.pyc").write_bytes(b"\0")
    (src / ".env").write_text("SECRET=1\n")
    return src


def _package(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(["package", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def _names(path: Path) -> list[str]:
    with zipfile.ZipFile(path) as zf:
        return zf.namelist()


def _top(names: list[str]) -> set[str]:
    tops = {n.split("/", 1)[0] for n in names if "/" in n}
    return {t for t in tops if not t.endswith(".dist-info") and t != "__pycache__"}


# The Python of the default runtime, which compiles the zip's bytecode (none, and a warning, without).
PYTHON_312 = find_interpreter("3.12")


def test_a_plain_function_zip_carries_its_code_and_requirements_only_and_reproducibly(
    wheels: Path, source: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "requirements.txt").write_text("mylib==1.0\n")
    common = ["-r", str(tmp_path / "requirements.txt"), "--no-index", "--find-links", str(wheels)]
    one, two = tmp_path / "out" / "one.zip", tmp_path / "out" / "two.zip"
    code, out, err = _package(capsys, "function", str(source), *common, "--arch", "arm64", "-o", str(one))
    two.parent.mkdir(exist_ok=True)
    assert code == 0, err
    os.utime(source / "app.py", (0, 0))  # modification times must not reach the zip
    shutil.copy(one, source / "previous.zip")  # nor a previous build written into the source
    common += ["--arch", "arm64"]
    code, _, err = _package(capsys, "function", str(source), *common, "-o", str(source / "previous.zip"))
    assert code == 0, err
    shutil.move(source / "previous.zip", two)
    assert code == 0, err
    assert hashlib.sha256(one.read_bytes()).digest() == hashlib.sha256(two.read_bytes()).digest()
    names = _names(one)
    assert names == sorted(names)
    assert "app.py" in names
    assert "orders/__init__.py" in names
    # boto3 and what only it needs come with the runtime; serverless_retry was not asked for.
    assert _top(names) == {"orders", "mylib", "helper"}
    assert not [n for n in names if n.startswith(".env") or n.endswith("RECORD")]
    # The source's stale cache is left out; every module carries the runtime's bytecode instead.
    sources = [n for n in names if n.endswith(".py")]
    assert {n for n in names if "__pycache__" in n} == (
        {pyc_name(n, "cpython-312") for n in sources} if PYTHON_312 else set()
    )
    assert "orders/__pycache__/__init__.cpython-312.pyc" in names or PYTHON_312 is None
    assert "mylib/__pycache__/__init__.cpython-312.pyc" in names or PYTHON_312 is None
    with zipfile.ZipFile(one) as zf:
        assert {i.date_time for i in zf.infolist()} == {(1980, 1, 1, 0, 0, 0)}
        assert {i.external_attr >> 16 for i in zf.infolist()} == {0o644}
    assert f"function zip for python3.12 arm64: {one}" in out
    assert "+ mylib 1.0" in out
    assert "- boto3 1.40.0" in out
    assert "- botocore 1.40.0" in out
    assert f"sha256 {hashlib.sha256(one.read_bytes()).hexdigest()}" in out
    assert "serverless-retry" not in out
    if PYTHON_312 is None:
        assert "no Python 3.12 on this machine: the zip carries no bytecode for python3.12" in err
    else:
        assert err == ""
        assert f"bytecode (unchecked-hash): {len(sources)} files, cpython-312 by Python 3.12" in out


def test_boto3_named_in_the_requirements_comes_with_what_it_needs(
    wheels: Path, source: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "requirements.txt").write_text("mylib\nboto3==1.40.0\n")
    out = tmp_path / "f.zip"
    code, _, err = _package(
        capsys, "function", str(source), "-r", str(tmp_path / "requirements.txt"),
        "--no-index", "--find-links", str(wheels), "-o", str(out),
    )  # fmt: skip
    assert code == 0, err
    assert _top(_names(out)) == {
        "orders",
        "mylib",
        "helper",
        "boto3",
        "botocore",
        "s3transfer",
        "jmespath",
        "urllib3",
    }


def test_serverless_retry_in_the_requirements_is_the_tools_own_copy(
    wheels: Path, source: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Named in the requirements (at a version these tools carry), serverless_retry goes in from the
    installed library with its dependencies, also before that version is on the index."""
    req = tmp_path / "requirements.txt"
    req.write_text(f"# ours\nserverless-retry=={VERSION}  # the consumer\nhelper\n")
    out = tmp_path / "consumer.zip"
    args = ["function", str(source), "-r", str(req), "--no-index", "--find-links", str(wheels)]
    code, text, err = _package(capsys, *args, "-o", str(out))
    assert code == 0, err
    names = _names(out)
    assert _top(names) == {"orders", "helper", "serverless_retry", "aws_lambda_powertools", "re2", "jmespath"}
    shipped = sorted(
        "serverless_retry/" + p.relative_to(LIBRARY).as_posix()
        for p in LIBRARY.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    )
    assert sorted(n for n in names if n.startswith("serverless_retry/") and "__pycache__" not in n) == shipped
    assert f"+ serverless-retry {VERSION}" in text
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # the filtered copy is gone
    # For functions that attach AWS's public Powertools layer: Powertools and what only it needs stay out.
    code, _, err = _package(capsys, *args, "--without-powertools", "-o", str(out))
    assert code == 0, err
    assert _top(_names(out)) == {"orders", "helper", "serverless_retry", "re2"}


def test_a_layer_holds_serverless_retry_and_its_dependencies_under_python(
    wheels: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "layer.zip"
    common = ["layer", "--no-index", "--find-links", str(wheels), "--python", "3.13", "-o", str(out)]
    code, text, err = _package(capsys, *common)
    assert code == 0, err
    names = _names(out)
    assert all(n.startswith("python/") for n in names)
    assert {n.split("/")[1] for n in names if not n.split("/")[1].endswith(".dist-info")} == {
        "serverless_retry", "aws_lambda_powertools", "re2", "jmespath",
    }  # fmt: skip
    assert "python/serverless_retry/py.typed" in names
    # By default for the modules' default architecture, arm64.
    assert text.startswith(f"layer zip for python3.13 arm64: {out}")
    code, text, err = _package(capsys, *common, "--without-powertools")
    assert code == 0, err
    assert {n.split("/")[1] for n in _names(out) if not n.split("/")[1].endswith(".dist-info")} == {
        "serverless_retry", "re2",
    }  # fmt: skip
    assert "- aws-lambda-powertools  left out" in text
    code, text, err = _package(capsys, *common, "--without-powertools", "--json")
    assert code == 0, err
    report = json.loads(text)
    assert report["sha256"] == hashlib.sha256(out.read_bytes()).hexdigest()
    assert report["targets"] == ["python3.13 arm64"]
    assert [p["name"] for p in report["contents"]] == [f"serverless-retry {VERSION}", "google-re2"]
    assert report["contents"][1]["versions"] == ["1.1.20250722"]
    assert report["left_out"] == [{"name": "aws-lambda-powertools", "versions": [], "files": 0, "bytes": 0}]
    assert report["bytes"] == out.stat().st_size
    python_313 = find_interpreter("3.13")
    assert report["bytecode"] == {
        "mode": "auto",
        "files": sum(n.endswith(".pyc") for n in _names(out)),
        "compiled": {"3.13": "cpython-313"} if python_313 else {},
        "missing": [] if python_313 else ["3.13"],
    }
    code, text, err = _package(capsys, *common, "--without-powertools", "--bytecode", "none")
    assert code == 0, err
    assert not [n for n in _names(out) if "__pycache__" in n]
    assert "no bytecode (--bytecode none)" in text


def test_bytecode_for_a_runtime_whose_python_is_not_here_is_a_warning_or_when_required_an_error(
    wheels: Path,
    source: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Never a pyc of another Python's version: without the runtime's interpreter the zip carries
    sources only and says so, and --bytecode require refuses to build."""
    monkeypatch.setattr(bytecode, "find_interpreter", lambda version: None)
    out = tmp_path / "f.zip"
    code, text, err = _package(capsys, "function", str(source), "--python", "3.13", "-o", str(out))
    assert code == 0, err
    assert "no Python 3.13 on this machine: the zip carries no bytecode for python3.13" in err
    assert "bytecode (unchecked-hash): 0 files, none; none for python3.13 (no such Python here)" in text
    assert not [n for n in _names(out) if "__pycache__" in n]
    out.unlink()
    code, _, err = _package(
        capsys, "function", str(source), "--python", "3.13", "--bytecode", "require", "-o", str(out)
    )
    assert code == 2
    assert err.startswith("error: no Python 3.13 on this machine to compile the zip's bytecode")
    assert not out.exists()


def test_code_importing_serverless_retry_without_it_gets_a_warning(
    source: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (source / "consumer.py").write_text("from serverless_retry import RetryableError\n")
    out = tmp_path / "f.zip"
    code, _, err = _package(capsys, "function", str(source), "-o", str(out))
    assert code == 0
    assert "your code imports serverless_retry, which this zip does not carry" in err
    assert not [n for n in _names(out) if n.startswith("serverless_retry/")]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["function", "{missing}"], "source directory {missing} does not exist"),
        (["function", "{src}", "-r", "{missing}"], "requirements file {missing} does not exist"),
        (
            ["function", "{src}", "-r", "{req}", "--no-index", "--find-links", "{wheels}"],
            "pip could not install the requirements for python3.12 arm64",
        ),
        (
            ["function", "{src}", "-r", "{old}"],
            f"asks for serverless-retry<0.1, but these tools carry serverless-retry {VERSION}",
        ),
    ],
)
def test_bad_input_is_a_clear_usage_error_that_leaves_no_zip(  # noqa: PLR0917
    argv: list[str],
    message: str,
    wheels: Path,
    source: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / "req.txt").write_text("helper\nno-such-distribution==9.9\n")
    (tmp_path / "old.txt").write_text("serverless-retry<0.1\n")
    values = {
        "missing": str(tmp_path / "missing"),
        "src": str(source),
        "req": str(tmp_path / "req.txt"),
        "old": str(tmp_path / "old.txt"),
        "wheels": str(wheels),
    }
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    previous = out_dir / "f.zip"
    previous.write_bytes(b"the previous build")
    code, _, err = _package(capsys, *[a.format(**values) for a in argv], "-o", str(previous))
    assert code == 2
    assert message.format(**values) in err
    assert err.startswith("error: ")
    assert "Traceback" not in err
    assert previous.read_bytes() == b"the previous build"  # not replaced by a half-written zip
    assert [p.name for p in out_dir.iterdir()] == ["f.zip"]  # no temporary file left behind
    if "pip could not" in message:
        assert "no-such-distribution==9.9" in err  # pip's own explanation


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--python", "3.9", "Python version '3.9': Lambda runtimes supported here are 3.11, 3.12, 3.13"),
        ("--python", "three", "Python version 'three'"),
        ("--arch", "i386", "architecture 'i386': Lambda runs x86_64 or arm64"),
    ],
)
def test_a_runtime_lambda_does_not_have_is_refused(  # noqa: PLR0917
    flag: str, value: str, message: str, source: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["package", "function", str(source), flag, value, "-o", str(tmp_path / "f.zip")])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "f.zip").exists()


def test_wheels_are_chosen_for_lambdas_platform_from_the_real_index(
    source: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """From the package index (PyPI): a compiled wheel for python3.11 on arm64 (Amazon Linux 2's glibc
    2.26: the newest google-re2 needing 2.27 is passed over), whatever machine builds, and a small
    pure-Python one."""
    (tmp_path / "requirements.txt").write_text("google-re2>=1.1.20250722,<1.2\nsix==1.17.0\n")
    out = tmp_path / "f.zip"
    args = ["function", str(source), "-r", str(tmp_path / "requirements.txt"), "--python", "3.11"]
    for arch, machine, elf in (("arm64", "aarch64", 183), ("x86_64", "x86_64", 62)):
        code, text, err = _package(capsys, *args, "--arch", arch, "-o", str(out))
        assert code == 0, err
        with zipfile.ZipFile(out) as zf:
            (extension,) = [n for n in zf.namelist() if n.endswith(".so")]
            header = zf.read(extension)[:20]
        assert extension == f"re2/_re2.cpython-311-{machine}-linux-gnu.so"
        assert int.from_bytes(header[18:20], "little") == elf  # ELF e_machine
        assert "+ six 1.17.0" in text
    assert "+ google-re2 1.1.20250722" in text  # x86_64: 1.1.20251105 needs glibc 2.27
