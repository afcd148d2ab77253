"""Rule checks, one module per category group; each exposes `check(analysis) -> Iterator[Hit]`."""
