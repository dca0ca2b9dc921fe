"""The papers' claims, one module per paper (the data; the engine is in ``claims``).

Each module defines ``PAPER``, ``REPORT_ORDER`` and ``claims(quick=False)``;
:mod:`dp_experts_env.evaluation.paper_claims` finds them without a list.
"""
