"""`python -m triton_textops.tools.envs env ...` (envs/pack_env.sh)."""

import sys

from triton_textops.tools.envs.cli import main

sys.exit(main())
