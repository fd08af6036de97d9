"""A module that cannot be imported: its top level raises (not an ImportError)."""

raise RuntimeError("this module is broken at import")
