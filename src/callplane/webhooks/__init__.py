"""Webhooks (docs/api-contract.md#webhooks): endpoints, the events outbox, Standard Webhooks
signing, delivery.

``emit`` (``webhooks.events``) is how any domain reports something to webhook receivers: it
writes the event in the caller's transaction, so the event exists exactly when the change does.
"""
