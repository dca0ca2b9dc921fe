"""The papers' claims, one module per paper (the data).

The engine is :mod:`dp_experts_env.evaluation.claims` (with its analyses and gates).
Each module defines ``PAPER`` (the citation), ``REPORT_ORDER`` (its place in the report) and
``claims(quick=False)``; :mod:`dp_experts_env.evaluation.paper_claims` finds every module of this
package (``common`` aside) without a list, so a new paper is one new module.
"""
