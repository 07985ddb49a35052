"""Dry runs for config authors: ``toolrt explain`` and ``toolrt test`` (PolicyTest cases).

They go through the pipeline's first stages (lookup, validation) and the permission
decision, and execute nothing, so they sit above both ``pipeline`` and ``policy``.
"""
