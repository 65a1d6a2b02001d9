"""Tests: the engine without Spark: udafs' kernels, plans and worker-side code against the oracle."""
