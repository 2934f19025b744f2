"""Trained example pipelines (``triton-textops example ...``); see :mod:`triton_textops.examples.readability`."""
