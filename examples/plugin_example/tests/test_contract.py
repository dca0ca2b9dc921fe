"""The package's CI: dp-experts-env's learner contract and privacy audit on our learner.

Run with the package installed (its entry point registers the learner), or uninstalled with
``DP_EXPERTS_PLUGINS=dp_plugin_example.ftpl`` and the package folder on ``PYTHONPATH``.
"""

from dp_experts_env.testing import contract_tests

# One test case per check: claim, actions, horizon, observations, seeding, batching, paths
# (skipped: no block method), monotone, epsilon_inf, audit.
test_private_block_ftpl = contract_tests("private-block-ftpl")


def test_all_checks_at_once(check_agent):
    report = check_agent("private-block-ftpl")
    assert not report.audit.violation
    # The power self-check: the learner built with half its noise (noise=) is caught.
    assert report.power.startswith("the learner built with half its noise is caught")
