// Reference cycles a template can build through namespace attributes are
// freed when the render ends. Each template hands its namespaces to keep(),
// which holds them weakly: a namespace still alive after the render is a
// leak, whether or not LeakSanitizer runs. (fuzz_chat_template found the
// first one: {% set ns = namespace() %}{% set ns.x = ns %} leaked per render.)
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/ast.h"
#include "chat/render.h"
#include "kiln/chat_template.h"

namespace kiln::chat {
namespace {

struct Rendered {
  Status status;
  std::string text;
  std::vector<std::weak_ptr<Dict>> kept;
};

Rendered RenderKeeping(const std::string &source) {
  Rendered r;
  auto body = Parse(source);
  EXPECT_TRUE(body.ok()) << body.status().message();
  if (!body.ok()) return r;
  Dict vars;
  auto *kept = &r.kept;
  vars.Set("keep", Value::Fn("keep", [kept](Renderer &, CallArgs &a) -> StatusOr<Value> {
             for (const Value &v : a.positional)
               if (v.SharedDict()) kept->push_back(v.SharedDict());
             return Value::Str("");
           }));
  {
    Renderer renderer(*body, std::move(vars));
    auto out = renderer.Run();
    r.status = out.status();
    if (out.ok()) r.text = *out;
  }
  return r;
}

// How many of the kept namespaces outlived their render.
size_t Alive(const Rendered &r) {
  size_t n = 0;
  for (const auto &w : r.kept) n += !w.expired();
  return n;
}

TEST(ChatCycles, NamespaceHoldingItselfIsFreed) {
  Rendered r = RenderKeeping("{% set ns = namespace() %}{% set ns.x = ns %}{{ keep(ns) }}ok");
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_EQ(r.text, "ok");
  ASSERT_EQ(r.kept.size(), 1u);
  EXPECT_EQ(Alive(r), 0u);
}

TEST(ChatCycles, CyclesThroughContainersAndOtherNamespacesAreFreed) {
  const char *templates[] = {
      // a list and a dict holding the namespace they are stored in
      "{% set ns = namespace(l=[]) %}{% set ns.l = ns.l + [ns] %}{{ keep(ns) }}{{ ns.l | length }}",
      "{% set ns = namespace() %}{% set ns.d = {'me': [ns]} %}{{ keep(ns) }}{{ ns.d.me | length }}",
      // two namespaces holding each other
      "{% set a = namespace() %}{% set b = namespace(a=a) %}{% set a.b = b %}{{ keep(a, b) }}1",
      // the loop object, whose previtem is the namespace it is stored in
      "{% set ns = namespace() %}{% for x in [ns, ns] %}{% set ns.loop = loop %}{% endfor %}{{ keep(ns) }}"
      "{{ ns.loop.previtem is defined }}",
      // a bound dict method whose dict holds the namespace
      "{% set ns = namespace() %}{% set d = {'n': ns} %}{% set ns.get = d.get %}{{ keep(ns) }}"
      "{{ ns.get('n') is defined }}",
      // a namespace made inside a loop, each holding the previous one
      "{% set head = namespace(prev=none) %}{% for i in range(100) %}{% set n = namespace(prev=head.prev) %}"
      "{% set n.me = n %}{% set head.prev = n %}{{ keep(n) }}{% endfor %}{{ keep(head) }}"
      "{{ head.prev.prev.me is defined }}",
      // a macro stored in the namespace (macros hold their scope weakly)
      "{% set ns = namespace() %}{% macro m() %}{{ ns.x is defined }}{% endmacro %}{% set ns.m = m %}{{ keep(ns) }}"
      "{% set f = ns.m %}{{ f() }}",
  };
  for (const char *t : templates) {
    Rendered r = RenderKeeping(t);
    ASSERT_TRUE(r.status.ok()) << t << ": " << r.status.message();
    EXPECT_FALSE(r.text.empty()) << t;
    EXPECT_FALSE(r.kept.empty()) << t;
    EXPECT_EQ(Alive(r), 0u) << t;
  }
}

TEST(ChatCycles, ARenderThatFailsFreesItsCyclesToo) {
  Rendered r = RenderKeeping(
      "{% set ns = namespace() %}{% set ns.x = [ns] %}{{ keep(ns) }}{{ raise_exception('stop') }}");
  EXPECT_FALSE(r.status.ok());
  EXPECT_NE(r.status.message().find("stop"), std::string::npos) << r.status.message();
  ASSERT_EQ(r.kept.size(), 1u);
  EXPECT_EQ(Alive(r), 0u);
}

// Namespaces stay usable until the render ends, however many a loop makes
// (the renderer drops the ones nothing refers to as it goes).
TEST(ChatCycles, ManyNamespacesKeepTheirValuesUntilTheEnd) {
  Rendered r = RenderKeeping(
      "{% set keepers = namespace(all=[]) %}{% for i in range(3000) %}{% set n = namespace(i=i) %}"
      "{% if i % 1000 == 0 %}{% set keepers.all = keepers.all + [n] %}{% endif %}{% endfor %}"
      "{% for n in keepers.all %}{{ n.i }},{% endfor %}{{ keep(keepers) }}");
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_EQ(r.text, "0,1000,2000,");
  EXPECT_EQ(Alive(r), 0u);
}

// The same templates through the public API: under LeakSanitizer (the
// sanitizer build) a cycle left behind fails this binary at exit.
TEST(ChatCycles, PublicRenderDoesNotLeak) {
  for (const char *t : {"{% set ns = namespace() %}{% set ns.x = ns %}ok",
                        "{% set ns = namespace(l=[]) %}{% set ns.l = ns.l + [ns] %}ok"}) {
    auto tmpl = ChatTemplate::Compile(t);
    ASSERT_TRUE(tmpl.ok()) << tmpl.status().message();
    for (int i = 0; i < 3; ++i) {
      auto out = tmpl->Render(nlohmann::json::array(), false);
      ASSERT_TRUE(out.ok()) << out.status().message();
      EXPECT_EQ(*out, "ok");
    }
  }
}

}  // namespace
}  // namespace kiln::chat
