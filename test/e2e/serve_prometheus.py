#!/usr/bin/env python3
"""A real Prometheus server (Debian `prometheus`) scrapes `kiln serve`'s /metrics.

    serve_prometheus.py --kiln KILN [--prometheus PROMETHEUS] PLAN

Starts `kiln serve` on PLAN with a keys file, and Prometheus with two scrape
jobs of the same target, every second: `kiln` sends the key from a
credentials file, `nokey` sends none. After a few completions, Prometheus'
own HTTP API must show:
  - up{job="kiln"} == 1: the scrape succeeded, so Prometheus parsed every
    line of kiln's text exposition (a malformed line fails the scrape);
  - up{job="nokey"} == 0: /metrics refuses a scrape without the key;
  - the completions counted: kiln_requests_finished_total and the TTFT
    histogram's _count reach the number sent, and its buckets give a
    histogram_quantile;
  - every metric family of docs/serve.md is present in Prometheus, but
    kiln_cancellations_total (nothing is cancelled here).
"""
import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import urllib.parse
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from serve import Server, check, failures, raw, wait_until  # noqa: E402

FAMILIES = ["kiln_requests_finished_total", "kiln_time_to_first_token_seconds_bucket",
            "kiln_time_per_output_token_seconds_count", "kiln_queue_depth", "kiln_running",
            "kiln_waiting", "kiln_kv_block_usage_ratio", "kiln_prefix_cache_hit_rate",
            "kiln_generation_tokens_total", "kiln_prompt_tokens_total", "kiln_preemptions_total",
            "kiln_http_requests_total", "kiln_ready", "kiln_draining", "kiln_rejections_total",
            "kiln_prefix_cache_hit_tokens_total", "kiln_engine_steps_total",
            "kiln_engine_step_errors_total", "kiln_requests_in_flight", "kiln_kv_blocks_total",
            "kiln_kv_blocks_used", "kiln_e2e_request_latency_seconds_count"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def query(port, expr):
    """The vector result of an instant query, as {labels-json: value}."""
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=10) as r:
        body = json.load(r)
    if body.get("status") != "success":
        return {}
    return {json.dumps(x["metric"], sort_keys=True): float(x["value"][1])
            for x in body["data"]["result"]}


def wait_for(port, expr, want, seconds=60):
    """Polls until every series of `expr` satisfies `want`; returns the last result."""
    def probe():
        try:
            return query(port, expr)
        except OSError:
            return {}
    return wait_until(probe, lambda got: got and all(want(v) for v in got.values()), seconds)


def main():
    os.environ["NO_PROXY"] = "127.0.0.1,localhost"
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--prometheus", default=shutil.which("prometheus") or "prometheus")
    ap.add_argument("plan")
    args = ap.parse_args()
    if not Path(args.prometheus).exists() and not shutil.which(args.prometheus):
        print(f"FAIL prometheus not found ({args.prometheus}): tools/setup.sh installs it")
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        r = subprocess.run([args.kiln, "keys", "new", "scraper"], capture_output=True, text=True)
        key, line = r.stdout.splitlines()
        keys = Path(tmp) / "keys.jsonl"
        keys.write_text(line + "\n")
        cred = Path(tmp) / "scrape.key"
        cred.write_text(key)
        server = Server(args.kiln, args.plan, "--api-keys", str(keys))
        pport = free_port()
        target = f"127.0.0.1:{server.port}"
        config = Path(tmp) / "prometheus.yml"
        config.write_text(json.dumps({  # YAML is a superset of JSON
            "global": {"scrape_interval": "1s", "scrape_timeout": "1s"},
            "scrape_configs": [
                {"job_name": "kiln", "static_configs": [{"targets": [target]}],
                 "authorization": {"type": "Bearer", "credentials_file": str(cred)}},
                {"job_name": "nokey", "static_configs": [{"targets": [target]}]},
            ]}))
        prom = subprocess.Popen([args.prometheus, f"--config.file={config}",
                                 f"--storage.tsdb.path={tmp}/tsdb",
                                 f"--web.listen-address=127.0.0.1:{pport}"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            sent = 3
            for i in range(sent):
                st, _, body = raw(server, "/v1/completions", key,
                                  data=json.dumps({"prompt": [5, 17, 99 + i], "max_tokens": 6,
                                                   "temperature": 0, "ignore_eos": True}))
                check(st == 200, f"completion {i}: {st} {body[:200]}")
            up = wait_for(pport, 'up{job="kiln"}', lambda v: v == 1)
            check(list(up.values()) == [1.0], f'up{{job="kiln"}} == 1 (the scrape parsed): {up}')
            nokey = wait_for(pport, 'up{job="nokey"}', lambda v: v == 0)
            check(list(nokey.values()) == [0.0], f'up{{job="nokey"}} == 0 (401 without a key): {nokey}')
            done = wait_for(pport, 'sum(kiln_requests_finished_total{job="kiln"})',
                            lambda v: v >= sent)
            check(list(done.values()) and min(done.values()) >= sent,
                  f"kiln_requests_finished_total reaches {sent}: {done}")
            ttft = wait_for(pport, 'kiln_time_to_first_token_seconds_count{job="kiln"}',
                            lambda v: v >= sent)
            check(list(ttft.values()) and min(ttft.values()) >= sent,
                  f"TTFT histogram counts {sent}: {ttft}")
            q = query(pport, 'histogram_quantile(0.5, sum by (le) '
                             '(kiln_time_to_first_token_seconds_bucket{job="kiln"}))')
            check(len(q) == 1 and 0 < list(q.values())[0] < 60, f"TTFT median from the buckets: {q}")
            # Some families exist only after their first event (the nokey job's
            # first 401 makes kiln_rejections_total), then the next scrape has them.
            missing = wait_until(
                lambda: [f for f in FAMILIES if not query(pport, f'{f}{{job="kiln"}}')],
                lambda m: not m, 30)
            check(not missing, f"every documented family is in Prometheus (missing: {missing})")
        finally:
            prom.terminate()
            try:
                err = prom.communicate(timeout=30)[1]
            except subprocess.TimeoutExpired:
                prom.kill()
                err = ""
            if failures:
                print("prometheus log:\n" + err[-3000:])
            check(server.stop() == 0, "kiln serve exits 0")
    print(f"{len(failures)} check(s) failed" if failures else "all checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
