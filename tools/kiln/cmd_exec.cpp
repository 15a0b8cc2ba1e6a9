// kiln exec: runs a plan's graph once on ONNX TensorProto inputs and writes
// its outputs as TensorProto files, the exchange format of ONNX's node tests.
#include "cli.h"
#include "cli_args.h"
#include "run_options.h"

#include "kiln/device.h"
#include "kiln/executor.h"
#include "kiln/plan.h"
#include "kiln/tensor_proto.h"

#include <cctype>
#include <cstdio>
#include <sys/stat.h>

namespace kiln::cli {
namespace {

const char kUsage[] =
    "usage: kiln exec model.plan [inputs] [--output-dir DIR] [--device DEV]\n"
    "\n"
    "Runs the plan's graph once and writes each graph output to\n"
    "DIR/<output name>.pb as an ONNX TensorProto (name set; characters other\n"
    "than letters, digits, '.', '-' and '_' in the file name become '_').\n"
    "Without --output-dir it only prints each output's dtype and shape.\n"
    "\n"
    "inputs, one of:\n"
    "  --input NAME=FILE.pb   bind graph input NAME (repeat for each input)\n"
    "  --input-dir DIR        bind DIR/input_0.pb, input_1.pb, ... in graph-input order\n"
    "                         (the layout of ONNX node tests' test_data_set_N)\n"
    "  FILE.pb ...            positional files, in graph-input order\n"
    "\n"
    "options:\n"
    "  --output-dir DIR       write each output there (see above)\n"
    "  --device DEV           what runs the plan: cpu, cuda (GPU 0) or cuda:N (default\n"
    "                         cuda when this kiln has it and a GPU is visible, else cpu);\n"
    "                         --backend DEV is the same\n"
    "\n"
    "Exit status: 0 ok, 2 bad arguments, plan or tensor files, 1 internal error.\n";

std::string SafeFileName(const std::string &name) {
  std::string out = name.empty() ? "output" : name;
  for (char &c : out)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_')
      c = '_';
  if (out == "." || out == "..")
    out = "_";
  return out;
}

// The input files in graph-input order, from whichever form was given.
StatusOr<std::vector<std::string>> InputFiles(const Plan &plan, const ParsedArgs &a) {
  size_t n = plan.inputs().size();
  int forms = a.Has("--input") + a.Has("--input-dir") + (a.positional.size() > 1);
  if (forms > 1)
    return InvalidArgument("give inputs one way: --input, --input-dir or positional files");
  std::vector<std::string> files(n);
  if (a.Has("--input-dir")) {
    for (size_t i = 0; i < n; ++i)
      files[i] = a.Get("--input-dir") + "/input_" + std::to_string(i) + ".pb";
    return files;
  }
  if (a.positional.size() > 1) {
    if (a.positional.size() - 1 != n)
      return InvalidArgument("the plan has " + std::to_string(n) + " inputs, got " +
                             std::to_string(a.positional.size() - 1) + " files");
    for (size_t i = 0; i < n; ++i)
      files[i] = a.positional[i + 1];
    return files;
  }
  for (const std::string &spec : a.All("--input")) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos)
      return InvalidArgument("--input expects NAME=FILE, got '" + spec + "'");
    std::string name = spec.substr(0, eq);
    int id = plan.FindTensor(name);
    int pos = id < 0 ? -1 : plan.InputIndex(id);
    if (pos < 0) {
      std::string names;
      for (int in : plan.inputs())
        names += (names.empty() ? "" : ", ") + plan.tensors()[in].name;
      return InvalidArgument("'" + name + "' is not a graph input; the inputs are: " + names);
    }
    if (!files[pos].empty())
      return InvalidArgument("input '" + name + "' is given twice");
    files[pos] = spec.substr(eq + 1);
  }
  for (size_t i = 0; i < n; ++i)
    if (files[i].empty())
      return InvalidArgument("no file for graph input '" + plan.tensors()[plan.inputs()[i]].name +
                             "'");
  return files;
}

Status Exec(const ParsedArgs &a) {
  // Outlives the executor that runs on it.
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<Device> device, DeviceFromFlag(a));
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<Plan> plan, LoadPlan(a.positional[0]));
  KILN_ASSIGN_OR_RETURN(std::vector<std::string> files, InputFiles(*plan, a));
  std::vector<Tensor> tensors;
  std::vector<TensorView> views;
  for (const std::string &f : files) {
    KILN_ASSIGN_OR_RETURN(Tensor t, ReadTensorProtoFile(f));
    tensors.push_back(std::move(t));
  }
  for (const Tensor &t : tensors)
    views.push_back(t.view());

  KILN_ASSIGN_OR_RETURN(std::unique_ptr<Executor> exec, Executor::Create(*plan, device->backend()));
  // The user gave the inputs, paged attention's indices included.
  exec->SetCheckPagedInputs(true);
  KILN_RETURN_IF_ERROR(exec->Bind(views));
  KILN_RETURN_IF_ERROR(exec->Run());
  KILN_RETURN_IF_ERROR(exec->Wait());

  std::string dir = a.Get("--output-dir");
  if (!dir.empty()) {
    ::mkdir(dir.c_str(), 0755); // an existing directory is fine
    struct stat st;
    if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      return InvalidArgument("cannot create output directory '" + dir + "'");
  }
  std::vector<TensorView> outs = exec->outputs();
  for (size_t i = 0; i < outs.size(); ++i) {
    const std::string &name = plan->tensors()[plan->outputs()[i]].name;
    std::printf("%s: %s%s\n", name.c_str(), DTypeName(outs[i].dtype),
                ShapeToString(outs[i].shape).c_str());
    if (dir.empty())
      continue;
    Tensor t(outs[i].dtype, outs[i].shape, name);
    KILN_RETURN_IF_ERROR(exec->CopyOutputToHost(static_cast<int>(i), t.bytes().data()));
    std::string path = dir + "/" + SafeFileName(name) + ".pb";
    Status st = WriteTensorProtoFile(path, t);
    // The plan ran; failing to write is the host's problem, not the input's.
    if (!st.ok())
      return Internal(st.message());
  }
  return Status::Ok();
}

} // namespace

int ExecMain(const std::vector<std::string> &args) {
  ParsedArgs a;
  std::string err = ParseArgs(
      args, {"--input", "--input-dir", "--output-dir", "--device", "--backend"}, {}, {}, &a);
  if (a.help) {
    std::printf("%s", kUsage);
    return kExitOk;
  }
  if (!err.empty())
    return Usage("exec", err, kUsage);
  if (a.positional.empty())
    return Usage("exec", "expected a plan file", kUsage);
  Status st = Exec(a);
  return st.ok() ? kExitOk : Fail("exec", st);
}

} // namespace kiln::cli
