"""The SQL front door: sparkseq.sql and explain, scripts, workloads and cubes, placeholders,
the DataFrame API, errors placed in the user's text.
"""
