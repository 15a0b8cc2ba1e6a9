#!/usr/bin/env python3
"""Attacks a `kiln serve` on loopback as an outside client would, for minutes,
with every loop bounded, and prints a table (docs/serve.md#hostile-clients).

    tools/attack/serve_attack.py --kiln build/ci-runtime/tools/kiln/kiln PLAN \\
        [--slow 1000] [--seconds 20] [--capacity 8]

It starts the server itself (port 0, loopback only, a keys file of its own)
and runs, one after another:
  baseline    unloaded time per output token (TPOT) of streamed completions;
  slowloris   --slow connections sending a byte every second, plus 10x the
              server's capacity in streaming clients, for --seconds: /health
              p50/p99, accepted streams finished or lost, peak RSS;
  floods      chunked bodies and Content-Length bodies of 512 MiB and heads of
              200 MiB, without a key: statuses and peak RSS;
  pipelining  100 requests in one write: answers, in order;
  prompts     one client sending oversized prompts back to back while others
              stream: their TPOT against the baseline;
  quotas      streams cut short and requests timed out against a tpm quota;
              503 refusals against an rpm quota;
  sigterm     SIGTERM under the slow connections and streaming load: seconds
              to exit against drain_timeout_s.
Nothing here leaves loopback. Exit code 0 when every goal is met.
"""
import argparse
import hashlib
import http.client
import json
import os
import re
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

KEY = "kiln-attack-admin-key"
TPM_KEY = "kiln-attack-tpm-key"
RPM_KEY = "kiln-attack-rpm-key"


def key_line(name, key, **q):
    return json.dumps({"id": name, "sha256": hashlib.sha256(key.encode()).hexdigest(),
                       "rpm": q.get("rpm", 0), "tpm": q.get("tpm", 0), "max_concurrent": 0,
                       "admin": q.get("admin", False)})


class Server:
    def __init__(self, kiln, plan, tmp, *flags):
        keys = Path(tmp) / "keys.jsonl"
        keys.write_text("\n".join([key_line("admin", KEY, admin=True),
                                   key_line("tpm", TPM_KEY, tpm=50),
                                   key_line("rpm", RPM_KEY, rpm=5)]) + "\n")
        os.chmod(keys, 0o600)
        self.proc = subprocess.Popen([kiln, "serve", plan, "--port", "0", "--api-keys", str(keys),
                                      "--access-log", "false", *flags],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        m = re.search(r"http://[^:]+:(\d+)", line)
        if not m:
            raise SystemExit(f"kiln serve did not start: {line!r} {self.proc.stderr.read()[-2000:]}")
        self.port = int(m[1])
        self.peak_rss = 0
        self._stop = threading.Event()
        threading.Thread(target=lambda: [None for _ in self.proc.stderr], daemon=True).start()
        threading.Thread(target=self._watch_rss, daemon=True).start()

    def rss_mib(self):
        try:
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        except OSError:
            pass
        return 0.0

    def _watch_rss(self):
        while not self._stop.is_set():
            self.peak_rss = max(self.peak_rss, self.rss_mib())
            time.sleep(0.05)

    def reset_peak(self):
        self.peak_rss = self.rss_mib()

    def stop(self, timeout=120):
        self._stop.set()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return -9


def request(port, path, body=None, key=KEY, timeout=120):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    if body is not None:
        headers["Content-Type"] = "application/json"
    conn.request("POST" if body is not None else "GET", path,
                 json.dumps(body) if body is not None else None, headers)
    r = conn.getresponse()
    data = r.read()
    conn.close()
    return r.status, data


def stream(port, body, key=KEY, cut_after=None, timeout=300):
    """(status, token times) of a streamed completion; cut_after: close after that many events."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    conn.request("POST", "/v1/completions", json.dumps(dict(body, stream=True)),
                 {"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    r = conn.getresponse()
    if r.status != 200:
        r.read()
        conn.close()
        return r.status, [], False
    times, done = [], False
    while True:
        line = r.readline()
        if not line:
            break
        if line.startswith(b"data: [DONE]"):
            done = True
            break
        if line.startswith(b"data: {"):
            times.append(time.perf_counter())
            if cut_after is not None and len(times) >= cut_after:
                conn.sock.shutdown(socket.SHUT_RDWR)
                break
    conn.close()
    return 200, times, done


def tpot(times):
    return (times[-1] - times[0]) / (len(times) - 1) if len(times) > 1 else float("nan")


def pct(values, q):
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


class Slowloris:
    """n connections, each sending a request head a byte per second, reopened when closed."""

    def __init__(self, port, n):
        self.port, self.n, self.socks, self.stop_ev = port, n, [], threading.Event()
        self.closed = 0
        self.t = threading.Thread(target=self._run, daemon=True)

    def _open(self):
        try:
            s = socket.create_connection(("127.0.0.1", self.port), timeout=5)
            s.setblocking(False)
            s.send(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n")
            return s
        except OSError:
            return None

    def _run(self):
        self.socks = [s for s in (self._open() for _ in range(self.n)) if s]
        while not self.stop_ev.is_set():
            for i, s in enumerate(self.socks):
                try:
                    s.send(b"X")
                except OSError:
                    self.closed += 1
                    s.close()
                    self.socks[i] = self._open() or s
            self.stop_ev.wait(1.0)

    def start(self):
        self.t.start()
        return self

    def stop(self):
        self.stop_ev.set()
        self.t.join()
        for s in self.socks:
            s.close()


def streaming_load(port, clients, seconds, body, results):
    stop_at = time.time() + seconds

    def client():
        while time.time() < stop_at:
            try:
                status, times, done = stream(port, body)
            except OSError as e:
                results.append(("error", str(e)))
                continue
            results.append((status, done))
            if status == 503:
                time.sleep(0.2)
    threads = [threading.Thread(target=client, daemon=True) for _ in range(clients)]
    for t in threads:
        t.start()
    return threads


def health_probe(port, seconds, out):
    stop_at = time.time() + seconds
    while time.time() < stop_at:
        t0 = time.perf_counter()
        try:
            status, _ = request(port, "/health", key=None, timeout=10)
        except OSError:
            status = None
        out.append((status, time.perf_counter() - t0))
        time.sleep(0.1)


def flood(port, head, body_piece, pieces):
    """Sends `head` then `pieces` x `body_piece`; the status the server answered."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    sent = 0
    try:
        s.sendall(head)
        for _ in range(pieces):
            s.sendall(body_piece)
            sent += len(body_piece)
    except OSError:
        pass
    s.settimeout(10)
    got = b""
    try:
        while b"\r\n" not in got:
            piece = s.recv(4096)
            if not piece:
                break
            got += piece
    except OSError:
        pass
    s.close()
    m = re.match(rb"HTTP/1\.1 (\d{3})", got)
    return (int(m[1]) if m else None), sent


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kiln", required=True, help="a kiln binary (a release build)")
    ap.add_argument("--slow", type=int, default=1000, help="slow connections (default 1000)")
    ap.add_argument("--seconds", type=float, default=20, help="length of the loaded phases")
    ap.add_argument("--capacity", type=int, default=8,
                    help="the server's --max-queue; the overload is 10x this")
    ap.add_argument("--drain-timeout", type=float, default=10)
    ap.add_argument("plan")
    args = ap.parse_args()
    os.environ["NO_PROXY"] = "127.0.0.1,localhost"
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 4 * args.slow + 1024)), hard))
    rows = []

    def row(attack, what, value, goal, ok):
        rows.append((attack, what, value, goal, "yes" if ok else "NO"))
        print(f"  {attack}: {what} = {value} (goal {goal}): {'ok' if ok else 'MISSED'}", flush=True)

    body = {"prompt": [5, 17, 99, 3], "max_tokens": 48, "ignore_eos": True, "temperature": 0}
    with tempfile.TemporaryDirectory() as tmp:
        server = Server(args.kiln, args.plan, tmp, "--max-queue", str(args.capacity),
                        "--max-seqs", str(max(1, args.capacity // 2)),
                        "--drain-timeout-s", str(args.drain_timeout))
        port = server.port
        try:
            # baseline
            base = [tpot(stream(port, body)[1]) for _ in range(5)]
            base_tpot = statistics.median(base)
            row("baseline", "TPOT unloaded, ms", f"{base_tpot * 1e3:.1f}", "-", True)
            rss0 = server.rss_mib()
            row("baseline", "RSS, MiB", f"{rss0:.0f}", "-", True)

            # slowloris + 10x streaming overload
            server.reset_peak()
            slow = Slowloris(port, args.slow).start()
            time.sleep(2)
            results, probes = [], []
            threads = streaming_load(port, 10 * args.capacity, args.seconds, body, results)
            health_probe(port, args.seconds, probes)
            for t in threads:
                t.join()
            slow.stop()
            lat = [t for s, t in probes if s == 200]
            p99 = pct(lat, 0.99) * 1e3
            row("slowloris", f"/health p99 under {args.slow} slow + 10x, ms", f"{p99:.1f}", "<= 100",
                p99 <= 100 and len(lat) == len(probes))
            row("slowloris", "/health p50, ms", f"{pct(lat, 0.5) * 1e3:.1f}", "-", True)
            ok200 = [d for s, d in results if s == 200]
            lost = sum(1 for d in ok200 if not d) + sum(1 for r in results if r[0] == "error")
            row("slowloris", "accepted streams finished", f"{sum(ok200)}", "-", True)
            row("slowloris", "accepted streams lost", f"{lost}", "0", lost == 0)
            row("slowloris", "503 refusals", f"{sum(1 for s, _ in results if s == 503)}", "-", True)
            row("slowloris", "slow connections cut (408/closed)", f"{slow.closed}", "-", True)
            row("slowloris", "peak RSS, MiB", f"{server.peak_rss:.0f}", "bound (serve.md)", True)

            # floods without a key
            server.reset_peak()
            st, sent = flood(port, b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n"
                             b"Transfer-Encoding: chunked\r\n\r\n",
                             b"100000\r\n" + b"a" * (1 << 20) + b"\r\n", 512)
            row("floods", "512 MiB chunked body, no key: status", f"{st}", "413", st == 413)
            st, sent = flood(port, b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n"
                             b"Content-Length: 536870912\r\n\r\n", b"a" * (1 << 20), 512)
            row("floods", "512 MiB Content-Length body, no key: status", f"{st}", "413", st == 413)
            st, sent = flood(port, b"GET /v1/models HTTP/1.1\r\n",
                             b"".join(b"X-%d: %s\r\n" % (i, b"v" * 1000) for i in range(1000)), 200)
            row("floods", "200 MiB of headers: status", f"{st}", "431", st == 431)
            grew = server.peak_rss - rss0
            row("floods", "RSS growth over baseline, MiB", f"{grew:.0f}", "<= 64", grew <= 64)

            # pipelining
            s = socket.create_connection(("127.0.0.1", port), timeout=30)
            auth = f"Authorization: Bearer {KEY}\r\n".encode()
            reqs = b"".join(b"GET /v1/models HTTP/1.1\r\n" + auth + b"X-N: %d\r\n\r\n" % i
                            for i in range(99))
            s.sendall(reqs + b"GET /health HTTP/1.1\r\nConnection: close\r\n\r\n")
            got = b""
            try:
                while True:
                    piece = s.recv(1 << 16)
                    if not piece:
                        break
                    got += piece
            except OSError:
                pass
            s.close()
            codes = re.findall(rb"HTTP/1\.1 (\d{3})", got)
            row("pipelining", "100 requests in one write: answered in order",
                f"{len(codes)}", "100", len(codes) == 100 and all(c == b"200" for c in codes))

            # oversized prompts from one client while others stream
            stop = threading.Event()
            refused = [0]

            def big_prompts():
                # 3.5 MB (past max_prompt_bytes) and 0.9 MB (within it, far past
                # the context: tokenizing stops at the context) in turn.
                texts = ["hello " * ((7 << 19) // 6), "hello " * ((9 << 17) // 6)]
                i = 0
                while not stop.is_set():
                    st, _ = request(port, "/v1/completions",
                                    {"prompt": texts[i % 2], "max_tokens": 1})
                    refused[0] += st == 400
                    i += 1
            flooder = threading.Thread(target=big_prompts, daemon=True)
            flooder.start()
            time.sleep(1)
            loaded = [tpot(stream(port, body)[1]) for _ in range(5)]
            stop.set()
            flooder.join()
            ratio = statistics.median(loaded) / base_tpot
            row("prompts", "TPOT with an oversized-prompt flood / unloaded", f"{ratio:.2f}", "<= 1.5",
                ratio <= 1.5)
            row("prompts", "oversized prompts refused with 400", f"{refused[0]}", "> 0", refused[0] > 0)

            # quota games: each stream cut after 2 tokens consumed at least its
            # 4 prompt tokens and 2 generated ones, so 10 pass tpm 50.
            statuses = []
            for _ in range(10):
                statuses.append(stream(port, dict(body, max_tokens=200), key=TPM_KEY,
                                       cut_after=2)[0])
                if statuses[-1] == 429:
                    break
            request(port, "/v1/completions", dict(body, max_tokens=200, timeout=0.05), key=TPM_KEY)
            time.sleep(1)
            st, data = request(port, "/v1/completions", dict(body, max_tokens=1), key=TPM_KEY)
            row("quotas", "tpm 50 after cut streams and timeouts: status",
                f"{st} (streams: {len(statuses)})", "429", st == 429)
            # rpm 5 while 2x capacity clients keep the queue full: refusals (503)
            # must not use up the key's rpm.
            results = []
            threads = streaming_load(port, 2 * args.capacity, 3, dict(body, max_tokens=200),
                                     results)
            time.sleep(1)
            during = [request(port, "/v1/completions", dict(body, max_tokens=1), key=RPM_KEY)[0]
                      for _ in range(5)]
            for t in threads:
                t.join()
            left = 5 - during.count(200)
            after = [request(port, "/v1/completions", dict(body, max_tokens=1), key=RPM_KEY)[0]
                     for _ in range(left + 1)]
            row("quotas", "rpm 5: statuses while full -> after", f"{during} -> {after}",
                "the rest of rpm 5 passes, then 429",
                during.count(503) > 0 and after == [200] * left + [429])

            # SIGTERM under load
            slow = Slowloris(port, min(args.slow, 500)).start()
            time.sleep(1)
            results = []
            threads = streaming_load(port, 10 * args.capacity, 3, body, results)
            time.sleep(1)
            t0 = time.time()
            code = server.stop(timeout=args.drain_timeout + 30)
            took = time.time() - t0
            slow.stop()
            for t in threads:
                t.join()
            row("sigterm", "seconds to exit under load", f"{took:.1f}",
                f"<= drain_timeout_s {args.drain_timeout:g}", code == 0 and took <= args.drain_timeout)
        finally:
            server.stop()

    print()
    print("| attack | measure | value | goal | met |")
    print("| --- | --- | ---: | --- | --- |")
    for r in rows:
        print("| " + " | ".join(str(x) for x in r) + " |")
    return 0 if all(r[4] == "yes" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
