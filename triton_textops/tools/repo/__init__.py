"""Model-repository tooling: :mod:`triton_textops.tools.repo.generate` (``create_repository``) writes the seed's
``ensemble_all`` repository (``triton-textops repo create``, :mod:`triton_textops.tools.repo.cli`). Configs are
read and written with :mod:`triton_textops.triton.config` (Triton's protobuf schema)."""
