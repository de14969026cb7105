"""Credential rules kept as data: gitleaks' maintained rule set, vendored with its version and licence."""
