// Keys and quotas of kiln serve.
#include "serve/auth.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <unistd.h>

namespace kiln::serve {
namespace {

std::string WriteFile(const std::string &text) {
  char path[] = "/tmp/kiln_keys_XXXXXX";
  int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  ::close(fd);
  std::ofstream(path) << text;
  return path;
}

TEST(ServeKeys, NewKeyAndItsLine) {
  auto a = NewApiKey();
  auto b = NewApiKey();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(*a, *b);
  EXPECT_EQ(a->size(), 5u + 43u);
  EXPECT_EQ(a->rfind("kiln-", 0), 0u);
  // SHA-256("abc"), FIPS 180-2.
  EXPECT_EQ(HashApiKey("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const std::string line = KeyFileLine("alice", *a);
  EXPECT_EQ(line.find(*a), std::string::npos); // never the key itself
  auto store = KeyStore::Load(WriteFile("# keys\n" + line + "\n\n"));
  ASSERT_TRUE(store.ok()) << store.status().message();
  EXPECT_EQ((*store)->Authenticate(*a), 0);
  EXPECT_EQ((*store)->key(0).id, "alice");
  EXPECT_EQ((*store)->Authenticate(*b), -1);
  EXPECT_EQ((*store)->Authenticate(""), -1);
  EXPECT_EQ((*store)->Authenticate(a->substr(0, a->size() - 1)), -1); // a near miss
}

TEST(ServeKeys, BadFiles) {
  const std::string h(64, 'a');
  EXPECT_FALSE(KeyStore::Load(WriteFile("")).ok());
  EXPECT_FALSE(KeyStore::Load(WriteFile("{\"id\": \"a\"}\n")).ok());
  EXPECT_FALSE(KeyStore::Load(WriteFile("{\"id\": \"a\", \"sha256\": \"abc\"}\n")).ok());
  EXPECT_FALSE(
      KeyStore::Load(WriteFile("{\"id\": \"a\", \"sha256\": \"" + h + "\", \"key\": \"x\"}\n"))
          .ok());
  EXPECT_FALSE(KeyStore::Load(WriteFile("{\"id\": \"a\", \"sha256\": \"" + h + "\"}\n" +
                                        "{\"id\": \"a\", \"sha256\": \"" + h + "\"}\n"))
                   .ok());
  EXPECT_FALSE(
      KeyStore::Load(WriteFile("{\"id\": \"a\", \"sha256\": \"" + h + "\", \"rpm\": -1}\n")).ok());
  EXPECT_FALSE(KeyStore::Load("/nonexistent/keys.jsonl").ok());
}

TEST(ServeQuotas, RequestsTokensConcurrency) {
  ApiKey k;
  k.id = "k";
  k.rpm = 2;
  k.tpm = 100;
  k.max_concurrent = 1;
  auto store = KeyStore::FromKeys({k});
  const auto t0 = QuotaClock::now();
  std::string which;
  double retry = 0;
  ASSERT_TRUE(store->Admit(0, t0, &which, &retry));
  EXPECT_FALSE(store->Admit(0, t0, &which, &retry));
  EXPECT_EQ(which, "concurrency");
  store->Release(0, 30, t0);
  ASSERT_TRUE(store->Admit(0, t0 + std::chrono::seconds(1), &which, &retry));
  store->Release(0, 80, t0 + std::chrono::seconds(1));
  // Two requests in the minute: rpm refuses, and says when the first ages out.
  EXPECT_FALSE(store->Admit(0, t0 + std::chrono::seconds(10), &which, &retry));
  EXPECT_EQ(which, "rpm");
  EXPECT_NEAR(retry, 50, 0.01);
  // After the minute rpm passes; the 110 tokens aged out as well.
  EXPECT_TRUE(store->Admit(0, t0 + std::chrono::seconds(62), &which, &retry));
  store->Release(0, 150, t0 + std::chrono::seconds(62));
  EXPECT_FALSE(store->Admit(0, t0 + std::chrono::seconds(63), &which, &retry));
  EXPECT_EQ(which, "tpm");
  EXPECT_NEAR(retry, 59, 0.01);
}

} // namespace
} // namespace kiln::serve
