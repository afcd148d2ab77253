"""Recognise model weights by their first bytes, falling back to the file extension.

Magic numbers: safetensors (8-byte little-endian header length then a JSON object,
huggingface/safetensors README "Format"), GGUF (`GGUF`, ggml docs/gguf.md), torch.save zip
archives (a zip whose first member is `<name>/data.pkl` or `<name>/version`,
torch/serialization.py),
legacy torch/pickle files (protocol opcode 0x80 then protocol 2-5, Python pickletools), HDF5
(`\\x89HDF\\r\\n\\x1a\\n`, Keras .h5), NumPy (`\\x93NUMPY`). Formats without a magic number (ONNX
protobuf, TensorFlow SavedModel variables, TFLite, TensorRT engines) are recognised by extension.
"""

from __future__ import annotations

import posixpath
import struct

# Bytes of a file's start needed to decide (zip local header name included).
HEAD_BYTES = 512

_BY_EXTENSION = {
    ".safetensors": "safetensors",
    ".gguf": "gguf",
    ".ggml": "ggml",
    ".pt": "torch",
    ".pth": "torch",
    ".ckpt": "checkpoint",
    ".onnx": "onnx",
    ".h5": "hdf5",
    ".keras": "keras",
    ".tflite": "tflite",
    ".engine": "tensorrt",
    ".plan": "tensorrt",
    ".msgpack": "flax",
    ".npz": "numpy",
    ".pkl": "pickle",
    ".joblib": "joblib",
    ".mlmodel": "coreml",
    ".pdparams": "paddle",
}
# `.bin` holds weights (pytorch_model.bin) as often as anything else: content decides.
_AMBIGUOUS = (".bin", ".data")


def _safetensors(head: bytes, size: int) -> bool:
    if len(head) < 9:
        return False
    (header_len,) = struct.unpack_from("<Q", head)
    return 0 < header_len <= size - 8 and head[8:9] == b"{"


def _torch_zip(head: bytes) -> bool:
    if not head.startswith(b"PK\x03\x04") or len(head) < 30:
        return False
    name_len = struct.unpack_from("<H", head, 26)[0]
    name = head[30 : 30 + name_len].decode("utf-8", "replace")
    return name.endswith(("/data.pkl", "/version", "/.format_version", "/byteorder"))


def sniff_weights(path: str, head: bytes, size: int) -> str | None:
    """The weights format of a file from its path and first bytes, or None."""
    if head.startswith(b"GGUF"):
        return "gguf"
    if _safetensors(head, size):
        return "safetensors"
    if _torch_zip(head):
        return "torch"
    if head.startswith(b"\x89HDF\r\n\x1a\n") and path.endswith((".h5", ".hdf5", ".keras")):
        return "hdf5"
    if head.startswith(b"\x93NUMPY"):
        return "numpy"
    extension = posixpath.splitext(path)[1].lower()
    pickle = len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5
    if pickle and extension in (".pt", ".pth", ".bin", ".ckpt", ".pkl"):
        return "torch" if extension != ".pkl" else "pickle"
    name = posixpath.basename(path)
    if name.startswith("variables.data-"):
        return "tensorflow"
    if extension in _AMBIGUOUS:
        return None
    return _BY_EXTENSION.get(extension)


def hub_cache_of(path: str) -> str | None:
    """`huggingface` or `torch-hub` when the path lies in a model hub cache."""
    probe = "/" + path
    if ".cache/huggingface/" in probe or "/huggingface/hub/" in probe:
        return "huggingface"
    if "/torch/hub/" in probe:
        return "torch-hub"
    return None
