"""Counting plain patterns: the sorted timeline, forward passes and scans, no-window, WITHIN and
SLIDE paths, edge negation, quantifiers, funnel steps.
"""
