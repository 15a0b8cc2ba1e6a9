//===- SourcePages.h - drop read model-file pages from RSS -------*- C++ -*-===//
//
// Large weights alias memory-mapped external-data files (TensorImport.cpp).
// Every page of such a file that the build reads (fusion passes concatenating
// weights, the plan writer streaming them out) stays mapped and counts in the
// process's resident memory until the mapping goes, which is only at the end
// of the build: a 4 GB model would cost 4 GB of RSS on top of everything else.
// The importer registers each mapping here, and readers release the pages of
// a weight once they have copied it: the pages are clean and file-backed, so
// the kernel reads them back from the page cache if anything touches them
// again. Memory that is not inside a registered mapping (heap blobs) is never
// touched.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_SUPPORT_SOURCEPAGES_H
#define KILN_COMPILER_SUPPORT_SOURCEPAGES_H

#include <cstdint>

namespace kiln::compiler {

/// Records [begin, begin + size) as a read-only mapping of a model file.
void registerMappedFile(const void *begin, uint64_t size);
/// Forgets the mapping that starts at `begin` (before it is unmapped).
void unregisterMappedFile(const void *begin);

/// Drops the resident pages of [data, data + size) when the range lies in a
/// registered mapping; does nothing otherwise.
void releaseSourcePages(const void *data, uint64_t size);

/// Drops the resident pages of every registered mapping.
void releaseAllSourcePages();

} // namespace kiln::compiler

#endif // KILN_COMPILER_SUPPORT_SOURCEPAGES_H
