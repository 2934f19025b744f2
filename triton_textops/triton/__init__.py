"""Glue between pb_utils and the ops: typed parameters, tensor I/O (DLPack), error mapping, base model."""
