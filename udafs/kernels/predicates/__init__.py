"""Plans with predicates or strategies: method choice, predicate passes, triples, the state DP,
comparisons.
"""
