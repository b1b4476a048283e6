"""The audit log (``docs/privacy.md``): an append-only, hash-chained record of every change,
every recording or contact-data read, every sign-in and every retention deletion."""
