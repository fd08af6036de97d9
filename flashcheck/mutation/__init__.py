"""Mutation testing: how many planted kernel bugs the property suite kills.

- :mod:`flashcheck.mutation.mutants`: the catalogue's contract, and every mutant fuzzed in a
  subprocess of its own until killed or out of budget;
- :mod:`flashcheck.mutation.matrix`: the full kill matrix, every property fuzzed on its own
  against every mutant (``flashcheck mutate --per-property``);
- :mod:`flashcheck.mutation.report`: the console output, the kill matrix and the score.
"""
