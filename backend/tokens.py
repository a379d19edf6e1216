"""Secret tokens (customers' and agents'): only their digests are stored."""

import hashlib
import hmac


def digest(token: str) -> str:
    # Tokens are 256-bit random strings: a plain SHA-256 is enough (no dictionary to guess from).
    return hashlib.sha256(token.encode()).hexdigest()


def matches(token: str, stored_digest: str) -> bool:
    """Constant-time comparison, so response times tell nothing about how much matched."""
    return hmac.compare_digest(digest(token), stored_digest)
