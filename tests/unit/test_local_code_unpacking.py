"""Unpacking a function's deployed zip is atomic and safe when many workers start at once: two
functions sharing one zip (same CodeSha256), in one runtime or in two (separate locks), never see a
half-written archive or directory."""

from __future__ import annotations

import dataclasses
import http.server
import io
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from serverless_retry_tools.local.runtime.functions import CODE_CACHE_VARIABLE, FunctionConfig, FunctionPool

FILES = {f"pkg/module_{n}.py": f"VALUE = {n}\n" + "# padding\n" * 2000 for n in range(60)}


def _zip() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, text in FILES.items():
            zf.writestr(name, text)
    return buf.getvalue()


@pytest.fixture(scope="module")
def code_url() -> Iterator[str]:
    body = _zip()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/code.zip"
    server.shutdown()
    server.server_close()


@pytest.fixture(autouse=True)
def _code_under_each_work_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests look at a work dir's own code directory: not the suite's shared one."""
    monkeypatch.delenv(CODE_CACHE_VARIABLE, raising=False)


def _config(name: str, url: str) -> FunctionConfig:
    return FunctionConfig.from_get_function(
        {
            "Configuration": {
                "FunctionName": name,
                "FunctionArn": f"arn:aws:lambda:us-east-1:123456789012:function:{name}",
                "Handler": "pkg.module_0.handler",
                "CodeSha256": "c2hhcmVk+/=",
            },
            "Code": {"Location": url},
        }
    )


@pytest.mark.parametrize("runtimes", [1, 2])
def test_workers_starting_together_all_see_the_whole_code(
    tmp_path: Path, code_url: str, runtimes: int
) -> None:
    pools = [FunctionPool(None, tmp_path, region="us-east-1", extra_env={}, libs=[]) for _ in range(runtimes)]
    configs = [_config("one", code_url), _config("two", code_url)]
    workers = 8
    barrier = threading.Barrier(workers)
    errors: list[BaseException] = []
    dirs: list[Path] = []

    def start(n: int) -> None:
        barrier.wait()
        try:
            dirs.append(pools[n % runtimes]._code_dir(configs[n % 2]))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=start, args=(n,)) for n in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    assert len(set(dirs)) == 1  # one shared, complete directory
    (code,) = set(dirs)
    for name, text in FILES.items():
        assert (code / name).read_text() == text
    leftovers = [p.name for p in code.parent.iterdir() if p != code]
    assert leftovers == []  # no half-written archives or staging directories


def test_an_incomplete_directory_from_an_interrupted_run_is_replaced(tmp_path: Path, code_url: str) -> None:
    pool = FunctionPool(None, tmp_path, region="us-east-1", extra_env={}, libs=[])
    config = _config("one", code_url)
    stale = tmp_path / "code" / "c2hhcmVk-_"
    (stale / "pkg").mkdir(parents=True)
    (stale / "pkg" / "module_0.py").write_text("half")
    code = pool._code_dir(dataclasses.replace(config))
    assert code == stale
    assert (code / "pkg" / "module_0.py").read_text() == FILES["pkg/module_0.py"]


def test_code_cache_puts_the_code_where_runtimes_share_it(
    tmp_path: Path, code_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = tmp_path / "shared"
    monkeypatch.setenv(CODE_CACHE_VARIABLE, str(shared))
    first = FunctionPool(None, tmp_path / "one", region="us-east-1", extra_env={}, libs=[])
    second = FunctionPool(None, tmp_path / "two", region="us-east-1", extra_env={}, libs=[])
    code = first._code_dir(_config("one", code_url))
    assert code == shared / "c2hhcmVk-_"
    assert second._code_dir(_config("two", "http://127.0.0.1:9/unreachable")) == code  # not fetched again
    assert not (tmp_path / "one" / "code").exists()
