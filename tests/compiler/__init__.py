"""Tests: sql_rewrites without Spark: parsing, analysis, planning, generated SQL."""
