"""Running what was planned: execution paths, statistics jobs, batch and live queries, a
workload's results in one job.
"""
