# lit configuration for kiln's dialect, importer and pass tests.
#
# Tests run kiln-opt / kiln-import from the build tree and FileCheck / not
# from LLVM 19. Run them with `ctest -R lit` or `ninja check-kiln-lit`.
import os

import lit.formats

config.name = "kiln"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.kiln_obj_root, "test", "lit")

# kiln tools first, then LLVM's FileCheck and not; nothing else from PATH is
# needed.
path = os.pathsep.join([config.kiln_tools_dir, config.llvm_tools_dir,
                        config.environment.get("PATH", os.environ.get("PATH", ""))])
config.environment["PATH"] = path
# Tests of the committed fixture models read them from the source tree.
config.substitutions.append(("%kiln_src_root", config.kiln_src_root))
# The kiln CLI (kiln build ...) and the example pass plugin.
config.substitutions.append(("%kiln_plugin", config.example_plugin))
config.substitutions.append(("%mlir_include", config.mlir_include))
config.substitutions.append(("%kiln ", config.kiln_bin + " "))

# Sanitizer builds: leaks in the tools are reported by the unit tests, not
# here, and a symbolizer may be absent.
for var in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
