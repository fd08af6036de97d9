"""Probe: the varlen lead's shape, one thing changed at a time (paged, as the adapter calls it)."""
import importlib.util, sys
spec = importlib.util.spec_from_file_location("v3", ".gpu/gems_varlen3_lib.py")
v3 = importlib.util.module_from_spec(spec); spec.loader.exec_module(v3)
import torch
P = lambda *a: print(*a, flush=True)
base = [(180, 180), (896, 896), (3, 3)]
for lens in (base, [(180, 180), (3, 3)], [(64, 64), (896, 896), (3, 3)], [(180, 180), (896, 896), (5, 5)],
             [(180, 180), (896, 896), (1, 1)], [(180, 180), (896, 896), (3, 3), (7, 7)], [(3, 3), (180, 180), (896, 896)],
             [(100, 100), (100, 100), (3, 3)], [(16, 16), (16, 16), (3, 3)], [(2, 81), (122, 122), (37, 37), (3, 3), (2, 3)]):
    for d, dtype in ((136, torch.bfloat16), (64, torch.float16)):
        for h, hk in ((5, 5), (14, 2)):
            for left, right in ((3, 1), (2, 2), (3, 0), (-1, -1)):
                P(f"lens={lens} h{h}:{hk} d{d} {str(dtype)[6:]} window=({left},{right}): "
                  f"{v3.run(lens, h, hk, d, left, right, True, dtype)}")
