# The contract fixtures of dp-experts-env (check_agent, --dp-audit-runs).
pytest_plugins = ["dp_experts_env.pytest_plugin"]
