"""Credential masking, with rules kept as data: gitleaks' and Nosey Parker's maintained rule sets, vendored with
their versions and licences."""
