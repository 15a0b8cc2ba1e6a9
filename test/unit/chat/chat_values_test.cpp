// Values as Python prints them: float repr, str repr, json.dumps.
#include <gtest/gtest.h>

#include "chat/lexer.h"
#include "chat/pystr.h"
#include "chat/value.h"

namespace kiln::chat {
namespace {

TEST(ChatValues, FloatReprIsPythons) {
  EXPECT_EQ(FloatRepr(1.0), "1.0");
  EXPECT_EQ(FloatRepr(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(FloatRepr(1e16), "1e+16");
  EXPECT_EQ(FloatRepr(1e15), "1000000000000000.0");
  EXPECT_EQ(FloatRepr(0.0001), "0.0001");
  EXPECT_EQ(FloatRepr(0.00001), "1e-05");
  EXPECT_EQ(FloatRepr(-2.5), "-2.5");
  EXPECT_EQ(FloatRepr(1.5e300), "1.5e+300");
}

TEST(ChatValues, ReprQuotesLikePython) {
  EXPECT_EQ(Repr(Value::Str("it's")), "\"it's\"");
  EXPECT_EQ(Repr(Value::Str("a\"b'c")), "'a\"b\\'c'");
  EXPECT_EQ(Repr(Value::Str("tab\there\n")), "'tab\\there\\n'");
  EXPECT_EQ(Repr(Value::Str("\xc2\xa0x")), "'\\xa0x'");  // U+00A0 is not printable
  EXPECT_EQ(Repr(Value::Str("\xc3\xa9")), "'\xc3\xa9'");  // é is
  Dict d;
  d.Set("k", Value::MakeList({Value::Int(1), Value::None(), Value::Bool(true), Value::Float(2)}));
  EXPECT_EQ(Repr(Value::MakeDict(d)), "{'k': [1, None, True, 2.0]}");
}

TEST(ChatValues, JsonDumpsSeparatorsAndEscapes) {
  Dict d;
  d.Set("b", Value::Str("\xc3\xa9\"\x01"));
  d.Set("a", Value::MakeList({}));
  JsonOptions o;
  EXPECT_EQ(*ToJson(Value::MakeDict(d), o), "{\"b\": \"\xc3\xa9\\\"\\u0001\", \"a\": []}");
  o.indent = 2;
  o.sortKeys = true;
  EXPECT_EQ(*ToJson(Value::MakeDict(d), o), "{\n  \"a\": [],\n  \"b\": \"\xc3\xa9\\\"\\u0001\"\n}");
  o = JsonOptions{};
  o.ensureAscii = true;
  EXPECT_EQ(*ToJson(Value::Str("\xc3\xa9\xf0\x9f\x8e\x89"), o), "\"\\u00e9\\ud83c\\udf89\"");
  EXPECT_FALSE(ToJson(Value(), o).ok());  // Undefined is not serializable
}

TEST(ChatValues, EqualityAndOrderFollowPython) {
  EXPECT_TRUE(Equal(Value::Int(1), Value::Float(1.0)));
  EXPECT_TRUE(Equal(Value::Bool(true), Value::Int(1)));
  EXPECT_FALSE(Equal(Value::Str("1"), Value::Int(1)));
  EXPECT_EQ(*Compare(Value::Str("a"), Value::Str("b")), -1);
  EXPECT_FALSE(Compare(Value::Str("a"), Value::Int(1)).ok());
}

TEST(ChatStrings, StripSplitReplace) {
  EXPECT_EQ(PyStrip("\xc2\xa0 x \xe3\x80\x80", nullptr, true, true), "x");
  std::string chars = "xy";
  EXPECT_EQ(PyStrip("xyaxy", &chars, true, false), "axy");
  EXPECT_EQ(PySplit("  a  b ", nullptr, -1), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(PySplit("  a  b c ", nullptr, 1), (std::vector<std::string>{"a", "b c"}));
  std::string comma = ",";
  EXPECT_EQ(PySplit("a,,b", &comma, -1), (std::vector<std::string>{"a", "", "b"}));
  EXPECT_EQ(PyReplace("aaa", "a", "b", 2), "bba");
  EXPECT_EQ(PyUpper("stra\xc3\x9f" "e \xc3\xa9"), "STRASSE \xc3\x89");
  EXPECT_EQ(PyTitle("hello wORLD2go"), "Hello World2Go");
}

TEST(ChatLexer, WhitespaceControlAndTrailingNewline) {
  auto tokens = Lex("a  {%- if x -%}  b\n");
  ASSERT_TRUE(tokens.ok()) << tokens.status().message();
  ASSERT_GE(tokens->size(), 2u);
  EXPECT_EQ((*tokens)[0].value, "a");
  // "  b" lost its leading spaces to "-%}" and its newline to jinja2's
  // keep_trailing_newline=False.
  bool sawB = false;
  for (const Token &t : *tokens) sawB |= t.type == Tok::kText && t.value == "b";
  EXPECT_TRUE(sawB);
}

TEST(ChatLexer, ErrorsNameThePosition) {
  auto unterminated = Lex("x\n{{ 'abc }}");
  ASSERT_FALSE(unterminated.ok());
  EXPECT_NE(unterminated.status().message().find("2:4"), std::string::npos) << unterminated.status().message();
  auto unclosed = Lex("{% if x ");
  ASSERT_FALSE(unclosed.ok());
  EXPECT_NE(unclosed.status().message().find("1:1"), std::string::npos);
}

}  // namespace
}  // namespace kiln::chat
