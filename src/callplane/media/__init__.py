"""Where audio lives and the URLs that hand it out: below every feature package, so the
per-process ``Runtime`` can hold them without importing a feature."""
