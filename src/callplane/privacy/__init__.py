"""Privacy rules that are pure functions over text: redaction of sensitive values
(``redaction.py``, its detectors and spoken-number normaliser)."""
