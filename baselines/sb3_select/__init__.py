"""A PPO selector over a patch library (``HarnessSelectEnv``), usable as the ``sb3-select:<path>`` policy.

``baselines.sb3_select.train`` trains and evaluates it; ``baselines.sb3_select.policy``
holds ``SB3SelectPolicy``. Nothing is imported here, so the package imports without
stable-baselines3.
"""
