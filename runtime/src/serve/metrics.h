// Prometheus text exposition of the server's counters, gauges and
// histograms. Thread-safe: handler threads and the engine thread update it,
// /metrics renders it. Names and meanings: docs/serve.md.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace kiln::serve {

class Metrics {
public:
  Metrics();

  // Counter `name` with one label (e.g. rejections by reason) or none.
  void Add(const std::string &name, double value, const std::string &label = "");
  void Set(const std::string &name, double value);       // gauge
  void Observe(const std::string &name, double seconds); // histogram
  double Get(const std::string &name, const std::string &label = "") const;

  // The exposition text (format 0.0.4).
  std::string Render() const;

private:
  struct Family {
    const char *type; // "counter", "gauge", "histogram"
    const char *help;
    const char *label; // the label's name, or nullptr
  };
  struct Histogram {
    std::vector<double> bounds;
    std::vector<uint64_t> counts; // per bound, not cumulative
    uint64_t count = 0;
    double sum = 0;
  };
  mutable std::mutex mu_;
  std::map<std::string, Family> families_;
  std::map<std::string, std::map<std::string, double>> values_; // name -> label value -> v
  std::map<std::string, Histogram> histograms_;
};

} // namespace kiln::serve
