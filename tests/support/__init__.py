"""Tests: helpers the tests share: the brute-force oracle, generated cases, Spark and SQL helpers."""
