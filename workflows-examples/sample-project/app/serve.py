"""The sample inference app: loads weights from MODEL_DIR at start (never baked in)."""

import os
from pathlib import Path

import sampledeps


def main() -> None:
    model_dir = Path(os.environ.get("MODEL_DIR", "/models"))
    weights = sorted(model_dir.glob("*.safetensors"))
    print(f"sampledeps {sampledeps.VERSION}; {len(weights)} weight files in {model_dir}")


if __name__ == "__main__":
    main()
