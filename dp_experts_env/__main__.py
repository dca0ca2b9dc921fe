"""``python -m dp_experts_env`` runs the ``dp-experts`` command."""

import sys

from dp_experts_env.cli import main

sys.exit(main())
