# KILN_PORTABLE=ON: binaries that run on a machine without this one's -dev
# packages (the GPU machine, docs/gpu.md). tools/gpu/build_bundle.sh builds
# with it and packs the result.
#
# - MLIR and LLVM: their static archives (kiln_portable_mlir_libs below)
#   instead of libMLIR.so/libLLVM.so.
# - OpenBLAS, PCRE2 and zlib: static archives. Only the BLAS part of OpenBLAS
#   is linked, so libgfortran is not needed.
# - cudart: static (kiln_backend_cuda links CUDA::cudart_static); cuBLASLt and
#   the driver stay dynamic, taken from the machine.
# - ONNX has no static archive in Debian, and its libonnx.so links the shared
#   protobuf and libstdc++; those (and libgcc_s, libz) travel in the bundle's
#   lib/, found through an RPATH of $ORIGIN/../lib. DT_RPATH (not RUNPATH), so
#   that it also applies to the libraries' own dependencies and wins over a
#   stray LD_LIBRARY_PATH. One libstdc++ in the process: the bundle's.
# - Dead sections dropped at link time (LLVM's archives are built with
#   -ffunction-sections); the bundle script strips the copies it packs.
#
# Compile flags are those of a plain Release build, so ccache serves objects
# compiled by other build directories.

if(KILN_SANITIZE OR KILN_FUZZ)
  message(FATAL_ERROR "KILN_PORTABLE does not combine with KILN_SANITIZE or KILN_FUZZ")
endif()

# find_library(<var> <archive name> <hint dirs>...): the full path of a static
# archive, or a configure error that names it.
function(kiln_portable_archive var name)
  find_library(${var} NAMES ${name} HINTS ${ARGN} NO_CACHE)
  if(NOT ${var})
    message(FATAL_ERROR "KILN_PORTABLE: no static ${name} (hints: ${ARGN})")
  endif()
  set(${var} ${${var}} PARENT_SCOPE)
endfunction()

kiln_portable_archive(KILN_OPENBLAS_ARCHIVE libopenblas.a ${OPENBLAS_LIBRARY_DIRS})
kiln_portable_archive(KILN_PCRE2_ARCHIVE libpcre2-8.a ${PCRE2_LIBRARY_DIRS})
kiln_portable_archive(KILN_ZLIB_ARCHIVE libz.a)
set_target_properties(PkgConfig::OPENBLAS PROPERTIES
  INTERFACE_LINK_LIBRARIES "${KILN_OPENBLAS_ARCHIVE};Threads::Threads;m")
set_target_properties(PkgConfig::PCRE2 PROPERTIES INTERFACE_LINK_LIBRARIES "${KILN_PCRE2_ARCHIVE}")

set(CMAKE_BUILD_RPATH "\$ORIGIN/../lib")
add_link_options(LINKER:--disable-new-dtags LINKER:--gc-sections)

# kiln_portable_mlir_libs(<var>): what kiln_mlir links instead of MLIR and
# LLVM: every MLIR and LLVM archive, in one group that the linker rescans, so
# only the objects kiln uses are pulled in, in whatever order they need each
# other; then the system libraries those objects call.
function(kiln_portable_mlir_libs var)
  file(GLOB archives ${LLVM_LIBRARY_DIR}/libMLIR*.a ${LLVM_LIBRARY_DIR}/libLLVM*.a)
  if(NOT archives)
    message(FATAL_ERROR "KILN_PORTABLE: no MLIR/LLVM archives in ${LLVM_LIBRARY_DIR}")
  endif()
  list(JOIN archives "," group)
  set(${var} "$<LINK_GROUP:RESCAN,${group}>" ${KILN_ZLIB_ARCHIVE} Threads::Threads dl rt m
      PARENT_SCOPE)
endfunction()
