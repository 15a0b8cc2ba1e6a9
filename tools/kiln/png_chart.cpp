// WriteLineChartPng: rasterize, then PNG with stored deflate blocks (zlib
// format: header, blocks of at most 65535 bytes, Adler-32), CRC-32 per chunk.
#include "png_chart.h"

#include "run_options.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace kiln::cli {
namespace {

uint32_t Crc32(const unsigned char *p, size_t n, uint32_t crc = 0) {
  crc = ~crc;
  for (size_t i = 0; i < n; ++i) {
    crc ^= p[i];
    for (int k = 0; k < 8; ++k)
      crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

void Put32(std::string &s, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8)
    s += static_cast<char>((v >> shift) & 0xff);
}

void Chunk(std::string &out, const char type[4], const std::string &data) {
  Put32(out, static_cast<uint32_t>(data.size()));
  std::string body(type, 4);
  body += data;
  out += body;
  Put32(out, Crc32(reinterpret_cast<const unsigned char *>(body.data()), body.size()));
}

// 3x5 glyphs for tick labels, one row per 3 bits (MSB left).
const char kGlyphChars[] = "0123456789.k";
const unsigned char kGlyphs[][5] = {{7, 5, 5, 5, 7}, {2, 6, 2, 2, 7}, {7, 1, 7, 4, 7},
                                    {7, 1, 7, 1, 7}, {5, 5, 7, 1, 1}, {7, 4, 7, 1, 7},
                                    {7, 4, 7, 5, 7}, {7, 1, 1, 1, 1}, {7, 5, 7, 5, 7},
                                    {7, 5, 7, 1, 7}, {0, 0, 0, 0, 2}, {4, 5, 6, 5, 5}};

class Canvas {
public:
  Canvas(int w, int h) : w_(w), h_(h), rgb_(static_cast<size_t>(w) * h * 3, 255) {}
  void Set(int x, int y, unsigned color) {
    if (x < 0 || y < 0 || x >= w_ || y >= h_)
      return;
    unsigned char *p = &rgb_[(static_cast<size_t>(y) * w_ + x) * 3];
    p[0] = (color >> 16) & 0xff;
    p[1] = (color >> 8) & 0xff;
    p[2] = color & 0xff;
  }
  void Rect(int x0, int y0, int x1, int y1, unsigned color) {
    for (int y = y0; y <= y1; ++y)
      for (int x = x0; x <= x1; ++x)
        Set(x, y, color);
  }
  // A 2-pixel line; `dashed` skips every other 6-pixel run.
  void Line(double x0, double y0, double x1, double y1, unsigned color, bool dashed = false) {
    const int steps = static_cast<int>(std::max(std::fabs(x1 - x0), std::fabs(y1 - y0))) + 1;
    for (int i = 0; i <= steps; ++i) {
      if (dashed && (i / 6) % 2)
        continue;
      const double t = static_cast<double>(i) / steps;
      const int x = static_cast<int>(std::lround(x0 + (x1 - x0) * t));
      const int y = static_cast<int>(std::lround(y0 + (y1 - y0) * t));
      Rect(x, y, x + 1, y + 1, color);
    }
  }
  // Text of kGlyphChars at scale 2, its top-left corner at (x, y).
  void Text(int x, int y, const std::string &text, unsigned color) {
    for (char ch : text) {
      const char *at = std::strchr(kGlyphChars, ch);
      if (at && ch) {
        const unsigned char *g = kGlyphs[at - kGlyphChars];
        for (int r = 0; r < 5; ++r)
          for (int c = 0; c < 3; ++c)
            if (g[r] & (4 >> c))
              Rect(x + 2 * c, y + 2 * r, x + 2 * c + 1, y + 2 * r + 1, color);
      }
      x += 8;
    }
  }
  const std::vector<unsigned char> &rgb() const { return rgb_; }

private:
  int w_, h_;
  std::vector<unsigned char> rgb_;
};

std::string Label(double v) {
  char buf[32];
  if (v >= 10000)
    std::snprintf(buf, sizeof buf, "%.0fk", v / 1000);
  else if (v == std::floor(v))
    std::snprintf(buf, sizeof buf, "%.0f", v);
  else
    std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

// A round step giving about `ticks` intervals over [0, top].
double NiceStep(double top, int ticks) {
  const double raw = top / ticks, mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * mag)
      return m * mag;
  return 10 * mag;
}

} // namespace

std::string EncodePng(const std::vector<unsigned char> &rgb, int width, int height) {
  std::string raw; // each row: filter byte 0, then the pixels
  raw.reserve(static_cast<size_t>(height) * (width * 3 + 1));
  for (int y = 0; y < height; ++y) {
    raw += '\0';
    raw.append(reinterpret_cast<const char *>(&rgb[static_cast<size_t>(y) * width * 3]),
               static_cast<size_t>(width) * 3);
  }
  std::string z = "\x78\x01"; // zlib header: deflate, 32K window, no dictionary
  for (size_t at = 0; at < raw.size() || at == 0; at += 65535) {
    const size_t n = std::min<size_t>(65535, raw.size() - at);
    const bool last = at + n >= raw.size();
    z += static_cast<char>(last ? 1 : 0);
    z += static_cast<char>(n & 0xff);
    z += static_cast<char>(n >> 8);
    z += static_cast<char>(~n & 0xff);
    z += static_cast<char>((~n >> 8) & 0xff);
    z.append(raw, at, n);
    if (last)
      break;
  }
  uint32_t a = 1, b = 0;
  for (unsigned char c : raw) {
    a = (a + c) % 65521;
    b = (b + a) % 65521;
  }
  Put32(z, (b << 16) | a);

  std::string png = "\x89PNG\r\n\x1a\n";
  std::string ihdr;
  Put32(ihdr, static_cast<uint32_t>(width));
  Put32(ihdr, static_cast<uint32_t>(height));
  ihdr += std::string("\x08\x02\x00\x00\x00", 5); // 8-bit RGB, no interlace
  Chunk(png, "IHDR", ihdr);
  Chunk(png, "IDAT", z);
  Chunk(png, "IEND", "");
  return png;
}

Status WriteLineChartPng(const std::string &path, const std::vector<ChartSeries> &series, int width,
                         int height) {
  double xmin = 0, xmax = 0, ymax = 0;
  bool any = false;
  for (const ChartSeries &s : series)
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!(s.x[i] > 0) || !std::isfinite(s.y[i]))
        return InvalidArgument("chart points need x > 0 and a finite y");
      xmin = any ? std::min(xmin, s.x[i]) : s.x[i];
      xmax = any ? std::max(xmax, s.x[i]) : s.x[i];
      ymax = std::max(ymax, s.y[i]);
      any = true;
    }
  if (!any)
    return InvalidArgument("nothing to plot");
  const double lx0 = std::log2(xmin), lx1 = std::max(std::log2(xmax), lx0 + 1);
  const double step = NiceStep(ymax > 0 ? ymax * 1.05 : 1, 5);
  const double ytop = std::ceil((ymax > 0 ? ymax * 1.05 : 1) / step) * step;
  const int left = 70, right = width - 20, top = 20, bottom = height - 40;
  auto px = [&](double x) { return left + (std::log2(x) - lx0) / (lx1 - lx0) * (right - left); };
  auto py = [&](double y) { return bottom - y / ytop * (bottom - top); };

  Canvas c(width, height);
  for (double y = 0; y <= ytop + step / 2; y += step) { // grid and y labels
    c.Line(left, py(y), right, py(y), 0xe0e0e0);
    const std::string t = Label(y);
    c.Text(left - 10 - 8 * static_cast<int>(t.size()), static_cast<int>(py(y)) - 5, t, 0x333333);
  }
  for (double x = std::exp2(std::ceil(lx0)); x <= xmax * 1.0001; x *= 2) { // x ticks, powers of 2
    c.Line(px(x), bottom, px(x), bottom + 6, 0x333333);
    const std::string t = Label(x);
    c.Text(static_cast<int>(px(x)) - 4 * static_cast<int>(t.size()), bottom + 12, t, 0x333333);
  }
  c.Line(left, top, left, bottom, 0x333333);
  c.Line(left, bottom, right, bottom, 0x333333);
  for (const ChartSeries &s : series) {
    const size_t n = std::min(s.x.size(), s.y.size());
    if (n == 1 && s.dashed) { // one point: a reference level across the chart
      c.Line(left, py(s.y[0]), right, py(s.y[0]), s.color, true);
      continue;
    }
    for (size_t i = 0; i + 1 < n; ++i)
      c.Line(px(s.x[i]), py(s.y[i]), px(s.x[i + 1]), py(s.y[i + 1]), s.color, s.dashed);
    for (size_t i = 0; i < n; ++i) {
      const int x = static_cast<int>(px(s.x[i])), y = static_cast<int>(py(s.y[i]));
      c.Rect(x - 3, y - 3, x + 3, y + 3, s.color);
    }
  }
  return WriteText(path, EncodePng(c.rgb(), width, height));
}

} // namespace kiln::cli
