"""Fixed corpora of cases and what is measured on them, as numbers rather than verdicts.

- :mod:`flashcheck.regress.corpus`: the corpora, and an implementation's error relative to its
  allowance on one case;
- :mod:`flashcheck.regress.corpus_workers`: a corpus measured in worker processes;
- :mod:`flashcheck.regress.baseline`: regression baselines (``flashcheck baseline``), the worst
  error/allowed per bucket, recorded and checked;
- :mod:`flashcheck.regress.error_report` and :mod:`flashcheck.regress.plots`: the error report
  (``flashcheck report``), markdown and figures;
- :mod:`flashcheck.regress.environment`: what a measurement ran on.
"""
