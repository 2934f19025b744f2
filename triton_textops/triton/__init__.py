"""Glue between pb_utils and the ops: typed parameters, tensor I/O (DLPack), error mapping, base model, and `config.pbtxt` read and written with Triton's protobuf schema (:mod:`.config`)."""
