"""Tests: sparkseq on a local Spark session: SQL, functions, paths, workloads, streams, commands, clusters."""
