"""Spark wiring: the session, the parser extension and its jars, function registration, the
cluster, the persistent catalog.
"""
