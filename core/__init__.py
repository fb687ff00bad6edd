"""The base of Flux Memory: errors, settings access, validation, the booth, the LLM and REST clients, keys and
secrets, small helpers. It imports no app of the project (checked by import-linter)."""
