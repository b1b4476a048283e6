"""Contact data: per-caller JSON state with revisions and expiry."""
