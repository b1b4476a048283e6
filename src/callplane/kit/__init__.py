"""The shared floor every domain stands on, as ``polar/kit``: database engines and the driver
data-access style, bulk writes, tenancy, pagination, the JSON value policy, phone-number text,
wake-ups and logs. Nothing in ``kit`` imports a domain, ``http``, the engine or the CLI."""
