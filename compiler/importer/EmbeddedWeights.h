//===- EmbeddedWeights.h - serve embedded weights from the file -*- C++ -*-===//
//
// Internal to the importer. An ONNX file without external data carries its
// weights as TensorProto.raw_data, which parsing copies into the message: the
// build then holds every weight in memory until it ends. Protobuf stores a
// bytes field verbatim, so each weight also lies, unchanged, in the file. This
// unit finds where (walking the wire format) and turns large initializers
// into external data that points into the ONNX file itself, freeing their
// copy: the importer then maps the file and aliases it like any external
// data, and the pages it reads are released again (support/SourcePages.h).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_IMPORTER_EMBEDDEDWEIGHTS_H
#define KILN_COMPILER_IMPORTER_EMBEDDEDWEIGHTS_H

#include "llvm/ADT/StringRef.h"

namespace onnx {
class ModelProto;
} // namespace onnx

namespace kiln::onnx_import {

/// The external-data key that marks a tensor moved here: its "location" is
/// the ONNX file itself, not an external-data file of the model.
inline constexpr const char *kEmbeddedKey = "kiln.embedded";

/// Moves the raw_data of `model`'s initializers of at least `minBytes` out
/// of the message, as external data at their offsets in the file at `path`
/// (the file `model` was parsed from). Initializers it cannot locate (an
/// unexpected encoding) keep their raw_data; nothing fails.
void moveEmbeddedWeightsToFile(onnx::ModelProto &model, llvm::StringRef path, uint64_t minBytes);

} // namespace kiln::onnx_import

#endif // KILN_COMPILER_IMPORTER_EMBEDDEDWEIGHTS_H
