#!/usr/bin/env python3
"""Independent numpy reference of the Llama forward pass, for the golden test.

Reads a GGUF file with the PyPI `gguf` package (GGUFReader + gguf.quants.dequantize),
undoes llama.cpp's Q/K row permutation and applies HF-style "rotate half" RoPE
(so the C++ engine's adjacent-pair RoPE on permuted rows is checked, not copied),
runs the given prompt token ids at positions 0..n-1 in float64 and prints the
logits of the last position: a line `n_vocab <V>`, then V lines of floats.
With --greedy N it then extends the prompt N times by its argmax token (a
full forward pass each time) and prints a last line `greedy <id> ... <id>`.

Usage: llama_ref.py --model PATH.gguf [--greedy N] ID [ID ...]
Exit status 2 when numpy or gguf cannot be imported (the test then skips).
"""
import argparse
import sys

try:
    import numpy as np
    from gguf import GGUFReader
    from gguf.quants import dequantize
except ImportError as e:  # pragma: no cover - environment dependent
    print(f"llama_ref.py: cannot import numpy/gguf: {e}", file=sys.stderr)
    sys.exit(2)


def field(reader, key, default=None):
    f = reader.fields.get(key)
    if f is None:
        if default is None:
            raise KeyError(f"missing GGUF key {key}")
        return default
    v = f.contents()
    return v


class Model:
    def __init__(self, path):
        r = GGUFReader(path)
        arch = field(r, "general.architecture")
        assert arch == "llama", arch
        g = lambda k, d=None: field(r, f"{arch}.{k}", d)
        self.n_layer = int(g("block_count"))
        self.n_embd = int(g("embedding_length"))
        self.n_head = int(g("attention.head_count"))
        self.n_kv = int(g("attention.head_count_kv", self.n_head))
        self.head_dim = self.n_embd // self.n_head
        self.eps = float(g("attention.layer_norm_rms_epsilon"))
        self.base = float(g("rope.freq_base", 10000.0))
        self.tensors = {t.name: t for t in r.tensors}
        self.cache = {}

    def weight(self, name):
        if name not in self.cache:
            t = self.tensors[name]
            w = dequantize(t.data, t.tensor_type)
            ne = [int(x) for x in t.shape]  # ne[0] first
            self.cache[name] = np.asarray(w, dtype=np.float32).reshape(list(reversed(ne)) if len(ne) > 1 else ne)
        return self.cache[name]

    def unpermute(self, w, n_heads):
        """GGUF row h*d + 2i + j holds HF row h*d + j*d/2 + i; undo it."""
        d = self.head_dim
        return w.reshape(n_heads, d // 2, 2, w.shape[1]).swapaxes(1, 2).reshape(n_heads * d, w.shape[1])


def rms_norm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def rope_half(x, pos, base):
    """HF rotate-half RoPE on x [n, heads, d] at positions pos [n]."""
    d = x.shape[-1]
    inv = base ** (-np.arange(0, d, 2, dtype=np.float64) / d)  # [d/2]
    ang = pos[:, None].astype(np.float64) * inv[None, :]      # [n, d/2]
    cos = np.concatenate([np.cos(ang)] * 2, axis=-1)[:, None, :]
    sin = np.concatenate([np.sin(ang)] * 2, axis=-1)[:, None, :]
    rot = np.concatenate([-x[..., d // 2:], x[..., : d // 2]], axis=-1)
    return x * cos + rot * sin


def forward(m, ids):
    n = len(ids)
    pos = np.arange(n)
    embd = m.weight("token_embd.weight")
    x = embd[ids].astype(np.float64)
    hd, H, KV = m.head_dim, m.n_head, m.n_kv
    mask = np.triu(np.full((n, n), -np.inf), k=1)
    for l in range(m.n_layer):
        p = f"blk.{l}."
        w = lambda name: m.weight(p + name).astype(np.float64)
        h = rms_norm(x, w("attn_norm.weight"), m.eps)
        q = h @ m.unpermute(m.weight(p + "attn_q.weight"), H).astype(np.float64).T
        k = h @ m.unpermute(m.weight(p + "attn_k.weight"), KV).astype(np.float64).T
        v = h @ w("attn_v.weight").T
        q = rope_half(q.reshape(n, H, hd), pos, m.base)
        k = rope_half(k.reshape(n, KV, hd), pos, m.base)
        v = v.reshape(n, KV, hd)
        rep = H // KV
        k = np.repeat(k, rep, axis=1)
        v = np.repeat(v, rep, axis=1)
        scores = np.einsum("qhd,khd->hqk", q, k) / np.sqrt(hd) + mask
        scores -= scores.max(axis=-1, keepdims=True)
        probs = np.exp(scores)
        probs /= probs.sum(axis=-1, keepdims=True)
        att = np.einsum("hqk,khd->qhd", probs, v).reshape(n, H * hd)
        x = x + att @ w("attn_output.weight").T
        h = rms_norm(x, w("ffn_norm.weight"), m.eps)
        gate = h @ w("ffn_gate.weight").T
        up = h @ w("ffn_up.weight").T
        x = x + (gate / (1.0 + np.exp(-gate)) * up) @ w("ffn_down.weight").T
    last = rms_norm(x[-1:], m.weight("output_norm.weight").astype(np.float64), m.eps)
    head = m.weight("output.weight") if "output.weight" in m.tensors else embd
    return (last @ head.astype(np.float64).T)[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--greedy", type=int, default=0, metavar="N")
    ap.add_argument("ids", type=int, nargs="+")
    a = ap.parse_args()
    m = Model(a.model)
    ids = list(a.ids)
    logits = forward(m, np.array(ids, dtype=np.int64))
    out = [f"n_vocab {logits.shape[0]}"] + [repr(float(v)) for v in logits]
    if a.greedy > 0:
        step = logits
        for i in range(a.greedy):
            ids.append(int(np.argmax(step)))
            if i + 1 < a.greedy:
                step = forward(m, np.array(ids, dtype=np.int64))
        out.append("greedy " + " ".join(str(t) for t in ids[len(a.ids):]))
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
