"""Running what was planned: execution paths and the JVM path, statistics jobs, batch and
live queries, a workload's results in one job.
"""
