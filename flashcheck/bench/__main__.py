"""``python -m flashcheck.bench PROVIDER MODE DTYPE HEAD_DIM causal|full SEQLEN...``: a
configuration's host and GPU time per call (see :func:`flashcheck.bench.main`)."""

from flashcheck.bench import main

raise SystemExit(main())
