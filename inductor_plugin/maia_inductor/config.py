"""The maia Inductor backend's configuration (Inductor's device_custom_config).

Its values are part of the FX graph cache key, so a graph compiled by one
compiler (or for one CPU) is never served to another.
"""

import os
import sys

from torch.utils._config_module import install_config_module

# Set by maia_inductor.register(): the compiler binary in use, and a hash of
# this plugin's sources (code generation changes must miss the FX graph cache).
compiler_version: str = ""
target_cpu: str = ""
plugin_hash: str = ""
opt_level: int = int(os.environ.get("MAIA_INDUCTOR_OPT_LEVEL", "2"))
# Pointwise kernels whose output (one buffer, static shape) has at least this
# many bytes store it with streaming (non-temporal) stores: the threshold of
# the eager kernels (runtime/kernels/eager/streaming_store.h). Dynamic shapes
# keep ordinary stores.
streaming_store_min_bytes: int = int(os.environ.get("MAIA_INDUCTOR_STREAMING_STORE_MIN_BYTES",
                                                    str(8 << 20)))
# mm/addmm/bmm/baddbmm as GEMM template kernels with fused epilogues (gemm_template.py);
# off: extern calls into the eager GEMM kernels, as before the templates.
gemm_templates: bool = os.environ.get("MAIA_INDUCTOR_GEMM_TEMPLATES", "1") != "0"
# 2-D fp32 convolutions with pointwise consumers as convolution template
# kernels with fused epilogues and channels-last outputs (conv_template.py);
# off: extern calls into the eager convolution kernels.
conv_templates: bool = os.environ.get("MAIA_INDUCTOR_CONV_TEMPLATES", "1") != "0"
# Generate every GEMM template with this tile configuration, or as the
# extern kernel ("extern"), instead of the default one (or, under
# mode="max-autotune", the one timing chooses): gemm_configs.CHOICE_NAMES.
# For tests and measurements; empty: not forced.
gemm_config: str = os.environ.get("MAIA_INDUCTOR_GEMM_CONFIG", "")
# Every kernel's .mlir and .maiabin are copied here when set.
dump_dir: str = os.environ.get("MAIA_INDUCTOR_DUMP_DIR", "")

install_config_module(sys.modules[__name__])
