"""The shared floor every domain stands on, as ``polar/kit``: database engines and the driver
data-access style, bulk writes, tenancy, pagination, the JSON value policy, the wire types every
domain's schemas share, phone-number text, wake-ups, and logs with the call and request they are
about. Nothing in ``kit`` imports a domain, ``http``, the engine or the CLI."""
