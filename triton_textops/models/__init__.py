"""Triton models: each module exposes ``TritonPythonModel``; a model.py is one import line."""
