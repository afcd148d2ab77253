"""Matrix and build stage: expand `images:` into a validated matrix, lock bases, build cells."""
