#!/usr/bin/env python3
"""`kiln serve --replicas 2`: a front end over two replica processes (docs/serve.md#replicas).

    serve_replicas.py --kiln KILN DEMO_PLAN

Checks:
  - `--replicas 0` and `--replicas 2 --tp 2` are refused with errors naming them;
    `serve --help` lists --replicas; a plan the replicas cannot open fails the
    start with an error naming the replica (and its own error, prefixed);
  - two replica processes start (KILN_REPLICA=0 and 1 in their environment);
    a replica's own port refuses the client's key (it takes only the front
    end's internal key); /health, /ready and /metrics at the front end, with
    the key rules of one server; kiln_replicas{state="up"} is 2;
  - completions whole and streamed through the front end, greedy text equal
    to each other; a stream without include_usage gets no usage chunk, one
    with it does; requests spread over both replicas (each one's
    generation-token counter grows);
  - the key's rpm quota is kept at the front end (429 with Retry-After);
  - SIGKILL to replica 0 while streaming and non-streaming requests run on
    both: every request ends within a bound; those on replica 0 (as many as
    /metrics counted in flight there) get an error naming it (502, or an
    error event then [DONE]), the others finish whole; the supervisor starts
    a new replica 0 (a new pid) that becomes ready; kiln_replica_restarts_total
    and kiln_replica_errors_total count it; later requests succeed on both;
  - SIGTERM during streams: they finish, the front end exits 0, and no
    replica process is left.
"""
import argparse
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from serve import Server, check, failures, metric, raw, sse_request, wait_until  # noqa: E402


def replicas_of(pid):
    """{replica index: pid} of the front end's children."""
    kids = []
    # The supervisor's thread forks them, so look under every thread.
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            kids += (task / "children").read_text().split()
        except OSError:
            pass
    out = {}
    for k in kids:
        try:
            env = Path(f"/proc/{k}/environ").read_bytes().split(b"\0")
            if "zombie" in Path(f"/proc/{k}/status").read_text():
                continue
        except OSError:
            continue
        for e in env:
            if e.startswith(b"KILN_REPLICA="):
                out[int(e.split(b"=")[1])] = int(k)
    return out


def series(server, key, name, label):
    """{label value: sample value} of family `name` in the front end's /metrics."""
    _, _, text = raw(server, "/metrics", key)
    out = {}
    for line in text.splitlines():
        m = re.match(name + r"\{([^}]*)\} (\S+)$", line)
        if m:
            labels = dict(re.findall(r'(\w+)="([^"]*)"', m[1]))
            if label in labels:
                out[labels[label]] = out.get(labels[label], 0) + float(m[2])
    return out


def complete(server, key, body):
    """(status, parsed body) of a whole completion, waiting up to 180 s."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=180)
    conn.request("POST", "/v1/completions", json.dumps(body),
                 {"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    r = conn.getresponse()
    text = r.read().decode("utf-8", "replace")
    conn.close()
    return r.status, (json.loads(text) if text.startswith("{") else text)


def main():
    os.environ["NO_PROXY"] = "127.0.0.1,localhost"
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kiln", required=True)
    ap.add_argument("plan")
    args = ap.parse_args()
    kiln, plan = args.kiln, args.plan

    r = subprocess.run([kiln, "serve", plan, "--replicas", "0", "--allow-no-auth", "true"],
                       capture_output=True, text=True, timeout=60)
    check(r.returncode == 2 and "replicas" in r.stderr, f"--replicas 0 refused: {r.returncode} "
          f"{r.stderr.strip()[-160:]}")
    r = subprocess.run([kiln, "serve", plan, "--replicas", "2", "--tp", "2", "--allow-no-auth",
                        "true"], capture_output=True, text=True, timeout=60)
    check(r.returncode == 2 and "--tp" in r.stderr and "--replicas" in r.stderr,
          f"--replicas with --tp refused: {r.returncode} {r.stderr.strip()[-160:]}")
    r = subprocess.run([kiln, "serve", "--help"], capture_output=True, text=True)
    check("--replicas" in r.stdout, "serve --help lists --replicas")
    r = subprocess.run([kiln, "serve", str(Path(plan).parent / "no-such.plan"), "--replicas",
                        "2", "--allow-no-auth", "true"], capture_output=True, text=True,
                       timeout=120)
    check(r.returncode not in (0, None) and "before it was ready" in r.stderr
          and "[replica " in r.stderr and "no-such.plan" in r.stderr,
          f"a replica that cannot start fails the start, naming it: {r.returncode} "
          f"{r.stderr.strip()[-300:]}")

    with tempfile.TemporaryDirectory() as tmp:
        lines = subprocess.run([kiln, "keys", "new", "app"], capture_output=True,
                               text=True).stdout.splitlines()
        key = lines[0]
        limited = subprocess.run([kiln, "keys", "new", "limited"], capture_output=True,
                                 text=True).stdout.splitlines()
        entry = json.loads(limited[1])
        entry["rpm"] = 2
        keys_file = Path(tmp) / "keys.jsonl"
        keys_file.write_text(lines[1] + "\n" + json.dumps(entry) + "\n")
        s = Server(kiln, plan, "--replicas", "2", "--api-keys", str(keys_file),
                   "--http-threads", "64", "--max-queue", "64", "--max-seqs", "1")
        try:
            serve_and_kill(s, key, limited[0])
        finally:
            if s.proc.poll() is None:
                s.proc.kill()
    print(f"{len(failures)} check(s) failed" if failures else "all checks passed")
    return 1 if failures else 0


def serve_and_kill(s, key, limited_key):
    reps = replicas_of(s.proc.pid)
    check(sorted(reps) == [0, 1], f"two replica processes: {reps}")
    # stderr is read by a thread of the test: the lines may land a moment
    # after the front end's stdout said it listens.
    def ports_in_log():
        return {int(i): int(p) for i, p in re.findall(r"replica (\d+) \(pid \d+\) ready on "
                                                      r"127\.0\.0\.1:(\d+)", "".join(s.log))}
    ports = wait_until(ports_in_log, lambda p: sorted(p) == [0, 1], seconds=10, every=0.1)
    check(sorted(ports) == [0, 1], f"the log says where each replica listens: {ports}")
    if 0 in ports:
        class Direct:
            port = ports[0]
        st, _, _ = raw(Direct, "/v1/models", key)
        check(st == 401, f"a replica refuses the client's key (only the front end's works): {st}")

    check(raw(s, "/health")[0] == 200, "/health without a key")
    check(raw(s, "/ready")[0] == 401 and raw(s, "/metrics")[0] == 401,
          "/ready and /metrics need a key")
    check(raw(s, "/ready", key)[0] == 200, "/ready with a key")
    up = series(s, key, "kiln_replicas", "state")
    check(up.get("up") == 2 and up.get("total") == 2, f"kiln_replicas: {up}")
    st, _, body = raw(s, "/v1/models", key)
    check(st == 200 and json.loads(body)["data"][0]["object"] == "model", f"/v1/models: {st}")

    # Whole and streamed, greedy: the same text whichever replica answers.
    req = {"prompt": [5, 17, 99, 3], "max_tokens": 12, "temperature": 0, "ignore_eos": True}
    st, whole = complete(s, key, req)
    check(st == 200 and whole["usage"]["completion_tokens"] == 12, f"completion: {st}")
    st, events, _ = sse_request(s.port, key, dict(req, stream=True))
    chunks = [json.loads(e) for e in events[:-1]]
    text = "".join(c["choices"][0]["text"] for c in chunks if c.get("choices"))
    check(st == 200 and events[-1] == "[DONE]" and st == 200 and text == whole["choices"][0]["text"],
          f"streamed equals whole: {text!r} vs {whole['choices'][0]['text'] if st == 200 else ''!r}")
    check(not any("usage" in c for c in chunks), "no usage chunk unless asked for")
    st, events, _ = sse_request(s.port, key, dict(req, stream=True,
                                                  stream_options={"include_usage": True}))
    last = json.loads(events[-2]) if len(events) > 1 else {}
    check(last.get("choices") == [] and last.get("usage", {}).get("completion_tokens") == 12,
          f"include_usage gives the usage chunk: {events[-2:]}")
    st, body = complete(s, key, dict(req, bogus=1))
    check(st == 400 and body["error"]["param"] == "bogus", f"a replica's 400 is relayed: {st}")

    # Spread: eight requests at once land on both replicas.
    before = series(s, key, "kiln_generation_tokens_total", "replica")
    results = []
    threads = [threading.Thread(target=lambda: results.append(complete(s, key, req)[0]))
               for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    after = series(s, key, "kiln_generation_tokens_total", "replica")
    check(results == [200] * 8, f"eight requests at once: {results}")
    grew = {r: after.get(r, 0) - before.get(r, 0) for r in ("0", "1")}
    check(grew["0"] > 0 and grew["1"] > 0, f"both replicas generated: {grew}")

    st, _ = complete(s, limited_key, req)
    st2, _ = complete(s, limited_key, req)
    st3, headers, _ = raw(s, "/v1/completions", limited_key, json.dumps(req))
    check([st, st2, st3] == [200, 200, 429] and "retry-after" in headers,
          f"rpm 2 at the front end: {[st, st2, st3]}")

    kill_one(s, key)

    # SIGTERM drains: streams in flight finish, the front end exits 0.
    reps = replicas_of(s.proc.pid)
    out = [None] * 4
    started = threading.Semaphore(0)
    body = {"prompt": [42, 7, 7], "max_tokens": 60, "temperature": 0, "ignore_eos": True,
            "stream": True}
    threads = [threading.Thread(target=lambda i=i: out.__setitem__(
        i, sse_request(s.port, key, body, on_first=started.release)[:2])) for i in range(4)]
    for t in threads:
        t.start()
    got = sum(started.acquire(timeout=60) for _ in range(4))
    s.proc.send_signal(signal.SIGTERM)
    for t in threads:
        t.join(120)
    done = sum(1 for o in out if o and o[0] == 200 and o[1][-1] == "[DONE]"
               and '"finish_reason":"length"' in o[1][-2])
    check(got == 4 and done == 4, f"SIGTERM during 4 streams: {done} finished ({got} started)")
    try:
        code = s.proc.wait(60)
    except subprocess.TimeoutExpired:
        code = None
    check(code == 0, f"the front end exits 0 after the drain: {code}")
    time.sleep(0.5)
    left = [p for p in reps.values() if Path(f"/proc/{p}").exists()
            and "zombie" not in Path(f"/proc/{p}/status").read_text()]
    check(len(reps) == 2 and not left, f"no replica left running: {reps} {left}")


def kill_one(s, key):
    """SIGKILL replica 0 while requests run on both; then its restart."""
    reps = replicas_of(s.proc.pid)
    n_stream, n_whole = 6, 4
    out = {}
    # One sequence a step (--max-seqs 1) and six choices each: a replica
    # takes a second or more per request, so most are still running at the
    # kill (the first on a replica may have finished: it counts as finished).
    max_tokens = 200  # the demo model holds 256 positions
    body = {"prompt": [300, 301, 302], "max_tokens": max_tokens, "n": 6, "temperature": 0,
            "ignore_eos": True}

    def stream(i):
        out[("s", i)] = sse_request(s.port, key, dict(body, stream=True))[:2]

    def whole(i):
        out[("w", i)] = complete(s, key, body)

    threads = [threading.Thread(target=stream, args=(i,)) for i in range(n_stream)]
    threads += [threading.Thread(target=whole, args=(i,)) for i in range(n_whole)]
    for t in threads:
        t.start()
    # Every request is in flight once the front end counts them all (a
    # moment more, and each has reached its replica). What is in flight just
    # before the kill decides what must fail: a request that finished in the
    # moment between counts as finished below.
    seen = wait_until(lambda: series(s, key, "kiln_replica_in_flight", "replica"),
                      lambda v: sum(v.values()) == n_stream + n_whole, seconds=30, every=0.1)
    check(sum(seen.values()) == n_stream + n_whole,
          f"all {n_stream + n_whole} requests reached the replicas: {seen}")
    time.sleep(0.5)
    in_flight = series(s, key, "kiln_replica_in_flight", "replica")
    on_dead = int(in_flight.get("0", 0))
    check(on_dead > 0 and in_flight.get("1", 0) > 0, f"requests on both replicas: {in_flight}")
    t0 = time.time()
    if reps.get(0, 0) > 1:  # never kill(0) or kill(-1)
        os.kill(reps[0], signal.SIGKILL)
    for t in threads:
        t.join(max(1.0, 180 - (time.time() - t0)))
    check(not any(t.is_alive() for t in threads), "every request ended (none hangs)")
    errors, finished, other = 0, 0, []
    for k, (st, payload) in out.items():
        if k[0] == "s":
            last = payload[-2] if st == 200 and len(payload) > 1 else ""
            if st == 200 and payload[-1] == "[DONE]" and '"finish_reason":"length"' in last:
                finished += 1
            elif st == 200 and payload[-1] == "[DONE]" and "replica 0" in last \
                    and "replica_failed" in last:
                errors += 1
            else:
                other.append((k, st, payload[-2:]))
        else:
            if st == 200 and payload["usage"]["completion_tokens"] == 6 * max_tokens:
                finished += 1
            elif st == 502 and payload["error"]["code"] == "replica_failed" \
                    and "replica 0" in payload["error"]["message"]:
                errors += 1
            else:
                other.append((k, st, str(payload)[:200]))
    check(not other, f"every request either finished or got the replica's error: {other}")
    check(errors == on_dead and finished == n_stream + n_whole - on_dead,
          f"the {on_dead} requests on replica 0 failed ({errors}), the rest finished ({finished})")

    # The supervisor restarts it: a new process, ready, back in the balance.
    up = wait_until(lambda: series(s, key, "kiln_replicas", "state"),
                    lambda v: v.get("up") == 2, seconds=120)
    new = replicas_of(s.proc.pid)
    check(up.get("up") == 2 and new.get(0) not in (None, reps[0]) and new.get(1) == reps[1],
          f"replica 0 restarted: {reps} -> {new}, {up}")
    restarts = series(s, key, "kiln_replica_restarts_total", "replica")
    failed = series(s, key, "kiln_replica_errors_total", "replica")
    check(restarts.get("0") == 1 and restarts.get("1", 0) == 0, f"restarts counted: {restarts}")
    check(failed.get("0") == on_dead, f"failed requests counted: {failed}")
    said = wait_until(lambda: "".join(s.log),
                      lambda log: "replica 0 (pid" in log and "restarting it in" in log,
                      seconds=10, every=0.1)
    check("replica 0 (pid" in said and "restarting it in" in said,
          "the log says which replica died and that it restarts")
    req = {"prompt": [5, 17, 99, 3], "max_tokens": 8, "temperature": 0, "ignore_eos": True}
    results = []
    threads = [threading.Thread(target=lambda: results.append(complete(s, key, req)[0]))
               for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    tokens = series(s, key, "kiln_generation_tokens_total", "replica")
    check(results == [200] * 6 and tokens.get("0", 0) > 0,
          f"after the restart requests succeed, on the new replica 0 too: {results} {tokens}")


if __name__ == "__main__":
    sys.exit(main())
