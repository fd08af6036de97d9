"""A module whose top level raises a BaseException that is neither an Exception nor SystemExit
(as a test framework's or a job runner's own control-flow exceptions are)."""


class Abandoned(BaseException):
    """Not an Exception: ``except Exception`` lets it through."""


raise Abandoned("this module gave up at import")
