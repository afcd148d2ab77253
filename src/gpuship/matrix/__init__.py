"""Matrix stage: expand `images:` into a validated matrix of cells and lock their bases."""
