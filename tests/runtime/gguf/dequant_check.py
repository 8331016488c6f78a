#!/usr/bin/env python3
"""Cross-checks our GGUF dequantizers, quantizers and type table against the
PyPI `gguf` package (an independent implementation of ggml's formats).

Run by CTest as runtime_gguf_dequant_check when python3 + gguf + numpy import.
usage: dequant_check.py --tool PATH/TO/gguf_check_tool
The real-model part uses $DYNAMO_MODEL_PATH or
~/.cache/dynamo/models/SmolLM2-135M-Instruct.Q4_1.gguf and is skipped (with a
message) when neither exists.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T
from gguf.quants import dequantize, quantize

failures = []

# The block types the engine computes with (kernels/reference/tensor_type.hpp).
COMPUTED_BLOCK_TYPES = (T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0, T.Q4_K, T.Q5_K, T.Q6_K, T.IQ4_NL, T.IQ4_XS)


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def run_tool(tool, *args):
    subprocess.run([tool, *map(str, args)], check=True)


def model_path():
    p = os.environ.get("DYNAMO_MODEL_PATH")
    if p and os.path.isfile(p):
        return p
    p = os.path.expanduser("~/.cache/dynamo/models/SmolLM2-135M-Instruct.Q4_1.gguf")
    return p if os.path.isfile(p) else None


def check_type_table(tool):
    out = subprocess.run([tool, "types"], check=True, capture_output=True, text=True).stdout
    ours = {int(l.split()[0]): (int(l.split()[1]), int(l.split()[2])) for l in out.splitlines()}
    for t, size in gguf.GGML_QUANT_SIZES.items():
        if t == T.Q8_1:  # deliberately absent: its size differs between ggml versions
            continue
        check(ours.get(t.value) == tuple(size), f"type table {t.name}: ours {ours.get(t.value)} gguf {tuple(size)}")


def random_blocks(rng, qtype, n_blocks):
    """Random bytes per block, with the fp16 scale fields forced finite."""
    elems, nbytes = gguf.GGML_QUANT_SIZES[qtype]
    raw = rng.integers(0, 256, size=(n_blocks, nbytes), dtype=np.uint8)
    def set_half(col, values):
        raw[:, col:col + 2] = values.astype(np.float16).view(np.uint8).reshape(n_blocks, 2)
    scale = rng.uniform(-2.0, 2.0, size=n_blocks)
    if qtype in (T.Q4_0, T.Q5_0, T.Q8_0, T.IQ4_NL, T.IQ4_XS):
        set_half(0, scale)
    elif qtype in (T.Q4_1, T.Q5_1, T.Q4_K, T.Q5_K):
        set_half(0, scale)
        set_half(2, rng.uniform(-2.0, 2.0, size=n_blocks))
    elif qtype == T.Q6_K:
        set_half(nbytes - 2, scale)
    else:
        raise ValueError(f"no scale layout for {qtype.name}")
    return raw, elems


def check_synthetic(tool, tmp):
    rng = np.random.default_rng(7)
    path = os.path.join(tmp, "synthetic.gguf")
    w = gguf.GGUFWriter(path, "llama")
    expected = {}
    rows = 3
    for qtype in COMPUTED_BLOCK_TYPES:
        blocks_per_row = 2
        raw, elems = random_blocks(rng, qtype, rows * blocks_per_row)
        raw = raw.reshape(rows, -1)
        w.add_tensor(f"t.{qtype.name}", raw, raw_dtype=qtype)
        expected[f"t.{qtype.name}"] = dequantize(raw, qtype).astype(np.float32)
    halves = rng.integers(0, 65536, size=(rows, 64), dtype=np.uint16)
    w.add_tensor("t.F16", halves.view(np.float16), raw_dtype=T.F16)
    expected["t.F16"] = halves.view(np.float16).astype(np.float32)
    bf = rng.integers(0, 65536, size=(rows, 64), dtype=np.uint16)
    w.add_tensor("t.BF16", bf.view(np.uint8).reshape(rows, 128), raw_dtype=T.BF16)
    expected["t.BF16"] = dequantize(bf.view(np.uint8).reshape(rows, 128), T.BF16).astype(np.float32)
    floats = rng.normal(0.0, 1.0, size=(rows * 4, 256)).astype(np.float32)
    w.add_tensor("t.F32", floats)
    expected["t.F32"] = floats
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()

    out = os.path.join(tmp, "out.bin")
    for name, want in expected.items():
        run_tool(tool, "dequant", path, name, out)
        got = np.fromfile(out, dtype=np.float32).reshape(want.shape)
        check(np.array_equal(got, want, equal_nan=True), f"dequantize {name} bit-exact vs gguf-py")
    # Every type both we and gguf-py quantize (gguf-py has no K-quant or IQ4 quantizer).
    for qtype in (T.Q8_0, T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.F16, T.BF16):
        run_tool(tool, "quant", path, "t.F32", int(qtype), out)
        got = np.fromfile(out, dtype=np.uint8)
        want = np.asarray(quantize(floats, qtype)).view(np.uint8).reshape(-1)
        same = np.array_equal(got, want)
        detail = "" if same else f" ({int(np.count_nonzero(got != want))} of {want.size} bytes differ)"
        check(same, f"quantize {qtype.name} byte-exact vs gguf-py{detail}")


def check_model(tool, tmp):
    path = model_path()
    if not path:
        print("skip real-model checks: SmolLM2-135M-Instruct.Q4_1.gguf not found "
              "(set DYNAMO_MODEL_PATH or put it in ~/.cache/dynamo/models/)")
        return
    reader = gguf.GGUFReader(path)
    tensors = {t.name: t for t in reader.tensors}
    out = os.path.join(tmp, "model.bin")
    picks = [("token_embd.weight", 64), ("blk.0.attn_q.weight", None), ("blk.0.ffn_down.weight", None),
             ("blk.29.attn_v.weight", None), ("output_norm.weight", None)]
    for name, max_rows in picks:
        t = tensors[name]
        data = np.asarray(t.data)
        if max_rows is not None:
            data = data[:max_rows]
        want = dequantize(data, t.tensor_type).astype(np.float32).reshape(-1)
        run_tool(tool, "dequant", path, name, out, *([max_rows] if max_rows else []))
        got = np.fromfile(out, dtype=np.float32)
        check(got.shape == want.shape and np.array_equal(got, want),
              f"SmolLM2 {name} ({t.tensor_type.name}, {want.size} values) bit-exact vs gguf-py")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tool", required=True)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        check_type_table(args.tool)
        check_synthetic(args.tool, tmp)
        check_model(args.tool, tmp)
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
