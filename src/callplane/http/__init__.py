"""The HTTP layer: error families, dependencies, pagination and the /v1 router."""
