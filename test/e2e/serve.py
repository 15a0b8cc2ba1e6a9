#!/usr/bin/env python3
"""`kiln serve`: a real server on a free loopback port, driven by the openai SDK and curl.

    serve.py --kiln build/tools/kiln/kiln PLAN [--builder KILN --bert DIR]

PLAN is the demo decoder plan. Checks:
  - `kiln keys new` prints a key and a keys-file line holding its SHA-256;
  - /health needs no key; everything else does (401 without or with a wrong key);
  - /v1/models, /ready; completions whole and streamed (the streamed pieces add
    up to the whole text), temperature 0, usage and stream_options.include_usage;
  - a stop string spanning several tokens cuts the text before it;
  - seeds reproduce, n > 1, logprobs, token-id and list prompts;
  - errors in OpenAI's shape: unknown field (named), bad JSON, invalid UTF-8,
    413 body, 404 model; rpm quota gives 429 with Retry-After;
  - a second server with max_queue 2: the third request gets 503 and
    Retry-After at once; a client that disconnects cancels its request (the
    metrics count it and the KV blocks come back); a request timeout gives 504;
  - SIGTERM during 50 streaming requests: all 50 finish, the server exits 0;
  - with --demo: the demo fixture with a chat template: /v1/chat/completions
    whole and streamed, logprobs, equal to /v1/completions on the rendered text;
  - with --bert: /v1/embeddings on an encoder plan.
"""
import argparse
import hashlib
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

import openai

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


class Server:
    """A `kiln serve` process on port 0; the port is read from its first stdout line."""

    def __init__(self, kiln, plan, *flags):
        self.proc = subprocess.Popen([kiln, "serve", plan, "--port", "0", *flags],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        m = re.search(r"http://[^:]+:(\d+)", line)
        if not m:
            self.proc.kill()
            raise SystemExit(f"kiln serve did not start: {line!r} {self.proc.stderr.read()[-2000:]}")
        self.port = int(m[1])
        self.base = f"http://127.0.0.1:{self.port}"
        # Drain stderr (the access log) so the server never blocks on it.
        self.log = []
        threading.Thread(target=lambda: self.log.extend(self.proc.stderr), daemon=True).start()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return -9


def wait_until(probe, done, seconds=60, every=0.3):
    """Calls probe() until done(its result) or `seconds` pass; returns the last result."""
    deadline = time.time() + seconds
    while True:
        got = probe()
        if done(got) or time.time() >= deadline:
            return got
        time.sleep(every)


def raw(server, path, key=None, data=None, method=None):
    """(status, headers dict, body) of one request over http.client (no proxies)."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    if data is not None:
        headers["Content-Type"] = "application/json"
        data = data if isinstance(data, bytes) else data.encode()
    conn.request(method or ("POST" if data is not None else "GET"), path, body=data,
                 headers=headers)
    r = conn.getresponse()
    body = r.read().decode("utf-8", "replace")
    out = r.status, {k.lower(): v for k, v in r.getheaders()}, body
    conn.close()
    return out


def curl(server, path, key=None, data=None):
    """The same through the curl program; None where curl cannot reach loopback here."""
    cmd = ["curl", "--noproxy", "*", "-s", "-i", "--max-time", "60", server.base + path]
    if key:
        cmd += ["-H", f"Authorization: Bearer {key}"]
    if data is not None:
        cmd += ["-H", "Content-Type: application/json", "--data-binary", "@-"]
    r = subprocess.run(cmd, input=(data or "").encode(), capture_output=True)
    head, _, body = r.stdout.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    if r.returncode != 0 or not lines[0].startswith("HTTP"):
        return None
    return int(lines[0].split()[1]), body.decode("utf-8", "replace")


def metric(server, key, name):
    _, _, text = raw(server, "/metrics", key)
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name) and not line.startswith("#"):
            total += float(line.rsplit(" ", 1)[1])
    return total


def sse_request(port, key, body, on_first=None, read_all=True):
    """A streaming completion over http.client: (status, list of data payloads)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    conn.request("POST", "/v1/completions", json.dumps(body),
                 {"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    resp = conn.getresponse()
    if resp.status != 200:
        return resp.status, [resp.read().decode()], conn
    events = []
    while True:
        line = resp.readline()
        if not line:
            break
        line = line.decode().strip()
        if line.startswith("data: "):
            events.append(line[6:])
            if on_first and len(events) == 1:
                on_first()
                if not read_all:
                    return 200, events, conn
            if line == "data: [DONE]":
                break
    conn.close()
    return 200, events, conn


def basic(kiln, plan, tmp):
    r = subprocess.run([kiln, "keys", "new", "alice"], capture_output=True, text=True)
    lines = r.stdout.splitlines()
    check(r.returncode == 0 and len(lines) == 2, f"kiln keys new: two lines ({r.returncode})")
    key = lines[0]
    entry = json.loads(lines[1])
    check(entry["id"] == "alice" and entry["sha256"] == hashlib.sha256(key.encode()).hexdigest()
          and key not in lines[1], "the keys-file line holds the key's SHA-256, not the key")
    limited = subprocess.run([kiln, "keys", "new", "limited"], capture_output=True,
                             text=True).stdout.splitlines()
    lim_entry = json.loads(limited[1])
    lim_entry["rpm"] = 3
    keys_file = Path(tmp) / "keys.jsonl"
    keys_file.write_text(lines[1] + "\n" + json.dumps(lim_entry) + "\n")
    config = Path(tmp) / "serve.json"
    config.write_text(json.dumps({"api_keys": str(keys_file), "max_body_bytes": 65536,
                                  "model_name": "demo"}))
    bad_config = Path(tmp) / "bad.json"
    bad_config.write_text(json.dumps({"api_keys": str(keys_file), "max_qeue": 3}))
    r = subprocess.run([kiln, "serve", plan, "--config", str(bad_config)], capture_output=True,
                       text=True, timeout=60)
    check(r.returncode == 2 and "max_qeue" in r.stderr, f"unknown settings key: exit {r.returncode} {r.stderr.strip()[-120:]}")
    r = subprocess.run([kiln, "serve", "--help"], capture_output=True, text=True)
    check(all(f"--{k.replace('_', '-')}" in r.stdout for k in
              ["host", "port", "api_keys", "max_queue", "request_timeout_s", "drain_timeout_s",
               "max_body_bytes", "ready_interval_s"]), "serve --help lists every settings key")

    s = Server(kiln, plan, "--config", str(config))
    client = openai.OpenAI(base_url=s.base + "/v1", api_key=key, max_retries=0, timeout=120)
    try:
        st, _, body = raw(s, "/health")
        check(st == 200, f"/health without a key: {st}")
        for path in ["/v1/models", "/ready", "/metrics"]:
            st, _, body = raw(s, path)
            check(st == 401 and json.loads(body)["error"]["code"] == "invalid_api_key",
                  f"{path} without a key: {st}")
        st, _, body = raw(s, "/v1/models", "kiln-wrong")
        check(st == 401, f"wrong key: {st}")
        try:
            openai.OpenAI(base_url=s.base + "/v1", api_key="nope", max_retries=0).models.list()
            check(False, "SDK with a wrong key raises AuthenticationError")
        except openai.AuthenticationError:
            check(True, "SDK with a wrong key raises AuthenticationError")
        via_curl = curl(s, "/v1/completions", key,
                        json.dumps({"prompt": "The meaning of", "max_tokens": 4, "temperature": 0}))
        if via_curl is None:
            print("skip curl: this machine's curl cannot reach loopback")
        else:
            check(via_curl[0] == 200 and json.loads(via_curl[1])["usage"]["completion_tokens"] == 4,
                  f"curl completion: {via_curl[0]}")
        models = client.models.list()
        check([m.id for m in models.data] == ["demo"], f"/v1/models: {[m.id for m in models.data]}")
        st, _, _ = raw(s, "/ready", key)
        check(st == 200, f"/ready: {st}")

        prompt = "The meaning of the Python interpreter"
        whole = client.completions.create(model="demo", prompt=prompt, max_tokens=24,
                                          temperature=0, extra_body={"ignore_eos": True})
        text = whole.choices[0].text
        check(whole.usage.completion_tokens == 24 and whole.usage.prompt_tokens > 0
              and whole.usage.total_tokens == whole.usage.prompt_tokens + 24,
              f"usage: {whole.usage}")
        check(whole.choices[0].finish_reason == "length" and len(text) > 0,
              f"temperature 0: {text!r}, finish {whole.choices[0].finish_reason}")
        again = client.completions.create(model="demo", prompt=prompt, max_tokens=24, temperature=0,
                                          extra_body={"ignore_eos": True})
        check(again.choices[0].text == text, "greedy is deterministic")

        chunks = list(client.completions.create(model="demo", prompt=prompt, max_tokens=24,
                                                temperature=0, stream=True,
                                                stream_options={"include_usage": True},
                                                extra_body={"ignore_eos": True}))
        streamed = "".join(c.choices[0].text for c in chunks if c.choices)
        check(streamed == text and len(chunks) > 3, f"stream adds up to the whole text ({len(chunks)} chunks)")
        finals = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
        check(finals == ["length"], f"stream finish_reason: {finals}")
        check(chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 24
              and chunks[-1].choices == [], f"include_usage: last chunk {chunks[-1].usage}")

        # A stop string spanning several tokens, found from the logprobs' tokens.
        lp = client.completions.create(model="demo", prompt=prompt, max_tokens=24, temperature=0,
                                       logprobs=2, extra_body={"ignore_eos": True})
        toks = lp.choices[0].logprobs.tokens
        check(len(toks) == 24 and all(len(t) <= 2 for t in lp.choices[0].logprobs.top_logprobs)
              and all(x <= 0 for x in lp.choices[0].logprobs.token_logprobs),
              f"logprobs: {len(toks)} tokens with top-2 alternatives")
        # 14 characters from inside the text: longer than any one token, so the
        # engine's stop matcher must see across tokens.
        stop = text[6:20]
        cut = text.find(stop)
        r = client.completions.create(model="demo", prompt=prompt, max_tokens=24, temperature=0,
                                      stop=[stop], extra_body={"ignore_eos": True})
        check(len(stop) == 14 and not any(stop in t for t in toks) and
              r.choices[0].text == text[:cut] and r.choices[0].finish_reason == "stop",
              f"stop string {stop!r} spanning tokens: {r.choices[0].text!r}")
        a = client.completions.create(model="demo", prompt=prompt, max_tokens=16, temperature=1.0,
                                      seed=123)
        b = client.completions.create(model="demo", prompt=prompt, max_tokens=16, temperature=1.0,
                                      seed=123)
        c = client.completions.create(model="demo", prompt=prompt, max_tokens=16, temperature=1.0,
                                      seed=124)
        check(a.choices[0].text == b.choices[0].text and a.choices[0].text != c.choices[0].text,
              "seed reproduces; another seed differs")
        n3 = client.completions.create(model="demo", prompt=prompt, max_tokens=8, temperature=1.0,
                                       n=3, seed=7, extra_body={"ignore_eos": True})
        check([ch.index for ch in n3.choices] == [0, 1, 2] and n3.usage.completion_tokens == 24
              and len({ch.text for ch in n3.choices}) > 1, f"n=3: {[ch.text for ch in n3.choices]}")
        ids = client.completions.create(model="demo", prompt=[[5, 17, 99], [42, 43]], max_tokens=4,
                                        temperature=0, extra_body={"ignore_eos": True})
        check(len(ids.choices) == 2 and ids.usage.prompt_tokens == 5,
              f"token-id prompts: {len(ids.choices)} choices, {ids.usage.prompt_tokens} prompt tokens")
        two = client.completions.create(model="demo", prompt=[prompt, "A module is"], max_tokens=4,
                                        temperature=0, extra_body={"top_k": 5, "min_p": 0.01,
                                                    "repetition_penalty": 1.1},
                                        presence_penalty=0.5, frequency_penalty=0.5)
        check(len(two.choices) == 2, "two text prompts, with top_k/min_p/penalties")

        # Errors.
        try:
            client.completions.create(model="demo", prompt=prompt, max_tokens=4,
                                      extra_body={"bogus_field": 1})
            check(False, "unknown field is refused")
        except openai.BadRequestError as e:
            check(e.status_code == 400 and "bogus_field" in str(e) and
                  e.body.get("param") == "bogus_field", f"unknown field named: {e.body}")
        try:
            client.completions.create(model="other", prompt=prompt, max_tokens=4)
            check(False, "unknown model is refused")
        except openai.NotFoundError:
            check(True, "unknown model: 404")
        try:
            client.completions.create(model="demo", prompt=prompt, max_tokens=4, top_p=1.5)
            check(False, "top_p 1.5 is refused")
        except openai.BadRequestError as e:
            check(e.body.get("param") == "top_p", f"top_p out of range: {e.body}")
        st, _, body = raw(s, "/v1/completions", key, data='{"prompt": "x", ')
        check(st == 400 and json.loads(body)["error"]["type"] == "invalid_request_error",
              f"bad JSON: {st} {body[:120]}")
        st, _, body = raw(s, "/v1/completions", key, data=b'{"prompt": "\xff\xfe"}')
        check(st == 400 and "UTF-8" in body, f"invalid UTF-8: {st} {body[:160]}")
        st, _, body = raw(s, "/v1/completions", key,
                           data=json.dumps({"prompt": "x" * 70000, "max_tokens": 1}))
        check(st == 413 and "error" in json.loads(body), f"body over max_body_bytes: {st}")
        st, _, body = raw(s, "/v1/nothing", key)
        check(st == 404 and "error" in json.loads(body), f"unknown route: {st}")
        st, _, body = raw(s, "/v1/chat/completions", key,
                           data=json.dumps({"messages": [{"role": "user", "content": "hi"}]}))
        check(st == 400 and "chat template" in body, f"chat on a plan without a template: {st}")
        st, _, body = raw(s, "/v1/embeddings", key, data=json.dumps({"input": "hi"}))
        check(st == 404, f"embeddings on a decoder plan: {st}")

        # Quota: 3 requests a minute for "limited".
        limited_key = limited[0]
        got = [raw(s, "/v1/completions", limited_key,
                    data=json.dumps({"prompt": "x", "max_tokens": 1}))[0] for _ in range(3)]
        st, headers, body = raw(s, "/v1/completions", limited_key,
                                 data=json.dumps({"prompt": "x", "max_tokens": 1}))
        check(got == [200] * 3 and st == 429 and int(headers.get("retry-after", "0")) >= 1
              and json.loads(body)["error"]["code"] == "rate_limit_rpm",
              f"rpm quota: {got} then {st}, Retry-After {headers.get('retry-after')}")
        try:
            openai.OpenAI(base_url=s.base + "/v1", api_key=limited_key, max_retries=0).completions.create(
                model="demo", prompt="x", max_tokens=1)
            check(False, "SDK over quota raises RateLimitError")
        except openai.RateLimitError:
            check(True, "SDK over quota raises RateLimitError")

        m = {n: metric(s, key, n) for n in ["kiln_time_to_first_token_seconds_count",
                                            "kiln_generation_tokens_total",
                                            "kiln_rejections_total", "kiln_kv_blocks_total"]}
        check(all(v > 0 for v in m.values()), f"metrics: {m}")
        log = "".join(s.log)
        check(key not in log and prompt not in log and "key=alice" in log,
              "access log has key ids, never keys or prompts")
    finally:
        code = s.stop()
    check(code == 0, f"server exit after SIGTERM: {code}")


def overload(kiln, plan):
    r = subprocess.run([kiln, "keys", "new", "ops"], capture_output=True, text=True)
    key, line = r.stdout.splitlines()
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        f.write(line + "\n")
    s = Server(kiln, plan, "--api-keys", f.name, "--max-queue", "2")
    try:
        long = {"prompt": [5, 17, 99], "max_tokens": 250, "ignore_eos": True, "stream": True}
        started = threading.Semaphore(0)
        kept = {}

        def run_to_end():
            kept["full"] = sse_request(s.port, key, long, on_first=started.release)

        t1 = threading.Thread(target=run_to_end)
        t1.start()
        # The second client reads its first event, then hangs up.
        st2, events2, conn2 = sse_request(s.port, key, long, on_first=started.release,
                                          read_all=False)
        started.acquire(timeout=60)
        started.acquire(timeout=60)
        t0 = time.time()
        st, headers, body = raw(s, "/v1/completions", key,
                                 data=json.dumps({"prompt": [5], "max_tokens": 1}))
        check(st2 == 200 and st == 503 and "retry-after" in headers and time.time() - t0 < 5,
              f"queue full: {st} at once, Retry-After {headers.get('retry-after')}")
        conn2.sock.close()
        conn2.close()
        deadline = time.time() + 60
        while time.time() < deadline and metric(s, key, 'kiln_cancellations_total{reason="disconnect"}') < 1:
            time.sleep(0.2)
        check(metric(s, key, 'kiln_cancellations_total{reason="disconnect"}') >= 1,
              "a client disconnect cancels its request (metrics)")
        t1.join(120)
        check(kept.get("full", (0, [""]))[1][-1] == "[DONE]", "the other stream finishes")
        deadline = time.time() + 30
        while time.time() < deadline and metric(s, key, "kiln_requests_in_flight") > 0:
            time.sleep(0.2)
        check(metric(s, key, "kiln_requests_in_flight") == 0, "nothing left in flight")
        check(metric(s, key, "kiln_kv_blocks_used") == 0 and metric(s, key, "kiln_kv_blocks_total") > 0
              and metric(s, key, 'kiln_requests_finished_total{reason="cancelled"}') >= 1,
              "the cancelled request finished as cancelled; every KV block is free again")
        st, _, body = raw(s, "/v1/completions", key,
                           data=json.dumps({"prompt": [5, 17, 99], "max_tokens": 250,
                                            "ignore_eos": True, "timeout": 0.001}))
        check(st == 504 and json.loads(body)["error"]["code"] == "timeout", f"request timeout: {st}")
    finally:
        code = s.stop()
    check(code == 0, f"overload server exit: {code}")


def drain(kiln, plan):
    r = subprocess.run([kiln, "keys", "new", "ops"], capture_output=True, text=True)
    key, line = r.stdout.splitlines()
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        f.write(line + "\n")
    s = Server(kiln, plan, "--api-keys", f.name, "--max-queue", "64", "--http-threads", "64")
    count = 50
    started = threading.Semaphore(0)
    results = [None] * count

    def run(i):
        body = {"prompt": [5, 17, 99], "max_tokens": 40, "ignore_eos": True, "stream": True,
                "temperature": 0}
        results[i] = sse_request(s.port, key, body, on_first=started.release)[:2]

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    got = sum(started.acquire(timeout=60) for _ in range(count))
    s.proc.send_signal(signal.SIGTERM)
    for t in threads:
        t.join(120)
    done = sum(1 for r_ in results if r_ and r_[0] == 200 and r_[1][-1] == "[DONE]"
               and '"finish_reason":"length"' in r_[1][-2])
    check(got == count and done == count, f"SIGTERM during {count} streams: {done} finished ({got} started)")
    try:
        code = s.proc.wait(60)
    except subprocess.TimeoutExpired:
        s.proc.kill()
        code = -9
    check(code == 0, f"drained server exits 0: {code}")


CHAT_TEMPLATE = ("{{ bos_token }}{% for m in messages %}"
                 "{{ '<|' + m['role'] + '|>\\n' + (m['content'] | trim) }}"
                 "{% if not loop.last %}{{ '\\n' }}{% endif %}{% endfor %}"
                 "{% if add_generation_prompt %}{{ '\\n<|assistant|>\\n' }}{% endif %}")


def chat(kiln, builder, demo, tmp):
    """A copy of the demo fixture with a chat template, built and served."""
    import shutil
    src = Path(tmp) / "demo-chat"
    shutil.copytree(demo, src)
    cfg = json.loads((src / "tokenizer_config.json").read_text())
    cfg["chat_template"] = CHAT_TEMPLATE
    (src / "tokenizer_config.json").write_text(json.dumps(cfg))
    plan = str(Path(tmp) / "demo-chat.plan")
    r = subprocess.run([builder, "build", str(src / "model.onnx"), "-o", plan, "--quiet"],
                       capture_output=True, text=True)
    check(r.returncode == 0, f"build the demo plan with a chat template: {r.stderr[-300:]}")
    s = Server(kiln, plan, "--allow-no-auth", "true", "--model-name", "demo")
    try:
        client = openai.OpenAI(base_url=s.base + "/v1", api_key="unused", max_retries=0)
        messages = [{"role": "system", "content": "Answer about Python. "},
                    {"role": "user", "content": "What is a module?"}]
        whole = client.chat.completions.create(model="demo", messages=messages, max_tokens=12,
                                               temperature=0, extra_body={"ignore_eos": True})
        content = whole.choices[0].message.content
        check(whole.choices[0].message.role == "assistant" and len(content) > 0
              and whole.choices[0].finish_reason == "length" and whole.usage.completion_tokens == 12,
              f"chat completion: {content!r}")
        # The template's text (BOS written by the template, so not added
        # again) gives what /v1/completions gives for the same text.
        rendered = ("<|system|>\nAnswer about Python.\n<|user|>\nWhat is a module?\n<|assistant|>\n")
        plain = client.completions.create(model="demo", prompt=rendered, max_tokens=12, temperature=0,
                                          extra_body={"ignore_eos": True})
        check(plain.choices[0].text == content and plain.usage.prompt_tokens == whole.usage.prompt_tokens,
              f"chat = completions on the rendered template ({whole.usage.prompt_tokens} prompt tokens)")
        chunks = list(client.chat.completions.create(model="demo", messages=messages, max_tokens=12,
                                                     temperature=0, stream=True,
                                                     stream_options={"include_usage": True},
                                                     extra_body={"ignore_eos": True}))
        deltas = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        check(chunks[0].choices[0].delta.role == "assistant" and deltas == content
              and chunks[-1].usage.completion_tokens == 12, "streamed chat deltas add up")
        lp = client.chat.completions.create(model="demo", messages=messages, max_tokens=5,
                                            temperature=0, logprobs=True, top_logprobs=2,
                                            extra_body={"ignore_eos": True})
        items = lp.choices[0].logprobs.content
        check(len(items) == 5 and all(len(i.top_logprobs) == 2 and i.logprob <= 0 for i in items)
              and all(i.top_logprobs[0].logprob >= i.logprob - 1e-5 for i in items),
              "chat logprobs with top_logprobs 2")
        try:
            client.chat.completions.create(model="demo", messages=[{"role": "user"}],
                                           max_tokens=2, extra_body={"tools_x": 1})
            check(False, "chat with an unknown field is refused")
        except openai.BadRequestError as e:
            check(e.body.get("param") == "tools_x", f"chat unknown field: {e.body}")
    finally:
        check(s.stop() == 0, "chat server exits 0")


def embeddings(kiln, builder, bert, tmp):
    plan = str(Path(tmp) / "bert.plan")
    r = subprocess.run([builder, "build", str(Path(bert) / "model.onnx"), "-o", plan, "--quiet"],
                       capture_output=True, text=True)
    check(r.returncode == 0, f"build the BERT plan: {r.stderr[-300:]}")
    s = Server(kiln, plan, "--allow-no-auth", "true")
    try:
        client = openai.OpenAI(base_url=s.base + "/v1", api_key="unused", max_retries=0)
        out = client.embeddings.create(model="bert", input=["first text", "a second, longer text"])
        ref = subprocess.run([kiln, "embed", plan, "--text", "first text", "--text",
                              "a second, longer text"], capture_output=True, text=True)
        want = json.loads(ref.stdout)["embeddings"]
        close = all(abs(x - y) < 1e-5 for d, w in zip(out.data, want) for x, y in zip(d.embedding, w))
        check(len(out.data) == 2 and close and out.usage.prompt_tokens > 0,
              "/v1/embeddings equals kiln embed (the SDK asks for base64)")
        flt = client.embeddings.create(model="bert", input=["first text"],
                                       encoding_format="float")
        check(all(abs(x - y) < 1e-5 for x, y in zip(flt.data[0].embedding, want[0])),
              "/v1/embeddings with encoding_format float equals kiln embed")
        st, _, _ = raw(s, "/v1/completions", None, data=json.dumps({"prompt": "x"}))
        check(st == 404, f"completions on an encoder plan: {st}")
    finally:
        check(s.stop() == 0, "encoder server exits 0")


def main():
    os.environ["NO_PROXY"] = "127.0.0.1,localhost"
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--builder")
    ap.add_argument("--bert")
    ap.add_argument("--demo", help="the demo fixture folder, for the chat part")
    ap.add_argument("--only", choices=["basic", "overload", "drain", "chat", "embeddings"])
    ap.add_argument("plan")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.only in (None, "basic"):
            basic(args.kiln, args.plan, tmp)
        if args.only in (None, "overload"):
            overload(args.kiln, args.plan)
        if args.only in (None, "drain"):
            drain(args.kiln, args.plan)
        if args.builder and args.demo and args.only in (None, "chat"):
            chat(args.kiln, args.builder, args.demo, tmp)
        if args.builder and args.bert and args.only in (None, "embeddings"):
            embeddings(args.kiln, args.builder, args.bert, tmp)
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
