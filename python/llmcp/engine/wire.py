"""The framing of the trainer–engine protocol (docs/engine-protocol.md).

Every message, in both directions, is one frame:

    u32 header length (little-endian) | u64 payload length (little-endian) | header | payload

The header is a UTF-8 JSON object with a string ``kind``; the payload is raw
little-endian numbers whose layout the header's kind defines (int32 token ids,
float64 tensors). The trainer writes to rank 0's standard input and reads
rank 0's replies, and every local rank's heartbeats, from file descriptor 3.
"""
import json
import struct
import threading

#: The protocol this engine speaks; the trainer sends the one it speaks in ``init``.
PROTOCOL = "llmcp-engine/1"

#: Largest header accepted (a header is a few hundred bytes; anything larger is a corrupt stream).
MAX_HEADER_BYTES = 1 << 20

_PREFIX = struct.Struct("<IQ")


class WireError(Exception):
    """The stream ended or does not follow the framing."""


def _read_exactly(stream, n):
    chunks = []
    left = n
    while left > 0:
        chunk = stream.read(left)
        if not chunk:
            raise WireError("the stream ended %d bytes into a %d-byte read" % (n - left, n))
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_frame(stream, max_payload):
    """Reads one frame: (header dict, payload bytes). Raises WireError at end of stream or on a bad frame."""
    header_bytes, payload_bytes = _PREFIX.unpack(_read_exactly(stream, _PREFIX.size))
    if header_bytes == 0 or header_bytes > MAX_HEADER_BYTES:
        raise WireError("frame header of %d bytes (at most %d)" % (header_bytes, MAX_HEADER_BYTES))
    if payload_bytes > max_payload:
        raise WireError("frame payload of %d bytes (at most %d)" % (payload_bytes, max_payload))
    try:
        header = json.loads(_read_exactly(stream, header_bytes).decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise WireError("frame header is not UTF-8 JSON: %s" % e) from e
    if not isinstance(header, dict) or not isinstance(header.get("kind"), str):
        raise WireError("frame header is not an object with a string kind")
    payload = _read_exactly(stream, payload_bytes) if payload_bytes else b""
    return header, payload


class FrameWriter:
    """Writes whole frames to a binary stream; safe to share between threads (heartbeats and replies)."""

    def __init__(self, stream):
        self._stream = stream
        self._lock = threading.Lock()

    def write(self, header, payload=b""):
        data = json.dumps(header, allow_nan=False, separators=(",", ":")).encode("utf-8")
        with self._lock:
            self._stream.write(_PREFIX.pack(len(data), len(payload)))
            self._stream.write(data)
            if payload:
                self._stream.write(payload)
            self._stream.flush()
