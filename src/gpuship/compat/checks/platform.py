"""GSV204: the image has a variant for the host's CPU, as Docker would pick and run it."""

from __future__ import annotations

from gpuship import platforms
from gpuship.compat import rule_ids as rules
from gpuship.compat.audit import HostAudit
from gpuship.compat.checks.base import Check, Status
from gpuship.compat.needs import ImageGpuNeeds


def check(audit: HostAudit, needs: ImageGpuNeeds) -> Check | None:
    """The image's platform against the host's CPU, as Docker would pick and run it (None:
    needs that did not come from an image's config, such as a fleet's table)."""
    host = platforms.host_platform(audit.system.machine)
    if needs.missing_platform is not None:
        has = ", ".join(needs.platforms) or "none"
        message = f"image has no {needs.missing_platform} variant (it has: {has})"
        return Check(rules.PLATFORM, Status.FAIL, "image", message)
    if needs.platform is None:
        return None
    if platforms.architecture(needs.platform) != platforms.architecture(host):
        message = f"image is {needs.platform}; this host runs {host} ({audit.system.machine})"
        return Check(rules.PLATFORM, Status.FAIL, "image", message)
    return Check(rules.PLATFORM, Status.OK, "image", f"{needs.platform} runs on {host}")
