"""A small, versioned binary encoding of engine state (for Spark's state store).

The live (Structured Streaming) operator keeps each partition's evaluator state in
Spark's state store as bytes. Pickle would tie the stored bytes to the names of
sparkseq's classes and load anything; this codec stores only plain data: ``None``,
``bool``, ``int`` (any size: exact counts may exceed 64 bits), ``float`` (NaN and
infinities included), ``str``, ``bytes``, lists (tuples come back as lists), dicts
with string keys, and 1-D numpy arrays of a numeric or bool dtype, or of dtype object
holding Python ints and floats (exact counts past int64).

Layout: ``MAGIC`` (4 bytes), the format version (uint16), the length of a JSON
header (uint32), the header, then the raw array buffers it refers to by offset.
"""

from __future__ import annotations

import json
import math
import struct

import numpy as np

from udafs.errors import StateError

MAGIC = b"SQST"
VERSION = 1
_HEAD = struct.Struct("<4sHI")
_ARRAY_KINDS = "biuf"  # bool, signed, unsigned, float: stored as raw little-endian bytes


def encode(value: object) -> bytes:
    """``value`` (see module docstring for what it may hold) as bytes.

    Raises
    ------
    StateError
        For a value of a type the codec does not store.

    Examples
    --------
    >>> decode(encode({"n": 2**70, "a": np.arange(3)}))["n"] == 2**70
    True
    """
    buffers = _Buffers()
    header = json.dumps(_to_json(value, buffers), separators=(",", ":"), allow_nan=False).encode()
    return _HEAD.pack(MAGIC, VERSION, len(header)) + header + b"".join(buffers.parts)


def decode(data: bytes) -> object:
    """The value :func:`encode` stored.

    Raises
    ------
    StateError
        When the bytes are not this codec's (wrong magic), of another format version,
        or truncated.
    """
    if len(data) < _HEAD.size:
        raise StateError(f"state of {len(data)} bytes is too short to be sparkseq state")
    magic, version, size = _HEAD.unpack_from(data)
    if magic != MAGIC:
        raise StateError(f"the stored state is not sparkseq state (starts with {magic!r}, not {MAGIC!r})")
    if version != VERSION:
        raise StateError(f"the stored state has format version {version}; this sparkseq reads version {VERSION}")
    start = _HEAD.size + size
    try:
        header = json.loads(data[_HEAD.size:start])
    except ValueError as exc:
        raise StateError(f"the stored state's header is damaged: {exc}") from None
    return _from_json(header, memoryview(data)[start:])


def _to_json(v: object, buffers: _Buffers) -> object:
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return _float(float(v))
    if isinstance(v, bytes):
        return {"b": _buffer(v, buffers)}
    if isinstance(v, np.ndarray):
        return _array(v, buffers)
    if isinstance(v, (list, tuple)):
        return [_to_json(x, buffers) for x in v]
    if isinstance(v, dict) and all(isinstance(k, str) for k in v):
        return {"d": {k: _to_json(x, buffers) for k, x in v.items()}}
    raise StateError(f"the state codec does not store values of type {type(v).__name__}")


def _float(x: float) -> object:
    """A float as JSON: finite values as numbers (repr round-trips), others by name."""
    return x if math.isfinite(x) else {"f": repr(x)}


class _Buffers:
    """The raw data section being written, and its length so far."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.size = 0


def _buffer(raw: bytes, buffers: _Buffers) -> list[int]:
    at = [buffers.size, len(raw)]
    buffers.parts.append(raw)
    buffers.size += len(raw)
    return at


def _array(a: np.ndarray, buffers: _Buffers) -> dict[str, object]:
    if a.ndim != 1:
        raise StateError(f"the state codec stores 1-D arrays, got shape {a.shape}")
    if a.dtype.kind == "O":
        return {"o": [_to_json(x, buffers) for x in a.tolist()]}
    if a.dtype.kind not in _ARRAY_KINDS:
        raise StateError(f"the state codec does not store arrays of dtype {a.dtype}")
    le = a.astype(a.dtype.newbyteorder("<"), copy=False)
    return {"a": le.dtype.str, "at": _buffer(le.tobytes(), buffers)}


def _from_json(v: object, data: memoryview) -> object:
    if isinstance(v, list):
        return [_from_json(x, data) for x in v]
    if not isinstance(v, dict):
        return v
    if "d" in v:
        return {k: _from_json(x, data) for k, x in v["d"].items()}
    if "f" in v:
        return float(v["f"])
    if "o" in v:
        out = np.empty(len(v["o"]), dtype=object)
        out[:] = [_from_json(x, data) for x in v["o"]]
        return out
    if "b" in v:
        return bytes(_slice(data, v["b"]))
    if "a" in v:
        return np.frombuffer(_slice(data, v["at"]), dtype=np.dtype(v["a"])).copy()
    raise StateError(f"the stored state's header holds an unknown entry {sorted(v)}")


def _slice(data: memoryview, at: list[int]) -> memoryview:
    offset, size = at
    if offset + size > len(data):
        raise StateError("the stored state is truncated")
    return data[offset:offset + size]


__all__ = ["encode", "decode", "MAGIC", "VERSION"]
