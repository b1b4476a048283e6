"""``CALLPLANE_SIP_*`` values, parsed (docs/engine-core.md)."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote


@dataclass(frozen=True)
class Trunk:
    """``sip:[user[:password]@]host[:port]``, the value of ``CALLPLANE_SIP_TRUNK``."""

    host: str
    port: int = 5060
    user: str | None = None
    password: str | None = None

    @classmethod
    def parse(cls, value: str) -> Trunk:
        rest = value.strip()
        if not rest.lower().startswith("sip:"):
            raise ValueError(f"a SIP trunk is sip:[user[:password]@]host[:port], not {value!r}")
        rest = rest[4:]
        user = password = None
        if "@" in rest:
            credentials, rest = rest.rsplit("@", 1)
            user, _, secret = credentials.partition(":")
            user = unquote(user) or None
            password = unquote(secret) if secret else None
        host, port = parse_host_port(rest, default_port=5060)
        return cls(host=host, port=port, user=user, password=password)

    def __repr__(self) -> str:  # never log the password
        return f"Trunk(host={self.host!r}, port={self.port}, user={self.user!r})"


def parse_host_port(value: str, *, default_port: int) -> tuple[str, int]:
    host, sep, port = value.strip().rpartition(":")
    if not sep:
        host, port = port, str(default_port)
    if not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"expected host[:port], got {value!r}")
    return host, int(port)


def parse_port_range(value: str) -> tuple[int, int]:
    low, sep, high = value.partition("-")
    if not sep or not low.strip().isdigit() or not high.strip().isdigit():
        raise ValueError(f"expected a port range like 10000-20000, got {value!r}")
    first, last = int(low), int(high)
    if not 1024 <= first < last <= 65535:
        raise ValueError(f"port range {value!r} must lie within 1024-65535, low before high")
    return first, last
