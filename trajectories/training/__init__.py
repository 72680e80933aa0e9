"""Post-training from arena trajectories (issue 7): datasets, a tiny CPU Qwen3, SFT, evaluation maths.

Depends on ``shoppingbench`` and ``trajectories`` only (never ``arena``). Heavy libraries (torch,
transformers, TRL, PEFT) are imported by the modules that need them, so reading dumps stays light.
"""
