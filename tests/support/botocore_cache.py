"""One parse of botocore's data per test process, not one per boto3 Session.

botocore caches what it parses per Loader, and every Session has its own: each new Session parses
``endpoints.json`` (1.2 MB) again on its first client, and each service model again. The suite makes
thousands of Sessions (moto's ``mock_aws`` gives every test a fresh default session; each local
runtime, CLI run and fixture builds its own), and a profile of a fresh-clone run found ~40 s of the
workers' CPU in that JSON parsing. Shared here, keyed by the loader's search paths so that a custom
data path still gets its own data: within one Session botocore already hands the same parsed objects
to every client, so sharing them between Sessions changes nothing but the time. Tests only: the
Lambda code keeps one Session per execution environment anyway.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from botocore import loaders

# Data files read whole and only read afterwards (EndpointResolver and friends keep them as given).
_SHARED_DATA = frozenset({"endpoints", "partitions"})
_lock = threading.Lock()
_data: dict[tuple[tuple[str, ...], str], Any] = {}
_models: dict[tuple[tuple[str, ...], str, str, str | None], Any] = {}
_installed: list[bool] = []  # non-empty once installed


def share_parsed_data() -> None:
    """Install the process-wide cache (idempotent)."""
    with _lock:
        if _installed:
            return
        _installed.append(True)
    load_data_with_path: Callable[..., Any] = loaders.Loader.load_data_with_path
    load_service_model: Callable[..., Any] = loaders.Loader.load_service_model

    def shared_data_with_path(self: loaders.Loader, name: str) -> Any:
        if name not in _SHARED_DATA:
            return load_data_with_path(self, name)
        key = (tuple(self.search_paths), name)
        with _lock:
            if key not in _data:
                _data[key] = load_data_with_path(self, name)
            return _data[key]

    def shared_service_model(
        self: loaders.Loader, service_name: str, type_name: str, api_version: str | None = None
    ) -> Any:
        key = (tuple(self.search_paths), service_name, type_name, api_version)
        with _lock:
            if key not in _models:
                _models[key] = load_service_model(self, service_name, type_name, api_version)
            return _models[key]

    loaders.Loader.load_data_with_path = shared_data_with_path  # type: ignore[method-assign]
    loaders.Loader.load_service_model = shared_service_model  # type: ignore[method-assign]
