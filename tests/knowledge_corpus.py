"""A small corpus written for the knowledge tests: a shop's policies, a clinic's prices and a
garden centre's care notes, with words that only one document uses; and PDFs made on the spot
(with text, blank like a scan, encrypted, or a zip bomb)."""

from __future__ import annotations

import io
import zlib

RETURNS = """# Returns policy

## Shoes
Unworn shoes may be returned within thirty days of delivery for a full refund. Shoes that
have been worn outdoors cannot be returned, but they can be repaired under the warranty.

## Electronics
Headphones, speakers and chargers are refunded within fourteen days if the seal is unbroken.
Opened electronics are exchanged for store credit.

# Shipping
Parcels leave the warehouse in Rotterdam every weekday before noon. Express delivery reaches
most addresses the next morning.
"""

CLINIC = """<html><head><title>Clinic price list</title>
<style>body { color: red }</style><script>var secret = "tracking pixel";</script></head>
<body><h1>Dental care</h1>
<p>A check-up with a dentist costs 45 euros. Whitening of the teeth costs 250 euros.</p>
<h2>Children</h2><p>Children under twelve are seen by the dentist free of charge.</p>
<h1>Physiotherapy</h1><p>A physiotherapy session for the knee or the back costs 60 euros.</p>
</body></html>"""

GARDEN = (
    "Tomatoes want six hours of sun and water at the roots, never on the leaves. Roses are "
    "pruned in late winter, just above an outward-facing bud. Lavender hates wet soil: plant "
    "it in gravel. Orchids are watered once a week by soaking the pot for ten minutes."
)

#: query -> the title path the best chunk must carry, on both databases.
EXPECTED_TOP = {
    "can I return my worn shoes": "Returns policy › Shoes",
    "refund for headphones": "Returns policy › Electronics",
    "how much is a dentist check-up": "Clinic price list › Dental care",
    "physiotherapy for my back": "Clinic price list › Physiotherapy",
    "when do parcels leave the warehouse": "Returns policy › Shipping",
    "watering orchids": "Garden notes",
    "pruning roses": "Garden notes",
}


def pdf(text: str | None = None, *, encrypt: bool = False, bomb: bool = False) -> bytes:
    """A one-page PDF: with ``text`` drawn in Helvetica, or blank (a scan has no text either)."""
    from pypdf import PdfWriter
    from pypdf.generic import (
        DecodedStreamObject,
        DictionaryObject,
        NameObject,
        StreamObject,
    )

    writer = PdfWriter()
    page = writer.add_blank_page(width=612, height=792)
    if text is not None or bomb:
        font = DictionaryObject(
            {
                NameObject("/Type"): NameObject("/Font"),
                NameObject("/Subtype"): NameObject("/Type1"),
                NameObject("/BaseFont"): NameObject("/Helvetica"),
            }
        )
        page[NameObject("/Resources")] = DictionaryObject(
            {NameObject("/Font"): DictionaryObject({NameObject("/F1"): writer._add_object(font)})}
        )
        if bomb:
            # 60 MB of spaces deflate to ~60 KB: the reader must refuse to inflate them.
            stream = StreamObject()
            stream._data = zlib.compress(b"BT /F1 12 Tf 72 712 Td (" + b" " * 60_000_000 + b") Tj")
            stream[NameObject("/Filter")] = NameObject("/FlateDecode")
        else:
            stream = DecodedStreamObject()
            lines = " ".join(
                f"({line}) Tj 0 -16 Td" for line in (text or "").replace("(", "").split("\n")
            )
            stream.set_data(f"BT /F1 12 Tf 72 712 Td {lines} ET".encode())
        page[NameObject("/Contents")] = writer._add_object(stream)
    if encrypt:
        writer.encrypt("secret-password")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()
