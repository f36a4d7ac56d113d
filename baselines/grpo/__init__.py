"""Harness-R1's engineer training on TRL: dataset builder, cold-start SFT, GRPO, ``grpo:<dir>`` policy.

Modules: ``config`` (``GRPOEngineerConfig``), ``dataset`` (training-split rows), ``reward``
(``EnvReward``), ``sft`` (teacher rows + ``SFTTrainer``), ``train`` (``GRPOTrainer``; CLI),
``policy`` (``GRPOPolicy``), ``cpu_run`` (SmolLM2-135M CPU measurement script).
Heavy imports (torch, transformers, trl, datasets) happen inside functions.
"""
