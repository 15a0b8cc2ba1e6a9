#!/usr/bin/env python3
"""SentencePiece-style tokenizer test data from Hugging Face `tokenizers`.

The companion of make_tokenizer_refs.py (whose corpus it borrows) and
make_wordpiece_refs.py (whose refs layout it shares): kiln's BPE with
byte_fallback, Unigram model, Prepend/Replace/Strip normalizers, Metaspace and
WhitespaceSplit pre-tokenizers, and Replace/ByteFallback/Fuse/Strip/Metaspace
decoders must agree with HF id for id and byte for byte. No real tokenizer can
be downloaded here, so the fixtures are trained by HF itself on the corpus text
and configured as the families that ship them:

  llama2_sp   BPE with byte_fallback and <0x00>..<0xFF> in the vocabulary, the
              Prepend + Replace normalizer and the Replace/ByteFallback/Fuse/
              Strip decoder (Llama 2, TinyLlama, Mistral's legacy files);
              variants: the Metaspace pre-tokenizer of newer files
              (prepend_scheme first/always/never, split or not), Gemma's
              Replace-only normalizer, no byte fallback, no fuse_unk, a
              Metaspace decoder (the GGUF-converted layout, byte_fallback
              behind ByteLevel, is make_tokenizer_refs.py's gpt2/gguf)
  t5_unigram  Unigram with WhitespaceSplit + Metaspace and a Metaspace decoder
              (T5, XLM-R, ALBERT, without their Precompiled normalizer);
              variants: byte_fallback, prepend_scheme first, decoder chains
              with steps after Fuse

Each variant records, per corpus line and extra line, HF's ids with and
without special tokens and both decodes, and HF's decode of random id
sequences (byte tokens that form valid, invalid and unfinished UTF-8, special
and unknown ids), which encoding never produces.

Steps (default: refs; `train` only when asked, because it renumbers every id):
  train    test/tokenizer/{llama2_sp,t5_unigram}.json
  refs     test/tokenizer/refs_{llama2_sp,t5_unigram}.json

Usage: .venv-tok/bin/python tools/make_sentencepiece_refs.py [train] [refs]
"""
import json
import random
import sys

import tokenizers
from tokenizers import (AddedToken, Regex, Tokenizer, decoders, models, normalizers,
                        pre_tokenizers, processors, trainers)

import make_tokenizer_refs as base
import make_wordpiece_refs as wp

DATA = base.DATA
SP = "\u2581"  # ▁, SentencePiece's space
BYTE_TOKENS = [f"<0x{b:02X}>" for b in range(256)]

# What SentencePiece tokenizers meet that the shared corpus lacks: text that is
# already ▁, spelled-out byte and unknown tokens, leading and repeated spaces
# around added tokens, and characters outside the trained alphabet.
EXTRA_LINES = [
    SP, SP + "hello", "a" + SP + SP + "b", " " + SP + " x", "<0x41><0x0A>", "<0xZZ> <0x4>",
    "<unk>", "x<unk>y", "<s>Hello</s>", " <s> spaced </s> ", "<s><s>", "Hello <s>world",
    "   three leading", "trailing three   ", "\u2028\u2029", "𠀀𠀁𠀂", "😀\u200d😀", "\U0001fae8",
    "ᚠᛇᚻ runes", "ꦲꦏ javanese", "x\ufffdy", "tab\there", "<|im_start|>x", " <mask> ",
    "kiln", "a kiln b", "akiln", "[INST] hi [/INST]", "[INST]hi", "café" + SP, "",
]


def training_text():
    return base.docstrings() + [base.zen()] + [base.MULTILINGUAL] * 4


def specials_template(cfg, single, pair):
    ids = {t["content"]: t["id"] for t in cfg["added_tokens"]}
    names = sorted({p for p in (single + " " + pair).split() if not p.startswith("$")})
    return processors.TemplateProcessing(single=single, pair=pair,
                                         special_tokens=[(n, ids[n]) for n in names])


def add_tokens(cfg, added, post):
    """Adds tokens through HF itself, so ids and flags are what HF assigns."""
    tok = Tokenizer.from_str(json.dumps(cfg))
    for t in added:
        (tok.add_special_tokens if t.special else tok.add_tokens)([t])
    cfg = json.loads(tok.to_str())
    if post is not None:
        tok.post_processor = post(cfg)
    return json.loads(tok.to_str())


# Added tokens with each flag, on strings the corpus already holds.
ADDED = [
    AddedToken("<|im_start|>", special=True, normalized=False),
    AddedToken("<mask>", special=True, lstrip=True, normalized=False),
    AddedToken("<|rstrip|>", special=False, rstrip=True, normalized=False),
    AddedToken("[SW]", special=False, single_word=True, normalized=False),
    AddedToken("kiln", special=False, single_word=True, normalized=True),
    AddedToken("[INST]", special=False, normalized=True),
    AddedToken("café", special=False, normalized=True),
]


def make_llama2():
    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    tok.normalizer = normalizers.Sequence([normalizers.Prepend(SP), normalizers.Replace(" ", SP)])
    # For training only: each ▁ starts a word, so no merge crosses one.
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement=SP, prepend_scheme="never",
                                                 split=True)
    trainer = trainers.BpeTrainer(vocab_size=1800, min_frequency=2, show_progress=False,
                                  special_tokens=["<unk>", "<s>", "</s>"] + BYTE_TOKENS,
                                  limit_alphabet=200)
    tok.train_from_iterator(training_text(), trainer)
    tok.decoder = decoders.Sequence([decoders.Replace(SP, " "), decoders.ByteFallback(),
                                     decoders.Fuse(), decoders.Strip(" ", 1, 0)])
    cfg = json.loads(tok.to_str())
    # As Llama 2: the byte tokens are vocabulary entries, not added tokens.
    cfg["added_tokens"] = [t for t in cfg["added_tokens"] if t["content"] not in BYTE_TOKENS]
    cfg["pre_tokenizer"] = None
    return add_tokens(cfg, ADDED, lambda c: specials_template(c, "<s> $A", "<s> $A <s> $B"))


def make_unigram():
    tok = Tokenizer(models.Unigram())
    tok.normalizer = normalizers.Replace(Regex(" {2,}"), " ")
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.WhitespaceSplit(),
        pre_tokenizers.Metaspace(replacement=SP, prepend_scheme="always", split=True)])
    tok.decoder = decoders.Metaspace(replacement=SP, prepend_scheme="always")
    trainer = trainers.UnigramTrainer(vocab_size=1500, show_progress=False, unk_token="<unk>",
                                      special_tokens=["<pad>", "</s>", "<unk>"],
                                      max_piece_length=12)
    # Characters seen once stay out of the alphabet, so unknown runs occur.
    tok.train_from_iterator(training_text(), trainer)
    cfg = json.loads(tok.to_str())
    # Byte pieces at the lowest score, for the byte_fallback variant; the base
    # model (byte_fallback false) must never pick them for plain text.
    low = min(s for _, s in cfg["model"]["vocab"]) - 1.0
    cfg["model"]["vocab"] += [[b, low] for b in BYTE_TOKENS]
    cfg["model"]["byte_fallback"] = False
    return add_tokens(cfg, ADDED[:4], lambda c: specials_template(c, "$A </s>", "$A </s> $B </s>"))


def write_fixture(name, cfg):
    wp.write_fixture(name, cfg)


# ---------------------------------------------------------------- refs

def metaspace(scheme, split):
    return {"type": "Metaspace", "replacement": SP, "prepend_scheme": scheme, "split": split}


def seq(*steps):
    return {"type": "Sequence", "decoders": list(steps)}


REPLACE_SP = {"type": "Replace", "pattern": {"String": SP}, "content": " "}
BYTE_FALLBACK = {"type": "ByteFallback"}
FUSE = {"type": "Fuse"}


def strip(start, stop, content=" "):
    return {"type": "Strip", "content": content, "start": start, "stop": stop}


VARIANTS = {
    "llama2_sp": {
        "base": {},
        "metaspace_first": {"normalizer": None, "pre_tokenizer": metaspace("first", False)},
        "metaspace_always_split": {"normalizer": None,
                                   "pre_tokenizer": metaspace("always", True),
                                   "decoder": metaspace("always", True)},
        "metaspace_never": {"normalizer": None, "pre_tokenizer": metaspace("never", False),
                            "decoder": metaspace("never", False)},
        "gemma": {"normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": SP},
                  "decoder": seq(REPLACE_SP, BYTE_FALLBACK, FUSE)},
        "strip_normalizer": {"normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Strip", "strip_left": True, "strip_right": True},
            {"type": "Prepend", "prepend": SP},
            {"type": "Replace", "pattern": {"Regex": " +"}, "content": SP}]}},
        "no_byte_fallback": {"model": {"byte_fallback": False}},
        "no_fuse_unk": {"model": {"byte_fallback": False, "fuse_unk": False}},
    },
    "t5_unigram": {
        "base": {},
        "byte_fallback": {"model": {"byte_fallback": True}},
        "metaspace_first": {"pre_tokenizer": metaspace("first", False)},
        # HF's Strip panics on an empty token when stop > 0, so stop is used only
        # where no token can be empty (after Replace, before Fuse).
        "decoder_chain": {"decoder": seq(REPLACE_SP, BYTE_FALLBACK, strip(0, 1), FUSE,
                                         strip(1, 0))},
        "decoder_after_fuse": {"decoder": seq(BYTE_FALLBACK, FUSE, metaspace("always", True),
                                              strip(2, 0, "a"),
                                              {"type": "Replace", "pattern": {"String": "th"},
                                               "content": "TH"})},
    },
}


def random_decodes(tok, rng, n=160):
    """Id sequences that encoding never produces, with HF's decodes."""
    vocab = tok.get_vocab(with_added_tokens=True)
    byte_ids = [vocab[b] for b in BYTE_TOKENS if b in vocab]
    special = sorted(i for t, i in vocab.items() if t.startswith("<") and t.endswith(">")
                     and t not in BYTE_TOKENS)
    size = tok.get_vocab_size(with_added_tokens=True)
    utf8 = [list("é😀中".encode()), list("a".encode())]
    out = []
    for _ in range(n):
        ids = []
        for _ in range(rng.randint(1, 10)):
            r = rng.random()
            if byte_ids and r < 0.35:  # one byte: lead, continuation or ASCII
                ids.append(byte_ids[rng.choice([0x41, 0x20, 0xE4, 0xBD, 0xA0, 0xF0, 0x80, 0xFF])])
            elif byte_ids and r < 0.5:  # a whole or cut UTF-8 character
                bs = rng.choice(utf8)
                ids += [byte_ids[b] for b in bs[:rng.randint(1, len(bs))]]
            elif r < 0.6 and special:
                ids.append(rng.choice(special))
            elif r < 0.63:
                ids.append(size + rng.randint(0, 5))  # unknown ids are dropped
            else:
                ids.append(rng.randrange(size))
        out.append({"ids": ids, "decode": tok.decode(ids, skip_special_tokens=False),
                    "decode_skip": tok.decode(ids, skip_special_tokens=True)})
    return out


def write_refs():
    lines = [json.loads(l) for l in open(DATA / "corpus.jsonl", encoding="utf-8")] + EXTRA_LINES
    for name, variants in VARIANTS.items():
        fixture = json.loads((DATA / f"{name}.json").read_text(encoding="utf-8"))
        out, base_cases = [], None
        for vname, patch in variants.items():
            tok = Tokenizer.from_str(json.dumps(base.apply_patch(fixture, patch)))
            cases, full = wp.record_variant(tok, lines, base_cases)
            base_cases = base_cases or full
            out.append({"variant": vname, "patch": patch,
                        "vocab_size": tok.get_vocab_size(with_added_tokens=True),
                        "cases": cases,
                        "decodes": random_decodes(tok, random.Random(f"{name}/{vname}"))})
        with open(DATA / f"refs_{name}.json", "w", encoding="utf-8") as f:
            f.write('{"tokenizers_version": %s, "fixture": "%s.json",\n"extra_lines": %s,\n'
                    '"variants": [\n' % (json.dumps(tokenizers.__version__), name,
                                         json.dumps(EXTRA_LINES, ensure_ascii=False)))
            for vi, v in enumerate(out):
                head = {k: v[k] for k in ("variant", "patch", "vocab_size")}
                head["decodes"] = v["decodes"]
                f.write(json.dumps(head, ensure_ascii=False)[:-1] + ', "cases": [\n')
                f.write(",\n".join(json.dumps(c, ensure_ascii=False, separators=(",", ":"))
                                   for c in v["cases"]))
                f.write("\n]}" + (",\n" if vi + 1 < len(out) else "\n"))
            f.write("]}\n")
        print(f"refs_{name}.json: {len(variants)} variants x {len(lines)} lines")


if __name__ == "__main__":
    steps = sys.argv[1:] or ["refs"]
    if "train" in steps:
        write_fixture("llama2_sp", make_llama2())
        write_fixture("t5_unigram", make_unigram())
    if "refs" in steps:
        write_refs()
