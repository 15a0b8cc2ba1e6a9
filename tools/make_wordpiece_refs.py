#!/usr/bin/env python3
"""WordPiece (BERT-family) tokenizer test data from Hugging Face `tokenizers`.

The companion of make_tokenizer_refs.py (which it borrows the corpus from):
kiln's WordPiece model, BertNormalizer, BertPreTokenizer, BertProcessing and
WordPiece decoder must agree with HF id for id and byte for byte.

Steps (default: refs + unicode; `train` only when asked, because it renumbers
every id):
  train    test/tokenizer/bert_{uncased,cased}.json: WordPiece vocabularies
           trained by HF's WordPieceTrainer on the corpus text, configured like
           bert-base-uncased and bert-base-cased
  refs     test/tokenizer/refs_bert_{uncased,cased}.json: HF ids and decodes for
           every corpus line plus BERT-specific lines, for each fixture and
           patched variants of it (same layout as refs_gpt2.json)
  unicode  runtime/src/tokenizer/bert_tables.cpp: the character classes of
           BertNormalizer and BertPreTokenizer, probed on every code point; and
           test/tokenizer/refs_bert_unicode.json: hashes of HF's normalization
           and pre-tokenization of every code point, in blocks of 256

Usage: .venv-tok/bin/python tools/make_wordpiece_refs.py [train] [refs] [unicode]
"""
import copy
import json
import sys

import tokenizers
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

import make_tokenizer_refs as base

DATA, SRC = base.DATA, base.SRC
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]

# Lines that exercise what BERT does and byte-level BPE does not: case and
# accents, CJK spacing, punctuation isolation, control and format characters,
# unknown and overlong words, and the decoder's clean-up rules.
EXTRA_LINES = [
    "Hello, World!", "HELLO WORLD", "hello world", "ÀÉÎÕÜ ÇÑ àéîõü çñ", "Ærøskøbing Œuvre",
    "Straße STRASSE", "İstanbul ıI", "ΣΊΣΥΦΟΣ ὈΔΥΣΣΕΎΣ σς", "Ǆemal ǅ ǆ", "ﬁne ﬂow ﬀ",
    "don't stop", "isn 't it ' s", "Hello , world ! what ? yes .", "I do not know",
    "a.b,c;d:e!f?g", "(parens) [brackets] {braces} <angles>", "$5 & 10% @ #1 ^ ~ ` | \\ _",
    "unbelievable hyperparameterization", "x" * 100, "x" * 101, "abcdefgh", "abcdefghi",
    "[CLS] inline [SEP] tokens [MASK] [UNK]", "[cls] [Sep] lowercase specials", "x[SEP]y",
    "tab\tsep\nnew\rcr", "\u200b zero width \ufeff bom \u00ad soft hyphen \u200d zwj",
    "\ue000 private use \U000f0000", "\u0378 unassigned \U000e0001 tag", "\x00null\x00",
    "\ufffd replacement", "\x0b vt \x0c ff \x1c fs \x85 nel", "漢字かな交じり文", "中文English混合",
    "𠀀 ext B 𪜀 ext C \uf900 compat \u2f800", "\u3400 ext A \u9fff end", "一二三，四五六。",
    "Ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３", "e\u0301 a\u0300 o\u0308 n\u0303", "\u1e9b\u0323 dot",
    "Å Å Å", "Ω Ω K K", "ẞ capital sharp", "Ⅻ ⅻ roman", "ⓐⓑⓒ ⒶⒷⒸ circled",
    "emoji😀inline 👍🏽 👨‍👩‍👧‍👦", "café CAFÉ Café", "naïve NAÏVE", "Ελληνικά ελληνικά",
    "Русский РУССКИЙ", "עברית", "العربية", "हिन्दी", "ไทย", "한국어 韓國語", "…—–‘’“”«»",
    "##prefix ##", "word##inside", "  leading and trailing  ", "", " ", "a",
]


def training_text():
    return base.docstrings() + [base.zen()] + [base.MULTILINGUAL] * 4


def train(lowercase, strip_accents, vocab_size):
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]", max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True,
                                                strip_accents=strip_accents, lowercase=lowercase)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece(prefix="##", cleanup=True)
    trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, min_frequency=2,
                                        show_progress=False, special_tokens=SPECIALS,
                                        continuing_subword_prefix="##")
    tok.train_from_iterator(training_text(), trainer)
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.BertProcessing(("[SEP]", sep), ("[CLS]", cls))
    return json.loads(tok.to_str())


def write_fixture(name, cfg):
    text = json.dumps(cfg, ensure_ascii=False, separators=(",", ":"))
    Tokenizer.from_str(text)  # must load
    (DATA / f"{name}.json").write_text(text, encoding="utf-8")
    print(f"{name}.json: {len(text.encode())} bytes, vocab {len(cfg['model']['vocab'])}")


def make_fixtures():
    # bert-base-uncased: lowercase, strip_accents null (follows lowercase).
    write_fixture("bert_uncased", train(True, None, 1500))
    write_fixture("bert_cased", train(False, False, 1500))


# ---------------------------------------------------------------- refs

def bert_normalizer(**kw):
    cfg = {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
           "strip_accents": None, "lowercase": True}
    cfg.update(kw)
    return {"normalizer": cfg}


def template(cfg):
    ids = {t["content"]: t["id"] for t in cfg["added_tokens"]}
    return {"post_processor": {
        "type": "TemplateProcessing",
        "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                   {"Sequence": {"id": "A", "type_id": 0}},
                   {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
        "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                 {"Sequence": {"id": "A", "type_id": 0}},
                 {"SpecialToken": {"id": "[SEP]", "type_id": 0}},
                 {"Sequence": {"id": "B", "type_id": 1}},
                 {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
        "special_tokens": {t: {"id": t, "ids": [ids[t]], "tokens": [t]}
                           for t in ("[CLS]", "[SEP]")}}}


def roberta(cfg):
    ids = {t["content"]: t["id"] for t in cfg["added_tokens"]}
    return {"post_processor": {"type": "RobertaProcessing", "sep": ["[SEP]", ids["[SEP]"]],
                               "cls": ["[CLS]", ids["[CLS]"]], "trim_offsets": True,
                               "add_prefix_space": False}}


VARIANTS = {
    "bert_uncased": {
        "base": {},
        "keep_accents": bert_normalizer(strip_accents=False),
        "no_chinese": bert_normalizer(handle_chinese_chars=False),
        "no_clean": bert_normalizer(clean_text=False),
        "strip_no_lower": bert_normalizer(lowercase=False, strip_accents=True),
        "nfd_lowercase": {"normalizer": {"type": "Sequence", "normalizers": [
            {"type": "NFD"}, {"type": "Lowercase"}]}},
        "max_chars_8": {"model": {"max_input_chars_per_word": 8}},
        "template": template,
        "no_cleanup": {"decoder": {"type": "WordPiece", "prefix": "##", "cleanup": False}},
    },
    "bert_cased": {
        "base": {},
        "lower_only": bert_normalizer(lowercase=True, strip_accents=False),
        "roberta": roberta,
        "no_normalizer": {"normalizer": None},
    },
}


def corpus_and_extras():
    lines = [json.loads(l) for l in open(DATA / "corpus.jsonl", encoding="utf-8")]
    return lines + EXTRA_LINES


FIELDS = ("ids", "ids_special", "decode", "decode_skip")


def record_variant(tok, lines, base_cases):
    """One case per line. null keeps the files small: in the base variant it
    means ids_special = ids and a decode = the text; in the others, the base
    variant's value."""
    cases, full = [], []
    for i, text in enumerate(lines):
        ids = tok.encode(text, add_special_tokens=False).ids
        ids_sp = tok.encode(text, add_special_tokens=True).ids
        value = {"ids": ids, "ids_special": ids_sp,
                 "decode": tok.decode(ids, skip_special_tokens=False),
                 "decode_skip": tok.decode(ids_sp, skip_special_tokens=True)}
        full.append(value)
        if base_cases is None:
            usual = {"ids": None, "ids_special": ids, "decode": text, "decode_skip": text}
        else:
            usual = base_cases[i]
        cases.append({k: None if value[k] == usual[k] else value[k] for k in FIELDS})
    return cases, full


def write_refs():
    lines = corpus_and_extras()
    for name, variants in VARIANTS.items():
        fixture = json.loads((DATA / f"{name}.json").read_text(encoding="utf-8"))
        out, base_cases = [], None
        for vname, patch in variants.items():
            patch = patch(fixture) if callable(patch) else patch
            tok = Tokenizer.from_str(json.dumps(base.apply_patch(fixture, patch)))
            cases, full = record_variant(tok, lines, base_cases)
            base_cases = base_cases or full
            out.append({"variant": vname, "patch": patch,
                        "vocab_size": tok.get_vocab_size(with_added_tokens=True),
                        "cases": cases})
        with open(DATA / f"refs_{name}.json", "w", encoding="utf-8") as f:
            f.write('{"tokenizers_version": %s, "fixture": "%s.json",\n"extra_lines": %s,\n'
                    '"variants": [\n' % (json.dumps(tokenizers.__version__), name,
                                         json.dumps(EXTRA_LINES, ensure_ascii=False)))
            for vi, v in enumerate(out):
                head = {k: v[k] for k in ("variant", "patch", "vocab_size")}
                f.write(json.dumps(head, ensure_ascii=False)[:-1] + ', "cases": [\n')
                f.write(",\n".join(json.dumps(c, ensure_ascii=False, separators=(",", ":"))
                                   for c in v["cases"]))
                f.write("\n]}" + (",\n" if vi + 1 < len(out) else "\n"))
            f.write("]}\n")
        print(f"refs_{name}.json: {len(variants)} variants x {len(lines)} lines")


# ---------------------------------------------------------------- unicode

def probe_normalizer(**kw):
    opts = dict(clean_text=False, handle_chinese_chars=False, strip_accents=False,
                lowercase=False)
    opts.update(kw)
    n = normalizers.BertNormalizer(**opts)
    return {cp: n.normalize_str(chr(cp)) for cp in base.ALL_CPS}


def probe_pre_tokenizer():
    """Per code point: 'w' if BertPreTokenizer splits on it and drops it, 'p'
    if it makes it a word of its own, '' otherwise."""
    pre = pre_tokenizers.BertPreTokenizer()
    out = {}
    for cp in base.ALL_CPS:
        words = [w for w, _ in pre.pre_tokenize_str("a" + chr(cp) + "a")]
        out[cp] = "w" if words == ["a", "a"] else "p" if len(words) == 3 else ""
    return out


def bert_classes():
    nfd = normalizers.NFD()
    clean = probe_normalizer(clean_text=True)
    removed = [cp for cp, s in clean.items() if s == "" and cp not in (0, 0xFFFD)]
    whitespace = [cp for cp, s in clean.items() if s == " "]
    pre = probe_pre_tokenizer()
    # clean_text drops whitespace that is also a control character (VT, FF,
    # NEL) before it could become ' '; the class itself is the pre-tokenizer's.
    split_on = [cp for cp, k in pre.items() if k == "w"]
    assert set(whitespace) <= set(split_on) and set(split_on) - set(whitespace) <= set(removed)
    whitespace = split_on
    punctuation = [cp for cp, k in pre.items() if k == "p"]
    chinese = [cp for cp, s in probe_normalizer(handle_chinese_chars=True).items()
               if s == " " + chr(cp) + " "]
    strip = probe_normalizer(strip_accents=True)
    marks = [cp for cp, s in strip.items() if s == "" and nfd.normalize_str(chr(cp)) == chr(cp)]
    lower = {cp: s for cp, s in probe_normalizer(lowercase=True).items() if s != chr(cp)}
    assert all(1 <= len(s) <= 3 for s in lower.values())
    return removed, whitespace, punctuation, chinese, marks, lower


def write_bert_tables():
    removed, whitespace, punctuation, chinese, marks, lower = bert_classes()
    fmt = lambda r: "{0x%X,0x%X}" % tuple(r)
    tables = [("kBertRemoved", "kBertRemovedCount", removed),
              ("kBertWhitespace", "kBertWhitespaceCount", whitespace),
              ("kBertPunctuation", "kBertPunctuationCount", punctuation),
              ("kBertChinese", "kBertChineseCount", chinese),
              ("kBertNonspacingMarks", "kBertNonspacingMarkCount", marks)]
    body = ""
    for name, count, cps in tables:
        r = base.ranges(cps)
        body += (f"const CodepointRange {name}[] = {{\n{base.cpp_rows(r, fmt)}\n}};\n"
                 f"const size_t {count} = {len(r)};\n\n")
    rows = [(cp, [ord(c) for c in s] + [0] * (3 - len(s))) for cp, s in sorted(lower.items())]
    lfmt = lambda r: "{0x%X,{0x%X,0x%X,0x%X}}" % (r[0], *r[1])
    body += (f"const LowercaseMapping kLowercase[] = {{\n{base.cpp_rows(rows, lfmt)}\n}};\n"
             f"const size_t kLowercaseCount = {len(rows)};\n")
    text = base.HEADER.format(version=tokenizers.__version__) + f"""\
// (make_wordpiece_refs.py); see bert_tables.h.
#include "tokenizer/bert_tables.h"

namespace kiln::tokenizer {{

// clang-format off
{body}// clang-format on

}} // namespace kiln::tokenizer
"""
    (SRC / "bert_tables.cpp").write_text(text, encoding="utf-8")
    print(f"bert_tables.cpp: {len(removed)} removed, {len(punctuation)} punctuation, "
          f"{len(marks)} marks, {len(lower)} lowercase mappings")


def fnv1a(data):
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h


def write_unicode_refs():
    """Every code point through whole BertNormalizers and the pre-tokenizer, in
    blocks of 256, stored as FNV-1a hashes to stay small; the gtest recomputes
    them and names the first block that differs."""
    cps = base.ALL_CPS
    blocks = ["".join(map(chr, cps[i:i + 256])) for i in range(0, len(cps), 256)]
    out = {"tokenizers_version": tokenizers.__version__, "block": 256, "normalizers": []}
    for opts in [dict(clean_text=True, handle_chinese_chars=True, strip_accents=None,
                      lowercase=True),
                 dict(clean_text=True, handle_chinese_chars=True, strip_accents=False,
                      lowercase=False),
                 dict(clean_text=False, handle_chinese_chars=False, strip_accents=True,
                      lowercase=False)]:
        n = normalizers.BertNormalizer(**opts)
        out["normalizers"].append({"options": opts, "hashes": [
            fnv1a(n.normalize_str(b).encode("utf-8")) for b in blocks]})
    pre = pre_tokenizers.BertPreTokenizer()
    out["pre_tokenizer"] = [fnv1a("\n".join(w for w, _ in pre.pre_tokenize_str(b))
                                  .encode("utf-8")) for b in blocks]
    with open(DATA / "refs_bert_unicode.json", "w", encoding="utf-8") as f:
        json.dump(out, f, separators=(",", ":"))
    print(f"refs_bert_unicode.json: {len(blocks)} blocks")


if __name__ == "__main__":
    steps = sys.argv[1:] or ["refs", "unicode"]
    if "train" in steps:
        make_fixtures()
    if "refs" in steps:
        write_refs()
    if "unicode" in steps:
        write_bert_tables()
        write_unicode_refs()
