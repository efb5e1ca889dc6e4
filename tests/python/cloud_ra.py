"""numpy's side, and Azurite's container, for the `ra` commands on URLs (tests/cloud_ra.rs).

    cloud_ra.py az-container ENDPOINT NAME   create a blob container in Azurite (SharedKey)
    cloud_ra.py write-npy PATH               write numpy's own .npy of a known int16 array
    cloud_ra.py same NPY RA                  np.load(NPY) equals numpy's view of the plain RA

The .ra parser here is numpy's reading of the format's bytes (doc/format.md), independent of
the Rust one: the 48-byte header, the dims (first fastest, so numpy's shape is them reversed),
the data as numpy's dtype.
"""
import base64
import hashlib
import hmac
import sys
import urllib.request
from email.utils import formatdate

import numpy as np

MAGIC = 0x7961727261776172
DTYPES = {(1, 2): "i2", (1, 4): "i4", (3, 4): "f4", (3, 8): "f8"}
# Azurite's well-known development account and key (not a secret: the emulator's default).
ACCOUNT = "devstoreaccount1"
KEY = ("Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/"
       "KBHBeksoGMGw==")


def az_container(endpoint, name):
    """Create Container, signed with the SharedKey scheme as Azure's SDKs sign it."""
    date = formatdate(usegmt=True)
    version = "2021-08-06"
    path = f"/{ACCOUNT}/{name}"
    # urllib sends a Content-Type with any body: given here, so that it is the one signed.
    kind = "application/octet-stream"
    string_to_sign = "\n".join([
        "PUT", "", "", "", "", kind, "", "", "", "", "", "",
        f"x-ms-date:{date}\nx-ms-version:{version}",
        f"/{ACCOUNT}{path}\nrestype:container",
    ])
    sig = base64.b64encode(hmac.new(base64.b64decode(KEY), string_to_sign.encode(),
                                    hashlib.sha256).digest()).decode()
    req = urllib.request.Request(f"{endpoint}{path}?restype=container", data=b"", method="PUT",
                                 headers={"x-ms-date": date, "x-ms-version": version, "Content-Type": kind,
                                          "Authorization": f"SharedKey {ACCOUNT}:{sig}"})
    with urllib.request.urlopen(req) as r:
        assert r.status == 201, r.status


def npy_array():
    # Fortran order and a dtype other than the field's: what `ra convert` must carry.
    return np.asfortranarray((np.arange(3 * 4 * 5, dtype=np.int16) * 7 - 100).reshape(3, 4, 5))


def read_ra(path):
    raw = open(path, "rb").read()
    magic, flags, eltype, elbyte, size, ndims = np.frombuffer(raw[:48], "<u8").tolist()
    assert magic == MAGIC, hex(magic)
    assert flags & ~1 == 0, f"{path}: flags {flags:#x}: not a plain .ra file"
    dims = np.frombuffer(raw[48:48 + 8 * ndims], "<u8").tolist()
    data = raw[48 + 8 * ndims:48 + 8 * ndims + size]
    dtype = np.dtype((">" if flags & 1 else "<") + DTYPES[(eltype, elbyte)])
    return np.frombuffer(data, dtype=dtype).reshape(dims[::-1])


def main():
    cmd, *args = sys.argv[1:]
    if cmd == "az-container":
        az_container(*args)
    elif cmd == "write-npy":
        np.save(args[0], npy_array())
    elif cmd == "same":
        a, b = np.load(args[0]), read_ra(args[1])
        assert a.dtype.str[1:] == b.dtype.str[1:], (a.dtype, b.dtype)
        assert a.shape == b.shape, (a.shape, b.shape)
        np.testing.assert_array_equal(a, b)
        print(f"equal: {a.dtype} {a.shape}")
    else:
        raise SystemExit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
