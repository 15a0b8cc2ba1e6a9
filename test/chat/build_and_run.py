#!/usr/bin/env python3
"""The chat template through kiln build and kiln run.

1. `kiln build` on a model whose tokenizer_config.json has a template with
   `{% filter %}` (outside the subset) fails with exit 2, naming the tag and
   its line:col, and leaves no plan;
2. with --allow-unsupported-template it builds and warns, and `kiln run
   --chat` on that plan fails with the template error;
3. a supported template builds, and `kiln run --chat --show-prompt` and
   `kiln run --messages` render exactly what jinja2 renders (as transformers
   configures it), then generate;
4. transformers' template files: chat_template.jinja is read when
   tokenizer_config.json has no chat_template (kiln inspect shows it, kiln run
   renders it) and takes precedence over the key when both exist; every
   template is compiled, so an unsupported construct in
   additional_chat_templates/NAME.jinja or in a named template of the key
   fails the build, naming the file, the template and the construct.
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
# chat_template.jinja as transformers writes it (ending in a newline, which
# jinja2 drops).
FILE_TEMPLATE = ("{% for m in messages %}\n{{ '[' ~ m.role ~ '] ' ~ m.content }}\n{% endfor %}\n"
                 "{% if add_generation_prompt %}[assistant] {% endif %}\n")
TOOL_UNSUPPORTED = "{{ tools | tojson }}\n{% for m in messages %}{{ m.content | wordwrap(20) }}{% endfor %}"
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
        template_files(args, check, env, tmp)
    return check.exit_code()


def template_files(args, check, env, tmp):
    """Part 4: chat_template.jinja and additional_chat_templates/."""
    config, jinja = tmp / "tokenizer_config.json", tmp / "chat_template.jinja"
    model, plan = tmp / "model.onnx", tmp / "files.plan"

    # The file wins over the key: the key's template is fine, the file's is not.
    config.write_text(json.dumps({"chat_template": SUPPORTED}))
    jinja.write_text(UNSUPPORTED)
    r = run([args.builder, "build", model, "-o", plan, "-q"])
    check(r.returncode == 2 and "chat_template.jinja" in r.stderr and "'default'" in r.stderr
          and "'{% filter %}'" in r.stderr and "2:6" in r.stderr,
          f"chat_template.jinja takes precedence over the key and is compiled: {r.stderr.strip()[-300:]}")

    # An unsupported construct in a named template file fails the build too.
    jinja.write_text(FILE_TEMPLATE)
    extra = tmp / "additional_chat_templates"
    extra.mkdir()
    (extra / "tool_use.jinja").write_text(TOOL_UNSUPPORTED)
    r = run([args.builder, "build", model, "-o", plan, "-q"])
    check(r.returncode == 2 and "tool_use.jinja" in r.stderr and "'tool_use'" in r.stderr
          and "filter 'wordwrap'" in r.stderr and "2:39" in r.stderr and "builds anyway" in r.stderr,
          f"additional_chat_templates/tool_use.jinja is compiled: {r.stderr.strip()[-300:]}")
    (extra / "tool_use.jinja").unlink()
    extra.rmdir()

    # So does one in a named template of tokenizer_config.json.
    jinja.unlink()
    config.write_text(json.dumps({"chat_template": [
        {"name": "tool_use", "template": TOOL_UNSUPPORTED}, {"name": "default", "template": SUPPORTED}]}))
    r = run([args.builder, "build", model, "-o", plan, "-q"])
    check(r.returncode == 2 and "tokenizer_config.json" in r.stderr and "'tool_use'" in r.stderr
          and "filter 'wordwrap'" in r.stderr,
          f"a named template of the key is compiled: {r.stderr.strip()[-300:]}")
    check(not plan.exists(), "no plan is left behind")

    # With --allow-unsupported-template it builds; the plan stores 'default'
    # (listed second) and the build says 'tool_use' is not stored.
    r = run([args.builder, "build", model, "-o", plan, "-q", "--allow-unsupported-template"])
    check(r.returncode == 0 and "'tool_use'" in r.stderr and "ignored" in r.stderr
          and "stores chat template 'default'" in r.stderr,
          f"named templates: 'default' stored, the others named in a warning: {r.stderr.strip()[-400:]}")
    bos, eos = special_tokens(tmp)
    want = env.from_string(SUPPORTED).render(messages=[{"role": "user", "content": "Hi"}],
                                             add_generation_prompt=True, bos_token=bos, eos_token=eos)
    r = run([args.kiln, "run", plan, "-p", "Hi", "--chat", "--show-prompt", "--max-new-tokens", "1",
             "--temperature", "0"])
    shown = r.stderr.split("prefill:")[0]
    check(r.returncode == 0 and shown == want + "\n",
          f"the plan renders the template named 'default': {want!r}, got {shown!r}")
    plan.unlink()

    # chat_template.jinja alone, without a chat_template key: stored and rendered.
    config.write_text(json.dumps({"model_max_length": 128}))
    jinja.write_text(FILE_TEMPLATE)
    r = run([args.builder, "build", model, "-o", plan, "-q"])
    check(r.returncode == 0, f"a model with chat_template.jinja builds: {r.stderr.strip()[-300:]}")
    r = run([args.kiln, "inspect", plan, "--json"])
    stored = r.returncode == 0 and json.loads(r.stdout).get("chat_template") is True
    check(stored, f"kiln inspect --json says chat_template true: {r.stdout.strip()[-200:]}")
    r = run([args.kiln, "inspect", plan])
    check("template present" in r.stdout, f"kiln inspect says 'template present': {r.stdout.strip()[-300:]}")
    want = env.from_string(FILE_TEMPLATE).render(
        messages=[{"role": "user", "content": "Hello"}], add_generation_prompt=True)
    r = run([args.kiln, "run", plan, "-p", "Hello", "--chat", "--show-prompt",
             "--max-new-tokens", "1", "--temperature", "0"])
    shown = r.stderr.split("prefill:")[0]
    check(r.returncode == 0 and shown == want + "\n",
          f"kiln run --chat renders chat_template.jinja as jinja2 does: {want!r}, got {shown!r}")


if __name__ == "__main__":
    sys.exit(main())
