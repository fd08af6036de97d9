"""Tools for the developers of the project kernel (``flashcheck.kernels``), run as
``python -m flashcheck.devtools.<tool>``: :mod:`~flashcheck.devtools.tune` times launch
configurations on a GPU and prints the table of tuned settings,
:mod:`~flashcheck.devtools.specialisations` counts the kernel compilations that a property's
drawn cases need, and :mod:`~flashcheck.devtools.codegen` compiles the kernels for a GPU on a
machine without one and reports their instructions, registers and spills. They drive the
kernel with the verifier's own machinery (benchmark shapes, case strategies, properties),
so they live here, above both, and the kernel imports nothing of the verifier.
"""
