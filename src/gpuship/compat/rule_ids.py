"""The rule ids of the verdict's checks: what `judge` puts on each `Check`.

`verify`, `fleet` and `route` all judge with these ids, so they live with the verdict; the
catalog entries (name, rationale, fix) are the verify stage's `rules.py`, which reports them.
"""

from __future__ import annotations

RUNTIME = "GSV101"
DEVICES = "GSV102"
MIG = "GSV103"
MEMORY = "GSV104"
ECC = "GSV105"
CDI_SPEC = "GSV106"
REQUIRE = "GSV201"
DRIVER = "GSV202"
ARCH = "GSV203"
PLATFORM = "GSV204"
HOST_LAGS = "GSV403"
LABEL_LIES = "GSV404"
