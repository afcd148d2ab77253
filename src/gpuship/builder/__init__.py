"""Build stage: build one matrix cell with buildx or the engine, push its tags, check it."""
