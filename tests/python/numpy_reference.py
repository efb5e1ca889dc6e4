"""numpy_reference.py compare OURS_DIR REF_DIR: numpy's reading of each reference file equals
the plain little-endian data our reader produced (OURS_DIR/NAME.bin)."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from numpy_core import read_ra  # noqa: E402

ours, ref = sys.argv[2], sys.argv[3]
for bin_name in sorted(os.listdir(ours)):
    name = bin_name[:-4]
    arr, flags, dims = read_ra(os.path.join(ref, name))
    mine = np.frombuffer(open(os.path.join(ours, bin_name), "rb").read(), dtype=arr.dtype.newbyteorder("<"))
    assert np.array_equal(arr.ravel(), mine, equal_nan=True), name
    print("ok", name, arr.dtype, arr.shape)
