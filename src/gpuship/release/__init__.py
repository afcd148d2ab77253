"""Release stage: promote by digest, record tag moves, roll back, history and retention."""
