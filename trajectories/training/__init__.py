"""Post-training from arena trajectories: the study's recipe on the daily dumps, stage by stage.

The wings, lowest first: ``dev/`` (the tiny CPU Qwen3, the converted Gemma 3 270M), ``data/`` (conversations,
tokens, the problems of a split, DPO pairs, the tool schemas), ``serving/`` (a checkpoint loaded and served
over transformers or vLLM), ``evaluation/`` (held-out evaluation, pass@k, hallucinations, plots, the stage
table, the registry), ``stages/`` (each stage's code beside its config) and ``rewrite/`` (sub-task attempts
rewritten by a teacher); :mod:`pipeline` and :mod:`watch` run the stages. Stage YAMLs are in ``configs/``.

Depends on ``shoppingbench`` and ``trajectories`` only (never ``arena``). Heavy libraries (torch,
transformers, TRL, PEFT) are imported by the modules that need them, so reading dumps stays light.
"""
