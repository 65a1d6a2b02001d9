"""Spark wiring: the session, the parser extension, the JVM path's aggregate and their jars,
function registration, the cluster, the persistent catalog.
"""
