# lit configuration of the compiler tests (maia-opt, maia-compile).
import os

import lit.formats

config.name = "maia-compiler"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".test"]
config.excludes = ["e2e", "Inputs", "CMakeLists.txt", "lit.cfg.py"]
config.test_source_root = config.maia_test_src
config.test_exec_root = config.maia_test_obj

# Our tools first, then FileCheck/not/count from LLVM 19.
path = os.pathsep.join([config.maia_tools_dir, config.llvm_tools_dir,
                        config.environment.get("PATH", os.environ["PATH"])])
config.environment["PATH"] = path
