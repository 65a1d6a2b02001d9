"""Syntax: the SparkSeq dialect (Spark SQL plus MATCH_AGGREGATE), its parser and printer,
literals, markers and the split into statements.
"""
