"""Model-repository tooling: ``config.pbtxt`` load/write/normalization with Triton's protobuf schema.

See :mod:`triton_textops.repo.config` (the one place that parses or writes ``config.pbtxt``).
"""
