"""MemoRace judge core: problem packages, problem types, verifiers and scoring.

Framework-free on purpose: the web service and the queue workers wrap it.
"""
