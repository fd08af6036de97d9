"""Device probe: what torch's public SDPA backends accept and what their calls do, per dtype,
head dim, layout and GQA, through the adapters; the refusal reasons captured from Python
warnings and from the C++ stderr both."""
import os, sys, tempfile, warnings
import torch
from flashcheck.cases.case import Case
from flashcheck import peers, protocol

def captured_stderr(fn):
    fd = sys.stderr.fileno(); saved = os.dup(fd)
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        os.dup2(tmp.fileno(), fd)
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                value = fn()
        finally:
            sys.stderr.flush(); os.dup2(saved, fd); os.close(saved)
        tmp.seek(0); text = tmp.read().decode(errors="replace")
    return value, [str(w.message) for w in caught], " ".join(text.split())[:400]

for name, check in (("efficient", "can_use_efficient_attention"), ("cudnn", "can_use_cudnn_attention"),
                    ("flash", "can_use_flash_attention")):
    impl = peers.resolve(f"sdpa-public-{name}")
    print(f"== sdpa-public-{name}")
    for dtype in ("float16", "bfloat16", "float32"):
        for hd in (8, 16, 40, 64, 72, 128, 160, 256):
            for layout in ("contiguous", "heads-first", "padded", "mixed"):
                for heads, kv in ((4, 4), (4, 2)):
                    case = Case(batch=1, seqlen_q=33, seqlen_k=47, heads=heads, kv_heads=kv, head_dim=hd,
                                dtype=dtype, layout=layout, seed=0)
                    try:
                        q, k, v = case.materialize("cuda")
                    except Exception as e:
                        print(dtype, hd, layout, heads, kv, "materialize", e); continue
                    def go():
                        try:
                            protocol.call(impl, (q, k, v), case)
                            torch.cuda.synchronize()
                            return "ran"
                        except NotImplementedError as e:
                            return "declined"
                        except Exception as e:
                            return f"raised {type(e).__name__}: {str(e).splitlines()[0][:120]}"
                    result, warned, err = captured_stderr(go)
                    reason = ""
                    if result == "declined":
                        reason = " | warnings: " + "; ".join(" ".join(w.split())[:200] for w in warned[:3]) + " | stderr: " + err[:300]
                    print(f"{dtype:8} d={hd:3} {layout:11} H={heads} KV={kv}: {result}{reason}")
                    if "CUDA error" in result:
                        sys.exit(0)
