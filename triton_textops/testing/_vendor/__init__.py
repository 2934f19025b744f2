"""Upstream files kept verbatim (see PROVENANCE.md): never edit them, replace them with a newer release's copy."""
