#!/usr/bin/env python3
"""`kiln serve` against hostile clients, on loopback, each check bounded.

    serve_hostile.py --kiln KILN PLAN

Every check is one that the server before docs/serve.md#hostile-clients
failed:
  - memory without a key: a chunked body past max_body_bytes gets 413 before
    much more than the limit was sent; 1,000 header fields get 431;
  - slow clients: 200 connections sending a byte at a time hold no worker
    (the server has 8): /health and a completion still answer at once, and the
    slow ones get 408 when header_timeout_s passes;
  - SIGTERM with slow clients connected exits within drain_timeout_s;
  - pipelined requests are answered, in order;
  - quotas are exact: the tokens of streams the client cuts short and of
    requests that time out are charged (the next request gets 429 on tpm),
    the access log and kiln_generation_tokens_total agree, and requests
    refused with 503 queue_full do not use up rpm; through --replicas too (the
    front end cancels the stream on its replica and reads what it consumed);
  - a prompt longer than the context is refused with 400 (tokenized on the
    request's thread, which stops at the context), one past max_prompt_bytes
    before any tokenizing; a response bound (prompts x n x logprobs);
  - lower-case "bearer", control bytes of a URL escaped in the access log,
    random response ids, "usage": null in chunks with include_usage,
    response_format text, logit_bias, echo, keys files writable by others refused, `kiln keys
    new > FILE` made 0600, a reload pointed at a FIFO refused at once.
"""
import argparse
import hashlib
import http.client
import json
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from serve import Server, check, failures, metric, raw  # noqa: E402


def connect(server):
    s = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    return s


def read_status(sock, timeout=10):
    """The status code of the first response on `sock`, or None (closed, timed out)."""
    sock.settimeout(timeout)
    got = b""
    try:
        while b"\r\n" not in got:
            piece = sock.recv(4096)
            if not piece:
                break
            got += piece
    except (socket.timeout, ConnectionResetError):
        pass
    m = re.match(rb"HTTP/1\.1 (\d{3})", got)
    return int(m[1]) if m else None


def key_line(name, key, **quotas):
    return json.dumps({"id": name, "sha256": hashlib.sha256(key.encode()).hexdigest(),
                       "rpm": quotas.get("rpm", 0), "tpm": quotas.get("tpm", 0),
                       "max_concurrent": 0, "admin": quotas.get("admin", False)})


def memory_without_a_key(server):
    s = connect(server)
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
    chunk = b"100000\r\n" + b"a" * (1 << 20) + b"\r\n"
    sent, answered_at = 0, None
    try:
        for _ in range(64):
            s.sendall(chunk)
            sent += 1
            # Has the answer come while the body is still being sent?
            s.setblocking(False)
            try:
                if s.recv(1, socket.MSG_PEEK):
                    answered_at = sent
                    break
            except BlockingIOError:
                pass
            finally:
                s.setblocking(True)
            time.sleep(0.02)
    except OSError:
        answered_at = answered_at or sent
    status = read_status(s)
    s.close()
    check(status == 413, f"a chunked body past max_body_bytes without a key gets 413 ({status})")
    check(answered_at is not None and answered_at <= 8,
          f"... as soon as the 4 MiB limit is passed (answered after {answered_at} MiB of 64)")
    s = connect(server)
    s.sendall(b"GET /v1/models HTTP/1.1\r\n" + b"".join(b"X-%d: v\r\n" % i for i in range(1000))
              + b"\r\n")
    status = read_status(s)
    s.close()
    check(status == 431, f"1,000 header fields get 431 ({status})")


def slow_clients(server, key):
    slow = []
    for _ in range(200):
        s = connect(server)
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n")
        slow.append(s)
    stop = threading.Event()

    def trickle():
        while not stop.is_set():
            for s in slow:
                try:
                    s.sendall(b"X")
                except OSError:
                    pass
            time.sleep(0.2)
    t = threading.Thread(target=trickle, daemon=True)
    t.start()
    worst = 0.0
    for _ in range(10):
        t0 = time.time()
        status, _, _ = raw(server, "/health")
        worst = max(worst, time.time() - t0)
        check(status == 200, f"/health answers under 200 slow clients ({status})")
    check(worst < 1.0, f"/health answers promptly under 200 slow clients (worst {worst:.3f} s)")
    status, _, body = raw(server, "/v1/completions", key,
                          json.dumps({"prompt": [5, 17, 99], "max_tokens": 4}))
    check(status == 200, f"a completion is served under 200 slow clients ({status} {body[:200]})")
    # header_timeout_s is 2: each slow client gets 408 soon after.
    statuses = [read_status(s, timeout=10) for s in slow[:20]]
    stop.set()
    check(all(x == 408 for x in statuses), f"slow clients get 408 at header_timeout_s ({statuses})")
    for s in slow:
        s.close()


def pipelining(server, key):
    s = connect(server)
    auth = f"Authorization: Bearer {key}\r\n".encode()
    s.sendall(b"GET /v1/models HTTP/1.1\r\n" + auth + b"\r\n" + b"GET /health HTTP/1.1\r\n\r\n" +
              b"GET /v1/models/nope HTTP/1.1\r\n" + auth + b"Connection: close\r\n\r\n")
    got = b""
    s.settimeout(20)
    try:
        while True:
            piece = s.recv(65536)
            if not piece:
                break
            got += piece
    except socket.timeout:
        pass
    s.close()
    codes = [int(c) for c in re.findall(rb"HTTP/1\.1 (\d{3})", got)]
    check(codes == [200, 200, 404], f"pipelined requests are answered in order ({codes})")


def quotas(kiln, plan, tmp):
    key = "kiln-tpm-test-key"
    keys = Path(tmp) / "keys.jsonl"
    keys.write_text(key_line("tpm", key, tpm=10) + "\n" + key_line("rpm", "kiln-rpm-test", rpm=4)
                    + "\n")
    server = Server(kiln, plan, "--api-keys", str(keys), "--max-queue", "1",
                    "--max-seqs", "1")
    try:
        # Streams cut short after their first token: their tokens still count.
        cut_streams(server, key, 3)
        # A request that hits its timeout: charged too.
        raw(server, "/v1/completions", key,
            json.dumps({"prompt": [5, 17, 99], "max_tokens": 200, "ignore_eos": True,
                        "timeout": 0.05}))
        deadline = time.time() + 20
        while time.time() < deadline and metric(server, key, "kiln_requests_in_flight") > 0:
            time.sleep(0.2)
        status, _, body = raw(server, "/v1/completions", key,
                              json.dumps({"prompt": [5, 17], "max_tokens": 2}))
        check(status == 429 and "tpm" in body,
              f"tokens of cut-short and timed-out requests are charged: tpm 10 refuses ({status} "
              f"{body[:160]})")
        generated = metric(server, key, "kiln_generation_tokens_total")
        prompted = metric(server, key, "kiln_prompt_tokens_total")
        # rpm: refusals for a full queue do not count. One long request holds
        # the queue (max_queue 1); three more are refused 503, then four pass.
        rkey = "kiln-rpm-test"
        holder = threading.Thread(target=raw, args=(server, "/v1/completions", rkey, json.dumps(
            {"prompt": [5, 17, 99], "max_tokens": 250, "ignore_eos": True})))
        holder.start()
        time.sleep(0.5)
        refused = [raw(server, "/v1/completions", rkey,
                       json.dumps({"prompt": [5], "max_tokens": 1}))[0] for _ in range(3)]
        holder.join()
        check(refused == [503, 503, 503], f"a full queue refuses with 503 ({refused})")
        passed = [raw(server, "/v1/completions", rkey,
                      json.dumps({"prompt": [5], "max_tokens": 1}))[0] for _ in range(3)]
        check(passed == [200, 200, 200],
              f"503 refusals used no rpm: 1 + 3 requests fit rpm 4 ({passed})")
    finally:
        server.stop()
    time.sleep(0.3)
    log = "".join(server.log)
    logged = sum(int(m) for m in re.findall(r"key=tpm .*?completion_tokens=(\d+)", log))
    logged_prompt = sum(int(m) for m in re.findall(r"key=tpm .*?prompt_tokens=(\d+)", log))
    check(logged == generated and generated > 0,
          f"the access log's completion_tokens ({logged}) equal kiln_generation_tokens_total "
          f"({generated:.0f})")
    check(logged_prompt == prompted, f"the access log's prompt_tokens ({logged_prompt}) equal "
          f"kiln_prompt_tokens_total ({prompted:.0f})")


def cut_streams(server, key, count):
    """Streams of 40 tokens the client closes after the first event; their statuses."""
    statuses = []
    for i in range(count):
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
        conn.request("POST", "/v1/completions",
                     json.dumps({"prompt": [5, 17, 99, i], "max_tokens": 40, "stream": True,
                                 "ignore_eos": True}),
                     {"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
        r = conn.getresponse()
        statuses.append(r.status)
        if r.status != 200:
            r.read()
            conn.close()
            break
        r.readline()
        conn.sock.shutdown(socket.SHUT_RDWR)
        conn.close()
        time.sleep(0.5)
    return statuses


def replicas_quota(kiln, plan, tmp):
    """The same through --replicas: the front end cancels on the replica and reads the usage."""
    key = "kiln-tpm-front-end"
    keys = Path(tmp) / "fe-keys.jsonl"
    keys.write_text(key_line("tpm", key, tpm=10) + "\n")
    server = Server(kiln, plan, "--api-keys", str(keys), "--replicas", "2")
    try:
        statuses = cut_streams(server, key, 4)
        time.sleep(1)
        status, _, body = raw(server, "/v1/completions", key,
                              json.dumps({"prompt": [5, 17], "max_tokens": 2}))
        check(status == 429 and "tpm" in body,
              f"--replicas: cut-short streams are charged, tpm 10 refuses ({statuses} then "
              f"{status} {body[:160]})")
    finally:
        server.stop()
    time.sleep(0.3)
    log = "".join(server.log)
    cut = re.findall(r"key=tpm .*prompt_tokens=(\d+) completion_tokens=(\d+).*client disconnected",
                     log)
    check(cut and all(int(p) > 0 and int(c) > 0 for p, c in cut),
          f"--replicas: the access log counts the tokens of streams cut short ({cut})")


def prompts(server, key):
    t0 = time.time()
    status, _, body = raw(server, "/v1/completions", key,
                          json.dumps({"prompt": "hello " * 100000, "max_tokens": 1}))
    check(status == 400 and "context_length_exceeded" in body,
          f"a prompt past the context gets 400 ({status} {body[:200]})")
    status, _, body = raw(server, "/v1/completions", key,
                          json.dumps({"prompt": "a" * (1100 << 10), "max_tokens": 1}))
    check(status == 400 and "prompt_too_large" in body,
          f"a prompt past max_prompt_bytes gets 400 ({status} {body[:200]})")
    status, _, body = raw(server, "/v1/completions", key,
                          json.dumps({"prompt": ["x"] * 64, "n": 16, "max_tokens": 1}))
    check(status == 400 and "token streams" in body,
          f"prompts x n past the response bound gets 400 ({status} {body[:200]})")
    check(time.time() - t0 < 30, "the refusals were quick")


def small_findings(kiln, server, key, tmp):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    conn.request("GET", "/v1/models", headers={"Authorization": f"bearer {key}"})
    r = conn.getresponse()
    r.read()
    check(r.status == 200, f"'bearer' in lower case is accepted ({r.status})")
    conn.close()
    s = connect(server)
    s.sendall(b"GET /v1/models/x%1b[31mforged%07%7f HTTP/1.1\r\nConnection: close\r\n"
              b"Authorization: Bearer " + key.encode() + b"\r\n\r\n")
    check(read_status(s) == 404, "a model name with control bytes gets 404")
    s.close()
    ids = []
    for _ in range(2):
        status, _, body = raw(server, "/v1/completions", key,
                              json.dumps({"prompt": [5, 17], "max_tokens": 1,
                                          "response_format": {"type": "text"}}))
        check(status == 200, f"response_format text is accepted ({status} {body[:200]})")
        if status == 200:
            ids.append(json.loads(body)["id"])
    check(len(ids) == 2 and all(re.fullmatch(r"cmpl-[0-9a-f]{32}", i) for i in ids) and
          ids[0] != ids[1], f"response ids are 128 random bits ({ids})")
    # logit_bias and echo.
    status, _, ids_body = raw(server, "/v1/completions", key,
                              json.dumps({"prompt": [5, 17], "max_tokens": 3, "temperature": 0,
                                          "logit_bias": {"42": 100}, "logprobs": 0}))
    tokens = (json.loads(ids_body)["choices"][0]["logprobs"] or {}).get("tokens", []) \
        if status == 200 else []
    status, _, plain = raw(server, "/v1/completions", key,
                           json.dumps({"prompt": "Once upon", "max_tokens": 2, "temperature": 0}))
    status2, _, echoed = raw(server, "/v1/completions", key,
                             json.dumps({"prompt": "Once upon", "max_tokens": 2, "temperature": 0,
                                         "echo": True}))
    if status == 200 and status2 == 200:
        check(json.loads(echoed)["choices"][0]["text"] ==
              "Once upon" + json.loads(plain)["choices"][0]["text"],
              "echo puts the prompt before the completion")
    else:
        check(False, f"echo requests answered ({status}, {status2})")
    check(len(set(tokens)) == 1 and len(tokens) == 3,
          f"logit_bias +100 on one token makes greedy pick it every time ({tokens})")
    status, _, body = raw(server, "/v1/completions", key,
                          json.dumps({"prompt": [5], "max_tokens": 1,
                                      "response_format": {"type": "json_object"}}))
    check(status == 400 and "response_format" in body,
          f"response_format json_object is refused, naming it ({status})")
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    conn.request("POST", "/v1/completions",
                 json.dumps({"prompt": [5, 17], "max_tokens": 3, "stream": True,
                             "stream_options": {"include_usage": True}}),
                 {"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    events = [line[6:] for line in conn.getresponse().read().decode().splitlines()
              if line.startswith("data: {")]
    conn.close()
    chunks = [json.loads(e) for e in events]
    check(len(chunks) >= 2 and all("usage" in c and c["usage"] is None for c in chunks[:-1])
          and chunks[-1]["usage"] is not None, "chunks carry usage: null, the last the usage")
    # A reload pointed at a FIFO is refused at once.
    fifo = Path(tmp) / "plan.fifo"
    os.mkfifo(fifo)
    t0 = time.time()
    status, _, body = raw(server, "/admin/reload", key, json.dumps({"plan": str(fifo)}))
    check(status == 422 and "regular file" in body and time.time() - t0 < 10,
          f"a reload of a FIFO is refused at once ({status} {body[:200]})")
    # kiln keys new > FILE: 0600.
    out = Path(tmp) / "new.key"
    with open(out, "w") as f:
        os.chmod(out, 0o644)
        subprocess.run([kiln, "keys", "new", "x"], stdout=f, check=True)
    mode = stat.S_IMODE(out.stat().st_mode)
    check(mode == 0o600, f"kiln keys new > FILE leaves the file 0600 ({oct(mode)})")
    # A keys file writable by others is refused.
    bad = Path(tmp) / "open.jsonl"
    bad.write_text(key_line("a", "kiln-a") + "\n")
    os.chmod(bad, 0o666)
    r = subprocess.run([kiln, "serve", "--port", "0", "--api-keys", str(bad), server.plan],
                       capture_output=True, text=True, timeout=60)
    check(r.returncode != 0 and "chmod go-w" in r.stderr,
          f"a keys file writable by others is refused ({r.returncode} {r.stderr[-200:]})")


def main():
    os.environ["NO_PROXY"] = "127.0.0.1,localhost"
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kiln", required=True)
    ap.add_argument("plan")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        key = "kiln-hostile-test-admin"
        keys = Path(tmp) / "keys.jsonl"
        keys.write_text(key_line("admin", key, admin=True) + "\n")
        server = Server(args.kiln, args.plan, "--api-keys", str(keys), "--http-threads", "8",
                        "--header-timeout-s", "2", "--drain-timeout-s", "3")
        server.plan = args.plan
        try:
            memory_without_a_key(server)
            pipelining(server, key)
            prompts(server, key)
            small_findings(args.kiln, server, key, tmp)
            slow_clients(server, key)
            # SIGTERM with 50 slow clients connected: done within drain_timeout_s.
            slow = [connect(server) for _ in range(50)]
            for s in slow:
                s.sendall(b"GET /health HTTP/1.1\r\n")
            t0 = time.time()
            code = server.stop()
            took = time.time() - t0
            check(code == 0 and took < 3 + 2,
                  f"SIGTERM with slow clients ends within drain_timeout_s ({code}, {took:.1f} s)")
            for s in slow:
                s.close()
        finally:
            server.stop()
        log = "".join(server.log)
        check("x\\x1b[31mforged\\x07\\x7f" in log and "\x1b" not in log,
              "the access log escapes a URL's control bytes")
        quotas(args.kiln, args.plan, tmp)
        replicas_quota(args.kiln, args.plan, tmp)
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
