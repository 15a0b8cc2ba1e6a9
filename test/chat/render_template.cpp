// render_template TEMPLATE CONTEXT.json: renders a chat template the way
// kiln does, for the differential test against Python's jinja2. CONTEXT is
// {"messages": [...], "add_generation_prompt": bool, ...other variables}.
// Prints the render on stdout; on an error, prints it on stderr and exits 1
// (2 for a template that does not compile).
#include <fstream>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "kiln/chat_template.h"

int main(int argc, char **argv) {
  if (argc != 3) {
    std::cerr << "usage: render_template TEMPLATE CONTEXT.json\n";
    return 64;
  }
  std::ifstream tf(argv[1], std::ios::binary), cf(argv[2], std::ios::binary);
  if (!tf || !cf) {
    std::cerr << "cannot read " << (tf ? argv[2] : argv[1]) << "\n";
    return 64;
  }
  std::stringstream source;
  source << tf.rdbuf();
  nlohmann::ordered_json context = nlohmann::ordered_json::parse(cf, nullptr, false);
  if (!context.is_object()) {
    std::cerr << argv[2] << ": not a JSON object\n";
    return 64;
  }
  auto t = kiln::ChatTemplate::Compile(source.str());
  if (!t.ok()) {
    std::cerr << t.status().message() << "\n";
    return 2;
  }
  nlohmann::ordered_json messages = context.value("messages", nlohmann::ordered_json::array());
  bool addGen = context.value("add_generation_prompt", false);
  context.erase("messages");
  context.erase("add_generation_prompt");
  auto out = t->Render(messages, addGen, context);
  if (!out.ok()) {
    std::cerr << out.status().message() << "\n";
    return 1;
  }
  std::cout << *out;
  return 0;
}
