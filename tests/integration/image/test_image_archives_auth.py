"""Archive layouts `docker save` writes in newer engines, and registries that need a login."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path

import pytest

from bed.oci import make_image, push
from bed.registry import Registry
from gpuship.errors import InputError
from gpuship.image.inspect import inspect_image
from gpuship.registry.access import RegistryAccess

pytestmark = pytest.mark.integration

LAYERS = [{"app/a.bin": b"a" * 70_000}, {"app/b.bin": b"b" * 30_000}, {"app/a.bin": b"c" * 10}]


def _add(archive: tarfile.TarFile, name: str, data: bytes = b"", link: str = "") -> None:
    info = tarfile.TarInfo(name)
    if link:
        info.type = tarfile.SYMTYPE
        info.linkname = link
    else:
        info.size = len(data)
    archive.addfile(info, io.BytesIO(data) if data else None)


def test_oci_style_docker_save_archive(tmp_path: Path) -> None:
    """Docker 25+ writes blobs/sha256/<hex> members; layers may repeat via symlinks."""
    image = make_image(LAYERS)
    path = tmp_path / "oci-style.tar"
    config_hex = image.config.digest.removeprefix("sha256:")
    layer_names = []
    with tarfile.open(path, "w") as archive:
        _add(archive, "oci-layout", b'{"imageLayoutVersion":"1.0.0"}')
        _add(archive, f"blobs/sha256/{config_hex}", image.config.data)
        for index, tar in enumerate(image.layer_tars):
            hexdigest = hashlib.sha256(tar).hexdigest()
            _add(archive, f"blobs/sha256/{hexdigest}", tar)
            # A second name for the last layer, as a symlink, like legacy de-duplication.
            name = f"blobs/sha256/{hexdigest}"
            if index == len(image.layer_tars) - 1:
                _add(archive, "dedup/layer.tar", link=f"../{name}")
                name = "dedup/layer.tar"
            layer_names.append(name)
        manifest = [
            {"Config": f"blobs/sha256/{config_hex}", "RepoTags": ["x:1"], "Layers": layer_names}
        ]
        _add(archive, "manifest.json", json.dumps(manifest).encode())
    analysis = inspect_image(f"docker-archive:{path}", platform="linux/amd64")
    assert [layer.content_size for layer in analysis.layers] == [70_000, 30_000, 10]
    assert [layer.digest for layer in analysis.layers[:2]] == [
        f"sha256:{hashlib.sha256(tar).hexdigest()}" for tar in image.layer_tars[:2]
    ]
    assert analysis.dive.wasted_bytes == 70_010
    assert analysis.filesystem.hidden_bytes == 70_000


def test_registry_with_basic_auth(registry_basic_auth: Registry) -> None:
    image = make_image(LAYERS[:1])
    push(registry_basic_auth.url, "image/auth", image, tag="v1", auth=registry_basic_auth.auth)
    reference = registry_basic_auth.ref("image/auth", "v1")
    environ = {**registry_basic_auth.credential_env(), "DOCKER_CONFIG": "/nonexistent"}
    analysis = inspect_image(
        reference, platform="linux/amd64", access=RegistryAccess(environ=environ)
    )
    assert analysis.image.manifest_digest == image.digest
    with pytest.raises(InputError, match=r"needs a username and password"):
        inspect_image(
            reference,
            platform="linux/amd64",
            access=RegistryAccess(environ={"DOCKER_CONFIG": "/nonexistent"}),
        )
