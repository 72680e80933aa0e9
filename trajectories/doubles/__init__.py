"""Test and demo doubles of the trajectories side, off the production path: a scripted rewriting teacher
(an OpenAI-compatible server that rewrites deterministically), synthetic attempt records shaped like real
agents' ones, and small sample dumps of them written through the real store and exporter. Tests, benchmarks
and the entry points' demo flags (``worker rewrite --scripted-teacher``) use them; production modules never
import them.
"""
