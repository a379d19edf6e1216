"""Who the customer is, as the shop says: a user id, an e-mail and a name, signed by the shop's
server so the widget cannot claim to be someone else.

The shop's server computes HMAC-SHA256 with the identity secret over the canonical form
`user_id + "\\n" + email + "\\n" + name` (a missing field is the empty string) and gives the
hex digest to the widget with the fields. A matching signature makes the identity verified;
no signature leaves it unverified (shown as such, trusted for nothing); a signature that does
not match is refused, so a shop that misconfigures its secret learns it at once.
"""

import hashlib
import hmac
from dataclasses import dataclass

from backend.errors import IdentityNotVerified


@dataclass(frozen=True)
class CustomerIdentity:
    user_id: str | None
    email: str | None
    name: str | None
    verified: bool


def canonical(user_id: str | None, email: str | None, name: str | None) -> bytes:
    """What the shop signs; the fields cannot hold a newline, so the form is unambiguous."""
    return "\n".join(field or "" for field in (user_id, email, name)).encode("utf-8")


def sign(secret: str, user_id: str | None, email: str | None, name: str | None) -> str:
    return hmac.new(secret.encode("utf-8"), canonical(user_id, email, name), hashlib.sha256).hexdigest()


def verify(
    *, user_id: str | None, email: str | None, name: str | None, signature: str | None, secret: str | None
) -> CustomerIdentity:
    """The identity as claimed, verified if its signature matches; a wrong signature is refused."""
    if signature is None:
        return CustomerIdentity(user_id, email, name, verified=False)
    if not secret:
        raise IdentityNotVerified(
            "this identity is signed but the server has no identity secret "
            "(set PREFIXDESK_IDENTITY_SECRET), or send it without a signature as unverified"
        )
    expected = sign(secret, user_id, email, name)
    if not hmac.compare_digest(expected, signature.lower()):
        raise IdentityNotVerified(
            "the identity's signature does not match: sign user_id, email and name joined by "
            "newlines with HMAC-SHA256 and the identity secret, as a hex digest"
        )
    return CustomerIdentity(user_id, email, name, verified=True)
