#!/usr/bin/env python3
"""Independent float64 numpy reference of the decoder forward pass, for every
architecture the engine serves (llama incl. Llama 3.1 rope_freqs and the Mixtral
MoE layout, qwen2, qwen2moe, qwen3, qwen3moe).

Reads a GGUF file with the PyPI `gguf` package (GGUFReader +
gguf.quants.dequantize), so the weights are dequantized by code other than
ours. For llama it undoes llama.cpp's Q/K row permutation and applies HF-style
"rotate half" RoPE, so the engine's adjacent-pair RoPE on permuted rows is
checked, not copied; Qwen files are not permuted and use rotate-half directly.
Everything runs in float64; keys and values are cached per layer, so a
greedy step computes only its new position (as an engine does). With
kv16=True the cached K and V are rounded to float16, the storage precision of
the engine's default KV cache: that variant isolates the engine's arithmetic
from its KV rounding (and lets MoE routing see the same keys).

Modes:
  decoder_ref.py --model M [--greedy N] ID...
      prints `n_vocab <V>`, V lines of last-position logits, and with --greedy
      a last line `greedy <id> ...` (N argmax extensions, a full pass each).
  decoder_ref.py --model M --hidden ID...
      prints `n_embd <E>` and E lines: the last position's hidden state after
      the final norm (what an embedding request returns).
  decoder_ref.py --model M --prompt-logprobs ID...
      prints `n_logprobs <P - 1>` and P - 1 lines: the log-softmax at position p - 1
      of ids[p], for p = 1 .. P - 1 (one position at a time through the cache).
  decoder_ref.py --batch FILE --greedy N --top K
      FILE has lines `<model path> <id> <id> ...`; for each, prints one JSON
      line {"model", "greedy": [N ids], "top": [N lists of K [id, logprob]],
      "margin": [N top-1 minus top-2 log-prob gaps], "route_margin": [N
      smallest router-logit gaps between the k-th and (k+1)-th expert over
      every layer and position so far; null for dense models], "top_kv16":
      [N lists of K [id, logprob] of the float16-KV variant, teacher-forced
      on the same greedy tokens]}.
Exit status 2 when numpy or gguf cannot be imported (the tests then skip).
"""
import argparse
import json
import sys

try:
    import numpy as np
    from gguf import GGUFReader
    from gguf.quants import dequantize
except ImportError as e:  # pragma: no cover - environment dependent
    print(f"decoder_ref.py: cannot import numpy/gguf: {e}", file=sys.stderr)
    sys.exit(2)

ROTATE_HALF_ARCHS = {"qwen2", "qwen2moe", "qwen3", "qwen3moe"}
NORM_TOPK = {"llama": True, "qwen2moe": False, "qwen3moe": True}


def field(reader, key, default=None):
    f = reader.fields.get(key)
    if f is None:
        if default is None:
            raise KeyError(f"missing GGUF key {key}")
        return default
    return f.contents()


class Model:
    def __init__(self, path):
        r = GGUFReader(path)
        self.arch = arch = field(r, "general.architecture")
        g = lambda k, d=None: field(r, f"{arch}.{k}", d)
        self.n_layer = int(g("block_count"))
        self.n_embd = int(g("embedding_length"))
        self.n_head = int(g("attention.head_count"))
        self.n_kv = int(g("attention.head_count_kv", self.n_head))
        self.head_dim = int(g("attention.key_length", self.n_embd // self.n_head))
        self.rot = int(g("rope.dimension_count", self.head_dim))
        self.eps = float(g("attention.layer_norm_rms_epsilon"))
        self.base = float(g("rope.freq_base", 10000.0))
        scaling = g("rope.scaling.type", "none")
        self.pos_scale = 1.0 / float(g("rope.scaling.factor", 1.0)) if scaling == "linear" else 1.0
        self.n_expert = int(g("expert_count", 0))
        self.n_used = int(g("expert_used_count", 0))
        self.scale_w = float(g("expert_weights_scale", 0.0)) or 1.0
        self.tensors = {t.name: t for t in r.tensors}
        self.cache = {}
        self.route_gap = float("inf")  # smallest k-th vs (k+1)-th router gap of the last pass
        self.freqs = self.weight("rope_freqs.weight").astype(np.float64) if "rope_freqs.weight" in self.tensors else None

    def weight(self, name):
        if name not in self.cache:
            t = self.tensors[name]
            w = dequantize(t.data, t.tensor_type)
            ne = [int(x) for x in t.shape]  # ne[0] first
            self.cache[name] = np.asarray(w, dtype=np.float64).reshape(list(reversed(ne)) if len(ne) > 1 else ne)
        return self.cache[name]

    def has(self, name):
        return name in self.tensors

    def unpermute(self, w, n_heads):
        """GGUF row h*d + 2i + j holds HF row h*d + j*d/2 + i; undo it (rows = first axis)."""
        if self.arch in ROTATE_HALF_ARCHS:
            return w
        d = self.head_dim
        rest = w.shape[1:]
        return w.reshape((n_heads, d // 2, 2) + rest).swapaxes(1, 2).reshape((n_heads * d,) + rest)


def rms_norm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def rope_half(m, x, pos):
    """HF rotate-half RoPE over the first m.rot dims of x [n, heads, d]."""
    r = m.rot
    inv = m.base ** (-np.arange(0, r, 2, dtype=np.float64) / r)  # [r/2]
    if m.freqs is not None:
        inv = inv / m.freqs
    ang = (pos[:, None].astype(np.float64) * m.pos_scale) * inv[None, :]  # [n, r/2]
    cos = np.concatenate([np.cos(ang)] * 2, axis=-1)[:, None, :]
    sin = np.concatenate([np.sin(ang)] * 2, axis=-1)[:, None, :]
    xr, rest = x[..., :r], x[..., r:]
    rot = np.concatenate([-xr[..., r // 2:], xr[..., : r // 2]], axis=-1)
    return np.concatenate([xr * cos + rot * sin, rest], axis=-1)


def swiglu_ffn(h, gate, up, down):
    g = h @ gate.T
    return (g / (1.0 + np.exp(-g)) * (h @ up.T)) @ down.T


def moe_ffn(m, p, h):
    w = lambda name: m.weight(p + name)
    logits = h @ w("ffn_gate_inp.weight").T  # [n, n_expert]
    probs = np.exp(logits - logits.max(axis=-1, keepdims=True))
    probs /= probs.sum(axis=-1, keepdims=True)
    order = np.argsort(-probs, axis=-1, kind="stable")  # [n, n_expert]
    rows = np.arange(h.shape[0])
    if m.n_used < m.n_expert:
        gaps = logits[rows, order[:, m.n_used - 1]] - logits[rows, order[:, m.n_used]]
        m.route_gap = min(m.route_gap, float(gaps.min()))
    top = order[:, : m.n_used]  # [n, k]
    wt = probs[rows[:, None], top]
    if NORM_TOPK[m.arch]:
        wt = wt / wt.sum(axis=-1, keepdims=True)
    wt = wt * m.scale_w
    gate, up, down = w("ffn_gate_exps.weight"), w("ffn_up_exps.weight"), w("ffn_down_exps.weight")
    out = np.zeros_like(h)
    for e in range(m.n_expert):
        tok, slot = np.nonzero(top == e)
        if len(tok):
            out[tok] += wt[tok, slot][:, None] * swiglu_ffn(h[tok], gate[e], up[e], down[e])
    if m.has(p + "ffn_gate_inp_shexp.weight"):
        sg = h @ w("ffn_gate_inp_shexp.weight")  # [n]
        shared = swiglu_ffn(h, w("ffn_gate_shexp.weight"), w("ffn_up_shexp.weight"), w("ffn_down_shexp.weight"))
        out += (1.0 / (1.0 + np.exp(-sg)))[:, None] * shared
    return out


def attention(m, l, h, pos, cache):
    """Causal attention of the new positions `pos` over the cached ones and themselves."""
    p = f"blk.{l}."
    n, H, KV, hd = h.shape[0], m.n_head, m.n_kv, m.head_dim
    w = lambda name: m.weight(p + name)
    q = h @ m.unpermute(w("attn_q.weight"), H).T
    k = h @ m.unpermute(w("attn_k.weight"), KV).T
    v = h @ w("attn_v.weight").T
    if m.has(p + "attn_q.bias"):
        q = q + m.unpermute(w("attn_q.bias"), H)
        k = k + m.unpermute(w("attn_k.bias"), KV)
        v = v + w("attn_v.bias")
    q, k, v = q.reshape(n, H, hd), k.reshape(n, KV, hd), v.reshape(n, KV, hd)
    if m.has(p + "attn_q_norm.weight"):
        q = rms_norm(q, w("attn_q_norm.weight"), m.eps)
        k = rms_norm(k, w("attn_k_norm.weight"), m.eps)
    q, k = rope_half(m, q, pos), rope_half(m, k, pos)
    if cache.kv16:
        k, v = k.astype(np.float16).astype(np.float64), v.astype(np.float16).astype(np.float64)
    cache.k[l] = k if cache.k[l] is None else np.concatenate([cache.k[l], k])
    cache.v[l] = v if cache.v[l] is None else np.concatenate([cache.v[l], v])
    rep = H // KV
    keys, values = np.repeat(cache.k[l], rep, axis=1), np.repeat(cache.v[l], rep, axis=1)
    past = keys.shape[0] - n
    mask = np.triu(np.full((n, n), -np.inf), k=1)
    mask = np.concatenate([np.zeros((n, past)), mask], axis=1)
    scores = np.einsum("qhd,khd->hqk", q, keys) / np.sqrt(hd) + mask
    scores -= scores.max(axis=-1, keepdims=True)
    probs = np.exp(scores)
    probs /= probs.sum(axis=-1, keepdims=True)
    out = np.einsum("hqk,khd->qhd", probs, values).reshape(n, H * hd) @ w("attn_output.weight").T
    if m.has(p + "attn_output.bias"):
        out = out + w("attn_output.bias")
    return out


class Cache:
    """Per-layer keys [n, KV, hd] and values of every position so far."""

    def __init__(self, m, kv16=False):
        self.k = [None] * m.n_layer
        self.v = [None] * m.n_layer
        self.kv16 = kv16

    def length(self):
        return 0 if self.k[0] is None else self.k[0].shape[0]


def hidden_state(m, ids, cache=None):
    """The final-norm hidden state of the last of `ids` (what an embedding
    request returns), which follow the positions in `cache`."""
    cache = cache if cache is not None else Cache(m)
    n = len(ids)
    pos = np.arange(cache.length(), cache.length() + n)
    x = m.weight("token_embd.weight")[ids]
    for l in range(m.n_layer):
        p = f"blk.{l}."
        x = x + attention(m, l, rms_norm(x, m.weight(p + "attn_norm.weight"), m.eps), pos, cache)
        h = rms_norm(x, m.weight(p + "ffn_norm.weight"), m.eps)
        if m.n_expert > 0:
            x = x + moe_ffn(m, p, h)
        else:
            x = x + swiglu_ffn(h, m.weight(p + "ffn_gate.weight"), m.weight(p + "ffn_up.weight"),
                               m.weight(p + "ffn_down.weight"))
    return rms_norm(x[-1:], m.weight("output_norm.weight"), m.eps)[0]


def forward(m, ids, cache=None):
    """Logits of the last of `ids`, which follow the positions in `cache`."""
    last = hidden_state(m, ids, cache)
    head = m.weight("output.weight") if m.has("output.weight") else m.weight("token_embd.weight")
    return last @ head.T


def log_softmax(z):
    z = z - z.max()
    return z - np.log(np.exp(z).sum())


def top_of(lp, top):
    order = np.argsort(-lp, kind="stable")
    return order, [[int(i), float(lp[i])] for i in order[:top]]


def greedy_steps(m, ids, steps, top):
    """`steps` greedy tokens after `ids`, with exact KV; then the same tokens
    teacher-forced through a float16-KV cache."""
    out = {"greedy": [], "top": [], "margin": [], "route_margin": [], "top_kv16": []}
    m.route_gap = float("inf")
    cache, new = Cache(m), list(ids)
    for _ in range(steps):
        lp = log_softmax(forward(m, np.array(new, dtype=np.int64), cache))
        order, best = top_of(lp, top)
        out["top"].append(best)
        out["margin"].append(float(lp[order[0]] - lp[order[1]]))
        out["route_margin"].append(None if m.n_expert == 0 else m.route_gap)
        out["greedy"].append(int(order[0]))
        new = [int(order[0])]
    cache, new = Cache(m, kv16=True), list(ids)
    for s in range(steps):
        lp = log_softmax(forward(m, np.array(new, dtype=np.int64), cache))
        out["top_kv16"].append(top_of(lp, top)[1])
        new = [out["greedy"][s]]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model")
    ap.add_argument("--batch", metavar="FILE")
    ap.add_argument("--greedy", type=int, default=0, metavar="N")
    ap.add_argument("--top", type=int, default=5, metavar="K")
    ap.add_argument("--hidden", action="store_true")
    ap.add_argument("--prompt-logprobs", action="store_true")
    ap.add_argument("ids", type=int, nargs="*")
    a = ap.parse_args()
    if a.batch:
        with open(a.batch) as f:
            for line in f:
                parts = line.split()
                if not parts:
                    continue
                r = greedy_steps(Model(parts[0]), [int(x) for x in parts[1:]], a.greedy, a.top)
                r["model"] = parts[0]
                sys.stdout.write(json.dumps(r) + "\n")
                sys.stdout.flush()
        return
    m = Model(a.model)
    ids = list(a.ids)
    if a.prompt_logprobs:
        cache, out = Cache(m), [f"n_logprobs {len(ids) - 1}"]
        for p in range(1, len(ids)):
            lp = log_softmax(forward(m, np.array([ids[p - 1]], dtype=np.int64), cache))
            out.append(repr(float(lp[ids[p]])))
        sys.stdout.write("\n".join(out) + "\n")
        return
    if a.hidden:
        h = hidden_state(m, np.array(ids, dtype=np.int64))
        sys.stdout.write("\n".join([f"n_embd {h.shape[0]}"] + [repr(float(v)) for v in h]) + "\n")
        return
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
