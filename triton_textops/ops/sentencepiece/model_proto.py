"""sentencepiece's ``ModelProto`` schema for :mod:`protobuf`: the serialized ``FileDescriptorProto`` of
``sentencepiece_model.proto`` (copied from sentencepiece 0.2.x's generated ``sentencepiece_model_pb2.py``; that
file is Copyright 2016 Google Inc., Apache License 2.0, https://github.com/google/sentencepiece), made into message
classes in a private descriptor pool.

Why not import sentencepiece's own generated module: it is gencode pinned to one protobuf release (0.2.1 needs a
protobuf runtime >= its gencode's, and refuses to load otherwise; seen here with protobuf 6.33), and importing it
would make sentencepiece a runtime dependency. The descriptor bytes are the schema itself: any protobuf 4+ runtime
builds the same classes from them, and sentencepiece stays a test dependency (the oracle).
"""

from __future__ import annotations

import base64
import functools
from typing import Any

_DESCRIPTOR = base64.b64decode(
    "ChlzZW50ZW5jZXBpZWNlX21vZGVsLnByb3RvEg1zZW50ZW5jZXBpZWNlIuQMCgtUcmFpbmVyU3BlYxINCgVpbnB1dBgBIAMoCRIUCgxpbnB1dF9m"
    "b3JtYXQYByABKAkSFAoMbW9kZWxfcHJlZml4GAIgASgJEkEKCm1vZGVsX3R5cGUYAyABKA4yJC5zZW50ZW5jZXBpZWNlLlRyYWluZXJTcGVjLk1v"
    "ZGVsVHlwZToHVU5JR1JBTRIYCgp2b2NhYl9zaXplGAQgASgFOgQ4MDAwEiIKEmNoYXJhY3Rlcl9jb3ZlcmFnZRgKIAEoAjoGMC45OTk1Eh4KE2lu"
    "cHV0X3NlbnRlbmNlX3NpemUYCyABKAQ6ATASJAoWc2h1ZmZsZV9pbnB1dF9zZW50ZW5jZRgTIAEoCDoEdHJ1ZRIoChdzZWVkX3NlbnRlbmNlcGll"
    "Y2Vfc2l6ZRgOIAEoBToHMTAwMDAwMBIeChBzaHJpbmtpbmdfZmFjdG9yGA8gASgCOgQwLjc1EiEKE21heF9zZW50ZW5jZV9sZW5ndGgYEiABKAU6"
    "BDQxOTISFwoLbnVtX3RocmVhZHMYECABKAU6AjE2Eh0KEm51bV9zdWJfaXRlcmF0aW9ucxgRIAEoBToBMhIkChhtYXhfc2VudGVuY2VwaWVjZV9s"
    "ZW5ndGgYFCABKAU6AjE2EiUKF3NwbGl0X2J5X3VuaWNvZGVfc2NyaXB0GBUgASgIOgR0cnVlEh0KD3NwbGl0X2J5X251bWJlchgXIAEoCDoEdHJ1"
    "ZRIhChNzcGxpdF9ieV93aGl0ZXNwYWNlGBYgASgIOgR0cnVlEikKGnRyZWF0X3doaXRlc3BhY2VfYXNfc3VmZml4GBggASgIOgVmYWxzZRIrChxh"
    "bGxvd193aGl0ZXNwYWNlX29ubHlfcGllY2VzGBogASgIOgVmYWxzZRIbCgxzcGxpdF9kaWdpdHMYGSABKAg6BWZhbHNlEiMKGXByZXRva2VuaXph"
    "dGlvbl9kZWxpbWl0ZXIYNSABKAk6ABIXCg9jb250cm9sX3N5bWJvbHMYHiADKAkSHAoUdXNlcl9kZWZpbmVkX3N5bWJvbHMYHyADKAkSFgoOcmVx"
    "dWlyZWRfY2hhcnMYJCABKAkSHAoNYnl0ZV9mYWxsYmFjaxgjIAEoCDoFZmFsc2USKwoddm9jYWJ1bGFyeV9vdXRwdXRfcGllY2Vfc2NvcmUYICAB"
    "KAg6BHRydWUSHgoQaGFyZF92b2NhYl9saW1pdBghIAEoCDoEdHJ1ZRIcCg11c2VfYWxsX3ZvY2FiGCIgASgIOgVmYWxzZRIRCgZ1bmtfaWQYKCAB"
    "KAU6ATASEQoGYm9zX2lkGCkgASgFOgExEhEKBmVvc19pZBgqIAEoBToBMhISCgZwYWRfaWQYKyABKAU6Ai0xEhgKCXVua19waWVjZRgtIAEoCToF"
    "PHVuaz4SFgoJYm9zX3BpZWNlGC4gASgJOgM8cz4SFwoJZW9zX3BpZWNlGC8gASgJOgQ8L3M+EhgKCXBhZF9waWVjZRgwIAEoCToFPHBhZD4SGgoL"
    "dW5rX3N1cmZhY2UYLCABKAk6BSDigYcgEiIKGHNlZWRfc2VudGVuY2VwaWVjZXNfZmlsZRg2IAEoCToAEiYKF2F1dG9fY2hhcmFjdGVyX2NvdmVy"
    "YWdlGDcgASgIOgVmYWxzZRIbCg9hY2NlcHRfbGFuZ3VhZ2UYBSADKAlCAhgBEiQKFXNlbGZfdGVzdF9zYW1wbGVfc2l6ZRgGIAEoBToBMEICGAES"
    "IAoUbWluaW5nX3NlbnRlbmNlX3NpemUYDCABKAVCAhgBEiIKFnRyYWluaW5nX3NlbnRlbmNlX3NpemUYDSABKAVCAhgBEi8KHHRyYWluX2V4dHJl"
    "bWVseV9sYXJnZV9jb3JwdXMYMSABKAg6BWZhbHNlQgIYARIuChtlbmFibGVfZGlmZmVyZW50aWFsX3ByaXZhY3kYMiABKAg6BWZhbHNlQgIYARIv"
    "CiBkaWZmZXJlbnRpYWxfcHJpdmFjeV9ub2lzZV9sZXZlbBgzIAEoAjoBMEICGAESNgonZGlmZmVyZW50aWFsX3ByaXZhY3lfY2xpcHBpbmdfdGhy"
    "ZXNob2xkGDQgASgEOgEwQgIYASI1CglNb2RlbFR5cGUSCwoHVU5JR1JBTRABEgcKA0JQRRACEggKBFdPUkQQAxIICgRDSEFSEAQqCQjIARCAgICA"
    "AiLRAQoOTm9ybWFsaXplclNwZWMSDAoEbmFtZRgBIAEoCRIcChRwcmVjb21waWxlZF9jaGFyc21hcBgCIAEoDBIeChBhZGRfZHVtbXlfcHJlZml4"
    "GAMgASgIOgR0cnVlEiYKGHJlbW92ZV9leHRyYV93aGl0ZXNwYWNlcxgEIAEoCDoEdHJ1ZRIgChJlc2NhcGVfd2hpdGVzcGFjZXMYBSABKAg6BHRy"
    "dWUSHgoWbm9ybWFsaXphdGlvbl9ydWxlX3RzdhgGIAEoCSoJCMgBEICAgIACIs8DCgpNb2RlbFByb3RvEjcKBnBpZWNlcxgBIAMoCzInLnNlbnRl"
    "bmNlcGllY2UuTW9kZWxQcm90by5TZW50ZW5jZVBpZWNlEjAKDHRyYWluZXJfc3BlYxgCIAEoCzIaLnNlbnRlbmNlcGllY2UuVHJhaW5lclNwZWMS"
    "NgoPbm9ybWFsaXplcl9zcGVjGAMgASgLMh0uc2VudGVuY2VwaWVjZS5Ob3JtYWxpemVyU3BlYxI4ChFkZW5vcm1hbGl6ZXJfc3BlYxgFIAEoCzId"
    "LnNlbnRlbmNlcGllY2UuTm9ybWFsaXplclNwZWMa0gEKDVNlbnRlbmNlUGllY2USDQoFcGllY2UYASABKAkSDQoFc2NvcmUYAiABKAISQgoEdHlw"
    "ZRgDIAEoDjIsLnNlbnRlbmNlcGllY2UuTW9kZWxQcm90by5TZW50ZW5jZVBpZWNlLlR5cGU6Bk5PUk1BTCJUCgRUeXBlEgoKBk5PUk1BTBABEgsK"
    "B1VOS05PV04QAhILCgdDT05UUk9MEAMSEAoMVVNFUl9ERUZJTkVEEAQSCAoEQllURRAGEgoKBlVOVVNFRBAFKgkIyAEQgICAgAIqCQjIARCAgICA"
    "AkoECAQQBUICSAM=")


@functools.cache
def model_proto_class() -> Any:
    """The ``sentencepiece.ModelProto`` message class (built once)."""
    from google.protobuf import descriptor_pool, message_factory  # noqa: PLC0415 (only .model files need it)

    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(_DESCRIPTOR)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("sentencepiece.ModelProto"))
