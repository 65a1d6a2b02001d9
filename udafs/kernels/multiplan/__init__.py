"""Many plans over one group: shared timelines, E-Cube and workload passes, partitions laid end to
end.
"""
