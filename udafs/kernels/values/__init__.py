"""Values: exact arithmetic, measures carried along matches, non-finite doubles."""
