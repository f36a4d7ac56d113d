"""Harness-R1's engineer training on TRL: dataset builder, cold-start SFT, GRPO, ``grpo:<dir>`` policy.

Modules: ``config`` (``GRPOEngineerConfig``), ``dataset`` (training-split rows), ``reward``
(``EnvReward``), ``sft`` (teacher rows + ``SFTTrainer``), ``train`` (``GRPOTrainer``; CLI),
``policy`` (``GRPOPolicy``), ``samples`` (K samples per row scored by the env, outside the trainer),
``cpu_run`` (SmolLM2-135M on a CPU: teacher SFT then GRPO, one command, JSON report).
Heavy imports (torch, transformers, trl, datasets) happen inside functions.
"""
