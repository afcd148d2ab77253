"""Label names gpuship writes on every image it builds: the contract later stages read.

The `io.gpuship.*` labels state what an image needs to run (CUDA release, minimum driver,
compiled GPU targets); the verify and image stages read them back from the registry. OCI
annotation keys follow the image-spec `annotations.md` pre-defined keys.
"""

from __future__ import annotations

LABEL_CUDA = "io.gpuship.cuda"
LABEL_MIN_DRIVER = "io.gpuship.min-driver"
# TORCH_CUDA_ARCH_LIST syntax: "8.0;9.0" or "7.5;8.0;12.0+PTX".
LABEL_ARCH_LIST = "io.gpuship.arch-list"
LABEL_TORCH = "io.gpuship.torch"
LABEL_ROLE = "io.gpuship.role"
LABEL_CONFIG_DIGEST = "io.gpuship.config-digest"
LABEL_CELL = "io.gpuship.cell"
# The fleet-wide `verify.driver-floor` when the image was built: the driver the fleet agreed on.
LABEL_DRIVER_FLOOR = "io.gpuship.driver-floor"

OCI_TITLE = "org.opencontainers.image.title"
OCI_SOURCE = "org.opencontainers.image.source"
OCI_REVISION = "org.opencontainers.image.revision"
OCI_CREATED = "org.opencontainers.image.created"
OCI_BASE_NAME = "org.opencontainers.image.base.name"
OCI_BASE_DIGEST = "org.opencontainers.image.base.digest"
