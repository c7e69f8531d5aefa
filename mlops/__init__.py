"""The bottom package: contracts every layer shares (schema, storage, tracking, registry vocabulary, gates).

It imports none of the other first-party packages (checked by import-linter).
"""
