#!/usr/bin/env python3
"""kiln's chat template renderer against Python's jinja2, set up as
transformers sets it up (ImmutableSandboxedEnvironment with trim_blocks,
lstrip_blocks and loopcontrols; tojson as json.dumps with ensure_ascii=False;
raise_exception; strftime_now). Every template in DIR/templates is rendered
over every context in DIR/contexts by both engines; the outputs must be
identical bytes, and where jinja2 raises, kiln must fail too (with the same
message for raise_exception).

Usage: differential.py --render PATH/render_template DIR
"""
import argparse
import datetime
import json
import pathlib
import subprocess
import sys
import tempfile

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment


class Raised(Exception):
    pass


def raise_exception(message):
    raise Raised(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                      sort_keys=sort_keys)


def strftime_now(fmt):
    return datetime.datetime.now().strftime(fmt)


def environment():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def reference(env, source, context):
    ctx = dict(context)
    try:
        return "ok", env.from_string(source).render(**ctx)
    except Raised as e:
        return "raised", str(e)
    except Exception as e:  # a template error kiln must report too
        return "error", f"{type(e).__name__}: {e}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--render", required=True)
    ap.add_argument("dir", type=pathlib.Path)
    args = ap.parse_args()
    env = environment()
    templates = sorted((args.dir / "templates").glob("*.jinja"))
    contexts = sorted((args.dir / "contexts").glob("*.json"))
    assert templates and contexts, "no templates or contexts found"
    failures, compared, outcomes = [], 0, {}
    for t in templates:
        source = t.read_text(encoding="utf-8")
        for c in contexts:
            context = json.loads(c.read_text(encoding="utf-8"))
            for agp in (False, True):
                ctx = dict(context, add_generation_prompt=agp)
                kind, want = reference(env, source, ctx)
                outcomes[kind] = outcomes.get(kind, 0) + 1
                with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False,
                                                 encoding="utf-8") as f:
                    json.dump(ctx, f, ensure_ascii=False)
                proc = subprocess.run([args.render, str(t), f.name], capture_output=True)
                pathlib.Path(f.name).unlink()
                got = proc.stdout.decode("utf-8", errors="replace")
                err = proc.stderr.decode("utf-8", errors="replace").strip()
                name = f"{t.name} x {c.name} (add_generation_prompt={agp})"
                compared += 1
                if kind == "ok":
                    if proc.returncode != 0:
                        failures.append(f"{name}: jinja2 rendered, kiln failed: {err}")
                    elif got != want:
                        failures.append(f"{name}: outputs differ\n--- jinja2\n{want!r}\n--- kiln\n{got!r}")
                elif proc.returncode != (2 if want.startswith("TemplateSyntaxError") else 1):
                    failures.append(f"{name}: jinja2 failed ({want}), kiln exited {proc.returncode}: {err}")
                elif kind == "raised" and ("raise_exception: " + want) not in err:
                    failures.append(f"{name}: raise_exception message {want!r} not in kiln's {err!r}")
    print(f"{compared} renders compared over {len(templates)} templates x {len(contexts)} contexts;"
          f" jinja2 outcomes {outcomes}")
    for f in failures:
        print("FAIL", f)
    # Each kind of outcome must occur, so the test keeps covering errors.
    if outcomes.get("ok", 0) == 0 or outcomes.get("raised", 0) == 0:
        print("FAIL: the corpus no longer exercises both renders and raise_exception")
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
