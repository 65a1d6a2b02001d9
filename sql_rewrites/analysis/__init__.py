"""Analysis: a parsed statement -> checked, typed queries (MATCH_AGGREGATE, E-Cube, the seq_*
calls), and the user's text found again from them.
"""
