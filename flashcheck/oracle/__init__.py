"""The oracle: what is expected of an implementation on a case, and how its outputs are judged.

- :mod:`flashcheck.oracle.reference`: the specification, standard attention in float64;
- :mod:`flashcheck.oracle.same_precision`: flashcheck's own same-precision attention, the
  plain implementation the tolerance model measures against;
- :mod:`flashcheck.oracle.tolerance`: how far a correct kernel may be from the reference;
- :mod:`flashcheck.oracle.expectation`: what a correct implementation must return for given
  inputs, with its allowed error;
- :mod:`flashcheck.oracle.compare`: an output compared with its expectation, and the failure
  that carries the evidence;
- :mod:`flashcheck.oracle.backward_inputs` and :mod:`flashcheck.oracle.backward_pass`: the
  inputs of a case's backward pass, and that pass run through an implementation;
- :mod:`flashcheck.oracle.case_predicates`: what a case's inputs demand of any implementation
  (float64 magnitudes, overflows), which the known divergences confine themselves to;
- :mod:`flashcheck.oracle.unchecked`: the parts of a check a case could not make, said out
  loud.

Importing this package imports nothing: each module is imported by name.
"""
