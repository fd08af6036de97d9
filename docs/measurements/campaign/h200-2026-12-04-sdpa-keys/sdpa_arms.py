"""A/B of how FlagGems' SDPA pins its autotuners: which key values choose the configuration, and
which case attributes make a compile class. Each arm is a module of its own (a campaign imports
one), patching flashcheck.autotune_pin._key_value in the processes that import it.

    exact    the built-in flaggems-sdpa (key values as they are; seqlen_k in the compile key)
    scale    integer key values by their power of two (bit length); seqlen_k out of the compile key
    ignored  integer key values left out of the choice; seqlen_k out of the compile key
    special  as ignored, with Triton's specialisation (layout, length residues) in the compile key
"""
from flashcheck import autotune_pin
from flashcheck.peers import flaggems

UNKEYED = tuple(name for name in flaggems.SDPA_COMPILE_KEY if name != "seqlen_k")


def arm(key_value, compile_key):
    autotune_pin._key_value = key_value
    impl = flaggems.sdpa()
    impl.flashcheck_compile_key = compile_key
    return impl


def by_scale(value):
    return value.bit_length() if isinstance(value, int) and not isinstance(value, bool) else value


def left_out(value):
    return None if isinstance(value, int) and not isinstance(value, bool) else value
