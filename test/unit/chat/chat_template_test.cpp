// ChatTemplate's contract: what compiles, what renders, and the errors and
// limits that keep a hostile template from hurting the process.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "kiln/chat_template.h"

namespace kiln {
namespace {

using nlohmann::json;

std::string RenderOk(const std::string &source, const json &messages = json::array(), bool agp = false,
                     const json &extra = json::object()) {
  auto t = ChatTemplate::Compile(source);
  EXPECT_TRUE(t.ok()) << t.status().message();
  if (!t.ok()) return "<compile error>";
  auto out = t->Render(messages, agp, extra);
  EXPECT_TRUE(out.ok()) << out.status().message();
  return out.ok() ? *out : "<render error>";
}

std::string CompileError(const std::string &source) {
  auto t = ChatTemplate::Compile(source);
  EXPECT_FALSE(t.ok()) << "compiled: " << source;
  return t.ok() ? "" : t.status().message();
}

std::string RenderError(const std::string &source, const json &messages = json::array()) {
  auto t = ChatTemplate::Compile(source);
  EXPECT_TRUE(t.ok()) << t.status().message();
  if (!t.ok()) return "";
  auto out = t->Render(messages, false);
  EXPECT_FALSE(out.ok()) << "rendered: " << (out.ok() ? *out : "");
  return out.ok() ? "" : out.status().message();
}

const json kChat = json::parse(R"([{"role": "system", "content": " be brief "},
                                   {"role": "user", "content": "hi"},
                                   {"role": "assistant", "content": "hello"}])");

TEST(ChatTemplate, RendersMessagesAndGenerationPrompt) {
  const char *src =
      "{{ bos_token }}{% for m in messages %}<{{ m.role }}>{{ m['content'] | trim }}{% if not loop.last %}|{% endif %}"
      "{% endfor %}{% if add_generation_prompt %}<assistant>{% endif %}";
  EXPECT_EQ(RenderOk(src, kChat, true, {{"bos_token", "<s>"}}), "<s><system>be brief|<user>hi|<assistant>hello<assistant>");
  EXPECT_EQ(RenderOk(src, kChat, false, {{"bos_token", "<s>"}}), "<s><system>be brief|<user>hi|<assistant>hello");
}

TEST(ChatTemplate, TrimAndLstripBlocksAsTransformers) {
  // trim_blocks eats the newline after a block tag; lstrip_blocks the
  // indentation before one; a variable tag keeps both.
  EXPECT_EQ(RenderOk("{% if true %}\n  a\n  {% endif %}\nb"), "  a\nb");
  EXPECT_EQ(RenderOk("x\n  {{ 'v' }}\ny"), "x\n  v\ny");
  EXPECT_EQ(RenderOk("x {%+ if true %}y{% endif +%}\nz"), "x y\nz");
  EXPECT_EQ(RenderOk("a\n\n"), "a\n");  // one trailing newline dropped
}

TEST(ChatTemplate, NamespaceSetAndScoping) {
  const char *src =
      "{% set ns = namespace(n=0) %}{% set plain = 0 %}"
      "{% for m in messages %}{% set ns.n = ns.n + 1 %}{% set plain = plain + 1 %}{% endfor %}"
      "{{ ns.n }},{{ plain }}";
  EXPECT_EQ(RenderOk(src, kChat), "3,0");  // a loop's set does not leak out
  EXPECT_NE(RenderError("{% set x = 1 %}{% set x.y = 2 %}").find("namespace"), std::string::npos);
}

TEST(ChatTemplate, MacrosBlockSetAndLoopControls) {
  EXPECT_EQ(RenderOk("{% macro t(role, x='!') %}[{{ role }}{{ x }}]{% endmacro %}"
                     "{% for m in messages %}{{ t(m.role) }}{% endfor %}{{ t('z', x='?') }}",
                     kChat),
            "[system!][user!][assistant!][z?]");
  EXPECT_EQ(RenderOk("{% set b %}in {{ 1 + 1 }}{% endset %}{{ b | upper }}"), "IN 2");
  EXPECT_EQ(RenderOk("{% for i in range(9) %}{% if i == 5 %}{% break %}{% endif %}"
                     "{% if i is odd %}{% continue %}{% endif %}{{ i }}{% else %}none{% endfor %}"),
            "024");
  EXPECT_EQ(RenderOk("{% for i in [] %}x{% else %}empty{% endfor %}"), "empty");
}

TEST(ChatTemplate, UndefinedBehavesLikeJinja) {
  EXPECT_EQ(RenderOk("[{{ nope }}][{{ messages[0].nope }}][{{ nope is defined }}][{{ nope | default('d') }}]", kChat),
            "[][][False][d]");
  EXPECT_NE(RenderError("{{ nope.attr }}").find("'nope' is undefined"), std::string::npos);
  EXPECT_NE(RenderError("{{ messages[0].nope.x }}", kChat).find("has no attribute 'nope'"), std::string::npos);
  EXPECT_NE(RenderError("{{ 'a' + 1 }}").find("unsupported operand"), std::string::npos);
}

TEST(ChatTemplate, RaiseExceptionIsARenderErrorWithTheMessage) {
  std::string e = RenderError("line one\n{% if messages | length > 0 %}\n  {{ raise_exception('roles must alternate') }}\n{% endif %}",
                              kChat);
  EXPECT_NE(e.find("raise_exception: roles must alternate"), std::string::npos) << e;
  EXPECT_NE(e.find("3:3"), std::string::npos) << e;
}

TEST(ChatTemplate, UnsupportedFeaturesFailToCompileWithPosition) {
  std::string e = CompileError("ok\n  {% filter upper %}x{% endfilter %}");
  EXPECT_NE(e.find("2:6"), std::string::npos) << e;
  EXPECT_NE(e.find("'{% filter %}'"), std::string::npos) << e;
  EXPECT_NE(CompileError("{% call m() %}{% endcall %}").find("'{% call %}'"), std::string::npos);
  EXPECT_NE(CompileError("{% include 'x' %}").find("include"), std::string::npos);
  e = CompileError("{{ x | wordwrap(3) }}");
  EXPECT_NE(e.find("1:8"), std::string::npos) << e;
  EXPECT_NE(e.find("filter 'wordwrap'"), std::string::npos) << e;
  EXPECT_NE(CompileError("{{ x is sameas2 }}").find("test 'sameas2'"), std::string::npos);
  EXPECT_NE(CompileError("{{ 'a{}'.format(1) }}").find("method 'format()'"), std::string::npos);
  EXPECT_NE(CompileError("{% for x in y recursive %}{% endfor %}").find("recursive"), std::string::npos);
  EXPECT_NE(CompileError("{% if x %}never closed").find("never closed"), std::string::npos);
  EXPECT_NE(CompileError("{% endfor %}").find("no open block"), std::string::npos);
  EXPECT_NE(CompileError("{% break %}").find("outside a for loop"), std::string::npos);
  EXPECT_NE(CompileError("{{ f(*args) }}").find("'*' arguments"), std::string::npos);
  // A near miss of each: the supported spelling compiles.
  EXPECT_TRUE(ChatTemplate::Compile("{{ x | trim }}{{ x is string }}{{ 'a'.strip() }}{% for x in y %}{% break %}{% endfor %}").ok());
}

// Constructs jinja2 has that the renderer would only have failed on when a
// request reached them; kiln build compiles the template, so they fail there.
TEST(ChatTemplate, UnsupportedGlobalsAndFormattingFailToCompile) {
  std::string e = CompileError("{% set sep = 1 %}\n  {{ joiner(', ') }}");
  EXPECT_NE(e.find("2:6"), std::string::npos) << e;
  EXPECT_NE(e.find("unsupported global 'joiner()'"), std::string::npos) << e;
  EXPECT_NE(CompileError("{% set c = cycler('a', 'b') %}{{ c }}").find("global 'cycler()'"), std::string::npos);
  EXPECT_NE(CompileError("{{ lipsum(2) }}").find("global 'lipsum()'"), std::string::npos);
  e = CompileError("{{ 'role: %s' % m.role }}");
  EXPECT_NE(e.find("1:15"), std::string::npos) << e;
  EXPECT_NE(e.find("string formatting"), std::string::npos) << e;
  e = CompileError("{{ ('%d items' % 3) }}");
  EXPECT_NE(e.find("string formatting"), std::string::npos) << e;
  // Near misses: the template defines the name itself, or '%' is a modulo.
  EXPECT_EQ(RenderOk("{% macro joiner(s) %}[{{ s }}]{% endmacro %}{{ joiner('x') }}"), "[x]");
  EXPECT_EQ(RenderOk("{% for cycler in [1] %}{{ cycler }}{% endfor %}"), "1");
  EXPECT_EQ(RenderOk("{{ 7 % 3 }}{{ joiner }}"), "1");  // named, not called: undefined
  EXPECT_EQ(RenderOk("{% set n = 5 %}{{ n % 2 }}"), "1");
}

TEST(ChatTemplate, DeepNestingIsAnErrorNotACrash) {
  std::string deep = "{{ " + std::string(20000, '(') + "1" + std::string(20000, ')') + " }}";
  EXPECT_NE(CompileError(deep).find("nested too deeply"), std::string::npos);
  std::string lists = "{{ " + std::string(20000, '[') + std::string(20000, ']') + " }}";
  EXPECT_NE(CompileError(lists).find("nested too deeply"), std::string::npos);
  std::string ifs;
  for (int i = 0; i < 5000; ++i) ifs += "{% if true %}";
  EXPECT_NE(CompileError(ifs).find("nested too deeply"), std::string::npos);
  EXPECT_NE(RenderError("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}").find("nested too deeply"),
            std::string::npos);
  json nestedInput = json::array();
  for (int i = 0; i < 1000; ++i) nestedInput = json::array({nestedInput});
  auto t = ChatTemplate::Compile("{{ messages }}");
  ASSERT_TRUE(t.ok());
  EXPECT_FALSE(t->Render(nestedInput, false).ok());
  // The limit on input is the limit on values: 200 levels print, 201 do not.
  json input = json::array();
  for (int i = 1; i < ChatTemplate::kMaxDepth; ++i) input = json::array({input});
  auto out = t->Render(input, false);
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(out->size(), 2u * ChatTemplate::kMaxDepth);
  EXPECT_FALSE(t->Render(json::array({input}), false).ok());
}

// Values a template nests in a loop: printing, comparing or freeing one
// thousands of levels deep overflowed the stack, so a value past the depth
// limit is an error when it is made.
TEST(ChatTemplate, DeepValuesAreAnErrorNotACrash) {
  const char *loop = "{% set ns = namespace(l=none) %}{% for i in range(100000) %}";
  for (const char *step : {"{% set ns.l = [ns.l] %}", "{% set ns.l = dict(a=ns.l) %}",
                           "{% set ns.l = {'a': ns.l}.items %}", "{% set ns.l = {'a': ns.l} | items %}",
                           "{% set ns.l = [ns.l, ns.l] | list %}"}) {
    std::string e = RenderError(std::string(loop) + step + "{% endfor %}{{ ns.l }}{{ ns.l == ns.l }}");
    EXPECT_NE(e.find("nested too deeply"), std::string::npos) << step << ": " << e;
  }
  // Namespaces do not add to the depth (their attributes are freed one
  // namespace at a time), so a long chain of them renders.
  EXPECT_EQ(RenderOk(std::string(loop) + "{% set ns.l = namespace(prev=ns.l, i=i) %}{% endfor %}"
                                         "{{ ns.l.i }} {{ ns.l.prev.i }} {{ ns.l.prev }}"),
            "99999 99998 <Namespace>");
  // Below the limit, nesting renders.
  EXPECT_EQ(RenderOk("{% set ns = namespace(l=0) %}{% for i in range(150) %}{% set ns.l = [ns.l] %}{% endfor %}"
                     "{{ ns.l | string | length }}"),
            "301");
}

// A namespace equals only itself, as Python objects without __eq__ do.
TEST(ChatTemplate, NamespacesCompareByIdentity) {
  EXPECT_EQ(RenderOk("{% set a = namespace() %}{% set b = namespace() %}{% set c = a %}"
                     "{{ a == b }} {{ a == c }} {{ a != b }} {{ [a] == [a] }} {{ a in [b, c] }}"),
            "False True True True True");
}

TEST(ChatTemplate, HugeLoopsAndOutputsHitLimits) {
  EXPECT_NE(RenderError("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}")
                .find("iterations"),
            std::string::npos);
  EXPECT_NE(RenderError("{{ 'x' * 100000000 }}").find("limit"), std::string::npos);
  EXPECT_NE(RenderError("{% set ns = namespace(s='xx') %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}{% endfor %}")
                .find("limit"),
            std::string::npos);
  EXPECT_NE(RenderError("{{ range(1000000) | length }}").find("range too big"), std::string::npos);
  // Below the limits, the same shapes render.
  EXPECT_EQ(RenderOk("{{ ('x' * 1000) | length }}"), "1000");
}

TEST(ChatTemplate, OrderedJsonKeepsKeyOrderForTojson) {
  const char *src = "{{ tools | tojson }}";
  auto t = ChatTemplate::Compile(src);
  ASSERT_TRUE(t.ok());
  auto ordered = nlohmann::ordered_json::parse(R"({"tools": [{"z": 1, "a": 2}]})");
  auto out = t->Render(nlohmann::ordered_json::array(), false, ordered);
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(*out, "[{\"z\": 1, \"a\": 2}]");
  auto sorted = t->Render(json::array(), false, json::parse(R"({"tools": [{"z": 1, "a": 2}]})"));
  ASSERT_TRUE(sorted.ok());
  EXPECT_EQ(*sorted, "[{\"a\": 2, \"z\": 1}]");
}

TEST(ChatTemplate, BadInputsAreErrors) {
  auto t = ChatTemplate::Compile("x");
  ASSERT_TRUE(t.ok());
  EXPECT_FALSE(t->Render(json::object(), false).ok());  // messages must be a list
  ChatTemplate empty;
  EXPECT_FALSE(empty.Render(json::array(), false).ok());
  ChatTemplate copy = *t;  // copies share the compiled template
  EXPECT_EQ(*copy.Render(json::array(), false), "x");
}

}  // namespace
}  // namespace kiln
