"""The readiness rules (GSV501-GSV507) judged on readings: ready, not ready, and unknown
(a reading that could not be taken is a note saying so, never a failure)."""

from __future__ import annotations

from gpuship.compat.checks.base import Status
from gpuship.compat.container import DockerReading
from gpuship.compat.readiness import GpuContainer, ReadinessReadings, UnitState
from gpuship.verify import readiness, rules
from unit.compat.compat_builders import audit, gpu

NODES = ["nvidia-uvm", "nvidia-uvm-tools", "nvidia0", "nvidiactl"]
SYSTEMD = DockerReading(reachable=True, cgroup_driver="systemd", cgroup_version="2")


def units(**states: str) -> list[UnitState]:
    return [UnitState(name=name.replace("_", "-"), state=state) for name, state in states.items()]


def container(policy: str, project: str | None = None) -> GpuContainer:
    return GpuContainer(
        id="c0ffee",
        name="llm",
        image="ghcr.io/acme/llm:1",
        gpus_via="device-request",
        restart_policy=policy,
        compose_project=project,
        compose_service="llm" if project else None,
    )


def test_a_gpu_container_without_restart_policy_is_named_with_its_fix() -> None:
    plain, compose, kept = readiness.restart_checks(
        [container("no"), container("on-failure", "stack"), container("unless-stopped")]
    )
    assert (plain.status, plain.subject) == (Status.WARN, "container llm")
    assert "docker update --restart unless-stopped llm" in (plain.fix or "")
    assert compose.status is Status.WARN
    assert "restart: unless-stopped' to service llm of compose project stack" in (compose.fix or "")
    assert kept.status is Status.OK


def test_no_engine_reading_is_unknown_not_a_failure() -> None:
    (check,) = readiness.restart_checks(None)
    assert check.status is Status.NOTE
    assert check.message.startswith("unknown:")


def test_docker_enabled_by_its_socket_counts_and_disabled_fails() -> None:
    on = ReadinessReadings(
        units=units(**{"docker.service": "disabled", "docker.socket": "enabled"})
    )
    off = ReadinessReadings(
        units=units(**{"docker.service": "disabled", "docker.socket": "disabled"})
    )
    assert readiness.docker_at_boot(on).status is Status.OK
    failed = readiness.docker_at_boot(off)
    assert failed.status is Status.FAIL
    assert failed.fix == "systemctl enable docker.service containerd.service"
    assert readiness.docker_at_boot(ReadinessReadings()).status is Status.NOTE


def test_docker_not_ordered_after_the_cdi_refresh_is_a_warning() -> None:
    enabled = units(**{"nvidia-cdi-refresh.service": "enabled", "docker.service": "enabled"})
    racing = ReadinessReadings(units=enabled, docker_after=["network-online.target"])
    ordered = ReadinessReadings(
        units=enabled, docker_after=["network-online.target", "nvidia-cdi-refresh.service"]
    )
    unknown = ReadinessReadings(units=enabled, docker_after=None)
    check = readiness.boot_order(racing)
    assert check.status is Status.WARN
    assert "After=nvidia-cdi-refresh.service" in (check.fix or "")
    assert readiness.boot_order(ordered).status is Status.OK
    assert readiness.boot_order(unknown).status is Status.NOTE


def test_daemon_reload_exposure_needs_systemd_driver_legacy_mode_and_no_links() -> None:
    exposed = ReadinessReadings(toolkit_mode="legacy", device_nodes=NODES, dev_char_links=[])
    check = readiness.daemon_reload_exposure(SYSTEMD, exposed)
    assert check.status is Status.WARN
    assert "Failed to initialize NVML: Unknown Error" in check.message
    assert "create-dev-char-symlinks" in (check.fix or "")
    linked = exposed.model_copy(update={"dev_char_links": NODES})
    cdi = exposed.model_copy(update={"toolkit_mode": "cdi"})
    cgroupfs = DockerReading(reachable=True, cgroup_driver="cgroupfs")
    for safe_docker, safe in ((SYSTEMD, linked), (SYSTEMD, cdi), (cgroupfs, exposed)):
        assert readiness.daemon_reload_exposure(safe_docker, safe).status is Status.OK
    # --gpus containers go through the hook whatever the mode: still exposed
    hooked = cdi.model_copy(update={"gpu_containers": [container("always")]})
    assert readiness.daemon_reload_exposure(SYSTEMD, hooked).status is Status.WARN
    unread = DockerReading(reachable=False)
    assert readiness.daemon_reload_exposure(unread, exposed).status is Status.NOTE
    no_char = exposed.model_copy(update={"dev_char_links": None})
    assert readiness.daemon_reload_exposure(SYSTEMD, no_char).status is Status.NOTE


def test_missing_uvm_node_fails_and_unreadable_dev_is_unknown() -> None:
    check = readiness.device_nodes(["nvidia0", "nvidiactl"], 1)
    assert check.status is Status.FAIL
    assert "/dev/nvidia-uvm, /dev/nvidia-uvm-tools" in check.message
    assert readiness.device_nodes(NODES, 1).status is Status.OK
    assert readiness.device_nodes(NODES, 2).status is Status.FAIL  # no /dev/nvidia1
    assert readiness.device_nodes(None, 1).status is Status.NOTE


def test_persistence_off_warns_and_unsupported_is_unknown() -> None:
    on, off = (gpu(0).model_copy(update={"persistence_mode": v}) for v in (True, False))
    assert readiness.persistence([on]).status is Status.OK
    assert readiness.persistence([on, off.model_copy(update={"index": 1})]).status is Status.WARN
    assert readiness.persistence([gpu(0)]).status is Status.NOTE


def test_mig_layout_needs_the_mig_manager_at_boot() -> None:
    mig = [gpu(0, mig_slices_gib=[10, 10])]
    managed = ReadinessReadings(units=units(**{"nvidia-mig-manager.service": "enabled"}))
    unmanaged = ReadinessReadings(units=units(**{"nvidia-mig-manager.service": "not-found"}))
    assert readiness.mig_layout(mig, managed).status is Status.OK
    assert readiness.mig_layout(mig, unmanaged).status is Status.WARN
    assert readiness.mig_layout(mig, ReadinessReadings()).status is Status.NOTE
    assert readiness.mig_layout([gpu(0)], unmanaged).status is Status.OK


def test_an_audit_without_readiness_readings_is_not_judged_on_them() -> None:
    assert readiness.readiness_checks(audit(550, [gpu()])) == ()


def test_every_readiness_check_carries_a_catalogued_rule() -> None:
    host = audit(550, [gpu()])
    read = host.container.model_copy(
        update={"readiness": ReadinessReadings(gpu_containers=[container("no")])}
    )
    checks = readiness.readiness_checks(host.model_copy(update={"container": read}))
    ids = {rule.id for rule in rules.RULES}
    assert {c.rule for c in checks} <= ids
    assert {c.rule for c in checks} == {
        rules.RESTART_POLICY,
        rules.DOCKER_AT_BOOT,
        rules.BOOT_ORDER,
        rules.DAEMON_RELOAD,
        rules.DEVICE_NODES,
        rules.PERSISTENCE,
        rules.MIG_LAYOUT,
    }
