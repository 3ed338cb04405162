# lit configuration of the lowering tests: each test compiles PyTorch
# functions on maia with torch.compile and FileChecks the generated MLIR.
import os

import lit.formats

config.name = "maia-lowering"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".py"]
config.excludes = ["lowering.py", "lit.cfg.py"]
config.test_source_root = config.maia_test_src
config.test_exec_root = config.maia_test_obj

config.substitutions.append(("%python", config.maia_python))
config.environment["PATH"] = os.pathsep.join(
    [config.llvm_tools_dir, config.environment.get("PATH", os.environ["PATH"])])
config.environment["PYTHONPATH"] = config.maia_test_src
config.environment["MAIA_COMPILE"] = config.maia_compile
config.environment["MAIA_KERNEL_DIR"] = config.maia_kernel_dir
config.environment["MAIA_DEVICE_MEMORY"] = "1G"
config.environment["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(config.maia_test_obj, "inductor-cache")
