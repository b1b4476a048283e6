"""The HTTP layer every router stands on: error families, the request pipeline, dependencies and
the OpenAPI document (the /v1 API itself is ``callplane.api``, above every domain)."""
