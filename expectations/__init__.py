"""The default Great Expectations suites, one per audited entity (shipped as package data)."""
