"""sparkseq's servers: Thrift (JDBC/ODBC) and Spark Connect, their options, life cycle and
security.
"""
