"""A/B of FlagGems' compile keys: the built-in adapters with a key naming every tl.constexpr."""
from flashcheck.peers import flaggems

flash_wide = flaggems.flash()
flash_wide.flashcheck_compile_key = ("dtype", "head_dim", "softmax_scale", "window", "heads", "batch")
varlen_wide = flaggems.varlen()
varlen_wide.flashcheck_compile_key = ("dtype", "head_dim", "softmax_scale", "window", "heads")
varlen_k = flaggems.varlen()
varlen_k.flashcheck_compile_key = ("dtype", "head_dim", "softmax_scale", "window", "heads", "seqlen_k")
