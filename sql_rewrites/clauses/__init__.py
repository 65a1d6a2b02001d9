"""The clauses of MATCH_AGGREGATE as analysis reads them: symbols and PATTERN (also as
stand-alone strings), STRATEGY, MEASURES, WHERE, WITHIN/SLIDE, UNCERTAIN.
"""
