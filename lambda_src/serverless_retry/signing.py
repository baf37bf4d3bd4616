"""Envelope signatures: a copy our consumer wrote, told apart from one a producer forged.

With the claims table, a copy's retry id and attempt decide which chain it claims; a producer allowed
to send to the queue (but not to receive from it) could otherwise name another message's chain at a
higher attempt and have the real copy acknowledged as a duplicate. So every envelope the consumer
writes carries ``sig``: an HMAC-SHA256 (128-bit tag, base64url) over the envelope without the fields
that legitimately change on the way (``due_at`` and ``claimants``, which waiting copies and the DLQ
redrive rewrite; neither can take over a live claim: see the claims module), keyed by a per-deployment
secret kept in the claims table. An envelope whose signature does not verify runs in a chain apart,
``unsigned:<id>`` (envelope.unwrap): it can never touch another message's chain.

Pure: the key is passed in (``from_key``) or loaded on first use (``lazy``), and nothing here talks to
AWS.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Callable, Mapping
from typing import Any

from serverless_retry.errors import KeyUnavailable

__all__ = ["UNSIGNED_KEYS", "EnvelopeSigner", "KeyUnavailable", "signing_text"]

# Meta fields outside the signature: rewritten by waiting copies (due_at, claimants) and the DLQ redrive
# (claimants); sig itself.
UNSIGNED_KEYS = frozenset({"due_at", "claimants", "sig"})
_TAG_BYTES = 16
_ENCODE = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode


def signing_text(document: Mapping[str, Any], envelope_key: str = "serverless_retry") -> str:
    """The canonical text an envelope's signature covers: the envelope as ``encode`` writes it, its
    meta without UNSIGNED_KEYS. A parsed envelope gives the same text as the one written."""
    meta = document[envelope_key]
    signed = {k: v for k, v in meta.items() if k not in UNSIGNED_KEYS}
    return _ENCODE({**document, envelope_key: signed})


class EnvelopeSigner:
    """Signs and verifies envelopes with one key, loaded by ``load`` on first use and then kept."""

    def __init__(self, load: Callable[[], bytes]) -> None:
        self._load = load
        self._key: bytes | None = None

    @classmethod
    def from_key(cls, key: bytes) -> EnvelopeSigner:
        signer = cls(lambda: key)
        signer._key = key
        return signer

    @property
    def loaded(self) -> bool:
        return self._key is not None

    def key(self) -> bytes:
        """The key; raises KeyUnavailable when it cannot be loaded (tried again on the next call)."""
        if self._key is None:
            try:
                key = self._load()
            except Exception as exc:
                raise KeyUnavailable(f"the envelope signing key could not be loaded: {exc}") from exc
            if not isinstance(key, bytes) or len(key) < 16:
                raise KeyUnavailable("the envelope signing key is missing or shorter than 16 bytes")
            self._key = key
        return self._key

    def sign_text(self, text: str) -> str:
        tag = hmac.new(self.key(), text.encode("utf-8"), hashlib.sha256).digest()[:_TAG_BYTES]
        return base64.urlsafe_b64encode(tag).decode("ascii").rstrip("=")

    def sign(self, document: Mapping[str, Any]) -> str:
        return self.sign_text(signing_text(document))

    def verify(self, document: Mapping[str, Any]) -> bool:
        """Whether ``document`` (a parsed envelope) carries a signature made with this key."""
        sig = document.get("serverless_retry", {}).get("sig")
        if not isinstance(sig, str):
            return False
        return hmac.compare_digest(sig, self.sign(document))
