#!/usr/bin/env python3
"""Reproduces grads_match_reference for sdpa-efficient, without flashcheck.

Property: dQ, dK and dV agree with float64 analytic gradients within the derived tolerance, for upstream gradients of several scales (and a random upstream gradient of lse).
Case: batch=1 seqlen_q=31 seqlen_k=31 heads=1 kv_heads=1 head_dim=16 dtype=float16 causal=False window=-1,-1 softmax_scale=None layout=contiguous values=large-logits seed=230
Device: cuda (run with --device to choose another)
Replay with flashcheck: flashcheck check --impl sdpa-efficient --property grads_match_reference --case 'batch=1 seqlen_q=31 seqlen_k=31 heads=1 kv_heads=1 head_dim=16 dtype=float16 causal=False window=-1,-1 softmax_scale=None layout=contiguous values=large-logits seed=230'

What flashcheck reported:
    (not recorded)

Needs torch and torch's aten._scaled_dot_product_efficient_attention. Exit status: 1 where the property fails (or the kernel raises), 0 where it holds, 2 where it cannot be checked on the device chosen.
The inputs are embedded bit for bit, with their strides; float64 attention and its gradients are
computed below; the allowed error of each element is flashcheck's tolerance model's for these inputs.
"""

# -- the kernel, called as flashcheck calls it --------------------------------------------------
import math
import sys

# flashcheck.peers.plain_packing, which the translation below uses.
"""A dense batch through a packed (variable-length) call, in plain torch: what every
plain-call module of a varlen kernel (:mod:`flashcheck.peers.fa2_call`,
:mod:`~flashcheck.peers.fa4_call`, :mod:`~flashcheck.peers.flaggems_call`) does with a case that
is not packed.

A standalone script carries this module's source before its translation's, without the
translation's import of it (:mod:`flashcheck.repro.calls`): it imports nothing but torch.
"""

import torch


def pack_dense(q, k, v):
    """Dense ``(B, N, H, D)`` q, k, v as one packed sequence per batch entry:
    ``(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k)``, the tensors
    ``(B·N, H, D)`` (a reshape: a view where the strides allow), the offsets int32 on q's device."""
    batch, nq, nk = q.shape[0], q.shape[1], k.shape[1]
    steps = torch.arange(batch + 1, device=q.device, dtype=torch.int32)
    packed = (t.reshape(-1, *t.shape[2:]) for t in (q, k, v))
    return (*packed, steps * nq, steps * nk, nq, nk)


def unpack_dense(out, lse, batch, nq):
    """A packed call's out ``(B·N, H, D)`` and lse ``(H, B·N)`` of :func:`pack_dense`'s
    sequences back in the dense layouts ``(B, N, H, D)`` and ``(B, H, N)`` (views)."""
    out = out.reshape(batch, nq, *out.shape[1:])
    lse = lse.reshape(lse.shape[0], batch, nq).permute(1, 0, 2)
    return out, lse


def document_mask(cu_seqlens_q, cu_seqlens_k, left, right):
    """Boolean ``(Tq, Tk)`` of packed sequences run as one dense batch: query token i may attend
    key token j iff both are of the same sequence and, at their positions within it, j lies in
    the band ``[i + nk - nq - left, i + nk - nq + right]`` (bottom-right per sequence; -1
    unbounded). The same mask as flashcheck's own packed-as-dense translation, written here in
    plain torch so that a script carries it (tests/test_campaign.py checks the two agree)."""
    cq, ck = (c.to(torch.int64) for c in (cu_seqlens_q, cu_seqlens_k))
    queries = torch.arange(int(cq[-1]), device=cq.device)
    keys = torch.arange(int(ck[-1]), device=cq.device)
    seq_q = torch.searchsorted(cq, queries, right=True) - 1
    seq_k = torch.searchsorted(ck, keys, right=True) - 1
    diagonal = (queries - cq[seq_q]) + (ck[1:] - ck[:-1] - cq[1:] + cq[:-1])[seq_q]
    position_k = keys - ck[seq_k]
    allowed = seq_q[:, None] == seq_k[None, :]
    if left != -1:
        allowed &= position_k[None, :] >= diagonal[:, None] - left
    if right != -1:
        allowed &= position_k[None, :] <= diagonal[:, None] + right
    return allowed

# flashcheck.peers.sdpa_public_call, which the translation below uses.
"""torch's public ``scaled_dot_product_attention`` called as flashcheck calls it: the protocol's
arguments translated into SDPA's, in plain torch.

The ``sdpa-public-*`` adapters (:mod:`flashcheck.peers.sdpa_public`) call these functions, and a
standalone reproduction script of their failures (:mod:`flashcheck.repro.calls`) carries this
module's source, so that the script calls SDPA exactly as flashcheck did, without flashcheck. It
imports nothing but torch.

``scale`` is the softmax scale in effect; ``left`` and ``right`` the band that ``causal`` and
``window`` make together (-1 unbounded, causal's right side 0); ``attn_mask`` the protocol's
boolean mask (True = may attend) or None. torch's ``is_causal`` is top-left aligned, the
protocol's causal bottom-right: the two agree only for ``Nq == Nk``, so ``is_causal=True`` is
passed only for plain causal with ``Nq == Nk`` and no mask, and every other restriction is one
boolean ``attn_mask`` with the band folded in.
"""

import torch

#: GQA through ``enable_gqa`` (torch 2.5 and later); K/V heads repeated before that.
HAS_GQA = torch.torch_version.TorchVersion(torch.__version__) >= (2, 5)


def band(nq, nk, left, right, device):
    """Boolean ``(Nq, Nk)``: query i may attend key j iff ``-left <= j - i - (Nk - Nq) <= right``."""
    offset = torch.arange(nk, device=device)[None, :] - torch.arange(nq, device=device)[:, None] - (nk - nq)
    allowed = torch.ones(nq, nk, dtype=torch.bool, device=device)
    if left != -1:
        allowed &= offset >= -left
    if right != -1:
        allowed &= offset <= right
    return allowed


def as_4d(mask):
    """A boolean mask broadcastable to ``(B, H, Nq, Nk)`` as a 4-D view (leading dims of one)."""
    return mask.reshape((1,) * (4 - mask.dim()) + tuple(mask.shape))


def band_and_mask(q, k, *, left, right, attn_mask):
    """The band AND the protocol's mask for ``(B, N, H, D)`` q and k, boolean ``(B|1, H|1, Nq,
    Nk)``; None when every key is allowed."""
    if left == -1 and right == -1 and attn_mask is None:
        return None
    allowed = band(q.shape[1], k.shape[1], left, right, q.device)[None, None]
    return allowed if attn_mask is None else allowed & as_4d(attn_mask)


def additive_bias(keep, dtype, batch, heads, align=16):
    """The boolean ``keep`` (True = may attend, broadcastable to ``(B, H, Nq, Nk)``) as an
    additive bias, 0 where kept and -inf elsewhere, in ``dtype``: ``(B, H, Nq, Nk)`` broadcast
    views of storage whose key axis is padded to a multiple of ``align`` elements (at least
    one multiple), the alignment memory-efficient kernels ask of a bias's rows. Used by the
    translations for kernels that take a bias rather than a mask (torch's private efficient
    operator, xformers)."""
    keep = as_4d(keep)
    bm, hm, nq, nk = keep.shape
    padded = max(-(-nk // align) * align, align)
    bias = torch.zeros(bm, hm, nq, padded, dtype=dtype, device=keep.device)[..., :nk]
    bias.masked_fill_(~keep, float("-inf"))
    return bias.expand(batch, heads, nq, nk)


def native_causal(causal, nq, nk, left, has_mask) -> bool:
    """Whether the band goes to SDPA as its own ``is_causal``: plain causal with ``Nq == Nk``
    and no mask (``is_causal`` is top-left aligned, the protocol's bottom-right)."""
    return causal and nq == nk and left == -1 and not has_mask


def arguments(q, k, v, *, causal, left, right, attn_mask):
    """``(q, k, v, attn_mask, is_causal, gqa_kwargs)`` as SDPA takes them: ``(B, H, N, D)``
    views, the band and the mask as one boolean mask broadcastable to ``(B, H, Nq, Nk)``."""
    native = native_causal(causal, q.shape[1], k.shape[1], left, attn_mask is not None)
    mask = None if native else band_and_mask(q, k, left=left, right=right, attn_mask=attn_mask)
    q, k, v = (t.transpose(1, 2) for t in (q, k, v))
    gqa = {"enable_gqa": q.shape[1] != k.shape[1]}
    if not HAS_GQA:
        k, v = (t.repeat_interleave(q.shape[1] // k.shape[1], dim=1) for t in (k, v))
        gqa = {}
    return q, k, v, mask, native, gqa


def run_backend(backend, q, k, v, mask, is_causal, gqa, *, scale):
    """SDPA under ``sdpa_kernel(backend)`` (an ``SDPBackend`` member's name) on
    :func:`arguments`' output: out back in ``(B, Nq, H, D)``, and no lse (the public API returns none)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel(getattr(SDPBackend, backend)):
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=0.0,
                                                               is_causal=is_causal, scale=scale, **gqa)
    return out.transpose(1, 2), None

# flashcheck's translation of the protocol into this library's call (flashcheck.peers.sdpa_call).
"""torch's private fused SDPA operators, and SDPA's math backend, called as flashcheck's
``sdpa-*`` adapters call them: the protocol's arguments translated into the operators', in
plain torch.

The adapters (:mod:`flashcheck.peers.sdpa`) call these functions, and a standalone
reproduction script of their failures (:mod:`flashcheck.repro.calls`) carries this module's
source, and that of the plain-call modules it imports, so that the script calls torch exactly
as flashcheck did, without flashcheck. q, k, v are the protocol's ``(B, N, H, D)``; ``scale``
the softmax scale in effect; ``left`` and ``right`` the band (-1 unbounded, causal's right
side 0); ``attn_mask`` the protocol's boolean mask or None. What the adapters decline
(causal with Nq != Nk for flash and cuDNN, cuDNN's backward of one query and one key) is the
adapter's to refuse before calling here.
"""

import torch





def repeat_kv(t, heads):
    """(B, N, Hkv, D) -> (B, N, heads, D); query head h reads KV head h // (heads // Hkv)."""
    return t if t.shape[2] == heads else t.repeat_interleave(heads // t.shape[2], dim=2)


def kernel_ready(t):
    """(B, N, H, D) as the fused CUDA kernels accept it: D zero-padded to a multiple of 8,
    pointer and non-unit strides 16-byte aligned (else a contiguous copy).

    The private ops do neither (torch's public SDPA does both before calling them); a
    misaligned input faults with a sticky "misaligned address" CUDA error that poisons the
    whole process. Zero columns of q and k leave every score unchanged, and zero columns of v
    give output columns that the caller slices off."""
    if t.shape[-1] % 8:
        # The padded copy keeps the input's dimension order, so it may still need the copy below.
        t = torch.nn.functional.pad(t, (0, 8 - t.shape[-1] % 8))
    # Not .contiguous(): a view whose other dimensions have size 1 counts as contiguous and
    # would come back as it is, misaligned pointer and all.
    return t if aligned(t) else t.clone(memory_format=torch.contiguous_format)


def aligned(t) -> bool:
    """Whether ``t``'s data pointer and every stride but the last (which is 1) are 16-byte
    aligned: what torch's fused SDPA kernels assume of their inputs."""
    elements = 16 // t.element_size()
    return t.data_ptr() % 16 == 0 and t.stride(-1) == 1 and all(s % elements == 0 for s in t.stride()[:-1])


def fused_inputs(q, k, v):
    """q, k, v as ``(B, H, N, D)`` views, kernel-ready, with K/V heads repeated to q's."""
    heads = q.shape[2]
    return tuple(kernel_ready(t).transpose(1, 2) for t in (q, repeat_kv(k, heads), repeat_kv(v, heads)))


def output_and_lse(op, result):
    """Pick (output, logsumexp) from a private op's result by the schema's return names."""
    names = [r.name for r in op._schema.returns]
    lse_at = next((i for i, n in enumerate(names) if "sumexp" in n), 1)
    return result[names.index("output") if "output" in names else 0], result[lse_at]


def run_math(q, k, v, *, scale, left, right, attn_mask, cu_seqlens_q=None, cu_seqlens_k=None):
    """SDPA forced to the math backend under one explicit boolean mask (torch's ``is_causal``
    is top-left aligned, so never used); no lse (the public API returns none). Packed input
    (``cu_seqlens_*``) runs as a dense batch of one under :func:`document_mask`, its output
    returned packed."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    if cu_seqlens_q is not None:
        mask = document_mask(cu_seqlens_q, cu_seqlens_k, left, right)[None, None]
        out, _ = run_math(q[None], k[None], v[None], scale=scale, left=-1, right=-1, attn_mask=mask)
        return out[0], None
    mask = band_and_mask(q, k, left=left, right=right, attn_mask=attn_mask)
    gqa = {"enable_gqa": q.shape[2] != k.shape[2]}
    if not HAS_GQA:
        k, v, gqa = repeat_kv(k, q.shape[2]), repeat_kv(v, q.shape[2]), {}
    with sdpa_kernel(SDPBackend.MATH):
        out = torch.nn.functional.scaled_dot_product_attention(
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), attn_mask=mask, scale=scale, **gqa)
    return out.transpose(1, 2), None


def run_flash(q, k, v, *, scale, causal):
    """``aten._scaled_dot_product_flash_attention`` (its ``is_causal`` only where Nq == Nk,
    where top-left and bottom-right agree): out ``(B, Nq, H, D)`` and lse (natural log)."""
    op = torch.ops.aten._scaled_dot_product_flash_attention.default
    result = op(*fused_inputs(q, k, v), dropout_p=0.0, is_causal=causal, return_debug_mask=False, scale=scale)
    out, lse = output_and_lse(op, result)
    return out.transpose(1, 2)[..., : q.shape[-1]], lse


def run_cudnn(q, k, v, *, scale, causal):
    """``aten._scaled_dot_product_cudnn_attention``, as :func:`run_flash`; its lse's trailing
    stats dimension of size 1 dropped."""
    op = torch.ops.aten._scaled_dot_product_cudnn_attention.default
    result = op(*fused_inputs(q, k, v), attn_bias=None, compute_log_sumexp=True, dropout_p=0.0, is_causal=causal,
                return_debug_mask=False, scale=scale)
    out, lse = output_and_lse(op, result)
    if lse.dim() == 4:
        lse = lse.squeeze(-1)
    return out.transpose(1, 2)[..., : q.shape[-1]], lse


def run_efficient(q, k, v, *, scale, causal, left, right, attn_mask):
    """``aten._scaled_dot_product_efficient_attention``: its own ``is_causal`` for plain causal
    with Nq == Nk; every other restriction as an additive 0/-inf bias (:func:`additive_bias`);
    its lse, padded along the queries to a multiple of 32, sliced back to Nq."""
    op = torch.ops.aten._scaled_dot_product_efficient_attention.default
    nq = q.shape[1]
    native_causal = causal and nq == k.shape[1] and left == -1 and attn_mask is None
    allowed = None if native_causal else band_and_mask(q, k, left=left, right=right, attn_mask=attn_mask)
    bias = None if allowed is None else additive_bias(allowed, q.dtype, q.shape[0], q.shape[2])
    result = op(*fused_inputs(q, k, v), attn_bias=bias, compute_log_sumexp=True, dropout_p=0.0,
                is_causal=native_causal, scale=scale)
    out, lse = output_and_lse(op, result)
    return out.transpose(1, 2)[..., : q.shape[-1]], lse[..., :nq]


def attention(q, k, v, *, causal=False, window=(-1, -1), softmax_scale=None, attn_mask=None, cu_seqlens_q=None,
              cu_seqlens_k=None, max_seqlen_q=None, max_seqlen_k=None):
    """The protocol's call, translated as flashcheck's adapter 'sdpa-efficient' translates it."""
    left, right = window
    if causal:
        right = 0  # causal is the band (left, 0), aligned bottom-right
    scale = 1.0 / math.sqrt(q.shape[-1]) if softmax_scale is None else float(softmax_scale)
    request = dict(scale=scale, causal=bool(causal), left=left, right=right)
    return run_efficient(q, k, v, scale=request['scale'], causal=request['causal'], left=request['left'], right=request['right'], attn_mask=attn_mask)

# -- the exact inputs, the upstream gradients and the allowed errors (torch.save, lzma, base85) ------
PAYLOAD = (
    '{Wp48S^xk9=GL@E0stWa8~^|S5YJf5;D13-id_IG61-q1=M9UfQZ*A>u6;qdx3e%a7_P;4<v6yXiQ42|nuy5#xFt0J`8Vw=rexWf'
    't2%Ydx^oVvTojU&c;wa%WxA>EFa!}o0OtZ|RYjrYcDFHgtKvYheB&*Pp`uCz{QNK*jVc3gBN2O*N0D9E@w=hM0vqgfrx%$rab#BT'
    '4wGq$VS`j)AIn36jup^CJ><7KeSNTLLSQLlU<2W~1zCDT_MtmbZjyETzl8dA6Q4=)mVDtK7M_&Us+d9r#YD&tiYU$U!^jK2r@TrO'
    'qy;Gf;$!YtJLAp2-}JNf>@6_(xZZ|INnukB7&y^r$AMY5h6#TdK6Db<V!QP%%`9W{)eA5y!U4hjQjWG4O$RdXMH6}PyZ1EEQ*|{f'
    'VST^Xr(7v1wNs^J2Elin2&koWE3S2KfXaZs2{Rnz#YNk^wjVcz-LsUJ#sRkYey&ngxABdVYu_J5;ahjiV>B3ypP28P^YE&$sKAVo'
    'WNbL$G3mFkY2(Ou+^*u|*x(N8M6K`D*<j9A>7zn0g(LaKZbVz^{z1dm|4K1nx1em@o;{|u-B296Z0BpT*neAkO_T^=q>W#QABJmM'
    'nM-awoG;4g*5Mm4E=I;FKT4yiPpS~Ia%S6JG3`Q-z!a0nX8|t0OcLcWsQ6OfPfUVbMMuXiR@ab~x5A|PQf4jNCt;6rsKl|PNkuX-'
    'y>lLxUk9Ue@j?BW9}m0&XKVtWWf9Hg0m=y}Rs2MnO>&cLwrrDvRD#OzQTdDJ4VyrxP9e5>R08_9KnV~bCCS`L9?mT;RG}}+VT7#A'
    '**-|{=ONuw=Av&U73;Ueln`oGh_?3)&J+0^_U>Rco}1_<4k;ltvboZ+lAHP+WPParqjIZ^MaJ1w+E{fw)FYvWqbQz&jDx{6@JD=%'
    'TWM@{jsrJuVHR4=vtltTO{@dnlZS`#Jq1`WkBRAXT1t%N*wtKCx@D6cmmTFse<AETc?95|@GPk@BV%^PKiirBOb{t)vW@})_VUYi'
    'W(A(J$MVj6kF!L&+BRbex>waWOE_`z1a;^9I}m(C-#v25-sQih0HL*k9ys!&I`!}a$dA_5CC`^}k?swPIJ^Y86H}pD-Lpi3iRh77'
    'CgE)ju|r|dsq<dyU1pJNH{xeAJ;>XS3$cb%1|cI(KO$ihdrBkbghb2C<Fi-CT1@T+7U|6h0eRYKtFZ-^-+;LxP$7t+|H0)|{lhj%'
    '0_Ebgh7l-afFsoT0bsvs*e$(s60{~|$HP#+K1woewovZHcgb^!uh1{6+oheC21#_Oc2w1`TuCPjJ=H90g?%mxg5%8h2RwP0CdtY}'
    '^+9+PlD_+akv#!Qe#%<ofz{j^GvUeeC&?r@|7MHiQ+4ht+7BaWWVl2RmTHu9>&n}9+^A4aK&hEc1Eulos=S_Lkgi7_FCbFH7@WTt'
    '(4?9M`aV(;X%F%Cg;7py345MmrYfQviwrW@5d4nV*YD4sE{<2UT}3T0KO3yv+b+V=MMJ=b*<ro%4H|AxuCS%UX5MY!FijXj(dzqs'
    'VMo(n-^=p1L`E_bq82g*4~FB;<B{eZwdg&wz-0&{X>mEv{AtvqtrGvI;E@Zm_ELham)hJ?h$nQ`q7wEG7L02H%d)Q8yBxKMQaAEr'
    'qD}^Ap8!f(h-B0^$M@7--J$_H5#cYa2r<E$yOL_Lnm(FWnv3%3-!1(tv1$)|tQD>I%I$16%A*(S8>6zioljb<U{s!jibTWOdA9L!'
    'z3bQoUNk2+{miQkffI#^@GLlUw(G6yaT2apX_T^dvniKAP3vxGv$n&6-j}_8(uST<P;Z4uT`#*-VTBtgXuD`pS6si5DcgJ8?uY-~'
    '!gyjkU7B_`qu+Eonlpx}>+B#eWrk-4A!MfyVa*S1y;PR@Qa_m^CJ?p!-;tRRDi4lGbOl+ULA7%}q`=<TL!~6eKC$RvvphNFY9%AU'
    'hasgUBR#-|vz#}$N$MY8Nwv98ZA$I}FBWjVL-{&+<S&WNtPuu(%C_`facUD;)L4Wsd7g;MY|!D+q;UkbwuYHkVS#&@V&>Vn+=>Ri'
    'pKCdD0cD9pQwCRYsxB$*EQ~%|s*xB5RSz;_x><BTRg4S;y<(&|t(_*ofG6dl8a||#nqAz^;lw}ZDcCtOWRdo$3`e>@4Pvia@aiX#'
    'u~W#}SGvubwY7kQU<G;fbE`(@#UANGH6@@3Z_BHv-ZFX}zBR|S2&)edwEhm>e7u2a7PkzgEqW0dIkiO5<$)>FQv7KjYub`7V6m1#'
    '7tKv)rA}*-d}Inze5U$MKKRaSjx}X?4xEieY%cLy8a!f7`!;FJmL}8sf{0G91%&yrSpvpYK@Rbe?6J!a%F$X1J0)xL#gr5!#(ZhS'
    '4R<3_4%tzH9Ndx^<D?kgsV1~%D~SGBh@L+)3KNn}noaPBWb3ig6`~uzXr~3F6uyT;BeKSzf_EuJeSOoYt-&nNYpb-_#MOPNcWlv#'
    'y{^r3NBa6qaf6vdOcf}hcTyLd=~EjvRF<ups`c({gm9|m5jcWL9~)YlXTYCMCF5Sh0>MpL_iO0&jX61ax(CbZih*I*QmkMbhtTW;'
    '?uvx~H6%$^>)x>m&1qQW(#Cg4XZH@G#&hQS!^AcDK}8v#uFvfUK6Kxx=$H%V1isx&3Bj>PDG-d;iMTOU7%@$j!+D)@WJFEVaM$f$'
    'CDRMb<V>(cL0~=^d#Tfw<R^fy^u!xh5AQ#(ZRm0u`3B$0|8eu5LT8T7;Yq2RM*vjJgX&U}wsz;rBVkZ##Fu((d*uA^lYRS&{+%!d'
    'Da(ze194wjf=KF7EFTH$4w`aRXe|n8$cw9yJ_EmOgZxGh#}u>~vnXlO$F>e8aQYk?HTx6zb`dm()Q0OmF&yP}(@aATehgSUsd+KV'
    'WtegHOEqD$2CDV#N#UxrO6NrFz@pC6`SHIlKrs5DVS|DZAl{!tzT(pbFDTR|vsbhH#c17mAX3T0wYX2FFKvCOtb>JiIQYwhP%+G;'
    '=k3g)`J{UmeT;a?k9NJ-k-B2H8rvg(cuov8cW+!FL&4(?2(e)l=5fVwkXIlPyWi+orG--(59Ef&8LF;=`uQ7OB6w&QGJ7*Nm3r^r'
    'JZI&68l`Bj4z6sUoC+@IWqn@Nx$RQTYTH0(5amoojM4BhY>Ui}H;@kO@Bdx&Q|>Axt8;?qsKaNb>rMn)1tWd*aj+ofVUdTy-D?-2'
    'cc8K;+#(*8h&j_M>fau%QsW->v)7SR%usr~1<lXKNtZA883;#SuFg<a8?P4ZUQeHH8pw5`m{b_&r{hu}D?@6aAF#L!t@11-V1*;@'
    ')~w5NFT_;VF|?G=*e9I+T~O4AvTXjeLfx8fDNs#I41{8Q8%1suF7#31ia|v!WA(6UKVVi9&Dr4vC#T7?+HfPHIc+{-jQ6HDZN0Ej'
    'KN+b)st6_oSf%*tV8UD0@Ra$Rj;V`F31u?61ESn}!<l|g6@AX#;%~0TNImI#9;Wpy-Um=OI8cSA`f!IE2%0{DTivOZKK}mnKS~~s'
    'w>$=!k}#GE_&wdUWGx~{lgtUJWWO_Gmg(5no7ZJj1Y<BM;$1t-^TDXSY~K4Q3$`5W*Ec6<g!ta2IOn!8E6bgv5RxkPAA)l-REhju'
    '1m}h{S?%i{O$>tuFe*@}WMDYn0|U8xd;Z;K>@vAu{g%r$?iELRJ|fK0{e<i_CbMVZ1?W$X#(9<0ZEN$HpO)4I@pDk6P6L7VeqoA@'
    '9}A85>J>1Xc&-A&Fp?Y|J)2F^kG*=oN9vYJA;ZnKej1}~IjP{#S(#B*BV3#iIbWF!-g#k3Np`uHdB_NVOCvGxDSowcqwq3UCVG`;'
    ';loUG{f?RO=(V9K5?OSu_>WX)D*UXJ0IJG6l_ucL(Hd&%GJhd=%Z&9>J1|rqu0zc?%AjnOV;VS{GZiB9py?;mxN?1<JP4rzvQ{wP'
    '=E~fCp!*pH4Xtg(7H!)|_7bZniyEiM$We~=VpLX=U>u3fD!^{u=3<_;j+S{hG9Filw;ttHg9L&|(P8r5!f5rC^OOAvrdQ_+dn>iK'
    'eyL&uhc`XFQ&p)vFM}%i@SBWELF<}636R+&end`@`4g+ZaCf0;NS!Cw?4LplkvvWird4?v)Kj`^wOV$MPi=N1byNLn;u=0s$ASbq'
    'dxUr&)T~*~exU&*-_NV3e6&Gf;4sZWf=7TI?avxZ@Y%d7D<-PlA7310he-O;Cd<4DBrUUtk$MBK(XW?H_>gwAY&a=lDA--`zl*|p'
    ';dZJm5q*VQOUHUBTcE)3flD?~A~8Dwj%!j@xKTvOywM~N&rolCmJyKEPj`b{s$boEC7OvVPfl-%cb$dQAc_GRCX67J8!sD5CcQuV'
    'mv>DVJ6v)(TXtEqkdg#{v;~`lL!O<F=Ye4gR11ql|8pphcjC;y_4!H{B{c*IT^0?56|}X7uB$-D29p-Fb8x~1(ByM9luk3ikC3aB'
    '*zMLAm?NcqGMQaujYIb@K;tk{9V(ze+ZfrZ452Fzv&~BNu}OK3=-XMoKxWERL*5p<M&c?WB!7bj7%U9Dj!xM-$RyRK9s-I7xarw_'
    'Koyjp$Z{RePQdN&@0ur9stb6zR4%d)J;HTMuZ6hCT5er={I`tsMFthX4MO-B=yDi?6ffP2L$qL`Ngf+fCZStYRb_d!U#^sGzv2w#'
    'oEr3-LdSe{qM5^XjcS*~(oQ$0s$r-ilUrx@?#q&f>o_dIg?+=Tr@Kv$2yuyI7hDz<%7xEX0&XItHs>ozhJ^!;9(ss4V<Y%M>9NzL'
    'wNZk^{R9BZ1s6a`N=yLSU!%P6-K7$4!=7p+dCTGEnq0bDWC<<P^I+>-n>=+F7)LUxkYJH~{Jk5gdL=fq_sPKWrF=nP;b!5c8(bFW'
    'ID|2ZkY=IHr5n1!(kFpZa9b2Srn(kD5;{aZ@QOS2;~e5@Ov2>{2?88|(*l@qpbG$oG|H_sUqAX^+=g~s{~B{u!oo&~0$k>o0icPr'
    'E)47cCai`*N(bNQs-0W%u*-;2-Cb$BQv4p*Z<`9BK2mFDF&#N}^81CxDcW^^&upE`&kn7`$d*+ejex_ZC?^KXkWp$E3EMZI>jg1!'
    'iwz`kr?NE7*e!v$9TN5Bc!FLGy&@2z21o#>9XU4>=846bpRGfN=JSkx<B)}=+F$71E((m)I+^>^TMlqS>0W}8{Vjf8M|ks>hP(3!'
    '(CAZ;e0X%k9S7+cpI}Bh8+~5Vup~lmb7(O<<w<P#1&#3r_8=k9K@MKkG2+4TQ_4w7{(wN)0*_bOmQkA8k%`D6W37wZcAJUPgej`i'
    'L@Q{(!0rp%5vXU8D^d>t%@_fSZd4%*Q3pWp`X;vft{#7(!Mu@nN~9HHT=jeU!t9Th%CNv(ZZ1FMVANZzF>8tt#c=Y`**b(F*FwfA'
    'e<q8D)hNgx3u$*9c%L{Nl+V*gc|T>n018`@%eh44EpnDAO-^jj?K5U^gO-xbIo8^_V)+>JQ7JfNc3|>>#?q>RUnlVOF9C%^N^C(9'
    'O<@ODX@-I_e!(>;-->dld`AY5$VjVlQ<aA~l$Bg$FDy)%8hKM;%w%E9mStXGI1Qo~;BRDzDwRa+^1vMitsb+{b+q9|=y>j<(~ZJT'
    'x_iQ2%zH3LtwvzjajJg_GnS{8x1~ClCKhW}kP;=C7=oEzp6RdEmeut<9vz^E!w*Of7rQGo^Rhv%^U`8ByM?HMeiGCR290MO7)m+D'
    'v_*}LYBz}Qv}V!FU;99_?5{RrlQ-k{L9P`$6d$eqR?fwJ-k|@8I<V~b1;gb{U@17xpRpe2dD2Q@AS*NaI4(mi@Wh1yzkY0s-ipAQ'
    'cghwOM2A&3a{YEMVp+O5eA!;!435qr^)n90=HXyF0zJ_n{|p~L<M^gHna7@m+ENgsb42G{oWjf?t;Nn=D@;xirmQ8F2?JQK8m-}d'
    '_q8=RMg=)*WT@^1rq_TQ=2`Tj$tt{y?tSyWu1K!V7gqB{NEBswvPd}2;wcHb7};FNrib}S<aq~dJmHAs%OASBZ6VAqQ5=L=?!<vq'
    '%~O5|E1ewlV1fsLyz`!D)U98bb#WeGo#q1|u`nh}A!OUn6;Ck$K}$^Kk}*0|#d%c!&-Iu<_%QSY$zLW$&;_%T9Rb|T)~0fsTZ$@J'
    '3mfMnOEk*bQ|QF>-)hZ565QC$k`{h?-#FDZ)SJ}?Zq(W6BGFcr`o+{(v2eUgU;;q~XSrdo=U-Vd(t<uk@o6HC#Ts6sqgg-Hf^YJD'
    'YQlj|*=Cv;rb46;Qt^UrNpya$T(`JSaiVKay0K<Ehu0I%aOX#<$=w>T>dyZelooBcXJXse;-fw}xOGXn+^*li*{vmYhTTg{*95La'
    'bv%B1S4pSCt2Oj=Rkai4n^Y()tMQyc=A8!!32^i-i0f}0Q?o2$m#$!2^LSV?UQj#uIn}p42^3b|4_*A9`LFQI*R2~+br)bR6*yjW'
    'G|I?J^jcqA`?;Jv#>@=i0B&zT1!c%f0W#OhNyH9a0~gr3qEH2v6eH82p%x;4y(#|Y4OAI<#fT8}PF5}%^$fW7JK62uutx)^(Uk=X'
    '&3Okm8xkz0cPL#VXSS;AN8<lMR^u(;0V!vmf1(X)P_W&zmBBMGB65RP{CDkZ!r%jkZHcHVq1TC)5ysFh?9F-qN!e@mNJ6hQXB053'
    '1@6;nQ5m^a8tNNkT@1<Y`C9|1!KAP2Qh}Ol=uq~1^W!*4hQ&v-eK+Kd_;+D8D<jT1$LXk8N|XaBvDU=SmjIKRGvc{E<y{>fIBASt'
    'Q!zKecBCJfX4#0O#hKl02-X|8U2+agFp8v$0&4<5JFfWc_Ni5w?E;^7I+jq_Ph`$g8-9KFX0Z^fuxO*JwHyCh#h#80s<NDNrq7+K'
    '0C4)65ILHhAg~=4BppS;!L5Dp-L8eY1@w{}H{Ers{qqVL*%2v7`s74#mL6~D!|7dM<1LicTe^Hj9IwuT;g#LFtk71JiET9#FrVmC'
    '89k4K3vKxHC<2u*)DCDGrttW~nW+b3;2Bk>YgcY>JaDGet^4nTt$t&uI!Rt^?w3iqW)$isikNeiR7VP*!G>lIGa<Er=wstD%?4w!'
    '8^g%L*#WR#PwGrof*cj-dsn1JCbg#~j<EP5Ap0Hk;|&JZ)U~qRwky(!{D>};t?KZZIVc^aVUJ7N8D||{+V&fA_%ZTr-;a{J$obf&'
    '6t2jI@_J(db6+(|rIPNeiiDrC+)^`j3D?JA0dTMqUvXk03?GW{>bS1=qc3vcsC+>DqXz1_lot+KaxC`@rtt0+7V}5nge0ebmOK&~'
    'fm}-`Vg%L<+f_gV&k~cSH0YN@(sPCOgdmb-z(55mJp0#hgCr^Lfaia{t`tIBFGHv&(+F5`Gt@;WOP4oqZrU-($`Pnis)YI951iiY'
    't3Sn|7fm+~Aj}91!`Yq6GtjoqavS>W<*wMKi7hbbS{XJGeK2cesbrne$m3Y+w^wXrvHiewEVwP%oJi`Bwvuy=K1R$Ll2mjjsGSY='
    'Il<l5gxm`yiS+!qM@<)abJC=7iL>j|Hu8hRwmx6ioPTjy1R#K&=#E<ttUxGLySb?J=kjClj@HA(IP5{rkFNd(M1`JcweOma7?IUF'
    'D%e^^&_jAGN~RW+^374Bz%}F?U{36O1zZS(ysu+z?Gl=!655{RdJmEj&f@dud;N#QUj0Tw;NNNzO-gL<8Pw{=gsLriLzISEACCbd'
    'giF0)2GB_(p+6Kb)y0nExe+C#<lMVqn)CM+#;S%WBO<#Q1JeHBiw3e{DJEe^p>S1wWLF&XLIrGzo+722)58T7<yJT&2;UbU5-ZO~'
    'pHLBs=0}LEOFj=pNkEg$o8C}luIAxz3#(d(Lu3PyTUIN%;HwcY)T%uOnuB!JYKhM7>(U_ZEuMf_txNNle=oMRY3kxl3}E#ai|WLa'
    'fk}9n7f}?7macqdmL`2ECKPA@<P!;xyA7S!W@RaXSt-3mgfZYxmSh9(UtB&BIphXZD~60(<eCTV{=(zMQ~!uL>1M7C`vCyV(i#Lq'
    '-ck^^Rh`3?1v0pi_%<koeC1(#(6n#Bjsr-(*uN8N{XS75H2W%kp^N>oZ$c&^qA3nV2?Q39`YZ=wV4CLRawFS&DM%S)kxI#a!Qz$X'
    '0se04_hq|)istXlVVs#I{;rQj3QpiaG=-yJ1E)piFt!B*BK_Iybo=eml77pt%#?gCk@e#!np)Z2Y`(VCR>6UqRj<+v9&eOf-esXL'
    '>4U{BfOZo(O3SY&-qSe=!S2EIYqoP40<quB>wrXBqH7Rf3WoX^bvWMl{}ED>{=pE+D4zkoZIXHbor$wfb=T+1+`x3JDz)M|9<6tW'
    '9bt%dgI>Og96}^@GHg^Y>jX2#s$Vl~AC?X(@=m&!3FEJ7&f)8}EotXa&+j>4dGvKw<Ia{$HF)c#v4_Dij9}EJk?q(obyrE{Epni{'
    'h#%6oJm0D$P43EV2_pOP#xQds){aAHR6AoTJXOve3Y37;hoq-ls#e?Y+9`fPcV)}+CAXG62K2(KGy(x}Kn)?*wg*E1x8jU>6qip!'
    '@8h#7mbM^TUh$UXTQ=}m1%?G?YrR;8dZ|g2-{+%k|Jb73*~BV7Rq1l{03W85u&MTvu~VKmzN+ks9e9Yd9D)p(i9*i6b#V3NJ6Ghu'
    '_1lN@8hYS5VNz$hI)t>Ukc0T>?fs(#`geAwlgEj1J<Zfa-;I5Nuh}~*{WX_-&?WW^;?|rR>)<7b?xVq=S<p-#D4uenlXA@YlJY44'
    '<7aE<61-q6jQ9NY(;ofoMa`BV;Mj3?3}^*6^pD}22v1gVyD1(yKMGN90+SWMI`1b?EZ_J!(t}T27+snMQclZ~N=>u{o*#q*E!+7g'
    'kD(7s$ddk%0$YRrv5FXRifr5;GXB(z5gvwNDic1}5;?Z9kJ8jMSh-ddj#2{x{VCG=^+JJl3pX?i4E(P|pbhkR0DkD%T>rEjR@Awr'
    'A4~=(u<TYSy2Wp%H_Q<BZ4$R9TGcb4bvlhXr|_cNlp~<M7L*LL1=sY$`I0qy?X3J}w6@nWT!%wZ{=kYI(PNjK?lD}6j>F4E3nkz$'
    '5cWW-w~$B@AJ1nrpz9bad7vRN^6z9E4EPs=P18NAK6BH5L=AO0IFsAGA0;lO<Z2B^iQX5vuY+orz36cR#c#GZv>^<hUrk8$tzFZ3'
    'q&#CsDTN7S>05%|`MFb;S>r9R*c`n~lQ+f^XUzN$ZIkGwy$CrbgUOB=&m#Ooj?y?>bM;9|9WCyYXidmG!-hFtZ*h{!wl6^7I5oF7'
    'Z5mut*Lz)Y{G_}1POhowkepn<uy4KypyV-QtPf&t5Vk7|&83FEl+kn<Ac#m}@fY416j}<mi3SjV3gV4))r?wQ!ODY&0$3)FVHc2o'
    'Tq6?r=njg@?F^cuQEwDNFMfG^8e*E&d^pvr<~1xW^cxp|dgU$Py46~z*4BL5nb}s;?w#S*w;WBVLky$Rh35>_>4c7TyKw~9dM4fw'
    '+&oLO(&5-eg-iYz3fk|wF2BOWDksdu^Mh_lu*7t+glEg>*y*soVd|My3?-xcPCUSwyu?BYcm8c6h8@BTToV0EWpXbTC9@6)MX)_^'
    '4hRwWr0yt0=(c5a6&LGeYvl}=<QM@P26WI8YIzUwf*Wo7Gu1)z)<3>BW&ALrB#dwv4aA6aJMPf_AC4$@oGw`$1yD_ip2rD=CEeCQ'
    '%gT`srCvi|Fe5U{JOc3)m^>OYu>c1mjt(iim2ow9pD|e3{oQ`Yx<v8DcEajcC605(741FU>jgZ_<(Yd1I0Q&gZ!~QVkNMWLc6UPA'
    'R22K7ihwZpBjc@&leBKtY`Ntb=fqE;Hw5|TL^lNpyx(mqiUQcBiGZv5WF%_^)&|z04B6Q{63OG%RmG$lDb24pS#D?Y*`-AVAoI;N'
    'b7rk=Lfp!utmx016wB(x$JdO|ek^tP+zZio4OpQpy@<nA2Cif^+Fwg9XFeTmDxIVUI_u{w=oH)JqR4Z%Y?YpMkU9U^q<wXT|E4wz'
    'c@n+>FjHGZ<!-(3xLJl4DhOi7MTnapEaKqwD+Uib#OmqBxb?ZY#FDGTN@d&|n3FYK6h%n7)TGphyhqQ6{}Zvtr?o4aBxb0~O?ArS'
    'Q5yIH;zFHo{x*%S+6_%pi&i5yN~EGe8PH+U!B0CK-6Vv$`o!XU<6hU_s<-hl#N1Ark^qIr!<26+y843%u__5IPKtg3|I4#fuJ}$r'
    '6(on_RsoF2Nqi?+qvE=Zt)2Y=9++JRvQkc#3rL59pKA1!9P}Ae#N}+-wJ^iU6UDp|)vMj;8(A*B72Qadm!vhDNUpBT3NnJUkZB)?'
    ')Jm@pwk7RlcP%Q^ipGip3?Clc0`qv!VbgjGZO4`i#7I3E)I?zH06b;abrUl*eN*}i<tr>FSlUSljDs<g3m8YeTRaYEe2NcaD0+Z+'
    'pY`xtG)&c%g_)38Wbx5T*sQHiRbwM;TEsg(AOWN$fJP!@^{D|Q(+>weU#qB5#a0Y-(#WC2nF5CP7CbPK1pxhZ39GYO1PwVzIP|b?'
    'jjyA!v=)B-15OIjE*#F{!6E9Zmf>h;GI1z3ToN1rqj4@ou#;(_cfpJkPMpP{zn}ULfPWS0(;~B2nsjU~t$C69^S89Yd$2LuLw%F-'
    'U!_HMUkq;vI5H&`*B<_W2LNdUpQShwgFe(}U;}%2tOF3KlPpioB0=;t7+q`G`D6zfp+dZr$FhKqvQ$fUwq?vc@3bz!^G=JMR>v(t'
    'yel-Mte18F!9#4=zgDMzK>$YTZ1l>y-R}J1!`sg?q9z(rto*>zwK^sU4C{IE5H|Tsr5khZBDKo~jmNtauX~Mawu(i?4P~c26(F6D'
    '+Ygp8D(?~DCj}0fV@tE<X<~|g_@clQ=az1Io7w^FmnsIJe;OL0p)fkE_wlI04x0Uag$&c71$lm2zeOs{P>Pk0^Jr&dI<0@olJLs@'
    'gvhSX$9D;;fG1O-EF&qDw(Frq!{1u9{u#BhMAuCq3WHd$ynv=gQ8N;T={td#sWba(&jB0UYGvowzFKy88tf-xiY!s~HIJ50G#qVH'
    'nN|@PAt^Js@Oz-Iw<+rkpafE3LuQ(eLIFNcCkzJYSL@a7=~{jtQlJ26ok@28&#6PV|A)JpIzfAN-q)1s0q!dc?OqT&lTRE07NxW~'
    '!ChQ#L9<Y<<MEhwKf?B}ShHk||HGmngLk@aaDUQa)ST#7`$8^&do-f9@UlGJPVy*<2Z8&6HQ;-EyWN7Z*kCV0pl{AfkK^vmu=jFm'
    'd6wV5NMY&FF{8H4mQ2!13)gy+gWHadi!{@?e{PHgZ}>8>bMC?*D4yZRXMJD_gP6Q<2bP#8&%{BB|1tOQiM7O_DQ_%@A!}%JuY0W0'
    'MaUFHyT9B6+QK8H&ZpS)QqGfkN)dH~f(*M8>xul492|J>+AoIk-D>wIB%ew-nR<OvB;@Rj3YkF_Oh=FEPb>a^<Zzfbj#K6X?WT1_'
    '6PIi0WNS3fqF<IO!}4gAGaD7uq=Q&dgF4EzgCe}BBxh0aP@_4y8~O!gd@&!LgFBjmUMyEAZ)X>R>FZMEcp|C>Ql4l0El0Am6sa56'
    '?;aX^QJlxhYrI<jVelOg4MK9~M(O0Cv+II^eZpi4<mP~r3G+%@tP7$b^0;%Jm=bzsiT-4+bet0v(9IU24Mks_kjZCvgi5}?gX#$A'
    'tw=$Eed%!S)edaAKOc{b2K9a)a>BmpW-qlXn(3UKMX@ld6sc@w>t01Yw<$CNT~-{&o$|XH!{bmlODQVI^HH<2$c}}2S-w_25Q&DY'
    'l_w1&Ap^&>cb<HmG`tfL(Q@o;;fiX9w~m(K$F8qBTTb@Hf1Fm#P(I<ec2V^EHPV5O_H7ViA~E;qAr>-rj=%sE$aZ2);)#0Sd7#Cf'
    'Sqtn;1*sS{YaJh*+XRTRy7MMI{PspLS2AJg#Sz4Z2dHL;1b&m{=x<&|@fosTQ;BYduxlnAdAmZbxS>IDbTSSN;n%kz&mjMJSD)TB'
    'e75g=e4YnkE3&D_l>I^wC+#jTKnzes{-c+C6c~)@JDh9#G`*TJV9G~R5kLYsf)5U9gFVB;pAKHGQArvhc_x9t5WT4FFOv{QIfp*u'
    'J89@_8JIjRMugo<T*Hn4Qj%^9D+N&Gv?siG3}|DJ2`%(zqgLvG_@{&#Awkk#ih-%*@1>QLiU#sv8({hCOO-$+raJCr88F3cc(cw>'
    'bc%l8CDZ-O@yD$iAUK%}{?o6jb7bK(y_}mj^vAM8q`qknU7Tv6iJs*`?F_QItQ3NqqEgsjAgG0U)pPE|RsvxMf-|j^mQ@s3^@s{F'
    'X7Hb~jVD=ZlxT{YCYZFC>kNq2P*1Xdl>`wLUBs_`#8P5HT!xTL+`dBw4F5WOZWe2yu_N+oyoB?=*CI51x(HR_sgqfJIwlq%P8YFL'
    '^osru#W(o2mOaeCNr%&KYsbR;=LKT^U8Dxo>Lb<o?^?A{UP~6&*s0-x7e#vHLl#6reM3K}mboVQ=<+~_mD+1TrIEgXtn6u3b*qBs'
    'x+{JVf0~i~iyCZG54IneIt;H7LYYZk1tPX$Il^B@@iPlz7^Yr-REzQ;xD6k6{;I^c9`_s?E=^4WQn;$ds9P}%3^+$7BtBfn*4<k3'
    'b4%Q%{Qg3PYb?0R{ym|pwSMJoxvS=4PKX4=WQs3RX20R#QsCkF1y~p(!_{ADF2&<fxl(XFOSyrc|9ig)XGLQLZP-iABkK;sSC)=h'
    'Uws3oR(a-h__kUl`J{<z@y;R&-rpy30ep?FpJm#UEBh(3_fAjB=u<f;=%dcYtJpl_V0&{BDSLf7E&3!!Ndg!my*#woT!mDS$VUVu'
    'Tq$RyHLQbJj{&G(K8;NG2)ddKs$&O9i6r<G>xz2=is`cHU4NzqWE0Tn<;Wu;St}<0%r&=Y*rAG@FyE7~9EEg0&Kgz8*8WOA&+=Kf'
    'rX>Og*Y$!IS`E0?wCF5iD77vCZ6EfN>>7mouV}2*uxqP6*wk~bWY+YfUq_?lJC@*y4>_v?CPW;Nf?^zZ2?t@)rlo1Xzc?}*ZMYw~'
    'LG6%+NPfwyvv;x^u;d5o0`YM>>_Z5tOn!naa24}wzLA}c8vm?ji_0U(?k<FZWy{hevsT2Mw-Rq04z;12B;$f(<WS$amdmIvSHqFN'
    'ihN_}3+6Oo^ICPKU@+&`p&#!Mc0b!Z5N~E2-TEp)q*W;64B3Tx3W$-tR7b0?Y#4l;*|ohJ9j}xcVKI}WIYYMxVz5WYb|rk!kx2e4'
    'ZKi@>hZ+WGzPGv)3py!L^@#^XSGt$EhVHJ9V4vF=l?X&QdVnwWJaEzI)8cRG**i&m(%`}lsaOPRe{c!S37mV6J)>nOoy-YaY=+`l'
    'ZZ7CkBCv{`nhEZVEjPrXYi8Q8`b88NH&sYgfC|YT8-z#(s81+PSn}Ddp!@a=f@9|ZB^hfTa_OV2|1Map;sa(qwi=RD!6WxVjY7Ap'
    '@R{e8-E^yud!wdi2|cBI>+xLwdRnTH6V#&_>Z0fIsjM#$Ev_R|hr=E&Rogc4TszaE6t}D$`~(bo4N*q$&!8YgiK7AuBZ2(He>&e6'
    '700b?;S{yL;yiG9+~7cbtPxx3?C*3+w@I=Q&Cq4;FqhBjH;8NYdY63ijyI^j+Xmbi*gr&0?DEF~4Oz2D(w!t%qfky5@Bgi(hmyhL'
    'ed-_lTbRnY<P^;D?0Hsh$Lig)yTwj(B&<$PjHJB_3+`72Q_IRg<}rN?($4<17B4aK&>1XGQrepF3SZvh(mAFes6(I@sBIneOj(bk'
    '%L}T2FTCeM*1-VWcI?u8e6iIopojhbc;uaVV+YnX`R%{hiIMWM1hJ-8)VqYkg{R?HK{J`3GJaTYVHMI~f0ml2lx=T_QVP;+6Vdo6'
    'h5~(%H#$a8w_c*Rx@=Euyt{lTgB($XXjSCRu9$l5ROB=DBa0rhnb;J&h^xy2u02^MUKrO4=Q#qCJEiCQ_cHGd=$|Sk;{iblB%6?T'
    'Qz!yex{gsCZ<Vz`@ngR`xOr_u;ROd{h%d2gZX0W?<i>q;1fhQuAz!4#8&eKa!VVt;p6BELB}nvkY*fki;8U@iy%kQwBT>!f<MwlP'
    '$!<B`Da@A}U(YAw#9g|-aq?mk9#Lw$3_&KM)95iRRhV-bdabXGTL;`h3?@!j!NQz%HSv%`q|>Wtn)-!}&7=-#_l9umQYbVfXGP{7'
    '5_dA{9gHM%a-?0-3gBGnYRlmIg|Mq-*hWFHy^y|tr1!0yPdW2HAIjMaJb&rA<*(x$NSEehZ#ud6tMgZlJoCQZS?q0DMJKncr=9pM'
    'B*J?oOS}&d5SG+FCds7+`VNtK%CmnQ0!kiAX_QqwbLVOBl6C$qY#7<qfce+CHnAgd6vRH4yEa@6hdQS$POdJ9Y4uGb`2Ayb)y%*j'
    '8?A8rN;Oe?$faOFtb}|Y_uj#c`*_Nq_iLXZTO0z}?mMv-i4f;;ZvD$q^N#+c-A=@57;@cbmzTkl7^z$1LzY-qH(c^0Th-S@FWy3?'
    '&r~D_-p<dHt4;9j2c=s5Q_FJ~EF=Hvb>3E<QQ<4m!mvm<9nYZ&8EN8U@mZTWw*W(x*h>e(bgAo1HQzQrpMUe-)^hH#OaFU$XSg7b'
    'm;76bHdURW{gaPpBjS!%^3$Xd+;;p(z6q%evh_eH`3&Sc<VIgVe;{f6w-bGPo=Sdn|3)|Ie9FTBV{bwsO5c_aWY?@Zpl;}V@NaH2'
    'b&GvyI&~YYVy#Y&&MyDQ0Rrn9rIS85MZukRnJ>4+I53w>SAfJ>pOn$okY)Cw&*yJGnn!X!XtUF@Y`7<$x6-u#3l`6I$J-sCT-G0;'
    '89Hwayt~Sj@9UFWwV9Hyl>as#%N=&w=HWCn_DL&II?6*=jk*>#TS?X0>3H)xEO2gF$J8s#NMXNf<P05fAsYAcfXE$y2Fpu5-|kdK'
    ')Bz{4Pa0(3&56nqc<Mt9L>ZqjB~FrH#V6{#hv&<%Z}KTJ?VVo-4E;-bB>NoJI{B?z`S*d(1r$W{Urg0iU`~swp(z6PsY#xYUWlw1'
    'Y#_(eUq&;FniiT46mP4;>}j1o$^>v@)yDQ2bnb!&gGzeE8NofYpU=(6pM061iW2*KA|>e>zNAoj^lSVgDsnMv?NC#SP~P+)hO}cx'
    '2VCgBt!x*C?5Ac<C)*r~prs~I!?;djL3Q2+q%19ujmth5HXUo9Vk@~lQZU)Q<`7#3vT3{1l2Mu3Kl)41m|(0QC!QXQVdxGQke8|b'
    'g^zdWPYN^rQw8-{Tr^Z$n@(Q$nFp;K&_x`>X-&Y@Ug9S4-lCYMS=OKV?p_lO77|TZJ>odRz63Izsz>s1x=y*1YV6GD5WUl_$@#zd'
    '$YDUqs^D><P|%Vxu#o8bzg2}nKT$%9Wp}-`u&z46IguG0ukSO*SzI#;T$&`__I7VQ)DP(hFp0o~H9xt^hn;>H@t%1^TL9+Rtm$fM'
    'KXAAKSw^bZ#ADWnH|y1?;StTC55V*Xi8{o}giP~Q2eV#xYPRGzxR{?HwPy5TZ)?{>T{BD76E{3dHFC?0AK5Trt#wYhtJRD4vWgv?'
    'q&|oxDEo{Em_SWm;Ao_hE4aYNLsiYQ#+JGeb?4jvn7>TY9%3BZz$hokLp7qI+lZzPF+Rr*X|I+U4tDKg(^+#vx1w*(2$F2Zr=fN$'
    'mQ?JnazOQV1_C;+lAu^7M@k8%nx|?&@KcHyB)3ci2CnQ44#vEwbKscAe0Sh$G7nk1Pfw~1{{4>-;YPRqMzY0}Q;Vf1+{E3=`5E<1'
    'qeWgKMPi5pk=K84R}<gkPu{z>!gkuaLVSj=vxekI`40=1CJ+0#kE$+9ucZ5VZ;<fi#UU{<)qKuQvmvkraak@Py|@p5s^Cx|8$>Rm'
    'YV4IUl!E8bifJ(Bb+1KvE<9C^h9dt^j<?3ty5^jcNTHE`>yWS2?EBqDTEQsB@0dKCrgkGOOuB!7azE9E38bqZ>H1-AbpUCgOaBdq'
    'T{A|rDcL1L+HeJ;jiNj!^vKClCrW(YLFk2>y^5aa%!gOPyACjII$~^H@r1o@3(}lI)+-2f5!^iGhX9*Vfa6MfN4)d6DF!=`iB}r<'
    'NS$~T@N5iv8CKg-WDmAuSFAt73gE%Yd=YU?3v7bM{b4*C3}9fJqlMqV6%4AFKin!~L&uTeRB)3yA>@3kc<1mplVwz(ZH_irpKM*2'
    'IOSG7KbBFXbw?HMJgfIhSnzjAbj*J5PHxdY>AoHulc9<tc$kr~l!_TX(%S0GNY-6$AH@$JnHyKzc_V5KFz**fG$-`*`Vba*s%v|Z'
    '7jIp`VLS|p{mT2Sc|YvwuR-~B<9PfJU@%b6Bp&gSjFr+Mn@@_|30ZXO$Eo;#d1k0?u>*PMYcE711#mjTC2cku<Vw-8h^*`)Y>#$q'
    'lH!>Hg!vI8J3b@zFf8CC%E`{*poORBqX#fCW=-)Fjvv5Y>mCgUoeN2N$gL|$9sMcMd<HvwmJ~gwMblO5@~R8Xbd(MVj!TzjAV~M='
    'H8Z{h5m=m`yiw~|WCQzAQq#kC-}&x%RV>vPCqXCl<HMZrB1Ru{qOEr8+*tF=(+}#TkcF&?Tt6;P-ck*2)0(+BD}TJ#XX>GM<E*nZ'
    'P9ig+C56FT>f&|hNnAxyHXvTmyov*Ik%YbN#m<UFATdD+7cki8Z0QtSOx2PP;I2w5hu{z&Uo6L4G_qEf!MU`f8HOwl6x7QrkyxZB'
    'lc8h<3Hoq{Pr+e2tO+*5lM8qT<U_M_gBv#|#z81jZvph9Kt4=)jyS~|r|xv-$CycFOcNqw{hi!oU~ccQ4)O*F2r6>F4E9Bc2VuQp'
    'i=@e~bZkpuep;uuitFe|1u=YkYL0gZXw5CbCqS%_<#oC$Nk!erQ;z9@_|CJsRpVC0+RF@6W#zN?Y|hy`j)RS@M;=m6gK)cO7O=RZ'
    '%k56-opcH;->VygDG?d38lRQdC6)k7b%zRu8?Y}wNFJpUJBHmOZ9)ukk{1cz`pA_ZmO)y3lN^%Uv&m_84TM+thUu3Yv-e;x&_Tfy'
    '-7pJ={x(g=XD3uCOUw?_pABS0k((sLRMP_?E3O>+OQ#YNy_(A7W5e&CJ1kJfM0YJ-aJDyR{%Gz%|3U+h4G48_TFf6v&yWP_op?B-'
    's=`v3SA}je9#tez0#rNALhItG;yP?nr-_?@PMr@-N+?y#mnt3)Q9s9?HL6A0e@5k!F8wX^0|z?ZsiiDTGa8J5Ocf;SX2B`Pb2clz'
    '8b;qnT3E@VL4R0vhcJVGdUjPnB|_8@3p<nr*3rxFieyPQb!jF-?j41be^+B+X71pK@}hnb$$N~$l_!_k&SQ{03|N?&a&3^PF$mdA'
    '=Iw|8W;*&Ip~4%nTor1Yd2knN-w}nXx(ADv<l}tq?p8)sxmQ}`jX%}Xb5&vM?lR-1&TZg|tpFvgKaE;0R&>MjfBk_NgN=OrHPo9m'
    '_7bvLbGrY2d!q(}eCnjUGLeMlm$ArJf4ReuqP=d(ua(Wzv{Vy^5k(xavWiIZkC?xvMuI(I8ta(=$PmIb{V_zX8*s(i<W4}lav)f;'
    'sWi-lusvrw8S1X}lIOdoD&|^IrphEu@H04VI7tfB?(jw<+n7Xj?dAfV0d<I|>q3l8AfGu6Vx5=~x%vddxvuWlCfNCw1!gL#fo4d2'
    'eIZwSgi*bL(@b2CI=t{m+#!Z=p}*O8W#YnN%x%Ew)ZrJ3I|lG~+qIgizByRY-vN-=UNgg0I$Bs7z~(~y_e=rv0bH=(XDH{7^3)I|'
    'fVP%&XN4#Q7*W76kXcIeaiBEmkwvHAq478!hKuWvvqIj{{coD7tt$4&@4O{qP>21t*3a+AwNy6QuF^Cu%0Kv6s5>JKrfCmK9k7zg'
    'cdA|2dsolbwIR_oP_b6h4mtJn7SHg~!)y{D%R#>bC%kOT5UUEiqVtgIbk%kC%q>V&GvtB5<;>!#Ru;Ui>2Xu+eP4#b86zv(e#$ZO'
    '?#{WTk>t;5;6b+-ZS@_+2DmQ=_R*}~*k)Xmog1FQU+o5IQ;FL~6<Tq_|4+KVaXA-n6m}_mqq4yS{26$=jTx7}1;yW|t=f^|n-+<)'
    'Hq{xh#(K161)fugSifo6TlM6)uCk?#yz*!&!_TuQC)m+sQ#8z3?rvD7Cje$|&QYu~35A)GEM<`HvfV}OuU43WZ~@O_Z|M31O0w|d'
    '6Ycv<a0MSZ%d(q(oqxvv&+@%GniT1PJMX}SliVBIrx&!fM@dlAL}+&>+2WeLqC5QOG1%QKy}GmKLUuYIQC)0c^J8*kj<qOfvii{m'
    'CkDKGqnI;G?7nQ4)2c?Tz;znPF*G2-(F7WwMrrVhhF+!o@*!6slQW%6BhqB&&7SAx)u2ri$Sr!we%r{<tgGVKH{J%Ph7d2O5-XW_'
    'DIH2S$lW@dL8NOy68aqVGju}7^wjNdLTdO&8T56=2oW5^pfHO3BRaK5ce#ahl6as=AMd8LmTC`x1dhUV+*RapbL&6YO~+%VBB;B}'
    'N{TV>6?fgXcrdT>C~1OwIf!BoFGxQzd#nULa&F~p6$Mk$+3H--`3(c@CdPV$;d@4_OK)Z`0u;apt=z>oQz=Np6L?U%1sKkO4OGIh'
    'MI%6?ak&sPHerah9!HruGPLYT&8fECHHa&3*rl{_xCe~IPUhB#cFg&@`ts(u_g-lqYWnTpn9WM~f_Qy7Cj0dDAMEOV?wmSnbAMN9'
    '=wqD7l(R4Ys`~hf^a{xuoaRt{dljR)KF(f?cS-kkA(sT79%gryC^mM@2xLeKs~z-A>(8nj1Y=s~HsC*LvNV9M(dsM7_LeP~uD8mE'
    'iK~_zsdkq@Oz5&R_8vCF9!dAC8L*iTis_}rGEnp=VI-TFU98j5;*hiO4lXQXC=X2h{z31A=7c;S<+f@q$MJFFC4^<}bQbxx5!3J*'
    'bRoaC1H(lNBYR~A?_YF46+H^|(@7FkxxJoH-~x{&Lm#{{HHk>aIx&v6d`VaTLe{%MhLHt=MUTO^__+cUf7iT2y5n|d&I=Iyq8J#X'
    'BXL_Y7%!bJ%u@iGP`<~*LD70!&EfQo0i<19k)9vq@d<bMbPS!s=zX{AUE!PSSW7HP5&CBSlC6IY9iJ6on&_u(EZ{m;jybdqW>KMc'
    'd<==dqodq~GbU{V=Fu_r5kE5W%*c1v!opqWuo%<))t1q^cb?pRteB1R$k3vV^_hv&gIkgs{DDxT`AWF4E=4)uD!D-B!!b{wLD)SP'
    'n)0}-L<{*3wZR@@5hA@%G?&tsU?&P@hGz}cIn&njY&gvfT0<xdlW#Gs9y4CL67K==K|9Y}FG%`H!2KA<78-r0!?u<L@>PMaY5oo`'
    '3uzLlm*|+w%mRTWmubEG67UiI?QOO7@!7B&JY^yAcf5Aqg)MhoyhnowDnousrdf^G2;gvu5G;AtaI}3sd16s4CyCgl$&<plRBV`V'
    'CJ2qZNmvvWd-`6eo~-LSRF{;LnZFd-fFw1x_&i$KY4T||aIeH+PvW;_D$Nl)*wTC_0?1A}QCdG41%}~z8u@KND_j{ZNE5)T%r4_h'
    'D-|%M!LpFm)67JO4(N<c9H6=K-(gfOwzQ8*?(G4J1k4>n-B^PM)aq*q!ufjKDvGIvND?1-X8hL*lAKgdwz=ZgQs7Z7Gar>3CqHYo'
    '#o{ASPil$+43~B!jaOi8kEM5R89c*ny!ku%4Oj?qwut8caj;i|lW8F_#S$gEz#t`=Yt3m+oe6~a6Jr<(1c}-i06Lcr#xN=g1mvW@'
    'DWRjHE%0QHuvr<2etKs*{=34#++{mc7hmi?!{%to>%sR|ktF8JW^sPDIuI}J@(bMGM62kkaxVI6OIUlM>z1={d#*@;m_n0lwhkhK'
    '`-XSQy-_+wSH%nb*fUs|b-!(~4M)1(yOPn)P>#fk3<FUx69byEnb9LWHaJk|UBJA}tNeVGW>x#+z0ki6IvE};cel>K{qme5wzT@b'
    '1JK+0FwhkL_R0lLYj~72^A$kJyYM^5xVKw7N~KO#A1ob|RRTS4*h2^YC&4aV@U10yD<w0Q`FO9cn?2J%dV$74<Ke$#TIU9Uxs9(-'
    '3pcF~xXW|~-NzC=5cmY5lAG)U>%9$wbsMaY5O#78@6-0Avs!UJSwv?Rka?gr($HZ=k>3A5umhZ9zBZ%eGS15d`3o_UsH<O>t<^>I'
    'axmQux{;rQNfpD9Ptol(4v&02Xv39zp8g-uH#R@#6!u$X1cKO?2rVk9-CT<d)ZE%->rTbSDO<Hb8nD;dJnjU&T!4@!Br3Do;MnCh'
    '16aca6EY%z5`HwYO7GF=Dd4>-phpforp?C!V>uq+=8Kv+>Sd=hK>Qn{#@H9pH#KV2S^D)AP_3m*XpM!urAeEAM|h;+!R}bz(QiF-'
    'CUc45pjFOe=f;5t+VF5dWtjdC-jh|~5aA46VD>C2I7^XWSZkQFRJaxo?R*9fU!AmkZa^_-HGAOOM(nfme(ia1EmU-=UbFJNU?06i'
    'jQ}33(%N$Lh-KjSe@ksY4t4}~x*Q2$iP3dj+XNQfjN}v{6OPDwBytuhP&>_tnG*RSSMR(&rbyEGSC~u~&-Y3GQa93eq?%lslqNy)'
    '!exne6`r%vJ)QlSh59}FU1G*C_5-ou+4RkQMSxGtN>b%w#j0cO;=)}BWE#E}8uSz3=r*=nWmiY~PZ4H6)a}7!0ydwra48}DY{H`v'
    '3?P(BjyzEa^Rz<t=xL50KGjVa*V-deh{pS35hHgUAsuil#9Vz^4}}Hd*V;JnxrzqlQzbe3P==oPWDk+(Kh(DEdUsC4Ti76xan}2G'
    'Y)&g0hX!VaU%mZbPB#kLA7!B>4SgR)$|a{FEHj{abIiMuM-ZU_+~^7{KbzS43u)6P9@MzB1?jYuee#1!%$?Q|g0<#$#c^wtNa<c~'
    'J_DDsef>TmP9S^%jTWZbnDx$_5hzI=ZCMylZW?2t22)aXXLcAItRkB%3oOl|TfgFihfE*|XFQFE8%0^Wn%ne#U)mL+oqMm1N_Pb}'
    '0LOF&Y)t@uCO*9wj{RSxhh)mYDan?@QO80XuFL3V;Tx9P=XT1ynEpaPP)AFQOl_yN0eB&Y0#ANQQ~dlee6Yrk$7$3e0<ZKc8Ry`3'
    'HXI8ZSWe+D18HWP*H=gWaOQ5k4cL~8ndanK{3v<Y1`M*pV9v$EYnkMCJH%x#?3ujV7df%qaw=hmDqkNqM(A*{kq%Kh2;b<#%S9CW'
    'X3Me8lxt+4fDAp|la7WGMN@we*CK?h?hI1tb-}>cs^bC#z#VgY&zdrJ_FI{i!Gx9ujEdd%Q0I$jt|P;-!i(w7w>_<gvxk~oadQQA'
    'oU+S>wBQ<(dnK8{#|ZQGy?4Lpka$Qjcz_)|w~Bz<P8{ap#}x$A^i((~8i%$oQo8zgJ613^uab#801Y-GXZcc-`v>KopVS|d%buaw'
    'Go2Q+3W{lFg!cm{)qk#dXf}XsGIgdP+aqNn8iY*}AxZW$xJSSN9w`cs7b{$i9ge(4D?I7Zuo>n5v`wU3M}R1{gO|OOq-!tf!bCDD'
    'wai>*_~EP-^F_R<H9<+)+0T9UYozu%9#k=AOxfgk=7;JlgT$|r#4&6}{wGyqFVG|xLJ~eP*(5-J&HvP7;Xa6N(i@Jw|7H;s{8t^d'
    '8lre&-TCFIVvwnj**B0I)xT&PZgF{iTor=v1Fde`JY)u+KZ|;IdGWlcZor_#1_eR^OWEPYYvP=4{&HUt22|4w`0_P(S*PUFaJfM*'
    'pXYkQk*1qX*zsyq_^M*>`u19EZ6c%h{*M1dq$U)om8^XMNl<ZFiDJ4Qjh+bJ_`E>IwC12bKPV9+89;4}h1&C&?ELyjQ5tdHK%v}w'
    'D&WOs`9%Jp{Wg6^dy-Vy{Vas#^isJ-G6PzpG)T{+)I*>D*QrXsTaMMVEvNp_>M2v-KdG47gu-%7md6)Y8q6Ps`YWnTPsl5#iU{z&'
    'HBF^>;PwLBR<sks4`<o?z5Yk9jNR)sGhue)FRXU9KMuIqf!EK%;jmK$t|<c>J47pP@X{Mx+_jNcvf0{(2jqMDf|mA#eKN0j;)5dS'
    'yXgYHtk>CQ|K|-Mxx^x&G{o0)cSza={*AtjROk^Zz&*DeAOU-jU>x#AM>;Qeq4I2vz|xXgjF3U}7d12xmygrDqVv`A-|VI{@x=Bk'
    '78*O)M)ok4!Zo;%3s|3IwxQ<-tuy{1_bq?t3Q$4>I#kq$zJ5n;Jr%jkOwe+^<h`6|+o&Q6v+x{AX`t*i&N>Tip87ZGqL<XLI&nCZ'
    'YJ{rNPaS&vsAghY9!s^ROTz*<DUXKvS%Sd!{!7mMPT1=dD_YUIx{_<Tr3be&7K{1+*;r^{LSIU7pztn`FJ|jlSy{Td=OGcTb2{Xg'
    'ke5WmeH$9M-#YvdGGFfI_1*JwIhjUtc=Fp(ar0LF>Mb}UCqz#0R_V3hg~?pAQhPTXuF5*bv{5JkJ&)$CF|(5eimkBo?k-y!AnPDN'
    '=3E3FIqIXDTKn<N+oywQR5Y!(E12n~#vNrVJEe=OPjPnJzXz<x+3!KOyBXC3`QaRtiCxE_@ewfJ875X6W@dtlo^h5bnQ_1-hyqh^'
    'C$@!_l2TkljEG77c;6*ZMQjlQl{G*K)1Z!?Ui+!KsW%Pvr+2M+f{Ut?sBQOzvy!)_)&0g?Tg4Gd4boJ`)y?a??(k*7=0t<^YT&+T'
    'm!}(YjR6=Gk9`&^owfrr^|-|!U*;5gvx7ZStV^0h79Asi{NwI=g|N6~*<`xWdig6$LC=z-)J^CStb!on|HtO%&1VHTQq)Dl^1l>z'
    'hBLUI_ChlW<B5Q<NhVC17%^&qV+pegV`jGC`)MaqZd#et{!<V#@(n3XlP~KK@<uG06^L<pw~j1Tu3UF0c^won8sD-?lq%IBlZdV%'
    '`ZO@6aaWnSu6=3@<3ZQ0zoq3VN6Smn7x~HsPR9pYJ)RIOTQ2(>!l;LGnf9_3I~IUjoU4fhjk49n-t0m*f|Tn+br4!ES?}y#FSs&k'
    'E^)2UJBIX>jq?!&fOK9*5u&}}H5PphvB<Zoz78_bd@+cUS70ydo4jcJU|pG&dQp|-O5Y`N^FYs2?4)uH)A&^xp%X5al96ozDgxS#'
    'xF5lz%t!b9o%#X3;@V7+(Fo@(UO1~20=fbE!~z>iMzs6ThhkZtK2?BU$JKsw!qIL4#JFH}cA|ZvU=18PTRy$RzbF=_PhX(>Mif1p'
    '73jI~M!+V~V4j?G>i)Zu3@%&BHjVp94Ked`;Fbr>=zL@g+S9=E*qH<yy#EZ1IHSBZRNyZrW1h27!+-^i(JoHzEjozqM3EM-m8mMj'
    'u>j?318TvC+`Onj<C(fV-WwTqHl$W`8?kAjLSu)m6P9HSj}~&nAO1G<uEq)JI7bK@^}djc0KfGQ)7-pS`4a8Zy(gT8wCPaFs+H=L'
    'KLZE9&7}kfSd;h|wD1?y%N}omT3b^e*aIt-FHC_jgCzWgVdm1I@tFZ%+#~n22_M{I;9zP^FEf(^*(SdISUhu5y`)|l1%^?95o_rj'
    'rFvTH6w%}EPEJ7SD9ufL%^Prk1n9xMeLm8_^^FvB;+|Y;)YL<3dx4~nsIf>K5Uj$xhsb*(d9;)HZA->Gi2ojhbNX_~Z)G%)2uevJ'
    '3hWTuVzInp%WClD)vC&E0@>%1u!>m0FTGnnQn*bem8m4sz}pluxI&YIBl@B|%<cq4lhegA16%1^sTO`x3}VL2hWLOduvOoU=!pvo'
    'fgC7_OLND-ZS=Is5Q(@kAk)R!FG+JlvNCOJWD{V{_M3R-Wjp#OGixYsQ<@kxRyMsuCW2Fh<@>w@0+Uk^BBmX9<M18t^k(ia(-wvH'
    'xCaOrRfHL;{gT~M2o>Zp<2vi6Rkb`J8?GMPc&W9PI+IA2^gb{>!4pSptN5*o6_Ezyj(li-RIWUxZ&Z(*X`O6z)WD9ErueTw*^fTz'
    'bh6MX*_ka<f4P}tm~7%c8!#Q(!G`Ls5~PDd3~C%ZCdTcrKMEU%Mde|rs`MfK$Ij}J5N362fWsa}B7x2(TdjW)fDFrGB2w<Ia`D?%'
    '(Bwl_>sY|CrDn5mg#OW}eCRKt!(zmuN(&MxnQAyquq@%%Nfp)xr?*<oCuAtoD|Qsl(H6)GJ=xGcmDH1$L=19}7`O%<a3&uWkoNOQ'
    'hMIC2>}q7#Ifv~7sYtJ@9!%Ul{8=f7NvoV20Dgriap?<MIfyrC@_&%Y;BoxU-PvFP%2MTh!I(i(u^AZk0*{6Dq`D@>;HnG_WP^s{'
    'wdr@nA96H_%Ay6B#G2YNSc^gYB#-f-w<2n^@O8c}Eij$i&i+oiqzsMTSG&&V8m?uiKxKr{D9ibQW0?nm=i6mfW^<1qFAjm9IB4}K'
    'P93T)TEMYB%xcUP{Mu1slNNw2%&+Y2Fj<^1z_f&7kp(2pIrs(?7F(qcE$X!>jD_@_K!-=CKhOmFTnF0D0np|~vQ7Q8IZ2<7^lwy_'
    'V3k{Gv9v|#j}`Uh8&MwmvSNUUb0%^ZebK*ve<r<_li;gOVg}5?LBfCJFTw@7G-{Q6`s(R)rxx!nLe-vUaOy$&gWD(_>tnLGrEq!y'
    '*r<4lrgc-hp(AKdwu>ZxQ+nlf8VLO)<{EIK2d<i>U#l1h7{c4REPIzm%-KQXF95W>WPxfriZP(y*m0to)GVXD;K-gJ2`+;dfotBN'
    'BCE#tTBr{(CY02es+un|rHeVV0$B_*V>9a{5i5ES_Q^AE;;3aZxDk~V0UzhRabOm$=>psX;;b-{t`M!WiIEp7#q3caEH}M6&nkv5'
    'nM&E85qM@w`ufj|@|&ex$ZY|6b6oFYhATc1;h!YBv8t>a7jz#|8S-j7!&|O@#uZWv*P73R>dIN*&rnOd2s?-vj5)pM2pLvaRhWn%'
    'SF74^X$`j)5tn>*RP8UD2QyhV6s9t;Z-e9L*f9yg_RIL5qej1^4l}-Yv~)ZX?$`y?_p>?Yi{AlBG8`%-54&o_1dtZ#qqOJ8JBCc@'
    'n2>F>aS{+uT)m8=ym&qczU%RndlxAyIBu?WC(S{(l5)HW=|gexzq6N8&0Kn^wu>!ub^XNiq$<JtI$bj`0hC^YbCkf<60)UH)>>E%'
    'a4q%4w%~YQ$342D$5%svnd3h7Z3f3{I=^n^B8%WH$4^eN^q2nFx?pD9;g>5kb;D63uy<le-<!55T}1sh&>cx0p5NZQbpIyu?89+m'
    '8@Hxyw7Vqzj*1Oe-nO)-RF1jGQ6j~|-P`0us5CCXW(RYm+n|>vkgo#~T$EFKa5nV}`;MB+(nu|kQ)-VsJ9g)TdA?dfejZz!6yZ6f'
    '8s}N<-U%WN)>{YI6~2ZO{6<b;+%9r;*fUQnU^M_{$9{rBfG>OCjN!Xj5}8OozL|q2IdG2k6qig{S$!Tefkc({RP6xn@DR?bZ{ynt'
    '1{ZT7rQ)x24xMAiH_^y+0refjq9xqY0f5xC3p}M|eyH_z#)cx}7P8B7rsJWx{*J9C1LbcE?5ALT7z*}=;cMC`&{&u!WsavJx`E@q'
    'yeZC#Q}co8@Pzt{0!F&a4*kTdSsE@v&$H0%1o5bvmcLLg6aboF&ai92wyx`5m6)_ey5hMe4iCo5pSkEVivG4!|6|rWBO%?elDJ?h'
    '?WUHJw0RTc4|K!dMb8G{6BX?!Eg#VtUjT+h(g}=&nr^Glql6QY?xm%lxcLetCcS@+$3HK0yhHO8O?|&coM-sPHFLq_t4U5=IZDS!'
    'ckUvCuz4x%<Ck(!?lE9``$}KC(b{Jlu=sDtzGYc|!>?M;?5C>2rc1gUDQa8TGHr(L4~_SfEg5bt<H{#AiFs;-BkA7CG{aLd$MT$D'
    'w+EWbli^u2y7E_H3>}d-`qJ`RP=&=xnlT{MpfXZ0o}&Xr(8E@tTj25oZ#i1wIbjtCc9N09FRNaCCt3Q=VXA+cyaXoleQM?x3MDoI'
    'R6>$nhf90Pd1+SNM$#^bOoBOcVAJ1G@CEE*Iqq5#LcOMP3GiZtMJ?_{m%<@L+9hQnS*dYeS#hW<jFs=R>sGN6=`}G+-c5!36?p_b'
    '=^$dSs}n7w^l}rsb_6-?mVfIdg;b>XbrPsB;@^tDFVDn%Sc4}-Lh8Q>gIrPF7vX=pZ!JC+9Xh5;YPN%&%@J_KWm8R^fGn6>@bqib'
    'yoo5m6&#H>7WcPK*xQrF9)-01A_)#|%FaK>qU*niA1Gl!OA@ATgwiJ>DVHEBLEN#ATY(Q%=;ym;#|m6pYwZmaz`o2qp&A~_@f8Ai'
    'LYrR+MoUV+;sk+VG7qQfj0}3Qts<q#C*FWggf~i%UG!e|*dai^9i!*j5H8QG8)vn)*@=obS4X$AfNmaMD50-M;eUWC9*&9gaAjp*'
    's%8~x(N2M*Ts5FyZ^>@ozrS{^_>CwsS5k=*mSh60RNS9vsg*$_5plSWS?#M5x*J|#+jt8F?1V74lFwI_JGO9RT3`DY^I=QppC~84'
    '<H+m=w$}<mCD$agFjP?k7!>IU>HP?#_a>8Q>MolcPM|kx3+WH)TwxqH5sPcOSZi=1!&d(F8=bii`ux1MI2uXFeKFxNdQ*$B_VL;7'
    '#%Q2}x<?ksvnei#*(g+g>&tdkon1KEgU0C?;3vqDTekb}>@$}kp<_1|AY%%zu77F7$JsA%ItohWw-3WmKJXwnK)|Gg2`pEzm4QSe'
    'WSu>T(0U4xCbG8SiA0`L$2A=?Uh(aDPNv0~rf!gVG&f?7;M-EoyB31V-mX)w+#W7d_z6x%Nkg&2*fUXAAV>w5R;$#7{G3}&8(p4@'
    'zs{8{1hkGgJk+nvEyP32#!ILDvncrQ@NKNp0(L4f{vl!;@<c#?@3OA`5=IVqaQd=6HocQG1NEy;GGWRg932eF)Arr^W(cFGd~Z**'
    'uKAx7NkyvQE$(|jc_0v5#S<eOn9Jc|yyDgz=XgP%g<VNvnOkkmRqEf7@2H5<GQHM9<Llqpnb6C(vqZIF8*Jp)%V`dxjSC^E3ZwlI'
    '`uH!usssMf4*&oF9o_D;J1ZkP00E|<0mA+P=1KULvBYQl0ssI200dcD'
)

# -- float64 attention and the check (flashcheck.repro.standalone, copied) ----------------------
"""The checking half of a standalone reproduction script: plain torch, float64, no flashcheck.

``flashcheck repro`` copies this module's source verbatim into every script it writes, after
the lines that define ``attention`` (the kernel, called as flashcheck's adapter calls it) and
``PAYLOAD`` (the exact inputs and flashcheck's allowed errors), and ends the script with
``sys.exit(main(attention, PAYLOAD))``. flashcheck's own tests import it as a module, so what a
script computes is what is tested.

The payload (:func:`unpack`) holds the protocol call's tensors saved with their storage, sizes,
strides and offset, so a strided or padded view arrives bit for bit and laid out as it was;
the upstream gradients of a gradient property; and, for each output compared with float64
attention, the allowed error of every element and the largest error allowed anywhere, as
flashcheck's tolerance model derived them for these inputs (docs/tolerance.md): a script
recomputes the float64 answer, never the allowance.

What a script checks is ``payload["check"]``, one of :data:`CHECKS`; it prints what it found
and :func:`main` returns 1 where the property fails, 0 where it holds.
"""

import argparse
import base64
import contextlib
import io
import lzma
import math
import sys
import traceback

import torch

#: What a script can check, each the standalone form of flashcheck properties (the property is
#: named in the script's docstring): ``reference`` compares outputs (out, lse, or the gradients)
#: with float64 attention within the allowed error; ``finite``: out finite, lse finite except
#: -inf on rows without keys; ``empty_rows``: out exactly 0 and lse -inf on rows without keys;
#: ``deterministic``: two identical calls agree bitwise (``backward``: their gradients);
#: ``unseen_keys_zero``: keys no query may attend get dK = dV = 0 exactly; ``empty_rows_zero_dq``:
#: rows without keys get dQ = 0 exactly; ``runs``: the case's own call (and its backward) for a
#: crash, a hang or a fatal error, which reproduces where the process dies, hangs or raises;
#: ``unchanged``: the case's call (and its backward) leave q, k, v (and the upstream gradients)
#: as they were, which every call of every check also verifies (:func:`left_unchanged`);
#: ``relations``: several calls, and relations between their results (:func:`related`);
#: ``written_in_bounds``: out and lse written into given views, every element and nothing
#: around them (:func:`written_in_bounds`); ``memory_flat``: repeated identical calls keep no
#: device memory (:func:`memory_flat`, CUDA only).
CHECKS = ("reference", "finite", "empty_rows", "deterministic", "unseen_keys_zero", "empty_rows_zero_dq", "runs",
          "unchanged", "relations", "written_in_bounds", "memory_flat")


# -- the payload ---------------------------------------------------------------------------------


def unpack(payload: str) -> dict:
    """The payload's dictionary, from its text (base85 of an lzma-compressed ``torch.save``), or
    from the file beside the script that ``payload`` names (``"file:NAME"``: a large case's)."""
    if payload.startswith("file:"):
        import pathlib

        here = pathlib.Path(sys.argv[0]).resolve().parent
        compressed = (here / payload[len("file:"):]).read_bytes()
    else:
        compressed = base64.b85decode(payload)
    return torch.load(io.BytesIO(lzma.decompress(compressed)), weights_only=True)


def place(entry, device):
    """A tensor of the payload on ``device``, laid out as it was: ``entry`` is a dict with the
    whole ``storage`` (a flat tensor) and the view's ``size``, ``stride`` and ``offset``."""
    if entry is None:
        return None
    storage = entry["storage"].to(device)
    return storage.as_strided(entry["size"], entry["stride"], entry["offset"])


# -- float64 attention ---------------------------------------------------------------------------


def allowed_keys(q, k, *, causal=False, window=(-1, -1), attn_mask=None, cu_seqlens_q=None, cu_seqlens_k=None,
                 **_):
    """Boolean ``(B|1, H|1, Nq, Nk)``: which key each query may attend. The band is aligned
    bottom-right: with ``shift = Nk - Nq``, query i attends key j iff ``-left <= j - i - shift
    <= right`` (-1 unbounded; causal makes right 0). Packed inputs (q ``(Tq, H, D)``) are a
    batch of one in which a query attends only keys of its own sequence, the band aligned per
    sequence. ``attn_mask`` (True = attend) is ANDed in."""
    left, right = window
    if causal:
        right = 0
    device = q.device
    if cu_seqlens_q is None:
        nq, nk = q.shape[1], k.shape[1]
        rows = torch.arange(nq, device=device)[:, None]
        cols = torch.arange(nk, device=device)[None, :]
        offset = cols - rows - (nk - nq)
        same = torch.ones(nq, nk, dtype=torch.bool, device=device)
    else:
        def positions(cu, total):
            cu = cu.to(device=device, dtype=torch.int64)
            tokens = torch.arange(total, device=device)
            sequence = torch.searchsorted(cu[1:], tokens, right=True)
            return sequence, tokens - cu[sequence], (cu[1:] - cu[:-1])[sequence]

        seq_q, pos_q, len_q = positions(cu_seqlens_q, q.shape[0])
        seq_k, pos_k, len_k = positions(cu_seqlens_k, k.shape[0])
        same = seq_q[:, None] == seq_k[None, :]
        offset = pos_k[None, :] - pos_q[:, None] - (len_k[None, :] - len_q[:, None])
    allowed = same.clone()
    if left != -1:
        allowed &= offset >= -left
    if right != -1:
        allowed &= offset <= right
    allowed = allowed[None, None]
    if attn_mask is not None:
        mask = attn_mask.to(device=device, dtype=torch.bool)
        while mask.dim() < 4:
            mask = mask[None]
        allowed = allowed & mask
    return allowed


def _bhnd(tensor, packed, group=1):
    """float64 ``(B, H, N, D)`` of q, k or v (packed: a batch of one), KV heads repeated per group."""
    tensor = tensor.detach().to(torch.float64)
    tensor = (tensor[None] if packed else tensor).transpose(1, 2)
    return tensor.repeat_interleave(group, dim=1) if group > 1 else tensor


def _scale(q, softmax_scale):
    return softmax_scale if softmax_scale is not None else 1.0 / math.sqrt(q.shape[-1])


def _probabilities(q, k, allowed, scale):
    """float64 softmax of ``scale·q·kᵀ`` over the allowed keys (0 elsewhere, and on rows without
    keys) and the row log-sum-exp (-inf on rows without keys)."""
    logits = (scale * (q @ k.transpose(-1, -2))).masked_fill(~allowed, -math.inf)
    row_max = logits.amax(dim=-1, keepdim=True)
    empty = row_max == -math.inf
    weights = torch.exp(logits - row_max.masked_fill(empty, 0.0))
    total = weights.sum(dim=-1, keepdim=True)
    return weights / total.masked_fill(empty, 1.0), (row_max + torch.log(total)).squeeze(-1)


def attention64(q, k, v, **kwargs):
    """Standard attention in float64 on the protocol's arguments: ``(out, lse)`` in the
    implementation's layouts (out like q, lse ``(B, H, Nq)`` or packed ``(H, Tq)``), float64."""
    packed = q.dim() == 3
    group = q.shape[-2] // k.shape[-2]
    qb, kb, vb = _bhnd(q, packed), _bhnd(k, packed, group), _bhnd(v, packed, group)
    probs, lse = _probabilities(qb, kb, allowed_keys(q, k, **kwargs), _scale(q, kwargs.get("softmax_scale")))
    out = (probs @ vb).transpose(1, 2)
    return (out[0], lse[0]) if packed else (out, lse)


def gradients64(q, k, v, grad_out, grad_lse=None, **kwargs):
    """Float64 gradients ``(dq, dk, dv)`` of ``Σ out·grad_out + Σ lse·grad_lse`` (``grad_lse``
    None: no lse term), in the inputs' layouts, dK and dV summed over each GQA group:
    ``dS = P ∘ (dO·Vᵀ - rowsum(dO ∘ O) + grad_lse)``, ``dQ = scale·dS·K``, ``dK = scale·dSᵀ·Q``,
    ``dV = Pᵀ·dO``. Rows without keys contribute nothing."""
    packed = q.dim() == 3
    heads, kv_heads = q.shape[-2], k.shape[-2]
    group = heads // kv_heads
    scale = _scale(q, kwargs.get("softmax_scale"))
    qb, kb, vb = _bhnd(q, packed), _bhnd(k, packed, group), _bhnd(v, packed, group)
    allowed = allowed_keys(q, k, **kwargs)
    probs, _ = _probabilities(qb, kb, allowed, scale)
    empty = ~allowed.any(dim=-1, keepdim=True)
    do = _bhnd(grad_out, packed).masked_fill(empty, 0.0)
    upstream = do @ vb.transpose(-1, -2) - (do * (probs @ vb)).sum(dim=-1, keepdim=True)
    if grad_lse is not None:
        dlse = grad_lse.detach().to(torch.float64)
        upstream = upstream + (dlse[None] if packed else dlse)[..., None].masked_fill(empty, 0.0)
    ds = probs * upstream
    dq = scale * (ds @ kb)
    dk = scale * (ds.transpose(-1, -2) @ qb)
    dv = probs.transpose(-1, -2) @ do

    def per_kv_head(t):  # (B, H, Nk, D) -> (B, Hkv, Nk, D), summed over each group's query heads
        return t.unflatten(1, (kv_heads, group)).sum(dim=2)

    grads = (dq.transpose(1, 2), per_kv_head(dk).transpose(1, 2), per_kv_head(dv).transpose(1, 2))
    return tuple(g[0] for g in grads) if packed else grads


# -- calling the kernel --------------------------------------------------------------------------


class InputModified(Exception):
    """The kernel wrote into one of its inputs: no result of that call is compared."""


def storage_bytes(tensor):
    """The bytes of ``tensor``'s whole storage (the padding of a view included)."""
    return torch.empty(0, dtype=torch.uint8, device=tensor.device).set_(tensor.untyped_storage())


@contextlib.contextmanager
def left_unchanged(tensors, during):
    """Raise :class:`InputModified`, naming the first of ``tensors`` (name -> tensor or None)
    whose storage ``during`` changed, as flashcheck checks around every call."""
    saved = {name: storage_bytes(t).clone() for name, t in tensors.items() if t is not None}
    yield
    for name, before in saved.items():
        changed = storage_bytes(tensors[name]) != before
        if bool(changed.any()):
            raise InputModified(f"{name} was modified by {during}: {int(changed.sum())} of {changed.numel()} bytes "
                                f"of its storage changed (first at byte {int(changed.nonzero()[0])}); a kernel must "
                                f"leave its inputs as they were")


def call(attention, q, k, v, kwargs):
    """``(out, lse)`` of one call, checked to leave q, k and v as they were and to be well formed
    (out like q, lse None or float32)."""
    with left_unchanged({"q": q, "k": k, "v": v}, "the call"):
        result = attention(q, k, v, **kwargs)
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        raise TypeError(f"expected (out, lse) from the kernel, got {type(result).__name__}")
    out, lse = result
    if tuple(out.shape) != tuple(q.shape) or out.dtype != q.dtype:
        raise TypeError(f"out: expected shape {tuple(q.shape)} and dtype {q.dtype}, got {tuple(out.shape)} {out.dtype}")
    return out, lse


def backward(attention, q, k, v, kwargs, grad_out, grad_lse):
    """``(dq, dk, dv), lse_differentiable`` by autograd through one call: the loss is
    ``Σ out·grad_out``, plus ``Σ lse·grad_lse`` over rows with keys where the kernel returns an
    lse that autograd tracks (``grad_lse`` given)."""
    leaves = [t.detach().requires_grad_() for t in (q, k, v)]
    out, lse = call(attention, *leaves, kwargs)
    loss = (out.float() * grad_out.float()).sum()
    differentiable = lse is not None and lse.requires_grad and grad_lse is not None
    if differentiable:
        loss = loss + torch.where(torch.isfinite(lse), lse * grad_lse, torch.zeros_like(lse)).sum()
    if not loss.requires_grad:
        return tuple(torch.zeros_like(leaf) for leaf in leaves), differentiable
    watched = {"q": q, "k": k, "v": v, "grad_out": grad_out, "grad_lse": grad_lse}
    with left_unchanged(watched, "the backward pass"):
        grads = torch.autograd.grad(loss, leaves, allow_unused=True, materialize_grads=True)
    return grads, differentiable


# -- comparing -----------------------------------------------------------------------------------


def overflow_threshold(dtype):
    """The smallest magnitude that rounds to infinity in ``dtype``."""
    info = torch.finfo(dtype)
    return float(info.max) + 2.0 ** math.floor(math.log2(info.max)) * info.eps / 2


def held_to(exact, got, allowed):
    """The float64 ``exact`` value, except where ``got`` is an infinity of the same sign that a
    value within ``allowed`` of it rounds to in ``got``'s dtype: there that infinity."""
    got64 = got.detach().to(torch.float64)
    reach = exact.abs() + allowed >= overflow_threshold(got.dtype)
    overflowed = torch.isinf(got64) & (torch.sign(got64) == torch.sign(exact)) & reach
    return torch.where(overflowed, got64, exact)


def index_text(index):
    return "(" + ", ".join(str(int(i)) for i in index) + ")"


def errors(got, exact):
    """The float64 absolute error of ``got`` against ``exact``; equal non-finite values (NaN
    against NaN included) count as 0, a NaN elsewhere as infinite."""
    got64, exact64 = got.detach().to(torch.float64), exact.detach().to(torch.float64)
    same = (got64 == exact64) | (torch.isnan(got64) & torch.isnan(exact64))
    return torch.where(same, torch.zeros_like(got64), (got64 - exact64).abs()).nan_to_num(nan=math.inf)


def compare(name, got, exact, allowed, limit):
    """Print how ``got`` compares with the float64 ``exact`` within the elementwise ``allowed``
    error (and the largest error allowed anywhere, ``limit``, or None); True where it holds.
    Equal non-finite values agree; a NaN or an infinity elsewhere is never allowed."""
    got64 = got.detach().to(torch.float64)
    error = errors(got64, held_to(exact, got, allowed))
    allowed = allowed.expand_as(error)
    exceed = (error > allowed) | torch.isinf(error)
    if error.numel() == 0:
        print(f"{name}: no elements")
        return True
    ratio = torch.where(error == 0, torch.zeros_like(error), error / allowed)
    worst = torch.unravel_index(torch.argmax(ratio), error.shape)
    largest = float(error.max())
    print(f"{name}: {int(exceed.sum())} of {error.numel()} elements exceed the allowed error; worst at "
          f"{index_text(worst)}: got {float(got64[worst])!r}, float64 {float(exact[worst])!r}, "
          f"error {float(error[worst]):.3e}, allowed {float(allowed[worst]):.3e}")
    if exceed.any():
        return False
    if limit is not None and largest > limit:
        print(f"{name}: the largest error {largest:.3e} exceeds {limit:.3e}, the most flashcheck allows anywhere "
              f"(twice a plain same-precision attention's largest error plus an ulp-scale floor)")
        return False
    return True


def none_of(name, found, values, what):
    """Print whether any element of the boolean ``found`` is set (``what`` says what it means);
    True where none is."""
    count = int(found.sum())
    if count:
        index = tuple(int(i) for i in found.nonzero()[0])
        print(f"{name}: {count} elements {what}; first at {index_text(index)}: {float(values[index])!r}")
        return False
    print(f"{name}: none {what}")
    return True


def bitwise_equal(a, b):
    a, b = a.detach().contiguous(), b.detach().contiguous()
    if a.dtype.is_floating_point and a.element_size() in (2, 4, 8):
        ints = {2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]
        return (a.view(ints) == b.view(ints)) | (a == b)  # +0 equals -0
    return a == b


def agree(name, got, other, allowed, what, where=None):
    """Print how ``got`` compares with ``other``, another call's result, within the elementwise
    ``allowed`` error (only ``where``, a boolean tensor like them, when given); True where it
    holds. Equal non-finite values agree; a NaN or an infinity elsewhere is never allowed."""
    got64, other64 = got.detach().to(torch.float64), other.detach().to(torch.float64)
    error = errors(got64, other64)
    if where is not None:
        error = torch.where(where, error, torch.zeros_like(error))
    allowed = allowed.expand_as(error)
    if error.numel() == 0:
        print(f"{name}: no elements")
        return True
    exceed = (error > allowed) | torch.isinf(error)
    ratio = torch.where(error == 0, torch.zeros_like(error), error / allowed)
    worst = torch.unravel_index(torch.argmax(ratio), error.shape)
    print(f"{name}: {int(exceed.sum())} of {error.numel()} elements differ from {what} by more than the allowed "
          f"error; worst at {index_text(worst)}: {float(got64[worst])!r} against {float(other64[worst])!r}, "
          f"error {float(error[worst]):.3e}, allowed {float(allowed[worst]):.3e}")
    return not bool(exceed.any())


def sliced(tensor, index):
    """``tensor`` at ``index`` (None: all of it): per leading dimension an int, a ``[start, stop]``
    pair, or None for the whole dimension."""
    if tensor is None or index is None:
        return tensor
    return tensor[tuple(slice(None) if i is None else slice(*i) if isinstance(i, list) else i for i in index)]


def run_calls(attention, data, device):
    """The results of every call of ``data["calls"]``: out and lse, and dq, dk, dv by autograd
    for a call that carries upstream gradients (``grad_out``)."""
    results = []
    for entry in data["calls"]:
        q, k, v, kwargs = placed(entry, device)
        result = dict(zip(("out", "lse"), call(attention, q, k, v, kwargs)))
        if entry.get("grad_out") is not None:
            grads, result["differentiable"] = backward(attention, q, k, v, kwargs, place(entry["grad_out"], device),
                                                       place(entry.get("grad_lse"), device))
            result.update(zip(("dq", "dk", "dv"), grads))
        results.append(result)
    return results


def related(attention, data, device):
    """The ``relations`` check: every call of ``data["calls"]`` (:func:`run_calls`), then each
    relation between their results (each result at its relation's ``left_index`` and
    ``right_index``, :func:`sliced`): against another call's result (``against`` "calls": bit for
    bit, or within an allowed error), against float64 attention on the left call's own inputs
    ("reference"), the left result minus the right one against the same difference of their
    float64 attention ("reference_difference"), the left result against the sums over each group
    of ``group`` heads of the right one's (its axis -2; "group_sum": GQA's dK and dV against the
    gradients with K and V repeated per head), every element bit for bit equal to ``value``
    ("value"), or no trace of NaN padding read into the left call's results (``right``: the same
    views into zero padding, then contiguous copies; "nan_leak", :func:`no_trace_of_nan`); True
    where all hold."""
    results, exact = run_calls(attention, data, device), {}

    def reference(index):
        """Float64 attention on call ``index``'s inputs, and its gradients where the call ran its
        backward (with the lse term where the kernel's lse is differentiable)."""
        if index not in exact:
            entry = data["calls"][index]
            q, k, v, kwargs = placed(entry, device)
            exact[index] = dict(zip(("out", "lse"), attention64(q, k, v, **kwargs)))
            if entry.get("grad_out") is not None:
                grad_lse = place(entry.get("grad_lse"), device) if results[index]["differentiable"] else None
                exact[index].update(zip(("dq", "dk", "dv"),
                                        gradients64(q, k, v, place(entry["grad_out"], device), grad_lse, **kwargs)))
        return exact[index]

    held = True
    for relation in data["relations"]:
        name = relation["output"]
        against = relation.get("against", "calls")
        left = sliced(results[relation["left"]][name], relation.get("left_index"))
        if against in ("reference", "value"):
            if left is None:
                continue  # the kernel returns no lse
            if against == "value":
                differ = ~bitwise_equal(left, torch.full_like(left, relation["value"]))
                held &= none_of(name, differ, left, f"are not {relation['what']}")
            else:
                held &= compare(name, left, reference(relation["left"])[name], place(relation["allowed"], device),
                                relation.get("limit"))
            continue
        rights = [sliced(results[index][name], relation.get("right_index")) for index in relation["right"]]
        if left is None and all(right is None for right in rights):
            continue  # the kernel returns no lse
        if left is None or any(right is None for right in rights):
            print(f"{name}: returned by some of the calls and not by others")
            held = False
            continue
        if against == "nan_leak":
            clean_call = relation["right"][1]
            without = relation.get("allowed_without_lse_gradient")
            lse_term = results[clean_call].get("differentiable", True) or without is None
            allowed = place(relation["allowed"] if lse_term else without, device)
            held &= no_trace_of_nan(name, left, rights[0], rights[1], reference(clean_call)[name], allowed,
                                    relation["held_to"])
            continue
        where = place(relation["where"], device)
        if relation["where_normal"]:
            normal = rights[0].abs() > torch.finfo(rights[0].dtype).tiny
            where = normal if where is None else where & normal
        allowed = place(relation["allowed"], device)
        if allowed is None:  # one right-hand call, times an exact scale (1, -1, 2)
            right = rights[0] * relation["scale"]
            differ = ~bitwise_equal(left, right) if left.shape == right.shape else torch.ones((), dtype=torch.bool)
            held &= none_of(name, differ if where is None else differ & where, left, f"differ from {relation['what']}")
        elif against == "reference_difference":
            got = left.detach().to(torch.float64) - rights[0].detach().to(torch.float64)
            shift = reference(relation["left"])[name] - reference(relation["right"][0])[name]
            held &= agree(name, got, shift, allowed, relation["what"], where)
        elif against == "group_sum":
            # A group with an infinite per-head gradient has no defined sum (+inf and -inf give
            # NaN): that element is left to the comparison with float64, as flashcheck leaves it.
            per_head = rights[0].detach().to(torch.float64).unflatten(-2, (-1, relation["group"]))
            defined = per_head.isfinite().all(dim=-2)
            total = torch.where(defined, held_to(per_head.sum(dim=-2), left, allowed), left.detach().to(torch.float64))
            held &= agree(name, left, total, allowed, relation["what"], where)
        else:
            right = sum(r.detach().to(torch.float64) for r in rights) * relation["scale"]
            held &= agree(name, left, right, allowed, relation["what"], where)
    return held


def no_trace_of_nan(name, padded, zero_padded, contiguous, exact, allowed, overflow_held):
    """The ``nan_leak`` relation: output ``name`` of views into NaN (``padded``) is not non-finite
    where the same views into zero padding give a finite value, and is within ``allowed`` of the
    float64 ``exact`` wherever the contiguous copies of the same tokens are (``overflow_held``:
    an infinity of ``padded`` that ``exact`` rounds to counts as exact, :func:`held_to`)."""
    exact = held_to(exact, padded, allowed) if overflow_held else exact
    leaked = ~torch.isfinite(padded) & torch.isfinite(zero_padded)
    held = none_of(name, leaked, padded, "are non-finite for tokens that are views into NaN where the same views "
                                         "into zero padding give finite values (read from the padding)")
    # Where the contiguous copies are wrong too, the padding is not to blame: compared with itself.
    target = torch.where(errors(contiguous, exact) <= allowed, exact, padded.detach().to(torch.float64))
    print(f"{name}, against float64 where the contiguous copies of the same tokens agree with it:")
    return compare(name, padded, target, allowed, None) and held


def guarded(shape, dtype, device, pads):
    """``(buffer, view, inside)``: a view of ``shape`` inside a NaN-filled buffer with guard
    bands of ``pads`` on each side of each dimension, and a boolean mask over the buffer that
    is True exactly under the view."""
    padded = tuple(size + 2 * pad for size, pad in zip(shape, pads))
    buffer = torch.full(padded, float("nan"), dtype=dtype, device=device)
    region = tuple(slice(pad, pad + size) for size, pad in zip(shape, pads))
    inside = torch.zeros(padded, dtype=torch.bool, device=device)
    inside[region] = True
    return buffer, buffer[region], inside


def written_in_bounds(attention, q, k, v, kwargs, pads):
    """The ``written_in_bounds`` check: the call given NaN-filled ``out=`` and ``lse_out=`` views
    inside guard bands (``pads["out"]``, ``pads["lse"]``: per dimension, the last ones used)
    writes every element of them, returns them, and writes nothing around them."""
    lse_shape = (q.shape[1], q.shape[0]) if q.dim() == 3 else (q.shape[0], q.shape[2], q.shape[1])
    out_buffer, out_view, out_inside = guarded(tuple(q.shape), q.dtype, q.device, pads["out"][-q.dim():])
    lse_buffer, lse_view, lse_inside = guarded(lse_shape, torch.float32, q.device, pads["lse"][-len(lse_shape):])
    out, lse = call(attention, q, k, v, dict(kwargs, out=out_view, lse_out=lse_view))
    held = True
    for name, buffer, view, inside, returned in (("out", out_buffer, out_view, out_inside, out),
                                                 ("lse", lse_buffer, lse_view, lse_inside, lse)):
        if returned is not None and returned.data_ptr() != view.data_ptr():
            print(f"{name}: the call returned a new tensor instead of writing the given one")
            held = False
            continue
        held &= none_of(name, torch.isnan(view), view, "were left unwritten (still the NaN poison)")
        held &= none_of(name, ~torch.isnan(buffer) & ~inside, buffer,
                        "outside the output were overwritten (index into the buffer, which has the output at the "
                        "guard offset)")
    return held


class CannotCheck(Exception):
    """The check cannot be made here (memory on a device without an allocated-memory count)."""


def memory_grew(readings, slack):
    """Whether the device memory ``readings`` (after a warm-up call, then after each repeat) show
    a call keeping memory: growth over the repeats beyond ``slack`` bytes, or growth at every one."""
    steps = [after - before for before, after in zip(readings, readings[1:])]
    return readings[-1] - readings[0] > slack or all(step > 0 for step in steps)


def memory_flat(attention, q, k, v, kwargs, grad_out, grad_lse, repeats, slack):
    """The ``memory_flat`` check: after a warm-up call, ``repeats`` identical calls (with their
    backward passes where ``grad_out`` is given), each dropping its results, keep the memory held
    by live tensors within ``slack`` bytes and do not grow it at every call."""
    if q.device.type != "cuda":
        raise CannotCheck(f"torch counts no allocated memory on {q.device.type}: run with --device cuda")
    import gc

    def once():
        if grad_out is not None:
            backward(attention, q, k, v, kwargs, grad_out, grad_lse)
        else:
            call(attention, q, k, v, kwargs)
        gc.collect()
        torch.cuda.synchronize(q.device)
        return torch.cuda.memory_allocated(q.device)

    readings = [once() for _ in range(repeats + 1)]
    steps = ", ".join(f"{after - before:+d}" for before, after in zip(readings, readings[1:]))
    print(f"allocated after the warm-up call: {readings[0]} bytes; then call by call: {steps} bytes "
          f"(allowed: at most {slack} bytes over the {repeats} calls, and no growth at every call)")
    return not memory_grew(readings, slack)


def same_bits(name, second, first):
    differ = ~bitwise_equal(second, first)
    return none_of(name, differ, second, "differ from an identical first call")


# -- the checks ----------------------------------------------------------------------------------


def placed(entry, device):
    """``(q, k, v, kwargs)`` of one call of the payload (its ``inputs``, ``kwargs`` and
    ``tensor_kwargs``) on ``device``."""
    q, k, v = (place(entry["inputs"][name], device) for name in "qkv")
    kwargs = dict(entry["kwargs"], **{name: place(t, device) for name, t in entry["tensor_kwargs"].items()})
    return q, k, v, kwargs


def run_check(attention, data, device):
    """Run ``data["check"]`` (one of :data:`CHECKS`) on the payload ``data``; True where it holds."""
    q, k, v, kwargs = placed(data, device)
    check = data["check"]
    grad_out = place(data.get("grad_out"), device)
    grad_lse = place(data.get("grad_lse"), device)
    outputs = data.get("outputs", ())
    if check == "relations":
        return related(attention, data, device)
    if check == "written_in_bounds":
        return written_in_bounds(attention, q, k, v, kwargs, data["pads"])
    if check == "memory_flat":
        return memory_flat(attention, q, k, v, kwargs, grad_out, grad_lse, data["repeats"], data["slack"])
    if check in ("runs", "unchanged"):
        call(attention, q, k, v, kwargs)
        if grad_out is not None:
            backward(attention, q, k, v, kwargs, grad_out, grad_lse)
        if check == "unchanged":
            print("q, k and v" + (" and the upstream gradients" if grad_out is not None else "")
                  + " were left as they were")
        else:
            print("the case's call completed: not reproduced here (the property may have met the failure in a "
                  "call of its own, on other inputs made from this case; replay it with flashcheck check)")
        return True
    packed = q.dim() == 3
    allowed = allowed_keys(q, k, **kwargs).expand(1 if packed else q.shape[0], q.shape[-2], q.shape[-3], -1)
    empty = ~allowed.any(dim=-1)  # (B, H, Nq): rows without keys, a batch of one when packed
    empty_lse = empty[0] if packed else empty  # like lse
    empty_out = (empty[0].transpose(0, 1) if packed else empty.transpose(1, 2))[..., None]  # like out
    if grad_out is None:  # a forward property
        out, lse = call(attention, q, k, v, kwargs)
        if check == "deterministic":
            again = call(attention, q, k, v, kwargs)
            held = same_bits("out", again[0], out)
            return (same_bits("lse", again[1], lse) if lse is not None else True) and held
        exact = dict(zip(("out", "lse"), attention64(q, k, v, **kwargs)))
        results = {"out": out, "lse": lse}
        if check == "reference":
            held = True
            for name in outputs:
                if results[name] is None:
                    print(f"{name}: the kernel returned none")
                    held = False
                    continue
                allowed = place(data["allowed"][name], device)
                held &= compare(name, results[name], exact[name], allowed, data["limits"].get(name))
            return held
        if check == "finite":
            held = none_of("out", ~torch.isfinite(out), out, "are not finite")
            if lse is not None:
                wrong = (~torch.isfinite(lse) & ~empty_lse) | (empty_lse & (lse != -math.inf))
                held &= none_of("lse", wrong, lse, "are not finite on a row with keys, or not -inf on one without")
            return held
        if check == "empty_rows":
            held = none_of("out", (out != 0) & empty_out, out, "are not 0 on a row without keys")
            if lse is not None:
                held &= none_of("lse", (lse != -math.inf) & empty_lse, lse, "are not -inf on a row without keys")
            return held
        raise ValueError(f"check: {check!r} is not a forward check")
    grads, differentiable = backward(attention, q, k, v, kwargs, grad_out, grad_lse)
    results = dict(zip(("dq", "dk", "dv"), grads))
    if check == "deterministic":
        again, _ = backward(attention, q, k, v, kwargs, grad_out, grad_lse)
        return all([same_bits(name, second, results[name]) for name, second in zip(("dq", "dk", "dv"), again)])
    if check == "reference":
        variant = "allowed" if differentiable or grad_lse is None else "allowed_without_lse_gradient"
        if differentiable:
            print("lse is differentiable: its upstream gradient is part of the loss")
        exact = dict(zip(("dq", "dk", "dv"), gradients64(q, k, v, grad_out, grad_lse if differentiable else None,
                                                        **kwargs)))
        held = True
        for name in outputs:
            held &= compare(name, results[name], exact[name], place(data[variant][name], device), None)
        return held
    if check == "unseen_keys_zero":
        seen = allowed.any(dim=2).unflatten(1, (k.shape[-2], -1)).any(dim=2)  # (B, Hkv, Nk)
        unseen = (~seen).transpose(1, 2)[..., None]  # (B, Nk, Hkv, 1)
        if packed:
            unseen = unseen[0]
        held = none_of("dk", (results["dk"] != 0) & unseen, results["dk"], "are not 0 for a key no query may attend")
        return none_of("dv", (results["dv"] != 0) & unseen, results["dv"],
                       "are not 0 for a key no query may attend") and held
    if check == "empty_rows_zero_dq":
        return none_of("dq", (results["dq"] != 0) & empty_out, results["dq"], "are not 0 on a row without keys")
    raise ValueError(f"check: {check!r} is not a gradient check")


def _pinned_moves() -> int:
    """How many times a Triton autotuner this script pins moved to another configuration: the
    ``moves`` of flashcheck.autotune_pin, whose source a script carries before this one where it
    pins any (flashcheck decides such a failure once more, and so does the script); 0 elsewhere."""
    moves = globals().get("moves")
    return moves() if callable(moves) else 0


def main(attention, payload, argv=None):
    """Run the script's check: 1 where the property fails (or the kernel raises), 0 where it holds."""
    data = unpack(payload)
    parser = argparse.ArgumentParser(description=data["title"])
    parser.add_argument("--device", default=data["device"], help=f"where to run (default {data['device']})")
    device = parser.parse_args(argv).device
    print(data["title"])
    try:
        moves = _pinned_moves()
        held = run_check(attention, data, device)
        if not held and _pinned_moves() != moves:
            print("a pinned autotuner moved to another configuration during the check (its line on stderr): "
                  "checked once more, every call on the configuration it moved to")
            held = run_check(attention, data, device)
    except InputModified as modified:
        print(modified)
        print("FAILS")
        return 1
    except CannotCheck as why:
        print(f"CANNOT CHECK: {why}")
        return 2
    except Exception:  # noqa: BLE001 - the kernel raising is what this script reproduces
        traceback.print_exc()
        print("FAILS: the kernel raised (above)")
        return 1
    if held and data.get("kind", "property") != "property":
        # A crash, a hang or a fatal error that this run of the case's call did not meet: CUDA reports
        # errors late, so the one flashcheck met may have come from an earlier case in its process.
        print(f"DID NOT REPRODUCE: the {data['kind']} flashcheck met did not happen in this run")
        return 0
    print("HOLDS" if held else "FAILS")
    return 0 if held else 1


if __name__ == "__main__":
    sys.exit(main(attention, PAYLOAD))
