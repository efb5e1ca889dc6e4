"""numpy's side of the simulation interop test (tests/simulation.rs).

    read_simulation.py FILE I,J,K...

Reads the record file the main job (rawarray-demo) writes, with no Rust involved: parses the
header, finds the trailer block backward from the end of the file (checking its frames and CRC
with zlib), builds the record dtype from the trailer's `numpy_descr`, and prints JSON: the record
count, the parameters, the records at the given indices field by field, and the total energy
of each step.
"""
import json
import struct
import sys
import zlib

import numpy as np

MAGIC = 0x7961727261776172
TAG = b"RATRAILR"
FRAME = 28


def dtype_from_json(d):
    """A dtype from its JSON form: a string, or a list of [name, dtype] / [name, dtype, shape]."""
    if isinstance(d, str):
        return np.dtype(d)
    if len(d) == 2 and isinstance(d[0], str) and isinstance(d[1], list):
        return np.dtype((dtype_from_json(d[0]), tuple(d[1])))
    fields = []
    for entry in d:
        base = dtype_from_json(entry[1])
        fields.append((entry[0], base, tuple(entry[2])) if len(entry) == 3 else (entry[0], base))
    return np.dtype(fields)


def trailer_at_end(raw, data_end):
    """The trailer JSON of the block ending the file: crc | at | len | tag, backward."""
    crc, at, length = struct.unpack_from("<IQQ", raw, len(raw) - FRAME)
    assert raw[-8:] == TAG, "no trailer tag at the end of the file"
    start = len(raw) - 2 * FRAME - length
    assert start >= data_end, "trailer overlaps the data"
    head_tag, head_len, head_at, head_crc = struct.unpack_from("<8sQQI", raw, start)
    assert (head_tag, head_len, head_at, head_crc) == (TAG, length, at, crc), "frames disagree"
    body = raw[start + FRAME:start + FRAME + length]
    assert zlib.crc32(struct.pack("<QQ", length, at) + body) == crc, "CRC mismatch"
    return json.loads(body)


def main():
    path, picks = sys.argv[1], [int(i) for i in sys.argv[2].split(",")]
    with open(path, "rb") as f:
        raw = f.read()
    magic, flags, eltype, elbyte, size, ndims = struct.unpack_from("<6Q", raw, 0)
    assert magic == MAGIC and flags == 0 and eltype == 0 and ndims == 1, (magic, flags, eltype, ndims)
    (n,) = struct.unpack_from("<Q", raw, 48)
    data_end = 56 + size
    trailer = trailer_at_end(raw, data_end)
    assert trailer["version"] == 1
    dtype = dtype_from_json(trailer["numpy_descr"])
    assert dtype.itemsize == elbyte == 76, (dtype.itemsize, elbyte)
    assert size == n * elbyte
    records = np.frombuffer(raw, dtype=dtype, count=n, offset=56)

    def record(r):
        return {
            "step": int(r["step"]),
            "time": float(r["time"]),
            "id": int(r["id"]),
            "position": [float(x) for x in r["position"]],
            "velocity": [float(x) for x in r["velocity"]],
            "energy": float(r["energy"]),
        }

    particles = trailer["params"]["particles"]
    steps = records["step"].reshape(-1, particles)
    assert (steps == steps[:, :1]).all(), "one step per row of particles"
    assert (records["id"].reshape(-1, particles) == np.arange(particles)).all()
    energy = records["energy"].reshape(-1, particles).sum(axis=1)
    print(json.dumps({
        "records": int(n),
        "params": trailer["params"],
        "picked": [record(records[i]) for i in picks],
        "energy_by_step": [float(e) for e in energy],
    }))


if __name__ == "__main__":
    main()
