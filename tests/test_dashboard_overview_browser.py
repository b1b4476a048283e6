"""The overview's charts in a real headless Chromium (issue 29): they render as pictures, not
only as markup. A screenshot of each chart is decoded and must show its bars' colours."""

from __future__ import annotations

import struct
import zlib
from collections import Counter
from typing import Any

from playwright.sync_api import Page, expect

from callplane.dashboard.charts import COLOURS
from callplane.loader import load_document
from tests import test_dashboard_browser as shared
from tests.browser import Served
from tests.test_dashboard_overview import _call

# The browser tests' module-scoped server and browser, and their per-test tenant and page.
server, browser, tenant, page = shared.server, shared.browser, shared.tenant, shared.page
Tenant, shot = shared.Tenant, shared.shot


def _pixels(png: bytes) -> Counter[tuple[int, int, int]]:
    """Colour counts of an 8-bit RGB or RGBA PNG (what Chromium's screenshots are)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    offset, data, width, height, channels = 8, b"", 0, 0, 3
    while offset < len(png):
        length, kind = struct.unpack(">I4s", png[offset : offset + 8])
        body = png[offset + 8 : offset + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour_type = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and colour_type in (2, 6)
            channels = 4 if colour_type == 6 else 3
        elif kind == b"IDAT":
            data += body
        offset += 12 + length
    raw = zlib.decompress(data)
    stride = width * channels
    previous = bytearray(stride)
    counts: Counter[tuple[int, int, int]] = Counter()
    for row in range(height):
        start = row * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            corner = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                guess = left if pa <= pb and pa <= pc else (up if pb <= pc else corner)
                line[i] = (line[i] + guess) & 0xFF
        for i in range(0, stride, channels):
            counts[(line[i], line[i + 1], line[i + 2])] += 1
        previous = line
    return counts


def _rgb(hex_colour: str) -> tuple[int, int, int]:
    return (int(hex_colour[1:3], 16), int(hex_colour[3:5], 16), int(hex_colour[5:7], 16))


def test_the_overview_charts_render(page: Page, tenant: Tenant, server: Served) -> None:
    calls = [_call(n, "completed" if n % 3 else "busy", "c0ffee1", True, n % 4) for n in range(30)]
    _seed_through_the_loader(server, tenant, calls)
    page.goto("/dashboard/")
    page.get_by_label("Email").fill(tenant.email)
    page.get_by_label("Password").fill(tenant.password)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Overview", exact=True)).to_be_visible()
    expect(page.locator("#total-calls")).to_have_text("30")
    shot(page, "overview")
    calls_chart = _pixels(page.locator("#calls-chart svg.chart").screenshot())
    assert calls_chart[_rgb(COLOURS["completed"])] > 500
    assert calls_chart[_rgb(COLOURS["busy"])] > 100
    expect(page.locator("#commits")).to_contain_text("booked: yes")


def _seed_through_the_loader(server: Served, tenant: Tenant, calls: list[dict[str, Any]]) -> None:
    async def work(session: Any) -> None:
        await load_document(session, server.settings, tenant.org_id, {"calls": calls})

    server.setup(work)
