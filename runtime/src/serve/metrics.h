// Prometheus text exposition of the server's counters, gauges and
// histograms. Thread-safe: handler threads and the engine thread update it,
// /metrics renders it. Names and meanings: docs/serve.md.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace kiln::serve {

class Metrics {
public:
  Metrics();

  // Counter `name` with one label (e.g. rejections by reason) or none.
  void Add(const std::string &name, double value, const std::string &label = "");
  // Gauge `name` (with one label value, or none).
  void Set(const std::string &name, double value, const std::string &label = "");
  void Observe(const std::string &name, double seconds); // histogram
  double Get(const std::string &name, const std::string &label = "") const;

  // Adds a family beside the server's own (e.g. the --replicas front end's);
  // `label` names its one label, or is empty.
  void Declare(const std::string &name, const char *type, const char *help,
               const char *label = nullptr);

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

// One exposition built from the front end's (`own`) and its replicas':
// each family once, under one HELP and TYPE. Of the front end's samples only
// the families in `own_families` are kept (its other families are declared
// but never counted there); every replica's samples get the label
// replica="INDEX" (inserted first), except families in `replica_skip`
// (those the front end already counts for the whole server). `replicas`:
// (index, exposition) pairs.
std::string MergeExpositions(const std::string &own, const std::vector<std::string> &own_families,
                             const std::vector<std::pair<int, std::string>> &replicas,
                             const std::vector<std::string> &replica_skip);

} // namespace kiln::serve
