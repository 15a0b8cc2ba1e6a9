#!/usr/bin/env python3
"""Runs kiln's libFuzzer targets for a bounded time each (docs/testing.md).

    run_fuzz.py --fuzz-dir build/fuzz/fuzz --builder build/ci-asan/tools/kiln/kiln \
        --seconds 25 [--targets plan_loader,tokenizer,onnx_import] [--jobs 2]

Seeds are made fresh on every run: plans built by --builder from fixtures
and from the importer's lit models, small ONNX models, and the fixtures'
tokenizer.json files each followed by a text. New inputs the fuzzer finds
accumulate in <work>/<target>/corpus and are reused by the next run.

A crash, a sanitizer report, a timeout or an out-of-memory in any target
fails the run; the input that caused it is kept as
<work>/<target>/crash-* (or timeout-*, oom-*, leak-*) and the line to
reproduce it is printed. Exit code 0 clean, 1 a finding, 2 bad usage.
"""
import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "test" / "fixtures"
LIT_ONNX = ROOT / "test" / "lit" / "importer" / "Inputs"
HERE = Path(__file__).resolve().parent

# Lit models that build to small plans (seeds with every table, few bytes).
LIT_PLAN_MODELS = ["basic.onnx", "constants.onnx", "shape_chain.onnx", "index_ops.onnx",
                   "upgrades.onnx", "layernorm_mean.onnx"]
# Small decoder-like graphs (a gated MLP layer each) beside the importer's
# models; the fixtures' models are too large to import many times a second.
INJECT_ONNX = ROOT / "test" / "lit" / "inject" / "Inputs"
TARGETS = ["plan_loader", "tokenizer", "onnx_import", "chat_template", "serve_request"]

ENV = dict(os.environ,
           ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1",
           UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1")


def build_plan(builder, onnx, out, extra=()):
    r = subprocess.run([builder, "build", str(onnx), "-o", str(out), "--quiet", *extra],
                       capture_output=True, text=True,
                       env=dict(os.environ, ASAN_OPTIONS="detect_leaks=0"))
    if r.returncode != 0:
        raise SystemExit(f"seed plan from {onnx} failed to build: {r.stderr.strip()}")


def plan_seeds(builder, seeds):
    build_plan(builder, FIXTURES / "gpt2-optimum" / "model.onnx", seeds / "gpt2-ragged.plan")
    build_plan(builder, FIXTURES / "gpt2-optimum" / "model.onnx", seeds / "gpt2-dense.plan",
               ["--no-ragged"])
    for name in LIT_PLAN_MODELS:
        build_plan(builder, LIT_ONNX / name, seeds / (Path(name).stem + ".plan"))


def onnx_seeds(seeds):
    for p in sorted(LIT_ONNX.glob("*.onnx")):
        (seeds / p.name).write_bytes(p.read_bytes())
    for p in sorted(INJECT_ONNX.glob("*.onnx")):
        (seeds / p.name).write_bytes(p.read_bytes())


def trimmed_tokenizer(doc, keep=384):
    """The document with its vocabulary cut to `keep` entries (and the merges
    among them): every component stays, and it parses a hundred times faster."""
    tok = json.loads(doc)
    model = tok.get("model") or {}
    vocab = model.get("vocab")
    if not isinstance(vocab, dict) or len(vocab) <= keep:
        return doc
    kept = dict(sorted(vocab.items(), key=lambda kv: kv[1])[:keep])
    model["vocab"] = kept
    if isinstance(model.get("merges"), list):
        merges = []
        for m in model["merges"]:
            a, b = m.split(" ", 1) if isinstance(m, str) else m
            if a in kept and b in kept and a + b in kept:
                merges.append(m)
        model["merges"] = merges
    return json.dumps(tok, ensure_ascii=False).encode()


def tokenizer_seeds(seeds):
    texts = [json.loads(line) for line in
             (ROOT / "test" / "tokenizer" / "corpus.jsonl").read_text().split("\n") if line]
    docs = {}
    # Every tokenizer the tests hold: the fixtures', and test/tokenizer's own
    # (byte-level BPE, WordPiece, SentencePiece BPE, Unigram), not its references.
    own = [p for p in sorted((ROOT / "test" / "tokenizer").glob("*.json"))
           if not p.name.startswith(("refs_", "unicode_"))]
    for p in sorted(FIXTURES.glob("*/tokenizer.json")) + own:
        docs.setdefault(p.read_bytes(), p)  # fixtures share tokenizers
    for i, (doc, path) in enumerate(docs.items()):
        text = texts[(7 * i) % len(texts)] + " " + texts[(7 * i + 3) % len(texts)]
        name = f"{path.parent.name}-{path.stem}"
        (seeds / name).write_bytes(trimmed_tokenizer(doc) + b"\0" + text.encode())
        if path.parent.name == "gpt2-optimum":  # one whole document, as shipped
            (seeds / f"{name}-whole").write_bytes(doc + b"\0" + text.encode())


def chat_template_seeds(seeds):
    """The differential test's templates, each followed by one of its contexts."""
    chat = ROOT / "test" / "chat"
    contexts = sorted((chat / "contexts").glob("*.json"))
    for i, t in enumerate(sorted((chat / "templates").glob("*.jinja"))):
        context = contexts[i % len(contexts)].read_bytes()
        (seeds / (t.stem + ".seed")).write_bytes(t.read_bytes() + b"\0" + context)


def serve_request_seeds(seeds):
    """Request bodies of the three routes (selector byte 0, 1, 2), valid and not."""
    completions = [
        {"prompt": "Hello", "max_tokens": 8},
        {"prompt": [5, 17, 99], "max_tokens": 4, "temperature": 0, "stream": True,
         "stream_options": {"include_usage": True}},
        {"prompt": ["a", "b"], "n": 2, "stop": ["\n\n", "END"], "seed": 7, "top_p": 0.9,
         "logprobs": 2, "presence_penalty": 0.5, "frequency_penalty": 0.1, "ignore_eos": True},
        {"prompt": "x", "max_tokens": -1},
        {"prompt": "x", "temperature": 1e999},
        {"prompt": "x", "timeout": 0.5, "user": "u", "model": "m", "echo": False},
    ]
    chat = [
        {"messages": [{"role": "user", "content": "hi"}], "max_completion_tokens": 16},
        {"messages": [{"role": "system", "content": "be brief"},
                      {"role": "user", "content": [{"type": "text", "text": "hi"}]}],
         "stream": True, "logprobs": True, "top_logprobs": 3},
        {"messages": [{"role": "assistant", "content": None,
                       "tool_calls": [{"function": {"name": "f", "arguments": "{}"}}]}]},
        {"messages": []},
    ]
    embeddings = [{"input": "hello"}, {"input": ["a", "b"], "encoding_format": "base64"},
                  {"input": [[1, 2], [3]]}, {"input": [], "dimensions": 3}]
    n = 0
    for selector, bodies in enumerate((completions, chat, embeddings)):
        for body in bodies:
            text = json.dumps(body).replace("Infinity", "1e999")
            (seeds / f"body-{n}").write_bytes(bytes([selector]) + text.encode())
            n += 1
    (seeds / "not-json").write_bytes(b"\0{\"prompt\": \"\xff\xfe\"")
    # Raw HTTP for the listener's parser (selector 3): pipelined, chunked,
    # Expect, and forms it must refuse.
    http = [b"GET /health HTTP/1.1\r\n\r\nPOST /v1/completions HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}",
            b"POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"5;x=1\r\nhello\r\n0\r\nT: v\r\n\r\nGET /v1/models HTTP/1.0\r\n\r\n",
            b"POST /a HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc",
            b"POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
            b"GET /v1/models/a%2Fb?x=1 HTTP/1.1\r\nX: a\r\n b\r\n\r\n"]
    for i, raw in enumerate(http):
        (seeds / f"http-{i}").write_bytes(b"\3" + raw)


def make_seeds(target, seeds, builder):
    seeds.mkdir(parents=True, exist_ok=True)
    for old in seeds.iterdir():
        old.unlink()
    if target == "plan_loader":
        plan_seeds(builder, seeds)
    elif target == "onnx_import":
        onnx_seeds(seeds)
    elif target == "chat_template":
        chat_template_seeds(seeds)
    elif target == "serve_request":
        serve_request_seeds(seeds)
    else:
        tokenizer_seeds(seeds)


def run_target(target, fuzzer, work, seconds, max_runs, builder, extra):
    tdir = work / target
    corpus, seeds = tdir / "corpus", tdir / "seeds"
    corpus.mkdir(parents=True, exist_ok=True)
    make_seeds(target, seeds, builder)
    cmd = [str(fuzzer), f"-max_total_time={seconds}", f"-runs={max_runs}", "-timeout=20",
           "-rss_limit_mb=3072", "-print_final_stats=1", f"-artifact_prefix={tdir}/",
           *extra]
    dict_file = HERE / f"{target}.dict"
    if dict_file.exists():
        cmd.append(f"-dict={dict_file}")
    cmd += [str(corpus), str(seeds)]
    print(f"fuzz {target}: {' '.join(cmd)}", flush=True)
    t0 = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True, errors="replace", env=ENV)
    wall = time.time() - t0
    stats = dict(line.partition(": ")[::2] for line in r.stderr.splitlines()
                 if line.startswith("stat::"))
    execs = stats.get("stat::number_of_executed_units", "?").strip()
    cov = ""
    for line in reversed(r.stderr.splitlines()):
        if " cov: " in line:
            cov = line.split(" cov: ")[1].split()[0]
            break
    print(f"fuzz {target}: exit {r.returncode}, {wall:.0f} s, {execs} inputs, "
          f"coverage {cov or '?'} edges, corpus {len(list(corpus.iterdir()))} files", flush=True)
    if r.returncode == 0:
        return True
    print(r.stderr[-6000:], file=sys.stderr)
    for art in sorted(tdir.glob("*-*")):
        if art.is_file() and art.name.split("-")[0] in ("crash", "timeout", "oom", "leak",
                                                          "slow-unit"):
            print(f"fuzz {target}: FINDING {art}\n  reproduce: {fuzzer} {art}", file=sys.stderr)
    return False


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fuzz-dir", required=True, help="folder of the fuzz_* binaries")
    ap.add_argument("--builder", required=True, help="a kiln with `build`, for seed plans")
    ap.add_argument("--seconds", type=int, default=25, help="time per target")
    ap.add_argument("--runs", type=int, default=10_000_000, help="input count cap per target")
    ap.add_argument("--targets", default=",".join(TARGETS))
    ap.add_argument("--work", help="corpora and findings (default: <fuzz-dir>/work)")
    ap.add_argument("--jobs", type=int, default=1,
                    help="targets fuzzed at once (each is one process on one core)")
    ap.add_argument("extra", nargs="*", help="more libFuzzer flags, after --")
    args = ap.parse_args()
    fuzz_dir = Path(args.fuzz_dir)
    work = Path(args.work) if args.work else fuzz_dir / "work"
    if args.jobs < 1:
        print("--jobs must be at least 1", file=sys.stderr)
        return 2
    targets = args.targets.split(",")
    for target in targets:
        if target not in TARGETS:
            print(f"unknown target '{target}' (targets: {', '.join(TARGETS)})", file=sys.stderr)
            return 2
        fuzzer = fuzz_dir / f"fuzz_{target}"
        if not fuzzer.exists():
            print(f"{fuzzer} is not built (cmake --build <dir> --target kiln_fuzzers)",
                  file=sys.stderr)
            return 2
    # Each target gets its own seconds; --jobs of them share the machine.
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(
            lambda t: run_target(t, fuzz_dir / f"fuzz_{t}", work, args.seconds, args.runs,
                                 args.builder, args.extra), targets))
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
