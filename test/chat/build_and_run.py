#!/usr/bin/env python3
"""The chat template through kiln build and kiln run.

1. `kiln build` on a model whose tokenizer_config.json has a template with
   `{% filter %}` (outside the subset) fails with exit 2, naming the tag and
   its line:col, and leaves no plan;
2. with --allow-unsupported-template it builds and warns, and `kiln run
   --chat` on that plan fails with the template error;
3. a supported template builds, and `kiln run --chat --show-prompt` and
   `kiln run --messages` render exactly what jinja2 renders (as transformers
   configures it), then generate.
"""

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))
from checks import Checks  # noqa: E402
from differential import environment  # noqa: E402

UNSUPPORTED = "{% for m in messages %}\n  {% filter upper %}{{ m.content }}{% endfilter %}\n{% endfor %}"
SUPPORTED = ("{{ bos_token }}{% for m in messages %}"
             "{{ '<|' + m.role + '|>\\n' + m.content | trim + eos_token + '\\n' }}"
             "{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% endif %}")


def special_tokens(folder):
    """The plan's bos_token and eos_token: the texts of config.json's BOS id
    and of the first EOS id (generation_config.json's list wins)."""
    config = json.loads((folder / "config.json").read_text())
    gen = folder / "generation_config.json"
    eos = json.loads(gen.read_text()).get("eos_token_id") if gen.exists() else None
    eos = eos if eos is not None else config.get("eos_token_id")
    eos = eos[0] if isinstance(eos, list) else eos
    tok = json.loads((folder / "tokenizer.json").read_text())
    names = {i: t for t, i in tok["model"]["vocab"].items()}
    names.update({t["id"]: t["content"] for t in tok.get("added_tokens", [])})
    return names.get(config.get("bos_token_id"), ""), names.get(eos, "")


def run(cmd):
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--builder", required=True, help="kiln with the compiler")
    ap.add_argument("fixture", help="a fixture folder with model.onnx and tokenizer.json")
    args = ap.parse_args()
    check = Checks()
    env = environment()
    with tempfile.TemporaryDirectory(prefix="kiln-chat-") as tmp:
        tmp = Path(tmp)
        for f in Path(args.fixture).iterdir():
            if f.is_file() and f.suffix in (".json", ".onnx"):
                shutil.copy(f, tmp)
        config = tmp / "tokenizer_config.json"
        model, plan = tmp / "model.onnx", tmp / "model.plan"

        config.write_text(json.dumps({"chat_template": UNSUPPORTED}))
        r = run([args.builder, "build", model, "-o", plan, "-q"])
        check(r.returncode == 2, f"unsupported template fails the build with exit 2 (got {r.returncode})")
        check("'{% filter %}'" in r.stderr and "2:6" in r.stderr and "tokenizer_config.json" in r.stderr,
              f"the error names the tag, its line:col and the file: {r.stderr.strip()[-300:]}")
        check("--allow-unsupported-template" in r.stderr, "the error says how to store it anyway")
        check(not plan.exists(), "no plan is left behind")

        r = run([args.builder, "build", model, "-o", plan, "-q", "--allow-unsupported-template"])
        check(r.returncode == 0 and "warning" in r.stderr and "filter" in r.stderr,
              f"--allow-unsupported-template builds with a warning: {r.stderr.strip()[-300:]}")
        r = run([args.kiln, "run", plan, "-p", "hi", "--chat", "--max-new-tokens", "1"])
        check(r.returncode == 2 and "filter" in r.stderr,
              f"kiln run --chat refuses the stored template: {r.stderr.strip()[-300:]}")

        config.write_text(json.dumps({"chat_template": SUPPORTED}))
        plan.unlink()
        r = run([args.builder, "build", model, "-o", plan, "-q"])
        check(r.returncode == 0, f"a supported template builds: {r.stderr.strip()[-300:]}")
        bos, eos = special_tokens(tmp)
        want = env.from_string(SUPPORTED).render(
            messages=[{"role": "user", "content": " Hello there "}], add_generation_prompt=True,
            bos_token=bos, eos_token=eos)
        r = run([args.kiln, "run", plan, "-p", " Hello there ", "--chat", "--show-prompt",
                 "--max-new-tokens", "2", "--temperature", "0"])
        shown = r.stderr.split("prefill:")[0]
        check(r.returncode == 0, f"kiln run --chat generates: {r.stderr.strip()[-300:]}")
        check(shown == want + "\n", f"--show-prompt prints jinja2's render {want!r}, got {shown!r}")

        messages = {"messages": [{"role": "system", "content": "Be brief."},
                                 {"role": "user", "content": "2+2?"}]}
        (tmp / "chat.json").write_text(json.dumps(messages))
        r = run([args.kiln, "run", plan, "--messages", tmp / "chat.json", "--show-prompt",
                 "--max-new-tokens", "2", "--temperature", "0"])
        shown = r.stderr.split("prefill:")[0]
        want = env.from_string(SUPPORTED).render(add_generation_prompt=True, bos_token=bos,
                                                 eos_token=eos, **messages)
        check(r.returncode == 0 and shown == want + "\n",
              f"kiln run --messages renders {want!r}, got {shown!r} ({r.stderr.strip()[-200:]})")
    return check.exit_code()


if __name__ == "__main__":
    sys.exit(main())
