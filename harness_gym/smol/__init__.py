"""SmolLM2-135M-Instruct as a trained target agent: expert data, LoRA fine-tuning, evaluation, shipping.

``python -m harness_gym.smol data|train|eval`` (see ``__main__``); the shipped adapters and the
``smol:<benchmark>`` target live in ``target.py``.
"""
