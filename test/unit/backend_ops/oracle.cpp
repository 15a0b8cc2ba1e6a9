#include "oracle.h"

#include "backends/registry.h"
#include "core/shape_table.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <sstream>

namespace kiln::oracle {
namespace {

// A result's rounding to f16 or bf16 dominates any f32 error: per element at
// most half an ulp (2^-11, 2^-8 relative), so these floors leave 4x room.
Tolerance HalfFloor(DType t, Tolerance tol) {
  if (tol.nmse == 0 && tol.max_err == 0)
    return tol;
  if (t == DType::kF16)
    return {std::max(tol.nmse, 1e-6), std::max(tol.max_err, 2e-3)};
  if (t == DType::kBF16)
    return {std::max(tol.nmse, 1e-4), std::max(tol.max_err, 1.6e-2)};
  return tol;
}

std::string Describe(const std::vector<HostTensor> &inputs) {
  std::string s;
  for (size_t i = 0; i < inputs.size(); ++i) {
    s += i ? ", " : "";
    s += inputs[i].dtype == DType::kUndefined
             ? std::string("omitted")
             : std::string(DTypeName(inputs[i].dtype)) + ShapeToString(inputs[i].shape);
  }
  return s;
}

bool SameValue(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

// A value for a report: NaN's sign bit (0xFF poison is a negative NaN) is
// noise there.
std::string Num(double v) {
  if (std::isnan(v))
    return "nan";
  std::ostringstream s;
  s.precision(9);
  s << v;
  return s.str();
}

} // namespace

std::vector<HostTensor> MakeInputs(const OpCase &c, uint32_t seed) {
  std::mt19937 rng(seed);
  if (c.make_inputs)
    return c.make_inputs(rng);
  std::vector<HostTensor> in;
  for (const Generator &g : c.inputs)
    in.push_back(g(rng));
  return in;
}

StatusOr<std::vector<TensorView>> InferResults(const OpCase &c,
                                               const std::vector<HostTensor> &inputs) {
  const ShapeRule *rule = FindShapeRule(c.op);
  if (!rule)
    return Status(StatusCode::kNotFound, "the shape table has no rule for '" + c.op + "'");
  std::vector<TensorView> views(inputs.size());
  Inputs in(inputs.size(), nullptr);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].dtype == DType::kUndefined)
      continue;
    views[i] = inputs[i].View();
    in[i] = &views[i];
  }
  // As in a plan, each result starts with a dtype (the case's, else the
  // first operand's); the rule sets the real one.
  Outputs out(static_cast<size_t>(c.num_outputs));
  for (size_t i = 0; i < out.size(); ++i)
    out[i].dtype = i < c.result_dtypes.size() ? c.result_dtypes[i]
                   : inputs.empty()           ? DType::kF32
                                              : inputs[0].dtype;
  KILN_RETURN_IF_ERROR(rule->infer(c.attrs, in, out));
  return out;
}

StatusOr<std::vector<HostTensor>> RunOnBackend(Backend &backend, const KernelTable &kernels,
                                               const OpCase &c,
                                               const std::vector<HostTensor> &inputs) {
  const KernelDef *kernel = kernels.Find(c.op);
  if (!kernel)
    return Status(StatusCode::kNotFound,
                  std::string("backend ") + backend.name() + " has no kernel for '" + c.op + "'");
  KILN_ASSIGN_OR_RETURN(std::vector<TensorView> results, InferResults(c, inputs));
  std::vector<DeviceBuffer> buffers;
  std::vector<TensorView> views(inputs.size());
  Inputs in(inputs.size(), nullptr);
  std::vector<void *> where(inputs.size(), nullptr);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].dtype == DType::kUndefined)
      continue;
    views[i] = inputs[i].View();
    in[i] = &views[i];
    if (std::count(c.host_inputs.begin(), c.host_inputs.end(), static_cast<int>(i)))
      continue;
    KILN_ASSIGN_OR_RETURN(DeviceBuffer b, DeviceBuffer::Allocate(backend, inputs[i].bytes.size()));
    KILN_RETURN_IF_ERROR(backend.CopyFromHost(b.data(), inputs[i].bytes.data(), b.bytes()));
    views[i].data = where[i] = b.data();
    views[i].space = backend.memory_space();
    buffers.push_back(std::move(b));
  }
  Outputs out = results;
  for (TensorView &o : out) {
    KILN_ASSIGN_OR_RETURN(DeviceBuffer b, DeviceBuffer::Allocate(backend, o.bytes()));
    const std::vector<uint8_t> poison(o.bytes(), 0xFF);
    KILN_RETURN_IF_ERROR(backend.CopyFromHost(b.data(), poison.data(), poison.size()));
    o.data = b.data();
    o.space = backend.memory_space();
    buffers.push_back(std::move(b));
  }
  KILN_RETURN_IF_ERROR(kernel->run(backend.context(), c.attrs, in, out));
  KILN_RETURN_IF_ERROR(backend.Synchronize());
  std::vector<HostTensor> got;
  for (const TensorView &o : out) {
    got.emplace_back(o.dtype, o.shape);
    KILN_RETURN_IF_ERROR(backend.CopyToHost(got.back().bytes.data(), o.data, o.bytes()));
  }
  for (int i : c.in_place) {
    got.push_back(inputs[i]);
    if (where[i])
      KILN_RETURN_IF_ERROR(
          backend.CopyToHost(got.back().bytes.data(), where[i], got.back().bytes.size()));
  }
  return got;
}

StatusOr<std::vector<HostTensor>> RunReference(const OpCase &c,
                                               const std::vector<HostTensor> &inputs,
                                               const std::vector<HostTensor> &like) {
  const RefFn *ref = FindReference(c.op);
  if (!ref)
    return Status(StatusCode::kNotFound, "no plain reference for '" + c.op + "'");
  std::vector<RefTensor> values(inputs.size());
  RefInputs in(inputs.size(), nullptr);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].dtype == DType::kUndefined)
      continue;
    values[i] = {inputs[i].shape, ToDoubles(inputs[i]), inputs[i].dtype};
    in[i] = &values[i];
  }
  std::vector<RefTensor> want = (*ref)(c.attrs, in);
  // A reference may give optional trailing results the case did not ask
  // for (layer_normalization's Mean and InvStdDev).
  if (c.in_place.empty() && want.size() > like.size())
    want.resize(like.size());
  if (want.size() != like.size())
    return Status(StatusCode::kInternal, "the reference for '" + c.op + "' gave " +
                                             std::to_string(want.size()) + " tensors, expected " +
                                             std::to_string(like.size()));
  std::vector<HostTensor> rounded;
  for (size_t i = 0; i < want.size(); ++i)
    rounded.push_back(FromDoubles(like[i].dtype, want[i].shape, want[i].v));
  return rounded;
}

std::string Compare(const HostTensor &got, const HostTensor &want, Tolerance tol) {
  std::ostringstream why;
  if (got.shape != want.shape || got.dtype != want.dtype) {
    why << "got " << DTypeName(got.dtype) << ShapeToString(got.shape) << ", expected "
        << DTypeName(want.dtype) << ShapeToString(want.shape);
    return why.str();
  }
  tol = HalfFloor(got.dtype, tol);
  const bool exact = tol.nmse == 0 && tol.max_err == 0;
  double err2 = 0, ref2 = 0, ref_max = 0, worst = -1;
  int64_t worst_at = -1;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double g = ElementAt(got, i), w = ElementAt(want, i);
    // A non-finite value must match exactly (NaN for NaN, same infinity).
    const bool finite = std::isfinite(g) && std::isfinite(w);
    const double d = finite ? std::fabs(g - w) : (SameValue(g, w) ? 0 : INFINITY);
    if (finite) {
      err2 += d * d;
      ref2 += w * w;
      ref_max = std::max(ref_max, std::fabs(w));
    }
    if (d > worst) {
      worst = d;
      worst_at = i;
    }
  }
  const double nmse = ref2 > 0 ? err2 / ref2 : err2;
  const double max_err = worst / std::max(ref_max, ref_max > 0 ? 0.0 : 1.0);
  const bool fail = exact ? worst > 0 : (nmse > tol.nmse || max_err > tol.max_err);
  if (!fail || worst_at < 0)
    return "";
  why.precision(9);
  why << DTypeName(got.dtype) << ShapeToString(got.shape) << ": nmse " << nmse << " (max "
      << tol.nmse << "), worst |got - want| / max|want| " << max_err << " (max " << tol.max_err
      << ") at element " << worst_at << " " << ShapeToString(Unravel(worst_at, got.shape))
      << ": got " << Num(ElementAt(got, worst_at)) << ", want " << Num(ElementAt(want, worst_at));
  return why.str();
}

std::string CheckCase(Backend &backend, const KernelTable &kernels, const OpCase &c, uint32_t seed,
                      Backend *reference) {
  const std::vector<HostTensor> inputs = MakeInputs(c, seed);
  const std::string where = "op " + c.op + ", case " + c.name + ", backend " + backend.name() +
                            ", seed " + std::to_string(seed) + ", operands (" + Describe(inputs) +
                            ")";
  StatusOr<std::vector<HostTensor>> got = RunOnBackend(backend, kernels, c, inputs);
  if (!got.ok())
    return where + ": the run failed: " + got.status().message();
  StatusOr<std::vector<HostTensor>> want =
      reference ? RunOnBackend(*reference, reference->kernels(), c, inputs)
                : RunReference(c, inputs, *got);
  if (!want.ok())
    return where + ": the " + (reference ? "reference backend" : "plain reference") +
           " failed: " + want.status().message();
  std::string report;
  for (size_t i = 0; i < got->size(); ++i) {
    const std::string diff = Compare((*got)[i], (*want)[i], c.tol);
    if (diff.empty())
      continue;
    const bool result = i < static_cast<size_t>(c.num_outputs);
    report += where + ": " +
              (result ? "result " + std::to_string(i)
                      : "in-place operand " + std::to_string(c.in_place[i - c.num_outputs])) +
              " " + diff + "\n";
  }
  return report;
}

Backend *SharedBackend(const std::string &name, std::string *error) {
  struct Entry {
    std::unique_ptr<Backend> backend;
    std::string error;
  };
  static std::mutex mu;
  // Never destroyed: a device backend must not be torn down after its
  // runtime library at exit. Failures are kept too, so a missing device is
  // asked about once.
  static auto *backends = new std::map<std::string, Entry>;
  std::lock_guard<std::mutex> lock(mu);
  auto it = backends->find(name);
  if (it == backends->end()) {
    Entry e;
    StatusOr<std::unique_ptr<Backend>> b = CreateBackend(name);
    if (b.ok())
      e.backend = std::move(*b);
    else
      e.error = b.status().message();
    it = backends->emplace(name, std::move(e)).first;
  }
  *error = it->second.error;
  return it->second.backend.get();
}

} // namespace kiln::oracle
