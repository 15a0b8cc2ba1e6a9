"""Shared helpers for tools/make_fixtures.py and tools/train_demo.py.

Developer tooling only; nothing here is needed to build or test kiln.

Text source
-----------
The training text for the tokenizers and the demo model is the CPython 3.11
documentation as shipped by the Debian package ``python3.11-doc``
(``apt-get install python3.11-doc``; HTML under /usr/share/doc/python3.11/html).
The documentation is licensed under the PSF License Agreement (Python Software
Foundation License Version 2), see /usr/share/doc/python3.11-doc/copyright and
https://docs.python.org/3.11/license.html. We use only the prose: code blocks,
navigation, index pages and tables are dropped when converting HTML to text.
"""

from __future__ import annotations

import html.parser
import json
import os
import re
from pathlib import Path

import numpy as np

DOC_ROOT = Path(os.environ.get("KILN_TEXT_ROOT", "/usr/share/doc/python3.11/html"))
TEXT_SOURCE = {
    "package": "python3.11-doc (Debian bookworm)",
    "path": str(DOC_ROOT),
    "license": "PSF License Agreement (Python Software Foundation License Version 2)",
    "license_file": "/usr/share/doc/python3.11-doc/copyright",
    "content": "CPython 3.11 documentation HTML, prose only (code blocks, tables, "
               "navigation and index pages removed), converted to plain text",
}

# Sections of the docs that are mostly English prose.
PROSE_DIRS = ["tutorial", "howto", "faq", "reference", "library", "using",
              "whatsnew", "extending", "installing", "distributing", "c-api"]
PROSE_FILES = ["glossary.html", "bugs.html", "about.html"]

_SKIP_TAGS = {"pre", "script", "style", "table", "head", "nav", "footer",
              "title", "math"}
_BLOCK_TAGS = {"p", "div", "section", "li", "dd", "dt", "h1", "h2", "h3",
               "h4", "h5", "h6", "blockquote", "br", "ul", "ol", "dl", "tr"}


class _ProseExtractor(html.parser.HTMLParser):
    """Collects the text of the main body of a Sphinx page, without code."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.in_body = 0        # depth inside <div role="main"> / class="body"
        self.skip = 0           # depth inside skipped elements
        self.parts: list[str] = []
        self._stack: list[tuple[str, bool, bool]] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        cls = a.get("class") or ""
        starts_body = tag == "div" and (a.get("role") == "main" or "body" in cls.split())
        skips = (tag in _SKIP_TAGS or "highlight" in cls or "headerlink" in cls
                 or "sphinxsidebar" in cls or "related" in cls or "footer" in cls)
        if tag in ("br", "img", "hr", "meta", "link", "input", "wbr"):
            if tag == "br":
                self.parts.append("\n")
            return
        self._stack.append((tag, starts_body, skips))
        if starts_body:
            self.in_body += 1
        if skips:
            self.skip += 1
        if tag in _BLOCK_TAGS:
            self.parts.append("\n")

    def handle_endtag(self, tag):
        # Pop to the matching start tag (HTML may be sloppy).
        for i in range(len(self._stack) - 1, -1, -1):
            if self._stack[i][0] == tag:
                for t, body, skip in self._stack[i:]:
                    if body:
                        self.in_body -= 1
                    if skip:
                        self.skip -= 1
                del self._stack[i:]
                break
        if tag in _BLOCK_TAGS:
            self.parts.append("\n")

    def handle_data(self, data):
        if self.in_body > 0 and self.skip == 0:
            self.parts.append(data)


def html_to_prose(html_text: str) -> str:
    p = _ProseExtractor()
    p.feed(html_text)
    p.close()
    text = "".join(p.parts)
    paras = []
    for block in re.split(r"\n\s*\n", text):
        line = " ".join(block.split())
        # Keep lines that look like sentences: enough words, mostly letters.
        if len(line) < 40 or line.count(" ") < 6:
            continue
        letters = sum(c.isalpha() or c == " " for c in line)
        if letters < 0.8 * len(line):
            continue
        paras.append(line)
    return "\n".join(paras)


def load_corpus(max_chars: int | None = None) -> str:
    """Returns the prose of the Python docs, one paragraph per line, in a fixed order."""
    if not DOC_ROOT.is_dir():
        raise SystemExit(
            f"text source {DOC_ROOT} not found: install it with "
            "`apt-get install python3.11-doc` (PSF license), or set KILN_TEXT_ROOT")
    files: list[Path] = []
    for d in PROSE_DIRS:
        files += sorted((DOC_ROOT / d).rglob("*.html"))
    files += [DOC_ROOT / f for f in PROSE_FILES if (DOC_ROOT / f).exists()]
    out: list[str] = []
    total = 0
    for f in files:
        t = html_to_prose(f.read_text(encoding="utf-8", errors="replace"))
        if not t:
            continue
        out.append(t)
        total += len(t) + 1
        if max_chars is not None and total >= max_chars:
            break
    text = "\n".join(out)
    return text if max_chars is None else text[:max_chars]


def train_bpe_tokenizer(text: str, vocab_size: int, special_tokens: list[str],
                        bos: str | None, eos: str, cls_sep: tuple[str, str] | None = None):
    """Byte-level BPE (GPT-2 style pre-tokenizer), trained with HF `tokenizers`.

    No normalizer, ByteLevel pre-tokenizer without prefix space, ByteLevel decoder.
    Special tokens get the lowest ids, in the order given. If `bos` is given, a
    TemplateProcessing post-processor prepends it (Llama style); if `cls_sep` =
    (cls, sep) is given, the post-processor wraps the text as `cls $A sep` (BERT
    style); otherwise no post-processing (GPT-2 style).
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=special_tokens,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    lines = text.split("\n")
    tok.train_from_iterator(lines, trainer=trainer, length=len(lines))
    if cls_sep is not None:
        cls, sep = cls_sep
        ids = [(t, tok.token_to_id(t)) for t in (cls, sep)]
        tok.post_processor = processors.TemplateProcessing(
            single=f"{cls} $A {sep}", pair=f"{cls} $A {sep} $B:1 {sep}:1", special_tokens=ids)
    elif bos is not None:
        bos_id = tok.token_to_id(bos)
        tok.post_processor = processors.TemplateProcessing(
            single=f"{bos} $A", pair=f"{bos} $A {bos} $B", special_tokens=[(bos, bos_id)])
    else:
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
    return tok


def wrap_hf_tokenizer(tok, bos: str | None, eos: str | None, unk: str | None = None,
                      pad: str | None = None, model_max_length: int = 128, **special):
    """`special`: further special-token kwargs (cls_token, sep_token, mask_token)."""
    from transformers import PreTrainedTokenizerFast
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token=bos, eos_token=eos, unk_token=unk,
        pad_token=pad, model_max_length=model_max_length,
        clean_up_tokenization_spaces=False, **special)


# --------------------------------------------------------------------------
# ONNX helpers


ORT_TO_NP = {
    "tensor(float)": np.float32, "tensor(float16)": np.float16,
    "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(bool)": np.bool_,
}


def op_types(model) -> list[str]:
    """Sorted set of "domain::OpType" (plain "OpType" for the default domain),
    including ops inside subgraphs."""
    seen: set[str] = set()

    def walk(g):
        for n in g.node:
            seen.add(f"{n.domain}::{n.op_type}" if n.domain not in ("", "ai.onnx") else n.op_type)
            for a in n.attribute:
                if a.g is not None and a.g.node:
                    walk(a.g)
                for sg in a.graphs:
                    walk(sg)
    walk(model.graph)
    return sorted(seen)


def non_default_ops(model) -> list[str]:
    """Op types outside the default ONNX domain (e.g. com.microsoft::*, or calls
    of local functions)."""
    return [o for o in op_types(model) if "::" in o]


def opsets(model) -> dict[str, int]:
    return {(o.domain or "ai.onnx"): int(o.version) for o in model.opset_import}


def io_spec(sess) -> dict:
    def one(x):
        return {"name": x.name, "dtype": x.type.replace("tensor(", "").replace(")", ""),
                "shape": [d if isinstance(d, int) else (d or "?") for d in x.shape]}
    return {"inputs": [one(i) for i in sess.get_inputs()],
            "outputs": [one(o) for o in sess.get_outputs()]}


def make_session(path: str | Path, threads: int = 1):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    # Basic optimizations keep numerics close to the plain graph semantics.
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


class OrtLM:
    """Drives an exported causal LM in ONNX Runtime, with or without a KV cache.

    Input filling convention (recorded in reference.json so a C++ runtime can
    reproduce it):
      input_ids      int64 [1, L]       the new tokens only (with past) / whole sequence (no past)
      attention_mask int64 [1, P+L]     all ones, P = past length
      position_ids   int64 [1, L]       arange(P, P+L)
      past_key_values.N.key/value float32 [1, kv_heads, P, head_dim]; P = 0 for the first call
    """

    def __init__(self, path, threads: int = 1):
        self.sess = make_session(path, threads)
        self.inputs = {i.name: i for i in self.sess.get_inputs()}
        self.output_names = [o.name for o in self.sess.get_outputs()]
        self.past_names = [n for n in self.inputs if n.startswith("past_key_values.")]
        self.with_past = bool(self.past_names)
        self.present_names = [n for n in self.output_names if n.startswith("present")]

    def _past_shape(self, name, kv_heads, head_dim):
        return (1, kv_heads, 0, head_dim)

    def feeds(self, new_ids: np.ndarray, past: dict | None, past_len: int,
              kv_heads: int, head_dim: int) -> dict:
        L = new_ids.shape[1]
        f = {"input_ids": new_ids.astype(np.int64)}
        if "attention_mask" in self.inputs:
            f["attention_mask"] = np.ones((1, past_len + L), dtype=np.int64)
        if "position_ids" in self.inputs:
            f["position_ids"] = np.arange(past_len, past_len + L, dtype=np.int64)[None, :]
        if self.with_past:
            for n in self.past_names:
                if past is None:
                    f[n] = np.zeros((1, kv_heads, 0, head_dim), dtype=np.float32)
                else:
                    f[n] = past[n]
        return f

    def run(self, feeds: dict) -> dict:
        outs = self.sess.run(self.output_names, feeds)
        return dict(zip(self.output_names, outs))

    def present_to_past(self, outs: dict) -> dict:
        return {n.replace("present", "past_key_values", 1): outs[n] for n in self.present_names}

    def prefill_and_decode(self, prompt: np.ndarray, steps: int, kv_heads: int,
                           head_dim: int):
        """Returns (prefill_logits [L,V], step_tokens [steps], step_logits [steps,V],
        prefill_feeds, prefill_outs)."""
        prompt = prompt.reshape(1, -1).astype(np.int64)
        f0 = self.feeds(prompt, None, 0, kv_heads, head_dim)
        o0 = self.run(f0)
        prefill_logits = o0["logits"][0]
        toks, step_logits = [], []
        last = prefill_logits[-1]
        seq = prompt
        past = self.present_to_past(o0) if self.with_past else None
        past_len = prompt.shape[1]
        for _ in range(steps):
            t = int(np.argmax(last))
            toks.append(t)
            if self.with_past:
                f = self.feeds(np.array([[t]]), past, past_len, kv_heads, head_dim)
                o = self.run(f)
                past = self.present_to_past(o)
                past_len += 1
                last = o["logits"][0, -1]
            else:
                seq = np.concatenate([seq, np.array([[t]], dtype=np.int64)], axis=1)
                o = self.run(self.feeds(seq, None, 0, kv_heads, head_dim))
                last = o["logits"][0, -1]
            step_logits.append(last)
        # step i's logits are those produced after feeding token toks[i]
        return prefill_logits, np.array(toks, dtype=np.int64), np.stack(step_logits), f0, o0

    def greedy(self, prompt: np.ndarray, n: int, kv_heads: int, head_dim: int,
               eos_id: int | None = None) -> list[int]:
        _, toks, _, _, _ = self.prefill_and_decode(prompt, n, kv_heads, head_dim)
        out = []
        for t in toks.tolist():
            out.append(t)
            if eos_id is not None and t == eos_id:
                break
        return out

    def sample(self, prompt: np.ndarray, n: int, kv_heads: int, head_dim: int,
               temperature: float, seed: int, top_k: int = 0,
               eos_id: int | None = None) -> list[int]:
        rng = np.random.default_rng(seed)
        prompt = prompt.reshape(1, -1).astype(np.int64)
        o = self.run(self.feeds(prompt, None, 0, kv_heads, head_dim))
        past = self.present_to_past(o) if self.with_past else None
        past_len = prompt.shape[1]
        seq = prompt
        out = []
        for _ in range(n):
            z = o["logits"][0, -1].astype(np.float64) / temperature
            if top_k:
                kth = np.sort(z)[-top_k]
                z = np.where(z < kth, -np.inf, z)
            p = np.exp(z - z.max())
            p /= p.sum()
            t = int(rng.choice(len(p), p=p))
            out.append(t)
            if eos_id is not None and t == eos_id:
                break
            if self.with_past:
                o = self.run(self.feeds(np.array([[t]]), past, past_len, kv_heads, head_dim))
                past = self.present_to_past(o)
                past_len += 1
            else:
                seq = np.concatenate([seq, np.array([[t]], dtype=np.int64)], axis=1)
                o = self.run(self.feeds(seq, None, 0, kv_heads, head_dim))
        return out


def export_optimum(hf_dir: Path, out_dir: Path, task: str, opset: int = 18) -> Path:
    """Exports a model with Optimum for `task` (no post-processing, no validation)
    and returns the path of the single ONNX file it writes (encoders such as
    BERT with task feature-extraction)."""
    from optimum.exporters.onnx import main_export
    out_dir.mkdir(parents=True, exist_ok=True)
    main_export(
        model_name_or_path=str(hf_dir), output=str(out_dir), task=task, opset=opset,
        device="cpu", no_post_process=True, do_validation=False, framework="pt",
    )
    cands = sorted(out_dir.glob("*.onnx"))
    if len(cands) != 1:
        raise RuntimeError(f"expected one ONNX file, got {cands}")
    return cands[0]


def export_optimum_with_past(hf_dir: Path, out_dir: Path, opset: int = 17,
                             onnx_config_class=None) -> Path:
    """Exports a causal LM with Optimum (task text-generation-with-past) and returns
    the path of a single ONNX decoder that takes past_key_values.* and returns
    logits + present.*, with no If/Loop control flow.

    `no_post_process=True` keeps Optimum from merging decoder_model.onnx and
    decoder_with_past_model.onnx into decoder_model_merged.onnx (which has an If
    node on use_cache_branch). Depending on the Optimum version the with-past
    graph is either decoder_with_past_model.onnx or (newer versions, which export
    one graph that also accepts an empty past) model.onnx / decoder_model.onnx.
    """
    from optimum.exporters.onnx import main_export
    out_dir.mkdir(parents=True, exist_ok=True)
    extra = {}
    if onnx_config_class is not None:
        # An architecture Optimum has no ONNX config for (Mixtral): the
        # config of one with the same inputs and outputs (Mistral's).
        from transformers import AutoConfig
        cfg = AutoConfig.from_pretrained(str(hf_dir))
        extra["custom_onnx_configs"] = {"model": onnx_config_class(
            cfg, task="text-generation", use_past=True, use_past_in_inputs=True)}
    main_export(
        model_name_or_path=str(hf_dir), output=str(out_dir),
        task="text-generation-with-past", opset=opset, device="cpu",
        no_post_process=True, do_validation=False, framework="pt", **extra,
    )
    import onnx
    cands = sorted(out_dir.glob("*.onnx"))
    best = None
    for c in cands:
        m = onnx.load(str(c), load_external_data=False)
        names = [i.name for i in m.graph.input]
        ops = set(op_types(m))
        if any(n.startswith("past_key_values.") for n in names) and not ({"If", "Loop", "Scan"} & ops):
            best = c
            break
    if best is None:
        raise RuntimeError(f"no with-past ONNX without control flow among {cands}")
    return best


def inline_and_save(src: Path, dst: Path) -> None:
    """Loads an ONNX file (following external data) and writes it with all weights inline."""
    import onnx
    m = onnx.load(str(src), load_external_data=True)
    onnx.save_model(m, str(dst), save_as_external_data=False)


def write_json(path: Path, obj) -> None:
    path.write_text(json.dumps(obj, indent=2, sort_keys=False) + "\n")


# --------------------------------------------------------------------------
# torch.onnx.export (TorchScript) support

class traceable_masks:
    """Context manager: while active, transformers builds causal+padding masks
    with plain broadcasting ops derived from the 2-D attention_mask, instead of
    torch.vmap (which the TorchScript tracer cannot export) or Python ints (which
    the tracer would bake into the graph as constants).

    mask[b, 0, q, k] = (k <= cache_position[q]) & attention_mask[b, k]
    """

    def __enter__(self):
        import torch
        import transformers.masking_utils as mu

        def bool_mask(batch_size, cache_position, kv_length, kv_offset=0,
                      attention_mask=None, **kwargs):
            if attention_mask is None:
                raise ValueError("export wrapper must pass a 2-D attention_mask")
            pad = attention_mask.bool()
            kv_idx = torch.arange(pad.shape[-1], device=pad.device)
            causal = kv_idx[None, :] <= cache_position[:, None]
            return causal[None, None, :, :] & pad[:, None, None, :]

        def float_mask(*args, dtype=torch.float32, **kwargs):
            m = bool_mask(*args, **kwargs)
            zero = torch.tensor(0.0, dtype=dtype)
            neg = torch.tensor(torch.finfo(dtype).min, dtype=dtype)
            return torch.where(m, zero, neg)

        self._mu = mu
        self._old = {k: mu.ALL_MASK_ATTENTION_FUNCTIONS._global_mapping[k] for k in ("sdpa", "eager")}
        mu.ALL_MASK_ATTENTION_FUNCTIONS.register("sdpa", bool_mask)
        mu.ALL_MASK_ATTENTION_FUNCTIONS.register("eager", float_mask)
        return self

    def __exit__(self, *exc):
        for k, v in self._old.items():
            self._mu.ALL_MASK_ATTENTION_FUNCTIONS.register(k, v)
        return False


def export_torchscript_no_past(model, path: Path, opset: int = 17, example_len: int = 7,
                               attn_implementation: str = "eager") -> None:
    """torch.onnx.export with the TorchScript exporter (dynamo=False): inputs
    input_ids, attention_mask (int64 [batch, sequence]); output logits
    (float32 [batch, sequence, vocab]); no KV cache. Attention is exported with
    transformers' `attn_implementation` (eager: MatMul/Softmax written out, unlike
    the sdpa path that Optimum exports)."""
    import torch

    class NoPast(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask):
            return self.m(input_ids=input_ids, attention_mask=attention_mask,
                          use_cache=False, return_dict=False)[0]

    wrapper = NoPast(model).eval()
    ids = torch.arange(3, 3 + example_len, dtype=torch.int64)[None, :]
    am = torch.ones_like(ids)
    axes = {0: "batch", 1: "sequence"}
    old_impl = model.config._attn_implementation
    model.set_attn_implementation(attn_implementation)
    with traceable_masks(), torch.no_grad():
        torch.onnx.export(
            wrapper, (ids, am), str(path),
            input_names=["input_ids", "attention_mask"], output_names=["logits"],
            dynamic_axes={"input_ids": axes, "attention_mask": axes, "logits": axes},
            opset_version=opset, do_constant_folding=True, dynamo=False,
            export_params=True)
    model.set_attn_implementation(old_impl)
    wrapper.eval()
    model.eval()


def export_dynamo_no_past(model, path: Path, opset: int = 18, example_len: int = 7,
                          attn_implementation: str = "sdpa") -> None:
    """torch.onnx.export(..., dynamo=True) (torch.export + onnxscript's torchlib):
    inputs input_ids, attention_mask (int64 [batch, sequence]); output logits; no
    KV cache. The exporter's default graph optimization (onnxscript optimizer,
    which also inlines the torchlib functions) is kept; weights are written inline.
    Attention is transformers' `attn_implementation` (sdpa by default, as a user
    of the dynamo exporter would get; torchlib decomposes it into plain ops at
    opsets below 23). Node metadata (stack traces) is removed afterwards."""
    import torch

    class NoPast(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask):
            return self.m(input_ids=input_ids, attention_mask=attention_mask,
                          use_cache=False, return_dict=False)[0]

    wrapper = NoPast(model).eval()
    ids = torch.arange(3, 3 + example_len, dtype=torch.int64)[None, :]
    am = torch.ones_like(ids)
    batch = torch.export.Dim("batch", min=1, max=64)
    seq = torch.export.Dim("sequence", min=1, max=model.config.max_position_embeddings)
    old_impl = model.config._attn_implementation
    model.set_attn_implementation(attn_implementation)
    try:
        with torch.no_grad():
            prog = torch.onnx.export(
                wrapper, (ids, am), dynamo=True, opset_version=opset,
                input_names=["input_ids", "attention_mask"], output_names=["logits"],
                dynamic_shapes={"input_ids": {0: batch, 1: seq},
                                "attention_mask": {0: batch, 1: seq}},
                optimize=True, external_data=False, verbose=False)
        prog.save(str(path), external_data=False)
    finally:
        model.set_attn_implementation(old_impl)
        model.eval()
    # The exporter annotates every node with metadata_props (Python stack trace,
    # FX node, module hierarchy): a third of the file, with local paths in it.
    # Drop them; nothing else is changed.
    import onnx
    m = onnx.load(str(path))
    for n in m.graph.node:
        del n.metadata_props[:]
    onnx.save_model(m, str(path), save_as_external_data=False)


def check_unit_init(model) -> None:
    """A *-unit fixture is only worth having if its norm weights are exactly 1
    and its biases exactly 0."""
    import torch
    for n, p in model.named_parameters():
        is_norm = "norm" in n.lower() or n.split(".")[-2].startswith("ln_")
        if n.endswith(".bias"):
            assert torch.all(p == 0), f"{n} is not all zeros"
        elif is_norm and n.endswith(".weight"):
            assert torch.all(p == 1), f"{n} is not all ones"
