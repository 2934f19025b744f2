"""Model-repository tooling.

* :mod:`triton_textops.repo.config`: the one place that parses or writes ``config.pbtxt`` (Triton's protobuf
  schema) and reproduces the server's normalization and ``args["model_config"]`` JSON.
* :mod:`triton_textops.repo.generate`: ``create_repository`` writes the seed's ``ensemble_all`` repository
  (``triton-textops repo create``, :mod:`triton_textops.repo.cli`).
"""
