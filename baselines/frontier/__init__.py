"""``frontier``: a large model prompted as the harness engineer through any model backend."""
from baselines.frontier.policy import FrontierConfig, FrontierPolicy
from baselines.frontier.prompt import engineer_messages

__all__ = ["FrontierConfig", "FrontierPolicy", "engineer_messages"]
