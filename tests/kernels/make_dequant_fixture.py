#!/usr/bin/env python3
"""Writes data/dequant_fixture.txt: random blocks of each quantized GGUF type and
their dequantization by the PyPI `gguf` package (an implementation independent
of ours). kernels_ref_tests reads it. Run: python3 make_dequant_fixture.py

Format, per type: a line `<type name> <n_elems>`, a line of hex bytes, then one
line with n_elems floats (repr, round-trips exactly to float32)."""
import os
import numpy as np
from gguf import GGMLQuantizationType as T
from gguf.quants import dequantize

rng = np.random.default_rng(1337)
N = 512
# (name, type, block bytes, byte offsets of fp16 scale fields within a block)
# New types go at the end, so the earlier entries keep their random bytes.
TYPES = [("q4_0", T.Q4_0, 18, [0]), ("q4_1", T.Q4_1, 20, [0, 2]), ("q8_0", T.Q8_0, 34, [0]),
         ("q4_k", T.Q4_K, 144, [0, 2]), ("q6_k", T.Q6_K, 210, [208]),
         ("q5_0", T.Q5_0, 22, [0]), ("q5_1", T.Q5_1, 24, [0, 2]), ("q5_k", T.Q5_K, 176, [0, 2]),
         ("iq4_nl", T.IQ4_NL, 18, [0]), ("iq4_xs", T.IQ4_XS, 136, [0])]
out = []
for name, qt, bb, scale_offsets in TYPES:
    elems = 256 if name.endswith("_k") or name == "iq4_xs" else 32
    nblocks = N // elems
    raw = bytearray(rng.integers(0, 256, nblocks * bb, dtype=np.uint8).tobytes())
    for b in range(nblocks):  # replace random scale bits by sane finite fp16 values
        for off in scale_offsets:
            v = np.float16(rng.uniform(-0.05, 0.05))
            raw[b * bb + off: b * bb + off + 2] = v.tobytes()
    y = dequantize(np.frombuffer(bytes(raw), dtype=np.uint8), qt).astype(np.float32).reshape(-1)
    assert y.size == N
    out.append(f"{name} {N}")
    out.append(bytes(raw).hex())
    out.append(" ".join(repr(float(v)) for v in y))
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "dequant_fixture.txt")
with open(path, "w") as f:
    f.write("\n".join(out) + "\n")
print("wrote", path)
