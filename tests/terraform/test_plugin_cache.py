"""An init leaves the shared plugin cache alone once it holds the provider.

Found when the suite ran on three workers: a plan in one process failed with "could not read package
directory .terraform/providers/.../linux_amd64" while another process ran ``terraform init``. Our
workspaces carry no lock file, and without one every init installed the provider into the cache
again, removing and re-linking its entry; anything reading the provider through it at that moment
found nothing. scripts/tf-env.sh sets TF_PLUGIN_CACHE_MAY_BREAK_DEPENDENCY_LOCK_FILE, so an init links
what the cache holds instead.
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.terraform.conftest import Terraform, init

CONFIGURATION = """
terraform {
  required_providers {
    aws = { source = "hashicorp/aws", version = "5.100.0" }
  }
}
"""


def _cache_entries(cache: Path) -> dict[str, int]:
    """Each provider package of the cache with the inode change time of its entry (ns)."""
    return {
        str(path.relative_to(cache)): os.lstat(path).st_ctime_ns
        for path in cache.glob("registry.terraform.io/*/*/*/*")
    }


def test_an_init_without_a_lock_file_does_not_reinstall_the_cached_provider(
    terraform: Terraform, tmp_path: Path
) -> None:
    cache = Path(terraform.env["TF_PLUGIN_CACHE_DIR"])
    first, second = tmp_path / "first", tmp_path / "second"
    for directory in (first, second):
        directory.mkdir()
        (directory / "main.tf").write_text(CONFIGURATION, encoding="utf-8")

    result = init(terraform, first, "-backend=false")
    assert result.returncode == 0, result.stdout + result.stderr
    before = _cache_entries(cache)
    assert before, f"the provider is not in the plugin cache {cache}"

    result = init(terraform, second, "-backend=false")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "from the shared cache directory" in result.stdout
    assert _cache_entries(cache) == before  # no entry removed and made again
