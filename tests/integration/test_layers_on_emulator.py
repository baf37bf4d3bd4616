"""A function's layers run as on Lambda: each layer version's zip extracted, in the function's order,
into its /opt, whose python/ and python/lib/pythonX.Y/site-packages come right after the function's
own code on sys.path; a layer version the emulator does not hold fails as on AWS."""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from serverless_retry_tools.local.emulator.emulator import Emulator
from serverless_retry_tools.local.runtime.functions import FunctionPool
from serverless_retry_tools.local.runtime.layers import LayerError, mount

from tests.integration.emulator_account import EmulatorAccount

CONFIG = Config(retries={"mode": "standard", "max_attempts": 3})
HANDLER = """
import sys, shared, only_in_site, both
def handler(event, context):
    return {"shared": shared.WHO, "site": only_in_site.WHO, "both": both.WHO,
            "path": [p for p in sys.path if "opt-" in p or p.endswith("code")][:3]}
"""


def _zip(files: dict[str, str]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, text in files.items():
            zf.writestr(name, text)
    return buf.getvalue()


class Aws(EmulatorAccount):
    def layer(self, files: dict[str, str]) -> str:
        arn: str = self.client("lambda").publish_layer_version(
            LayerName=self.name("layer"), Content={"ZipFile": _zip(files)}, CompatibleRuntimes=["python3.12"]
        )["LayerVersionArn"]
        return arn

    def function(self, files: dict[str, str], layers: list[str]) -> str:
        name = self.name("fn")
        self.client("lambda").create_function(
            FunctionName=name,
            Role=self.role,
            Handler="app.handler",
            Runtime="python3.12",
            Code={"ZipFile": _zip(files)},
            Layers=layers,
        )
        return name


@pytest.fixture(scope="module")
def aws() -> Iterator[Aws]:
    with Emulator() as emulator:
        yield Aws(emulator, config=CONFIG)


def _pool(aws: Aws, tmp_path: Path) -> FunctionPool:
    return FunctionPool(
        aws.client("lambda"), tmp_path, region=aws.emulator.region, extra_env=aws.emulator.env()
    )


def test_a_function_imports_from_its_layers_in_lambdas_order(aws: Aws, tmp_path: Path) -> None:
    first = aws.layer(
        {
            "python/shared.py": "WHO = 'first'\n",
            "python/both.py": "WHO = 'first'\n",
            "python/lib/python3.12/site-packages/only_in_site.py": "WHO = 'first-site'\n",
        }
    )
    second = aws.layer({"python/both.py": "WHO = 'second'\n"})  # a later layer's file wins
    name = aws.function({"app.py": HANDLER, "shared.py": "WHO = 'function'\n"}, [first, second])
    pool = _pool(aws, tmp_path)
    try:
        result = pool.invoke(name, {})
    finally:
        pool.close()
    assert result.ok, result.error
    # The function's own code comes first (its shared.py shadows the layer's), as /var/task does.
    assert (result.result["shared"], result.result["site"], result.result["both"]) == (
        "function",
        "first-site",
        "second",
    )


def test_a_layer_version_the_emulator_does_not_hold_fails_as_on_aws(aws: Aws, tmp_path: Path) -> None:
    lam = aws.client("lambda")
    account = aws.role.split(":")[4]
    missing = f"arn:aws:lambda:{aws.emulator.region}:{account}:layer:never-published:1"
    with pytest.raises(ClientError, match=re.escape(f"Layer version {missing} does not exist.")):
        aws.function({"app.py": HANDLER}, [missing])  # AWS refuses the configuration itself
    # Deleted after the function was configured: Lambda keeps what it extracted, the emulator cannot
    # (the zip is gone), so the function does not start, with AWS's message.
    layer = aws.layer({"python/shared.py": "WHO = 'gone'\n"})
    name = aws.function({"app.py": HANDLER}, [layer])
    function_arn: str = lam.get_function(FunctionName=name)["Configuration"]["FunctionArn"]
    name_of, version = layer.split(":")[-2:]
    lam.delete_layer_version(LayerName=name_of, VersionNumber=int(version))
    with pytest.raises(LayerError, match=re.escape(f"Layer version {layer} does not exist.")):
        mount(lam, function_arn, [layer], tmp_path)
    # Another account's layer (AWS's public Powertools layer): accepted, as AWS may hold it, but the
    # emulator cannot serve it, so the function does not start rather than run without it.
    public = "arn:aws:lambda:us-east-1:017000801446:layer:AWSLambdaPowertoolsPythonV3-python312-arm64:7"
    other = aws.function({"app.py": HANDLER}, [public])
    assert [x["Arn"] for x in lam.get_function(FunctionName=other)["Configuration"]["Layers"]] == [public]
    pool = _pool(aws, tmp_path)
    try:
        with pytest.raises(
            LayerError, match=r"does not exist\. \(the emulator holds only layers published to"
        ):
            pool.invoke(other, {})
    finally:
        pool.close()
