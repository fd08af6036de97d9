"""What the tests use besides pytest: implementations with planted bugs (``buggy``), stubs that
declare, decline or misbehave (``stubs``, ``misbehaving``, ``declared``, ``domain_kernels``,
``unusual``, ...), fakes of other libraries (``peer_fakes``), mutants, a ``flashcheck`` command run
in process or in a subprocess (``cli_process``) and a real ``redis-server`` (``redis_server``).

Named in tests and docs as ``tests.support.MODULE:attr``, the way a user names an implementation.
"""
