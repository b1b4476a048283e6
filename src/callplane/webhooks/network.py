"""Where webhook requests may go: never into the deployment's own network (SSRF).

A tenant chooses the URL, so without a guard it could make the server call loopback services,
the private network or a cloud metadata endpoint. Every address a host resolves to must be a
public unicast address; the check runs when an endpoint is created and again at every delivery,
inside the connection itself (``GuardedTransport``): the connection goes to the very address
that was checked, so a DNS answer that changes between check and connect (rebinding) cannot
slip through. ``CALLPLANE_WEBHOOK_ALLOW_PRIVATE_NETWORKS=true`` lifts it (tests, local demos).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import ssl
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

import certifi
import httpcore
import httpx

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class BlockedAddress(httpcore.ConnectError):
    """The host resolves to an address webhooks may not reach."""


def address_allowed(address: IPAddress, *, loopback: bool = False) -> bool:
    """True for a public unicast address (not loopback, private, link-local — the metadata
    service 169.254.169.254 is link-local —, shared, multicast, reserved or unspecified), and
    for loopback when ``loopback`` (CALLPLANE_WEBHOOK_ALLOW_LOOPBACK: the local demo)."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if loopback and address.is_loopback:
        return True
    if (
        address.is_loopback
        or address.is_private
        or address.is_link_local
        or address.is_multicast
        or address.is_reserved
        or address.is_unspecified
    ):
        return False
    return address.is_global


async def resolve(host: str, port: int) -> list[IPAddress]:
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        pass
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [ipaddress.ip_address(info[4][0]) for info in infos]


def first_blocked(addresses: Iterable[IPAddress], *, loopback: bool = False) -> IPAddress | None:
    for address in addresses:
        if not address_allowed(address, loopback=loopback):
            return address
    return None


def url_host_port(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return host, port


async def check_destination(url: str, *, loopback: bool = False) -> str | None:
    """Why ``url`` may not receive webhooks, or None when it may."""
    host, port = url_host_port(url)
    try:
        addresses = await resolve(host, port)
    except OSError:
        return f"host {host} does not resolve"
    if not addresses:
        return f"host {host} does not resolve"
    if first_blocked(addresses, loopback=loopback) is not None:
        return "URL resolves to a loopback, private, link-local or metadata address"
    return None


class _GuardedBackend(httpcore.AsyncNetworkBackend):
    """Resolves, checks, then connects to the checked address (TLS still verifies the name)."""

    def __init__(self, *, loopback: bool = False) -> None:
        self._inner = httpcore.AnyIOBackend()
        self._loopback = loopback

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's interface
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        try:
            addresses = await resolve(host, port)
        except OSError as exc:
            raise httpcore.ConnectError(f"host {host} does not resolve") from exc
        if not addresses or first_blocked(addresses, loopback=self._loopback) is not None:
            raise BlockedAddress(
                "refused: the host resolves to a loopback, private, link-local or metadata address"
            )
        return await self._inner.connect_tcp(
            str(addresses[0]),
            port,
            timeout=timeout,
            local_address=local_address,
            socket_options=socket_options,
        )

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's interface
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise BlockedAddress("refused: unix sockets")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class GuardedTransport(httpx.AsyncHTTPTransport):
    """An httpx transport whose every connection goes through ``_GuardedBackend``."""

    def __init__(self, *, max_connections: int = 200, loopback: bool = False) -> None:
        super().__init__(trust_env=False)
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl.create_default_context(cafile=certifi.where()),
            max_connections=max_connections,
            max_keepalive_connections=max_connections,
            keepalive_expiry=30.0,
            network_backend=_GuardedBackend(loopback=loopback),
        )


def webhook_transport(
    allow_private_networks: bool, *, max_connections: int = 200, allow_loopback: bool = False
) -> httpx.AsyncHTTPTransport:
    if allow_private_networks:
        limits = httpx.Limits(
            max_connections=max_connections, max_keepalive_connections=max_connections
        )
        return httpx.AsyncHTTPTransport(trust_env=False, limits=limits)
    return GuardedTransport(max_connections=max_connections, loopback=allow_loopback)
