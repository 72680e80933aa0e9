"""Trajectories: the store of every attempt, the structural-quality filter and the daily dumps (SPEC 6).

Depends on ``shoppingbench`` only; the arena's rules (judge, leak clusters) reach it as data.
"""
