"""Generation: analysed queries -> plain Spark SQL (grouped, shared, streaming and live forms)."""
