"""Planning: which execution path each statement, cuboid and sharing group takes, and the
statistics that decide it.
"""
