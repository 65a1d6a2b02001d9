"""The only code Spark's Python workers run: thin Arrow wrappers around the kernels, the worker
daemon and a test fault.
"""
