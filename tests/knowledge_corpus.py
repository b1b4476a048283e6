"""A small corpus written for the knowledge tests: a shop's policies, a clinic's prices and a
garden centre's care notes, with words that only one document uses."""

from __future__ import annotations

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
