"""Cases: what one attention problem is, and how cases are drawn.

- :mod:`flashcheck.cases.case`: :class:`~flashcheck.cases.case.Case`, the complete
  description of one problem, its one-line spec and its tensors;
- :mod:`flashcheck.cases.masks`, :mod:`flashcheck.cases.maskspec` and
  :mod:`flashcheck.cases.packing`: which keys a query may attend, a boolean mask described by
  its structure, and packed variable-length problems seen as a dense batch;
- :mod:`flashcheck.cases.domain`: the values of a case an implementation declares it runs;
- :mod:`flashcheck.cases.sizes`: how big drawn cases may be;
- :mod:`flashcheck.cases.compile_classes`: the parts of a case that decide which compiled
  variant of a kernel runs it;
- :mod:`flashcheck.cases.strategies` and :mod:`flashcheck.cases.hypothesis_profiles`: the
  hypothesis strategies that draw cases, and how hard hypothesis looks;
- :mod:`flashcheck.cases.phases`: where a case's time goes (inputs, call, reference).

Importing this package imports nothing: each module is imported by name.
"""
