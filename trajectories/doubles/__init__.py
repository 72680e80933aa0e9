"""Test and demo doubles of the trajectories side, off the production path: a scripted rewriting teacher
(an OpenAI-compatible server that rewrites deterministically) and synthetic attempt records shaped like real
agents' ones. Tests, benchmarks, the dev sample dumps and the entry points' demo flags (``worker rewrite
--scripted-teacher``) use them; production modules never import them.
"""
