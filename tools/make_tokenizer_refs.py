#!/usr/bin/env python3
"""Builds the tokenizer test data from the Hugging Face `tokenizers` library.

kiln's C++ tokenizer must agree with HF `tokenizers` id for id. There is no HF hub
here, so this script trains small byte-level BPE tokenizers configured like GPT-2,
Llama-3 and Qwen2, and records what HF does with them. The gtests compare against
the committed output; they never run Python.

Steps (default: corpus + refs + unicode; `train` only when asked, because it
renumbers every id):
  train    test/tokenizer/{gpt2,llama3,qwen2}.json
  corpus   test/tokenizer/corpus.jsonl (one JSON string per line)
  refs     test/tokenizer/refs_<fixture>.json: HF ids and decodes per corpus line,
           for the fixture and for patched variants of it; refs_pretokenize.json:
           the word boundaries of each fixture's pre-tokenizer
  unicode  HF's regex classes and NFC on every code point
           (test/tokenizer/unicode_refs.json), and the generated C++ tables
           runtime/src/tokenizer/{nfc,regex}_tables.cpp that reproduce them

WordPiece (BERT-family) data comes from tools/make_wordpiece_refs.py, which
reuses this file's corpus and helpers.

Usage: python3 -m venv .venv-tok && .venv-tok/bin/pip install tokenizers
       .venv-tok/bin/python tools/make_tokenizer_refs.py [train] [corpus] [refs] [unicode]
"""
import codecs
import copy
import importlib
import inspect
import json
import pathlib
import random
import sys
import unicodedata
import warnings

import tokenizers
from tokenizers import (AddedToken, Regex, Tokenizer, decoders, models, normalizers,
                        pre_tokenizers, processors, trainers)

ROOT = pathlib.Path(__file__).resolve().parent.parent
DATA = ROOT / "test" / "tokenizer"
SRC = ROOT / "runtime" / "src" / "tokenizer"

GPT2_REGEX = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
LLAMA3_REGEX = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"""
                r""" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""")
QWEN2_REGEX = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"""
               r""" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""")

# Written for this file (not copied): multilingual text so the tokenizers learn
# some non-ASCII merges.
MULTILINGUAL = """\
The kiln fires the plan once; the runtime only loads it.
Le four cuit le plan une seule fois ; l'exécution ne fait que le charger. Ça marche déjà très bien.
Der Ofen brennt den Plan einmal; die Laufzeit lädt ihn nur. Größe, Straße, Übergröße, schön.
El horno cuece el plan una vez; el tiempo de ejecución sólo lo carga. ¿Qué tal? ¡Muy bien!
Lò nung kế hoạch một lần; thời gian chạy chỉ tải nó. Tiếng Việt có nhiều dấu.
Печь обжигает план один раз; среда выполнения только загружает его.
Ο φούρνος ψήνει το σχέδιο μία φορά· ο χρόνος εκτέλεσης απλώς το φορτώνει.
الفرن يحرق الخطة مرة واحدة، ووقت التشغيل يحملها فقط.
התנור שורף את התוכנית פעם אחת, וזמן הריצה רק טוען אותה.
窑只烧制一次计划，运行时只负责加载。我们喜欢自然语言处理。
窯は計画を一度だけ焼き、ランタイムはそれを読み込むだけです。ひらがなとカタカナ。
가마는 계획을 한 번만 굽고 런타임은 그것을 불러오기만 합니다. 한국어 문장입니다.
भट्ठी योजना को एक बार पकाती है; रनटाइम केवल उसे लोड करता है।
Emoji: 😀 😂 👍 👍🏽 ❤️ 🔥 🎉 👨‍👩‍👧‍👦 🇯🇵 🇫🇷 ✨ 🚀
"""

DOC_MODULES = [
    "collections", "json", "textwrap", "string", "itertools", "functools", "pathlib",
    "argparse", "re", "os", "shutil", "subprocess", "unittest", "logging", "dataclasses",
    "datetime", "decimal", "fractions", "heapq", "bisect", "random", "statistics", "csv",
    "difflib", "enum", "contextlib", "abc", "io", "tempfile", "urllib.parse", "http.client",
    "html", "zipfile", "tarfile", "hashlib", "base64", "struct", "codecs", "calendar",
    "pprint", "queue", "threading", "asyncio", "socket", "sqlite3", "doctest", "inspect",
    "ast", "dis", "tokenize", "optparse", "configparser", "glob", "fnmatch", "uuid",
    "ipaddress", "copy", "weakref", "operator", "math", "pickle", "gzip", "timeit",
    "warnings", "traceback", "platform",
]


def docstrings():
    """Python's own docstrings (PSF license): plenty of permissively licensed prose."""
    out = []
    warnings.simplefilter("ignore")
    for name in DOC_MODULES:
        mod = importlib.import_module(name)
        out.append(inspect.getdoc(mod) or "")
        for member, obj in sorted(vars(mod).items()):
            doc = getattr(obj, "__doc__", None)
            if (not member.startswith("_") and isinstance(doc, str)
                    and getattr(obj, "__module__", None) == mod.__name__):
                out.append(inspect.cleandoc(doc))
    return [d for d in out if d]


def zen():
    import this  # noqa: F401  (prints the Zen once; its text is rot13 in this.s)
    return codecs.decode(this.s, "rot13")


# ---------------------------------------------------------------- train

def train(name, vocab_size, normalizer, pre_tokenizer):
    tok = Tokenizer(models.BPE())
    if normalizer is not None:
        tok.normalizer = normalizer
    tok.pre_tokenizer = pre_tokenizer
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    text = docstrings() + [zen()] + [MULTILINGUAL] * 4
    tok.train_from_iterator(text, trainer)
    return json.loads(tok.to_str())


def add_vocab(cfg, words):
    """Appends whole-word vocab entries that no merge produces (as Llama-3 has):
    they show whether ignore_merges is honoured."""
    vocab = cfg["model"]["vocab"]
    for w in words:
        if w not in vocab:
            vocab[w] = len(vocab)


def finish(cfg, added, post_processor):
    """Adds tokens through HF itself, so ids and flags are what HF assigns."""
    tok = Tokenizer.from_str(json.dumps(cfg))
    for t in added:
        if t.special:
            tok.add_special_tokens([t])
        else:
            tok.add_tokens([t])
    if post_processor is not None:
        tok.post_processor = post_processor(tok)
    return json.loads(tok.to_str())


def write_fixture(name, cfg):
    text = json.dumps(cfg, ensure_ascii=False, separators=(",", ":"))
    Tokenizer.from_str(text)  # must load
    (DATA / f"{name}.json").write_text(text, encoding="utf-8")
    print(f"{name}.json: {len(text.encode())} bytes, vocab {len(cfg['model']['vocab'])}")


def make_gpt2():
    cfg = train("gpt2", 2000, None, pre_tokenizers.ByteLevel(add_prefix_space=False))
    added = [
        AddedToken("<|endoftext|>", special=True, normalized=False),
        AddedToken("<mask>", special=True, lstrip=True, normalized=False),
        AddedToken("<|rstrip|>", special=True, rstrip=True, normalized=False),
        AddedToken("[SW]", special=False, single_word=True),
        AddedToken("kiln runtime", special=False),
        AddedToken("<|ü|>", special=False),
    ]
    cfg = finish(cfg, added, lambda t: processors.ByteLevel(trim_offsets=False))
    # GPT-2's own file stores merges as "a b" strings; keep that older form here.
    cfg["model"]["merges"] = [" ".join(m) for m in cfg["model"]["merges"]]
    write_fixture("gpt2", cfg)


def make_llama3():
    split = pre_tokenizers.Split(Regex(LLAMA3_REGEX), behavior="isolated", invert=False)
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True,
                                          use_regex=False)
    cfg = train("llama3", 2500, None, pre_tokenizers.Sequence([split, byte_level]))
    cfg["model"]["ignore_merges"] = True
    add_vocab(cfg, ["Ġsupercalifragilistic", "Ġtokenization", "Ġkilnfire"])
    specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>",
                "<|reserved_special_token_1|>", "<|start_header_id|>", "<|end_header_id|>",
                "<|reserved_special_token_2|>", "<|eot_id|>"]
    added = [AddedToken(s, special=True, normalized=False) for s in specials]

    def post(tok):
        bos = "<|begin_of_text|>"
        template = processors.TemplateProcessing(
            single=f"{bos} $A", pair=f"{bos} $A {bos} $B:1",
            special_tokens=[(bos, tok.token_to_id(bos))])
        return processors.Sequence([processors.ByteLevel(trim_offsets=False), template])

    write_fixture("llama3", finish(cfg, added, post))


def make_qwen2():
    split = pre_tokenizers.Split(Regex(QWEN2_REGEX), behavior="isolated", invert=False)
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False,
                                          use_regex=False)
    cfg = train("qwen2", 2500, normalizers.NFC(), pre_tokenizers.Sequence([split, byte_level]))
    added = [
        AddedToken("<|endoftext|>", special=True, normalized=False),
        AddedToken("<|im_start|>", special=True, normalized=False),
        AddedToken("<|im_end|>", special=True, normalized=False),
        AddedToken("<tool_call>", special=False, normalized=False),
        AddedToken("</tool_call>", special=False, normalized=False),
        # normalized=True: matched after NFC, so "cafe\u0301" finds it too.
        AddedToken("café", special=False, normalized=True),
    ]
    post = lambda t: processors.ByteLevel(add_prefix_space=False, trim_offsets=False,
                                          use_regex=False)
    write_fixture("qwen2", finish(cfg, added, post))


# ---------------------------------------------------------------- corpus

EDGE_CASES = [
    "", " ", "  ", "\t", "\n", "\r\n", "a\r\nb", "a\rb", "  leading", "trailing  ",
    "multiple   spaces   inside", "tabs\tand\t\ttabs", "new\n\nlines\n\n\n",
    "mixed \t \n \r\n whitespace", "\u00a0nbsp\u00a0", "\u3000ideographic space",
    "line\u2028separator\u2029para", "mongolian\u180evowel", "zero\u200bwidth", "\v\f vt ff",
    "x \u0085 nel", " " * 50 + "x", "\n" * 10, "end with space ",
    "1", "12", "123", "1234", "12345678901", "3.14159", "1,000,000", "v2.0.1",
    "٣٤٥ Arabic-Indic digits", "①②③ circled", "Ⅻ roman", "²³ superscripts", "१२३ देवनागरी",
    "1" * 40, "2024-12-02T10:20:30Z", "0x7fffffff", "-42 +17 1e-9",
    "I'm", "I'M", "you're", "YOU'RE", "we've", "WE'VE", "he'll", "HE'LL", "she'd", "SHE'D",
    "it's", "IT'S", "don't", "DON'T", "Don'T", "It'S wE'Re", "rock 'n' roll", "'tis",
    "'S", "' s", "''", "I'm'm", "l'ſ long s", "'ſt", "'K kelvin 'K", "can’t curly", "'ll'll",
    "café", "cafe\u0301", "naïve", "Ångström", "A\u030angstro\u0308m", "Zoë", "ñ vs n\u0303",
    "Việt Nam", "Vie\u0323\u0302t", "q\u0307\u0323 reorder", "e\u0301\u0301", "한국어",
    "\u1112\u1161\u11ab\u1100\u116e\u11a8 jamo", "\u212b angstrom sign", "\u2126 ohm sign",
    "ﬁ ligature", "Ὀδυσσεύς", "ᾳ\u0345", "\U00011938 dives akuru", "\u0f73 tibetan",
    "我爱自然语言处理。", "日本語のテキスト、カタカナ、ひらがな", "中文，標點符號！", "𠀀𠀁 ext B",
    "שלום עולם", "مرحبا بالعالم", "mixed עברית and English", "\u200frlm\u200e lrm",
    "😀", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🇯🇵🇺🇸", "1️⃣", "❤️", "emoji😀inline", "😀😀😀 x",
    "\U000105c0\U000105c1 todhri", "\U00010d40\U00010d41 garay digits", "\U0001e5d0 ol onal",
    # Where Oniguruma's Unicode 16 and PCRE2's Unicode 14 would split differently.
    "x\u180e!?", "a\u180e\u180e!", "a\U000105c0b!", "\U000105c0abc", "x\U00010d40y",
    "7\U00010d40\U00010d41\U00010d42\U00010d43", " \U0001e5d0\U0001e5d1.", "'\u017ft'\u017f",
    "    def f(x):\n        return x  # comment\n", "\tif (a && b) {\n\t\treturn;\n\t}",
    "x+=1;y-=2", "http://example.com/path?q=1&r=2", "email@example.org", "C:\\Windows\\path",
    "$100.00 & 50%", "#hashtag @mention", "...", "—–-", "“smart quotes” ‘single’",
    "«guillemets»", "\x00", "\x01\x02", "\x7f", "bell\x07", "\x1b[31mred\x1b[0m",
    "\uffff\U0010ffff\ue000", "ǅ titlecase", "İstanbul", "ß STRASSE", "ﬅ", "a" * 300,
    "ab" * 100, "supercalifragilistic tokenization kilnfire", " supercalifragilistic",
    "The tokenization of supercalifragilistic words", "kiln runtime", "the kiln runtime!",
    # Added tokens of each fixture, inline and at the edges.
    "<|endoftext|>", "Hello<|endoftext|>world", "<|endoftext|><|endoftext|>", "<|endoftext",
    "a <|endoftext|> b", "<mask>", " <mask>", "x   <mask>  y", "<mask><mask>", "a\t<mask>",
    "<|rstrip|>   after", "x <|rstrip|>\n y", "a [SW] b", "a[SW]b", "[SW]", "[SW]x", "x [SW]",
    "é[SW] _[SW]", "x<|ü|>y", "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n",
    "<|im_start|", "<|im_end|><|im_end|>", "<tool_call>{\"a\": 1}</tool_call>",
    "caf\u00e9 cafe\u0301 CAFÉ", "<|begin_of_text|><|start_header_id|>system<|end_header_id|>"
    "\n\nYou are helpful.<|eot_id|>", "<|reserved_special_token_0|>x<|eot_id|>",
    "<|begin_of_text|>", "text<|end_of_text|>",
]

FRAGMENTS = [
    "Hello", " world", "’s", "'S", "'ve", " 42", "12345", "  ", "\n", "\r\n", "\t", "é",
    "e\u0301", "中文", "テスト", "한글", "ñ", "😀", "👩‍💻", "🇩🇪", "!!", "...", " --", "<|endoftext|>",
    "<|im_end|>", "<|eot_id|>", "<mask>", "[SW]", " café", "Ω", "\u00a0", "x", "ABC", "don't",
    " ", "\u0345", "Ǆ", "ß", "123", "4", "٣", "(", "}", "\"", "'", "#", "kiln runtime",
]


def corpus_lines():
    lines = list(EDGE_CASES)
    lines += [l for l in zen().split("\n") if l]
    rng = random.Random(20261202)
    docs = "\n".join(docstrings()).split("\n")
    lines += [l for l in rng.sample(docs, 220)]
    paragraphs = "\n".join(docstrings()).split("\n\n")
    lines += rng.sample(paragraphs, 20)
    lines += [l for l in MULTILINGUAL.split("\n") if l]
    for _ in range(150):
        lines.append("".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(1, 12))))
    return lines


def write_corpus():
    lines = corpus_lines()
    with open(DATA / "corpus.jsonl", "w", encoding="utf-8") as f:
        for l in lines:
            f.write(json.dumps(l, ensure_ascii=False) + "\n")
    print(f"corpus.jsonl: {len(lines)} lines")


# ---------------------------------------------------------------- refs

def split_variant(pattern, behavior, invert=False, literal=False):
    pat = {"String": pattern} if literal else {"Regex": pattern}
    return {"pre_tokenizer": {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": pat, "behavior": behavior, "invert": invert},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
         "use_regex": False}]}}


PUNCT = r" ?[,.!?;:]+"
# Each fixture with JSON patches (top-level keys replaced) that exercise the
# options the base fixtures leave at one setting.
VARIANTS = {
    "gpt2": {
        "base": {},
        # What transformers 5.17 writes for a GGUF file's byte-level vocabulary:
        # BPE with byte_fallback behind ByteLevel (the alphabet covers every
        # byte, so the fallback never fires and the ids stay the base's), and
        # the decoder ByteFallback, Fuse, Replace, ByteLevel.
        "gguf": {"model": {"byte_fallback": True}, "decoder": {
            "type": "Sequence", "decoders": [
                {"type": "ByteFallback"}, {"type": "Fuse"},
                {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
                {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                 "use_regex": True}]}},
        "prefix_space": {"pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": True,
                                           "trim_offsets": True, "use_regex": True}},
        "eos_template": lambda base: {"post_processor": {
            "type": "TemplateProcessing",
            "single": [{"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "<|endoftext|>", "type_id": 0}}],
            "pair": [{"Sequence": {"id": "A", "type_id": 0}},
                     {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {"<|endoftext|>": {
                "id": "<|endoftext|>", "ids": [added_id(base, "<|endoftext|>")],
                "tokens": ["<|endoftext|>"]}}}},
    },
    "llama3": {
        "base": {},
        "no_ignore_merges": {"model": {"ignore_merges": False}},
        "split_removed": split_variant(PUNCT, "Removed"),
        "split_prev": split_variant(PUNCT, "MergedWithPrevious"),
        "split_next": split_variant(PUNCT, "MergedWithNext"),
        "split_contiguous": split_variant(PUNCT, "Contiguous"),
        "split_invert": split_variant(r"\p{L}+", "Isolated", invert=True),
        "split_literal": split_variant(" ", "MergedWithNext", literal=True),
    },
    "qwen2": {
        "base": {},
        "no_normalizer": {"normalizer": None},
    },
}


def added_id(cfg, content):
    return next(t["id"] for t in cfg["added_tokens"] if t["content"] == content)


def apply_patch(cfg, patch):
    cfg = copy.deepcopy(cfg)
    for key, value in patch.items():
        if key == "model":
            cfg["model"].update(value)
        else:
            cfg[key] = value
    return cfg


def write_refs():
    lines = [json.loads(l) for l in open(DATA / "corpus.jsonl", encoding="utf-8")]
    for name, variants in VARIANTS.items():
        base = json.loads((DATA / f"{name}.json").read_text(encoding="utf-8"))
        out, base_ids = [], None
        for vname, patch in variants.items():
            patch = patch(base) if callable(patch) else patch
            tok = Tokenizer.from_str(json.dumps(apply_patch(base, patch)))
            cases, all_ids = [], []
            for i, text in enumerate(lines):
                ids = tok.encode(text, add_special_tokens=False).ids
                ids_sp = tok.encode(text, add_special_tokens=True).ids
                decode = tok.decode(ids, skip_special_tokens=False)
                decode_skip = tok.decode(ids_sp, skip_special_tokens=True)
                all_ids.append(ids)
                # null = the usual value, to keep the files small: ids as in the
                # first (base) variant, ids_special as ids, decodes as the text.
                case = {"ids": None if base_ids and base_ids[i] == ids else ids,
                        "ids_special": None if ids_sp == ids else ids_sp,
                        "decode": None if decode == text else decode,
                        "decode_skip": None if decode_skip == text else decode_skip}
                # A variant that only changes encoding records no special-token
                # fields; one that changes the post-processor records only those.
                if base_ids is not None:
                    keep = (("ids", "ids_special", "decode_skip") if "post_processor" in patch
                            else ("ids", "decode"))
                    case = {k: case[k] for k in keep}
                cases.append(case)
            base_ids = base_ids or all_ids
            out.append({"variant": vname, "patch": patch,
                        "vocab_size": tok.get_vocab_size(with_added_tokens=True),
                        "cases": cases})
        with open(DATA / f"refs_{name}.json", "w", encoding="utf-8") as f:
            f.write('{"tokenizers_version": %s, "fixture": "%s.json", "variants": [\n'
                    % (json.dumps(tokenizers.__version__), name))
            for vi, v in enumerate(out):
                head = {k: v[k] for k in ("variant", "patch", "vocab_size")}
                f.write(json.dumps(head, ensure_ascii=False)[:-1] + ', "cases": [\n')
                f.write(",\n".join(json.dumps(c, ensure_ascii=False, separators=(",", ":"))
                                   for c in v["cases"]))
                f.write("\n]}" + (",\n" if vi + 1 < len(out) else "\n"))
            f.write("]}\n")
        print(f"refs_{name}.json: {len(variants)} variants x {len(lines)} lines")


# ---------------------------------------------------------------- unicode
#
# HF matches regexes with Oniguruma (Unicode 16 here) and normalizes with its own
# older Unicode tables; PCRE2 and Python carry other Unicode versions. Rather than
# trust any version number, probe HF on every code point and emit exactly what it
# does, both as test references and as the C++ tables the runtime uses.

ALL_CPS = [cp for cp in range(0x110000) if not 0xD800 <= cp < 0xE000]
CONTRACTIONS = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)"
# Single-character classes, each swept over every code point.
CLASSES = [r"\s", r"\S", r"\p{L}", r"\p{N}", r"[^\s\p{L}\p{N}]", r"[^\r\n\p{L}\p{N}]"]


def ranges(cps):
    out = []
    for cp in sorted(cps):
        if out and out[-1][1] == cp - 1:
            out[-1][1] = cp
        else:
            out.append([cp, cp])
    return out


def hf_class(pattern):
    """Code points that HF's `pattern` matches on their own."""
    split = pre_tokenizers.Split(Regex(pattern), behavior="removed")
    kept = set()
    for piece, _ in split.pre_tokenize_str("".join(map(chr, ALL_CPS))):
        kept.update(map(ord, piece))
    return [cp for cp in ALL_CPS if cp not in kept]


def hf_contraction_letters():
    """Code points c for which "'c" is a whole match of the contractions group
    (this is where case folding differs between regex engines, e.g. U+017F)."""
    split = pre_tokenizers.Split(Regex(CONTRACTIONS), behavior="isolated")
    text = "".join("'" + chr(cp) + "\0" for cp in ALL_CPS)
    return [ord(p[1]) for p, _ in split.pre_tokenize_str(text) if len(p) == 2 and p[0] == "'"]


def hf_nfc_data():
    """Canonical decompositions, combining classes and compositions as HF has them."""
    nfc, nfd = normalizers.NFC(), normalizers.NFD()
    decomp, ccc, compose = {}, {}, {}
    for cp in ALL_CPS:
        if 0xAC00 <= cp <= 0xD7A3:
            continue  # Hangul is algorithmic
        c = chr(cp)
        d = unicodedata.decomposition(c)
        if d and not d.startswith("<") and nfd.normalize_str(c) != c:
            decomp[cp] = [int(x, 16) for x in d.split()]
        klass = unicodedata.combining(c)
        if klass:
            # A mark HF knows reorders against one of another class.
            probe = "x" + c + "\u0334" if klass > 1 else "x\u0316" + c
            if nfc.normalize_str(probe) != probe:
                ccc[cp] = klass
    for cp, d in decomp.items():
        if len(d) == 2 and nfc.normalize_str(nfd.normalize_str(chr(cp))) == chr(cp):
            compose[(d[0], d[1])] = cp
    # The recursive single-step table must give HF's full decomposition.
    def full(cp):
        return "".join(full(x) for x in decomp[cp]) if cp in decomp else chr(cp)
    bad = [hex(cp) for cp in decomp if full(cp) != nfd.normalize_str(chr(cp))]
    assert not bad, f"decomposition mismatch: {bad[:10]}"
    return decomp, ccc, compose


def nfc_cases(decomp, ccc, compose):
    nfc = normalizers.NFC()
    inputs = []
    for cp in ALL_CPS:
        c = chr(cp)
        if nfc.normalize_str(c) != c:
            inputs.append(c)  # singletons and composition exclusions
    inputs += [normalizers.NFD().normalize_str(chr(cp)) for cp in decomp]
    inputs += [normalizers.NFD().normalize_str(chr(cp)) for cp in range(0xAC00, 0xD7A4, 37)]
    for cp in ccc:
        inputs.append("x" + chr(cp) + "\u0334")
        inputs.append("x\u0316" + chr(cp))
    for (a, b), cp in sorted(compose.items()):
        inputs.append(chr(a) + "\u0327" + chr(b))  # blocked or not, by class
        inputs.append(chr(a) + "\u0301" + chr(b))
    return [[s, nfc.normalize_str(s)] for s in inputs]


def cpp_rows(items, fmt):
    """C++ initializer rows packed up to the 100-column limit."""
    rows, row = [], ""
    for item in items:
        cell = fmt(item) + ","
        if row and len(row) + len(cell) > 98:
            rows.append(row)
            row = ""
        row += cell
    return "\n".join("  " + r for r in rows + [row] if r)


HEADER = """// Generated by tools/make_tokenizer_refs.py (step `unicode`) from the behaviour
// of HF tokenizers {version}; do not edit.
"""


def write_nfc_tables(decomp, ccc, compose):
    ccc_ranges = []
    for cp in sorted(ccc):
        if ccc_ranges and ccc_ranges[-1][1] == cp - 1 and ccc_ranges[-1][2] == ccc[cp]:
            ccc_ranges[-1][1] = cp
        else:
            ccc_ranges.append([cp, cp, ccc[cp]])
    composable = set(compose.values())
    dec = sorted((cp, d[0], d[1] if len(d) > 1 else 0, int(cp in composable))
                 for cp, d in decomp.items())
    text = HEADER.format(version=tokenizers.__version__) + f"""// Canonical combining classes and
// single-step canonical decompositions (Hangul excluded); `composes` marks the
// primary composites that NFC recomposes.
#include "tokenizer/nfc_tables.h"

namespace kiln::tokenizer {{

// clang-format off
const CccRange kCccRanges[] = {{
{cpp_rows(ccc_ranges, lambda r: "{0x%X,0x%X,%d}" % tuple(r))}
}};
const size_t kCccRangeCount = {len(ccc_ranges)};

const Decomposition kDecompositions[] = {{
{cpp_rows(dec, lambda r: "{0x%X,0x%X,0x%X,%d}" % r)}
}};
const size_t kDecompositionCount = {len(dec)};
// clang-format on

}} // namespace kiln::tokenizer
"""
    (SRC / "nfc_tables.cpp").write_text(text, encoding="utf-8")


def write_regex_tables(classes):
    """What PCRE2 must add to \\p{L} and \\p{N}, and Oniguruma's \\s, to match HF."""
    whitespace = classes[r"\s"]
    letters = {cp for a, b in classes[r"\p{L}"] for cp in range(a, b + 1)}
    numbers = {cp for a, b in classes[r"\p{N}"] for cp in range(a, b + 1)}
    # Python's unicodedata stands in for PCRE2's tables (both Unicode 14 on Debian 12);
    # the gtest sweeps every code point through PCRE2 to prove the result.
    py_l = {cp for cp in ALL_CPS if unicodedata.category(chr(cp)).startswith("L")}
    py_n = {cp for cp in ALL_CPS if unicodedata.category(chr(cp)).startswith("N")}
    assert not py_l - letters and not py_n - numbers, "HF dropped a letter or number"
    extra_l, extra_n = ranges(letters - py_l), ranges(numbers - py_n)
    fmt = lambda r: "{0x%X,0x%X}" % tuple(r)
    text = HEADER.format(version=tokenizers.__version__) + f"""// Unicode ranges for the Oniguruma-to-PCRE2
// pattern translation (see regex.cpp).
#include "tokenizer/regex_tables.h"

namespace kiln::tokenizer {{

// clang-format off
// Oniguruma's \\s: Unicode White_Space (PCRE2 adds U+180E).
const CodepointRange kWhitespace[] = {{
{cpp_rows(whitespace, fmt)}
}};
const size_t kWhitespaceCount = {len(whitespace)};

// Letters and numbers of HF's newer Unicode that PCRE2 (Unicode 14) lacks.
const CodepointRange kExtraLetters[] = {{
{cpp_rows(extra_l, fmt)}
}};
const size_t kExtraLetterCount = {len(extra_l)};

const CodepointRange kExtraNumbers[] = {{
{cpp_rows(extra_n, fmt)}
}};
const size_t kExtraNumberCount = {len(extra_n)};
// clang-format on

}} // namespace kiln::tokenizer
"""
    (SRC / "regex_tables.cpp").write_text(text, encoding="utf-8")


def write_unicode():
    classes = {p: ranges(hf_class(p)) for p in CLASSES}
    contraction = ranges(hf_contraction_letters())
    decomp, ccc, compose = hf_nfc_data()
    cases = nfc_cases(decomp, ccc, compose)
    refs = {"tokenizers_version": tokenizers.__version__,
            "classes": [{"pattern": p, "ranges": r} for p, r in classes.items()],
            "contraction": {"pattern": CONTRACTIONS, "letters": contraction},
            "nfc": cases}
    with open(DATA / "unicode_refs.json", "w", encoding="utf-8") as f:
        json.dump(refs, f, ensure_ascii=True, separators=(",", ":"))
    write_nfc_tables(decomp, ccc, compose)
    write_regex_tables(classes)
    print(f"unicode: {len(cases)} NFC cases, {len(decomp)} decompositions, "
          f"{len(compose)} compositions, {len(ccc)} marks")


def write_pretokenize_refs():
    """Word boundaries of each fixture's pre-tokenizer alone. Ids cannot show a
    boundary that no merge crosses (rare characters), so the splits are checked
    directly: per line, the length in characters of each byte-level word."""
    lines = [json.loads(l) for l in open(DATA / "corpus.jsonl", encoding="utf-8")]
    out = {"tokenizers_version": tokenizers.__version__, "fixtures": {}}
    for name in VARIANTS:
        cfg = (DATA / f"{name}.json").read_text(encoding="utf-8")
        pre = Tokenizer.from_str(cfg).pre_tokenizer
        out["fixtures"][name] = [[len(p) for p, _ in pre.pre_tokenize_str(t)] for t in lines]
    with open(DATA / "refs_pretokenize.json", "w", encoding="utf-8") as f:
        f.write('{"tokenizers_version": %s, "fixtures": {\n' % json.dumps(tokenizers.__version__))
        f.write(",\n".join('"%s": %s' % (n, json.dumps(v, separators=(",", ":")))
                           for n, v in out["fixtures"].items()))
        f.write("\n}}\n")
    print(f"refs_pretokenize.json: {len(VARIANTS)} pre-tokenizers x {len(lines)} lines")


if __name__ == "__main__":
    steps = sys.argv[1:] or ["corpus", "refs", "unicode"]
    if "train" in steps:
        make_gpt2()
        make_llama3()
        make_qwen2()
    if "corpus" in steps:
        write_corpus()
    if "refs" in steps:
        write_refs()
        write_pretokenize_refs()
    if "unicode" in steps:
        write_unicode()
