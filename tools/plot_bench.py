#!/usr/bin/env python3
r"""Plots `kiln bench offline` results, with the ONNX Runtime one-at-a-time baseline.

    .venv/bin/python tools/plot_bench.py --kiln out/kiln.json --ort out/ort.json \
        --out docs/bench-offline.png --title "demo model, 2 threads"

--kiln is the JSON that `kiln bench offline` writes; --ort (optional) the one from
tools/bench_offline_ort.py. Draws one PNG with two panels: (a) output tokens/s
against concurrency, ORT as a dashed horizontal line; (b) TTFT p50/p99 and TPOT
p50 in ms against concurrency. Prints a markdown table of both, with kiln's
throughput as a ratio to ORT's. Needs matplotlib (tools/requirements-bench.txt).
"""
import argparse
import json
import sys
from pathlib import Path

COLS = ["requests_per_s", "output_tokens_per_s", "ttft_ms_p50", "ttft_ms_p99",
        "tpot_ms_p50", "tpot_ms_p99"]


def fail(msg):
    print(f"plot_bench: error: {msg}", file=sys.stderr)
    sys.exit(2)


def load(path, what):
    try:
        text = Path(path).read_text()
    except OSError as e:
        fail(f"cannot read {what} file {path}: {e.strerror}")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        fail(f"{path}:{e.lineno}: bad JSON: {e.msg} (column {e.colno})")
    results = doc.get("results") if isinstance(doc, dict) else None
    if not isinstance(results, list) or not results:
        fail(f"{path}: no \"results\" list")
    for i, r in enumerate(results):
        if not isinstance(r, dict):
            fail(f"{path}: results[{i}] is not an object")
        for key in ("concurrency", "output_tokens_per_s"):
            if not isinstance(r.get(key), (int, float)) or isinstance(r.get(key), bool):
                fail(f"{path}: results[{i}] has no number \"{key}\"")
        for key in COLS:
            if not isinstance(r.get(key), (int, float)):
                r[key] = None  # missing or null: shown as a dash, left out of the plot
    return doc, sorted(results, key=lambda r: r["concurrency"])


def fmt(x, spec):
    return "—" if x is None else format(x, spec)


def table(kiln_name, kiln, ort_name, ort):
    base = ort[0]["output_tokens_per_s"] if ort else None
    print("| engine | concurrency | req/s | out tok/s | TTFT p50 ms | TTFT p99 ms "
          "| TPOT p50 ms | TPOT p99 ms | tok/s vs ORT |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    rows = [(kiln_name, r) for r in kiln] + [(ort_name, r) for r in ort or []]
    for name, r in rows:
        ratio = f"{r['output_tokens_per_s'] / base:.2f}x" if base else "—"
        print(f"| {name} | {r['concurrency']} | {fmt(r['requests_per_s'], '.2f')} "
              f"| {r['output_tokens_per_s']:.1f} | {fmt(r['ttft_ms_p50'], '.1f')} "
              f"| {fmt(r['ttft_ms_p99'], '.1f')} | {fmt(r['tpot_ms_p50'], '.2f')} "
              f"| {fmt(r['tpot_ms_p99'], '.2f')} | {ratio} |")


def series(rows, key):
    pts = [(r["concurrency"], r[key]) for r in rows if r[key] is not None]
    return [p[0] for p in pts], [p[1] for p in pts]


def plot(out, title, kiln_name, kiln, ort_name, ort):
    try:
        import matplotlib
    except ImportError:
        fail("matplotlib is not installed (pip install -r tools/requirements-bench.txt)")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import ScalarFormatter

    conc = [r["concurrency"] for r in kiln]
    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4.8))
    a.plot(*series(kiln, "output_tokens_per_s"), "o-", color="C0", label=kiln_name)
    if ort:
        o = ort[0]
        a.axhline(o["output_tokens_per_s"], color="C3", ls="--",
                  label=f"{ort_name}: {o['output_tokens_per_s']:.0f} tok/s")
    a.set_title("(a) throughput")
    a.set_ylabel("output tokens/s")
    a.set_ylim(bottom=0)

    for key, style, color, label in (("ttft_ms_p50", "o-", "C0", "TTFT p50"),
                                     ("ttft_ms_p99", "s--", "C0", "TTFT p99"),
                                     ("tpot_ms_p50", "^-", "C2", "TPOT p50")):
        xs, ys = series(kiln, key)
        if xs:
            b.plot(xs, ys, style, color=color, label=f"{kiln_name} {label}")
    if ort:
        for key, color, label in (("ttft_ms_p50", "C0", "TTFT p50"), ("tpot_ms_p50", "C2", "TPOT p50")):
            if ort[0][key] is not None:
                b.axhline(ort[0][key], color=color, ls=":", lw=1, label=f"{ort_name} {label}")
    b.set_title("(b) latency")
    b.set_ylabel("ms (log scale)")
    b.set_yscale("log")

    for ax in (a, b):
        ax.set_xscale("log", base=2)
        ax.set_xticks(conc)
        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.xaxis.set_minor_formatter(plt.NullFormatter())
        ax.set_xlabel("concurrency (requests in flight)")
        ax.grid(True, which="both", alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    try:
        fig.savefig(out, dpi=120)
    except OSError as e:
        fail(f"cannot write {out}: {e.strerror}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kiln", required=True, help="JSON from `kiln bench offline`")
    ap.add_argument("--ort", help="JSON from tools/bench_offline_ort.py (optional)")
    ap.add_argument("--out", required=True, help="PNG to write")
    ap.add_argument("--title", help="figure title (default: from the kiln JSON)")
    args = ap.parse_args()

    kdoc, kiln = load(args.kiln, "kiln")
    ort_name, ort = "ORT one at a time", None
    if args.ort:
        odoc, ort = load(args.ort, "ORT")
        if isinstance(odoc.get("engine"), str):
            ort_name = odoc["engine"]
    kiln_name = kdoc.get("engine") if isinstance(kdoc.get("engine"), str) else "kiln"
    title = args.title
    if title is None:
        bits = [str(kdoc[k]) if k == "plan" else f"{k.replace('_', ' ')} {kdoc[k]}"
                for k in ("plan", "num_prompts", "input_len", "output_len", "threads") if k in kdoc]
        title = ", ".join(bits) or None

    plot(args.out, title, kiln_name, kiln, ort_name, ort)
    table(kiln_name, kiln, ort_name, ort)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
