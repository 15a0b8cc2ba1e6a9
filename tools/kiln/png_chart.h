// A line chart written as a PNG with no image library: throughput against
// concurrency for `kiln bench offline --plot`. Axes carry numeric tick
// labels (a built-in digit font); series are lines with square markers.
#pragma once

#include "kiln/status.h"

#include <string>
#include <vector>

namespace kiln::cli {

struct ChartSeries {
  std::vector<double> x, y;  // same length; x > 0 (drawn on a log2 axis)
  unsigned color = 0x1f77b4; // 0xRRGGBB
  bool dashed = false;       // a reference line, e.g. a peer's one-at-a-time rate
};

// Draws every series on shared axes (x log2, y linear from 0) into a
// width x height RGB image and writes it to `path` as a PNG.
Status WriteLineChartPng(const std::string &path, const std::vector<ChartSeries> &series,
                         int width = 720, int height = 440);

// The PNG file bytes of an RGB image (rows top to bottom, 3 bytes a pixel),
// with stored (uncompressed) deflate blocks. Exposed for tests.
std::string EncodePng(const std::vector<unsigned char> &rgb, int width, int height);

} // namespace kiln::cli
