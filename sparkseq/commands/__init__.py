"""The command line: python -m sparkseq (demo, sql, stream, servers)."""
