"""`python -m triton_textops.tools.stub stub build ...` (stub_build/build_stub.sh)."""

import sys

from triton_textops.tools.stub.cli import main

sys.exit(main())
