// Shared by the sampler tests.
#pragma once

#include "kiln/sampler.h"

#include <gtest/gtest.h>

#include <memory>

namespace kiln {

// A sampler for `p`, failing the test (and returning null) when p is refused.
inline std::unique_ptr<Sampler> MakeSampler(SamplingParams p) {
  auto s = Sampler::Create(p);
  EXPECT_TRUE(s.ok()) << s.status().message();
  return s.ok() ? std::move(*s) : nullptr;
}

} // namespace kiln
