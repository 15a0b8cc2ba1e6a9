#!/usr/bin/env python3
"""Generates test/fixtures/bert-st/: a sentence-transformers-style BERT encoder
for `kiln embed`.

  - tokenizer.json: the WordPiece tokenizer test/tokenizer/bert_uncased.json
    (BertNormalizer, BertPreTokenizer, BertProcessing, WordPiece decoder;
    trained by tools/make_wordpiece_refs.py);
  - model.onnx: a random BertModel (2 layers, hidden 64, 4 heads, FFN 128,
    128 positions) over that vocabulary, exported by Optimum
    (feature-extraction, output last_hidden_state);
  - modules.json + 1_Pooling/config.json: mean pooling, as sentence-transformers
    writes them;
  - reference.npz: per text, the HF tokenizer's ids and ONNX Runtime's token
    states, each text run alone (batch 1, no padding); reference.json: the
    texts, versions, and the check that sentence-transformers itself (torch)
    gives the mean-pooled vectors that numpy computes from those states.

Usage: /path/to/venv/bin/python tools/make_embed_fixture.py   (requirements-dev.txt)
"""
import json
import shutil
import tempfile
from pathlib import Path

import numpy as np
import torch

import fixture_common as fc

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "test" / "fixtures" / "bert-st"
TOKENIZER = ROOT / "test" / "tokenizer" / "bert_uncased.json"
SEED = 20261203

# Different lengths, cases, accents, CJK, punctuation and unknown characters.
TEXTS = [
    "Hello, world!",
    "The kiln fires the plan once; the runtime only loads it.",
    "Café NAÏVE Ångström",
    "窑只烧制一次计划。",
    "a",
    "Unknown \U00011938 characters and supercalifragilisticexpialidocious words.",
    "Return a new list containing all items from the iterable in ascending order. "
    "A custom key function can be supplied to customize the sort order, and the "
    "reverse flag can be set to request the result in descending order.",
]


def build(hf_dir: Path):
    import transformers as tf
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(str(TOKENIZER))
    fast = tf.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]",
                                      cls_token="[CLS]", sep_token="[SEP]",
                                      pad_token="[PAD]", mask_token="[MASK]",
                                      model_max_length=128)
    fast.save_pretrained(hf_dir)
    torch.manual_seed(SEED)
    cfg = tf.BertConfig(vocab_size=tok.get_vocab_size(), hidden_size=64, num_hidden_layers=2,
                        num_attention_heads=4, intermediate_size=128, hidden_act="gelu",
                        max_position_embeddings=128, type_vocab_size=2,
                        initializer_range=0.1, pad_token_id=tok.token_to_id("[PAD]"))
    model = tf.BertModel(cfg)
    with torch.no_grad():  # HF starts biases at 0 and norms at 1; a lost one must show
        for n, p in model.named_parameters():
            if n.endswith(".bias") or ("norm" in n.lower() and n.endswith(".weight")):
                p.add_(0.1 * torch.randn_like(p))
    model.eval().save_pretrained(hf_dir)
    return tok


def write_sentence_transformers(d: Path):
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling",
         "type": "sentence_transformers.models.Pooling"},
    ]
    fc.write_json(d / "modules.json", modules)
    (d / "1_Pooling").mkdir(exist_ok=True)
    fc.write_json(d / "1_Pooling" / "config.json", {
        "word_embedding_dimension": 64, "pooling_mode_cls_token": False,
        "pooling_mode_mean_tokens": True, "pooling_mode_max_tokens": False,
        "pooling_mode_mean_sqrt_len_tokens": False, "pooling_mode_weightedmean_tokens": False,
        "pooling_mode_lasttoken": False, "include_prompt": True})
    fc.write_json(d / "sentence_bert_config.json", {"max_seq_length": 128,
                                                   "do_lower_case": False})


def main():
    import onnxruntime
    import sentence_transformers
    import tokenizers
    import transformers
    with tempfile.TemporaryDirectory() as tmp:
        hf_dir = Path(tmp) / "hf"
        tok = build(hf_dir)
        # Exported before the sentence-transformers files exist, so Optimum
        # exports the transformers model (output last_hidden_state).
        onnx_path = fc.export_optimum(hf_dir, Path(tmp) / "onnx", "feature-extraction")
        write_sentence_transformers(hf_dir)
        if OUT.exists():
            shutil.rmtree(OUT)
        OUT.mkdir(parents=True)
        fc.inline_and_save(onnx_path, OUT / "model.onnx")
        for name in ("config.json", "tokenizer.json", "tokenizer_config.json",
                     "special_tokens_map.json"):
            if (hf_dir / name).exists():
                shutil.copy(hf_dir / name, OUT / name)
        write_sentence_transformers(OUT)

        sess = fc.make_session(OUT / "model.onnx")
        arrays, means = {}, []
        for i, text in enumerate(TEXTS):
            ids = np.array(tok.encode(text).ids, dtype=np.int64)[None, :]
            feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids),
                     "token_type_ids": np.zeros_like(ids)}
            feeds = {k: v for k, v in feeds.items() if k in {x.name for x in sess.get_inputs()}}
            states = sess.run(["last_hidden_state"], feeds)[0][0]
            arrays[f"text{i}_ids"] = ids[0]
            arrays[f"text{i}_last_hidden_state"] = states.astype(np.float32)
            means.append(states.mean(axis=0))
        np.savez(OUT / "reference.npz", **arrays)

        # sentence-transformers itself, in torch, on the HF directory.
        st = sentence_transformers.SentenceTransformer(str(hf_dir), device="cpu")
        st_vectors = st.encode(TEXTS, batch_size=len(TEXTS), convert_to_numpy=True)
        st_gap = float(np.abs(st_vectors - np.stack(means)).max())
        assert st_gap < 1e-4, f"sentence-transformers differs from ORT + numpy by {st_gap}"

    fc.write_json(OUT / "reference.json", {
        "model": "random BertModel, 2 layers, hidden 64, 4 heads, FFN 128, "
                 "128 positions, vocab %d (WordPiece, test/tokenizer/bert_uncased.json)"
                 % tok.get_vocab_size(),
        "exporter": "Optimum feature-extraction, opset 18",
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                     "onnxruntime": onnxruntime.__version__, "tokenizers": tokenizers.__version__,
                     "sentence_transformers": sentence_transformers.__version__},
        "seed": SEED,
        "texts": TEXTS,
        "arrays": "reference.npz: text<i>_ids int64 [L] (HF tokenizer, with [CLS]/[SEP]); "
                  "text<i>_last_hidden_state float32 [L, 64] (ONNX Runtime, CPU, basic "
                  "optimizations, each text alone: mask ones, token types zero)",
        "sentence_transformers_max_abs_gap": st_gap,
    })
    size = (OUT / "model.onnx").stat().st_size
    print(f"{OUT}: model.onnx {size} bytes, {len(TEXTS)} texts, "
          f"sentence-transformers vs ORT+numpy mean pooling: max |diff| {st_gap:.2e}")


if __name__ == "__main__":
    main()
